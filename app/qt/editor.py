"""The mechanism editor dock: topology summary, validation, the item tree, properties."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (
    QLabel, QMenu, QSplitter, QStyle, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget,
)

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session.document import Selection
from linkwork.app.session.edits import motion_summary

from .properties import PropertyPanel

ROLE = Qt.UserRole + 1


class SummaryLabel(QLabel):
    """Topology summary: bodies, joints, loops, DOF, redundant constraints."""

    def __init__(self, session: Session, parent: QWidget | None = None, compact: bool = False):
        super().__init__(parent)
        self.session = session
        self.compact = compact
        self.setObjectName("topologySummary")
        self.setTextFormat(Qt.RichText)
        self._subs = Subscriptions()
        self._subs.connect(session.document.validation_changed, lambda v: self.refresh())
        self.refresh()

    def close_panel(self) -> None:
        self._subs.disconnect_all()

    def refresh(self) -> None:
        v = self.session.document.validation
        s = v.summary
        doc = self.session.document
        if doc.is_empty:
            self.setText("<span style='color:#777'>empty mechanism</span>")
            self.setToolTip("")
            return
        state = ("<span style='color:#2e7d32'>✔ valid</span>" if v.ok
                 else "<span style='color:#c62828'>✖ refused</span>")
        text = s.text() if s is not None else ""
        self.setText(f"{text} &nbsp; {state}" if self.compact else f"<b>{text}</b><br>{state}")
        tip = "Bodies, joints, independent loops, degrees of freedom and redundant constraint equations"
        if s is not None and s.cut_joints:
            tip += f"\nCut joints: {', '.join(s.cut_joints)}"
        if not v.ok:
            tip += f"\n\n{v.message}"
        self.setToolTip(tip)


class MechanismTree(QTreeWidget):
    deleteRequested = Signal()

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("mechanismTree")
        self.session = session
        self.doc = session.document
        self._subs = Subscriptions()
        self.setHeaderLabels(["Item", "Details"])
        self.setColumnWidth(0, 120)
        self.header().setMinimumSectionSize(60)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setContextMenuPolicy(Qt.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.itemSelectionChanged.connect(self._picked)
        self._items: dict[tuple[str, str], QTreeWidgetItem] = {}
        self._subs.connect(self.doc.state_changed, lambda s: self.rebuild())
        self._subs.connect(self.doc.validation_changed, lambda v: self._mark_error())
        self._subs.connect(self.doc.selection_changed, self._on_selection)
        self.rebuild()

    def close_panel(self) -> None:
        self._subs.disconnect_all()

    def rebuild(self) -> None:
        spec = self.doc.spec
        expanded = {self.topLevelItem(i).text(0).split(" ")[0]: self.topLevelItem(i).isExpanded()
                    for i in range(self.topLevelItemCount())}
        with QSignalBlocker(self):
            self.clear()
            self._items.clear()
            # the mechanism's name (often the longest text here) and the group titles span
            # both columns: nothing to the right of them is cut off for a detail
            mech = QTreeWidgetItem([spec.name or "(unnamed)", ""])
            mech.setData(0, ROLE, ("mechanism", ""))
            mech.setToolTip(0, f"Mechanism: {spec.name or '(unnamed)'}"
                            + (f"\n{spec.description}" if spec.description else ""))
            self.addTopLevelItem(mech)
            mech.setFirstColumnSpanned(True)
            self._items[("mechanism", "")] = mech

            def group(title, n):
                it = QTreeWidgetItem([f"{title} ({n})", ""])
                it.setFlags(it.flags() & ~Qt.ItemIsSelectable)
                f = it.font(0)
                f.setBold(True)
                it.setFont(0, f)
                self.addTopLevelItem(it)
                it.setFirstColumnSpanned(True)
                it.setExpanded(expanded.get(title, True))
                return it

            gb = group("Bodies", len(spec.bodies))
            for b in spec.bodies:
                kind = b.shape.kind if b.shape is not None else "rod*"
                it = QTreeWidgetItem([b.name, f"{b.mass:g} kg, {kind}"])
                it.setData(0, ROLE, ("body", b.name))
                gb.addChild(it)
                self._items[("body", b.name)] = it
            gj = group("Joints", len(spec.joints))
            for j in spec.joints:
                it = QTreeWidgetItem([j.name, f"{j.type}: {j.parent} → {j.child}" + (" (cut)" if j.cut else "")])
                it.setData(0, ROLE, ("joint", j.name))
                gj.addChild(it)
                self._items[("joint", j.name)] = it
            if spec.forces:
                gf = group("Forces", len(spec.forces))
                for k, f in enumerate(spec.forces):
                    what = f"{f.body1} – {f.body2}" if f.type == "spring" else f"on {f.joint}"
                    it = QTreeWidgetItem([f"{k + 1}. {f.type}", what])
                    it.setData(0, ROLE, ("force", str(k)))
                    gf.addChild(it)
                    self._items[("force", str(k))] = it
            if spec.couplings:
                gg = group("Gears", len(spec.couplings))
                for c in spec.couplings:
                    it = QTreeWidgetItem([c.name, f"{c.driver} → {c.driven}, ratio {c.ratio:g}"])
                    it.setData(0, ROLE, ("gear", c.name))
                    it.setToolTip(1, f"q_{c.driver} = {c.ratio:g} · q_{c.driven} (both from t = 0)")
                    gg.addChild(it)
                    self._items[("gear", c.name)] = it
            if spec.drivers:
                gd = group("Drivers", len(spec.drivers))
                for d in spec.drivers:
                    it = QTreeWidgetItem([d.name, f"{d.joint}: {motion_summary(d.motion)}"])
                    it.setData(0, ROLE, ("driver", d.name))
                    it.setToolTip(1, f"{d.joint}'s coordinate follows f(t) - f(0) (docs/file-format.md, \"Drivers\")")
                    gd.addChild(it)
                    self._items[("driver", d.name)] = it
            if self.doc.pivots:
                gp = group("Ground pivots", len(self.doc.pivots))
                for k, p in enumerate(self.doc.pivots):
                    it = QTreeWidgetItem([f"pivot {k + 1}", f"({p[0]:.3g}, {p[1]:.3g}, {p[2]:.3g})"])
                    it.setData(0, ROLE, ("pivot", str(k)))
                    gp.addChild(it)
                    self._items[("pivot", str(k))] = it
        self._mark_error()
        self._on_selection(self.doc.selection)
        self.fit_name_column()

    #: the names column never takes more than this share of the tree's width
    NAME_SHARE = 0.6

    def name_width(self) -> int:
        """Width the longest body, joint, force, gear or pivot name needs in the first column."""
        need = 0
        # a child starts one indentation in, two with the root's expand arrows
        indent = self.indentation() * (2 if self.rootIsDecorated() else 1)
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            for k in range(top.childCount()):
                it = top.child(k)
                need = max(need, QFontMetrics(it.font(0)).horizontalAdvance(it.text(0)))
        # the item's text margins on both sides and a little air
        return need + indent + 2 * (self.style().pixelMetric(QStyle.PM_FocusFrameHMargin) + 1) + 8

    def fit_name_column(self) -> None:
        """Widen the names column to its longest name, leaving the details at least 40 %."""
        room = int(self.viewport().width() * self.NAME_SHARE)
        self.setColumnWidth(0, max(60, min(self.name_width(), room)))

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        self.fit_name_column()

    def _mark_error(self) -> None:
        v = self.doc.validation
        for (kind, name), it in self._items.items():
            bad = (not v.ok and v.target is not None and v.target.kind == kind and v.target.name == name)
            for c in (0, 1):
                it.setForeground(c, QBrush(QColor("#c62828")) if bad else QBrush())
            it.setToolTip(0, v.message if bad else "")
            it.setToolTip(1, v.message if bad else "")

    def _on_selection(self, sel) -> None:
        with QSignalBlocker(self):
            self.clearSelection()
            if sel is not None:
                it = self._items.get((sel.kind, sel.name))
                if it is not None:
                    it.setSelected(True)
                    self.scrollToItem(it)
                    self.setCurrentItem(it)

    def _picked(self) -> None:
        items = self.selectedItems()
        if not items:
            return
        data = items[0].data(0, ROLE)
        if data:
            self.doc.select(Selection(*data))

    def _menu(self, pos) -> None:
        it = self.itemAt(pos)
        if it is None or not it.data(0, ROLE):
            return
        kind, name = it.data(0, ROLE)
        self.doc.select(Selection(kind, name))
        if kind == "mechanism":
            return
        m = QMenu(self)
        act = QAction("Delete", m)
        act.triggered.connect(self.deleteRequested.emit)
        m.addAction(act)
        m.exec(self.viewport().mapToGlobal(pos))

    def keyPressEvent(self, ev):  # noqa: N802
        if ev.key() in (Qt.Key_Delete, Qt.Key_Backspace):
            self.deleteRequested.emit()
            return
        super().keyPressEvent(ev)


class EditorPanel(QWidget):
    """Summary on top, then the tree and the property panel in a splitter."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("EditorPanel")
        self.session = session
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)
        self.summary = SummaryLabel(session)
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("QLabel#topologySummary { background: #f3f5f8; border: 1px solid #dde2ea;"
                                   " border-radius: 4px; padding: 4px; }")
        lay.addWidget(self.summary)
        split = QSplitter(Qt.Vertical)
        self.tree = MechanismTree(session)
        self.tree.deleteRequested.connect(session.sketch.delete_selection)
        split.addWidget(self.tree)
        self.properties = PropertyPanel(session)
        split.addWidget(self.properties)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([220, 360])
        lay.addWidget(split, 1)

    def close_panel(self) -> None:
        self.summary.close_panel()
        self.tree.close_panel()
        self.properties.close_panel()
