"""The simulation as a generator of immutable progress items (no Qt).

A worker thread iterates :func:`simulation_items`; each item is handed to the
GUI thread as is.  Items are frozen dataclasses or the engine's
:class:`~engine.simulation.ResultChunk` (read-only rows), yielded at most every
``max_interval`` seconds, so the GUI never sees more than ~20 items a second.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from linkwork.engine.model import Model
from linkwork.engine.simulation import Settings, Simulation


@dataclass(frozen=True)
class Started:
    """The simulation object exists; ``columns`` are the CSV columns."""

    columns: tuple[str, ...]
    settings: Settings


@dataclass(frozen=True)
class Compiling:
    """``Simulation.prepare()`` is running: kernels compile (first use) or load."""


@dataclass(frozen=True)
class Prepared:
    seconds: float  # how long prepare() took
    initial_report: str = ""  # the initial velocity projection, if it changed anything


class RunControl:
    """Thread-safe pause / resume / abort flags shared by a worker and its generator.

    Callbacks registered with :meth:`on_abort` run (in the caller's thread) when
    :meth:`abort` is called -- the simulation's ``cancel`` is one.
    """

    def __init__(self):
        self._resume = threading.Event()
        self._resume.set()
        self._abort = threading.Event()
        self._holding = threading.Event()
        self._abort_callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def pause(self) -> None:
        self._resume.clear()

    def resume(self) -> None:
        self._resume.set()

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    def abort(self) -> None:
        self._abort.set()
        self._resume.set()
        with self._lock:
            cbs = list(self._abort_callbacks)
        for cb in cbs:
            cb()

    @property
    def aborted(self) -> bool:
        return self._abort.is_set()

    def on_abort(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._abort_callbacks.append(callback)
        if self._abort.is_set():
            callback()

    def wait_if_paused(self, timeout: float = 0.1) -> None:
        """Block while paused (returns at once when resumed or aborted)."""
        if self._resume.is_set() or self._abort.is_set():
            return
        self._holding.set()
        try:
            while not self._resume.is_set() and not self._abort.is_set():
                self._resume.wait(timeout)
        finally:
            self._holding.clear()

    @property
    def holding(self) -> bool:
        """True while the worker is actually held by a pause (nothing more comes)."""
        return self._holding.is_set()


def simulation_items(model: Model, settings: Settings, control: RunControl,
                     max_interval: float = 0.05):
    """Create the simulation, prepare it, then yield its result chunks.

    Raises the engine's ``SettingsError`` / ``SimulationError`` (after the
    chunk holding every row computed before a failure).
    """
    sim = Simulation(model, settings)
    control.on_abort(sim.cancel)
    yield Started(tuple(sim.columns), sim.settings)
    if control.aborted:
        return
    yield Compiling()
    t0 = time.perf_counter()
    sim.prepare()
    ini = getattr(sim.formulation, "initial", None)
    report = ""
    if ini is not None and getattr(ini, "correction_max", 0.0) > 0:
        report = ini.report()
    yield Prepared(time.perf_counter() - t0, report)
    if control.aborted:
        return
    # chunks are bounded by time only: at most one every max_interval seconds
    yield from sim.run(chunk_rows=1 << 30, max_interval=max_interval)
