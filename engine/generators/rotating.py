"""Planar loops whose plane moves: a four-bar on a turntable and a four-bar on a
spinning spatial arm."""

from __future__ import annotations

import math

import numpy as np

from ..mechfile import GROUND, ForceSpec, MechanismSpec
from .parts import G, finish, joint_spec, rod_body, vec


def _fourbar_points(O1, O2, crank: float, coupler: float, rocker: float, angle_deg: float, u, w):
    """The crank tip and coupler point of a four-bar with pivots O1, O2 in the plane spanned
    by the unit vectors ``u`` (along O1 -> O2) and ``w``, crank at ``angle_deg`` from u."""
    a = math.radians(angle_deg)
    PA = O1 + crank * (math.cos(a) * u + math.sin(a) * w)
    d = O2 - PA
    dist = float(np.linalg.norm(d))
    e = d / dist
    x = (coupler**2 - rocker**2 + dist**2) / (2 * dist)
    h = math.sqrt(max(coupler**2 - x**2, 0.0))
    n = np.cross(np.cross(u, w), e)  # in the plane, perpendicular to e
    return PA, PA + x * e + h * n


def turntable_fourbar(rates: bool = True, cut: bool = True) -> MechanismSpec:
    """A planar loop whose plane turns: a crank-rocker four-bar standing on a hub that
    turns about the vertical axis, a pendulum on the hub's far end, and an arm on a
    second ground hinge beside it; with ``rates``, initial joint rates on four hinges.

    The loop's three out-of-plane closure rows are redundant at every configuration, but
    off the closure -- at a Runge-Kutta stage -- they are independent by the offset: the
    case that decides whether a formulation's rank decision is the mechanism's or one
    state's (docs/derivations.md, "Redundant rows").  ``cut`` marks the rocker's hinge
    on the hub as the loop's cut joint."""
    hub0, hub1 = np.array([-0.3, 0.0, 0.0]), np.array([1.3, 0.0, 0.0])
    O1, O2 = np.zeros(3), np.array([1.0, 0.0, 0.0])
    ex, ey = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    PA, PB = _fourbar_points(O1, O2, 0.4, 1.2, 0.9, 60.0, ex, ey)
    P0 = np.array([1.3, 0.0, 0.0])
    A0 = np.array([0.0, 0.0, 2.0])
    bodies = (
        rod_body("hub", hub0, hub1, 2.0),
        rod_body("crank", O1, PA),
        rod_body("coupler", PA, PB),
        rod_body("rocker", O2, PB),
        rod_body("pendulum", P0, P0 + np.array([0.0, -0.5, 0.2]), 0.5),
        rod_body("arm", A0, A0 + np.array([0.6, -0.3, 0.0])),
    )
    z = (0, 0, 1)

    def rate(w):
        return (w,) if rates else None

    joints = (
        joint_spec("Jhub", "revolute", GROUND, "hub", (0, 0, 0), axis=(0, 1, 0), rate=rate(1.5)),
        joint_spec("J1", "revolute", "hub", "crank", O1, axis=z, rate=rate(2.0)),
        joint_spec("J2", "revolute", "crank", "coupler", PA, axis=z),
        joint_spec("J3", "revolute", "coupler", "rocker", PB, axis=z),
        joint_spec("J4", "revolute", "rocker", "hub", O2, axis=z, cut=cut),
        joint_spec("Jp", "revolute", "hub", "pendulum", P0, axis=(1, 0, 0), rate=rate(-1.0)),
        joint_spec("Ja", "revolute", GROUND, "arm", A0, axis=z, rate=rate(0.7)),
    )
    return finish(MechanismSpec(
        bodies=bodies, joints=joints, gravity=G, name="four-bar on a turntable",
        description="A crank-rocker four-bar on a hub turning about the vertical, a pendulum on the hub, "
                    "an arm beside it; a planar loop whose plane turns.",
    ))


def spinning_arm_fourbar(damping: float = 0.05, torque: float = 0.2) -> MechanismSpec:
    """A planar loop on a spinning spatial arm: an arm on a ground hinge with a tilted axis,
    spun up, carrying a four-bar whose plane contains the arm; a damped spring from the
    coupler to ground and a constant torque on the crank (a mechanism that is not
    conservative, as the turntable's is)."""
    axis = np.array([1.0, 1.0, 0.3])
    axis /= np.linalg.norm(axis)
    base = np.zeros(3)
    tip = base + 0.8 * np.array([1.0, -0.5, 0.2])
    u = (tip - base) / np.linalg.norm(tip - base)
    w = np.cross(axis, u)
    w /= np.linalg.norm(w)
    nrm = np.cross(u, w)  # the loop's hinge axis, fixed in the arm
    O1, O2 = tip, tip + 0.9 * u
    PA, PB = _fourbar_points(O1, O2, 0.35, 1.0, 0.8, 70.0, u, w)
    bodies = (
        rod_body("arm", base, O2 + 0.1 * u, 1.5),
        rod_body("crank", O1, PA),
        rod_body("coupler", PA, PB),
        rod_body("rocker", O2, PB),
    )
    joints = (
        joint_spec("Jarm", "revolute", GROUND, "arm", base, axis=axis, rate=(2.5,)),
        joint_spec("J1", "revolute", "arm", "crank", O1, axis=nrm, rate=(-1.5,)),
        joint_spec("J2", "revolute", "crank", "coupler", PA, axis=nrm),
        joint_spec("J3", "revolute", "coupler", "rocker", PB, axis=nrm),
        joint_spec("J4", "revolute", "rocker", "arm", O2, axis=nrm),
    )
    mid = 0.5 * (PA + PB)
    forces = (
        ForceSpec("spring", body1="coupler", point1=vec(mid), body2=GROUND,
                  point2=vec(mid + np.array([0.0, 0.6, 0.0])), stiffness=20.0, damping=damping, rest_length=0.5),
        ForceSpec("joint-torque", joint="J1", value=(torque,)),
    )
    return finish(MechanismSpec(
        bodies=bodies, joints=joints, forces=forces, gravity=G, name="four-bar on a spinning arm",
        description="A four-bar in a plane fixed to an arm that spins about a tilted axis, with a damped "
                    "spring and a crank torque.",
    ))
