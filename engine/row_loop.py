"""Output rows in compiled code: the pipeline's steps, evaluation, row and monitor
verdict for many output instants in one kernel call (the kernels:
:mod:`engine.row_kernels`), bound here to one run.

A whole ``rk4`` run of a small mechanism spent four fifths of its time in Python between
the kernels, once per output row: the interval's kernel call, the formulation's
``evaluate`` (a kernel, a residual check, the reactions, copies into an
:class:`~engine.formulations.base.Evaluation`), the recorder's row kernel and the
monitor's judgement.  The row kernels do the same for a block of output intervals --
the same kernels, called by the addresses of their machine code
(:func:`~engine.formulations.rk4_kernel.call_by_table`), the same arithmetic in the
same order -- so a row is the one the Python pipeline writes, bit for bit
(tests/engine/test_row_loop.py).

The monitor's figures for each row are computed there as :meth:`Monitor._judge` computes
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
:func:`engine.results._driver_row`, every one but ``hdca``, which refuses them), with

* ``rk4`` (:class:`RowLoop`, :func:`~engine.row_kernels.rk4_rows`), and ``index3``'s steps
  in the same loop (its operations kernel, :mod:`.formulations.index3_rows`);
* ``rk45`` and ``dop853`` where the steps are compiled
  (:meth:`~engine.formulations.base.Formulation.rates_kernel`): ``dense`` on loops (with
  drivers too: each stage, projection and evaluation at its time in the kernel's clock), and
  ``dca`` and ``hdca`` on loops with the projection on (their kernels around
  :func:`~engine.formulations.tree_formulation.tree_operation`:
  :meth:`~engine.formulations.base.Formulation.adaptive_row_kernels`), restarted and
  projected at each output instant (:class:`AdaptiveRowLoop`,
  :func:`~engine.row_kernels.erk_rows`), and a formulation that does not project -- a
  tree formulation's tree without drivers -- read at the output instants by the
  interpolant of its one continuous integration (:class:`DenseRowLoop`,
  :func:`~engine.row_kernels.erk_dense_rows`).

``LINKWORK_COMPILED_ROWS=0`` turns it off (the Python pipeline alone, for comparing the two).
"""

from __future__ import annotations

import os
import time

import numpy as np

from .formulations.workspace import compiled_entry
from .formulations.rk4_kernel import NO_POST
from .formulations.erk_kernel import NSLOTS, STATE, solver_constants
from .integrators import RowBlock, output_times, rk4_attempts, stepper_attempts
from .kinematics import kin_arrays
from .monitor_kernels import MONITOR_SLOTS
from .row_kernels import DenseArrays, RowArrays, RowCalls, RowRun, StepArrays, erk_dense_rows, erk_rows, rk4_rows


def enabled() -> bool:
    """Whether fixed-step runs make their rows in compiled code (``LINKWORK_COMPILED_ROWS``,
    on unless ``0``)."""
    return os.environ.get("LINKWORK_COMPILED_ROWS", "1") != "0"


#: the wall time a block of rows may take, at most (the live plots', pause's and cancel's pace)
BLOCK_SECONDS = 0.02

#: the row kernels' stall guard switched off: (shortest step not counted, limit, count) for
#: a collapse and for a crawl, then the crawl's block (steps, start)
#: (:func:`~engine.row_kernels.erk_rows`)
_STALL_OFF = (0.0, np.inf, 0.0) * 2 + (0.0, 0.0)


