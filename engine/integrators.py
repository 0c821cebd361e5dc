"""Time integrators, separate from the formulations.

Each integrator is a generator of ``(t, y)`` at the output instants
``0, dt, 2 dt, ..., t_end`` (the first pair is the initial state):

- ``rk4``: classical Runge-Kutta with fixed step ``dt``; the formulation's
  ``post_step`` (projection, quaternion normalisation) runs after every step.
- ``rk45``, ``rk23``, ``dop853``, ``lsoda``, ``radau``, ``bdf``: scipy's
  adaptive solvers stepped one step at a time (so a cancel or a failure is
  seen between steps), read at the output instants by their dense output.  A
  formulation that projects restarts the solver from the projected state at
  each output instant.
- ``trapezoidal``: the stepping formulations' own scheme (index-3).

Retries (the pipeline's monitor, :mod:`engine.monitor`): each generator takes back,
through ``send``, a refinement level for the output state it just yielded -- ``None``
or 0 accepts it; ``level > 0`` redoes that output interval from the last accepted state
with ``2**level`` sub-steps (rk4) or ``max_step = dt / 2**level`` (adaptive solvers)
and yields the new state at the same instant.  Plain iteration accepts everything.

Stalls (adaptive solvers, when the pipeline's monitor acts): ``stall_steps`` accepted
steps in a row, each shorter than ``config.STALL_RATIO`` of the output interval, raise
:class:`StepCollapse` -- the solver is resolving a near-impulse that Linkwork's smooth
models cannot contain (docs/formulations.md, "Singular configurations"); so do
``config.CRAWL_STEPS`` in a row each shorter than ``config.CRAWL_RATIO`` of it -- a
right-hand side rough at the tolerances' scale, which the solver follows at a crawl.
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, NamedTuple

import numpy as np
from numba import njit

from . import config
from .errors import SimulationError

#: integrator name -> scipy.integrate's solver class name.  scipy.integrate is imported
#: only when an adaptive run starts: it costs a rk4 run's start-up 0.2-0.5 s
SCIPY_METHODS = {
    "rk45": "RK45", "rk23": "RK23", "dop853": "DOP853", "lsoda": "LSODA", "radau": "Radau", "bdf": "BDF",
}
ODE_INTEGRATORS = ("rk4",) + tuple(SCIPY_METHODS)
RESTARTABLE = ("rk45", "rk23", "dop853")
STEPPER_INTEGRATORS = ("trapezoidal",)
ALL_INTEGRATORS = ODE_INTEGRATORS + STEPPER_INTEGRATORS


def output_times(dt: float, t_end: float) -> np.ndarray:
    n = int(math.floor(t_end / dt + 1e-9))
    ts = np.arange(n + 1) * dt
    if t_end - ts[-1] > 1e-9 * dt:
        ts = np.append(ts, t_end)
    return ts


#: what to try when a fixed-step or an adaptive run diverges (the user's next move)
FIXED_STEP_ADVICE = ("try a smaller time step (dt) or an error-controlled integrator (rk45 or dop853), "
                     "which follows fast motions by itself")
ADAPTIVE_ADVICE = "try tighter tolerances (rtol, atol) or a smaller output interval (dt)"


def _check(t: float, y: np.ndarray, advice: str = FIXED_STEP_ADVICE) -> None:
    size = _largest(y)
    if not math.isfinite(size):
        raise SimulationError(t, f"the state became non-finite (the simulation diverged); {advice}")
    if size > 1e12:
        raise SimulationError(t, f"the state exceeded 1e12 (the simulation diverged); {advice}")


@njit(cache=True, nogil=True, _nrt=False)
def _largest(y):
    """The largest magnitude in ``y`` (0 if empty), NaN if any entry is not finite."""
    m = 0.0
    for k in range(y.shape[0]):
        a = abs(y[k])
        if not math.isfinite(a):
            return np.nan
        m = max(m, a)
    return m


class RowBlock(NamedTuple):
    """Rows made and judged in compiled code (:mod:`engine.row_loop`), handed to the
    pipeline as they are, between the states the integrators yield."""

    rows: np.ndarray  # (n, ncols), read-only
    t: float  # the last row's time


class Refinement:
    """The sub-step level of a fixed-step run (rk4, index3's trapezoidal rule): every output
    interval takes ``2**(base + level)`` steps, ``level`` the monitor's retry of that
    interval.  The pipeline raises ``base`` when the monitor accepted an interval only at a
    finer step or the energy drift is ahead of its pace (config.MONITOR_ENERGY_PACE), so
    a step too coarse for the mechanism refines itself instead of stopping the run."""

    def __init__(self):
        self.base = 0

    def raise_by(self, levels: int) -> None:
        self.base = min(self.base + int(levels), config.FIXED_STEP_MAX_LEVEL)

    @property
    def substeps(self) -> int:
        return 1 << self.base


def rk4(form, y0: np.ndarray, dt: float, t_end: float, cancelled: Callable[[], bool],
        refinement: Refinement | None = None) -> Iterator:
    ts = output_times(dt, t_end)
    refinement = refinement or Refinement()
    y = y0
    yield ts[0], y
    form.watch_singular(ts[0], y)
    for k in range(1, len(ts)):
        if cancelled():
            return
        y = yield from rk4_attempts(form, ts[k - 1], ts[k], y, refinement)


def rk4_attempts(form, t0: float, t1: float, y: np.ndarray, refinement: Refinement) -> Iterator:
    """One output interval of ``rk4`` from ``(t0, y)``: yields ``(t1, y1)`` and takes back the
    monitor's level, redoing the interval with ``2**(base + level)`` steps until it is
    accepted; returns the accepted state."""
    level = 0
    while True:
        yk = form.rk4_steps(t0, t1, y, 1 << (refinement.base + level))
        _check(t1, yk)
        level = yield t1, yk
        if not level:
            return yk


def stepper_attempts(form, t0: float, t1: float, y: np.ndarray, refinement: Refinement, monitor) -> Iterator:
    """One output interval of a stepping formulation (``index3``) from ``(t0, y)`` in
    ``2**(base + level)`` steps, as :func:`rk4_attempts` (a failed step: the monitor's
    level, or the failure where there is no monitor or no level left)."""
    level = 0
    while True:
        n = 1 << (refinement.base + level)
        h = (t1 - t0) / n
        yk = y
        try:
            for i in range(n):
                yk = form.step(t0 + i * h, yk, h)
        except SimulationError as exc:
            if monitor is None:
                raise
            level = monitor.failed_evaluation(t1, exc)  # re-raises when none is left
            continue
        level = yield t1, yk
        if not level:
            return yk


class StepCollapse(SimulationError):
    """An adaptive solver's accepted steps collapsed far below the output interval and
    stayed there (``steps`` in a row, each shorter than ``ratio`` of it, the last ``h``
    seconds long)."""

    def __init__(self, t: float, method: str, h: float, steps: int, dt: float, ratio: float | None = None,
                 reason: str | None = None):
        self.h = float(h)
        self.steps = int(steps)
        self.method = method
        ratio = config.STALL_RATIO if ratio is None else ratio
        super().__init__(t, reason or f"{method}'s steps collapsed to {h:.2g} s ({steps} accepted steps in a row "
                                      f"shorter than {ratio:g} of the output interval {dt:g} s)")

    @classmethod
    def averaged(cls, t: float, method: str, advance: float, steps: int, dt: float) -> "StepCollapse":
        """A crawl by turns: ``steps`` accepted steps in a row that together advanced
        ``advance`` seconds, less than ``config.CRAWL_RATIO`` of the output interval
        ``dt`` on average, though some of them were longer (``h``: their average)."""
        h = float(advance) / max(int(steps), 1)
        return cls(t, method, h, steps, dt, config.CRAWL_RATIO,
                   f"{method}'s steps averaged {h:.2g} s ({steps} accepted steps in a row advanced {advance:.2g} s, "
                   f"less than {config.CRAWL_RATIO:g} of the output interval {dt:g} s per step)")


class _Stall:
    """Counts consecutive accepted steps shorter than ``config.STALL_RATIO * dt`` (a
    collapse: ``steps`` of them end the run) and shorter than ``config.CRAWL_RATIO * dt``
    (a crawl: ``config.CRAWL_STEPS`` of them do); and takes the steps in blocks of
    ``config.CRAWL_STEPS`` from ``t0`` on: a block that advanced less than
    ``config.CRAWL_STEPS * config.CRAWL_RATIO * dt`` is a crawl too, one whose short steps
    are broken by a longer one now and then (which resets the count in a row)."""

    def __init__(self, steps: int, dt: float, method: str, t0: float = 0.0):
        self.limit = int(steps)
        self.h_small = config.STALL_RATIO * dt
        self.crawl_limit = int(config.CRAWL_STEPS)
        self.h_crawl = config.CRAWL_RATIO * dt
        self.dt = dt
        self.method = method
        self.run = 0
        self.crawl = 0
        self.block = 0  # accepted steps since block_t0
        self.block_t0 = float(t0)

    def step(self, solver) -> None:
        h = abs(solver.t - solver.t_old)
        self.run = 0 if h >= self.h_small else self.run + 1
        self.crawl = 0 if h >= self.h_crawl else self.crawl + 1
        if self.run >= self.limit:
            raise StepCollapse(solver.t, self.method, h, self.run, self.dt)
        if self.crawl >= self.crawl_limit:
            raise StepCollapse(solver.t, self.method, h, self.crawl, self.dt, config.CRAWL_RATIO)
        self.block += 1
        if self.block >= self.crawl_limit:
            advance = abs(solver.t - self.block_t0)
            if advance < self.crawl_limit * self.h_crawl:
                raise StepCollapse.averaged(solver.t, self.method, advance, self.block, self.dt)
            self.block, self.block_t0 = 0, float(solver.t)


def _make(cls, method, fun, t0, y, t_bound, rtol, atol, first_step, max_step=np.inf):
    kwargs = {"rtol": rtol, "atol": atol}
    if first_step is not None and first_step > 0:
        kwargs["first_step"] = min(first_step, t_bound - t0, max_step)
    try:
        solver = cls(fun, t0, y, t_bound, **kwargs)
    except ValueError as exc:
        raise SimulationError(t0, f"{method}: {exc}") from None
    solver.cap = max_step  # the monitor's bound on the step (retried intervals)
    return solver


def _advance(solver, form, method, bound, stall=None):
    """One accepted step (with the formulation's step bound and the retry cap, if any;
    ``stall``: the collapse counter)."""
    cap = getattr(solver, "cap", np.inf)
    if bound is not None:
        hmax = bound(solver.t, solver.y)
        solver.max_step = cap if hmax is None else min(hmax, cap)
    elif cap < np.inf:
        solver.max_step = cap
    msg = solver.step()
    if solver.status == "failed":
        raise SimulationError(solver.t, f"{method} failed: {msg}")
    if stall is not None:
        stall.step(solver)
    return getattr(solver, "h_abs", None) or solver.step_size  # the solver's next proposal


def _interval(cls, method, form, bound, t0, y, t1, rtol, atol, h, cap, cancelled, stall=None):
    """Integrate [t0, t1] landing exactly on t1 (the projecting formulations: projection
    after every step near a singular configuration).  Returns (y(t1), next step) or None
    when cancelled."""
    solver = _make(cls, method, form.rhs, t0, y, t1, rtol, atol, h, cap)
    while solver.status == "running":
        if cancelled():
            return None
        h = _advance(solver, form, method, bound, stall)
        # explicit Runge-Kutta solvers restart cheaply: project after every step
        # while a singular configuration is crossed (multistep and implicit ones
        # would pay a cold start and a Jacobian each time)
        if (form.projects and solver.status == "running" and method in RESTARTABLE
                and form.near_singular):
            yp = form.post_step(solver.t, solver.y)
            solver = _make(cls, method, form.rhs, solver.t, yp, t1, rtol, atol, h, cap)
    return solver.y, h


#: the adaptive integrators whose steps can run in compiled code (:mod:`.formulations.erk_kernel`)
COMPILED_STEPS = ("rk45", "dop853")


def compiled_rates(form, method: str):
    """The formulation's right-hand side for compiled ``rk45`` / ``dop853`` steps
    (:meth:`~.formulations.base.Formulation.rates_kernel`), or None where scipy's solver
    steps: another method, a formulation without one, or ``LINKWORK_COMPILED_STEPS=0``."""
    import os

    if method not in COMPILED_STEPS or os.environ.get("LINKWORK_COMPILED_STEPS", "1") == "0":
        return None
    offer = getattr(form, "rates_kernel", None)  # any object with rhs, as scipy's solvers take it
    return offer() if offer is not None else None


def scipy_ode(form, method: str, y0: np.ndarray, dt: float, t_end: float, rtol: float, atol: float,
              cancelled: Callable[[], bool], stall_steps: int | None = None, rows=None,
              room: Callable[[], int] | None = None) -> Iterator:
    """The adaptive integrators' generator (the pipeline's protocol: ``(t, y)`` at each
    output instant, a retry level sent back).  ``rows``: the compiled row loop
    (:class:`engine.row_loop.AdaptiveRowLoop` for a run that projects,
    :class:`engine.row_loop.DenseRowLoop` for one that does not), whose blocks of rows it
    yields between the intervals it leaves to Python (``room()``: rows the pipeline
    wants before its next chunk)."""
    import scipy.integrate

    rates = compiled_rates(form, method)
    if rates is not None:  # scipy's algorithm, its steps in compiled code
        cls = rates.solver(method)
    else:
        cls = getattr(scipy.integrate, SCIPY_METHODS[method])
    ts = output_times(dt, t_end)
    stall = None if not stall_steps else _Stall(stall_steps, dt, method, ts[0])
    yield ts[0], y0
    bound = form.step_bound
    if form.projects:
        # Interval by interval, landing exactly on each output instant, projecting there
        # (and after every step near a singular configuration), then restarting from the
        # projected state: no interpolation, and drift never outlives one interval.
        y, h = y0, None
        k = 0
        while k + 1 < len(ts):
            k += 1
            if rows is not None:
                if cancelled():
                    return
                y = np.array(y, dtype=np.float64)  # the pipeline holds the yielded states
                n, block, h = rows.block(k, y, room() if room is not None else len(ts), h, stall)
                if n:
                    k += n - 1
                    yield RowBlock(block, float(ts[k]))
                    continue
            t0, t1 = ts[k - 1], ts[k]
            level = 0
            while True:
                cap = np.inf if not level else (t1 - t0) / (1 << level)
                res = _interval(cls, method, form, bound, t0, y, t1, rtol, atol, h if not level else cap, cap,
                                cancelled, stall)
                if res is None:
                    return
                yk = form.post_step(t1, res[0])
                _check(t1, yk, ADAPTIVE_ADVICE)
                level = yield t1, yk
                if not level:
                    break
            y, h = yk, res[1]
        return
    # Otherwise one continuous integration, read at the output instants by dense output;
    # a retried interval is integrated on its own (capped steps) and the continuous
    # integration restarts from its end.
    solver = _make(cls, method, form.rhs, 0.0, y0, t_end, rtol, atol, None)
    dense, dense_t = None, None
    y_prev = y0
    h = None
    k = 1
    while k < len(ts):
        if rows is not None:  # engine.row_loop.DenseRowLoop: rows made in the solver's arrays
            if cancelled():
                return
            n, block, y_prev, (dense, dense_t) = rows.block(k, solver, y_prev, room() if room is not None else
                                                            len(ts), stall, (dense, dense_t))
            if n:
                k += n
                if solver.t_old is not None:  # a step was taken: _advance's proposal
                    h = solver.h_abs
                yield RowBlock(block, float(ts[k - 1]))
                continue
        tol_t = 1e-12 * max(1.0, abs(ts[k]))
        while solver.status == "running" and solver.t < ts[k] - tol_t:
            if cancelled():
                return
            h = _advance(solver, form, method, bound, stall)
        if abs(ts[k] - solver.t) <= tol_t or solver.status == "finished" and solver.t <= ts[k]:
            yk = solver.y.copy()
        else:
            if dense_t != solver.t:
                dense, dense_t = solver.dense_output(), solver.t
            yk = dense(ts[k])
        _check(ts[k], yk, ADAPTIVE_ADVICE)
        level = yield ts[k], yk
        if level:
            while level:
                cap = (ts[k] - ts[k - 1]) / (1 << level)
                res = _interval(cls, method, form, bound, ts[k - 1], y_prev, ts[k], rtol, atol, cap, cap,
                                cancelled, stall)
                if res is None:
                    return
                yk = res[0]
                _check(ts[k], yk, ADAPTIVE_ADVICE)
                level = yield ts[k], yk
            if k + 1 < len(ts):
                solver = _make(cls, method, form.rhs, ts[k], yk, t_end, rtol, atol, h)
                dense_t = None
        y_prev = yk
        k += 1
