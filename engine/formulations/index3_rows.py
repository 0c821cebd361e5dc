"""``index3``'s steps and evaluation for the compiled row loop (:mod:`engine.row_loop`).

:meth:`.index3.Index3Formulation.step` is a short Python function around three kernels
(the Newton iterations and the two projections), and its evaluation one around three
more; a whole run of a small mechanism spent as long in that Python as in the kernels.
:func:`index3_operation` is the formulation's operations kernel
(:class:`.base.RowKernels`): an output interval's ``n`` steps, or the evaluation at an
output instant, with the same kernels called by the addresses of their machine code
(:mod:`.rk4_kernel`'s ``call_*``: by name, each would be compiled again into this one)
and Python's arithmetic around them, line for line, so that a row is the one Python
writes, bit for bit (tests/engine/test_row_loop.py).

Where a step has something to say -- a Newton or a projection failure, a residual above
:data:`.index3.UNCONVERGED_VIOLATION` (the warning is Python's), a diverged or non-finite
state -- the kernel reports a failure, the row loop puts the interval back as it was
(the state, the statistics below and the springs' unwrapped angles), and Python makes
that interval as it always did.  The statistics cross as one array (:data:`STATS`); the
Newton and projection times are not measured here (:meth:`.index3.Index3Formulation.stats`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from . import index3_kernels as K
from . import index3_newton as N
from . import tree
from .base import RowKernels, StateKernel
from .rk4_kernel import (call_checked_count, call_checked_float, call_checked_floats3, call_void, copy1,
                         native_address)
from .workspace import unpack

#: the operations (:class:`.base.RowKernels`' ``ops``): an interval's steps, the evaluation
STEP, EVALUATE = 1.0, 2.0

#: the statistics' slots (:data:`STATS` of them), the formulation's attributes of the same names
STEPS, NEWTON_TOTAL, EXTRA_ROUNDS, LAST_DQ, MAX_DQ, MAX_VIOLATION, CONVERGED_RUN, WARN_LEVEL = range(8)
STATS = ("steps", "newton_total", "extra_newton_rounds", "last_dq", "max_dq", "max_violation", "_converged_run",
         "_warn_level")


class Limits(NamedTuple):
    """The step's constants (:mod:`.index3`'s module constants and the Newton tolerance)."""

    tol: float  # newton_tol
    more_acc: float  # NEWTON_MORE_ACC
    more_rounds: int  # NEWTON_MORE_ROUNDS
    stall: float  # NEWTON_STALL
    unconverged: float  # UNCONVERGED_VIOLATION
    converged_steps: int  # CONVERGED_STEPS
    diverged: float  # DIVERGED_VIOLATION


class Calls(NamedTuple):
    """The kernels called by the addresses of their machine code, each compiled for exactly
    the arguments :func:`index3_operation` gives it."""

    newton: int  # index3_newton.newton_iterations
    velocities: int  # index3_newton.velocity_projection
    accelerations: int  # index3_newton.acceleration_projection
    kinematics: int  # index3_kernels.body_kinematics
    rows: int  # index3_kernels.joint_rows
    reactions: int  # index3_kernels.body_wrench_from_rows


class StepData(NamedTuple):
    """What a step and an evaluation read and write: the formulation's own arrays and settings."""

    calls: Calls
    newton: tuple  # NewtonSettings
    projections: tuple  # ProjectionSettings
    model: tuple  # ModelArrays
    ix: tuple  # the tree layout's index arrays
    body: tuple  # BodyState
    rows: tuple  # JointRows
    leaf: tuple  # LeafWork
    work: tuple  # the tree layout's TreeWork
    tree: tuple  # index3_newton.TreeCalls: the tree solve by address
    springs: np.ndarray  # the joints with springs (their unwrapped angles, body.jq_ref, kept each step)
    stats: np.ndarray  # (len(STATS),) the statistics
    limits: Limits


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _views(y, nb, nr):
    """``y``'s parts, as :meth:`.index3.Index3Formulation._split` takes them."""
    n7 = 7 * nb
    return (y[:n7].reshape((nb, 7)), y[n7:2 * n7].reshape((nb, 7)), y[2 * n7:3 * n7].reshape((nb, 7)),
            y[3 * n7:3 * n7 + nr], y[3 * n7 + nr:])