class RowLoop:
    """:func:`rk4_rows` bound to one run: the formulation's kernels
    (:meth:`~engine.formulations.base.Formulation.row_kernels`), the recorder's row
    kernel and continuity arrays, the monitor (None: off) and the output instants.
    :meth:`steps` is the ``rk4`` integrator's generator for the pipeline
    (:func:`engine.integrators.rk4`; a stepping formulation's, the pipeline's stepper
    loop), yielding :class:`RowBlock` between the intervals it leaves to Python."""

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
        mk = form.mk if form.kind == "ode" else kin_arrays(form.model)  # a stepper's: only the types
        post = kernels.post
        row = recorder._kernel
        nb, nj = form.model.nb, form.model.nj
        own = (tuple(kernels.own) + (np.empty(0), np.empty(0)))[:2]
        tick = kernels.tick if kernels.tick is not None else np.zeros(6)
        split_post = NO_POST if kernels.split_post is None else (kernels.split_post.native(), kernels.split_post.desc)
        self.ra = RowArrays(*kernels.arrays, kernels.health, mk, split_post, tick, recorder._qprev,
                            recorder._jq_ref, recorder.work_state, own, np.empty((nb, 4)), np.empty(nj),
                            np.empty_like(recorder.work_state), tuple(a.copy() for a in own), np.empty(0),
                            kernels.at_row if kernels.at_row is not None else np.zeros(1))
        dims = tuple(a.ndim for a in kernels.arrays) + (1,)
        # drivers: their columns with the efforts where the formulation's check leaves them
        # (the kernel held here: its table points into arrays it holds); without, one that is
        # not called (address 0) of the row kernel's types
        drive = self._drive = None if kernels.efforts is None else recorder.driver_kernel(*kernels.efforts)
        step_addr = step.native(1) if kernels.split else step.native()
        # without a post-step: one that is not called (address 0)
        post_call = NO_POST if post is None else (post.native(3) if kernels.split else post.native(), post.desc)
        self.calls = RowCalls((step_addr, step.desc), post_call, (check.native(), check.desc),
                              (row.native(dims), row.desc),
                              (0, row.desc) if drive is None else (drive.native(dims), drive.desc))
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

    def _open(self, k: int, y: np.ndarray, budget: int) -> int:
        """Ready a block for the output instants from ``k`` on: at most ``budget`` rows and
        :data:`BLOCK_SECONDS` of wall time at the measured pace, the kernels bound again
        where theirs were replaced, the monitor's state in, the formulation's own state
        into the kernels' arrays.  Returns the rows it may make (0: none; the kernels or
        the monitor leave the next interval to Python)."""
        n_max = min(len(self.times) - k, budget, max(1, int(BLOCK_SECONDS / self.per_row)))
        if self._rows.shape[0] < n_max:
            self._rows = np.empty((max(n_max, 64), self.ncols))
        if self.kernels.valid is not None and not self.kernels.valid():
            kernels = self.form.row_kernels()
            if kernels is None:
                return 0
            self._bind(kernels)
        if self.kernels.defer is not None and self.kernels.defer():
            return 0
        self._sized(y)
        mon = self.monitor
        if mon is not None and not mon.to_row_loop(self.mon, self.hist, self.fixed_step):
            return 0
        self.span[0], self.span[1] = k, k + n_max
        if self.kernels.before is not None:
            self.kernels.before()
        return n_max

    def _close(self, made: int, seconds: float) -> np.ndarray:
        """After the kernel: its pace, the formulation's and the monitor's state out; the rows made."""
        if made:
            self.per_row = max(seconds / made, 1e-7)
        if self.kernels.after is not None:
            self.kernels.after()
        if self.monitor is not None and made:
            self.monitor.from_row_loop(self.mon, self.hist)
        out = self._rows[:made].copy()
        out.setflags(write=False)
        return out

    def block(self, k: int, y: np.ndarray, budget: int) -> tuple[int, np.ndarray]:
        """Rows for the output instants ``k, k + 1, ...`` (:meth:`_open`) from ``y``
        (advanced in place); (rows made, the rows)."""
        if not self._open(k, y, budget):
            return 0, self._rows[:0]
        self.span[2] = 1 << self.refinement.base
        counter = self.kernels.evaluations
        counted = counter() if counter is not None else 0
        c0 = time.perf_counter()
        made, count = self._entry(y, self._stages)(self.calls, self.ra, self.run, y, self._stages, self._rows)
        seconds = time.perf_counter() - c0
        self.form.nfev += count if counter is None else counter() - counted
        return made, self._close(made, seconds)

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
            if form.kind == "stepper":
                y = yield from stepper_attempts(form, ts[k - 1], ts[k], y, refinement, self.monitor)
            else:
                y = yield from rk4_attempts(form, ts[k - 1], ts[k], y, refinement)
            k += 1


