"""One simulation pipeline: model + settings -> result chunks.

:class:`Simulation` owns the model, a formulation, an integrator and a
recorder.  :meth:`Simulation.run` is a generator of immutable
:class:`ResultChunk` objects; it honours :meth:`Simulation.cancel` between
steps and, when the simulation fails, first yields every row computed so far
and then raises :class:`~engine.errors.SimulationError` with the simulated
time of the failure.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from . import config
from .errors import SettingsError, SimulationError
from .formulations import REGISTRY, default_formulation
from .integrators import ODE_INTEGRATORS, STEPPER_INTEGRATORS, Refinement, StepCollapse, rk4, scipy_ode
from .model import Model
from .monitor import Monitor
from .results import Recorder
from .row_loop import REPLACEABLE, RowBlock, enabled as compiled_rows, row_loop
from .settings import Settings
from .threads import plan as thread_plan

__all__ = ["ResultChunk", "Settings", "Simulation", "file_defaults", "resolve_settings"]


def file_defaults(model: Model, formulation: str | None = None) -> Settings:
    """The default settings for ``model``: :class:`Settings`' defaults, with the run
    settings its file recommends (``settings`` in the mechanism file) in their place.

    Options the user gives override these (``file_defaults(m).replace(dt=...)``).  A
    recommended integrator is taken only where the formulation (``formulation`` or the
    mechanism's default) accepts it: a file that asks for ``dop853`` leaves ``index3``
    its own scheme."""
    rec = dict(model.spec.settings)
    if not rec:
        return Settings()
    integ = rec.pop("integrator", None)
    if integ is not None:
        name = formulation or default_formulation(model)
        if name not in REGISTRY or integ not in REGISTRY[name].integrators:
            integ = None
    return Settings(integrator=integ, **rec)


def resolve_settings(model: Model, settings: Settings) -> Settings:
    """Fill in defaults and check every setting; raises :class:`SettingsError`."""
    name = settings.formulation or default_formulation(model)
    if settings.formulation is None and settings.integrator and settings.integrator not in REGISTRY[name].integrators:
        # an integrator only some formulations accept (trapezoidal: index3) picks among those
        fits = [n for n, c in REGISTRY.items() if settings.integrator in c.integrators and c.supports(model)[0]]
        if fits:
            name = fits[0]
    if name not in REGISTRY:
        raise SettingsError(f"unknown formulation {name!r} (available: {', '.join(REGISTRY)})")
    cls = REGISTRY[name]
    ok, why = cls.supports(model)
    if not ok:
        raise SettingsError(f"formulation {name!r} cannot simulate this mechanism: {why}")
    integ = settings.integrator or cls.default_integrator
    if integ not in cls.integrators:
        kind = "ODE formulations" if cls.kind == "ode" else f"formulation {name!r}"
        allowed = ", ".join(cls.integrators)
        if integ not in ODE_INTEGRATORS + STEPPER_INTEGRATORS:
            raise SettingsError(f"unknown integrator {integ!r} (available: {allowed})")
        raise SettingsError(f"integrator {integ!r} does not apply to {kind} (use one of: {allowed})")

    def positive(label, v):
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
            raise SettingsError(f"{label} must be a positive number (got {v!r})")

    positive("--dt", settings.dt)
    positive("--t-end", settings.t_end)
    positive("--rtol", settings.rtol)
    positive("--atol", settings.atol)
    if settings.penalty is not None:
        positive("--penalty", settings.penalty)
    positive("--newton-tol", settings.newton_tol)
    if settings.dt > settings.t_end:
        raise SettingsError(f"--dt ({settings.dt:g}) must not exceed --t-end ({settings.t_end:g})")
    if settings.t_end / settings.dt > 1e8:
        raise SettingsError("--t-end / --dt exceeds 1e8 output rows")
    if not (isinstance(settings.newton_iters, int) and settings.newton_iters >= 1):
        raise SettingsError(f"--newton-iters must be an integer >= 1 (got {settings.newton_iters!r})")
    if settings.threads is not None and not (isinstance(settings.threads, int) and settings.threads >= 1):
        raise SettingsError(f"--threads must be an integer >= 1 (got {settings.threads!r})")
    if settings.tangent_hold < 1:
        raise SettingsError("tangent_hold must be >= 1")
    return settings.replace(formulation=name, integrator=integ)


@dataclass(frozen=True)
class ResultChunk:
    """Consecutive result rows (read-only), with run statistics so far."""

    rows: np.ndarray  # (n, ncols)
    columns: tuple[str, ...]
    stats: dict = field(default_factory=dict)

    @property
    def t(self) -> np.ndarray:
        return self.rows[:, 0]


class Simulation:
    """A model, resolved settings, a formulation and an integrator."""

    def __init__(self, model: Model, settings: Settings | None = None):
        self.model = model
        self.settings = resolve_settings(model, settings or Settings())
        cls = REGISTRY[self.settings.formulation]
        #: how the run uses the cores (engine/threads.py), decided here once: numba's pool is
        #: set to it, so that idle threads do not wait for cores a small mechanism cannot use
        self.plan = thread_plan(model, cls, self.settings.threads)
        import numba

        numba.set_num_threads(self.plan.threads)
        self.formulation = cls(model, self.settings, plan=self.plan)
        self.recorder = Recorder(model)
        #: the pipeline's branch and health monitor (None: switched off)
        self.monitor = (Monitor(model, self.formulation, self.recorder.columns, self.settings.t_end)
                        if self.settings.monitor else None)
        self._cancel = threading.Event()
        self.stats: dict = {}
        self._y0 = None
        #: fixed-step runs: the sub-steps per output interval, raised by the monitor's verdicts
        self.refinement = Refinement()
        self.fixed_step = ((self.formulation.kind == "stepper" or self.settings.integrator == "rk4")
                           and self.formulation.refines_with_step)
        #: the compiled row loop of the running run (None: the Python pipeline's rows)
        self._row_loop = None
        #: the row loop :meth:`prepare` built and warmed, with what it was decided from
        #: (:meth:`_row_loop_key`), for the run to take
        self._warm_loop = None
        self._room = config.CHUNK_ROWS  # rows the pipeline takes before its next chunk (the row loop's blocks)

    @property
    def columns(self) -> list[str]:
        return self.recorder.columns

    def cancel(self) -> None:
        """Ask a running :meth:`run` to stop after the current step."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def prepare(self) -> None:
        """Compute the initial state and evaluate it once.

        The first evaluation compiles (or loads from the numba cache) every kernel the
        formulation uses, and the compiled row loop where the run has one; a GUI calls
        this first so it can tell the user it is compiling.  :meth:`run` calls it if it
        has not been called.
        """
        if self._y0 is None:
            self._y0 = self.formulation.initial_state()
            self.formulation.evaluate(0.0, self._y0)
            loop = self.row_loop()
            if loop is not None:
                loop.warm(self._y0)
            self._warm_loop = (loop, self._row_loop_key())

    def _steps(self, y0, rows: bool = True):
        """The integrator's generator (:mod:`engine.integrators`' protocol); ``rows``: with the
        compiled row loop's blocks where the run has one (:mod:`engine.row_loop`)."""
        s = self.settings
        form = self.formulation
        self._row_loop = self._take_row_loop() if rows else None
        if self._row_loop is not None and (form.kind == "stepper" or s.integrator == "rk4"):
            yield from self._row_loop.steps(y0, self._cancel.is_set, lambda: self._room)
        elif form.kind == "stepper":
            from .integrators import output_times, stepper_attempts

            ts = output_times(s.dt, s.t_end)
            y = y0
            yield ts[0], y
            for k in range(1, len(ts)):
                if self._cancel.is_set():
                    return
                y = yield from stepper_attempts(form, ts[k - 1], ts[k], y, self.refinement, self.monitor)
        elif s.integrator == "rk4":
            yield from rk4(form, y0, s.dt, s.t_end, self._cancel.is_set, self.refinement)
        else:
            acts = self.monitor is not None and self.monitor.acts
            yield from scipy_ode(form, s.integrator, y0, s.dt, s.t_end, s.rtol, s.atol,
                                 self._cancel.is_set, config.STALL_STEPS if acts else None, rows=self._row_loop,
                                 room=lambda: self._room)

    def _row_loop_key(self) -> tuple:
        """What :func:`row_loop` decides from that may change after :meth:`prepare`: the
        methods of :data:`~engine.row_loop.REPLACEABLE` on the formulation object and on its
        class (replaced or patched in between), and ``LINKWORK_COMPILED_ROWS``."""
        form, cls = self.formulation, type(self.formulation)
        own = vars(form)
        return ((compiled_rows(),) + tuple(own.get(name) for name in REPLACEABLE)
                + tuple(getattr(cls, name, None) for name in REPLACEABLE))

    def _take_row_loop(self):
        """The row loop for the run starting now: the one :meth:`prepare` built, where
        nothing it was decided from has changed since (built again, it would cost a small
        mechanism's run a millisecond), else :meth:`row_loop`'s.  Taken once: a second run
        of this object builds its own."""
        warm, self._warm_loop = self._warm_loop, None
        if warm is not None:
            loop, key = warm
            now = self._row_loop_key()
            if all(a is b for a, b in zip(key, now)):
                return loop
        return self.row_loop()

    def row_loop(self):
        """The compiled row loop a run would make its rows with now (:mod:`engine.row_loop`),
        or None: decided when the run starts, so that a method replaced on the formulation
        in between is honoured."""
        return row_loop(self.formulation, self.recorder, self.monitor, self.settings, self.refinement,
                        self.fixed_step)

    def states(self):
        """Yield the raw ``(t, y)`` at every output instant, without evaluating rows:
        the integration alone, for timing it (``linkwork study``)."""
        self.prepare()
        yield from self._steps(self._y0, rows=False)

    def run(self, chunk_rows: int = config.CHUNK_ROWS, max_interval: float | None = None):
        """Yield :class:`ResultChunk` objects until ``t_end``, a cancel, or a failure.

        A chunk is handed over when it has ``chunk_rows`` rows or, if given,
        ``max_interval`` seconds of wall time have passed since the last one.
        """
        cols = tuple(self.columns)
        rows: list[np.ndarray] = []
        t_wall0 = time.perf_counter()
        last = t_wall0
        n_rows = 0
        t_now = 0.0
        form = self.formulation

        def chunk():
            nonlocal rows
            arr = np.vstack(rows)  # single rows, and the row loop's blocks
            arr.setflags(write=False)
            rows = []
            wall = time.perf_counter() - t_wall0
            self.stats = {"t": t_now, "rows": n_rows, "wall_time": wall, **form.stats(),
                          **({"substeps": self.refinement.substeps} if self.refinement.base else {}),
                          **({} if self.monitor is None else self.monitor.stats())}
            return ResultChunk(arr, cols, dict(self.stats))

        mon = self.monitor
        rec = self.recorder
        state = [None]  # the state being judged, for the monitor's messages
        if mon is not None:
            mon.mobility = lambda: None if state[0] is None else form.mobility(state[0])
        try:
            self.prepare()
            self._room = chunk_rows
            steps = self._steps(self._y0)
            item = next(steps)
            pending = 0  # rows since the last chunk
            while True:
                level = 0
                made = 1
                if type(item) is RowBlock:  # rows the row loop made and the monitor's figures kept
                    rows.append(item.rows)
                    t_now = item.t
                    made = item.rows.shape[0]
                elif mon is None:
                    t, y = item
                    state[0], t_now = y, float(t)
                    rows.append(rec.row(form.evaluate(t, y)))
                else:
                    t, y = item
                    state[0], t_now = y, float(t)
                    # the monitor judges the row before it is kept; a rejected one is
                    # recomputed with smaller steps (the recorder's continuity state is restored)
                    saved = rec.state()
                    try:
                        row = rec.row(form.evaluate(t, y))
                        level = mon.judge(t, row, rec)
                    except SimulationError as exc:
                        level = mon.failed_evaluation(t, exc)
                    if level:
                        rec.restore(saved)
                    else:
                        rows.append(row)
                        if self.fixed_step:
                            # a step too coarse for the mechanism: finer sub-steps from here on
                            if mon.accepted_level:
                                self.refinement.raise_by(mon.accepted_level)
                            if mon.ahead_of_pace(t_now):
                                self.refinement.raise_by(1)
                if not level:
                    n_rows += made
                    pending += made
                    now = time.perf_counter()
                    if pending >= chunk_rows or (max_interval is not None and now - last >= max_interval):
                        last = now
                        pending = 0
                        yield chunk()
                    self._room = max(chunk_rows - pending, 1)
                try:
                    item = steps.send(level)
                except StopIteration:
                    break
        except SimulationError as exc:
            err = exc
            if mon is not None:
                if isinstance(exc, StepCollapse):
                    err = mon.collapsed(exc, rec)  # names the loop and what it means
                mon.log("failed", err.t, err.reason)
            if rows:
                yield chunk()
            if err is exc:
                raise
            raise err from exc
        except (np.linalg.LinAlgError, FloatingPointError, ZeroDivisionError) as exc:
            if mon is not None:
                mon.log("failed", t_now, f"numerical failure: {exc}")
            if rows:
                yield chunk()
            raise SimulationError(t_now, f"numerical failure: {exc}") from exc
        if mon is not None:
            mon.log("cancelled" if self._cancel.is_set() else "finished", t_now, "")
        if rows:
            yield chunk()
        self.stats["cancelled"] = self._cancel.is_set()

    def run_all(self) -> tuple[list[str], np.ndarray]:
        """Run to the end and return (columns, all rows)."""
        parts = [c.rows for c in self.run()]
        return self.columns, (np.vstack(parts) if parts else np.zeros((0, len(self.columns))))