@njit(cache=True, nogil=True, _nrt=False, inline='always')  # compiled once, into index3_operation
def _step(dt, y, y_new, d):
    """One step of :meth:`.index3.Index3Formulation.step` from ``y`` into ``y_new`` on
    ``d`` (:class:`StepData`) -- the predictor and the Newton iterations on the positions
    (paper 000, eqs. 17-39), the velocity and acceleration projections (eqs. 40-69) --
    its statistics into ``d.stats``; False where it has something to say."""
    calls, model, ix, body, rows, leaf, work, stats, limits = (d.calls, d.model, d.ix, d.body, d.rows, d.leaf, d.work,
                                                                d.stats, d.limits)
    nb = body.x.shape[0]
    nr = rows.phi.shape[0]
    qb, qdb, qddb, lamb, mub = _views(y, nb, nr)
    q, qd, qdd, lam, mu = _views(y_new, nb, nr)
    c4 = 0.25 * dt * dt
    N.predictor(qb, qdb, qddb, dt, q, body.qd_hat, body.qdd_hat)
    copy1(lam, lamb)
    copy1(mu, mub)
    base = leaf.base
    base[:] = 0.0
    args = (d.newton, dt, q, mu, lam, model, ix, body, rows, leaf, work, d.tree)
    ok, done = call_checked_count(calls.newton, args)
    if not ok or done[0] < 0:
        return False
    n_it, dqn = done
    stats[NEWTON_TOTAL] += n_it
    more = 0
    more_dq = limits.more_acc * c4
    if limits.tol > more_dq:
        more_dq = limits.tol
    last = np.inf
    while dqn > more_dq and more < limits.more_rounds and dqn < limits.stall * last:
        last = dqn
        more += 1
        ok, done = call_checked_count(calls.newton, args)
        if not ok or done[0] < 0:
            return False
        n_it, dqn = done
        stats[NEWTON_TOTAL] += n_it
        stats[EXTRA_ROUNDS] += 1.0
    stats[LAST_DQ] = dqn
    if dqn > stats[MAX_DQ]:
        stats[MAX_DQ] = dqn
    # the mass-orthogonal projections (eqs. 40-69)
    N.difference_rates(q, body.qd_hat, body.qdd_hat, dt, qd, qdd)
    ok, solve = call_checked_floats3(calls.velocities,
                                     (d.projections, q, qd, model, ix, body, rows, leaf, work, d.tree))
    if not ok or solve[0] != solve[0]:
        return False
    ok, viol = call_checked_float(calls.accelerations,
                                  (d.projections, solve, q, qd, qdd, model, ix, body, rows, leaf, work, d.tree))
    if not ok:
        return False
    if d.projections.exact:  # the multipliers of the projected accelerations, as Python's
        nu = work.lam
        for k in range(model.n_joint_rows):
            lam[k] -= nu[k]
    stats[STEPS] += 1.0
    if viol > stats[MAX_VIOLATION]:
        stats[MAX_VIOLATION] = viol
    if viol > limits.unconverged:
        return False  # Index3Formulation._watch counts it and may warn
    stats[CONVERGED_RUN] += 1.0
    if stats[CONVERGED_RUN] >= limits.converged_steps:
        stats[WARN_LEVEL] = limits.unconverged
    jq_ref, jq = body.jq_ref, body.jq
    for s in d.springs:
        jq_ref[s] = jq[s]
    for k in range(y_new.shape[0]):
        if not np.isfinite(y_new[k]):
            return False
    return not viol > limits.diverged


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _evaluate(y, d, pred, anchor_pred, P, reactions):
    """What :meth:`.index3.Index3Formulation.evaluate` computes at ``y`` on ``d``
    (:class:`StepData`), into ``d.body``, ``P`` and ``reactions``; False where it would raise."""
    calls, model, ix, body, rows = d.calls, d.model, d.ix, d.body, d.rows
    nb = body.x.shape[0]
    q, qd, qdd, lam, _ = _views(y, nb, rows.phi.shape[0])
    x, R = body.x, body.R
    ok = call_void(calls.kinematics, (q, qd, qdd, x, R, body.V, body.A, body.E))
    ok = ok and call_void(calls.rows, (model.ca, ix.row_adr, body, rows))
    if not ok:
        return False
    K.joint_points(pred, anchor_pred, x, R, P)
    reactions[:] = 0.0
    if not call_void(calls.reactions, (model.ca, ix.row_adr, x, P, rows.Gb, lam, reactions)):
        return False
    for i in range(nb):
        for c in range(7):
            if not np.isfinite(q[i, c]):
                return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def index3_operation(desc, proto, y, out):
    """The operations kernel (:class:`.base.RowKernels`; ``out`` unused): with ``clock`` =
    (t0, t1, n, :data:`STEP`), ``n`` steps of ``(t1 - t0) / n`` from ``y`` in place, as
    :func:`engine.integrators.stepper_attempts` takes them; with ``clock`` = (t,
    0, n, :data:`EVALUATE`), the evaluation at ``y``.  0.0: done; 1.0: not (Python's)."""
    clock, y_new, d, pred, anchor_pred, P, reactions = unpack(desc, proto)
    if clock[3] == STEP:
        t0, t1 = clock[0], clock[1]
        n = np.int64(clock[2])
        h = (t1 - t0) / n
        for _ in range(n):
            if not _step(h, y, y_new, d):
                return 1.0
            copy1(y, y_new)
        return 0.0
    return 0.0 if _evaluate(y, d, pred, anchor_pred, P, reactions) else 1.0