class AdaptiveRowLoop(RowLoop):
    """:func:`erk_rows` bound to one ``rk45`` / ``dop853`` run of a formulation that
    projects: ``dense`` (its row kernels, whose step is its operations kernel) or a tree
    formulation's loops (:meth:`~.formulations.base.Formulation.adaptive_row_kernels`:
    its kernels around :func:`~.formulations.tree_formulation.tree_operation`); ``rates``
    (a :class:`~.formulations.erk_kernel.Rates`) its right-hand side through that
    operations kernel.  :meth:`block` is what
    :func:`engine.integrators.scipy_ode` asks for at each output instant it reaches."""

    def __init__(self, form, kernels, rates, recorder, monitor, settings, refinement):
        from .formulations import dense_solve as solve
        from .formulations.erk_kernel import tableau

        super().__init__(form, kernels, recorder, monitor, settings, refinement, False)
        tab = self.tab = tableau(settings.integrator)
        self.const = solver_constants(settings.integrator, rates.kind, rates.op, settings.rtol, settings.atol)
        self.sol = self.const.copy()
        self.span[2], self.span[3], self.span[4] = solve.WATCH, solve.POST_STEP, solve.EVALUATE
        self.stall = np.array(_STALL_OFF)
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
        if not self._open(k, y, budget):
            return 0, self._rows[:0], h
        self.span[6] = 0.0 if h is None else h
        _stall_in(self.stall, stall)
        c0 = time.perf_counter()
        made, count = self._entry(y)(*self._args(y))
        seconds = time.perf_counter() - c0
        self.form.nfev += int(count)
        _stall_out(self.stall, stall)
        return made, self._close(made, seconds), (h if not made else float(self.span[6]))


def _dense_arrays(Q: np.ndarray, y: np.ndarray, K: np.ndarray) -> DenseArrays:
    """The interpolant's arrays (none made: ``at[0]`` NaN) and the solver's saved copies."""
    return DenseArrays(Q, np.full(3, np.nan), np.zeros(NSLOTS), np.zeros_like(y), np.zeros_like(y),
                       np.zeros_like(y), np.zeros_like(K), np.zeros_like(Q), np.zeros(3))


def _stall_in(arrays: np.ndarray, stall) -> None:
    """The integrator's stall guard (:class:`engine.integrators._Stall`; None: off) into
    the row kernels' (shortest step not counted, limit, count: a collapse's, a crawl's;
    then the crawl's block: steps, start)."""
    if stall is not None:
        arrays[:] = (stall.h_small, stall.limit, stall.run, stall.h_crawl, stall.crawl_limit, stall.crawl,
                     stall.block, stall.block_t0)
    else:
        arrays[:] = _STALL_OFF


def _stall_out(arrays: np.ndarray, stall) -> None:
    if stall is not None:
        stall.run, stall.crawl, stall.block, stall.block_t0 = (int(arrays[2]), int(arrays[5]), int(arrays[6]),
                                                               float(arrays[7]))


class DenseRowLoop(RowLoop):
    """:func:`erk_dense_rows` bound to one ``rk45`` / ``dop853`` run of a formulation that
    does not project: the integrator's one continuous solver
    (:class:`~.formulations.erk_kernel.CompiledRK` on the formulation's rates, whose
    arrays the kernel steps in) read at the output instants.  :meth:`block` is what
    :func:`engine.integrators.scipy_ode` asks for at each output instant it reaches."""

    def __init__(self, form, kernels, recorder, monitor, settings, refinement):
        super().__init__(form, kernels, recorder, monitor, settings, refinement, False)
        self.method = settings.integrator
        self.stall = np.array(_STALL_OFF)
        self._y = np.zeros(0)
        self._solver = None  # (the CompiledRK, its StepArrays, DenseArrays)

    def _arrays(self, solver):
        if self._solver is None or self._solver[0] is not solver:
            coef, const, sol, y, y_old, fy, K, work = solver.state_arrays
            self._solver = (solver, StepArrays(coef, const, sol, y, y_old, fy, K, work, self.stall),
                            _dense_arrays(solver.interpolant_array(), y, K))
        return self._solver

    def _entry(self, y, arrays, interp):
        """The compiled entry of :func:`erk_dense_rows` for this run's argument types (the
        same for every solver of the run: arrays of the same kinds)."""
        if self._bound is None:
            self._bound = compiled_entry(erk_dense_rows, (self.calls, self.ra, self.run, y, self._rows, arrays,
                                                          interp))
        return self._bound

    def warm(self, y: np.ndarray) -> None:
        """Compile, or load from the cache, :func:`erk_dense_rows` for this run's types now,
        on arrays like the solver's (the integrator makes the solver when the run starts)."""
        from .formulations.erk_kernel import interpolant_array, tableau

        self._sized(y)
        tab, n = tableau(self.method), y.shape[0]
        K = np.zeros((tab.extended, n))
        Q = interpolant_array(tab, n)
        arrays = StepArrays(tab.coef, np.zeros(NSLOTS), np.zeros(NSLOTS), np.zeros(n), np.zeros(n), np.zeros(n), K,
                            np.zeros((3, n)), self.stall)
        self._entry(y, arrays, _dense_arrays(Q, y, K))

    def block(self, k: int, solver, y_prev: np.ndarray, budget: int, stall, dense: tuple):
        """Rows for the output instants ``k, k + 1, ...`` of the continuous integration in
        ``solver`` (advanced in place), ``y_prev`` the state at instant ``k - 1``,
        ``stall`` the integrator's guard (None: off), ``dense`` the integrator's
        interpolant and the solver's time it was made at, ``(_Dense, t)`` or ``(None,
        None)``.  Returns (rows made, the rows, the state at the last of them, the
        interpolant and its time as the kernel left them)."""
        y = self._y
        if y.shape[0] != y_prev.shape[0]:
            y = self._y = np.empty_like(y_prev)
        y[:] = y_prev
        if not self._open(k, y, budget):
            return 0, self._rows[:0], y_prev, dense
        _, arrays, interp = self._arrays(solver)
        if dense[0] is not None and dense[1] == solver.t:
            interp.Q[:] = dense[0].Q
            interp.at[:] = dense[1], dense[0].t_old, dense[0].h
        else:
            interp.at[0] = np.nan
        _stall_in(self.stall, stall)
        c0 = time.perf_counter()
        made, count = self._entry(y, arrays, interp)(self.calls, self.ra, self.run, y, self._rows, arrays, interp)
        seconds = time.perf_counter() - c0
        solver.evaluated_elsewhere(int(count))
        _stall_out(self.stall, stall)
        rows = self._close(made, seconds)
        if interp.at[0] == solver.t:
            dense = (solver.interpolant(float(interp.at[1]), float(interp.at[2]), interp.Q), solver.t)
        elif made:
            dense = (None, None)
        return made, rows, (y.copy() if made else y_prev), dense


