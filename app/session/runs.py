"""Run state and result history (no Qt).

A :class:`RunRecord` is one simulation: the mechanism and resolved settings it
ran with, its status, and its rows in a preallocated buffer that grows by
doubling (pyqtgraph's scrolling-plot pattern: views read ``data`` on a timer,
nothing is copied per chunk).  :class:`RunHistory` keeps the runs of the
session; plots overlay every run marked ``visible`` on the current one.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import fields

import numpy as np

from linkwork.engine.mechfile import MechanismSpec
from linkwork.engine.model import Model
from linkwork.engine.simulation import Settings

from .events import Event

STATUSES = ("pending", "compiling", "running", "paused", "finished", "stopped", "failed")
ACTIVE = ("pending", "compiling", "running", "paused")

_ids = itertools.count(1)


def settings_label(s: Settings) -> str:
    """Short description of a run's own settings: ``dense/rk4 dt=0.01``, then whatever of
    *its* settings differs from the defaults -- the tolerances of an adaptive integrator,
    the parameters its formulation reads (``Formulation.parameters``).  A setting the run
    does not use (the index-3 penalty on a dense run, tolerances of RK4) is never named,
    even when the solver panel holds a changed value for it."""
    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.integrators import SCIPY_METHODS

    parts = [f"{s.formulation}/{s.integrator}", f"dt={s.dt:g}"]
    base = Settings()
    cls = REGISTRY.get(s.formulation)
    own = set(getattr(cls, "parameters", ()) if cls is not None else ())
    if s.integrator in SCIPY_METHODS:
        own |= {"rtol", "atol"}
    own -= {"formulation", "integrator", "dt", "t_end", "threads"}
    for f in fields(Settings):
        if f.name not in own:
            continue
        v = getattr(s, f.name)
        if v != getattr(base, f.name) and v is not None:
            if isinstance(v, bool):
                parts.append(f"{f.name.replace('_', ' ')} {'on' if v else 'off'}")
            elif isinstance(v, float):
                parts.append(f"{f.name}={v:g}")
            elif isinstance(v, tuple):
                parts.append(f"{f.name}=({', '.join(f'{x:g}' for x in v)})")
            else:
                parts.append(f"{f.name}={v}")
    return " ".join(parts)


class RunRecord:
    """One simulation run and its results."""

    def __init__(self, spec: MechanismSpec, model: Model, settings: Settings, columns, label: str = ""):
        self.id = next(_ids)
        self.spec = spec
        self.model = model
        self.settings = settings
        self.columns: tuple[str, ...] = tuple(columns)
        self.col_index = {c: k for k, c in enumerate(self.columns)}
        self.label = label or settings_label(settings)
        self.color_index = 0
        self.visible = True
        expected = int(math.floor(settings.t_end / settings.dt + 1e-9)) + 2
        cap = max(16, min(expected, max(16, int(2e8 // (8 * max(1, len(self.columns)))))))
        self._buf = np.zeros((cap, len(self.columns)))
        self._n = 0
        self.expected_rows = expected
        self.status = "pending"
        self.error: str = ""
        self.error_t: float | None = None
        self.stats: dict = {}
        self.wall_start = time.perf_counter()
        self.wall_end: float | None = None
        self.compile_time: float = 0.0
        self.version = 0
        self.appended = Event("appended")
        self.status_changed = Event("status_changed")

    # --------------------------------------------------------------------- data
    def append(self, rows: np.ndarray, stats: dict | None = None) -> None:
        rows = np.asarray(rows, float)
        if rows.ndim != 2 or rows.shape[1] != len(self.columns):
            raise ValueError(f"rows of shape {rows.shape} do not match {len(self.columns)} columns")
        k = rows.shape[0]
        if stats:
            self.stats = dict(stats)
        if k == 0:
            return
        need = self._n + k
        if need > self._buf.shape[0]:
            cap = max(need, 2 * self._buf.shape[0])
            buf = np.zeros((cap, len(self.columns)))
            buf[:self._n] = self._buf[:self._n]
            self._buf = buf
        self._buf[self._n:need] = rows
        self._n = need
        self.version += 1
        self.appended.emit(k)

    @property
    def n_rows(self) -> int:
        return self._n

    @property
    def data(self) -> np.ndarray:
        """All rows so far (a read-only view; re-read after appends)."""
        v = self._buf[:self._n]
        v = v.view()
        v.setflags(write=False)
        return v

    def column(self, name: str) -> np.ndarray:
        return self.data[:, self.col_index[name]]

    @property
    def t(self) -> np.ndarray:
        return self.data[:, 0]

    @property
    def t_last(self) -> float:
        return float(self._buf[self._n - 1, 0]) if self._n else 0.0

    @property
    def progress(self) -> float:
        return min(1.0, self.t_last / self.settings.t_end) if self.settings.t_end > 0 else 1.0

    def energy_drift(self) -> np.ndarray:
        """E(t) - E(0) of the total energy."""
        e = self.column("energy.total")
        return e - e[0] if len(e) else e

    def row_at(self, t: float) -> int:
        """Index of the last row with time <= t (0 if none)."""
        if self._n == 0:
            return 0
        i = int(np.searchsorted(self._buf[:self._n, 0], t, side="right")) - 1
        return min(max(i, 0), self._n - 1)

    # ------------------------------------------------------------------- status
    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    def set_status(self, status: str, error: str = "", error_t: float | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(status)
        if status == self.status and not error:
            return
        self.status = status
        if error:
            self.error = error
            self.error_t = error_t
        if status not in ACTIVE and self.wall_end is None:
            self.wall_end = time.perf_counter()
        self.status_changed.emit(status)

    @property
    def wall_time(self) -> float:
        end = self.wall_end if self.wall_end is not None else time.perf_counter()
        return end - self.wall_start

    def steps_per_second(self) -> float:
        w = float(self.stats.get("wall_time", 0.0))
        rows = int(self.stats.get("rows", self._n))
        return rows / w if w > 0 else 0.0

    def eta(self) -> float | None:
        """Seconds left, from the simulated-time rate so far (None before it is known)."""
        w = float(self.stats.get("wall_time", 0.0))
        t = float(self.stats.get("t", self.t_last))
        if w <= 0 or t <= 0:
            return None
        return max(0.0, (self.settings.t_end - t) * w / t)

    def health(self, short: bool = False) -> str:
        """The run's health from the pipeline's monitor: worst position violation, energy
        drift, closest approach to a singular configuration, retries ('' before it reported)."""
        if "max_position_violation" not in self.stats:
            return ""
        from linkwork.engine.monitor import summary

        return summary(self.stats, short=short)

    def summary(self) -> str:
        s = f"{self.label}: {self.status}, {self._n} rows, t = {self.t_last:.4g} s"
        if self.status == "failed":
            s += f" — {self.error}"
        health = self.health()
        if health:
            s += f"\n{health}"
        return s


class RunHistory:
    """The runs of this session. Events: ``added(run)``, ``removed(run)``,
    ``current_changed(run | None)``, ``visibility_changed(run)``."""

    MAX_RUNS = 12

    def __init__(self):
        self.runs: list[RunRecord] = []
        self._current: RunRecord | None = None
        self.added = Event("run_added")
        self.removed = Event("run_removed")
        self.current_changed = Event("current_changed")
        self.visibility_changed = Event("visibility_changed")
        self._colors = itertools.count()

    @property
    def current(self) -> RunRecord | None:
        return self._current

    def add(self, run: RunRecord, keep_previous: bool = False) -> RunRecord:
        """Add ``run`` and make it current.  Earlier runs stay listed; they stay
        overlaid in the plots only with ``keep_previous`` (a comparison)."""
        run.color_index = next(self._colors)
        for r in self.runs:
            if r.visible and not keep_previous:
                r.visible = False
                self.visibility_changed.emit(r)
        self.runs.append(run)
        self.added.emit(run)
        self.set_current(run)
        # forget the oldest finished, hidden runs beyond the limit
        while len(self.runs) > self.MAX_RUNS:
            old = next((r for r in self.runs if not r.visible and not r.active and r is not run), None)
            if old is None:
                break
            self.remove(old)
        return run

    def set_current(self, run: RunRecord | None) -> None:
        if run is not self._current:
            self._current = run
            if run is not None and not run.visible:
                run.visible = True
                self.visibility_changed.emit(run)
            self.current_changed.emit(run)

    def set_visible(self, run: RunRecord, visible: bool) -> None:
        if run.visible != visible:
            run.visible = visible
            self.visibility_changed.emit(run)

    def remove(self, run: RunRecord) -> None:
        if run.active:
            raise ValueError("a running simulation cannot be removed; stop it first")
        self.runs.remove(run)
        self.removed.emit(run)
        if run is self._current:
            self.set_current(self.runs[-1] if self.runs else None)

    def clear(self) -> None:
        for r in [r for r in self.runs if not r.active]:
            self.remove(r)

    def visible_runs(self) -> list[RunRecord]:
        return [r for r in self.runs if r.visible or r is self._current]

    def by_id(self, run_id: int) -> RunRecord | None:
        return next((r for r in self.runs if r.id == run_id), None)