@njit(cache=True, nogil=True, _nrt=False)
def index3_check(desc, proto, y, out):
    """What :meth:`.index3.Index3Formulation.health` reports, into ``health``: [1.0 where
    loops close, the loop conditioning of the last step's tree factors]."""
    health, closing, conditioning, args = unpack(desc, proto)
    if closing.shape[0] == 0:
        health[0] = 0.0
        return True
    ok, cond = call_checked_float(conditioning, args)
    health[0] = 1.0
    health[1] = cond
    return ok


def row_kernels(form, limits: Limits) -> RowKernels:
    """:class:`.base.RowKernels` of ``form`` (an :class:`.index3.Index3Formulation` on the
    tree solve): :func:`index3_operation` and :func:`index3_check` on its own arrays."""
    m, lay, body, rows, leaf, work = form.model, form.lay, form.body, form.rows, form.leaf, form.tree_work
    ma, ix = form.model_arrays, lay.ix
    nb, nr = m.nb, form.nr
    y = np.zeros(21 * nb + nr + nb)  # a state of the kernels' types (the views of _views)
    q, qd, qdd, lam, mu = form._split(y)
    P, reactions = np.zeros((m.nj, 3)), np.zeros((m.nj, 6))
    ns, ps, tc = form.newton_settings, form.projection_settings, form.tree_calls
    calls = Calls(
        native_address(N.newton_iterations, ns, 0.0, q, mu, lam, ma, ix, body, rows, leaf, work, tc),
        native_address(N.velocity_projection, ps, q, qd, ma, ix, body, rows, leaf, work, tc),
        native_address(N.acceleration_projection, ps, (0.0, 0.0, 0.0), q, qd, qdd, ma, ix, body, rows, leaf, work, tc),
        native_address(K.body_kinematics, q, qd, qdd, body.x, body.R, body.V, body.A, body.E),
        native_address(K.joint_rows, ma.ca, ix.row_adr, body, rows),
        native_address(K.body_wrench_from_rows, ma.ca, ix.row_adr, body.x, P, rows.Gb, lam, reactions))
    clock, stats = np.zeros(5), np.zeros(len(STATS))
    data = StepData(calls, ns, ps, ma, ix, body, rows, leaf, work, tc, form.springs, stats, limits)
    step = StateKernel(index3_operation, (clock, np.zeros_like(y), data, m.pred, m.anchor_pred, P, reactions))
    health = np.zeros(2)
    cond_args = (ix, lay.Kf, lay.Kr, form._closing)
    check = StateKernel(index3_check, (health, form._closing, native_address(tree.loop_conditioning, *cond_args),
                                       cond_args))

    def before():
        stats[:] = [getattr(form, name) for name in STATS]

    def after():
        for k, name in enumerate(STATS):
            setattr(form, name, type(getattr(form, name))(stats[k]))

    return RowKernels(step, None, check, (body.x, body.R, body.V, body.A, np.full(m.nj, np.nan), P, reactions),
                      health, entry_clock=clock, ops=(STEP, EVALUATE), own=(stats, body.jq_ref), before=before,
                      after=after)
