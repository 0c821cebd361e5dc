"""Where one ``dense`` step's time goes: each stage of the right-hand side and of the
step, timed in compiled loops on a formulation's own workspace.

Builds ``dense`` for an example at its initial state and times, each in a numba loop of
``--calls`` calls (best of five), the right-hand side (:func:`dense_solve.rhs`), its
stages (kinematics, mass matrix, Newton-Euler, applied forces, closure rows, Cholesky,
whitening, the thin SVD, the filtered solves), the post-step projection, the singularity
watch and a run of rk4 steps (:func:`dense_solve.rk4_steps`, ``--steps`` in one call)::

    python benchmarks/dense_stages.py [EXAMPLE] [--calls 20000] [--steps 1000]

The loops are compiled when the script runs (about a minute, uncached).  The post-step
and the watch are timed at a state already projected: one Gauss-Newton check, not the
two solves a step's drift asks for.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from linkwork.engine.forces import tree_applied_forces
from linkwork.engine.formulations import dense_solve as S
from linkwork.engine.formulations.dense_linalg import (
    cholesky, filter_factors, filtered_solve, roundoff_floor, thin_svd, whiten,
)
from linkwork.engine.formulations.workspace import unpack
from linkwork.engine.model import load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Simulation, file_defaults


@njit
def _rhs(desc, proto, y, out, n):
    w = unpack(desc, proto)[1]
    for _ in range(n):
        w.geometry[0] = 0.0  # formed anew, not taken from the last call at the same state
        S.rhs(desc, proto, 0.0, y, out)


@njit
def _kinematics(desc, proto, q, v, n):
    for _ in range(n):
        S.kinematics(desc, proto, q, v)


@njit
def _forces(desc, proto, q, n):
    dm, w = unpack(desc, proto)
    for _ in range(n):
        tree_applied_forces(dm.fa, q, dm.mk.q_adr, dm.spring_tree, dm.spring_cut, w.x, w.R, w.V, w.jq, w.jq_ref,
                            w.Fext)


@njit
def _closure_rows(desc, proto, q, n):
    w = unpack(desc, proto)[1]
    for _ in range(n):
        S.rows_at(desc, proto, 0.0, q, w.acc)


#: the stages that read and write the workspace alone (:func:`_workspace_stage`)
MASS, NEWTON_EULER, CHOLESKY, WHITEN, SVD, SOLVES = range(6)


@njit
def _workspace_stage(desc, proto, stage, n):
    """``n`` calls of one stage on the workspace as it is (the branch is the same every
    call: a nanosecond against stages of tens to hundreds)."""
    w = unpack(desc, proto)[1]
    for _ in range(n):
        if stage == MASS:
            S.mass_matrix(desc, proto)
        elif stage == NEWTON_EULER:
            S.newton_euler(desc, proto, w.zero_nv, w.h)
        elif stage == CHOLESKY:
            cholesky(w.M, w.L)
        elif stage == WHITEN:
            whiten(w.L, w.K, w.Kt)
            roundoff_floor(w.L, w.Kabs, w.u)
        elif stage == SVD:
            thin_svd(w.Kt, w.sv)
        else:
            filter_factors(w.sv, w.watch[0], 1e-14, w.rank[0])
            filtered_solve(w.sv, w.b, w.z, np.bool_(False))
            filtered_solve(w.sv, w.z, w.lam, np.bool_(True))


@njit
def _post(desc, proto, y, n):
    for _ in range(n):
        S.post_step(desc, proto, 0.0, y)


@njit
def _watch(desc, proto, y, n):
    w = unpack(desc, proto)[1]
    for _ in range(n):
        w.geometry[0] = 0.0  # measured as formed anew, not taken from the last call
        S.watch_singular(desc, proto, 0.0, y)


@njit
def _steps(desc, proto, y, n):
    S.rk4_steps(desc, proto, 0.0, 0.01 * n, y.copy(), n)  # each call from the same state


def _best(f, args, n) -> float:
    f(*args, 10)  # compile, and the first calls
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        f(*args, n)
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("example", nargs="?", default="parallelogram-fourbar", help="a bundled example's file stem")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--steps", type=int, default=1000)
    a = p.parse_args(argv)
    model = load_model(examples_dir() / f"{a.example}.mech.json")
    sim = Simulation(model, file_defaults(model, "dense").replace(formulation="dense"))
    sim.prepare()
    form = sim.formulation
    desc, proto = form._k.desc, form._k.proto
    y0 = form.initial_state()
    q, v = y0[: model.nq].copy(), y0[model.nq:].copy()
    w = form.work
    print(f"{a.example}: nv = {model.nv}, bodies = {model.nb}, closure rows {w.K.shape[0]} (rank {w.rank[0]})")
    print(f"{'stage':34s} {'us per call':>11s}")
    rows = [
        ("right-hand side (rhs)", _rhs, (desc, proto, y0.copy(), np.zeros_like(y0)), a.calls),
        ("  kinematics", _kinematics, (desc, proto, q, v), a.calls),
        ("  mass matrix (crba)", _workspace_stage, (desc, proto, MASS), a.calls),
        ("  Newton-Euler (bias forces)", _workspace_stage, (desc, proto, NEWTON_EULER), a.calls),
        ("  applied forces", _forces, (desc, proto, q), a.calls),
        ("  closure rows (rows_at)", _closure_rows, (desc, proto, q), a.calls),
        ("  Cholesky", _workspace_stage, (desc, proto, CHOLESKY), a.calls),
        ("  whitening and round-off floor", _workspace_stage, (desc, proto, WHITEN), a.calls),
        ("  thin SVD of K L^-T", _workspace_stage, (desc, proto, SVD), a.calls),
        ("  filter and two filtered solves", _workspace_stage, (desc, proto, SOLVES), a.calls),
        ("post-step (projected state)", _post, (desc, proto, y0.copy()), a.calls),
        ("singularity watch (formed anew)", _watch, (desc, proto, y0.copy()), a.calls),
        (f"rk4 step ({a.steps} in one call)", _steps, (desc, proto, y0.copy()), a.steps),
    ]
    for name, f, args, n in rows:
        print(f"{name:34s} {_best(f, args, n):11.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
