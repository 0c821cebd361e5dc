"""Runs simulations of the session in a worker thread and reports on them.

:class:`RunController` turns the worker's items into session changes (rows
appended to the :class:`~app.session.runs.RunRecord`, status changes) and
every failure into one notification.  It also keeps the playback time on the
newest row while a run is live (the main window's frame clock does that, once per redraw).
"""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from linkwork.engine.errors import SettingsError, SimulationError
from linkwork.engine.simulation import ResultChunk
from linkwork.engine.warmup import compile_notice

from linkwork.app.session import RunRecord, RunRefused, Session
from linkwork.app.session.simulate import Compiling, Prepared, Started, simulation_items

from .worker import GeneratorWorker

#: the worker hands over rows at most this often (s): the GUI redraws at most once per chunk
MAX_INTERVAL = 0.1
#: show the "compiling kernels" notice only if preparing takes longer than this (ms)
COMPILE_NOTICE_DELAY_MS = 300


class RunController(QObject):
    run_started = Signal(object)  # RunRecord
    run_progress = Signal(object)  # RunRecord (after rows were appended)
    run_state = Signal(object)  # RunRecord (status changed)
    run_finished = Signal(object)  # RunRecord
    compiling = Signal(bool)  # show / hide the compiling notice
    compile_progress = Signal(str, float)  # the notice's text, fraction of the expected wait (every second)

    def __init__(self, session: Session, parent: QObject | None = None, max_interval: float = MAX_INTERVAL):
        super().__init__(parent)
        self.session = session
        self.max_interval = max_interval
        self.worker: GeneratorWorker | None = None
        self.run: RunRecord | None = None
        self._compile_timer = QTimer(self)
        self._compile_timer.setSingleShot(True)
        self._compile_timer.timeout.connect(self._show_compiling)
        self._compile_shown = False
        self._compile_t0 = 0.0
        self._compile_tick = QTimer(self)  # the notice's clock while kernels compile
        self._compile_tick.setInterval(1000)
        self._compile_tick.timeout.connect(self._emit_compile_progress)
        self._warned = 0  # formulation warnings of the current run already notified
        self._threads = []
        self._gc_frozen = False
        self._start_timer = QTimer(self)
        self._start_timer.setSingleShot(True)
        self._start_timer.timeout.connect(self._start_thread)

    # ------------------------------------------------------------------ commands
    @property
    def busy(self) -> bool:
        return self.worker is not None

    @property
    def paused(self) -> bool:
        return self.worker is not None and self.worker.is_paused

    def start(self, overrides: dict | None = None, compare: bool = False, label: str = "") -> RunRecord | None:
        """Start a run of the current mechanism; None (and a notification) if refused."""
        if self.busy:
            self.session.notifications.warning("A simulation is already running.", source="run")
            return None
        try:
            run = self.session.prepare_run(overrides, compare=compare, label=label)
        except RunRefused as exc:
            self.session.notifications.error(f"Cannot run: {exc}", source="run")
            return None
        self.run = run
        self._warned = 0
        model, settings = run.model, run.settings

        def factory(control):
            return simulation_items(model, settings, control, self.max_interval)

        w = GeneratorWorker(factory)
        w.yielded.connect(self._on_item)
        w.errored.connect(self._on_error)
        w.finished.connect(self._on_finished)
        self.worker = w
        run.wall_start = time.perf_counter()
        self.run_started.emit(run)
        # the thread starts once the GUI has shown the new run (plots reset, panels
        # updated), so that work does not compete with the first steps
        self._start_timer.start(0)
        return run

    def _start_thread(self) -> None:
        w = self.worker
        if w is None:
            return
        # Everything alive now (Qt wrappers, numba, scipy, earlier runs) is moved out of
        # the garbage collector's sight until the run ends: its collections -- which stop
        # both threads -- then only scan what the run itself allocates.
        if not self._gc_frozen:
            gc.freeze()
            self._gc_frozen = True
        thread = w.start()
        self._threads.append((thread, w))
        thread.finished.connect(self._reap)

    def pause(self) -> None:
        if self.worker is not None and self.run is not None and not self.worker.is_paused:
            self.worker.pause()
            self.run.set_status("paused")
            self.run_state.emit(self.run)

    def resume(self) -> None:
        if self.worker is not None and self.run is not None and self.worker.is_paused:
            self.worker.resume()
            self.run.set_status("running")
            self.run_state.emit(self.run)

    def stop(self) -> None:
        """Abort the run; every row computed so far is kept."""
        if self.worker is not None and self._start_timer.isActive():
            # not started yet: it never will
            self._start_timer.stop()
            self.worker.abort()
            self._on_finished()
            return
        if self.worker is not None:
            self.worker.abort()

    def wait(self, msecs: int = 60_000) -> bool:
        """Wait for the worker thread (used on close and in tests)."""
        ok = True
        for thread, _w in list(self._threads):
            ok = thread.wait(msecs) and ok
        return ok

    def shutdown(self) -> None:
        """Stop any run and wait for its thread (window closing)."""
        self.stop()
        self.wait()
        self._compile_timer.stop()

    # ------------------------------------------------------------- worker items
    @Slot(object)
    def _on_item(self, item) -> None:
        run = self.run
        if run is None:
            return
        if isinstance(item, ResultChunk):
            if self._compile_timer.isActive() or self._compile_shown:
                self._hide_compiling()
            if not run.active:
                return  # the run's file failed: what still comes is dropped
            try:
                run.append(item.rows, item.stats)
            except OSError as exc:
                self._file_failed(run, exc)
                return
            self._forward_warnings(item.stats)
            self.run_progress.emit(run)
        elif isinstance(item, Started):
            run.settings = item.settings
        elif isinstance(item, Compiling):
            run.set_status("compiling")
            self._compile_t0 = time.perf_counter()
            self._compile_timer.start(COMPILE_NOTICE_DELAY_MS)
            self.run_state.emit(run)
        elif isinstance(item, Prepared):
            run.compile_time = item.seconds
            self._hide_compiling()
            if item.initial_report:
                self.session.notifications.info(f"Initial velocities: {item.initial_report}", source="run")
            if not self.paused:
                run.set_status("running")
            else:
                run.set_status("paused")
            self.run_state.emit(run)

    def _file_failed(self, run, exc: OSError) -> None:
        """The run's file cannot be written (a full disk): the run stops as failed with
        every row written so far."""
        msg = (f"the run's file cannot be written ({exc.strerror or exc}); "
               f"the {run.n_rows} rows written before are kept")
        run.set_status("failed", msg, run.t_last)
        self.run_state.emit(run)
        self.session.notifications.error(msg[0].upper() + msg[1:], detail=str(run.path), source="run")
        self.stop()

    def _forward_warnings(self, stats: dict) -> None:
        """The formulation's warnings (singular configurations, unconverged steps) that are
        new since the last chunk, one notification each."""
        ws = stats.get("warnings", [])
        for w in ws[self._warned:]:
            self.session.notifications.warning(w, source="run")
        self._warned = max(self._warned, len(ws))

    def _show_compiling(self) -> None:
        self._compile_shown = True
        self.compiling.emit(True)
        self._emit_compile_progress()
        self._compile_tick.start()

    def _emit_compile_progress(self) -> None:
        """Which formulation compiles, for how long already and about how long in all
        (this machine's last measured figure: engine.warmup.compile_notice)."""
        run = self.run
        name = getattr(getattr(run, "settings", None), "formulation", None) if run is not None else None
        if name:
            self.compile_progress.emit(*compile_notice(name, time.perf_counter() - self._compile_t0))

    def _hide_compiling(self) -> None:
        self._compile_timer.stop()
        self._compile_tick.stop()
        self.compiling.emit(False)
        self._compile_shown = False

    @Slot(object, str)
    def _on_error(self, exc: Exception, tb: str) -> None:
        run = self.run
        if isinstance(exc, SimulationError):
            msg, t = str(exc), exc.t
            detail = f"Every row computed before the failure is kept ({run.n_rows if run else 0} rows)."
        elif isinstance(exc, SettingsError):
            msg, t, detail = str(exc), None, ""
        else:
            msg, t, detail = f"internal error: {type(exc).__name__}: {exc}", None, tb
        if run is not None:
            run.set_status("failed", msg, t)
            self.run_state.emit(run)
        self.session.notifications.error(f"Simulation failed: {msg}" if not msg.startswith("simulation failed")
                                         else msg[0].upper() + msg[1:], detail=detail, source="run")

    @Slot()
    def _on_finished(self) -> None:
        self._hide_compiling()
        if self._gc_frozen:
            gc.unfreeze()
            self._gc_frozen = False
        run, w = self.run, self.worker
        self.worker = None
        self.run = None
        if run is None:
            return
        if run.status != "failed":
            run.set_status("stopped" if (w is not None and w.control.aborted) else "finished")
        pb = self.session.playback
        pb.set_live(False)
        pb.set_time(run.t_last)
        self.run_state.emit(run)
        self.run_finished.emit(run)

    def _reap(self) -> None:
        for pair in list(self._threads):
            if pair[0].isFinished():
                self._threads.remove(pair)
                pair[0].deleteLater()
