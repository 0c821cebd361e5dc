"""Property panel: edit the selected body, joint, force, gear, driver, pivot or the mechanism.

Every change is one undoable document edit.  Numbers are not clamped here:
the engine judges the mechanism, and its refusal is shown above the fields
with the offending field outlined.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton,
    QScrollArea, QStackedWidget, QVBoxLayout, QWidget,
)

from linkwork.engine.mechfile import GROUND, JOINT_TYPES, SHAPE_KINDS, ForceSpec, ShapeSpec

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session import edits
from linkwork.app.session.document import Selection
from linkwork.app.session.geometry import body_anchors

from .widgets import MessageBar, NumberEdit, VectorEdit, mark_invalid

INVALID_STYLE = "border: 2px solid #d9534f; border-radius: 3px;"


class _Page(QWidget):
    """A form bound to one kind of item.  Each page (mechanism, body, joint, force,
    ground pivot) fills its fields for a named item in ``load(name)``."""

    kind = ""

    def __init__(self, panel: "PropertyPanel"):
        super().__init__()
        self.panel = panel
        self.session = panel.session
        self.doc = panel.session.document
        self.name: str | None = None
        self.form = QFormLayout(self)
        self.form.setLabelAlignment(Qt.AlignRight | Qt.AlignVCenter)
        self.form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.form.setContentsMargins(4, 4, 4, 4)
        self.form.setVerticalSpacing(4)
        self.fields: dict[str, QWidget] = {}

    def row(self, label: str, key: str, w: QWidget) -> QWidget:
        self.form.addRow(label, w)
        self.fields[key] = w
        return w

    def set_row_visible(self, key: str, visible: bool) -> None:
        self.form.setRowVisible(self.fields[key], visible)

    def edit(self, text: str, fn, *args, select: Selection | None = None, **kw) -> None:
        """Apply ``fn(spec, *args, **kw)`` as one undoable edit; errors go to the panel."""
        try:
            new = fn(self.doc.spec, *args, **kw)
        except (ValueError, KeyError) as exc:
            self.panel.show_local_error(str(exc).strip("'\""))
            return
        self.panel.clear_local_error()
        self.doc.edit(text, new, select=select)

    def highlight(self, field: str | None) -> None:
        for key, w in self.fields.items():
            w.setStyleSheet(INVALID_STYLE if key == field else "")


class MechanismPage(_Page):
    kind = "mechanism"

    def __init__(self, panel):
        super().__init__(panel)
        self.name_edit = self.row("Name", "name", QLineEdit())
        self.name_edit.editingFinished.connect(
            lambda: self.edit("Rename mechanism", edits.set_mechanism, name=self.name_edit.text()))
        self.desc = self.row("Description", "description", QLineEdit())
        self.desc.editingFinished.connect(
            lambda: self.edit("Change description", edits.set_mechanism, description=self.desc.text()))
        self.gravity = self.row("Gravity [m/s²]", "gravity", VectorEdit(labels=("gx", "gy", "gz")))
        self.gravity.valueEdited.connect(lambda v: self.edit("Change gravity", edits.set_mechanism, gravity=v))

    def load(self, name: str) -> None:
        spec = self.doc.spec
        for w, v in ((self.name_edit, spec.name), (self.desc, spec.description)):
            if w.text() != v:
                w.setText(v)
        self.gravity.setValue(spec.gravity)


class BodyPage(_Page):
    kind = "body"

    def __init__(self, panel):
        super().__init__(panel)
        self.name_edit = self.row("Name", "name", QLineEdit())
        self.name_edit.setObjectName("bodyName")
        self.name_edit.editingFinished.connect(self._rename)
        self.mass = self.row("Mass [kg]", "mass", NumberEdit())
        self.mass.setObjectName("bodyMass")
        self.mass.valueEdited.connect(lambda v: self.edit(f"Set mass of {self.name}", edits.set_body,
                                                          self.name, mass=v))
        iw = QWidget()
        il = QVBoxLayout(iw)
        il.setContentsMargins(0, 0, 0, 0)
        il.setSpacing(2)
        self.moments = VectorEdit(labels=("Ixx", "Iyy", "Izz"))
        self.moments.setObjectName("bodyInertia")
        self.products = VectorEdit(labels=("Ixy", "Ixz", "Iyz"))
        il.addWidget(self.moments)
        il.addWidget(self.products)
        ib = QHBoxLayout()
        self.rod_btn = QPushButton("Slender rod")
        self.rod_btn.setToolTip("Inertia of a uniform rod of this mass, length and radius; it then follows "
                                "mass and length changes")
        self.rod_btn.clicked.connect(self._rod_inertia)
        self.unit_btn = QPushButton("diag(1,1,1)")
        self.unit_btn.setToolTip("Unit principal moments, as in the papers' test cases")
        self.unit_btn.clicked.connect(lambda: self.edit(f"Set inertia of {self.name}", edits.set_body,
                                                        self.name, inertia=edits.diag_inertia((1, 1, 1))))
        ib.addWidget(self.rod_btn)
        ib.addWidget(self.unit_btn)
        ib.addStretch(1)
        il.addLayout(ib)
        self.inertia_note = QLabel()
        self.inertia_note.setStyleSheet("color: #666; font-size: 8pt;")
        il.addWidget(self.inertia_note)
        self.row("Inertia [kg·m²]", "inertia", iw)
        self.moments.valueEdited.connect(self._inertia_edited)
        self.products.valueEdited.connect(self._inertia_edited)
        self.length = self.row("Length [m]", "length", NumberEdit())
        self.length.setObjectName("bodyLength")
        self.length.setToolTip("Moves the rod's far end along the rod; what hangs from that end moves "
                               "with it, a loop through it stretches")
        self.length.valueEdited.connect(lambda v: self.edit(f"Set length of {self.name}", edits.set_rod_length,
                                                            self.name, v))
        self.position = self.row("Position [m]", "position", VectorEdit(labels=("x", "y", "z")))
        self.position.valueEdited.connect(lambda v: self.edit(f"Move centre of mass of {self.name}",
                                                              edits.set_body, self.name, position=v))
        self.orientation = self.row("Orientation", "orientation", VectorEdit((1, 0, 0, 0),
                                                                             labels=("w", "x", "y", "z")))
        self.orientation.setToolTip("Unit quaternion (w, x, y, z) rotating body axes into world axes; "
                                    "normalised when entered")
        self.orientation.valueEdited.connect(self._orientation)
        self.velocity = self.row("Velocity [m/s]", "velocity", VectorEdit(labels=("vx", "vy", "vz")))
        self.velocity.valueEdited.connect(lambda v: self.edit(f"Set velocity of {self.name}", edits.set_body,
                                                              self.name, velocity=v))
        self.omega = self.row("Angular vel. [rad/s]", "angular_velocity", VectorEdit(labels=("wx", "wy", "wz")))
        self.omega.valueEdited.connect(lambda v: self.edit(f"Set angular velocity of {self.name}",
                                                           edits.set_body, self.name, angular_velocity=v))
        self.shape_kind = self.row("Shape", "shape", QComboBox())
        self.shape_kind.addItem("default (rod between joints)", None)
        for k in SHAPE_KINDS:
            self.shape_kind.addItem(k, k)
        self.shape_kind.activated.connect(self._shape_kind)
        self.sh_from = self.row("  from [m]", "shape.from", VectorEdit())
        self.sh_to = self.row("  to [m]", "shape.to", VectorEdit())
        self.sh_radius = self.row("  radius [m]", "shape.radius", NumberEdit())
        self.sh_size = self.row("  size [m]", "shape.size", VectorEdit(labels=("sx", "sy", "sz")))
        self.sh_length = self.row("  length [m]", "shape.length", NumberEdit())
        self.sh_axis = self.row("  axis", "shape.axis", VectorEdit())
        pw = QWidget()
        pl = QHBoxLayout(pw)
        pl.setContentsMargins(0, 0, 0, 0)
        self.sh_path = QLineEdit()
        browse = QPushButton("…")
        browse.setFixedWidth(28)
        browse.clicked.connect(self._browse_mesh)
        pl.addWidget(self.sh_path)
        pl.addWidget(browse)
        self.row("  mesh file", "shape.path", pw)
        self.sh_scale = self.row("  scale", "shape.scale", NumberEdit())
        for key, w in (("p_from", self.sh_from), ("p_to", self.sh_to), ("size", self.sh_size),
                       ("axis", self.sh_axis)):
            w.valueEdited.connect(lambda v, k=key: self._shape_field(k, v))
        for key, w in (("radius", self.sh_radius), ("length", self.sh_length), ("scale", self.sh_scale)):
            w.valueEdited.connect(lambda v, k=key: self._shape_field(k, v))
        self.sh_path.editingFinished.connect(lambda: self._shape_field("path", self.sh_path.text()))

    def body(self):
        return self.doc.spec.body(self.name)

    def load(self, name: str) -> None:
        self.name = name
        b = self.body()
        if self.name_edit.text() != b.name:
            self.name_edit.setText(b.name)
        self.mass.setValue(b.mass)
        I = np.array(b.inertia)
        self.moments.setValue((I[0, 0], I[1, 1], I[2, 2]))
        self.products.setValue((I[0, 1], I[0, 2], I[1, 2]))
        rod = b.shape is not None and b.shape.kind == "rod"
        self.rod_btn.setEnabled(rod)
        self.inertia_note.setText("slender rod: follows mass and length" if edits.is_rod_inertia(b) else "")
        self.set_row_visible("length", rod)
        if rod:
            self.length.setValue(edits.rod_length(b))
        self.position.setValue(b.position)
        self.orientation.setValue(b.orientation)
        self.velocity.setValue(b.velocity)
        self.omega.setValue(b.angular_velocity)
        s = b.shape
        kind = None if s is None else s.kind
        with QSignalBlocker(self.shape_kind):
            self.shape_kind.setCurrentIndex(self.shape_kind.findData(kind) if kind else 0)
        vis = {"shape.from": kind == "rod", "shape.to": kind == "rod",
               "shape.radius": kind in ("rod", "sphere", "cylinder"), "shape.size": kind == "box",
               "shape.length": kind == "cylinder", "shape.axis": kind == "cylinder",
               "shape.path": kind == "mesh", "shape.scale": kind == "mesh"}
        for key, v in vis.items():
            self.set_row_visible(key, v)
        if s is not None:
            if s.p_from is not None:
                self.sh_from.setValue(s.p_from)
            if s.p_to is not None:
                self.sh_to.setValue(s.p_to)
            self.sh_radius.setValue(s.radius)
            if s.size is not None:
                self.sh_size.setValue(s.size)
            self.sh_length.setValue(s.length)
            if s.axis is not None:
                self.sh_axis.setValue(s.axis)
            if self.sh_path.text() != (s.path or ""):
                self.sh_path.setText(s.path or "")
            self.sh_scale.setValue(s.scale)

    def _rename(self) -> None:
        new = self.name_edit.text().strip()
        if new and new != self.name:
            self.edit(f"Rename body {self.name} to {new}", edits.set_body, self.name, name=new,
                      select=Selection("body", new))

    def _inertia_edited(self, _v) -> None:
        m, p = self.moments.value(), self.products.value()
        I = ((m[0], p[0], p[1]), (p[0], m[1], p[2]), (p[1], p[2], m[2]))
        self.edit(f"Set inertia of {self.name}", edits.set_body, self.name, inertia=I)

    def _rod_inertia(self) -> None:
        b = self.body()
        s = b.shape
        self.edit(f"Slender-rod inertia for {self.name}", edits.set_body, self.name,
                  inertia=edits.rod_inertia_body(b, s.p_from, s.p_to, s.radius))

    def _orientation(self, q) -> None:
        n = math.hypot(*(float(x) for x in q))  # no overflow: float(x) ** 2 raises above 1.3e154
        if n > 0:
            q = tuple(float(x) / n for x in q)
        self.edit(f"Set orientation of {self.name}", edits.set_body, self.name, orientation=q)

    def _shape_kind(self, i: int) -> None:
        kind = self.shape_kind.itemData(i)
        b = self.body()
        if kind is None:
            shape = None
        elif kind == "rod":
            an = body_anchors(self.doc.spec).get(b.name, [])
            x = np.asarray(b.position, float)
            if len(an) >= 2:
                p0, p1 = an[0], an[1]
            elif len(an) == 1:
                p0, p1 = an[0], 2 * x - an[0]
            else:
                p0, p1 = x - [0.5, 0, 0], x + [0.5, 0, 0]
            shape = ShapeSpec("rod", p_from=edits.vec(p0), p_to=edits.vec(p1), radius=0.03)
        elif kind == "box":
            shape = ShapeSpec("box", size=(0.2, 0.1, 0.1))
        elif kind == "sphere":
            shape = ShapeSpec("sphere", radius=0.05)
        elif kind == "cylinder":
            shape = ShapeSpec("cylinder", radius=0.05, length=0.2, axis=(0.0, 0.0, 1.0))
        else:
            shape = ShapeSpec("mesh", path="", scale=1.0)
        self.edit(f"Change shape of {self.name}", edits.set_body, self.name, shape=shape)

    def _shape_field(self, key: str, v) -> None:
        s = self.body().shape
        if s is None:
            return
        if isinstance(v, tuple):
            v = edits.vec(v)
        self.edit(f"Change shape of {self.name}", edits.set_body, self.name, shape=replace(s, **{key: v}))

    def _browse_mesh(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Mesh file", "", "Meshes (*.obj *.obj.gz);;All files (*)")
        if path:
            base = self.doc.path.parent if self.doc.path else None
            if base is not None:
                try:
                    import os

                    path = os.path.relpath(path, base)
                except ValueError:
                    pass
            self._shape_field("path", path)


class JointPage(_Page):
    kind = "joint"

    def __init__(self, panel):
        super().__init__(panel)
        self.name_edit = self.row("Name", "name", QLineEdit())
        self.name_edit.setObjectName("jointName")
        self.name_edit.editingFinished.connect(self._rename)
        self.type = self.row("Type", "type", QComboBox())
        self.type.setObjectName("jointType")
        for t in JOINT_TYPES:
            self.type.addItem(t, t)
        self.type.activated.connect(self._type)
        self.parent_combo = self.row("Parent", "parent", QComboBox())
        self.child_combo = self.row("Child", "child", QComboBox())
        self.parent_combo.activated.connect(lambda i: self._link("parent", self.parent_combo.itemData(i)))
        self.child_combo.activated.connect(lambda i: self._link("child", self.child_combo.itemData(i)))
        self.anchor = self.row("Anchor [m]", "anchor", VectorEdit(labels=("x", "y", "z")))
        self.anchor.setObjectName("jointAnchor")
        self.anchor.setToolTip("The joint's world point at t = 0; rod ends and other joints on it move too")
        self.anchor.valueEdited.connect(lambda v: self.edit(f"Move joint {self.name}", edits.set_joint,
                                                            self.name, anchor=v))
        self.axis = self.row("Axis", "axis", VectorEdit(labels=("ax", "ay", "az")))
        self.axis.valueEdited.connect(lambda v: self.edit(f"Set axis of {self.name}", edits.set_joint,
                                                          self.name, axis=v))
        self.a1 = self.row("Axis a1 (parent)", "axes", VectorEdit())
        self.a2 = self.row("Axis a2 (child)", "axes2", VectorEdit())
        self.a1.valueEdited.connect(self._axes)
        self.a2.valueEdited.connect(self._axes)
        self.rate_holder = QWidget()
        self.rate_layout = QHBoxLayout(self.rate_holder)
        self.rate_layout.setContentsMargins(0, 0, 0, 0)
        self.rate_edit: VectorEdit | None = None
        self.row("Initial rate", "rate", self.rate_holder)
        self.cut = self.row("Cut joint", "cut", QCheckBox("open the loop here"))
        self.cut.setToolTip("Choose this joint as the one that opens its loop (otherwise the engine chooses)")
        self.cut.toggled.connect(lambda on: self.edit(f"{'Cut' if on else 'Uncut'} joint {self.name}",
                                                      edits.set_joint, self.name, cut=bool(on)))
        fb = QHBoxLayout()
        self.spring_btn = QPushButton("Add joint spring")
        self.spring_btn.clicked.connect(self._add_spring)
        self.torque_btn = QPushButton("Add joint torque")
        self.torque_btn.clicked.connect(self._add_torque)
        self.gear_btn = QPushButton("Add gear")
        self.gear_btn.setObjectName("addGear")
        self.gear_btn.setToolTip("Gear this joint (driver) to another one-freedom joint (driven): "
                                 "q_driver = ratio · q_driven")
        self.gear_btn.clicked.connect(self._add_gear)
        self.driver_btn = QPushButton("Add driver")
        self.driver_btn.setObjectName("addDriver")
        self.driver_btn.setToolTip("Drive this joint: its coordinate follows a prescribed motion (a motor at "
                                   "constant rate, harmonic, or a table); the effort it takes is a result column")
        self.driver_btn.clicked.connect(self._add_driver)
        fb.addWidget(self.spring_btn)
        fb.addWidget(self.torque_btn)
        fb.addWidget(self.gear_btn)
        fb.addWidget(self.driver_btn)
        fw = QWidget()
        fw.setLayout(fb)
        fb.setContentsMargins(0, 0, 0, 0)
        self.row("Forces", "forces", fw)

    def joint(self):
        return self.doc.spec.joint(self.name)

    def load(self, name: str) -> None:
        self.name = name
        j = self.joint()
        if self.name_edit.text() != j.name:
            self.name_edit.setText(j.name)
        with QSignalBlocker(self.type):
            self.type.setCurrentIndex(self.type.findData(j.type))
        names = [GROUND] + [b.name for b in self.doc.spec.bodies]
        for combo, cur in ((self.parent_combo, j.parent), (self.child_combo, j.child)):
            with QSignalBlocker(combo):
                combo.clear()
                for n in names:
                    combo.addItem(n, n)
                i = combo.findData(cur)
                if i < 0:
                    combo.addItem(f"{cur} (unknown)", cur)
                    i = combo.count() - 1
                combo.setCurrentIndex(i)
        self.anchor.setValue(j.anchor)
        field = JOINT_TYPES[j.type][1]
        self.set_row_visible("axis", field == "axis")
        self.set_row_visible("axes", field == "axes")
        self.set_row_visible("axes2", field == "axes")
        if j.axis is not None:
            self.axis.setValue(j.axis)
        if j.axes is not None:
            self.a1.setValue(j.axes[0])
            self.a2.setValue(j.axes[1])
        dof = JOINT_TYPES[j.type][0]
        if self.rate_edit is None or len(self.rate_edit.edits) != dof:
            if self.rate_edit is not None:
                self.rate_edit.setParent(None)
                self.rate_edit.deleteLater()
            self.rate_edit = VectorEdit((0.0,) * dof, labels=[f"q̇{k + 1}" for k in range(dof)])
            self.rate_edit.setObjectName("jointRate")
            self.rate_edit.valueEdited.connect(self._rate)
            self.rate_layout.addWidget(self.rate_edit)
        self.rate_edit.setValue(j.rate if j.rate is not None else (0.0,) * dof)
        self.set_row_visible("rate", dof > 0)
        with QSignalBlocker(self.cut):
            self.cut.setChecked(j.cut)
        self.spring_btn.setEnabled(dof == 1)
        self.torque_btn.setEnabled(dof > 0)
        free = edits.free_joints(self.doc.spec)  # one-freedom, in no gear, under no driver
        self.gear_btn.setEnabled(j.name in free and len(free) > 1)
        self.driver_btn.setEnabled(j.name in free)

    def _rename(self) -> None:
        new = self.name_edit.text().strip()
        if new and new != self.name:
            self.edit(f"Rename joint {self.name} to {new}", edits.set_joint, self.name, name=new,
                      select=Selection("joint", new))

    def _type(self, i: int) -> None:
        t = self.type.itemData(i)
        normal = self.session.sketch.plane.n
        self.edit(f"Make {self.name} {t}", edits.set_joint, self.name, type=t, normal=normal)

    def _link(self, which: str, body: str) -> None:
        self.edit(f"Change {which} of {self.name}", edits.set_joint, self.name, **{which: body})

    def _axes(self, _v) -> None:
        self.edit(f"Set axes of {self.name}", edits.set_joint, self.name,
                  axes=(self.a1.value(), self.a2.value()))

    def _rate(self, v) -> None:
        rate = None if all(x == 0 for x in v) else tuple(v)
        self.edit(f"Set initial rate of {self.name}", edits.set_joint, self.name, rate=rate)

    def _add_spring(self) -> None:
        f = ForceSpec("joint-spring", joint=self.name, stiffness=10.0, damping=0.0, rest=0.0)
        self.edit(f"Add joint spring on {self.name}", edits.add_force, f,
                  select=Selection("force", str(len(self.doc.spec.forces))))

    def _add_torque(self) -> None:
        dof = JOINT_TYPES[self.joint().type][0]
        f = ForceSpec("joint-torque", joint=self.name, value=(1.0,) + (0.0,) * (dof - 1))
        self.edit(f"Add joint torque on {self.name}", edits.add_force, f,
                  select=Selection("force", str(len(self.doc.spec.forces))))


    def _add_gear(self) -> None:
        name = edits.next_gear_name(self.doc.spec)
        self.edit(f"Add gear {name} on {self.name}", edits.add_gear, self.name, name=name,
                  select=Selection("gear", name))

    def _add_driver(self) -> None:
        name = edits.next_driver_name(self.doc.spec)
        self.edit(f"Add driver {name} on {self.name}", edits.add_driver, self.name, name=name,
                  select=Selection("driver", name))


class GearPage(_Page):
    """A gear pair (docs/file-format.md, "Couplings"): driver, driven, ratio.  Any
    combination may be entered; the loader's rules judge it (one-freedom joints,
    each geared once, finite non-zero ratio) and its refusal is shown above."""

    kind = "gear"

    def __init__(self, panel):
        super().__init__(panel)
        self.name_edit = self.row("Name", "name", QLineEdit())
        self.name_edit.setObjectName("gearName")
        self.name_edit.editingFinished.connect(self._rename)
        self.driver = self.row("Driver joint", "driver", QComboBox())
        self.driver.setObjectName("gearDriver")
        self.driven = self.row("Driven joint", "driven", QComboBox())
        self.driven.setObjectName("gearDriven")
        self.ratio = self.row("Ratio", "ratio", NumberEdit())
        self.ratio.setObjectName("gearRatio")
        self.ratio.setToolTip("q_driver = ratio · q_driven, both measured from t = 0 (negative: external gears "
                              "turn the other way)")
        self.driver.activated.connect(lambda i: self._set(driver=self.driver.itemData(i)))
        self.driven.activated.connect(lambda i: self._set(driven=self.driven.itemData(i)))
        self.ratio.valueEdited.connect(lambda v: self._set(ratio=v))
        note = QLabel("A gear pair between two one-freedom joints (revolute or prismatic). Formulations "
                      "that cannot honour a gear refuse the run; dense honours it.")
        note.setWordWrap(True)
        note.setStyleSheet("color: #666;")
        self.form.addRow(note)

    def load(self, name: str) -> None:
        self.name = name
        c = self.doc.spec.coupling(name)
        if self.name_edit.text() != c.name:
            self.name_edit.setText(c.name)
        for combo, cur in ((self.driver, c.driver), (self.driven, c.driven)):
            with QSignalBlocker(combo):
                combo.clear()
                for j in self.doc.spec.joints:
                    combo.addItem(f"{j.name} ({j.type})", j.name)
                i = combo.findData(cur)
                if i < 0:
                    combo.addItem(f"{cur} (unknown)", cur)
                    i = combo.count() - 1
                combo.setCurrentIndex(i)
        self.ratio.setValue(c.ratio)

    def _set(self, **kw) -> None:
        self.edit(f"Change gear {self.name}", edits.set_gear, self.name, **kw)

    def _rename(self) -> None:
        new = self.name_edit.text().strip()
        if new and new != self.name:
            self.edit(f"Rename gear {self.name} to {new}", edits.set_gear, self.name, name=new,
                      select=Selection("gear", new))


def _numbers_text(values) -> str:
    return ", ".join(repr(float(x)) for x in values)


def _finite_numbers(edit: QLineEdit, old, panel: "PropertyPanel", what: str) -> tuple[float, ...] | None:
    """The field's finite numbers (comma- or semicolon-separated); anything else is flagged
    red, reverted to ``old`` and refused (None), as a number field does."""
    text = edit.text()
    try:
        vals = tuple(float(x) for x in text.replace(";", ",").split(",") if x.strip())
        if not all(math.isfinite(v) for v in vals):
            raise ValueError
    except ValueError:
        mark_invalid(edit, True)
        edit.setToolTip(f"not finite numbers separated by commas: {text.strip()!r}")
        edit.setText(_numbers_text(old) if old is not None else "")
        panel.show_local_error(f"{what} must be finite numbers separated by commas")
        return None
    mark_invalid(edit, False)
    return vals


class DriverPage(_Page):
    """A driver (docs/file-format.md, "Drivers"): the joint it drives and its motion law.
    Any combination may be entered; the loader's rules judge it (a one-freedom joint, one
    driver each, no gear on it, knots increasing) and its refusal is shown above."""

    kind = "driver"
    LAWS = (("constant-rate", "Constant rate (motor)"), ("harmonic", "Harmonic"), ("table", "Table (spline)"))

    def __init__(self, panel):
        super().__init__(panel)
        self.name_edit = self.row("Name", "name", QLineEdit())
        self.name_edit.setObjectName("driverName")
        self.name_edit.editingFinished.connect(self._rename)
        self.joint_combo = self.row("Joint", "joint", QComboBox())
        self.joint_combo.setObjectName("driverJoint")
        self.joint_combo.activated.connect(lambda i: self._set(joint=self.joint_combo.itemData(i)))
        self.kind_combo = self.row("Motion", "kind", QComboBox())
        self.kind_combo.setObjectName("driverKind")
        for key, label in self.LAWS:
            self.kind_combo.addItem(label, key)
        self.kind_combo.activated.connect(self._kind)
        self.rate = self.row("Rate [/s]", "rate", NumberEdit())
        self.rate.setToolTip("rad/s for a revolute joint, m/s for a prismatic one: f(t) = rate · t")
        self.amplitude = self.row("Amplitude", "amplitude", NumberEdit())
        self.frequency = self.row("Frequency [Hz]", "frequency", NumberEdit())
        self.phase = self.row("Phase [rad]", "phase", NumberEdit())
        self.offset = self.row("Offset", "offset", NumberEdit())
        for key in ("amplitude", "frequency", "phase", "offset"):
            self.fields[key].setToolTip("f(t) = offset + amplitude · sin(2π · frequency · t + phase)")
        self.t_edit = self.row("Table t [s]", "t", QLineEdit())
        self.q_edit = self.row("Table q", "q", QLineEdit())
        for key in ("t", "q"):
            self.fields[key].setToolTip("comma-separated; the natural cubic spline through the points (t, q), "
                                        "continued linearly beyond the first and last")
        self.rate.valueEdited.connect(lambda v: self._set(rate=v))
        for key in ("amplitude", "frequency", "phase", "offset"):
            self.fields[key].valueEdited.connect(lambda v, key=key: self._set(**{key: v}))
        self.t_edit.editingFinished.connect(lambda: self._table("t"))
        self.q_edit.editingFinished.connect(lambda: self._table("q"))
        note = QLabel("The joint's coordinate, measured from its value at t = 0, follows f(t) − f(0). "
                      "Its effort (torque or force) is a result column, driver.NAME.effort. Formulations "
                      "that cannot honour a driver refuse the run; dense honours it.")
        note.setWordWrap(True)
        note.setStyleSheet("color: #666;")
        self.form.addRow(note)

    def driver(self):
        for d in self.doc.spec.drivers:
            if d.name == self.name:
                return d
        raise KeyError(self.name)

    def load(self, name: str) -> None:
        self.name = name
        d = self.driver()
        m = d.motion
        if self.name_edit.text() != d.name:
            self.name_edit.setText(d.name)
        with QSignalBlocker(self.joint_combo):
            self.joint_combo.clear()
            for j in self.doc.spec.joints:
                self.joint_combo.addItem(f"{j.name} ({j.type})", j.name)
            i = self.joint_combo.findData(d.joint)
            if i < 0:
                self.joint_combo.addItem(f"{d.joint} (unknown)", d.joint)
                i = self.joint_combo.count() - 1
            self.joint_combo.setCurrentIndex(i)
        with QSignalBlocker(self.kind_combo):
            self.kind_combo.setCurrentIndex(max(0, self.kind_combo.findData(m.kind)))
        for kind, keys in edits.MOTION_FIELDS.items():
            for key in keys:
                self.set_row_visible(key, kind == m.kind)
        for key in ("rate", "amplitude", "frequency", "phase", "offset"):
            self.fields[key].setValue(getattr(m, key))
        for key in ("t", "q"):
            self.fields[key].setText(_numbers_text(getattr(m, key)))
            mark_invalid(self.fields[key], False)

    def _set(self, **kw) -> None:
        self.edit(f"Change driver {self.name}", edits.set_driver, self.name, **kw)

    def _kind(self, i: int) -> None:
        kind = self.kind_combo.itemData(i)
        m = self.driver().motion
        if kind == m.kind:
            return
        kw = {"kind": kind}
        if kind == "table" and not m.t:  # a table to start from: the present law at 0, 1, 2 s
            kw.update(t=(0.0, 1.0, 2.0), q=(0.0, 1.0, 0.0))
        self._set(**kw)

    def _table(self, key: str) -> None:
        old = getattr(self.driver().motion, key)
        vals = _finite_numbers(self.fields[key], old, self.panel, f"the table's {key}")
        if vals is not None and vals != old:
            self._set(**{key: vals})

    def _rename(self) -> None:
        new = self.name_edit.text().strip()
        if new and new != self.name:
            self.edit(f"Rename driver {self.name} to {new}", edits.set_driver, self.name, name=new,
                      select=Selection("driver", new))


class ForcePage(_Page):
    kind = "force"
    VALUE_TIP = "Generalised force: one number per freedom of the joint, comma-separated"

    def __init__(self, panel):
        super().__init__(panel)
        self.type_label = self.row("Type", "type", QLabel())
        self.body1 = self.row("Body 1", "body1", QComboBox())
        self.point1 = self.row("Point 1 [m]", "point1", VectorEdit())
        self.body2 = self.row("Body 2", "body2", QComboBox())
        self.point2 = self.row("Point 2 [m]", "point2", VectorEdit())
        self.rest_length = self.row("Rest length [m]", "rest_length", NumberEdit())
        self.joint_combo = self.row("Joint", "joint", QComboBox())
        self.stiffness = self.row("Stiffness", "stiffness", NumberEdit())
        self.damping = self.row("Damping", "damping", NumberEdit())
        self.rest = self.row("Rest position", "rest", NumberEdit())
        self.value = self.row("Value", "value", QLineEdit())
        self.value.setToolTip(self.VALUE_TIP)
        self.body1.activated.connect(lambda i: self._set(body1=self.body1.itemData(i)))
        self.body2.activated.connect(lambda i: self._set(body2=self.body2.itemData(i)))
        self.point1.valueEdited.connect(lambda v: self._set(point1=v))
        self.point2.valueEdited.connect(lambda v: self._set(point2=v))
        self.rest_length.valueEdited.connect(lambda v: self._set(rest_length=v))
        self.joint_combo.activated.connect(lambda i: self._set(joint=self.joint_combo.itemData(i)))
        self.stiffness.valueEdited.connect(lambda v: self._set(stiffness=v))
        self.damping.valueEdited.connect(lambda v: self._set(damping=v))
        self.rest.valueEdited.connect(lambda v: self._set(rest=v))
        self.value.editingFinished.connect(self._value)

    def load(self, name: str) -> None:
        self.name = name
        spec = self.doc.spec
        f = spec.forces[int(name)]
        self.type_label.setText(f.type)
        spring = f.type == "spring"
        for key in ("body1", "point1", "body2", "point2", "rest_length"):
            self.set_row_visible(key, spring)
        self.set_row_visible("joint", not spring)
        self.set_row_visible("stiffness", f.type != "joint-torque")
        self.set_row_visible("damping", f.type != "joint-torque")
        self.set_row_visible("rest", f.type == "joint-spring")
        self.set_row_visible("value", f.type == "joint-torque")
        names = [GROUND] + [b.name for b in spec.bodies]
        for combo, cur in ((self.body1, f.body1), (self.body2, f.body2)):
            with QSignalBlocker(combo):
                combo.clear()
                for n in names:
                    combo.addItem(n, n)
                combo.setCurrentIndex(max(0, combo.findData(cur)))
        with QSignalBlocker(self.joint_combo):
            self.joint_combo.clear()
            for j in spec.joints:
                self.joint_combo.addItem(j.name, j.name)
            self.joint_combo.setCurrentIndex(max(0, self.joint_combo.findData(f.joint)))
        if spring:
            self.point1.setValue(f.point1)
            self.point2.setValue(f.point2)
            self.rest_length.setValue(f.rest_length)
        self.stiffness.setValue(f.stiffness)
        self.damping.setValue(f.damping)
        self.rest.setValue(f.rest)
        if f.value is not None:
            self.value.setText(_numbers_text(f.value))
        mark_invalid(self.value, False)

    def _set(self, **kw) -> None:
        self.edit(f"Change force {int(self.name) + 1}", edits.set_force, int(self.name), **kw)

    def _value(self) -> None:
        """Finite numbers, comma-separated: anything else is flagged, reverted and not applied
        (as a number field does)."""
        old = self.doc.spec.forces[int(self.name)].value
        vals = _finite_numbers(self.value, old, self.panel, "the value")
        if vals is None:
            return
        self.value.setToolTip(self.VALUE_TIP)
        if vals != old:
            self._set(value=vals)


class PivotPage(_Page):
    kind = "pivot"

    def __init__(self, panel):
        super().__init__(panel)
        self.pos = self.row("Position [m]", "position", VectorEdit())
        self.pos.valueEdited.connect(self._move)
        note = QLabel("A ground pivot not used by any joint yet. Start a link on it with the Link tool, or "
                      "end a chain on it to close the loop to ground. Pivots are not saved.")
        note.setWordWrap(True)
        note.setStyleSheet("color: #666;")
        self.form.addRow(note)

    def load(self, name: str) -> None:
        self.name = name
        self.pos.setValue(self.doc.pivots[int(name)])

    def _move(self, v) -> None:
        piv = list(self.doc.pivots)
        piv[int(self.name)] = edits.vec(v)
        self.doc.edit("Move ground pivot", pivots=piv)


class _CurrentPageStack(QStackedWidget):
    """A stack whose size hints are those of the page shown (not the largest page)."""

    def sizeHint(self):  # noqa: N802
        w = self.currentWidget()
        return w.sizeHint() if w is not None else super().sizeHint()

    def minimumSizeHint(self):  # noqa: N802
        w = self.currentWidget()
        return w.minimumSizeHint() if w is not None else super().minimumSizeHint()


class PropertyPanel(QWidget):
    """Shows the page of the selected item and the engine's refusal next to it."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("PropertyPanel")
        self.session = session
        self.doc = session.document
        self._subs = Subscriptions()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: 600; font-size: 10pt; padding: 2px;")
        lay.addWidget(self.title)
        self.message = MessageBar()
        self.message.setObjectName("propertyMessage")
        self.message.linkActivated.connect(self._show_target)
        lay.addWidget(self.message)
        self.local = MessageBar()
        self.local.setObjectName("localMessage")
        lay.addWidget(self.local)
        self.stack = _CurrentPageStack()
        self.empty = QLabel("Select a body, joint, force, gear or driver in the list or the sketch to edit it.")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.empty.setStyleSheet("color: #666; padding: 6px;")
        self.stack.addWidget(self.empty)
        self.pages: dict[str, _Page] = {}
        for cls in (MechanismPage, BodyPage, JointPage, ForcePage, GearPage, DriverPage, PivotPage):
            p = cls(self)
            self.pages[cls.kind] = p
            self.stack.addWidget(p)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        scroll.setWidget(self.stack)
        lay.addWidget(scroll, 1)
        self._subs.connect(self.doc.selection_changed, lambda s: self.refresh())
        self._subs.connect(self.doc.state_changed, lambda s: self.refresh())
        self._subs.connect(self.doc.validation_changed, lambda v: self.refresh())
        self.refresh()

    def close_panel(self) -> None:
        self._subs.disconnect_all()

    def current_page(self) -> _Page | None:
        w = self.stack.currentWidget()
        return w if isinstance(w, _Page) else None

    def refresh(self) -> None:
        sel = self.doc.selection
        if sel is None or sel.kind not in self.pages:
            self.stack.setCurrentWidget(self.empty)
            self.title.setText("Properties")
        else:
            page = self.pages[sel.kind]
            try:
                page.load(sel.name)
            except (KeyError, IndexError, ValueError):
                self.stack.setCurrentWidget(self.empty)
                self.title.setText("Properties")
                return
            self.stack.setCurrentWidget(page)
            self.title.setText({"mechanism": "Mechanism", "body": f"Body {sel.name}", "joint": f"Joint {sel.name}",
                                "force": f"Force {int(sel.name) + 1}" if sel.kind == "force" else "",
                                "gear": f"Gear {sel.name}",
                                "driver": f"Driver {sel.name}",
                                "pivot": "Ground pivot"}.get(sel.kind, ""))
        self.stack.updateGeometry()
        self._show_validation()

    def _show_validation(self) -> None:
        v = self.doc.validation
        page = self.current_page()
        if page is not None:
            page.highlight(None)
        if v.ok or self.doc.is_empty:
            self.message.hide()
            return
        sel = self.doc.selection
        t = v.target
        here = sel is not None and t is not None and (
            (t.kind == sel.kind and t.name == sel.name) or (t.kind == "mechanism" and sel.kind == "mechanism"))
        if here:
            self.message.show_message("error", v.message, closable=False)
            if page is not None:
                page.highlight(_field_of(v.path))
        else:
            where = t.label() if t is not None else "mechanism"
            link = f" <a href='show'>Show {where}</a>" if t is not None and t.kind != "mechanism" else ""
            self.message.show_message("error", f"Refused: {v.message}{link}", closable=False)

    def _show_target(self, _link: str) -> None:
        t = self.doc.validation.target
        if t is not None:
            self.doc.select(Selection(t.kind, t.name))

    def show_local_error(self, text: str) -> None:
        self.local.show_message("warning", text)

    def clear_local_error(self) -> None:
        self.local.hide()


def _field_of(path: str) -> str | None:
    """``bodies[2].shape.radius`` -> ``shape.radius``; ``joints[0].axes[1]`` -> ``axes``."""
    import re

    m = re.match(r"^(?:bodies|joints|forces|couplings|drivers)\[\d+\]\.?([A-Za-z_.]*)", path or "")
    if not m:
        return None
    f = m.group(1)
    if f.startswith("shape."):
        return f.split("[")[0]
    if f.startswith("motion."):  # a driver's law: its field ("motion.rate" -> "rate")
        return f.split(".")[1]
    f = f.split(".")[0]
    return {"p_from": "shape.from"}.get(f, f) or None
