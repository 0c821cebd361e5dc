"""Fixed-step runs' output rows in compiled code: the pipeline's rk4 steps, evaluation,
row and monitor verdict for many output instants in one kernel call.

A whole ``rk4`` run of a small mechanism spent four fifths of its time in Python between
the kernels, once per output row: the interval's kernel call, the formulation's
``evaluate`` (a kernel, a residual check, the reactions, copies into an
:class:`~engine.formulations.base.Evaluation`), the recorder's row kernel and the
monitor's judgement.  :func:`rk4_rows` does the same for a block of output intervals --
the same kernels, called by the addresses of their machine code
(:func:`~engine.formulations.rk4_kernel.call_state_kernel`), the same arithmetic in the
same order -- so a row is the one the Python pipeline writes, bit for bit
(tests/engine/test_row_loop.py).

The monitor's figures for each row are computed here as :meth:`Monitor._judge` computes
them, and a row is kept only where it finds nothing to say: every figure under its
limit, the energy drift not ahead of its pace (:meth:`Monitor.ahead_of_pace`).  At the
first row where it would say anything -- a retry, a flag, a failure, a refinement -- or
where an evaluation fails, the block ends *before* that row, the state and the
recorder's continuity as they were, and the Python pipeline does that interval as it
always did (its messages, retries and decisions are its own).  The monitor's state
crosses between the two as one array (:meth:`Monitor.to_row_loop`).

Which runs: a formulation that offers :meth:`~engine.formulations.base.Formulation.row_kernels`
(:class:`~engine.formulations.base.RowKernels`: ``dense``, ``dca``, ``hdca``, ``rcr`` and
``embedding``, with loops or without; with drivers, their columns by
:func:`engine.results._driver_row`, every one but ``hdca``, which refuses them), integrator
``rk4``; and ``dense``'s ``rk45`` and
``dop853`` on loops (:func:`erk_rows`, :class:`AdaptiveRowLoop`: the compiled steps of
:mod:`.formulations.erk_kernel` between the same evaluation, row and verdict);
``LINKWORK_COMPILED_ROWS=0`` turns it off (the Python pipeline alone, for comparing the two).
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from .formulations.base import TICK_FAILED, TICK_FRESH, TICK_I, TICK_N, TICK_T0, TICK_T1, StateKernel
from .formulations.workspace import compiled_entry
from .formulations.rk4_kernel import (
    NO_POST, _native_call, call_dynamics, call_positions, call_state_kernel, normalize_state, rk4_interval,
    rk4_interval_split,
)
from .formulations.erk_kernel import (
    FINISHED, H_ABS, NFEV, RUNNING, STATUS, T, T_OLD, erk_reset, erk_start, erk_step, solver_constants,
)
from .formulations.dense_solve import NEAR as WATCH_NEAR
from .integrators import RowBlock, _largest, output_times, rk4_attempts
from .monitor import ACTIVE, MONITOR_SLOTS, plain_row


@intrinsic
def call_row(typingctx, address, desc, proto, x, R, V, acc, jq, P, reactions, out):
    """Call the recorder's compiled row kernel (:func:`engine.results._row`) at
    ``address`` (numba's native entry for exactly these argument types:
    :meth:`.base.StateKernel.native`); -1 if it raised."""
    if not isinstance(address, types.Integer):
        return None
    sig = types.int64(address, desc, proto, x, R, V, acc, jq, P, reactions, out)
    return sig, _native_call(types.int64, -1)


@intrinsic
def call_operation(typingctx, address, desc, proto, a, b):
    """Call a formulation's compiled operations kernel ``kernel(desc, proto, a, b) ->
    status`` (:class:`.base.RowKernels`) at ``address``; NaN if it raised."""
    if not isinstance(address, types.Integer):
        return None
    return types.float64(address, desc, proto, a, b), _native_call(types.float64, float("nan"))


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


class RowCalls(NamedTuple):
    """The kernels a row loop calls by the addresses of their machine code, each
    ``(address, table, prototypes)`` (:class:`.base.StateKernel`)."""

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
    stall: np.ndarray  # (3,) the stall guard: shortest step not counted, limit, count


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _copy1(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _copy2(dst, src):
    for i in range(src.shape[0]):
        for c in range(src.shape[1]):
            dst[i, c] = src[i, c]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _keep(ra, y):
    """Save what an interval changes: the state, the recorder's continuity, the formulation's own."""
    _copy1(ra.y_back, y)
    _copy2(ra.qprev_back, ra.qprev)
    _copy1(ra.jq_ref_back, ra.jq_ref)
    _copy1(ra.work_back, ra.work)
    _copy1(ra.own_back[0], ra.own[0])
    _copy1(ra.own_back[1], ra.own[1])


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _restore(ra, y):
    _copy1(y, ra.y_back)
    _copy2(ra.qprev, ra.qprev_back)
    _copy1(ra.jq_ref, ra.jq_ref_back)
    _copy1(ra.work, ra.work_back)
    _copy1(ra.own[0], ra.own_back[0])
    _copy1(ra.own[1], ra.own_back[1])


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _row(kept, calls, ra, run, y, t, out, active):
    """After an evaluation that succeeded (``kept``): the check kernel, the recorder's
    row kernel at ``t`` into ``out`` (and its drivers' columns), the monitor's verdict
    (where ``active``); whether the row is kept."""
    c, r, d = calls.check, calls.row, calls.drive
    kept = kept and call_state_kernel(c[0], c[1], c[2], y, run.no_rates)
    if kept:
        out[0] = t
        kept = call_row(r[0], r[1], r[2], ra.x, ra.R, ra.V, ra.acc, ra.jq, ra.P, ra.reactions, out) == 0
    if kept and d[0] != 0:
        kept = call_row(d[0], d[1], d[2], ra.x, ra.R, ra.V, ra.acc, ra.jq, ra.P, ra.reactions, out) == 0
    if kept and active:
        kept = plain_row(run.mon, run.hist, t, out, ra.V, ra.acc, ra.x, ra.health)
    return kept


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
    4. the monitor's verdict (:func:`engine.monitor.plain_row`), where ``mon[ACTIVE]``.

    Stops before the first interval where any of these has something to say, with ``y``,
    the recorder's continuity and the formulation's own state as they were.  Returns
    ``(rows made, right-hand sides evaluated by rk4_interval)``; the rows are ``rows[:made]``."""
    f, f_desc, f_proto = calls.step
    p, p_desc, p_proto = calls.post
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
            made, t_bad = rk4_interval(f, f_desc, f_proto, p, p_desc, p_proto, clock, y, stages, run.time)
            count += made
            kept = t_bad != t_bad and ra.tick[TICK_FAILED] == 0.0
        elif op_step == -1.0:
            clock[3] = nq
            clock[4] = 1.0 if known else 0.0
            ra.tick[TICK_FAILED] = 0.0
            made, t_bad, _ = rk4_interval_split((f, f_desc, f_proto), (p, p_desc, p_proto), ra.mk, quaternions,
                                                ra.post, clock, y, stages, run.time)
            count += made
            kept = t_bad != t_bad and ra.tick[TICK_FAILED] == 0.0
        else:
            clock[3] = op_step
            kept = call_operation(f, f_desc, f_proto, y, no_rates) == 0.0
        kept = kept and _largest(y) <= 1e12
        if kept:
            if op_step == 0.0:
                if run.time.shape[0] > 0:
                    run.time[0] = times[k]
                if not (reuse and ra.tick[TICK_FRESH] != 0.0):  # else the post-step made it
                    call_state_kernel(f, f_desc, f_proto, y, stages[0] if reuse else no_rates)
                known = reuse
            elif op_step == -1.0:
                if run.time.shape[0] > 0:
                    run.time[0] = times[k]
                call_positions(f, f_desc, f_proto, y[:nq])
                kept = call_dynamics(p, p_desc, p_proto, y[:nq], y[nq:], stages[0] if reuse else no_rates)
                known = reuse
            else:
                clock[0] = times[k]
                clock[1] = 0.0
                clock[3] = op_evaluate
                kept = call_operation(f, f_desc, f_proto, y, no_rates) == 0.0
        kept = _row(kept, calls, ra, run, y, times[k], rows[k - k0], active)
        if not kept:
            _restore(ra, y)
            return k - k0, count
    return k1 - k0, count


@njit(cache=True, nogil=True, _nrt=False)
def erk_rows(calls, ra, run, y, rows, solver):
    """The output rows ``span[0] .. span[1] - 1`` of an ``rk45`` / ``dop853`` run of
    ``dense`` (its operations kernel ``f``: ``calls.step``; the solver's arrays
    ``solver``, :class:`StepArrays`), each interval as :func:`engine.integrators.scipy_ode`
    makes it for a formulation that projects:

    1. a solver started again at ``(t0, y)`` towards ``t1`` (:func:`.formulations.erk_kernel.erk_start`;
       its first step ``min(span[6], t1 - t0)``, the last interval's proposal, or chosen
       where ``span[6]`` is 0; the run's constants ``const``), its steps (:func:`~.formulations.erk_kernel.erk_step`),
       each after the singularity watch (operation ``span[2]``: the step bound's), the
       stall guard's count of short steps in ``stall`` = (shortest step not counted,
       limit, count); then the post-step (operation ``span[3]``) and the size check;
    2. the evaluation (operation ``span[4]``), the check kernel ``c``, the recorder's row
       ``r`` and the monitor's verdict, as :func:`rk4_rows`.

    Stops before the first interval where anything has something to say -- the watch
    finds the loops near a singular configuration (the step bound then limits steps and
    projections follow each one: Python's), the steps collapse or fail, an evaluation
    fails, the monitor speaks -- with ``y``, the recorder's continuity, the
    formulation's own state, the proposal ``span[6]`` and the stall count as they were.
    Returns ``(rows made, right-hand sides evaluated)``."""
    f, f_desc, f_proto = calls.step
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
        h_keep, run_keep = span[6], stall[2]
        t0, t1 = times[k - 1], times[k]
        erk_reset(sol, const, t0, t1, np.inf, min(span[6], t1 - t0) if span[6] > 0.0 else 0.0)
        for i in range(n):
            sy[i] = y[i]
        kept = erk_start(f, f_desc, clock, sol, sy, fy, work)
        while kept and sol[STATUS] == RUNNING:
            clock[0] = sol[T]
            clock[3] = op_watch
            kept = call_operation(f, f_desc, f_proto, sy, no_rates) == 0.0 and ra.own[0][WATCH_NEAR] == 0.0
            if not kept:
                break
            kept = erk_step(f, f_desc, clock, coef, sol, sy, y_old, fy, K, work) <= FINISHED
            if kept:
                if sol[T] - sol[T_OLD] >= stall[0]:
                    stall[2] = 0.0
                else:
                    stall[2] += 1.0
                    kept = stall[2] < stall[1]
        count += sol[NFEV]
        if kept:
            for i in range(n):
                y[i] = sy[i]
            clock[0] = t1
            clock[3] = op_post
            kept = call_operation(f, f_desc, f_proto, y, no_rates) == 0.0
        kept = kept and _largest(y) <= 1e12
        if kept:
            clock[0] = t1
            clock[1] = 0.0
            clock[3] = op_evaluate
            kept = call_operation(f, f_desc, f_proto, y, no_rates) == 0.0
        kept = _row(kept, calls, ra, run, y, t1, rows[k - k0], active)
        if not kept:
            _restore(ra, y)
            span[6], stall[2] = h_keep, run_keep
            return k - k0, count
        span[6] = sol[H_ABS]
    return k1 - k0, count


def enabled() -> bool:
    """Whether fixed-step runs make their rows in compiled code (``LINKWORK_COMPILED_ROWS``,
    on unless ``0``)."""
    return os.environ.get("LINKWORK_COMPILED_ROWS", "1") != "0"


#: the wall time a block of rows may take, at most (the live plots', pause's and cancel's pace)
BLOCK_SECONDS = 0.02


class RowLoop:
    """:func:`rk4_rows` bound to one run: the formulation's kernels
    (:meth:`~engine.formulations.base.Formulation.row_kernels`), the recorder's row
    kernel and continuity arrays, the monitor (None: off) and the output instants.
    :meth:`steps` is the ``rk4`` integrator's generator for the pipeline
    (:func:`engine.integrators.rk4`), yielding :class:`RowBlock` between the intervals
    it leaves to Python."""

    def __init__(self, form, kernels, recorder, monitor, settings, refinement, fixed_step: bool):
        self.form, self.monitor = form, monitor
        self.recorder = recorder
        self.refinement = refinement
        self.fixed_step = fixed_step
        nb = form.model.nb
        self.times = output_times(settings.dt, settings.t_end)
        self.ncols = len(recorder.columns)
        self.mon = np.zeros(MONITOR_SLOTS)
        self.hist = np.zeros((2, nb, 15))
        self.span = np.zeros(8)
        self.span[5], self.span[6] = form.model.nq, form.model.nq > form.model.nv
        self._no_rates = np.empty(0)
        self._rows = np.empty((0, self.ncols))
        self._stages = np.zeros((5, 0))
        self.per_row = 1e-4  # seconds a row takes, measured block by block
        self._bind(kernels)

    def _bind(self, kernels) -> None:
        """Take the formulation's kernels (again, where they are no longer
        :attr:`~.formulations.base.RowKernels.valid`: their arrays were replaced)."""
        form, recorder = self.form, self.recorder
        self.kernels = kernels
        step, check = kernels.step, kernels.check
        # without a post-step, one that is not called (address 0) of the type of the one
        # there is with quaternions: rk4_rows is compiled once per formulation, not twice
        post = kernels.post or StateKernel(normalize_state, (form.mk,))
        row = recorder._kernel
        nb, nj = form.model.nb, form.model.nj
        own = (tuple(kernels.own) + (np.empty(0), np.empty(0)))[:2]
        tick = kernels.tick if kernels.tick is not None else np.zeros(6)
        split_post = NO_POST if kernels.split_post is None else (kernels.split_post.native(), kernels.split_post.desc)
        self.ra = RowArrays(*kernels.arrays, kernels.health, form.mk, split_post, tick, recorder._qprev,
                            recorder._jq_ref, recorder.work_state, own, np.empty((nb, 4)), np.empty(nj),
                            np.empty_like(recorder.work_state), tuple(a.copy() for a in own), np.empty(0))
        dims = tuple(a.ndim for a in kernels.arrays) + (1,)
        # drivers: their columns with the efforts where the formulation's check leaves them
        # (the kernel held here: its table points into arrays it holds); without, one that is
        # not called (address 0) of the row kernel's types
        drive = self._drive = None if kernels.efforts is None else recorder.driver_kernel(*kernels.efforts)
        step_addr = step.native(1) if kernels.split else step.native()
        post_addr = 0 if kernels.post is None else post.native(3) if kernels.split else post.native()
        self.calls = RowCalls((step_addr, step.desc, step.proto), (post_addr, post.desc, post.proto),
                              (check.native(), check.desc, check.proto), (row.native(dims), row.desc, row.proto),
                              (0, row.desc, row.proto) if drive is None else (drive.native(dims), drive.desc,
                                                                              drive.proto))
        self.span[3:5] = kernels.ops if kernels.entry_clock is not None else (-1 if kernels.split else 0, 0)
        self.span[7] = kernels.reuse and kernels.entry_clock is None
        clock = kernels.entry_clock if kernels.entry_clock is not None else np.zeros(5)
        self.run = RowRun(self.times, self.span, clock, self._no_rates, self.mon, self.hist,
                          kernels.time if kernels.time is not None else np.zeros(0))
        self._bound = None

    def _entry(self, y, stages):
        """The compiled entry of :func:`rk4_rows` for this run's argument types."""
        if self._bound is None:
            self._bound = compiled_entry(rk4_rows, (self.calls, self.ra, self.run, y, stages, self._rows))
        return self._bound

    def warm(self, y: np.ndarray) -> None:
        """Compile, or load from the cache, :func:`rk4_rows` for this run's types now (a
        first run's first block would otherwise: the pipeline's :meth:`Simulation.prepare`)."""
        self._sized(y)
        self._entry(y, self._stages)

    def _sized(self, y: np.ndarray) -> None:
        if self.ra.y_back.shape[0] != y.shape[0]:
            self.ra = self.ra._replace(y_back=np.empty_like(y))
            self._stages = np.zeros((5, y.shape[0]))

    def block(self, k: int, y: np.ndarray, budget: int) -> tuple[int, np.ndarray]:
        """Rows for the output instants ``k, k + 1, ...`` (at most ``budget`` and
        :data:`BLOCK_SECONDS` of wall time at the measured pace) from ``y`` (advanced in
        place); (rows made, the rows)."""
        n_max = min(len(self.times) - k, budget, max(1, int(BLOCK_SECONDS / self.per_row)))
        if self._rows.shape[0] < n_max:
            self._rows = np.empty((max(n_max, 64), self.ncols))
        if self.kernels.valid is not None and not self.kernels.valid():
            kernels = self.form.row_kernels()
            if kernels is None:
                return 0, self._rows[:0]
            self._bind(kernels)
        self._sized(y)
        mon = self.monitor
        if mon is not None and not mon.to_row_loop(self.mon, self.hist, self.fixed_step):
            return 0, self._rows[:0]
        span = self.span
        span[0], span[1], span[2] = k, k + n_max, 1 << self.refinement.base
        counter = self.kernels.evaluations
        counted = counter() if counter is not None else 0
        if self.kernels.before is not None:
            self.kernels.before()
        c0 = time.perf_counter()
        made, count = self._entry(y, self._stages)(self.calls, self.ra, self.run, y, self._stages, self._rows)
        if made:
            self.per_row = max((time.perf_counter() - c0) / made, 1e-7)
        self.form.nfev += count if counter is None else counter() - counted
        if self.kernels.after is not None:
            self.kernels.after()
        if mon is not None and made:
            mon.from_row_loop(self.mon, self.hist)
        out = self._rows[:made].copy()
        out.setflags(write=False)
        return made, out

    def steps(self, y0: np.ndarray, cancelled, room):
        """The ``rk4`` generator of the pipeline (:func:`engine.integrators.rk4`'s protocol:
        ``(t, y)`` for the pipeline to judge, a level sent back) with :class:`RowBlock`
        items between -- rows already judged, which the pipeline keeps (it sends
        nothing back for them).  ``room()``: rows the pipeline wants before its next
        chunk."""
        form, ts, refinement = self.form, self.times, self.refinement
        y = y0
        yield ts[0], y
        form.watch_singular(ts[0], y)
        k = 1
        while k < len(ts):
            if cancelled():
                return
            y = np.array(y, dtype=np.float64)  # the pipeline holds the yielded states
            made, rows = self.block(k, y, room())
            if made:
                k += made
                yield RowBlock(rows, float(ts[k - 1]))
                continue
            # the interval the monitor or an evaluation speaks on: Python's
            y = yield from rk4_attempts(form, ts[k - 1], ts[k], y, refinement)
            k += 1


class AdaptiveRowLoop(RowLoop):
    """:func:`erk_rows` bound to one ``rk45`` / ``dop853`` run of ``dense`` (its row
    kernels, and its right-hand side for the compiled steps: ``rates``, a
    :class:`~.formulations.erk_kernel.Rates`).  :meth:`block` is what
    :func:`engine.integrators.scipy_ode` asks for at each output instant it reaches."""

    def __init__(self, form, kernels, rates, recorder, monitor, settings, refinement):
        from .formulations import dense_solve as solve
        from .formulations.erk_kernel import tableau

        super().__init__(form, kernels, recorder, monitor, settings, refinement, False)
        tab = self.tab = tableau(settings.integrator)
        self.const = solver_constants(settings.integrator, rates.kind, rates.op, settings.rtol, settings.atol)
        self.sol = self.const.copy()
        self.span[2], self.span[3], self.span[4] = solve.WATCH, solve.POST_STEP, solve.EVALUATE
        self.stall = np.array([0.0, np.inf, 0.0])
        self._solver = None  # StepArrays, sized to the state

    def _sized(self, y: np.ndarray) -> None:
        super()._sized(y)
        n = y.shape[0]
        if self._solver is None or self._solver.y.shape[0] != n:
            self._solver = StepArrays(self.tab.coef, self.const, self.sol, np.zeros(n), np.zeros(n), np.zeros(n),
                                      np.zeros((self.tab.extended, n)), np.zeros((3, n)), self.stall)

    def _args(self, y):
        return (self.calls, self.ra, self.run, y, self._rows, self._solver)

    def _entry(self, y, stages=None):
        if self._bound is None:
            self._bound = compiled_entry(erk_rows, self._args(y))
        return self._bound

    def block(self, k: int, y: np.ndarray, budget: int, h: float | None, stall) -> tuple[int, np.ndarray, float]:
        """Rows for the output instants ``k, k + 1, ...`` from ``y`` (advanced in place),
        the first interval's first step ``h`` (None: chosen), ``stall`` the integrator's
        guard (None: off; its count carried in and out), as :meth:`RowLoop.block`:
        (rows made, the rows, the next interval's first step)."""
        n_max = min(len(self.times) - k, budget, max(1, int(BLOCK_SECONDS / self.per_row)))
        if self._rows.shape[0] < n_max:
            self._rows = np.empty((max(n_max, 64), self.ncols))
        self._sized(y)
        mon = self.monitor
        if mon is not None and not mon.to_row_loop(self.mon, self.hist, False):
            return 0, self._rows[:0], h
        span = self.span
        span[0], span[1], span[6] = k, k + n_max, 0.0 if h is None else h
        if stall is not None:
            self.stall[:] = stall.h_small, stall.limit, stall.run
        else:
            self.stall[:] = 0.0, np.inf, 0.0
        c0 = time.perf_counter()
        made, count = self._entry(y)(*self._args(y))
        if made:
            self.per_row = max((time.perf_counter() - c0) / made, 1e-7)
        self.form.nfev += int(count)
        if stall is not None:
            stall.run = int(self.stall[2])
        if mon is not None and made:
            mon.from_row_loop(self.mon, self.hist)
        out = self._rows[:made].copy()
        out.setflags(write=False)
        return made, out, (h if not made else float(span[6]))


#: the methods whose work the row kernels do: replaced on a formulation object (a test's
#: double, a study's wrapper), they leave its rows to Python
REPLACEABLE = ("evaluate", "rhs", "rk4_steps", "post_step", "watch_singular", "health")


def row_loop(form, recorder, monitor, settings, refinement, fixed_step: bool) -> RowLoop | None:
    """The compiled row loop for this run, or None where the Python pipeline runs it: an
    integrator other than ``rk4`` (``rk45`` and ``dop853``: ``dense`` alone,
    :class:`AdaptiveRowLoop`), a formulation without row kernels or with one of
    :data:`REPLACEABLE` replaced on the object, kernels run as Python, or
    ``LINKWORK_COMPILED_ROWS=0``."""
    if form.kind != "ode" or not enabled() or not hasattr(rk4_rows, "overloads"):
        return None
    if any(_replaced(form, name) for name in REPLACEABLE):
        return None  # a method replaced on this object: the kernels would not compute what it does
    if settings.integrator == "rk4":
        kernels = form.row_kernels()
        if kernels is not None and form.model.nd and kernels.efforts is None:
            return None  # the drivers' columns need their efforts
        return None if kernels is None else RowLoop(form, kernels, recorder, monitor, settings, refinement,
                                                    fixed_step)
    return _adaptive(form, recorder, monitor, settings, refinement)


def _replaced(form, name: str) -> bool:
    """Whether ``form``'s method ``name`` is replaced on the object by something other than
    another of its class's own methods (``dca`` takes ``_rhs_driven`` as its ``rhs`` with
    drivers, which its row kernels compute)."""
    v = vars(form).get(name)
    if v is None:
        return False
    func = getattr(v, "__func__", None)
    return not (getattr(v, "__self__", None) is form and func is not None
                and getattr(type(form), func.__name__, None) is func)


def _adaptive(form, recorder, monitor, settings, refinement) -> AdaptiveRowLoop | None:
    """``dense``'s ``rk45`` / ``dop853`` rows where its steps are compiled and it projects
    (loops): the integrator's every other case is Python's."""
    from .formulations import dense_solve as solve
    from .integrators import compiled_rates

    rates = compiled_rates(form, settings.integrator)
    if rates is None or not form.projects or form.step_bound is None:
        return None
    kernels = form.row_kernels()
    if kernels is None or kernels.entry_clock is None or kernels.ops != (solve.RK4, solve.EVALUATE):
        return None  # not dense's operations kernel
    return AdaptiveRowLoop(form, kernels, rates, recorder, monitor, settings, refinement)


__all__ = ["AdaptiveRowLoop", "RowBlock", "RowLoop", "enabled", "erk_rows", "row_loop", "rk4_rows"]
