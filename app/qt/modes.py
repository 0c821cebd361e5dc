"""The Modes dock (docs/user-guide.md, "Static equilibrium and vibration modes"): the open
mechanism's rest and its vibration modes, computed by the engine's analysis
(``linkwork.engine.analysis``, what ``linkwork equilibrium`` and ``linkwork modes`` run),
listed in a table, the chosen mode animated in the 3-D view.

The animation moves the spanning tree's joint coordinates along the mode shape,
``q* + a sin(2 pi t / T) phi / max|phi|`` (put back onto the loops), with a fixed visual
period T whatever the mode's frequency; :attr:`ModesPanel.poses` carries the body poses
to the view, None when it stops.  A change to the mechanism clears the results.

The analyses compute in a thread of their own (:class:`~linkwork.app.qt.worker.GeneratorWorker`):
the window stays live, the report counts the seconds, and a result for a mechanism that
has changed meanwhile is dropped.
"""

from __future__ import annotations

import math
import time

import numpy as np
from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QApplication, QDoubleSpinBox, QFileDialog, QFrame, QHBoxLayout, QHeaderView, QLabel,
    QPushButton, QScrollArea, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from linkwork.app.session import Session, Subscriptions

#: seconds of one animated oscillation, whatever the mode's frequency
PERIOD = 1.6
#: milliseconds between animation frames
FRAME_MS = 40
COLUMNS = ("#", "f [Hz]", "ω [rad/s]", "ζ", "Shape")


