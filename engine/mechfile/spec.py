"""The mechanism spec: plain, immutable Python values -- what a mechanism file holds and
what the GUI editor manipulates -- and the names and limits of the file format.

The spec describes the mechanism at t = 0 in world coordinates; turning it into
flat arrays for the kernels is :mod:`engine.model`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

FORMAT_NAME = "linkwork-mechanism"
FORMAT_VERSION = 1
GROUND = "ground"

#: joint type -> (number of freedoms, axis field: None, "axis" or "axes")
JOINT_TYPES = {
    "revolute": (1, "axis"),
    "prismatic": (1, "axis"),
    "cylindrical": (2, "axis"),
    "universal": (2, "axes"),
    "spherical": (3, None),
    "fixed": (0, None),
}
FORCE_TYPES = ("spring", "joint-spring", "joint-torque")
COUPLING_TYPES = ("gear",)
#: motion laws of a driver (docs/file-format.md, "Drivers")
DRIVER_KINDS = ("constant-rate", "harmonic", "table")
SHAPE_KINDS = ("rod", "box", "sphere", "cylinder", "mesh")
#: numbers beyond this (SI units) are refused: no mechanism needs them, and they
#: would overflow products in the kinematics
MAX_MAGNITUDE = 1e12

Vec3 = tuple[float, float, float]



@dataclass(frozen=True)
class ShapeSpec:
    """How a body is drawn (never used by the dynamics).

    ``rod``: ``p_from``/``p_to`` (world, t = 0), ``radius``; ``box``: ``size``;
    ``sphere``: ``radius``; ``cylinder``: ``radius``, ``length``, ``axis``
    (world, t = 0, through the centre of mass); ``mesh``: ``path`` relative to
    the file, ``scale``.
    """

    kind: str
    p_from: Vec3 | None = None
    p_to: Vec3 | None = None
    radius: float | None = None
    size: Vec3 | None = None
    length: float | None = None
    axis: Vec3 | None = None
    path: str | None = None
    scale: float = 1.0


@dataclass(frozen=True)
class BodySpec:
    name: str
    mass: float
    inertia: tuple[Vec3, Vec3, Vec3]  # central inertia, body frame, 3x3
    position: Vec3
    orientation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    velocity: Vec3 = (0.0, 0.0, 0.0)
    angular_velocity: Vec3 = (0.0, 0.0, 0.0)
    shape: ShapeSpec | None = None


@dataclass(frozen=True)
class JointSpec:
    name: str
    type: str
    parent: str
    child: str
    anchor: Vec3
    axis: Vec3 | None = None  # unit, for revolute / prismatic / cylindrical
    axes: tuple[Vec3, Vec3] | None = None  # unit, orthogonal, for universal
    rate: tuple[float, ...] | None = None
    cut: bool = False

    @property
    def dof(self) -> int:
        return JOINT_TYPES[self.type][0]


@dataclass(frozen=True)
class ForceSpec:
    """One force element; which fields are used depends on ``type``.

    spring: body1, point1, body2, point2 (world, t = 0), stiffness, damping,
    rest_length.  joint-spring: joint, stiffness, damping, rest.
    joint-torque: joint, value (one number per freedom of the joint).
    """

    type: str
    body1: str | None = None
    point1: Vec3 | None = None
    body2: str | None = None
    point2: Vec3 | None = None
    stiffness: float = 0.0
    damping: float = 0.0
    rest_length: float | None = None
    joint: str | None = None
    rest: float = 0.0
    value: tuple[float, ...] | None = None


@dataclass(frozen=True)
class CouplingSpec:
    """A gear pair (docs/file-format.md, "Couplings"): the driver's joint coordinate
    and the driven one's, both measured from their value at t = 0, obey
    ``q_driver = ratio * q_driven``.  Both joints have one freedom (revolute or
    prismatic); ``ratio`` is finite and non-zero."""

    name: str
    driver: str
    driven: str
    ratio: float
    type: str = "gear"


@dataclass(frozen=True)
class MotionSpec:
    """A driver's motion law f(t) (docs/file-format.md, "Drivers").

    ``constant-rate``: f = rate t.  ``harmonic``: f = offset + amplitude sin(2 pi frequency t
    + phase).  ``table``: the natural cubic spline through the knots (t, q), continued
    linearly beyond the first and last knot (C2 everywhere)."""

    kind: str
    rate: float = 0.0
    amplitude: float = 0.0
    frequency: float = 0.0
    phase: float = 0.0
    offset: float = 0.0
    t: tuple[float, ...] = ()
    q: tuple[float, ...] = ()


@dataclass(frozen=True)
class DriverSpec:
    """A driven joint (docs/file-format.md, "Drivers"): the one-freedom joint's coordinate,
    measured from its value at t = 0, follows ``f(t) - f(0)`` of its motion law."""

    name: str
    joint: str
    motion: MotionSpec
    type: str = "driver"


@dataclass(frozen=True)
class MechanismSpec:
    bodies: tuple[BodySpec, ...]
    joints: tuple[JointSpec, ...]
    forces: tuple[ForceSpec, ...] = ()
    gravity: Vec3 = (0.0, -9.81, 0.0)
    name: str = ""
    description: str = ""
    #: run settings the file recommends (``settings``: dt, t_end, integrator, rtol, atol) as
    #: (key, value) pairs in that order; options given on the command line or in the
    #: application override them (:func:`engine.simulation.file_defaults`)
    settings: tuple[tuple[str, Any], ...] = ()
    #: gear pairs (docs/file-format.md, "Couplings"), in file order
    couplings: tuple[CouplingSpec, ...] = ()
    #: driven joints (docs/file-format.md, "Drivers"), in file order
    drivers: tuple[DriverSpec, ...] = ()
    #: Warnings found while reading (unknown keys, unusual inertia, ...).
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def body(self, name: str) -> BodySpec:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(name)

    def joint(self, name: str) -> JointSpec:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(name)

    def coupling(self, name: str) -> CouplingSpec:
        for c in self.couplings:
            if c.name == name:
                return c
        raise KeyError(name)

    def driver(self, name: str) -> DriverSpec:
        for d in self.drivers:
            if d.name == name:
                return d
        raise KeyError(name)

    def with_(self, **changes) -> "MechanismSpec":
        return replace(self, **changes)


class Connectivity:
    """Which bodies (ground included) the joints joined so far connect: a union-find over
    body names, for choosing spanning trees (Kruskal's rule) and loop-closing joints."""

    def __init__(self, bodies):
        self._up = {b.name: b.name for b in bodies}
        self._up[GROUND] = GROUND

    def _root(self, a: str) -> str:
        up = self._up
        while up[a] != a:
            up[a] = up[up[a]]
            a = up[a]
        return a

    def join(self, a: str, b: str) -> bool:
        """Connect bodies ``a`` and ``b``; whether they were apart before."""
        ra, rb = self._root(a), self._root(b)
        if ra == rb:
            return False
        self._up[ra] = rb
        return True
