"""index-3's fixed-size chain merge against the general one-joint kernel.

On one thread ``index3`` assembles paper 000's 128-link chain tips first: every merge
but the last joins a leaf (a body, two handles, all of its ``Phi`` blocks its
``delta_i``) and the part assembled so far (one handle), over one spherical joint (3
rows).  ``merge_matrices_leaf3`` (``engine/formulations/tree/merge.py``) does these
merges with the 3 x 3 factor in scalars and its products in a C-contiguous scratch row;
``merge_matrices_one`` is the general kernel, which takes every other one-joint merge.
This script runs the pass's merges both ways on the engine's layout arrays, for a Newton iteration's matrices, checks that ``Phi`` and
``Y`` agree to round-off, and times both, interleaved (and the engine's pass itself)::

    python benchmarks/index3_merge_probe.py [--n 128] [--rounds 11]

docs/index3.md ("Timing") has the figures.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from linkwork.engine import config, generators as gen  # noqa: E402
from linkwork.engine.formulations import tree  # noqa: E402
from linkwork.engine.formulations.tree import merge as tree_merge  # noqa: E402
from linkwork.engine.formulations.tree import passes as tree_passes  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402
from linkwork.engine.formulations import index3_newton as N  # noqa: E402


@njit(nogil=True)
def merges_by(fixed, reps, ix, tw, eps, sgn, tol):
    """The matrix pass's merges, in order, ``reps`` times: with ``fixed`` by the fixed-size
    kernel where it applies (as the engine's pass), else all by the general kernels.
    Returns how many merges the fixed-size kernel took."""
    merges = ix.top_merges
    count = 0
    for _ in range(reps):
        count = 0
        for k in range(merges.shape[0]):
            m = merges[k]
            if fixed and tree_merge.merge_matrices_leaf3(m, ix, tw, eps, sgn, tol):
                count += 1
            elif tree_passes.one_joint_merge(m, ix, 7):
                tree_merge.merge_matrices_one(m, ix, tw, eps, sgn, tol, 7)
            else:
                tree_merge.merge_matrices(m, ix, tw, eps, sgn, tol)
    return count


@njit(nogil=True)
def engine_pass(reps, ix, tw, eps, sgn, tol):
    for _ in range(reps):
        tree.assemble_matrices7(ix, tw, eps, sgn, tol)


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
    N.leaf_matrices(ix, f.model_arrays, f.body.Mb, f.body.Hgeo, q, c4, False, f.alpha, -c4, f.leaf, lay.Phi)
    lay.G[:] = f.rows.G7
    eps, sgn = 1.0 / f.alpha, -1.0
    a = (ix, lay.work, eps, sgn, config.PIVOT_RTOL)
    merges_by(False, 1, *a)
    ref_phi, ref_y = lay.Phi.copy(), lay.Y.copy()
    count = merges_by(True, 1, *a)
    d_phi = np.abs(lay.Phi - ref_phi).max() / np.abs(ref_phi).max()
    d_y = np.abs(lay.Y - ref_y).max() / np.abs(ref_y).max()
    print(f"{args.n} links: the fixed-size kernel takes {count} of {ix.top_merges.shape[0]} merges; against the general "
          f"kernels: Phi {d_phi:.1e}, Y {d_y:.1e} (relative)")
    assert d_phi < 1e-12 and d_y < 1e-12
    engine_pass(1, *a)
    runs = {"general kernels": lambda: merges_by(False, args.reps, *a),
            "fixed-size where it applies": lambda: merges_by(True, args.reps, *a),
            "engine's matrix pass": lambda: engine_pass(args.reps, *a)}
    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - t0) / args.reps * 1e6)
    for name, v in times.items():
        print(f"  {name:28s} min {min(v):7.1f}  median {np.median(v):7.1f} us per pass")
    ratios = [g / f for g, f in zip(times["general kernels"], times["fixed-size where it applies"])]
    print(f"  general over fixed-size per round: median {np.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
