"""Time integrators, separate from the formulations (conventions 7).

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
"""

from __future__ import annotations

import math
from typing import Callable, Iterator

import numpy as np
import scipy.integrate

from .errors import SimulationError

SCIPY_METHODS = {
    "rk45": scipy.integrate.RK45, "rk23": scipy.integrate.RK23, "dop853": scipy.integrate.DOP853,
    "lsoda": scipy.integrate.LSODA, "radau": scipy.integrate.Radau, "bdf": scipy.integrate.BDF,
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


def _check(t: float, y: np.ndarray) -> None:
    if not np.all(np.isfinite(y)):
        raise SimulationError(t, "the state became non-finite (the simulation diverged)")
    if np.abs(y).max(initial=0.0) > 1e12:
        raise SimulationError(t, "the state exceeded 1e12 (the simulation diverged)")


def rk4(form, y0: np.ndarray, dt: float, t_end: float, cancelled: Callable[[], bool]) -> Iterator:
    ts = output_times(dt, t_end)
    y = y0
    yield ts[0], y
    f = form.rhs
    monitor = getattr(form, "monitor", None)
    if monitor is not None:
        monitor(ts[0], y)
    for k in range(1, len(ts)):
        if cancelled():
            return
        t, h = ts[k - 1], ts[k] - ts[k - 1]
        k1 = f(t, y)
        k2 = f(t + h / 2, y + h / 2 * k1)
        k3 = f(t + h / 2, y + h / 2 * k2)
        k4 = f(t + h, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        y = form.post_step(ts[k], y)
        if monitor is not None:
            monitor(ts[k], y)
        _check(ts[k], y)
        yield ts[k], y


def _make(cls, method, fun, t0, y, t_bound, rtol, atol, first_step):
    kwargs = {"rtol": rtol, "atol": atol}
    if first_step is not None and first_step > 0:
        kwargs["first_step"] = min(first_step, t_bound - t0)
    try:
        return cls(fun, t0, y, t_bound, **kwargs)
    except ValueError as exc:
        raise SimulationError(t0, f"{method}: {exc}") from None


def _advance(solver, form, method, bound):
    """One accepted step (with the formulation's step bound, if any)."""
    if bound is not None:
        hmax = bound(solver.t, solver.y)
        solver.max_step = np.inf if hmax is None else hmax
    msg = solver.step()
    if solver.status == "failed":
        raise SimulationError(solver.t, f"{method} failed: {msg}")
    return getattr(solver, "h_abs", None) or solver.step_size  # the solver's next proposal


def scipy_ode(form, method: str, y0: np.ndarray, dt: float, t_end: float, rtol: float, atol: float,
              cancelled: Callable[[], bool]) -> Iterator:
    cls = SCIPY_METHODS[method]
    ts = output_times(dt, t_end)
    yield ts[0], y0
    bound = getattr(form, "step_bound", None)
    if form.projects:
        # Interval by interval, landing exactly on each output instant, projecting there
        # (and after every step near a singular configuration), then restarting from the
        # projected state: no interpolation, and drift never outlives one interval.
        y, h = y0, None
        for k in range(1, len(ts)):
            t0 = ts[k - 1]
            solver = _make(cls, method, form.rhs, t0, y, ts[k], rtol, atol, h)
            while solver.status == "running":
                if cancelled():
                    return
                h = _advance(solver, form, method, bound)
                # explicit Runge-Kutta solvers restart cheaply: project after every step
                # while a singular configuration is crossed (multistep and implicit ones
                # would pay a cold start and a Jacobian each time)
                if (solver.status == "running" and method in RESTARTABLE
                        and getattr(form, "near_singular", False)):
                    yp = form.post_step(solver.t, solver.y)
                    solver = _make(cls, method, form.rhs, solver.t, yp, ts[k], rtol, atol, h)
            y = form.post_step(ts[k], solver.y)
            _check(ts[k], y)
            yield ts[k], y
        return
    # Otherwise one continuous integration, read at the output instants by dense output.
    solver = _make(cls, method, form.rhs, 0.0, y0, t_end, rtol, atol, None)
    k = 1
    while k < len(ts):
        if cancelled():
            return
        _advance(solver, form, method, bound)
        tol_t = 1e-12 * max(1.0, abs(solver.t))
        if ts[k] <= solver.t + tol_t or solver.status == "finished":
            dense = solver.dense_output()
            while k < len(ts) and (ts[k] <= solver.t + tol_t or solver.status == "finished"):
                yk = solver.y.copy() if abs(ts[k] - solver.t) <= tol_t else dense(ts[k])
                _check(ts[k], yk)
                yield ts[k], yk
                k += 1
        if solver.status == "finished":
            return
