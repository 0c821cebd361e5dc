"""Live plots (pyqtgraph): energy drift, constraint violation, a chosen quantity.

Refreshed by a ``QTimer``, never per chunk: each tick calls
``setData`` on the curves of runs whose rows changed, reading the runs' fixed-size
min/max overviews (:func:`~app.session.plotdata.series`); curves clip to the view.
All three plots share the time axis.  A red cursor shows the playback time
(drag it, or click in a plot, to move the 3-D view to that instant); a
crosshair follows the mouse and the readout gives the values under it.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QGraphicsItem, QGraphicsScene, QComboBox, QCompleter, QHBoxLayout, QLabel, QSizePolicy, QToolButton,
    QVBoxLayout, QWidget,
)

from linkwork.app.session import Event, Session, Subscriptions
from linkwork.app.session.plotdata import LEVELS, PLOTS, default_quantity, quantity_choices, series

from .plotting import (
    align_titles, configure_plot, curve_pen, fill_legend, make_legend, plot_runs, readout_name, set_violation_title,
    short_labels,
)

#: the refresh timer while a run streams in: 10 Hz, the rate the worker hands rows over at
#: (every timer tick is a trip into Python that makes the simulation thread give up the
#: interpreter lock and queue for a core again; polling faster than rows arrive costs
#: run speed on a small machine and shows nothing new)
REFRESH_MS = 100


class PlotPanel(QWidget):
    """The three plots and their controls."""

    exportRequested = Signal(str)  # plot kind

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("PlotPanel")
        self.session = session
        self.options = session.plot_options
        self._subs = Subscriptions()
        self._curves: dict[tuple[int, str, str], pg.PlotDataItem] = {}
        self._drawn: dict[tuple[int, str], int] = {}  # (run id, plot) -> run.version drawn
        self._seen: dict[tuple[int, str], int] = {}  # (run id, plot) -> rows already range-checked
        self._layout_key = None
        self._live = False
        self._names: dict[int, str] = {}
        self._live_ranges: dict[str, tuple[float, float]] = {}
        self.refresh_count = 0
        self.points_drawn = 0

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.setSpacing(2)
        bar = QHBoxLayout()
        bar.setSpacing(8)
        bar.addWidget(QLabel("Quantity:"))
        self.quantity_combo = QComboBox()
        self.quantity_combo.setObjectName("quantityCombo")
        self.quantity_combo.setEditable(True)
        self.quantity_combo.setInsertPolicy(QComboBox.NoInsert)
        self.quantity_combo.setMinimumContentsLength(14)
        self.quantity_combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.quantity_combo.setToolTip("Column shown in the third plot: body coordinates and velocities, "
                                       "joint coordinates and rates, reaction forces and moments. "
                                       "Type to filter.")
        self.quantity_combo.activated.connect(self._quantity_picked)
        self.quantity_combo.lineEdit().editingFinished.connect(self._quantity_typed)
        bar.addWidget(self.quantity_combo)
        bar.addSpacing(10)
        bar.addWidget(QLabel("Violation:"))
        self.level_boxes = {}
        for lv in LEVELS:
            cb = QCheckBox(lv[:3])
            cb.setToolTip(f"Show the {lv}-level constraint violation")
            cb.setChecked(lv in self.options.levels)
            cb.toggled.connect(self._levels_toggled)
            self.level_boxes[lv] = cb
            bar.addWidget(cb)
        bar.addSpacing(10)
        self.log_energy = QCheckBox("log |ΔE|")
        self.log_energy.setToolTip("Show the energy drift as |E − E(0)| on a logarithmic axis")
        self.log_energy.toggled.connect(lambda on: self.options.set(log_energy=on))
        bar.addWidget(self.log_energy)
        bar.addStretch(1)
        self.readout = QLabel("")
        self.readout.setObjectName("plotReadout")
        self.readout.setTextFormat(Qt.RichText)
        self.readout.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.readout.setMinimumWidth(80)
        bar.addWidget(self.readout, 3)
        self.autorange_btn = QToolButton()
        self.autorange_btn.setText("Fit")
        self.autorange_btn.setToolTip("Zoom all plots to their data")
        self.autorange_btn.clicked.connect(self.auto_range)
        bar.addWidget(self.autorange_btn)
        lay.addLayout(bar)

        # one graphics view for the three plots: one paint pass per refresh, not three
        self.view = pg.GraphicsLayoutWidget()
        self.view.setObjectName("plotsView")
        self.view.setBackground("w")
        self.view.setMinimumWidth(480)
        self.view.ci.setContentsMargins(2, 2, 2, 2)
        self.view.ci.layout.setHorizontalSpacing(6)
        # a few dozen items that move with every refresh: a BSP index is only work (and
        # every re-index calls the items' Python boundingRect from the event loop)
        self.view.scene().setItemIndexMethod(QGraphicsScene.NoIndex)
        self.plots: dict[str, pg.PlotItem] = {}
        self.cursors: dict[str, pg.InfiniteLine] = {}
        self.hover: dict[str, pg.InfiniteLine] = {}
        #: the runs' legend: its own row above the plots, never on the curves
        self.legend = make_legend(self.view.ci, len(PLOTS))
        first = None
        for col, kind in enumerate(PLOTS):
            pi = self.view.addPlot(row=1, col=col)
            pi.setObjectName(f"plot_{kind}")
            pi.setClipToView(True)
            pi.setDownsampling(auto=True, mode="peak")
            pi.getAxis("left").setWidth(52)
            # the title changes rarely: Qt keeps it as a pixmap.  (Caching the axes the same
            # way leaves stale tick labels after a range change.)
            pi.titleLabel.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
            if first is None:
                first = pi
            else:
                pi.setXLink(first)
            cur = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("#c0392b", width=1.5),
                                  hoverPen=pg.mkPen("#e74c3c", width=3))
            cur.setZValue(50)
            cur.setToolTip("Playback time: drag to move the 3-D view")
            cur.sigDragged.connect(lambda line: self.session.playback.set_time(max(0.0, line.value())))
            pi.addItem(cur, ignoreBounds=True)
            hov = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen((120, 120, 120), width=1,
                                                                       style=Qt.DashLine))
            hov.setVisible(False)
            pi.addItem(hov, ignoreBounds=True)
            self.plots[kind] = pi
            self.cursors[kind] = cur
            self.hover[kind] = hov
        self.view.scene().sigMouseMoved.connect(self._mouse_moved)
        self.view.scene().sigMouseClicked.connect(self._mouse_clicked)
        lay.addWidget(self.view, 1)
        self._configure_all()

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._tick)
        #: called after each timer refresh, in the same pass (the window's other live updates)
        self.after_refresh = Event("after_refresh")

        h = session.history
        self._subs.connect(h.added, self._on_runs_changed)
        self._subs.connect(h.removed, self._on_runs_changed)
        self._subs.connect(h.current_changed, self._on_runs_changed)
        self._subs.connect(h.visibility_changed, self._on_runs_changed)
        self._subs.connect(self.options.changed, self._on_options)
        self._subs.connect(session.playback.time_changed, self._on_time)
        self._subs.connect(session.document.validation_changed, lambda v: self._update_quantities())
        self._subs.connect(session.solver.changed, lambda s: self._empty_ranges() if not self.runs() else None)
        self._update_quantities()
        self._empty_ranges()

    # ------------------------------------------------------------------ lifecycle
    def closeEvent(self, ev):  # noqa: N802
        self.close_panel()
        super().closeEvent(ev)

    def close_panel(self) -> None:
        self.timer.stop()
        self._subs.disconnect_all()
        # pyqtgraph's context menus have no parent: delete them with the plots
        for pi in self.plots.values():
            menus = [getattr(pi, "ctrlMenu", None), getattr(pi.vb, "menu", None)]
            for m in menus:
                if m is not None:
                    m.deleteLater()

    def _tick(self) -> None:
        self.refresh()
        self.after_refresh.emit()

    def start_live(self, t_end: float | None = None) -> None:
        """Refresh on the timer while a run is active.

        The time axis is fixed to [0, t_end] and the value axes only grow (with
        head-room), so most refreshes redraw the curves but not the axes: a
        live plot costs the GUI thread little.
        """
        self._live = True
        self._live_ranges = {}
        self._seen = {}
        self.prepare_curves()
        for cur in self.cursors.values():
            cur.setVisible(False)  # the newest row is at the right end anyway
        for pi in self.plots.values():
            # the grid is drawn by the axes across the whole plot: with it on, every new
            # point repaints both axes; it comes back when the run ends
            pi.showGrid(x=False, y=False)
            self._cache_axes(pi, True)
            if t_end is not None:
                pi.vb.disableAutoRange()
                pi.vb.setXRange(0.0, float(t_end), padding=0.02)
        if not self.timer.isActive():
            self.timer.start()

    def stop_live(self) -> None:
        self.timer.stop()
        self._live = False
        for cur in self.cursors.values():
            cur.setVisible(True)
        for pi in self.plots.values():
            self._cache_axes(pi, False)
            pi.showGrid(x=True, y=True, alpha=0.25)
        self._on_time(self.session.playback.time)
        self.refresh()
        self.auto_range()

    def _grow_y(self, kind: str, ys: list[np.ndarray]) -> None:
        """Live runs: widen the value axis only when the data leaves it."""
        pi = self.plots[kind]
        log = pi.getAxis("left").logMode
        lo, hi = np.inf, -np.inf
        for y in ys:
            if log:
                y = y[y > 0]
                if len(y) == 0:
                    continue
                y = np.log10(y)
            y = y[np.isfinite(y)]
            if len(y):
                lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
        if not np.isfinite(lo):
            return
        cur = self._live_ranges.get(kind)
        if cur is not None and cur[0] <= lo and hi <= cur[1]:
            return
        if log:
            new = (np.floor(lo) - 1.0, np.ceil(hi) + 1.0)  # a decade of head-room each way
        else:
            # double the span at each widening: a growing drift re-scales the axis only
            # log2(growth) times during a run
            span = 2.0 * max(hi - lo, max(abs(hi), abs(lo), 1e-300) * 0.1)
            if cur is not None:
                span = max(span, 4.0 * (cur[1] - cur[0]))
            mid = 0.5 * (lo + hi)
            new = (min(lo, mid - 0.6 * span), max(hi, mid + 0.6 * span))
        if cur is not None:
            new = (min(new[0], cur[0]), max(new[1], cur[1]))
        self._live_ranges[kind] = new
        pi.vb.setYRange(*new, padding=0.0)
        self._cache_axes(pi, True)  # new tick labels: drop the cached axis pictures

    @staticmethod
    def _cache_axes(pi, on: bool) -> None:
        """While a run streams in, the axes change only when this panel widens them:
        Qt may keep them as pixmaps instead of calling their Python paint on every
        new point (re-setting the mode discards the old pixmaps)."""
        for name in ("left", "bottom"):
            ax = pi.getAxis(name)
            ax.setCacheMode(QGraphicsItem.NoCache)
            if on:
                ax.setCacheMode(QGraphicsItem.DeviceCoordinateCache)

    # ------------------------------------------------------------------ options
    def _quantity_columns(self) -> list[str]:
        cur = self.session.history.current
        if cur is not None:
            return list(cur.columns)
        v = self.session.document.validation
        if v.ok:
            from linkwork.engine.results import columns

            return columns(v.model)
        return []

    def _update_quantities(self) -> None:
        cols = quantity_choices(self._quantity_columns())
        combo = self.quantity_combo
        old = [combo.itemText(i) for i in range(combo.count())]
        if cols != old:
            with QSignalBlocker(combo):
                combo.clear()
                combo.addItems(cols)
                comp = QCompleter(cols, combo)
                comp.setCaseSensitivity(Qt.CaseInsensitive)
                comp.setFilterMode(Qt.MatchContains)
                combo.setCompleter(comp)
        q = self.options.quantity
        if cols and q not in cols:
            q = default_quantity(["t"] + cols)
            self.options.set(quantity=q)
        if q is not None and q in cols:
            with QSignalBlocker(combo):
                combo.setCurrentIndex(cols.index(q))

    def _quantity_picked(self, index: int) -> None:
        self.options.set(quantity=self.quantity_combo.itemText(index))

    def _quantity_typed(self) -> None:
        text = self.quantity_combo.currentText().strip()
        if self.quantity_combo.findText(text) >= 0:
            self.options.set(quantity=text)

    def _levels_toggled(self) -> None:
        self.options.set(levels=[lv for lv, cb in self.level_boxes.items() if cb.isChecked()])

    def _on_options(self) -> None:
        with QSignalBlocker(self.log_energy):
            self.log_energy.setChecked(self.options.log_energy)
        for lv, cb in self.level_boxes.items():
            with QSignalBlocker(cb):
                cb.setChecked(lv in self.options.levels)
        q = self.options.quantity
        if q is not None:
            i = self.quantity_combo.findText(q)
            if i >= 0:
                with QSignalBlocker(self.quantity_combo):
                    self.quantity_combo.setCurrentIndex(i)
        self._configure_all()
        self._rebuild()

    def _configure_all(self) -> None:
        cur = self.session.history.current
        spec = cur.spec if cur is not None else self.session.document.spec
        for kind, pi in self.plots.items():
            configure_plot(pi, kind, self.options.quantity, self.options.log_energy, spec)
            if self._live:
                pi.showGrid(x=False, y=False)
        set_violation_title(self.plots["violation"], len(self.runs()) > 1)
        align_titles(self.plots.values())

    # -------------------------------------------------------------------- curves
    def _on_runs_changed(self, *_):
        self._update_quantities()
        self._rebuild()

    def _rebuild(self) -> None:
        live = self._live
        for (rid, kind, key), item in list(self._curves.items()):
            self.plots[kind].removeItem(item)
        runs = self.runs()
        self._names = short_labels(runs)
        self._configure_all()
        fill_legend(self.legend, runs, self._names)
        self._curves.clear()
        self._drawn.clear()
        self._seen.clear()
        self._live_ranges = {}
        self.refresh()
        if not runs:
            self._empty_ranges()
        elif not live:
            self.auto_range()

    def _empty_ranges(self) -> None:
        """No run yet: the time axis up to the end time, the violation axis over the
        round-off decades a good run lives in."""
        t_end = self.session.solver.settings.t_end
        for kind, pi in self.plots.items():
            pi.vb.disableAutoRange()
            pi.vb.setXRange(0.0, float(t_end), padding=0.02)
            if kind == "violation":
                pi.vb.setYRange(-16.0, 0.0, padding=0.0)
            else:
                pi.vb.setYRange(-1.0, 1.0, padding=0.05)

    def runs(self):
        return plot_runs(self.session.history, self.session.history.current)

    def refresh(self) -> None:
        """Push new rows of every shown run into its curves (the timer's job)."""
        self.refresh_count += 1
        runs = self.runs()
        multi = len(runs) > 1
        o = self.options
        for rank, run in enumerate(runs):
            for kind, pi in self.plots.items():
                if self._drawn.get((run.id, kind)) == run.version:
                    continue
                ys = []
                seen = self._seen.get((run.id, kind), 0)
                for s in series(kind, run, o.quantity, o.levels, o.log_energy):
                    item = self._curve(pi, kind, s.key, run, multi, rank)
                    item.setData(s.x, s.y, connect="finite", skipFiniteCheck=True)
                    self.points_drawn += len(s.x)
                    ys.append(s.y[seen:])  # only the rows new since the last refresh
                self._drawn[(run.id, kind)] = run.version
                self._seen[(run.id, kind)] = run.n_rows
                if self._live and ys:
                    self._grow_y(kind, ys)

    def _curve(self, pi, kind: str, key: str, run, multi: bool, rank: int):
        item = self._curves.get((run.id, kind, key))
        if item is None:
            item = pi.plot([], [], pen=curve_pen(kind, key, run, multi, rank), connect="finite")
            item.setClipToView(True)
            item.setDownsampling(auto=True, method="peak")
            self._curves[(run.id, kind, key)] = item
        return item

    def prepare_curves(self) -> None:
        """Create the curve items of every shown run now (before a run starts streaming)."""
        runs = self.runs()
        multi = len(runs) > 1
        o = self.options
        for rank, run in enumerate(runs):
            for kind, pi in self.plots.items():
                keys = {"energy": ["energy"], "violation": [f"violation.{lv}" for lv in o.levels],
                        "quantity": [o.quantity] if o.quantity in run.col_index else []}[kind]
                for key in keys:
                    self._curve(pi, kind, key, run, multi, rank)

    def auto_range(self) -> None:
        for pi in self.plots.values():
            pi.enableAutoRange()

    def curve_data(self, kind: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """(x, y) of every curve in plot ``kind`` (for tests and the readout)."""
        out = []
        for (rid, k, key), item in self._curves.items():
            if k == kind:
                x, y = item.getOriginalDataset()
                out.append((np.asarray(x) if x is not None else np.zeros(0),
                            np.asarray(y) if y is not None else np.zeros(0)))
        return out

    # ------------------------------------------------------------- cursor & hover
    def _on_time(self, t: float) -> None:
        if self._live:
            return
        for cur in self.cursors.values():
            if cur.value() != t:
                cur.setValue(t)

    def _plot_at(self, scene_pos) -> str | None:
        for kind, pi in self.plots.items():
            if pi.vb.sceneBoundingRect().contains(scene_pos):
                return kind
        return None

    def _mouse_clicked(self, ev) -> None:
        if ev.button() != Qt.LeftButton or ev.double():
            return
        kind = self._plot_at(ev.scenePos())
        if kind is None:
            return
        vb = self.plots[kind].vb
        x = vb.mapSceneToView(ev.scenePos()).x()
        cur = self.session.history.current
        if cur is None or cur.n_rows == 0 or cur.active:
            return
        self.session.playback.set_time(min(max(0.0, x), cur.t_last))

    def _mouse_moved(self, pos) -> None:
        kind = self._plot_at(pos)
        if kind is None:
            for h in self.hover.values():
                h.setVisible(False)
            return
        vb = self.plots[kind].vb
        x = vb.mapSceneToView(pos).x()
        for h in self.hover.values():
            h.setVisible(True)
            h.setValue(x)
        self.readout.setText(self.readout_text(kind, x))

    def readout_text(self, kind: str, x: float) -> str:
        """Values of the curves of plot ``kind`` at time ``x`` (nearest row)."""
        parts = [f"<b>t = {x:.4g} s</b>"]
        o = self.options
        runs = self.runs()
        multi = len(runs) > 1
        for run in runs:
            if run.n_rows == 0:
                continue
            for s in series(kind, run, o.quantity, o.levels, o.log_energy):
                v = s.y[int(np.clip(np.searchsorted(s.x, x), 0, len(s.x) - 1))]
                name = readout_name(kind, s.key, run, multi, self._names.get(run.id))
                parts.append(f"{name}: {'–' if not np.isfinite(v) else f'{v:.4g}'}")
        return " &nbsp; ".join(parts)
