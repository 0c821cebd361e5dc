"""A one- or two-parameter sweep of the open mechanism (no Qt; the Sweep dialog binds to it).

:func:`parameter_choices` lists the open mechanism's numeric fields a sweep can vary
(masses, joint rates, force constants, gravity) and the run settings ``dt`` and
``t_end``.  :class:`SweepSetup` is what the dialog edits; :func:`build_spec` turns it
into the engine's :class:`~engine.sweep.SweepSpec`.  :func:`sweep_items` runs it
(:func:`engine.sweep.run_sweep` on this machine's cores, without Dask) as a generator of immutable
progress items for the generator-style worker: a ``Progress``
snapshot at most every ``interval`` seconds, then ``Done`` with the summary.
:class:`SweepModel` keeps the last result and emits ``changed`` on a real change;
:func:`grid_values` arranges a quantity for the plot, :func:`export_summary` writes
the summary (Parquet or CSV) from the model, never from the widgets.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linkwork.app.session.events import Event


@dataclass(frozen=True)
class Axis:
    """One swept parameter: ``num`` values from ``start`` to ``stop`` (inclusive)."""

    path: str
    start: float
    stop: float
    num: int


@dataclass(frozen=True)
class SweepSetup:
    axes: tuple[Axis, ...]  # one or two
    t_end: float = 2.0
    dt: float = 0.01
    formulation: str | None = None
    workers: int | None = None  # None: the machine's cores
    out_dir: str | None = None  # None: a new temporary directory


@dataclass(frozen=True)
class ProgressItem:
    total: int
    done: int
    failed: int
    running: int
    eta: float | None


@dataclass(frozen=True)
class Done:
    summary: Any  # pandas DataFrame
    out_dir: str
    cancelled: bool
    seconds: float


def parameter_choices(doc: dict) -> list[tuple[str, str, float]]:
    """(label, JSON path, current value) of every numeric field worth sweeping."""
    out: list[tuple[str, str, float]] = []
    for i, b in enumerate(doc.get("bodies", [])):
        out.append((f"{b.get('name', i)}: mass", f"bodies[{i}].mass", float(b["mass"])))
    for i, j in enumerate(doc.get("joints", [])):
        if j.get("type") in ("revolute", "prismatic"):
            rate = j.get("rate", 0.0)
            rate = rate[0] if isinstance(rate, list) else rate
            out.append((f"{j.get('name', i)}: initial rate", f"joints[{i}].rate", float(rate)))
    for i, f in enumerate(doc.get("forces", []) or []):
        label = f.get("joint") or f"{f.get('body1', '')}-{f.get('body2', '')}"
        for key in ("stiffness", "damping", "rest_length", "rest"):
            if key in f and isinstance(f[key], (int, float)):
                out.append((f"{f['type']} {label}: {key}", f"forces[{i}].{key}", float(f[key])))
        if f.get("type") == "joint-torque" and isinstance(f.get("value"), (int, float)):
            out.append((f"torque {label}: value", f"forces[{i}].value", float(f["value"])))
    g = doc.get("gravity", [0.0, -9.81, 0.0])
    out.append(("gravity y", "gravity[1]", float(g[1])))
    out.append(("run: time step dt", "dt", 0.01))
    out.append(("run: simulated time t_end", "t_end", 2.0))
    return out


def build_spec(doc: dict, setup: SweepSetup):
    """The engine's sweep of the open mechanism document ``doc``."""
    from linkwork.engine.sweep import STANDARD_KEEP, sweep_from_dict

    settings: dict[str, Any] = {"t_end": setup.t_end, "dt": setup.dt}
    if setup.formulation:
        settings["formulation"] = setup.formulation
    grid = {a.path: {"start": a.start, "stop": a.stop, "num": a.num} for a in setup.axes}
    keep = list(STANDARD_KEEP)
    for b in doc.get("bodies", []):
        keep += [f"{stat}:{b['name']}.{c}" for c in ("x", "y") for stat in ("max", "min")]
    for j in doc.get("joints", []):
        if j.get("type") in ("revolute", "prismatic"):
            keep += [f"final:joint.{j['name']}.q", f"max:joint.{j['name']}.q", f"min:joint.{j['name']}.q",
                     f"max:joint.{j['name']}.qd"]
    data = {"format": "linkwork-sweep", "version": 1, "name": "sweep of the open mechanism",
            "settings": settings, "grid": grid, "keep": keep, "trajectories": "csv"}
    return sweep_from_dict(data, base=doc)


