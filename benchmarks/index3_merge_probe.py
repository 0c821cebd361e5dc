"""How fast could index-3's matrix pass run on a chain assembled tips first?

On one thread ``index3`` assembles paper 000's 128-link chain tips first: every merge
joins a leaf (a body, two handles, all of its ``Phi`` blocks its ``delta_i``) and the
part assembled so far (one handle), over one spherical joint (3 rows).  The engine runs
these merges through the general one-joint kernel (``treesolve._merge_matrices_one``).
This probe writes the same merge for that case only: three rows, the 3 x 3 Cholesky
factor as scalars, ``G Phi`` in seven accumulators, ``Y = K^-1 E`` by two substitutions
and ``Phi^C = delta - sgn W^T W`` (``W = L^-1 E``). It reads and writes the engine's own
layout arrays.  It checks that ``Phi`` and ``Y`` equal the engine's to round-off, then
times both, interleaved, for a Newton iteration's matrices::

    python benchmarks/index3_merge_probe.py [--n 128] [--rounds 11]

A probe, not engine code.  The engine keeps the general kernel; docs/index3.md
("Timing") explains why.  Merges that do not have this shape are skipped here (3 of
128 at 128 links).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import config, generators as gen  # noqa: E402
from engine.formulations import treesolve  # noqa: E402
from engine.model import build_model  # noqa: E402
from engine.simulation import Settings, Simulation  # noqa: E402
from engine.formulations import index3_kernels as K  # noqa: E402


@njit(nogil=True, error_model="numpy")
def chain_merges(reps, ix, Phi, G, Kf, Y, sgn, eps):
    """The matrix pass's merges of the tips-first chain shape, ``reps`` times; returns how
    many merges had that shape."""
    nb, left, right, node_nh, node_h_start, node_pair_start, h_side, h_src = (ix[0], ix[1], ix[2], ix[4], ix[5],
                                                                            ix[6], ix[8], ix[9])
    if_start, if_joint, if_left, if_right, m_K, m_E, row_adr, rows = (ix[10], ix[11], ix[12], ix[13], ix[16],
                                                                      ix[18], ix[19], ix[20])
    merges = ix[23]
    T = np.empty((3, 7))
    E = np.empty((3, 7))
    Kk = np.empty((3, 3))
    count = 0
    for _ in range(reps):
        count = 0
        for k in range(merges.shape[0]):
            m = merges[k]
            n = nb + m
            Ln = left[m]
            Rn = right[m]
            if not (Ln < nb and Rn >= nb and node_nh[n] == 1 and node_nh[Ln] == 2 and node_nh[Rn] == 1
                    and if_start[m + 1] - if_start[m] == 1 and rows[if_joint[if_start[m]]] == 3):
                continue
            count += 1
            ii = if_start[m]
            r = row_adr[if_joint[ii]]
            sL = node_h_start[Ln]
            pL = node_pair_start[Ln]
            wl = h_side[sL + if_left[ii]]
            wr = 1 - wl
            acc = Phi[node_pair_start[Rn]]  # the part assembled so far: one handle, one block
            delta = Phi[pL]  # the leaf: every block is its delta
            for a in range(3):
                for side in range(2):
                    P = acc if side == 0 else delta
                    w = wr if side == 0 else wl
                    t0 = t1 = t2 = t3 = t4 = t5 = t6 = 0.0
                    for c in range(7):
                        g = G[w, r + a, c]
                        t0 += g * P[c, 0]
                        t1 += g * P[c, 1]
                        t2 += g * P[c, 2]
                        t3 += g * P[c, 3]
                        t4 += g * P[c, 4]
                        t5 += g * P[c, 5]
                        t6 += g * P[c, 6]
                    O = T if side == 0 else E
                    O[a, 0], O[a, 1], O[a, 2], O[a, 3], O[a, 4], O[a, 5], O[a, 6] = t0, t1, t2, t3, t4, t5, t6
            for a in range(3):
                for b in range(a + 1):
                    t = 0.0
                    for d in range(7):
                        t += T[a, d] * G[wr, r + b, d] + E[a, d] * G[wl, r + b, d]
                    Kk[a, b] = sgn * t
                Kk[a, a] -= sgn * eps
            kb = m_K[m]
            l00 = np.sqrt(Kk[0, 0])
            l10 = Kk[1, 0] / l00
            l20 = Kk[2, 0] / l00
            l11 = np.sqrt(Kk[1, 1] - l10 * l10)
            l21 = (Kk[2, 1] - l20 * l10) / l11
            l22 = np.sqrt(Kk[2, 2] - l20 * l20 - l21 * l21)
            Kf[kb], Kf[kb + 3], Kf[kb + 6], Kf[kb + 4], Kf[kb + 7], Kf[kb + 8] = l00, l10, l20, l11, l21, l22
            i00, i11, i22 = 1.0 / l00, 1.0 / l11, 1.0 / l22
            eb = m_E[m]
            for d in range(7):
                w0 = E[0, d] * i00
                w1 = (E[1, d] - l10 * w0) * i11
                w2 = (E[2, d] - l20 * w0 - l21 * w1) * i22
                T[0, d], T[1, d], T[2, d] = w0, w1, w2
                y2 = w2 * i22
                y1 = (w1 - l21 * y2) * i11
                y0 = (w0 - l10 * y1 - l20 * y2) * i00
                Y[eb, d], Y[eb + 1, d], Y[eb + 2, d] = sgn * y0, sgn * y1, sgn * y2
            src = h_src[node_h_start[n]]
            S = Phi[pL + src * 2 + src]
            O = Phi[node_pair_start[n]]
            for c in range(7):
                for d in range(c, 7):
                    v = S[c, d] - sgn * (T[0, c] * T[0, d] + T[1, c] * T[1, d] + T[2, c] * T[2, d])
                    O[c, d] = v
                    O[d, c] = v
    return count


@njit(nogil=True)
def engine_pass(reps, ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol):
    for _ in range(reps):
        treesolve.assemble_matrices7(ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--reps", type=int, default=100)
    args = ap.parse_args()
    model = build_model(gen.paper000_chain(args.n))
    sim = Simulation(model, Settings(formulation="index3", dt=0.01, t_end=1.0, penalty=1e9, threads=1))
    sim.prepare()
    f = sim.formulation
    y = sim._y0
    for _ in range(20):
        y = f.step(0.0, y, 0.01)
    lay, ix = f.lay, f.lay.ix
    q = f._split(y)[0]
    c4 = 0.25 * 0.01 ** 2
    K.leaf_matrices(ix, f.Mb, f.Hgeo, q, c4, False, model.mass, model.inertia_inv, f.alpha, -c4, f.Mcc, f.D, f.pst,
                    lay.Phi, f.okb)
    lay.G[:] = f.G7
    eps, sgn = 1.0 / f.alpha, -1.0
    a = (ix, lay.Phi, lay.G, lay.sel, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.scr, eps, sgn,
         config.PIVOT_RTOL)
    engine_pass(1, *a)
    ref_phi, ref_y = lay.Phi.copy(), lay.Y.copy()
    count = chain_merges(1, ix, lay.Phi, lay.G, lay.Kf, lay.Y, sgn, eps)
    d_phi = np.abs(lay.Phi - ref_phi).max() / np.abs(ref_phi).max()
    d_y = np.abs(lay.Y - ref_y).max() / np.abs(ref_y).max()
    print(f"{args.n} links: {count} of {ix[23].shape[0]} merges have the chain shape; "
          f"against the engine's pass: Phi {d_phi:.1e}, Y {d_y:.1e} (relative)")
    assert d_phi < 1e-12 and d_y < 1e-12
    times = {"engine's matrix pass": [], "probe's merges": []}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        engine_pass(args.reps, *a)
        times["engine's matrix pass"].append((time.perf_counter() - t0) / args.reps * 1e6)
        t0 = time.perf_counter()
        chain_merges(args.reps, ix, lay.Phi, lay.G, lay.Kf, lay.Y, sgn, eps)
        times["probe's merges"].append((time.perf_counter() - t0) / args.reps * 1e6)
    for name, v in times.items():
        print(f"  {name:22s} min {min(v):7.1f}  median {np.median(v):7.1f} us per pass")
    ratios = [a / b for a, b in zip(*times.values())]
    print(f"  engine over probe per round: median {np.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
