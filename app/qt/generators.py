"""The generator dialog: pick a family, set its parameters, see it live, create it."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QListWidget,
    QListWidgetItem, QSizePolicy, QStackedWidget, QVBoxLayout, QWidget,
)

from linkwork.app.session.generators import GENERATORS, Generator
from linkwork.app.session.sketch import PLANES, Plane
from linkwork.app.session.validation import validate

from .sketch import paint_mechanism
from .widgets import NumberEdit


def _oblique() -> Plane:
    """An oblique projection for previews of spatial mechanisms (y up)."""
    d = np.array([-0.55, -0.45, -1.0])
    d /= np.linalg.norm(d)
    up = np.array([0.0, 1.0, 0.0])
    u = np.cross(up, -d)
    u = -u / np.linalg.norm(u)
    v = np.cross(-d, u)
    v = -v / np.linalg.norm(v) if v[1] < 0 else v / np.linalg.norm(v)
    return Plane("oblique", "oblique", tuple(u), tuple(v), tuple(-d))


OBLIQUE = _oblique()


def preview_plane(spec) -> Plane:
    """XY for mechanisms that stay in the xy-plane, an oblique view otherwise."""
    for b in spec.bodies:
        if abs(b.position[2]) > 1e-9:
            return OBLIQUE
    for j in spec.joints:
        if abs(j.anchor[2]) > 1e-9:
            return OBLIQUE
        if j.type in ("revolute", "cylindrical") and abs(abs(j.axis[2]) - 1) > 1e-9:
            return OBLIQUE
        if j.type in ("spherical", "universal"):
            return OBLIQUE
    return PLANES["xy"]


class MechanismPreview(QWidget):
    """Paints a spec, fitted to the widget."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("MechanismPreview")
        self.spec = None
        self.plane = PLANES["xy"]
        self.setMinimumSize(260, 220)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(380, 320)

    def set_spec(self, spec) -> None:
        self.spec = spec
        self.plane = preview_plane(spec) if spec is not None else PLANES["xy"]
        self.update()

    def paintEvent(self, ev):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.fillRect(self.rect(), QColor("#ffffff"))
        p.setPen(QColor("#d5d9e0"))
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        spec = self.spec
        if spec is None or not spec.bodies:
            p.end()
            return
        pts = [j.anchor for j in spec.joints] + [b.position for b in spec.bodies]
        for b in spec.bodies:
            if b.shape is not None and b.shape.kind == "rod":
                pts += [b.shape.p_from, b.shape.p_to]
        P = self.plane.project_many(np.array(pts, float))
        lo, hi = P.min(axis=0), P.max(axis=0)
        ext = np.maximum(hi - lo, 1e-6)
        m = 28.0
        w, h = self.width(), self.height()
        s = float(min((w - 2 * m) / ext[0], (h - 2 * m) / ext[1]))
        c = 0.5 * (lo + hi)

        def to_widget(a, b):
            return QPointF(w / 2 + (a - c[0]) * s, h / 2 - (b - c[1]) * s)

        paint_mechanism(p, spec, (), self.plane, to_widget, labels=len(spec.bodies) <= 12)
        p.setPen(QColor("#888"))
        p.drawText(8, h - 8, "XY plane" if self.plane.key == "xy" else "oblique view")
        p.end()


