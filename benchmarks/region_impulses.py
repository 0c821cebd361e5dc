"""``hdca``'s first phase (joint velocities ``v`` and the impulse through every tree
joint, from the state (q, p)) against a 40-digit reference, with and without the
articulated-body regions.

The reference takes ``hdca``'s own float64 kinematics (x, R, P, S: identical in both
runs) as exact data and solves ``M v = p`` in ``decimal`` arithmetic: the joint-space
mass matrix from composite spatial inertias about the world origin, a dense Cholesky
solve, then each joint's impulse as the momentum of the bodies outboard of it, about
its point.  So it measures the error of the solve alone.  The last column gives the
impulses that each run's own velocities imply, summed exactly: how ill-conditioned the
step from velocities to impulses is.  On slender rods (the generator's chains: 2222
times more compliant about their axis) the state's random momenta give axial spins of
~1e4 rad/s, where the regions, which derive each joint's force from the velocities,
lose digits that the merges, which solve for the impulses, do not (docs/performance.md,
"The ground joint in the region"; the figures: benchmarks/results/performance-tables.md).

    python benchmarks/region_impulses.py [--n 100] [--kind spherical] [--seed 13]
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal, getcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from linkwork.engine import generators as gen  # noqa: E402
from linkwork.engine.formulations.tree_formulation import TreeFormulation  # noqa: E402
from linkwork.engine.kinematics import kin_arrays, normalize_quaternions  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402

getcontext().prec = 40
ZERO = Decimal(0)


def dec(a) -> list:
    """A float64 array as nested lists of exact Decimals."""
    a = np.asarray(a, dtype=float)
    return [dec(r) for r in a] if a.ndim > 1 else [Decimal(float(v)) for v in a]


def mat(A, B):
    return [[sum((A[i][k] * B[k][j] for k in range(len(B))), ZERO) for j in range(len(B[0]))] for i in range(len(A))]


def tr(A):
    return [list(r) for r in zip(*A)]


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def hdca_phase1(model, y, regions: bool) -> dict:
    """hdca's v and tree-joint impulses ``S p + G_succ^T lam`` (about P_k, world) at y."""
    old = TreeFormulation.articulated_regions
    TreeFormulation.articulated_regions = regions
    try:
        f = Simulation(model, Settings(formulation="hdca", threads=1)).formulation
    finally:
        TreeFormulation.articulated_regions = old
    f._solve(0.0, y)
    p = y[model.nq:]
    row_adr, rows, G1, lam = f.lay.ix.row_adr, f.lay.ix.rows, f.lay.G[1], f.lay.lam
    imp = np.zeros((model.nb, 6))
    for k in range(model.nb):
        c = slice(model.v_adr[k], model.v_adr[k] + model.nv_j[k])
        r = slice(row_adr[k], row_adr[k] + rows[k])
        imp[k] = f.S[c].T @ p[c] + G1[r].T @ lam[r]
    return dict(v=f.v.copy(), impulse=imp, x=f.x.copy(), R=f.R.copy(), P=f.P.copy(), S=f.S.copy(),
                regions=f.lay.n_regions)


def spatial(model, x, R, P, S) -> tuple[list, list]:
    """Every body's spatial inertia about the world origin ([linear; angular]) and its
    joint's motion subspace about the origin, exactly, from the float64 kinematics."""
    nb, va, nvj = model.nb, model.v_adr, model.nv_j
    IO, SO = [], []
    for j in range(nb):
        m, c = Decimal(float(model.mass[j])), dec(x[j])
        Rj = dec(R[j])
        Jc = mat(mat(Rj, dec(model.inertia[j])), tr(Rj))
        cx = [[ZERO, -c[2], c[1]], [c[2], ZERO, -c[0]], [-c[1], c[0], ZERO]]
        cxcx = mat(cx, cx)
        I6 = [[ZERO] * 6 for _ in range(6)]
        for r in range(3):
            for s in range(3):
                I6[r][s] = m if r == s else ZERO
                I6[r][3 + s] = -m * cx[r][s]
                I6[3 + r][s] = m * cx[r][s]
                I6[3 + r][3 + s] = Jc[r][s] - m * cxcx[r][s]
        IO.append(I6)
        Pj = dec(P[j])
        cols = []
        for col in range(va[j], va[j] + nvj[j]):  # S about P_j -> about the origin
            s = dec(S[col])
            cols.append([a + b for a, b in zip(s[:3], cross(Pj, s[3:]))] + s[3:])
        SO.append(tr(cols))
    return IO, SO


def mass_matrix(model, IO, SO) -> list:
    """The joint-space mass matrix from composite inertias (``parent[j] < j``)."""
    nb, nv, par, va = model.nb, model.nv, model.parent, model.v_adr
    Ic = [[row[:] for row in IO[j]] for j in range(nb)]
    for j in range(nb - 1, -1, -1):
        if par[j] >= 0:
            Ic[par[j]] = [[a + b for a, b in zip(ra, rb)] for ra, rb in zip(Ic[par[j]], Ic[j])]
    M = [[ZERO] * nv for _ in range(nv)]
    for b in range(nb):
        F = mat(Ic[b], SO[b])
        a = b
        while a >= 0:
            blk = mat(tr(SO[a]), F)
            for r, row in enumerate(blk):
                for s, val in enumerate(row):
                    M[va[a] + r][va[b] + s] = val
                    M[va[b] + s][va[a] + r] = val
            a = par[a]
    return M


