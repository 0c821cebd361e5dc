"""Run state and result history (no Qt).

A :class:`RunRecord` is one simulation: the mechanism and resolved settings it
ran with, its status, and its rows -- streamed to a file as they come
(:mod:`app.session.runstore`), with a fixed-size min/max overview in memory
that the plots read on a timer.  :class:`RunHistory` keeps the runs of the
session; plots overlay every run marked ``visible`` on the current one.
"""

from __future__ import annotations

import bisect
import itertools
import time
import weakref
from dataclasses import fields

import numpy as np

from linkwork.engine.mechfile import MechanismSpec
from linkwork.engine.model import Model
from linkwork.engine.simulation import Settings

from .events import Event
from .recovery import this_process
from .runstore import (
    FORMAT_NAME, FORMAT_VERSION, ROWS, Overview, RowsWriter, RunFileError, RunStore, expected_rows,
    iter_blocks, map_rows, read_meta, read_rows, remove_folder, scratch_store, write_meta,
)

#: "incomplete": a run of an earlier session whose process ended while it ran
STATUSES = ("pending", "compiling", "running", "paused", "finished", "stopped", "failed", "incomplete")
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


def run_of(folder, spec: MechanismSpec) -> bool:
    """Whether the run kept in ``folder`` is a run of mechanism ``spec`` (False where its
    record cannot be read: :meth:`RunRecord.reopen` reports those)."""
    from linkwork.engine.mechfile import spec_from_dict

    try:
        return spec_from_dict(read_meta(folder)["mechanism"]) == spec
    except Exception:  # an unreadable or foreign record is not this mechanism's
        return False


