"""Edit > Assemble: set one joint's coordinate and let the loops follow (the engine's
mass-weighted assembly on the drawn branch, :mod:`app.session.assembly`)."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel

from linkwork.app.session.assembly import Posed, pose_by_joint, posable_joints

from .widgets import NumberEdit


class AssembleDialog(QDialog):
    """A one-freedom joint and how far to move it (degrees for a revolute joint, metres
    for a prismatic one), from the present pose."""

    def __init__(self, spec, parent=None, joint: str | None = None):
        super().__init__(parent)
        self.setWindowTitle("Assemble")
        self.setObjectName("assembleDialog")
        self.spec = spec
        form = QFormLayout(self)
        note = QLabel("Turn or slide one joint from the present pose; the other bodies follow as little as "
                      "the loops allow (mass-weighted), on the present branch.")
        note.setWordWrap(True)
        form.addRow(note)
        self.joint = QComboBox()
        self.joint.setObjectName("assembleJoint")
        for name in posable_joints(spec):
            self.joint.addItem(f"{name} ({spec.joint(name).type})", name)
        if joint is not None and self.joint.findData(joint) >= 0:
            self.joint.setCurrentIndex(self.joint.findData(joint))
        form.addRow("Joint", self.joint)
        self.amount = NumberEdit(0.0)
        self.amount.setObjectName("assembleAmount")
        self.unit = QLabel()
        form.addRow("Move by", self.amount)
        form.addRow("", self.unit)
        self.joint.currentIndexChanged.connect(self._unit)
        self._unit()
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.button(QDialogButtonBox.Ok).setText("Assemble")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _unit(self) -> None:
        name = self.joint.currentData()
        angle = name is not None and self.spec.joint(name).type == "revolute"
        self.unit.setText("degrees, in the joint's parent-to-child sense" if angle else "metres along the axis")

    def value(self) -> float:
        """The coordinate change in the engine's units (rad or m)."""
        v = self.amount.value() or 0.0
        name = self.joint.currentData()
        return math.radians(v) if name is not None and self.spec.joint(name).type == "revolute" else v

    def pose(self) -> Posed:
        return pose_by_joint(self.spec, self.joint.currentData(), self.value())
