"""Mechanisms with drivers (prescribed joint motions, docs/file-format.md, "Drivers")."""

from __future__ import annotations

import math

from ..mechfile import DriverSpec, MotionSpec, MechanismSpec
from .joint_types import slider_crank


def driven_slider_crank(rpm: float = 60.0, crank: float = 0.3, rod: float = 1.0,
                        crank_angle_deg: float = 60.0) -> MechanismSpec:
    """The slider-crank of :func:`.joint_types.slider_crank` without its spring, its crank
    turned by a motor at a constant ``rpm``: no freedom is left (kinematically driven), and
    the driver's effort is the motor torque that keeps the rate against gravity and the
    inertia of rod and slider."""
    w = 2.0 * math.pi * rpm / 60.0
    base = slider_crank(crank=crank, rod=rod, crank_angle_deg=crank_angle_deg, crank_rate=w)
    return base.with_(
        forces=(),
        drivers=(DriverSpec("motor", "crank_pin", MotionSpec("constant-rate", rate=w)),),
        name="slider-crank driven at constant rate",
        description=f"Crank, connecting rod and slider; a motor turns the crank at {rpm:g} rpm "
                    "(a constant-rate driver). The driver's effort column is the motor torque.",
    )
