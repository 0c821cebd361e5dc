"""What each pass of a ``dca`` right-hand side costs in its place in the kernel, and its
fixed part (what keeps the cost per body from being flat at small sizes).

``benchmarks/profile_dca.py`` calls each pass alone, from Python, so each figure carries a
dispatcher call.  Here one kernel runs ``dca._evaluate``'s passes up to pass k, N times
in a loop inside numba, for k = 0 .. 11; the differences of consecutive totals are the
passes' costs with warm caches and no call from Python.  The fixed part of a pass is its
64-body cost less 64 times its per-body cost from 64 to 256 bodies.

    python benchmarks/pass_costs.py [--kind revolute] [--sizes 1 64 256]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from linkwork.engine.forces import tree_applied_forces  # noqa: E402
from linkwork.engine.formulations import tree  # noqa: E402
from linkwork.engine.formulations.dca_kernels import evaluate_region as _evaluate_region  # noqa: E402
from linkwork.engine.formulations.tree_kernels import (  # noqa: E402
    accelerations as _accelerations, accelerations_over as _accelerations_over, leaves as _leaves,
    leaves_over as _leaves_over, tree_rows as _tree_rows)
from linkwork.engine.formulations.workspace import unpack  # noqa: E402
from linkwork.engine.kinematics import fk_positions, fk_velocities, motion_subspace, ode_rates  # noqa: E402
from linkwork.engine.studies.bench import chain_formulation  # noqa: E402

PASSES = ("fk_positions", "motion_subspace", "fk_velocities", "applied_forces", "tree_rows", "leaves",
          "matrix pass", "bias pass", "disassembly", "accelerations", "ode_rates")


@njit(nogil=True, _nrt=False)
def _prefix(N, stop, direct, desc, proto, y, out):
    """``N`` evaluations of ``_evaluate``'s first ``stop`` passes (a chain: no cut joints),
    or with ``direct`` of ``_evaluate_region``'s (the kernel the formulation runs).  The
    same passes, arguments and order as those kernels: keep the three in step."""
    mk, ca, fa, tm, ix, bw, tw, hy, jq, jq_ref, phi, bg, tol, mk_trail, progress = unpack(desc, proto)
    x, R, P, S, V, c, vdot = bw.x, bw.R, bw.P, bw.S, bw.V, bw.c, bw.vdot
    G, g0 = tw.G, tw.g0
    nb = ix.nb
    nq = y.shape[0] - vdot.shape[0]
    q = y[:nq]
    v = y[nq:]
    ok = True
    for _ in range(N):
        if stop > 0:
            fk_positions(mk, q, x, R, P)
        if stop > 1:
            motion_subspace(mk, q, R, S)
        if stop > 2:
            fk_velocities(mk, x, P, S, v, V, c)
        if stop > 3:
            tree_applied_forces(fa, q, tm.q_adr, tm.spring_tree, tm.spring_cut, x, R, V, jq, jq_ref, bw.Fext)
        if stop > 4:
            _tree_rows(mk, tm.perp_pred, R, S, c, G[0], G[1], g0, ix.row_adr)
        if direct:  # dca._evaluate_region's direct calls
            if stop > 5:
                _leaves_over(0 * nb, nb, ix, tm.mass, tm.inertia, tm.inertia_inv, bw, tw.Phi, tw.bv, np.bool_(True),
                             np.bool_(True), hy)
            if stop > 6:
                tree.region_matrices(0, ix, tw.Phi, hy)
            if stop > 7:
                tree.region_biases(0, ix, tw.bv, G, g0, hy)
            if stop > 8:
                tree.region_down(0, ix, tw.Fh, G, tw.lam, hy, out.shape[0] != y.shape[0])
            if stop > 9:
                for phase in range(2):
                    _accelerations_over(phase, 0 * nb, nb, ix, mk, tm.mass, bw, tw.Fh, hy)
        else:
            if stop > 5:
                _leaves(ix, tm.mass, tm.inertia, tm.inertia_inv, bw, tw.Phi, tw.bv, np.bool_(True), np.bool_(True), hy)
            if stop > 6:
                tree.assemble_matrices6(ix, tw, 0.0, 1.0, tol, hy)
            if stop > 7:
                tree.assemble_biases6(ix, tw, g0, 1.0, hy)
            if stop > 8:
                tree.disassemble6(ix, tw, hy)
            if stop > 9:
                _accelerations(ix, mk, tm.mass, bw, tw.Fh, hy)
        if stop > 10:
            ok = ode_rates(mk, q, v, vdot, out)
    return ok


def pass_costs(n: int, kind: str, rounds: int = 7) -> np.ndarray:
    """us per pass, in order, on the n-body chain (best of ``rounds`` batches)."""
    f, y = chain_formulation("dca", n, kind, 1)
    out = np.empty_like(y)
    k = f._kernel
    direct = np.bool_(k.kernel is _evaluate_region)
    f.rhs(0.0, y)
    N = max(200, 200000 // n)
    totals = []
    for stop in range(len(PASSES) + 1):
        _prefix(10, stop, direct, k.desc, k.proto, y, out)
        best = np.inf
        for _ in range(rounds):
            t0 = time.perf_counter()
            _prefix(N, stop, direct, k.desc, k.proto, y, out)
            best = min(best, (time.perf_counter() - t0) / N)
        totals.append(best * 1e6)
    return np.diff(totals)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="revolute", choices=["spherical", "revolute"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 256])
    a = ap.parse_args(argv)
    numba.set_num_threads(1)
    res = {n: pass_costs(n, a.kind) for n in a.sizes}
    fixed = 64 in res and any(n > 64 for n in res)
    big = max(a.sizes)
    print(f"`dca`, {a.kind} chain, one thread, us per pass in its place in the kernel\n")
    print("| pass | " + " | ".join(f"{n} bodies" for n in a.sizes) + (" | fixed part |" if fixed else " |"))
    print("|---|" + "---:|" * (len(a.sizes) + fixed))
    for i, name in enumerate(PASSES):
        cells = [f"{res[n][i]:.3f}" for n in a.sizes]
        if fixed:
            slope = (res[big][i] - res[64][i]) / (big - 64)
            cells.append(f"{res[64][i] - 64 * slope:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    tot = [f"{res[n].sum():.2f}" for n in a.sizes]
    if fixed:
        tot.append(f"{res[64].sum() - 64 * (res[big].sum() - res[64].sum()) / (big - 64):.2f}")
    print("| all | " + " | ".join(tot) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
