"""The compiled row loop's kernels (:mod:`engine.row_loop` binds them to a run): a block
of output rows -- the steps, the evaluation, the recorder's row and the monitor's
verdict for many output instants in one kernel call.

* :func:`rk4_rows`: fixed-step ``rk4`` intervals (each formulation's one-kernel,
  two-kernel or operations-kernel step);
* :func:`erk_rows`: ``rk45`` / ``dop853`` restarted at each output instant, for a
  formulation that projects there (``dense`` on loops);
* :func:`erk_dense_rows`: ``rk45`` / ``dop853`` as one continuous integration read at the
  output instants by the last step's interpolant, for a formulation that does not
  project (the tree formulations on trees).

Each does what the Python pipeline does for an interval, with the same kernels called
by the addresses of their machine code and the same arithmetic in the same order, and
stops *before* the first instant where anything has something to say -- the monitor, a
failed step or evaluation -- with everything as it was, so that Python does that
interval as it always did.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from .formulations.base import TICK_FAILED, TICK_FRESH, TICK_I, TICK_N, TICK_T0, TICK_T1
from .formulations.rk4_kernel import (
    call_by_table, call_by_table_bool, call_dynamics_by_table, call_positions_by_table, copy1, rk4_interval,
    rk4_interval_split, table_call,
)
from .formulations.erk_kernel import (
    FINISHED, H_ABS, H_PREV, METHOD, NFEV, RUNNING, STATUS, T, T_OLD, erk_dense_at, erk_dense_prepare, erk_reset,
    erk_start, erk_step,
)
from .formulations.dense_data import NEAR as WATCH_NEAR
from .integrators import _largest
from .monitor_kernels import ACTIVE, plain_row


@intrinsic
def call_row(typingctx, address, desc, x, R, V, acc, jq, P, reactions, out):
    """Call the recorder's compiled row kernel ``_row(desc, proto, x, R, V, acc, jq, P,
    reactions, out) -> int`` (:func:`engine.results._row`) at ``address`` with its table
    alone (:func:`~engine.formulations.rk4_kernel.call_by_table`'s way); -1 if it raised."""
    return table_call(types.int64, -1, address, desc, (x, R, V, acc, jq, P, reactions, out))


class RowArrays(NamedTuple):
    """What a row is written from, and what to put back when a row is not kept: the
    formulation's arrays of the last evaluation (written by its kernels in place), the
    recorder's continuity state and the formulation's own state beyond ``y``."""

    x: np.ndarray  # (nb, 3) centres of mass, the formulation's evaluation
    R: np.ndarray  # (nb, 3, 3) orientations, the formulation's evaluation
    V: np.ndarray  # (nb, 6) twists [v_C; w], the formulation's evaluation
    acc: np.ndarray  # (nb, 6) classical accelerations, the formulation's evaluation
    jq: np.ndarray  # (nj,) known joint coordinates (NaN: from the poses), the formulation's evaluation
    P: np.ndarray  # (nj, 3) joint points, the formulation's evaluation
    reactions: np.ndarray  # (nj, 6) joint reactions, the formulation's evaluation
    health: np.ndarray  # (2,) [1.0 if reported, the loop conditioning], the check kernel
    mk: tuple  # the kinematic arrays (KinArrays): a two-kernel step normalises the quaternions with them
    post: tuple  # a two-kernel step's post-step (address, table) (RowKernels.split_post; address 0: none)
    tick: np.ndarray  # (6,) the post-step's clock: the TICK_* slots (RowKernels.tick)
    qprev: np.ndarray  # (nb, 4) the recorder's last quaternions (their signs), the row kernel
    jq_ref: np.ndarray  # (nj,) the recorder's unwrapped angles, the row kernel
    work: np.ndarray  # (WORK_SLOTS,) the recorder's drivers' work and last powers, the drivers' row kernel
    own: tuple  # two 1-D arrays of the formulation's state that a step or an evaluation changes
    qprev_back: np.ndarray  # (nb, 4) qprev before the interval being made
    jq_ref_back: np.ndarray  # (nj,) jq_ref before the interval being made
    work_back: np.ndarray  # (WORK_SLOTS,) work before the interval being made
    own_back: tuple  # the two before the interval being made
    y_back: np.ndarray  # (n,) the state before the interval being made
    at_row: np.ndarray  # (1,) 1 while the step kernel makes an output instant's evaluation (RowKernels.at_row)


class RowCalls(NamedTuple):
    """The kernels a row loop calls by the addresses of their machine code, each
    ``(address, table)`` (:class:`.base.StateKernel`): called with the table alone
    (:func:`~engine.formulations.rk4_kernel.call_by_table`), so that the row loops are
    compiled once for every formulation."""

    step: tuple  # the right-hand side, the positions kernel (two kernels) or the operations kernel
    post: tuple  # the post-step (address 0: none) or, with two kernels, the dynamics kernel
    check: tuple  # the formulation's check kernel (RowKernels.check)
    row: tuple  # the recorder's row kernel (engine.results._row)
    drive: tuple  # the recorder's drivers' columns (engine.results._driver_row; address 0: no drivers)


class RowRun(NamedTuple):
    """What stays through a run's blocks of rows: the output instants, the block's span,
    the kernels' clock, the monitor's state."""

    times: np.ndarray  # (rows,) the output instants
    span: np.ndarray  # (8,) the block and its settings: rk4_rows' and erk_rows' span
    clock: np.ndarray  # the kernels' clock: (t0, t1, n, ...) or an operations kernel's own
    no_rates: np.ndarray  # (0,) "no rates wanted"
    mon: np.ndarray  # (MONITOR_SLOTS,) the monitor's state (Monitor.to_row_loop)
    hist: np.ndarray  # (2, nb, 15) the monitor's history of the last rows
    time: np.ndarray  # (1,) where a time-dependent right-hand side reads its time (RowKernels.time), or (0,)


class StepArrays(NamedTuple):
    """The compiled solver's arrays of an ``rk45`` / ``dop853`` run (:func:`erk_rows`)."""

    coef: tuple  # the method's coefficients (erk_kernel.Coefficients)
    const: np.ndarray  # (NSLOTS,) the solver's scalars that stay through a run (solver_constants)
    sol: np.ndarray  # (NSLOTS,) the solver's scalars
    y: np.ndarray  # (n,) the solver's state
    y_old: np.ndarray  # (n,) the state before its last step
    fy: np.ndarray  # (n,) the right-hand side at y
    K: np.ndarray  # (extended stages, n) the stages
    work: np.ndarray  # (3, n) scratch
    stall: np.ndarray  # (6,) the stall guard: shortest step not counted, limit, count -- a collapse's, a crawl's


class DenseArrays(NamedTuple):
    """The last step's interpolant of a continuous ``rk45`` / ``dop853`` integration
    (:func:`erk_dense_rows`), and the solver as it was before the interval being made."""

    Q: np.ndarray  # the interpolant's coefficients (erk_dense_prepare)
    at: np.ndarray  # (3,) the solver's time Q was made at (NaN: none), that step's start and length
    sol_back: np.ndarray  # (NSLOTS,) the solver's scalars
    y_back: np.ndarray  # (n,) its state
    y_old_back: np.ndarray  # (n,) the state before its last step
    fy_back: np.ndarray  # (n,) the right-hand side at its state
    K_back: np.ndarray  # (extended stages, n) its stages
    Q_back: np.ndarray  # the interpolant
    at_back: np.ndarray  # (3,)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _copy2(dst, src):
    for i in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _row_copy(dst, src):
    """What an interval changes -- the state, the recorder's continuity (quaternion signs,
    unwrapped angles, the drivers' work), the formulation's own two arrays -- from ``src``
    into ``dst``."""
    copy1(dst[0], src[0])
    _copy2(dst[1], src[1])
    copy1(dst[2], src[2])
    copy1(dst[3], src[3])
    copy1(dst[4], src[4])
    copy1(dst[5], src[5])


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _keep(ra, y):
    """Save what an interval changes (:func:`_row_copy`) before it."""
    _row_copy((ra.y_back, ra.qprev_back, ra.jq_ref_back, ra.work_back, ra.own_back[0], ra.own_back[1]),
              (y, ra.qprev, ra.jq_ref, ra.work, ra.own[0], ra.own[1]))


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _restore(ra, y):
    """Put it back where the interval is not kept."""
    _row_copy((y, ra.qprev, ra.jq_ref, ra.work, ra.own[0], ra.own[1]),
              (ra.y_back, ra.qprev_back, ra.jq_ref_back, ra.work_back, ra.own_back[0], ra.own_back[1]))


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _row(kept, calls, ra, run, y, t, out, active):
    """After an evaluation that succeeded (``kept``): the check kernel, the recorder's
    row kernel at ``t`` into ``out`` (and its drivers' columns), the monitor's verdict
    (where ``active``); whether the row is kept."""
    c, r, d = calls.check, calls.row, calls.drive
    kept = kept and call_by_table_bool(c[0], c[1], y, run.no_rates)
    if kept:
        out[0] = t
        kept = call_row(r[0], r[1], ra.x, ra.R, ra.V, ra.acc, ra.jq, ra.P, ra.reactions, out) == 0
    if kept and d[0] != 0:
        kept = call_row(d[0], d[1], ra.x, ra.R, ra.V, ra.acc, ra.jq, ra.P, ra.reactions, out) == 0
    if kept and active:
        kept = plain_row(run.mon, run.hist, t, out, ra.V, ra.acc, ra.x, ra.health)
    return kept


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _guarded_step(f, f_desc, clock, solver):
    """One accepted step of the solver (:class:`StepArrays`; its right-hand side ``f``),
    then the stall guard's counts (``solver.stall``: a collapse's, then a crawl's
    shortest step not counted, limit and count; then the crawl's block, its steps and
    start) as :class:`engine.integrators._Stall` keeps them; whether the step and all
    went well."""
    sol, stall = solver.sol, solver.stall
    if erk_step(f, f_desc, clock, solver.coef, sol, solver.y, solver.y_old, solver.fy, solver.K,
                solver.work) > FINISHED:
        return False
    h = sol[T] - sol[T_OLD]
    ok = True
    for g in (0, 3):
        if h >= stall[g]:
            stall[g + 2] = 0.0
        else:
            stall[g + 2] += 1.0
            ok = ok and stall[g + 2] < stall[g + 1]
    if ok:  # the crawl's blocks: (steps in the block, its start) after the two counts
        stall[6] += 1.0
        if stall[6] >= stall[4]:
            if abs(sol[T] - stall[7]) < stall[4] * stall[3]:
                return False
            stall[6] = 0.0
            stall[7] = sol[T]
    return ok


@njit(cache=True, nogil=True, _nrt=False)
def rk4_rows(calls, ra, run, y, stages, rows):
    """The output rows ``span[0] .. span[1] - 1`` (indices into ``times``; ``run``:
    :class:`RowRun`) of a fixed-step run, each interval in ``span[2]`` rk4 steps from the
    state ``y`` (in place), into ``rows`` from its first row on; ``calls``
    (:class:`RowCalls`): ``f`` its step kernel, ``p`` its post kernel, ``c`` the check,
    ``r`` the recorder's row kernel.  Per interval, as the Python pipeline does it:

    1. the interval (:class:`.base.RowKernels`): where ``span[3]`` is 0,
       :func:`~engine.formulations.rk4_kernel.rk4_interval` with the right-hand side
       ``f`` and post-step ``p`` (``p``'s address 0: none) on ``clock`` = (t0, t1, n);
       where it is -1, ``rk4_interval_split`` with the positions kernel ``f`` and the
       dynamics ``p`` on ``clock`` = (t0, t1, n, nq = ``span[5]``), the quaternions
       normalised if ``span[6]``; else the operation ``span[3]`` of the operations
       kernel ``f`` with ``clock`` its own clock; then the state's size check
       (:func:`engine.integrators._check`);
    2. the evaluation: ``f`` without rates (``f`` then ``p`` without rates for two
       kernels; the operation ``span[4]``), then the formulation's check kernel ``c``;
       where ``span[7]`` (:attr:`.base.RowKernels.reuse`), ``f`` with its rates into
       ``stages[0]``, which the next interval's first step takes as its k1 -- or nothing,
       where the post-step left that evaluation made (``TICK_FRESH``);
    3. the recorder's row kernel ``r`` (:func:`engine.results._row`) from ``ra``;
    4. the monitor's verdict (:func:`engine.monitor_kernels.plain_row`), where ``mon[ACTIVE]``.

    Stops before the first interval where any of these has something to say, with ``y``,
    the recorder's continuity and the formulation's own state as they were.  Returns
    ``(rows made, right-hand sides evaluated by rk4_interval)``; the rows are ``rows[:made]``."""
    f, f_desc = calls.step
    p, p_desc = calls.post
    times, span, clock, no_rates = run.times, run.span, run.clock, run.no_rates
    k0 = np.int64(span[0])
    k1 = np.int64(span[1])
    n = span[2]
    op_step = span[3]
    op_evaluate = span[4]
    nq = np.int64(span[5])
    quaternions = span[6] != 0.0
    reuse = span[7] != 0.0
    active = run.mon[ACTIVE] != 0.0
    count = 0
    known = False  # stages[0] holds f at y: the last evaluation's rates
    for k in range(k0, k1):
        _keep(ra, y)
        clock[0] = times[k - 1]
        clock[1] = times[k]
        clock[2] = n
        if op_step == 0.0:
            ra.tick[TICK_T0], ra.tick[TICK_T1], ra.tick[TICK_N] = times[k - 1], times[k], n
            ra.tick[TICK_I], ra.tick[TICK_FAILED], ra.tick[TICK_FRESH] = 0.0, 0.0, 0.0
            clock[3] = 1.0 if known else 0.0
            made, t_bad = rk4_interval(f, f_desc, p, p_desc, clock, y, stages, run.time)
            count += made
            kept = t_bad != t_bad and ra.tick[TICK_FAILED] == 0.0
        elif op_step == -1.0:
            clock[3] = nq
            clock[4] = 1.0 if known else 0.0
            ra.tick[TICK_FAILED] = 0.0
            made, t_bad, _ = rk4_interval_split((f, f_desc), (p, p_desc), ra.mk, quaternions,
                                                ra.post, clock, y, stages, run.time)
            count += made
            kept = t_bad != t_bad and ra.tick[TICK_FAILED] == 0.0
        else:
            clock[3] = op_step
            kept = call_by_table(f, f_desc, y, no_rates) == 0.0
        kept = kept and _largest(y) <= 1e12
        if kept:
            if op_step == 0.0:
                if run.time.shape[0] > 0:
                    run.time[0] = times[k]
                if not (reuse and ra.tick[TICK_FRESH] != 0.0):  # else the post-step made it
                    ra.at_row[0] = 1.0
                    call_by_table_bool(f, f_desc, y, stages[0] if reuse else no_rates)
                    ra.at_row[0] = 0.0
                known = reuse
            elif op_step == -1.0:
                if run.time.shape[0] > 0:
                    run.time[0] = times[k]
                call_positions_by_table(f, f_desc, y[:nq])
                kept = call_dynamics_by_table(p, p_desc, y[:nq], y[nq:], stages[0] if reuse else no_rates)
                known = reuse
            else:
                clock[0] = times[k]
                clock[1] = 0.0
                clock[3] = op_evaluate
                kept = call_by_table(f, f_desc, y, no_rates) == 0.0
        kept = _row(kept, calls, ra, run, y, times[k], rows[k - k0], active)
        if not kept:
            _restore(ra, y)
            return k - k0, count
    return k1 - k0, count


@njit(cache=True, nogil=True, _nrt=False)
def erk_rows(calls, ra, run, y, rows, solver):
    """The output rows ``span[0] .. span[1] - 1`` of an ``rk45`` / ``dop853`` run of a
    formulation that projects, through its operations kernel ``f`` (``calls.step``:
    ``dense``'s, or a tree formulation's :func:`.formulations.tree_formulation.tree_operation`,
    whose watch state is ``own[0]``; the solver's arrays
    ``solver``, :class:`StepArrays`), each interval as :func:`engine.integrators.scipy_ode`
    makes it for a formulation that projects:

    1. a solver started again at ``(t0, y)`` towards ``t1`` (:func:`.formulations.erk_kernel.erk_start`;
       its first step ``min(span[6], t1 - t0)``, the last interval's proposal, or chosen
       where ``span[6]`` is 0; the run's constants ``const``), its steps (:func:`~.formulations.erk_kernel.erk_step`),
       each after the singularity watch (operation ``span[2]``: the step bound's), the
       stall guard's counts of short steps in ``stall`` = (shortest step not counted,
       limit, count) for a collapse and for a crawl; then the post-step (operation
       ``span[3]``) and the size check;
    2. the evaluation (operation ``span[4]``), the check kernel ``c``, the recorder's row
       ``r`` and the monitor's verdict, as :func:`rk4_rows`.

    Stops before the first interval where anything has something to say -- the watch
    finds the loops near a singular configuration (the step bound then limits steps and
    projections follow each one: Python's), the steps collapse or fail, an evaluation
    fails, the monitor speaks -- with ``y``, the recorder's continuity, the
    formulation's own state, the proposal ``span[6]`` and the stall counts as they were.
    Returns ``(rows made, right-hand sides evaluated)``."""
    f, f_desc = calls.step
    times, span, clock, no_rates = run.times, run.span, run.clock, run.no_rates
    coef, const, sol, sy, y_old, fy, K, work, stall = solver
    k0 = np.int64(span[0])
    k1 = np.int64(span[1])
    op_watch, op_post, op_evaluate = span[2], span[3], span[4]
    active = run.mon[ACTIVE] != 0.0
    count = 0.0
    n = y.shape[0]
    for k in range(k0, k1):
        _keep(ra, y)
        h_keep, run_keep, crawl_keep, block_keep = span[6], stall[2], stall[5], (stall[6], stall[7])
        t0, t1 = times[k - 1], times[k]
        erk_reset(sol, const, t0, t1, np.inf, min(span[6], t1 - t0) if span[6] > 0.0 else 0.0)
        for i in range(n):
            sy[i] = y[i]
        kept = erk_start(f, f_desc, clock, sol, sy, fy, work)
        while kept and sol[STATUS] == RUNNING:
            clock[0] = sol[T]
            clock[3] = op_watch
            kept = call_by_table(f, f_desc, sy, no_rates) == 0.0 and ra.own[0][WATCH_NEAR] == 0.0
            if not kept:
                break
            kept = _guarded_step(f, f_desc, clock, solver)
        count += sol[NFEV]
        if kept:
            for i in range(n):
                y[i] = sy[i]
            clock[0] = t1
            clock[3] = op_post
            kept = call_by_table(f, f_desc, y, no_rates) == 0.0
        kept = kept and _largest(y) <= 1e12
        if kept:
            clock[0] = t1
            clock[1] = 0.0
            clock[3] = op_evaluate
            kept = call_by_table(f, f_desc, y, no_rates) == 0.0
        kept = _row(kept, calls, ra, run, y, t1, rows[k - k0], active)
        if not kept:
            _restore(ra, y)
            span[6], stall[2], stall[5] = h_keep, run_keep, crawl_keep
            stall[6], stall[7] = block_keep
            return k - k0, count
        span[6] = sol[H_ABS]
    return k1 - k0, count


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _solver_copy(dst, src):
    """The continuous solver's arrays (:func:`erk_dense_rows`: scalars, state, state before
    its last step, right-hand side, stages, interpolant, the interpolant's time) from
    ``src`` into ``dst``: saved before an interval, put back where it is not kept."""
    copy1(dst[0], src[0])
    copy1(dst[1], src[1])
    copy1(dst[2], src[2])
    copy1(dst[3], src[3])
    _copy2(dst[4], src[4])
    _copy2(dst[5], src[5])
    copy1(dst[6], src[6])


@njit(cache=True, nogil=True, _nrt=False)
def erk_dense_rows(calls, ra, run, y, rows, solver, dense):
    """The output rows ``span[0] .. span[1] - 1`` of an ``rk45`` / ``dop853`` run of a
    formulation that does not project (its rates, a state kernel: ``calls.step``; the
    solver's arrays ``solver``, :class:`StepArrays`, those of the Python solver the
    integrator holds; its interpolant ``dense``, :class:`DenseArrays`), as
    :func:`engine.integrators.scipy_ode` reads its one continuous integration.  Per
    output instant ``t``:

    1. the solver's steps (:func:`~.formulations.erk_kernel.erk_step`, the stall guard's
       counts in ``stall`` as :func:`erk_rows` keeps them) while it is short of ``t`` by more
       than ``1e-12 max(1, |t|)``;
    2. the state at ``t`` into ``y``: the solver's own where it is there (or finished
       short of it), else the last step's interpolant
       (:func:`~.formulations.erk_kernel.erk_dense_prepare`, once per step, and
       :func:`~.formulations.erk_kernel.erk_dense_at`);
    3. the size check, the evaluation (``calls.step`` without rates), the check kernel,
       the recorder's row and the monitor's verdict, as :func:`rk4_rows`.

    Stops before the first instant where anything has something to say, with the solver
    (scalars, state, stages, interpolant), ``y`` (the state at the last row made), the
    recorder's continuity, the formulation's own state and the stall counts as they were.
    Returns ``(rows made, right-hand sides evaluated)``."""
    f, f_desc = calls.step
    times, span, clock, no_rates = run.times, run.span, run.clock, run.no_rates
    coef, sol, sy, y_old, fy, K, work, stall = (solver.coef, solver.sol, solver.y, solver.y_old, solver.fy,
                                               solver.K, solver.work, solver.stall)
    Q, at = dense.Q, dense.at
    live = (sol, sy, y_old, fy, K, Q, at)
    back = (dense.sol_back, dense.y_back, dense.y_old_back, dense.fy_back, dense.K_back, dense.Q_back, dense.at_back)
    k0 = np.int64(span[0])
    k1 = np.int64(span[1])
    active = run.mon[ACTIVE] != 0.0
    nfev0 = sol[NFEV]
    for k in range(k0, k1):
        _keep(ra, y)
        _solver_copy(back, live)
        run_keep, crawl_keep, block_keep = stall[2], stall[5], (stall[6], stall[7])
        t = times[k]
        tol = 1e-12 * max(1.0, abs(t))
        kept = True
        while kept and sol[STATUS] == RUNNING and sol[T] < t - tol:
            kept = _guarded_step(f, f_desc, clock, solver)
        if kept:
            if abs(t - sol[T]) <= tol or (sol[STATUS] == FINISHED and sol[T] <= t):
                copy1(y, sy)
            else:
                if at[0] != sol[T]:
                    kept = erk_dense_prepare(f, f_desc, clock, coef, sol, sy, y_old, fy, K, Q, work)
                    at[0], at[1], at[2] = sol[T], sol[T_OLD], sol[H_PREV]
                if kept:
                    erk_dense_at(sol[METHOD], at[1], at[2], y_old, Q, t, y)
        kept = kept and _largest(y) <= 1e12
        if kept:
            call_by_table_bool(f, f_desc, y, no_rates)
        kept = _row(kept, calls, ra, run, y, t, rows[k - k0], active)
        if not kept:
            count = sol[NFEV] - nfev0
            _restore(ra, y)
            _solver_copy(live, back)
            stall[2], stall[5] = run_keep, crawl_keep
            stall[6], stall[7] = block_keep
            return k - k0, count
    return k1 - k0, sol[NFEV] - nfev0
