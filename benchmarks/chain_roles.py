"""What bounds ``dca``'s two roles on a chain: each role's work and the recursions' path,
timed pass by pass on one thread.

On two threads ``dca`` runs an unbranched chain in two roles beside one another
(docs/dca-two-threads.md, "Two threads on one chain"): the leading role does the positions,
the bodies' own inertias, the applied forces and bias wrenches, the bias pass and the
disassembly; the trailing role the motion subspaces, twists and joints' rows, the matrix
pass, the coordinates' rates and the accelerations.  Whatever the machine, two threads
are then at most

- the whole right-hand side's time over the busier role's work, and
- the whole over the path the recursions leave: the positions (root first) with the
  trailing role's subspaces, twists and rows behind them (the longer of the two), then
  the matrix pass (tips first), then the disassembly (root first), each waiting for the
  one before to have reached the chain's far end.

This script times each pass alone on one thread, in a numba loop on the workspace of a
full evaluation (no call overhead), ``--rounds`` times in turn, and prints both bounds::

    python benchmarks/chain_roles.py --n 1024 --rounds 7

The passes are the same per-body steps the two roles call (``position_step``,
``matrix_step``, ...), so the figures are the roles' work on a quiet machine:
beside each other, each role also reads what the other core has just written
(``benchmarks/two_threads.py``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the passes, in the order the kernel below numbers them, and the role doing each
PASSES = (("whole", None), ("positions", "lead"), ("subspaces and twists", "trail"), ("inertias", "lead"),
          ("forces and bias wrenches", "lead"), ("rows", "trail"), ("matrix pass", "trail"), ("bias pass", "lead"),
          ("disassembly", "lead"), ("rates and accelerations", "trail"))


def _kernel():
    from numba import njit

    from linkwork.engine.forces import tree_applied_forces
    from linkwork.engine.formulations import tree
    from linkwork.engine.formulations.dca_kernels import evaluate_region as _evaluate_region
    from linkwork.engine.formulations.tree_kernels import (accelerations_over as _accelerations_over,
                                                          leaves_over as _leaves_over,
                                                          region_inertia as _region_inertia, tree_rows as _tree_rows)
    from linkwork.engine.formulations.workspace import unpack
    from linkwork.engine.kinematics import position_step, subspace_step, velocity_step, qdot_from_v

    @njit(nogil=True)
    def passes(desc, proto, y, out, reps, which):
        mk, ca, fa, tm, ix, bw, tw, hy, jq, jq_ref, phi, bg, tol, mk_trail, progress = unpack(desc, proto)
        x, R, P, S, V, c, vdot = bw.x, bw.R, bw.P, bw.S, bw.V, bw.c, bw.vdot
        G, g0, Fh, lam = tw.G, tw.g0, tw.Fh, tw.lam
        mass, inertia = tm.mass, tm.inertia
        nb = ix.nb
        row_adr, rows = ix.row_adr, ix.rows
        nq = y.shape[0] - vdot.shape[0]
        q = y[:nq]
        v = y[nq:]
        T = hy.LA[0]
        for _ in range(reps):
            if which == 0:
                _evaluate_region(desc, proto, y, out)
            elif which == 1:
                for i in range(nb):
                    position_step(i, mk, q, x, R, P)
            elif which == 2:
                for i in range(nb):
                    subspace_step(i, mk, q, R, S)
                    velocity_step(i, mk, x, P, S, v, V, c)
            elif which == 3:
                for i in range(nb - 1, -1, -1):
                    _region_inertia(i, mass, inertia, x, R, P, hy)
            elif which == 4:
                tree_applied_forces(fa, q, tm.q_adr, tm.spring_tree, tm.spring_cut, x, R, V, jq, jq_ref, bw.Fext)
                _leaves_over(0 * nb, nb, ix, mass, inertia, tm.inertia_inv, bw, tw.Phi, tw.bv, np.bool_(True),
                             np.bool_(False), hy)
            elif which == 5:
                _tree_rows(mk, tm.perp_pred, R, S, c, G[0], G[1], g0, row_adr)
            elif which == 6:
                for k in range(nb):
                    tree.matrix_step(k, T, hy)
            elif which == 7:
                for k in range(nb):
                    tree.bias_step(k, row_adr, rows, G, g0, hy)
            elif which == 8:
                for k in range(nb - 1, -1, -1):
                    tree.down_step(k, row_adr, rows, Fh, G, lam, hy, False)  # as the rates call runs it
            else:
                qdot_from_v(mk, q, v, out)
                for phase in range(2):
                    _accelerations_over(phase, 0 * nb, nb, ix, mk, mass, bw, Fh, hy)

    return passes


def main(argv=None) -> int:
    import numba

    from linkwork.engine.studies.bench import chain_formulation

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=100, help="calls of a pass per round")
    a = ap.parse_args(argv)
    numba.set_num_threads(1)
    passes = _kernel()
    for kind in ("spherical", "revolute"):
        form, y = chain_formulation("dca", a.n, kind, 1)
        args = (form._kernel.desc, form._kernel.proto, y, np.empty_like(y))
        for w in range(len(PASSES)):
            passes(*args, 1, w)
        times = np.zeros((len(PASSES), a.rounds))
        for r in range(a.rounds):
            for w in range(len(PASSES)):
                passes(*args, 1, 0)  # the workspace as a full evaluation leaves it
                t0 = time.perf_counter()
                passes(*args, a.reps, w)
                times[w, r] = (time.perf_counter() - t0) / a.reps * 1e6
        med = dict(zip((name for name, _ in PASSES), np.median(times, axis=1)))
        print(f"dca, {kind} chain of {a.n} bodies, one thread, us per pass (median of {a.rounds} rounds):")
        for (name, role), t in zip(PASSES, times):
            print(f"  {name:26s} {'' if role is None else role:5s} {med[name]:7.1f}   ({t.min():.1f}-{t.max():.1f})")
        whole = med["whole"]
        work = {role: sum(med[name] for name, r in PASSES if r == role) for role in ("lead", "trail")}
        root_first = max(med["positions"], med["subspaces and twists"] + med["rows"])
        path = root_first + med["matrix pass"] + med["disassembly"]
        print(f"  the roles' work: leading {work['lead']:.1f}, trailing {work['trail']:.1f} "
              f"(sum {work['lead'] + work['trail']:.1f}): two threads at most {whole / max(work.values()):.2f} x")
        print(f"  the path (positions or subspaces, twists and rows; matrix pass; disassembly): {path:.1f}: "
              f"at most {whole / path:.2f} x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