def cholesky_solve(M, b) -> list:
    """``M^-1 b`` by a dense Cholesky factorisation, in the context's precision."""
    n = len(M)
    L = [[ZERO] * n for _ in range(n)]
    for j in range(n):
        Lj = L[j]
        Lj[j] = (M[j][j] - sum((t * t for t in Lj[:j]), ZERO)).sqrt()
        for i in range(j + 1, n):
            Li = L[i]
            Li[j] = (M[i][j] - sum((Li[k] * Lj[k] for k in range(j)), ZERO)) / Lj[j]
    z = list(b)
    for i in range(n):
        z[i] = (z[i] - sum((L[i][k] * z[k] for k in range(i)), ZERO)) / L[i][i]
    x = [ZERO] * n
    for i in range(n - 1, -1, -1):
        x[i] = (z[i] - sum((L[k][i] * x[k] for k in range(i + 1, n)), ZERO)) / L[i][i]
    return x


def reference(model, p, x, R, P, S, v_given=None) -> tuple[np.ndarray, np.ndarray]:
    """(v, impulses) in 40-digit arithmetic from the float64 kinematics taken as exact;
    with ``v_given``, the impulses that those velocities imply (no solve)."""
    IO, SO = spatial(model, x, R, P, S)
    if v_given is not None:
        return _impulses(model, SO, IO, dec(v_given), P)
    return _impulses(model, SO, IO, cholesky_solve(mass_matrix(model, IO, SO), dec(p)), P)


def _impulses(model, SO, IO, v, P) -> tuple[np.ndarray, np.ndarray]:
    """(v, every tree joint's impulse about its point) from the velocities v, exactly."""
    nb, par, va, nvj = model.nb, model.parent, model.v_adr, model.nv_j
    V = []
    for j in range(nb):  # body twists about the origin
        Vj = [sum((SO[j][r][c] * v[va[j] + c] for c in range(nvj[j])), ZERO) for r in range(6)]
        V.append([a + b for a, b in zip(Vj, V[par[j]])] if par[j] >= 0 else Vj)
    H = [[sum((IO[j][r][c] * V[j][c] for c in range(6)), ZERO) for r in range(6)] for j in range(nb)]
    for j in range(nb - 1, -1, -1):  # momentum of each subtree, about the origin
        if par[j] >= 0:
            H[par[j]] = [a + b for a, b in zip(H[par[j]], H[j])]
    imp = np.zeros((nb, 6))
    for k in range(nb):  # about P_k: n_P = n_O - P x f
        f, n, Pk = H[k][:3], H[k][3:], dec(P[k])
        imp[k] = [float(t) for t in f + [a - b for a, b in zip(n, cross(Pk, f))]]
    return np.array([float(t) for t in v]), imp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--kind", default="spherical", choices=["spherical", "revolute"])
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args(argv)
    model = build_model(gen.chain(a.n, a.kind, planar=False))
    rng = np.random.default_rng(a.seed)  # the state of test_articulated_regions_agree_with_the_merges
    q = model.q_zero() + rng.normal(scale=0.6, size=model.nq)
    normalize_quaternions(kin_arrays(model), q)
    y = np.concatenate([q, rng.normal(size=model.nv)])
    runs = {"regions": hdca_phase1(model, y, True), "merges": hdca_phase1(model, y, False)}
    for k in ("x", "R", "P", "S"):
        assert np.array_equal(runs["regions"][k], runs["merges"][k])
    r = runs["regions"]
    v_ref, imp_ref = reference(model, y[model.nq:], r["x"], r["R"], r["P"], r["S"])
    print(f"{a.kind} chain of {a.n}, seed {a.seed}: max |v| {np.abs(v_ref).max():.3e}, "
          f"max |impulse| {np.abs(imp_ref).max():.3e}; error relative to each maximum")
    print("(impulses from its v: those its velocities imply, summed exactly over each subtree)")
    print("| hdca | regions | v | impulses | impulses from its v |\n|---|---:|---:|---:|---:|")
    for name, run in runs.items():
        _, implied = reference(model, y[model.nq:], r["x"], r["R"], r["P"], r["S"], v_given=run["v"])
        ev = np.abs(run["v"] - v_ref).max() / np.abs(v_ref).max()
        ei = np.abs(run["impulse"] - imp_ref).max() / np.abs(imp_ref).max()
        eo = np.abs(implied - imp_ref).max() / np.abs(imp_ref).max()
        print(f"| {name} | {run['regions']} | {ev:.2e} | {ei:.2e} | {eo:.2e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