class ModesPanel(QWidget):
    """Equilibrium and modes of the session's mechanism; see the module docstring."""

    #: (x (nb, 3), R (nb, 3, 3)) in file order to draw, or None to draw the usual poses
    poses = Signal(object)
    #: an analysis ended: whether it found what it was asked for
    finished = Signal(bool)

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ModesPanel")
        self.session = session
        self._subs = Subscriptions()
        self.model = None
        self.equilibrium = None
        self.modes = None
        self._statics = None
        self._phase = 0.0
        self._worker = None  # the analysis computing, if any
        self._ok = False  # whether the last analysis found what it was asked for
        self._spec = None  # the mechanism it started on
        self._doing = None  # what it says it is doing while it computes (None: a result is shown)
        self._clock = QElapsedTimer()
        self._progress = QTimer(self)  # the report's clock while it computes
        self._progress.setInterval(500)
        self._progress.timeout.connect(self._show_progress)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        buttons = QHBoxLayout()
        self.eq_button = QPushButton("Equilibrium")
        self.eq_button.setObjectName("modesEquilibrium")
        self.eq_button.setToolTip("Find where gravity, the springs and the torques bring the mechanism to rest")
        self.eq_button.clicked.connect(self.find_equilibrium)
        self.modes_button = QPushButton("Modes")
        self.modes_button.setObjectName("modesCompute")
        self.modes_button.setToolTip("Natural frequencies, damping ratios and mode shapes about the rest")
        self.modes_button.clicked.connect(self.compute_modes)
        self.save_button = QPushButton("Save at rest…")
        self.save_button.setObjectName("modesSaveRest")
        self.save_button.setToolTip("Write the mechanism at rest (zero velocities) as a mechanism file")
        self.save_button.clicked.connect(self.save_rest_dialog)
        for b in (self.eq_button, self.modes_button, self.save_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        lay.addLayout(buttons)
        self.report = QLabel("Find the rest of the mechanism, or its vibration modes about it.")
        self.report.setObjectName("modesReport")
        self.report.setWordWrap(True)
        self.report.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.report.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        report_area = QScrollArea()  # a long chain's report is longer than the dock
        report_area.setWidgetResizable(True)
        report_area.setFrameShape(QFrame.NoFrame)
        report_area.setWidget(self.report)
        report_area.setMinimumHeight(9 * self.report.fontMetrics().lineSpacing())  # a small report whole
        lay.addWidget(report_area, 1)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("modesTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for c, tip in enumerate(("Mode, slowest first", "Natural frequency", "Natural circular frequency",
                                 "Damping ratio (the mode's own)", "The mode's larger joint components")):
            self.table.horizontalHeaderItem(c).setToolTip(tip)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.Stretch)
        self.table.itemSelectionChanged.connect(self._mode_chosen)
        lay.addWidget(self.table, 1)
        anim = QHBoxLayout()
        anim.addWidget(QLabel("Amplitude"))
        self.amplitude = QDoubleSpinBox()
        self.amplitude.setObjectName("modesAmplitude")
        self.amplitude.setRange(0.001, 1.5)
        self.amplitude.setDecimals(3)
        self.amplitude.setSingleStep(0.05)
        self.amplitude.setValue(0.2)
        self.amplitude.setToolTip("Largest joint excursion of the animated mode (rad, or m for a slide)")
        anim.addWidget(self.amplitude)
        self.animate_button = QPushButton("Animate")
        self.animate_button.setObjectName("modesAnimate")
        self.animate_button.setCheckable(True)
        self.animate_button.setToolTip("Move the mechanism along the chosen mode in the 3-D view")
        self.animate_button.toggled.connect(self.set_animating)
        anim.addWidget(self.animate_button)
        anim.addStretch(1)
        lay.addLayout(anim)
        self.timer = QTimer(self)
        self.timer.setInterval(FRAME_MS)
        self.timer.timeout.connect(self._tick)

        doc = session.document
        self._subs.connect(doc.state_changed, lambda st: self.clear())
        self._subs.connect(doc.replaced, self.clear)
        self._update_buttons()

    # ------------------------------------------------------------------ computing
    def _failed(self, what: str, exc: Exception) -> bool:
        text = f"{what}: {exc}"
        self.report.setText(text)
        self.session.notifications.warning(text, source="modes")
        return False

    @property
    def busy(self) -> bool:
        """An analysis is computing."""
        return self._worker is not None

    def find_equilibrium(self) -> bool:
        """Start finding the rest nearest the mechanism's configuration, shown in the 3-D
        view when found; False if it could not start.  It computes in a thread of its own
        (about 10 s on the 128-link chain, well under one on small mechanisms) while the
        window stays live; :attr:`finished` says how it ended, :meth:`wait` waits for it."""
        return self._start(modes=False)

    def compute_modes(self) -> bool:
        """Start computing the modes about the rest (found first when needed), listed in
        the table when done; as :meth:`find_equilibrium`."""
        return self._start(modes=True)

    def wait(self, seconds: float = 600.0) -> bool:
        """Process the window's events until the analysis under way has ended; whether it
        found what it was asked for (False if it is still computing after ``seconds``)."""
        deadline = time.perf_counter() + seconds
        while self._worker is not None and time.perf_counter() < deadline:
            QApplication.processEvents(QEventLoop.AllEvents, 50)
            time.sleep(0.005)
        return self._worker is None and self._ok

    def _start(self, modes: bool) -> bool:
        from linkwork.app.qt.worker import GeneratorWorker
        from linkwork.engine.analysis.equilibrium import Statics, find_equilibrium, held_joints
        from linkwork.engine.analysis.modes import modes_at
        from linkwork.engine.model import build_model

        if self._worker is not None:
            self.session.notifications.warning("An analysis is already computing.", source="modes")
            return False
        self.set_animating(False)
        spec = self.session.document.spec
        keep = modes and self.equilibrium is not None
        if not keep:
            self.clear()
        self._ok = False
        if not spec.bodies:
            return self._failed("No equilibrium", ValueError("the mechanism has no bodies"))
        known = (self.model, self._statics, self.equilibrium) if keep else None

        def factory(control):  # in the worker's thread: reads nothing of the window's
            if known is None:
                model = build_model(spec)
                st = Statics(model, held_joints(model))
                yield "start", f"Finding the rest of {model.nb} bodies, {model.nv} tree freedoms"
                eq = find_equilibrium(model, statics=st)
                yield "equilibrium", (model, st, eq)
            else:
                model, st, eq = known
            if modes:
                yield "start", "Computing the modes about the rest"
                yield "modes", modes_at(st, eq)

        self._spec, self._doing = spec, "Starting"
        self._clock.start()
        w = GeneratorWorker(factory)
        w.yielded.connect(self._on_result)
        w.errored.connect(self._on_error)
        w.finished.connect(self._on_finished)
        self._worker = w
        self._update_buttons()
        self._show_progress()
        self._progress.start()
        w.start()
        return True

    def _current(self) -> bool:
        """The mechanism is still the one the analysis started on."""
        return self.session.document.spec is self._spec

    def _show_progress(self) -> None:
        if self._doing is None:  # a result or an error is in the report until the next step
            return
        self.report.setText(f"{self._doing}… {self._clock.elapsed() / 1000:.0f} s")

    def _on_result(self, item) -> None:
        kind, value = item
        if kind == "start":
            self._doing = value
            self._show_progress()
        elif kind == "equilibrium":
            self._doing = None
            if self._current():
                from linkwork.engine.analysis.cli import equilibrium_report

                self.model, self._statics, self.equilibrium = value
                self.report.setText(equilibrium_report(self.model, self.equilibrium))
                self._show_rest()
                self._ok = True
        elif kind == "modes":
            self._doing = None
            self._ok = False
            if self._current() and self.equilibrium is not None:
                self._show_modes(value)
                self._ok = True

    def _on_error(self, exc, tb: str) -> None:
        from linkwork.engine.analysis.equilibrium import EquilibriumError
        from linkwork.engine.errors import LinkworkError

        self._ok = False
        self._doing = None
        if not self._current():
            return
        if isinstance(exc, (LinkworkError, EquilibriumError)):
            self._failed("No equilibrium" if self.equilibrium is None else "No modes", exc)
        else:  # a defect: said with its traceback, the window goes on
            self.report.setText(f"The analysis failed: {type(exc).__name__}: {exc}")
            self.session.notifications.error(f"The analysis failed: {type(exc).__name__}: {exc}\n{tb}",
                                             source="modes")

    def _on_finished(self) -> None:
        self._progress.stop()
        w, self._worker = self._worker, None
        if w is not None:
            w.wait()
        if not self._current():
            self.report.setText("The mechanism changed while it was analysed: find its rest again.")
            self._ok = False
        self._update_buttons()
        self.finished.emit(self._ok)

    def _show_modes(self, md) -> None:
        self.modes = md
        self.table.setRowCount(md.eigenvalues.shape[0])
        for k in range(md.eigenvalues.shape[0]):
            d = md.shapes[:, k]
            big = float(max(abs(d).max(), 1e-300))
            shape = ", ".join(f"{md.labels[i]} {d[i] / big:+.2f}" for i in range(d.size) if abs(d[i]) >= 0.05 * big)
            if md.eigenvalues[k] < 0 and not md.neutral[k]:
                cells = (str(k + 1), "unstable", f"grows {math.sqrt(-md.eigenvalues[k]):.4g} 1/s", "", shape)
            else:
                z = md.damping_ratios[k]
                cells = (str(k + 1), f"{md.frequency_hz[k]:.6g}", f"{md.omega[k]:.6g}",
                         "–" if math.isnan(z) else f"{z:.4g}", shape)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c < 4:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(k, c, item)
        self.table.resizeColumnsToContents()
        n = md.eigenvalues.shape[0]
        self.report.setText(f"{n} {'mode' if n == 1 else 'modes'} about the rest ({self.equilibrium.verdict}); "
                            "choose one and press Animate." if n else "No freedom at rest: no modes.")
        if n:
            self.table.selectRow(0)

    def save_rest(self, path) -> None:
        """Write the mechanism at rest to ``path`` (as ``linkwork equilibrium --out``)."""
        from linkwork.engine.analysis.equilibrium import spec_at_rest
        from linkwork.engine.mechfile import save

        save(spec_at_rest(self.model, self.equilibrium.q), path)

    def save_rest_dialog(self) -> None:
        if self.equilibrium is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the mechanism at rest", "rest.mech.json",
                                              "Mechanism files (*.mech.json)")
        if path:
            try:
                self.save_rest(path)
            except OSError as exc:
                self._failed("Cannot save", exc)

    # ------------------------------------------------------------------ animation
    def current_mode(self) -> int | None:
        rows = self.table.selectionModel().selectedRows() if self.modes is not None else []
        return rows[0].row() if rows else None

    def set_animating(self, on: bool) -> None:
        on = bool(on) and self.modes is not None and self.current_mode() is not None
        if self.animate_button.isChecked() != on:
            self.animate_button.setChecked(on)  # comes back here through toggled
            return
        if on:
            self._phase = 0.0
            self.timer.start()
        else:
            self.timer.stop()
            self._show_rest()

    def mode_poses(self, phase: float):
        """Body poses (file order) of the chosen mode at ``phase`` (rad) of its oscillation."""
        from linkwork.engine.analysis.modes import poses_along

        k = self.current_mode()
        d = self.modes.shapes[:, k]
        d = d / max(float(abs(d).max()), 1e-300)
        return poses_along(self.model, self.equilibrium.q, self.amplitude.value() * math.sin(phase) * d,
                           self._statics)

    def _tick(self) -> None:
        if self.modes is None or self.current_mode() is None:
            self.set_animating(False)
            return
        self._phase = (self._phase + 2.0 * math.pi * FRAME_MS / 1000.0 / PERIOD) % (2.0 * math.pi)
        self.poses.emit(self.mode_poses(self._phase))

    def _show_rest(self) -> None:
        if self.equilibrium is None:
            self.poses.emit(None)
            return
        from linkwork.engine.analysis.modes import poses_along

        self.poses.emit(poses_along(self.model, self.equilibrium.q, np.zeros(self.model.nv), self._statics))

    def _mode_chosen(self) -> None:
        self._update_buttons()

    # ------------------------------------------------------------------ state
    def clear(self) -> None:
        """Forget the results (the mechanism changed): the view draws the usual poses."""
        self.timer.stop()
        was = self.equilibrium is not None
        self.model = self.equilibrium = self.modes = self._statics = None
        self.table.setRowCount(0)
        if self.animate_button.isChecked():
            self.animate_button.setChecked(False)
        if was:
            self.report.setText("The mechanism changed: find its rest again.")
            self.poses.emit(None)
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.eq_button.setEnabled(self._worker is None)
        self.modes_button.setEnabled(self._worker is None)
        self.save_button.setEnabled(self.equilibrium is not None and self._worker is None)
        self.animate_button.setEnabled(self.modes is not None and self.current_mode() is not None)

    def close_panel(self) -> None:
        self.timer.stop()
        self._progress.stop()
        self._subs.disconnect_all()
        if self._worker is not None:  # not stoppable part way: its thread must end before the window does
            self._spec = None
            self._worker.wait(600_000)
