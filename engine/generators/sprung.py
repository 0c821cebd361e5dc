"""A spring-loaded mechanism for ``linkwork equilibrium`` and ``linkwork modes``
(docs/user-guide.md, "Static equilibrium and vibration modes")."""

from __future__ import annotations

import math
from dataclasses import replace

from ..mechfile import ForceSpec, MechanismSpec
from .loops import fourbar
from .parts import finish


def sprung_parallelogram(crank: float = 0.4, coupler: float = 0.6, crank_angle_deg: float = 60.0,
                         stiffness: float = 12.0, damping: float = 0.05) -> MechanismSpec:
    """The parallelogram four-bar (crank and rocker ``crank`` m, coupler and ground
    ``coupler`` m; slender rods of 0.5, 0.75 and 0.5 kg) with a torsion spring and damper
    at the crank's ground pivot J1, unstretched in the file's configuration: released, it
    sags under gravity and settles where the spring's moment balances gravity's,
    ``k (theta - theta_0) = -g cos(theta) (m_A + 2 m_B + m_C) crank / 2``."""
    base = fourbar(crank=crank, coupler=coupler, rocker=crank, ground=coupler, crank_angle_deg=crank_angle_deg,
                   mass=1.0, inertia=None)
    masses = {"A": 0.5, "B": 0.75, "C": 0.5}
    bodies = []
    for b in base.bodies:
        s = masses[b.name]  # rod inertia scales with the mass
        inertia = tuple(tuple(s * c for c in row) for row in b.inertia)
        bodies.append(replace(b, mass=s, inertia=inertia))
    spring = ForceSpec(type="joint-spring", joint="J1", stiffness=stiffness, damping=damping, rest=0.0)
    return finish(base.with_(
        bodies=tuple(bodies), forces=(spring,), name="sprung parallelogram four-bar",
        description=f"Parallelogram four-bar (crank and rocker {crank:g} m, coupler {coupler:g} m) with a "
                    f"torsion spring of {stiffness:g} N m/rad and {damping:g} N m s/rad at the crank's pivot, "
                    f"unstretched with the crank at {crank_angle_deg:g} deg ({math.radians(crank_angle_deg):.4g} "
                    "rad); released at rest, it sags to where the spring holds it.",
    ))
