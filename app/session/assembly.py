"""Assembly in the editor (no Qt): move the mechanism so that one joint's coordinate
changes by a given amount, the loops following on the drawn branch -- the engine's
mass-weighted assembly (:mod:`engine.analysis.assemble`, ``linkwork assemble --fix``)
on the document's mechanism."""

from __future__ import annotations

import math
from dataclasses import dataclass

from linkwork.engine.mechfile import JOINT_TYPES, MechanismSpec


@dataclass(frozen=True)
class Posed:
    """The assembled mechanism and what the assembly did."""

    spec: MechanismSpec
    joint: str
    value: float  # the joint's coordinate change (rad or m)
    iterations: int
    closure: float  # largest joint residual after assembly
    moved: float  # largest translation of a body [m]
    moved_body: str
    turned: float  # largest rotation of a body [deg]

    def summary(self) -> str:
        unit = f"{math.degrees(self.value):+.4g}°" if self.is_angle else f"{self.value:+.4g} m"
        return (f"Assembled with {self.joint} {unit}: {self.iterations} Newton steps, loops closed to "
                f"{self.closure:.2g} m; {self.moved_body} moved most ({self.moved:.3g} m, turned "
                f"{self.turned:.3g}°)")

    @property
    def is_angle(self) -> bool:
        return self.spec.joint(self.joint).type == "revolute"


def posable_joints(spec: MechanismSpec) -> list[str]:
    """The one-freedom joints (revolute, prismatic) an assembly can set, in file order."""
    return [j.name for j in spec.joints if JOINT_TYPES[j.type][0] == 1]


def pose_by_joint(spec: MechanismSpec, joint: str, value: float) -> Posed:
    """``spec`` moved so that ``joint``'s coordinate changes by ``value`` (rad or m, the
    file's parent-to-child sense), every other freedom as near the present poses as the
    loops allow (mass-weighted), on the present branch.  Raises the engine's
    ``MechanismError`` (a mechanism the engine refuses) or ``AssemblyError`` (the loops
    cannot close there; for a four-bar with the Grashof numbers)."""
    from linkwork.engine.analysis.assemble import assemble, assembled_spec, drawing

    d = drawing(spec)
    a = assemble(d, {joint: float(value)})
    model = d.model
    k = int(max(range(model.nb), key=lambda i: a.translation[i]))
    return Posed(assembled_spec(d, a), joint, float(value), a.iterations, float(a.closure),
                 float(a.translation[k]), model.body_names[k], float(max(a.rotation, default=0.0)))