class RunRecord:
    """One simulation run and its results.

    The rows stream to the run's folder in a :class:`~app.session.runstore.RunStore`
    as they come (``path``; the format in :mod:`app.session.runstore`); in memory the
    record keeps only an :class:`~app.session.runstore.Overview` of them for the plots.
    ``data`` maps the file's complete rows read-only, so a view reads the rows it
    uses and nothing else.  Without a store the run goes to this process's
    temporary folder and its folder is removed with the record.
    """

    def __init__(self, spec: MechanismSpec, model: Model, settings: Settings, columns, label: str = "",
                 store: RunStore | None = None):
        self._setup(spec, model, settings, columns, label, store or scratch_store())
        self.path = self.store.new_folder()
        self._writer: RowsWriter | None = RowsWriter(self.path, self.columns)
        self._header_len = self._writer.header_len
        self._overview: Overview | None = Overview(self._overview_width)
        self._owner = this_process().as_dict()
        self._created = time.time()
        if self.store.temporary:
            weakref.finalize(self, remove_folder, self.path)
        self._save_meta()

    def _setup(self, spec, model, settings, columns, label, store) -> None:
        self.id = next(_ids)
        self.store = store
        self.spec = spec
        self.model = model
        self.settings = settings
        self.columns: tuple[str, ...] = tuple(columns)
        self.col_index = {c: k for k, c in enumerate(self.columns)}
        #: with drivers, the overview keeps one more column: energy.total - energy.driver_work,
        #: the figure a driven mechanism conserves (docs/file-format.md, "Drivers")
        self._conserved = ((self.col_index["energy.total"], self.col_index["energy.driver_work"])
                           if "energy.driver_work" in self.col_index and "energy.total" in self.col_index else None)
        self.energy_column = len(self.columns) if self._conserved else self.col_index.get("energy.total", 0)
        self.label = label or settings_label(settings)
        self.color_index = 0
        self.visible = True
        self.expected_rows = expected_rows(settings.t_end, settings.dt)
        self._n = 0
        self._mapped: np.ndarray | None = None
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

    @classmethod
    def reopen(cls, folder, store: RunStore) -> "RunRecord":
        """The run kept in ``folder`` (an earlier session's), up to its last complete chunk.
        A run whose process ended while it ran, or whose rows were cut short, is marked
        ``incomplete``.  Raises :class:`~app.session.runstore.RunFileError`."""
        from pathlib import Path

        from linkwork.engine.mechfile import spec_from_dict
        from linkwork.engine.model import build_model

        folder = Path(folder)
        meta = read_meta(folder)
        rows = read_rows(folder)
        try:
            spec = spec_from_dict(meta["mechanism"])
            model = build_model(spec)
            settings = Settings(**{k: tuple(v) if isinstance(v, list) else v
                                   for k, v in meta["settings"].items()})
        except Exception as exc:  # a run of a mechanism this version cannot build
            raise RunFileError(f"{folder}: {exc}") from None
        self = cls.__new__(cls)
        self._setup(spec, model, settings, rows.columns, meta.get("label", ""), store)
        self.path = folder
        self._writer = None
        self._header_len = rows.header_len
        self._overview = None
        self._owner = meta.get("owner")
        self._created = float(meta.get("created", 0.0))
        self._n = rows.n_rows
        self.stats = dict(meta.get("stats") or {})
        self.error = str(meta.get("error") or "")
        self.error_t = meta.get("error_t")
        self.compile_time = float(meta.get("compile_time", 0.0))
        self.wall_end = self.wall_start + float(meta.get("wall_time", 0.0))
        status = meta.get("status", "finished")
        if status in ACTIVE or not rows.intact or rows.n_rows < int(meta.get("rows", 0)):
            self.status = "incomplete"
            self.error = self.error or (f"the run ended unexpectedly; kept up to its last complete "
                                        f"chunk ({rows.n_rows} rows)")
            self._save_meta()
        else:
            self.status = status if status in STATUSES else "incomplete"
        self.version = 1
        return self

    def _save_meta(self) -> None:
        from linkwork.engine.mechfile import spec_to_dict

        meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "owner": self._owner,
                "created": self._created, "label": self.label, "status": self.status,
                "error": self.error, "error_t": self.error_t, "rows": self._n,
                "columns": len(self.columns), "compile_time": self.compile_time,
                "wall_time": self.wall_time, "stats": self.stats,
                "settings": self.settings.as_dict(), "mechanism": spec_to_dict(self.spec)}
        try:
            write_meta(self.path, meta, durable=not self.store.temporary)
        except OSError:
            pass  # the rows are still written; the run is listed as incomplete next time

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
        if self._writer is None or self._writer.closed:
            raise ValueError("rows cannot be added to a run that has ended")
        self._writer.append(rows)
        self.overview.add(self._overview_rows(rows))
        self._n += k
        self.version += 1
        self.appended.emit(k)

    @property
    def _overview_width(self) -> int:
        return len(self.columns) + (1 if self._conserved else 0)

    def _overview_rows(self, rows: np.ndarray) -> np.ndarray:
        """The rows as the overview keeps them (with drivers, the conserved energy appended)."""
        if self._conserved is None:
            return rows
        e, w = self._conserved
        return np.column_stack([rows, rows[:, e] - rows[:, w]])

    @property
    def driven(self) -> bool:
        """The run's mechanism has drivers: its energy balance counts their work."""
        return self._conserved is not None

    @property
    def overview(self) -> Overview:
        """Minimum and maximum of every column per bucket of rows (what the plots draw);
        a reopened run's is built from its file on first use."""
        if self._overview is None:
            ov = Overview(self._overview_width)
            for block in iter_blocks(self.path / ROWS, self._header_len, len(self.columns), self._n):
                ov.add(self._overview_rows(block))
            self._overview = ov
        return self._overview

    @property
    def n_rows(self) -> int:
        return self._n

    @property
    def data(self) -> np.ndarray:
        """All rows so far, memory-mapped from the run's file (read-only; re-read after
        appends).  Indexing it reads those rows only."""
        if self._mapped is None or self._mapped.shape[0] != self._n:
            self._mapped = map_rows(self.path / ROWS, self._header_len, len(self.columns), self._n)
        return self._mapped

    def blocks(self):
        """The rows in consecutive blocks read from the file (bounded memory)."""
        return iter_blocks(self.path / ROWS, self._header_len, len(self.columns), self._n)

    def column(self, name: str) -> np.ndarray:
        return self.data[:, self.col_index[name]]

    @property
    def t(self) -> np.ndarray:
        return self.data[:, 0]

    @property
    def t_last(self) -> float:
        if self._n == 0:
            return 0.0
        if self._overview is not None and self._overview.last is not None:
            return float(self._overview.last[0])
        return float(self.data[self._n - 1, 0])

    @property
    def progress(self) -> float:
        return min(1.0, self.t_last / self.settings.t_end) if self.settings.t_end > 0 else 1.0

    def energy_drift(self) -> np.ndarray:
        """E(t) - E(0) of the total energy; with drivers, of E - W (their work W)."""
        e = self.column("energy.total")
        if self._conserved is not None:
            e = e - self.column("energy.driver_work")
        return e - e[0] if len(e) else e

    def row_at(self, t: float) -> int:
        """Index of the last row with time <= t (0 if none); reads ~log2(n) rows."""
        if self._n == 0:
            return 0
        i = bisect.bisect_right(self.data[:, 0], t) - 1
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
        if status not in ACTIVE and self._writer is not None:
            self._writer.close(sync=not self.store.temporary)
        if self._writer is not None:
            self._save_meta()
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
