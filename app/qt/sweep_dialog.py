"""Run > Sweep…: a one- or two-parameter sweep of the open mechanism on this machine's
cores, in the background, with progress, cancel, a plot of the chosen quantity
against the parameter(s) (a line, or an image for two) and export of the summary.

The state lives in :class:`app.session.sweep.SweepModel`; the sweep runs in a
:class:`~app.qt.worker.GeneratorWorker` over :func:`app.session.sweep.sweep_items`."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDoubleSpinBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox,
    QHBoxLayout, QLabel, QLineEdit, QProgressBar, QPushButton, QSpinBox, QVBoxLayout,
)

from linkwork.engine.mechfile import spec_to_dict

from linkwork.app.session import sweep as model_sweep
from linkwork.app.session.sweep import Axis, SweepModel, SweepSetup

from .worker import GeneratorWorker


def _spin(lo: float, hi: float, value: float, decimals: int = 4) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(decimals)
    s.setValue(value)
    return s


class _AxisRow:
    """Combo of parameters + start / stop / number of values, on one grid row."""

    def __init__(self, grid: QGridLayout, row: int, label: QLabel | QCheckBox, choices, pick: int):
        self.label = label
        self.choices = choices
        self.combo = QComboBox()
        for text, path, _ in choices:
            self.combo.addItem(text, path)
        self.start = _spin(-1e9, 1e9, 0.0)
        self.stop = _spin(-1e9, 1e9, 0.0)
        self.num = QSpinBox()
        self.num.setRange(1, 10_000)
        self.num.setValue(5)
        for col, w in enumerate((label, self.combo, self.start, self.stop, self.num)):
            grid.addWidget(w, row, col)
        self.combo.currentIndexChanged.connect(self._defaults)
        self.combo.setCurrentIndex(pick)
        self._defaults()

    def _defaults(self) -> None:
        i = self.combo.currentIndex()
        if i < 0:
            return
        v = self.choices[i][2]
        lo, hi = (0.5 * v, 1.5 * v) if v != 0 else (0.0, 1.0)
        self.start.setValue(min(lo, hi))
        self.stop.setValue(max(lo, hi))

    def axis(self) -> Axis:
        return Axis(self.combo.currentData(), self.start.value(), self.stop.value(), self.num.value())

    def set_enabled(self, on: bool) -> None:
        for w in (self.combo, self.start, self.stop, self.num):
            w.setEnabled(on)


class SweepDialog(QDialog):
    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.setObjectName("sweepDialog")
        self.setWindowTitle("Parameter sweep")
        self.session = session
        self.model = SweepModel()
        self.worker: GeneratorWorker | None = None
        self._doc = spec_to_dict(session.document.spec)
        choices = model_sweep.parameter_choices(self._doc)

        lay = QVBoxLayout(self)
        box = QGroupBox(f"Sweep of {session.document.title}")
        grid = QGridLayout(box)
        for col, text in enumerate(("", "parameter", "from", "to", "values")):
            grid.addWidget(QLabel(text), 0, col)
        self.axis1 = _AxisRow(grid, 1, QLabel("1st"), choices, 0)
        self.use2 = QCheckBox("2nd")
        self.use2.setObjectName("sweepSecond")
        self.axis2 = _AxisRow(grid, 2, self.use2, choices, min(1, len(choices) - 1))
        self.axis2.set_enabled(False)
        self.use2.toggled.connect(self.axis2.set_enabled)
        lay.addWidget(box)

        form = QFormLayout()
        s = session.solver.settings
        self.t_end = _spin(1e-6, 1e6, min(s.t_end, 2.0))
        self.dt = _spin(1e-6, 10.0, s.dt, 5)
        self.workers = QSpinBox()
        self.workers.setRange(1, 256)
        self.workers.setValue(model_sweep_workers())
        self.out_dir = QLineEdit()
        self.out_dir.setPlaceholderText("a new temporary folder")
        form.addRow("simulated time t_end [s]", self.t_end)
        form.addRow("time step dt [s]", self.dt)
        form.addRow("local workers", self.workers)
        form.addRow("results folder", self.out_dir)
        lay.addLayout(form)

        buttons = QHBoxLayout()
        self.run_button = QPushButton("Run sweep")
        self.run_button.setObjectName("sweepRun")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("sweepCancel")
        self.cancel_button.setEnabled(False)
        self.export_button = QPushButton("Export summary…")
        self.export_button.setObjectName("sweepExport")
        self.export_button.setEnabled(False)
        for b in (self.run_button, self.cancel_button, self.export_button):
            buttons.addWidget(b)
        lay.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setObjectName("sweepProgress")
        self.status = QLabel("")
        self.status.setObjectName("sweepStatus")
        self.status.setWordWrap(True)
        lay.addWidget(self.progress)
        lay.addWidget(self.status)

        qrow = QHBoxLayout()
        qrow.addWidget(QLabel("plot"))
        self.quantity = QComboBox()
        self.quantity.setObjectName("sweepQuantity")
        qrow.addWidget(self.quantity, 1)
        lay.addLayout(qrow)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("sweepPlot")
        self.plot.setMinimumHeight(260)
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        lay.addWidget(self.plot, 1)
        self._image: pg.ImageItem | None = None
        self._bar: pg.ColorBarItem | None = None

        self.run_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.export_button.clicked.connect(self.export_dialog)
        self.quantity.currentIndexChanged.connect(self.redraw)
        self.model.changed.connect(self._on_model)
        self.resize(720, 720)

    # ------------------------------------------------------------------ running
    def setup(self) -> SweepSetup:
        axes = (self.axis1.axis(),) + ((self.axis2.axis(),) if self.use2.isChecked() else ())
        return SweepSetup(axes=axes, t_end=self.t_end.value(), dt=self.dt.value(),
                          workers=self.workers.value(), out_dir=self.out_dir.text().strip() or None)

    def start(self) -> None:
        if self.worker is not None:
            return
        setup = self.setup()
        if len(setup.axes) == 2 and setup.axes[0].path == setup.axes[1].path:
            self.status.setText("Choose two different parameters.")
            return
        try:
            spec = model_sweep.build_spec(self._doc, setup)
        except Exception as exc:  # noqa: BLE001 -- a refused sweep is shown, not raised
            self.status.setText(f"Cannot sweep: {exc}")
            return
        self.model.start(setup)
        self.status.setText(f"Starting {setup.workers} workers for {len(spec.cases)} cases…")
        w = GeneratorWorker(lambda control: model_sweep.sweep_items(spec, setup, control))
        w.yielded.connect(self._on_item)  # a method of this QObject: queued to the GUI thread
        w.errored.connect(self._on_error)
        w.finished.connect(self._on_finished)
        self.worker = w
        w.start()

    def cancel(self) -> None:
        if self.worker is not None:
            self.status.setText("Cancelling: the cases finished so far are kept…")
            self.worker.abort()

    def _on_item(self, item) -> None:
        self.model.update(item)

    def _on_error(self, exc, tb: str) -> None:
        self.status.setText(f"The sweep failed: {exc}")
        self.session.notifications.error(f"Sweep failed: {exc}", detail=tb, source="sweep")

    def _on_finished(self) -> None:
        w, self.worker = self.worker, None
        if w is not None:
            w.wait()
            w.deleteLater()
        self.model.stop()

    def shutdown(self) -> None:
        """Cancel a running sweep and wait for its thread (the dialog is closing)."""
        if self.worker is not None:
            self.worker.abort()
            self.worker.wait(60_000)
            self._on_finished()

    def done(self, r: int) -> None:  # noqa: D401 -- QDialog.done: also when closed
        self.shutdown()
        self.model.changed.disconnect()
        # pyqtgraph's context menus have no parent: delete them with the plot (as PlotPanel)
        pi = self.plot.getPlotItem()
        for m in (getattr(pi, "ctrlMenu", None), getattr(pi.vb, "menu", None)):
            if m is not None:
                m.deleteLater()
        super().done(r)

    # ------------------------------------------------------------------ display
    def _on_model(self) -> None:
        m = self.model
        self.run_button.setEnabled(not m.running)
        self.cancel_button.setEnabled(m.running)
        self.export_button.setEnabled(m.result is not None and not m.running)
        if m.running and m.progress is not None:
            p = m.progress
            self.progress.setRange(0, max(p.total, 1))
            self.progress.setValue(p.done)
            eta = "" if p.eta is None else f", about {p.eta:.0f} s left"
            self.status.setText(f"{p.done} of {p.total} cases done, {p.failed} failed, {p.running} running{eta}")
        if m.result is not None and not m.running:
            r = m.result
            df = r.summary
            counts = df["status"].value_counts().to_dict()
            self.progress.setRange(0, max(len(df), 1))
            self.progress.setValue(int(counts.get("ok", 0) + counts.get("failed", 0)))
            self.status.setText(("Cancelled: " if r.cancelled else "Done: ")
                                + ", ".join(f"{n} {k}" for k, n in counts.items())
                                + f" in {r.seconds:.1f} s; results in {r.out_dir}")
            current = self.quantity.currentText()
            self.quantity.blockSignals(True)
            self.quantity.clear()
            names = m.quantities()
            self.quantity.addItems(names)
            pick = current if current in names else next(
                (n for n in names if n.startswith("max.") or n == "energy_drift"), names[0] if names else "")
            self.quantity.setCurrentText(pick)
            self.quantity.blockSignals(False)
            self.redraw()

    def redraw(self) -> None:
        m = self.model
        self.plot.clear()
        q = self.quantity.currentText()
        if self._bar is not None:
            self._bar.setVisible(False)
        if m.result is None or not q:
            return
        axes = m.setup.axes
        x, y, z = model_sweep.grid_values(m.result.summary, axes, q)
        pi = self.plot.getPlotItem()
        pi.setLabel("bottom", axes[0].path)
        if y is None:
            pi.setLabel("left", q)
            self.plot.plot(x, z, pen=pg.mkPen("#1f77b4", width=2), symbol="o", symbolSize=6,
                           symbolBrush="#1f77b4", name=q)
            return
        pi.setLabel("left", axes[1].path)
        finite = z[np.isfinite(z)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        img = pg.ImageItem(np.where(np.isfinite(z), z, lo))
        dx = (x[-1] - x[0]) / max(len(x) - 1, 1) or 1.0
        dy = (y[-1] - y[0]) / max(len(y) - 1, 1) or 1.0
        img.setRect(x[0] - dx / 2, y[0] - dy / 2, dx * len(x), dy * len(y))
        self.plot.addItem(img)
        levels = (lo, hi if hi > lo else lo + 1.0)
        if self._bar is None:
            self._bar = pg.ColorBarItem(values=levels, colorMap=pg.colormap.get("viridis"), interactive=False)
            self._bar.setImageItem(img, insert_in=pi)
        else:
            self._bar.setImageItem(img)
            self._bar.setLevels(levels)
        self._bar.setVisible(True)
        self._bar.setLabel("right", q) if hasattr(self._bar, "setLabel") else None

    # ------------------------------------------------------------------ export
    def export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export sweep summary", "sweep-summary.parquet",
                                              "Parquet (*.parquet);;CSV (*.csv)")
        if path:
            self.export(path)

    def export(self, path: str):
        p = model_sweep.export_summary(self.model, path)
        self.status.setText(f"Summary written to {p}")
        return p


def model_sweep_workers() -> int:
    from linkwork.engine.sweep import default_workers

    return default_workers()
