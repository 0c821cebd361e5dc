"""Serial chains: the n-link pendulum and paper 000's chains."""

from __future__ import annotations

import math

import numpy as np

from ..mechfile import GROUND, MechanismSpec
from .parts import G, finish, joint_spec, rod_body, vec


def chain(
    n: int,
    joint: str = "revolute",
    planar: bool = True,
    length: float = 1.0,
    mass: float = 1.0,
    inertia=None,
    angle_deg: float = 0.0,
    gravity=G,
    name: str | None = None,
) -> MechanismSpec:
    """An n-link pendulum hanging from ground at the origin.

    ``planar``: links start along the direction ``angle_deg`` in the xy-plane
    and (revolute: axes z; universal: axes z then y) move in that plane.
    Spatial: links start horizontal, turning by 45 degrees about y from one
    link to the next, and revolute axes alternate between horizontal and
    vertical, so the motion is three-dimensional.
    ``inertia``: principal moments for every link, or None for a slender rod.
    """
    if n < 1:
        raise ValueError("a chain needs at least one link")
    if joint not in ("revolute", "universal", "spherical"):
        raise ValueError("chain joints are revolute, universal or spherical")
    bodies, joints = [], []
    p = np.zeros(3)
    a = math.radians(angle_deg)
    for k in range(n):
        if planar:
            d = np.array([math.cos(a), math.sin(a), 0.0])
        else:
            phi = k * math.pi / 4
            d = np.array([math.cos(phi), 0.0, math.sin(phi)])
        q = p + length * d
        bname = f"L{k + 1}"
        bodies.append(rod_body(bname, p, q, mass, inertia))
        parent = GROUND if k == 0 else f"L{k}"
        if joint == "revolute":
            if planar:
                ax = (0, 0, 1)
            else:
                horiz = np.cross(d, [0.0, 1.0, 0.0])
                ax = horiz if k % 2 == 0 else (0, 1, 0)
            joints.append(joint_spec(f"J{k + 1}", "revolute", parent, bname, p, axis=ax))
        elif joint == "universal":
            if planar:
                axes = ((0, 0, 1), (0, 1, 0))
            else:
                a1 = np.cross(d, [0.0, 1.0, 0.0])
                axes = (a1, (0, 1, 0))
            joints.append(joint_spec(f"J{k + 1}", "universal", parent, bname, p, axes=axes))
        else:
            joints.append(joint_spec(f"J{k + 1}", "spherical", parent, bname, p))
        p = q
    kind = "planar" if planar else "spatial"
    return finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), gravity=vec(gravity),
        name=name or f"{n}-link {kind} {joint} chain",
        description=f"{n} links of {length:g} m and {mass:g} kg hanging from the origin by {joint} joints, "
                    f"released at rest ({kind}).",
    ))


def paper000_chain(n: int = 128) -> MechanismSpec:
    """Paper 000 section 4.4: n unit links, spherical joints, horizontal at rest, J' = 1."""
    spec = chain(n, "spherical", planar=True, inertia=(1.0, 1.0, 1.0))
    return spec.with_(
        name=f"{n}-link spherical pendulum (paper 000, 4.4)",
        description=f"Paper 000 section 4.4: {n} links of 1 m, 1 kg, J' = diag(1,1,1), spherical joints, "
                    "released horizontally at rest; planar motion under gravity.",
    )


def spatial_double_pendulum() -> MechanismSpec:
    """Paper 000 section 4.2: A along x, B along z, spherical joints, at rest."""
    A = rod_body("A", (0, 0, 0), (1, 0, 0), 1.0, (1.0, 1.0, 1.0))
    B = rod_body("B", (1, 0, 0), (1, 0, 1), 1.0, (1.0, 1.0, 1.0))
    joints = (
        joint_spec("J1", "spherical", GROUND, "A", (0, 0, 0)),
        joint_spec("J2", "spherical", "A", "B", (1, 0, 0)),
    )
    return finish(MechanismSpec(
        bodies=(A, B), joints=joints, gravity=G, name="spatial double pendulum (paper 000, 4.2)",
        description="Paper 000 section 4.2: body A along x from the origin, body B from A's tip along z; "
                    "spherical joints; 1 m, 1 kg, J' = diag(1,1,1); released at rest.",
    ))