#: the methods whose work the row kernels do: replaced on a formulation object (a test's
#: double, a study's wrapper), they leave its rows to Python
REPLACEABLE = ("evaluate", "rhs", "rk4_steps", "post_step", "watch_singular", "health", "step")


def row_loop(form, recorder, monitor, settings, refinement, fixed_step: bool) -> RowLoop | None:
    """The compiled row loop for this run, or None where the Python pipeline runs it: an
    integrator other than ``rk4``, ``rk45`` and ``dop853`` (those two: :func:`_adaptive`),
    a formulation without row kernels or with one of
    :data:`REPLACEABLE` replaced on the object, kernels run as Python, or
    ``LINKWORK_COMPILED_ROWS=0``."""
    if form.kind not in ("ode", "stepper") or not enabled() or not hasattr(rk4_rows, "overloads"):
        return None
    if any(_replaced(form, name) for name in REPLACEABLE):
        return None  # a method replaced on this object: the kernels would not compute what it does
    if form.kind == "stepper":
        kernels = form.row_kernels()
        return None if kernels is None else RowLoop(form, kernels, recorder, monitor, settings, refinement,
                                                    fixed_step)
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


def _adaptive(form, recorder, monitor, settings, refinement) -> RowLoop | None:
    """The ``rk45`` / ``dop853`` row loop where the steps are compiled: a projecting
    formulation's that offers :meth:`~.formulations.base.Formulation.adaptive_row_kernels`
    (``dca``, ``hdca`` on loops), ``dense``'s on loops (its operations kernel), or a
    formulation's that does not project, whose
    rates are its row kernels' right-hand side (a tree formulation's tree, no drivers);
    every other case is Python's."""
    from .formulations import dense_solve as solve
    from .integrators import compiled_rates

    rates = compiled_rates(form, settings.integrator)
    if rates is None:
        return None
    if form.projects:
        offer = form.adaptive_row_kernels()  # a tree formulation's loops: its kernels around an operations kernel
        if offer is not None:
            return AdaptiveRowLoop(form, *offer, recorder, monitor, settings, refinement)
    kernels = form.row_kernels()
    if kernels is None:
        return None
    if form.projects:
        if form.step_bound is None or kernels.entry_clock is None or kernels.ops != (solve.RK4, solve.EVALUATE):
            return None  # not dense's operations kernel
        return AdaptiveRowLoop(form, kernels, rates, recorder, monitor, settings, refinement)
    if (form.watches_steps or kernels.entry_clock is not None or kernels.split or rates.kind != STATE
            or rates.kernel is not kernels.step or kernels.efforts is not None or kernels.time is not None):
        return None
    return DenseRowLoop(form, kernels, recorder, monitor, settings, refinement)


__all__ = ["AdaptiveRowLoop", "DenseRowLoop", "RowBlock", "RowLoop", "enabled", "row_loop"]