def sweep_items(spec, setup: SweepSetup, control, interval: float = 0.1):
    """Run ``spec`` on a local cluster (in a helper thread) and yield :class:`ProgressItem`
    snapshots, then one :class:`Done`.  ``control.on_abort`` cancels the sweep: the
    summary then holds the cases finished so far."""
    from linkwork.engine.sweep import run_sweep

    out_dir = setup.out_dir or tempfile.mkdtemp(prefix="linkwork-sweep-")
    cancel = threading.Event()
    control.on_abort(cancel.set)
    q: queue.Queue = queue.Queue()
    t0 = time.perf_counter()

    def progress(p):
        q.put(ProgressItem(p.to_compute, p.done, p.failed, p.running, p.eta))

    def work():
        try:
            df = run_sweep(spec, out=out_dir, workers=setup.workers, progress=progress, cancel=cancel)
            q.put(Done(df, out_dir, cancel.is_set(), time.perf_counter() - t0))
        except BaseException as exc:  # noqa: BLE001 -- handed to the worker's one error sink
            q.put(exc)

    th = threading.Thread(target=work, name="linkwork-sweep", daemon=True)
    th.start()
    last = 0.0
    pending: ProgressItem | None = None
    while True:
        try:
            item = q.get(timeout=interval)
        except queue.Empty:
            item = None
        if isinstance(item, ProgressItem):
            pending = item
        now = time.perf_counter()
        if pending is not None and (now - last >= interval or not isinstance(item, (ProgressItem, type(None)))):
            yield pending
            pending, last = None, now
        if isinstance(item, BaseException):
            th.join()
            raise item
        if isinstance(item, Done):
            th.join()
            yield item
            return


@dataclass
class SweepModel:
    """The dialog's state: the setup, whether a sweep runs, its progress and last result."""

    setup: SweepSetup | None = None
    running: bool = False
    progress: ProgressItem | None = None
    result: Done | None = None
    changed: Event = field(default_factory=lambda: Event("changed"))

    def start(self, setup: SweepSetup) -> None:
        self.setup, self.running, self.progress, self.result = setup, True, None, None
        self.changed.emit()

    def update(self, item) -> None:
        if isinstance(item, ProgressItem):
            if item != self.progress:
                self.progress = item
                self.changed.emit()
        elif isinstance(item, Done):
            self.result, self.running = item, False
            self.changed.emit()

    def stop(self) -> None:
        if self.running:
            self.running = False
            self.changed.emit()

    def quantities(self) -> list[str]:
        """Numeric summary columns worth plotting (kept quantities and wall time)."""
        if self.result is None:
            return []
        df = self.result.summary
        skip = ("case", "exit_status", "rows", "finished_at", "case_timeout")
        return [c for c in df.columns if not c.startswith("param.") and c not in skip
                and df[c].dtype.kind == "f" and df[c].notna().any()]


def axis_values(a: Axis):
    """The values of an axis, as the engine's grid makes them (``start + (stop - start) i / (num - 1)``)."""
    import numpy as np

    n = a.num
    return np.array([a.start + (a.stop - a.start) * i / (n - 1) if n > 1 else a.start for i in range(n)])


def grid_values(df, axes: tuple[Axis, ...], quantity: str):
    """The quantity over the parameter grid: (x values, y values or None, z array).

    One axis: ``z`` has one value per x.  Two: ``z[i, j]`` at ``(x[i], y[j])``.  Cases
    that did not finish (failed, or not computed: a cancelled sweep) are NaN."""
    import numpy as np

    xs = axis_values(axes[0])
    ys = axis_values(axes[1]) if len(axes) > 1 else None
    z = np.full((len(xs),) if ys is None else (len(xs), len(ys)), np.nan)
    for _, r in df[df["status"] == "ok"].iterrows():
        i = int(np.argmin(np.abs(xs - r[f"param.{axes[0].path}"])))
        if ys is None:
            z[i] = r[quantity]
        else:
            z[i, int(np.argmin(np.abs(ys - r[f"param.{axes[1].path}"])))] = r[quantity]
    return xs, ys, z


def export_summary(model: SweepModel, path: str | Path) -> Path:
    """Write the last sweep's summary: Parquet for ``*.parquet``, else the CSV of pandas."""
    if model.result is None:
        raise ValueError("no sweep result to export")
    p = Path(path)
    df = model.result.summary
    if p.suffix.lower() == ".parquet":
        df.to_parquet(p, index=False)
    else:
        df.to_csv(p, index=False, float_format=None)
    return p
