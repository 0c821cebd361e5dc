"""The Modes dock (docs/user-guide.md, "Static equilibrium and vibration modes"): the open
mechanism's rest and its vibration modes, computed by the engine's analysis
(``linkwork.engine.analysis``, what ``linkwork equilibrium`` and ``linkwork modes`` run),
listed in a table, the chosen mode animated in the 3-D view.

The animation moves the spanning tree's joint coordinates along the mode shape,
``q* + a sin(2 pi t / T) phi / max|phi|`` (put back onto the loops), with a fixed visual
period T whatever the mode's frequency; :attr:`ModesPanel.poses` carries the body poses
to the view, None when it stops.  A change to the mechanism clears the results.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
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
    def _model(self):
        from linkwork.engine.model import build_model

        return build_model(self.session.document.spec)

    def _failed(self, what: str, exc: Exception) -> bool:
        text = f"{what}: {exc}"
        self.report.setText(text)
        self.session.notifications.warning(text, source="modes")
        return False

    @contextmanager
    def _busy(self, text: str):
        """A wait cursor and ``text`` in the report while an analysis computes (in this
        thread: about 10 s on the 128-link chain, well under one on small mechanisms)."""
        self.report.setText(text)
        self.report.repaint()
        QApplication.setOverrideCursor(Qt.WaitCursor)
        try:
            yield
        finally:
            QApplication.restoreOverrideCursor()

    def find_equilibrium(self) -> bool:
        """The rest nearest the mechanism's configuration; shows it in the 3-D view."""
        from linkwork.engine.analysis.cli import equilibrium_report
        from linkwork.engine.analysis.equilibrium import EquilibriumError, Statics, find_equilibrium, held_joints
        from linkwork.engine.errors import LinkworkError

        self.set_animating(False)
        self.clear()
        if not self.session.document.spec.bodies:
            return self._failed("No equilibrium", ValueError("the mechanism has no bodies"))
        try:
            model = self._model()
            st = Statics(model, held_joints(model))
            with self._busy(f"Finding the rest of {model.nb} bodies, {model.nv} tree freedoms…"):
                eq = find_equilibrium(model, statics=st)
        except (LinkworkError, EquilibriumError) as exc:
            return self._failed("No equilibrium", exc)
        self.model, self._statics, self.equilibrium = model, st, eq
        self.report.setText(equilibrium_report(model, eq))
        self._show_rest()
        self._update_buttons()
        return True

    def compute_modes(self) -> bool:
        """The modes about the rest (found first when needed), listed in the table."""
        from linkwork.engine.analysis.modes import modes_at

        if self.equilibrium is None and not self.find_equilibrium():
            return False
        with self._busy("Computing the modes about the rest…"):
            md = modes_at(self._statics, self.equilibrium)
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
        self._update_buttons()
        return True

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
        self.save_button.setEnabled(self.equilibrium is not None)
        self.animate_button.setEnabled(self.modes is not None and self.current_mode() is not None)

    def close_panel(self) -> None:
        self.timer.stop()
        self._subs.disconnect_all()
