"""The runs of the session: which are overlaid in the plots, their status, export and removal."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor
from PySide6.QtWidgets import (
    QHBoxLayout, QHeaderView, QMenu, QPushButton, QToolButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
    QWidget,
)

from linkwork.app.session import Session, Subscriptions

from .plotting import run_color
from .widgets import color_icon


#: a run's status as one character in the list (the word is in its tooltip): the run's label
#: keeps the panel's width, and a finished, stopped or failed run reads at a glance
STATUS_MARKS = {"pending": ("…", None), "compiling": ("…", None), "running": ("▶", "#2a7ab0"),
                "paused": ("‖", "#a07020"), "finished": ("✓", "#2e8b3a"), "stopped": ("■", "#a07020"),
                "failed": ("✗", "#c0392b"), "incomplete": ("!", "#a07020")}


def shown_labels(runs) -> list[str]:
    """The runs' labels as listed: a label an earlier run already has gets its number
    ("dense/rk4 dt=0.01 (2)"), so runs of the same settings stay apart."""
    seen: dict[str, int] = {}
    out = []
    for run in runs:
        n = seen[run.label] = seen.get(run.label, 0) + 1
        out.append(run.label if n == 1 else f"{run.label} ({n})")
    return out


def wall_text(wall: float) -> str:
    """A run's wall-clock time as at most five characters ("<0.01", "3.81", "1234"), so the
    column keeps its width and the run's label keeps the rest; the tooltip has three digits."""
    if wall < 0.01:
        return "<0.01"
    if wall < 100:
        return f"{wall:.2f}"
    return f"{wall:.0f}"


