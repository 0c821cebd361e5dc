"""A generator-style worker in a ``QThread`` (napari's ``thread_worker``).

``GeneratorWorker(factory)`` calls ``factory(control)`` in its thread and
emits every yielded item to the GUI thread.  ``control`` is a
:class:`~app.session.simulate.RunControl`: :meth:`pause` blocks the
generator between items, :meth:`resume` continues it, :meth:`abort` runs the
generator's abort callbacks (the simulation's ``cancel``) and lets it finish
with what it has.  Exceptions are emitted once through ``errored``; the
controller sends them on to the session's notification sink.
"""

from __future__ import annotations

import traceback
from typing import Callable, Iterator

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from linkwork.app.session.simulate import RunControl

#: items a generator may still deliver after an abort before it is closed
_AFTER_ABORT_LIMIT = 10_000


class GeneratorWorker(QObject):
    started = Signal()
    yielded = Signal(object)
    errored = Signal(object, str)  # exception, formatted traceback
    finished = Signal()

    def __init__(self, factory: Callable[[RunControl], Iterator], parent: QObject | None = None):
        super().__init__(parent)
        self._factory = factory
        self.control = RunControl()
        self._thread: QThread | None = None

    # ------------------------------------------------------------- control (any thread)
    def pause(self) -> None:
        self.control.pause()

    def resume(self) -> None:
        self.control.resume()

    def abort(self) -> None:
        self.control.abort()

    @property
    def is_paused(self) -> bool:
        return self.control.paused

    @property
    def is_running(self) -> bool:
        return self._thread is not None and self._thread.isRunning()

    # ----------------------------------------------------------------- the thread
    @Slot()
    def work(self) -> None:
        self.started.emit()
        after_abort = 0
        gen = None
        try:
            gen = self._factory(self.control)
            for item in gen:
                self.yielded.emit(item)
                if self.control.aborted:
                    after_abort += 1
                    if after_abort > _AFTER_ABORT_LIMIT:
                        break
                    continue
                self.control.wait_if_paused()
        except Exception as exc:  # noqa: BLE001 -- every error goes to the one sink
            self.errored.emit(exc, traceback.format_exc())
        finally:
            if gen is not None and hasattr(gen, "close"):
                try:
                    gen.close()
                except Exception:  # noqa: BLE001
                    pass
            self.finished.emit()

    def start(self) -> QThread:
        """Move to a new ``QThread`` and start; the thread quits when the generator ends."""
        thread = QThread()
        thread.setObjectName("linkwork-worker")
        self.moveToThread(thread)
        thread.started.connect(self.work)
        # quit from the worker thread itself: a queued quit would wait for the GUI thread,
        # which may be the one blocked in wait()
        self.finished.connect(thread.quit, Qt.DirectConnection)
        self._thread = thread
        thread.start()
        return thread

    def wait(self, msecs: int = 30_000) -> bool:
        """Block until the thread has ended (True) or ``msecs`` passed."""
        if self._thread is None:
            return True
        return self._thread.wait(msecs)
