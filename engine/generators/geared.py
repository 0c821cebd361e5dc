"""Mechanisms with gear couplings: a rotor geared to a pendulum, to an arm's elbow, and
to a four-bar's crank."""

from __future__ import annotations

import math

import numpy as np

from ..mechfile import GROUND, BodySpec, CouplingSpec, ForceSpec, MechanismSpec, ShapeSpec
from .loops import fourbar
from .parts import G, finish, joint_spec, rod_body, vec


def _disc(name, centre, radius, thickness, mass, axis=(0.0, 0.0, 1.0)) -> BodySpec:
    """A rotor: a uniform disc with its centre of mass on its axis (drawn as a cylinder)."""
    u = np.asarray(axis, float) / np.linalg.norm(axis)
    ia = mass * radius**2 / 2.0
    it = mass * (3 * radius**2 + thickness**2) / 12.0
    I = it * (np.eye(3) - np.outer(u, u)) + ia * np.outer(u, u)
    return BodySpec(name, float(mass), tuple(vec(r) for r in I), vec(centre),
                    shape=ShapeSpec("cylinder", radius=radius, length=thickness, axis=vec(u)))


def geared_pendulum(ratio: float = 10.0, theta0_deg: float = 40.0, length: float = 1.0, mass: float = 2.0,
                    rotor_mass: float = 0.5, rotor_radius: float = 0.1, rate: float | None = None
                    ) -> MechanismSpec:
    """A rod pendulum about the z axis through the origin, geared to a ground-mounted
    rotor on the same axis (``q_rotor = ratio * q_link``).  Both angular velocities are
    absolute, so ``T = (J_l + ratio^2 J_r) theta'^2 / 2`` and
    ``(J_l + ratio^2 J_r) theta'' = -m g d sin(theta)`` (theta from the downward
    vertical, d = length / 2, J_l about the pivot, J_r the rotor's axial inertia)."""
    a = math.radians(theta0_deg)
    tip = np.array([length * math.sin(a), -length * math.cos(a), 0.0])
    link = rod_body("link", (0, 0, 0), tip, mass)
    rotor = _disc("rotor", (0.0, 0.0, 0.1), rotor_radius, 0.04, rotor_mass)
    z = (0, 0, 1)
    joints = (
        joint_spec("pivot", "revolute", GROUND, "link", (0, 0, 0), axis=z,
                   rate=None if rate is None else (float(rate),)),
        joint_spec("motor", "revolute", GROUND, "rotor", (0, 0, 0.1), axis=z),
    )
    return finish(MechanismSpec(
        bodies=(link, rotor), joints=joints, gravity=G, name="geared pendulum",
        couplings=(CouplingSpec("reduction", "motor", "pivot", float(ratio)),),
        description=f"A pendulum geared to a ground-mounted rotor, ratio {ratio:g}.",
    ))


def geared_arm(ratio: float = 10.0) -> MechanismSpec:
    """Two-link arm whose elbow is driven through a reduction: a rotor carried by the
    upper arm (on a parallel axis, part-way along it) turns, relative to the upper arm,
    ``ratio`` times the forearm's angle relative to the upper arm (gear
    ``motor -> elbow``); released at rest under gravity."""
    L1, L2 = 0.6, 0.5
    a = math.radians(40.0)
    E = np.array([L1 * math.sin(a), -L1 * math.cos(a), 0.0])
    W = E + np.array([L2, 0.0, 0.0])
    upper = rod_body("upper_arm", (0, 0, 0), E, 2.0, radius=0.035)
    fore = rod_body("forearm", E, W, 1.0, radius=0.03)
    M = 0.6 * E + np.array([0.0, 0.0, 0.12])  # the rotor's centre, on its axis
    rotor = _disc("rotor", M, 0.06, 0.03, 0.3)
    z = (0, 0, 1)
    joints = (
        joint_spec("shoulder", "revolute", GROUND, "upper_arm", (0, 0, 0), axis=z),
        joint_spec("elbow", "revolute", "upper_arm", "forearm", E, axis=z),
        joint_spec("motor", "revolute", "upper_arm", "rotor", M, axis=z),
    )
    return finish(MechanismSpec(
        bodies=(upper, fore, rotor), joints=joints, gravity=G, name="geared two-link arm",
        couplings=(CouplingSpec("reduction", "motor", "elbow", float(ratio)),),
        description=f"Two-link arm; a rotor on the upper arm drives the elbow through a {ratio:g}:1 "
                    "reduction (gear motor -> elbow). Released at rest.",
    ))


def geared_fourbar(ratio: float = -4.0, torque: float = 0.6, damping: float = 0.02) -> MechanismSpec:
    """The crank-rocker four-bar with its crank driven through a gear pair by a motor
    rotor on a parallel ground axis (external gears: ``ratio`` < 0, the pinion turns
    the other way).  The motor is a constant torque with viscous loss
    (``tau = torque - damping * omega``), so the crank runs up to a steady rotation."""
    base = fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0, crank_angle_deg=60.0, inertia=None)
    centre = (-0.25, 0.0, 0.0)
    rotor = _disc("motor_rotor", centre, 0.1, 0.04, 0.4)
    joints = base.joints + (joint_spec("motor", "revolute", GROUND, "motor_rotor", centre, axis=(0, 0, 1)),)
    forces = (
        ForceSpec("joint-torque", joint="motor", value=(float(torque),)),
        ForceSpec("joint-spring", joint="motor", stiffness=0.0, damping=float(damping), rest=0.0),
    )
    return finish(base.with_(
        bodies=base.bodies + (rotor,), joints=joints, forces=forces, name="geared crank-rocker four-bar",
        couplings=(CouplingSpec("pinion", "motor", "J1", float(ratio)),),
        description=f"Crank-rocker four-bar (crank 0.4, coupler 1.2, rocker 0.9, ground 1.0 m) whose crank J1 "
                    f"is driven by a motor rotor through an external gear pair, ratio {ratio:g}; motor torque "
                    f"{torque:g} N m with {damping:g} N m s/rad viscous loss.",
    ))