class GeneratorForm(QWidget):
    """The parameter form of one generator."""

    def __init__(self, gen: Generator, changed, parent: QWidget | None = None):
        super().__init__(parent)
        self.gen = gen
        form = QFormLayout(self)
        form.setLabelAlignment(Qt.AlignRight | Qt.AlignVCenter)
        desc = QLabel(gen.description)
        desc.setWordWrap(True)
        desc.setStyleSheet("color: #555;")
        form.addRow(desc)
        self.widgets = {}
        for p in gen.params:
            if p.kind == "bool":
                w = QCheckBox()
                w.setChecked(bool(p.default))
                w.toggled.connect(changed)
            elif p.kind == "choice":
                w = QComboBox()
                for value, label in p.choices:
                    w.addItem(label, value)
                w.setCurrentIndex(max(0, w.findData(p.default)))
                w.currentIndexChanged.connect(changed)
            else:
                w = NumberEdit(p.default, integer=p.kind == "int", live=True)
                w.valueEdited.connect(changed)
            w.setObjectName(f"gen_{gen.key}_{p.name}")
            if p.tooltip:
                w.setToolTip(p.tooltip)
            form.addRow(p.label, w)
            self.widgets[p.name] = w

    def values(self) -> dict:
        out = {}
        for p in self.gen.params:
            w = self.widgets[p.name]
            if p.kind == "bool":
                out[p.name] = w.isChecked()
            elif p.kind == "choice":
                out[p.name] = w.currentData()
            else:
                out[p.name] = int(w.value()) if p.kind == "int" else float(w.value())
        return out

    def set_value(self, name: str, value) -> None:
        p = next(q for q in self.gen.params if q.name == name)
        w = self.widgets[name]
        if p.kind == "bool":
            w.setChecked(bool(value))
        elif p.kind == "choice":
            w.setCurrentIndex(w.findData(value))
        else:
            w.setValue(value)
            w.valueEdited.emit(float(value))


class GeneratorDialog(QDialog):
    """Generators on the left, parameters in the middle, live preview on the right."""

    def __init__(self, parent: QWidget | None = None, initial: str = "chain"):
        super().__init__(parent)
        self.setObjectName("GeneratorDialog")
        self.setWindowTitle("New mechanism from a generator")
        self.spec = None
        lay = QVBoxLayout(self)
        body = QHBoxLayout()
        self.list = QListWidget()
        self.list.setObjectName("generatorList")
        self.list.setFixedWidth(170)
        self.stack = QStackedWidget()
        self.forms: dict[str, GeneratorForm] = {}
        for key, gen in GENERATORS.items():
            it = QListWidgetItem(gen.title)
            it.setData(Qt.UserRole, key)
            self.list.addItem(it)
            f = GeneratorForm(gen, self._schedule)
            self.forms[key] = f
            self.stack.addWidget(f)
        body.addWidget(self.list)
        mid = QVBoxLayout()
        mid.addWidget(self.stack, 1)
        body.addLayout(mid, 1)
        right = QVBoxLayout()
        self.preview = MechanismPreview()
        right.addWidget(self.preview, 1)
        self.info = QLabel()
        self.info.setObjectName("generatorInfo")
        self.info.setWordWrap(True)
        right.addWidget(self.info)
        body.addLayout(right, 2)
        lay.addLayout(body, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self.update_preview)
        self.list.currentRowChanged.connect(self._picked)
        keys = list(GENERATORS)
        self.list.setCurrentRow(keys.index(initial) if initial in keys else 0)
        self.resize(980, 520)

    @property
    def key(self) -> str:
        return self.list.currentItem().data(Qt.UserRole)

    def form(self) -> GeneratorForm:
        return self.forms[self.key]

    def _picked(self, row: int) -> None:
        self.stack.setCurrentIndex(row)
        self.update_preview()

    def _schedule(self, *_):
        self._timer.start()

    def update_preview(self) -> None:
        """Build the mechanism from the form now (the form's edits call this after 120 ms)."""
        self._timer.stop()
        ok_btn = self.buttons.button(QDialogButtonBox.Ok)
        try:
            spec = self.form().gen.build(self.form().values())
        except (ValueError, TypeError) as exc:
            self.spec = None
            self.preview.set_spec(None)
            self.info.setText(f"<span style='color:#c62828'>{exc}</span>")
            ok_btn.setEnabled(False)
            return
        v = validate(spec)
        self.spec = spec
        self.preview.set_spec(spec)
        summary = v.summary.text() if v.summary else ""
        state = "" if v.ok else f"<br><span style='color:#c62828'>{v.message}</span>"
        self.info.setText(f"<b>{spec.name}</b><br>{summary}{state}")
        ok_btn.setEnabled(v.ok)