class RunsPanel(QWidget):
    exportRequested = Signal(object)  # RunRecord

    def __init__(self, session: Session, compare_menu: QMenu | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("RunsPanel")
        self.session = session
        self.history = session.history
        self._subs = Subscriptions()
        self._labels: dict = {}  # run id -> the label listed (shown_labels)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)
        self.tree = QTreeWidget()
        self.tree.setObjectName("runsTree")
        # the run's label is what tells runs apart: it gets the width (rows are in the tooltip
        # and in the solver panel's figures)
        self.tree.setHeaderLabels(["Run", "", "Wall"])
        self.tree.headerItem().setToolTip(1, "Status: ✓ finished, ■ stopped, ✗ failed, ▶ running, ‖ paused, "
                                             "… starting, ! incomplete (the word is in each run's tooltip)")
        self.tree.headerItem().setToolTip(2, "Wall-clock time of the run [s]")
        self.tree.setToolTip("Ticked runs are overlaid in the plots; the current run (bold) is the one "
                             "shown in the 3-D view and exported. Right-click for more.")
        self.tree.setRootIsDecorated(False)
        self.tree.setMinimumHeight(56)  # header and two runs: the solver panel above needs the height
        hdr = self.tree.header()
        hdr.setStretchLastSection(False)
        hdr.setSectionResizeMode(0, QHeaderView.Stretch)
        for c in (1, 2):
            hdr.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        self.tree.itemChanged.connect(self._checked)
        self.tree.currentItemChanged.connect(self._current)
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._menu)
        lay.addWidget(self.tree, 1)
        bar = QHBoxLayout()
        self.compare_btn = QToolButton()
        self.compare_btn.setText("Compare with…")
        self.compare_btn.setToolTip("Run the same mechanism with another formulation or setting and overlay "
                                    "the drift curves")
        self.compare_btn.setPopupMode(QToolButton.InstantPopup)
        if compare_menu is not None:
            self.compare_btn.setMenu(compare_menu)
        bar.addWidget(self.compare_btn)
        bar.addStretch(1)
        self.remove_btn = QPushButton("Remove")
        self.remove_btn.setToolTip("Remove the current run from the list and its rows from the disk")
        self.remove_btn.clicked.connect(self._remove_current)
        bar.addWidget(self.remove_btn)
        lay.addLayout(bar)
        for ev in (self.history.added, self.history.removed, self.history.current_changed,
                   self.history.visibility_changed):
            self._subs.connect(ev, lambda *_: self.rebuild())
        self._status_subs = Subscriptions()
        self.rebuild()

    def close_panel(self) -> None:
        self._subs.disconnect_all()
        self._status_subs.disconnect_all()

    def rebuild(self) -> None:
        self._status_subs.disconnect_all()
        with QSignalBlocker(self.tree):
            self.tree.clear()
            self._labels = dict(zip((r.id for r in self.history.runs), shown_labels(self.history.runs)))
            for run in reversed(self.history.runs):
                it = QTreeWidgetItem()
                it.setData(0, Qt.UserRole, run.id)
                it.setFlags(it.flags() | Qt.ItemIsUserCheckable)
                self._fill(it, run)
                self.tree.addTopLevelItem(it)
                if run is self.history.current:
                    self.tree.setCurrentItem(it)
                self._status_subs.connect(run.status_changed, lambda s, r=run: self.update_run(r))
        self.remove_btn.setEnabled(self.history.current is not None and not self.history.current.active)

    def _fill(self, it: QTreeWidgetItem, run) -> None:
        it.setText(0, self._labels.get(run.id, run.label))
        f = it.font(0)
        f.setBold(run is self.history.current)
        it.setFont(0, f)
        it.setIcon(0, color_icon(run_color(run)))
        it.setCheckState(0, Qt.Checked if (run.visible or run is self.history.current) else Qt.Unchecked)
        mark, color = STATUS_MARKS.get(run.status, ("?", None))
        it.setText(1, mark)
        it.setTextAlignment(1, Qt.AlignCenter)
        it.setForeground(1, QBrush(QColor(color)) if color else self.tree.palette().text())
        wall = run.stats.get("wall_time")
        it.setText(2, wall_text(wall) if wall is not None else "")
        it.setToolTip(2, f"{wall:.3g} s of wall-clock time" if wall is not None else "")
        tip = run.summary()
        it.setToolTip(0, tip)
        health = run.health()
        it.setToolTip(1, run.status + (f": {run.error}" if run.error else "") + (f"\n{health}" if health else ""))

    def update_run(self, run) -> None:
        """Refresh one run's row (status or row count changed)."""
        for i in range(self.tree.topLevelItemCount()):
            it = self.tree.topLevelItem(i)
            if it.data(0, Qt.UserRole) == run.id:
                with QSignalBlocker(self.tree):
                    self._fill(it, run)
        self.remove_btn.setEnabled(self.history.current is not None and not self.history.current.active)

    def _run_of(self, it):
        return self.history.by_id(it.data(0, Qt.UserRole)) if it is not None else None

    def _checked(self, it, col) -> None:
        run = self._run_of(it)
        if run is not None and col == 0:
            self.history.set_visible(run, it.checkState(0) == Qt.Checked)

    def _current(self, it, _prev) -> None:
        run = self._run_of(it)
        if run is not None and run is not self.history.current:
            self.history.set_current(run)

    def _remove_current(self) -> None:
        run = self.history.current
        if run is not None and not run.active:
            self.session.remove_run(run)

    def _menu(self, pos) -> None:
        it = self.tree.itemAt(pos)
        run = self._run_of(it)
        if run is None:
            return
        m = QMenu(self)
        a = QAction("Make current", m)
        a.triggered.connect(lambda: self.history.set_current(run))
        m.addAction(a)
        a = QAction("Export results CSV…", m)
        a.setEnabled(run.n_rows > 0)
        a.triggered.connect(lambda: self.exportRequested.emit(run))
        m.addAction(a)
        a = QAction("Remove", m)
        a.setEnabled(not run.active)
        a.triggered.connect(lambda: self.session.remove_run(run))
        m.addAction(a)
        m.exec(self.tree.viewport().mapToGlobal(pos))
