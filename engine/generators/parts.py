"""Building blocks of the generators: vectors, slender-rod bodies, joints, finishing a
specification, and the quaternion of a rotation matrix.

Every generator builds its :class:`~engine.mechfile.BodySpec` and
:class:`~engine.mechfile.JointSpec` records from these, and ends with :func:`finish`, so
the specifications they return obey every rule of the file format.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechfile import BodySpec, JointSpec, MechanismSpec, ShapeSpec, spec_from_dict, spec_to_dict

#: Gravity of every generated mechanism but the random ones (SI units, along -y).
G = (0.0, -9.81, 0.0)
UNIT_INERTIA = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def vec(v) -> tuple[float, float, float]:
    """The first three components of ``v`` as a tuple of Python floats (the file's vector)."""
    return (float(v[0]), float(v[1]), float(v[2]))


def rod_inertia(mass: float, p0, p1, radius: float = 0.03):
    """Central inertia (world = body frame at t=0) of a uniform rod from p0 to p1."""
    d = np.asarray(p1, float) - np.asarray(p0, float)
    L = float(np.linalg.norm(d))
    u = d / L
    it = mass * (3 * radius**2 + L**2) / 12.0
    ia = mass * radius**2 / 2.0
    I = it * (np.eye(3) - np.outer(u, u)) + ia * np.outer(u, u)
    return tuple(vec(row) for row in I)


def rod_body(name, p0, p1, mass=1.0, inertia=None, radius=0.03, orientation=(1.0, 0.0, 0.0, 0.0)):
    """A slender rod from ``p0`` to ``p1`` (centre of mass at its middle).  ``inertia``: a
    3x3 tensor, three principal moments, or None for :func:`rod_inertia`."""
    p0 = np.asarray(p0, float)
    p1 = np.asarray(p1, float)
    if inertia is None:
        inertia = rod_inertia(mass, p0, p1, radius)
    elif len(inertia) == 3 and not hasattr(inertia[0], "__len__"):
        inertia = ((inertia[0], 0.0, 0.0), (0.0, inertia[1], 0.0), (0.0, 0.0, inertia[2]))
    return BodySpec(
        name=name, mass=float(mass), inertia=inertia, position=vec(0.5 * (p0 + p1)),
        orientation=orientation,
        shape=ShapeSpec("rod", p_from=vec(p0), p_to=vec(p1), radius=radius),
    )


def finish(spec: MechanismSpec) -> MechanismSpec:
    """Round-trip through the validator, so generated specs obey every file rule."""
    return spec_from_dict(spec_to_dict(spec))


def joint_spec(name, jtype, parent, child, anchor, axis=None, axes=None, rate=None, cut=False):
    """A joint at ``anchor``; ``axis`` and ``axes`` are normalised here."""
    return JointSpec(
        name=name, type=jtype, parent=parent, child=child, anchor=vec(anchor),
        axis=None if axis is None else vec(np.asarray(axis) / np.linalg.norm(axis)),
        axes=None if axes is None else tuple(vec(np.asarray(a) / np.linalg.norm(a)) for a in axes),
        rate=rate, cut=cut,
    )


def quat_from_rotation(R) -> tuple[float, float, float, float]:
    """The unit quaternion (w, x, y, z) of the rotation matrix ``R``."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    w = math.sqrt(max(0.0, 1.0 + tr)) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + R[0, 0] - R[1, 1] - R[2, 2])) / 2, R[2, 1] - R[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1 - R[0, 0] + R[1, 1] - R[2, 2])) / 2, R[0, 2] - R[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1 - R[0, 0] - R[1, 1] + R[2, 2])) / 2, R[1, 0] - R[0, 1])
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return (w / n, x / n, y / n, z / n)
