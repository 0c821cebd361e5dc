"""Mechanisms that use the joint and force types beyond the revolute hinge: the
slider-crank (prismatic guide, spring) and the joint zoo (every joint and force type)."""

from __future__ import annotations

import math

import numpy as np

from ..mechfile import GROUND, BodySpec, ForceSpec, MechanismSpec, ShapeSpec
from .parts import G, finish, joint_spec, rod_body, vec


def slider_crank(crank: float = 0.3, rod: float = 1.0, crank_angle_deg: float = 60.0,
                 crank_rate: float = 6.0, stiffness: float = 200.0) -> MechanismSpec:
    """Slider-crank with a spring on the slider: revolute, prismatic and a spring."""
    a = math.radians(crank_angle_deg)
    A = np.array([crank * math.cos(a), crank * math.sin(a), 0.0])
    xs = A[0] + math.sqrt(rod**2 - A[1] ** 2)
    S = np.array([xs, 0.0, 0.0])
    crank_b = rod_body("crank", (0, 0, 0), A, 1.0)
    rod_b = rod_body("rod", A, S, 0.5)
    slider = BodySpec("slider", 2.0, ((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01)), vec(S),
                      shape=ShapeSpec("box", size=(0.2, 0.1, 0.1)))
    # Consistent initial rates of every joint, so the file states a motion the joints allow
    # and nothing is projected away: the rod angle phi obeys r sin a + l sin phi = 0, so
    # phi' = -r cos(a) a' / (l cos phi), and the slider x_s = r cos a + l cos phi moves at
    # x_s' = -r sin(a) a' - l sin(phi) phi'.
    phi = math.atan2(-A[1], xs - A[0])
    phi_rate = -crank * math.cos(a) * crank_rate / (rod * math.cos(phi))
    slide_rate = -crank * math.sin(a) * crank_rate - rod * math.sin(phi) * phi_rate
    z = (0, 0, 1)
    joints = (
        joint_spec("crank_pin", "revolute", GROUND, "crank", (0, 0, 0), axis=z, rate=(crank_rate,)),
        joint_spec("wrist", "revolute", "crank", "rod", A, axis=z, rate=(phi_rate - crank_rate,)),
        joint_spec("gudgeon", "revolute", "rod", "slider", S, axis=z, rate=(-phi_rate,)),
        joint_spec("guide", "prismatic", GROUND, "slider", S, axis=(1, 0, 0), rate=(slide_rate,)),
    )
    forces = (
        ForceSpec("spring", body1=GROUND, point1=vec(S + np.array([1.0, 0, 0])), body2="slider",
                  point2=vec(S), stiffness=stiffness, damping=0.0, rest_length=1.0),
    )
    return finish(MechanismSpec(
        bodies=(crank_b, rod_b, slider), joints=joints, forces=forces, gravity=G,
        name="slider-crank with spring",
        description="Crank, connecting rod and a slider on a prismatic guide, held by a spring; the crank "
                    "starts at 6 rad/s.",
    ))


def joint_zoo() -> MechanismSpec:
    """A small tree using every joint type and every force type (for tests and demos)."""
    bodies = (
        rod_body("arm", (0, 0, 0), (0.6, 0, 0), 1.0),
        BodySpec("slide", 0.8, ((0.02, 0, 0), (0, 0.03, 0), (0, 0, 0.02)), (0.9, 0.0, 0.0),
                 orientation=(math.cos(0.2), 0.0, math.sin(0.2), 0.0),
                 shape=ShapeSpec("box", size=(0.2, 0.1, 0.1))),
        rod_body("spinner", (0.9, 0, 0), (0.9, -0.5, 0), 0.6),
        rod_body("hook", (0.9, -0.5, 0), (1.3, -0.5, 0.2), 0.5),
        rod_body("ball", (1.3, -0.5, 0.2), (1.3, -0.9, 0.5), 0.4),
        BodySpec("weld", 0.3, ((0.004, 0.001, 0), (0.001, 0.004, 0), (0, 0, 0.005)), (1.3, -1.0, 0.6),
                 shape=ShapeSpec("sphere", radius=0.08)),
    )
    joints = (
        joint_spec("shoulder", "revolute", GROUND, "arm", (0, 0, 0), axis=(0, 0.3, 1), rate=(0.5,)),
        joint_spec("rail", "prismatic", "arm", "slide", (0.6, 0, 0), axis=(1, 0, 0.2), rate=(0.1,)),
        joint_spec("tube", "cylindrical", "slide", "spinner", (0.9, 0, 0), axis=(0, 1, 0), rate=(1.0, 0.0)),
        joint_spec("hooke", "universal", "spinner", "hook", (0.9, -0.5, 0), axes=((1, 0, 0), (0, 0, 1))),
        joint_spec("socket", "spherical", "hook", "ball", (1.3, -0.5, 0.2), rate=(0.2, -0.3, 0.4)),
        joint_spec("weld", "fixed", "ball", "weld", (1.3, -0.9, 0.5)),
    )
    forces = (
        ForceSpec("joint-spring", joint="rail", stiffness=20.0, damping=0.5, rest=0.0),
        ForceSpec("joint-spring", joint="shoulder", stiffness=3.0, damping=0.1, rest=0.2),
        ForceSpec("joint-torque", joint="tube", value=(0.05, 0.0)),
        ForceSpec("joint-torque", joint="hooke", value=(0.02, -0.01)),
        ForceSpec("spring", body1=GROUND, point1=(1.3, 0.5, 0.5), body2="weld",
                  point2=(1.3, -1.0, 0.6), stiffness=15.0, damping=0.2, rest_length=1.2),
    )
    return finish(MechanismSpec(
        bodies=bodies, joints=joints, forces=forces, gravity=G, name="joint zoo",
        description="A branch using every joint type (revolute, prismatic, cylindrical, universal, "
                    "spherical, fixed) and every force type (spring, joint-spring, joint-torque).",
    ))
