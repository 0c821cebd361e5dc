"""Closed loops: four-bar, loops hanging between ground pivots, the coupled double loop,
the parallel five-bar and the spatial ladder (papers 000, 001 and 002)."""

from __future__ import annotations

import math

import numpy as np

from ..mechfile import GROUND, MechanismSpec
from .parts import G, finish, joint_spec, quat_from_rotation, rod_body


def fourbar(
    crank: float = 1.0,
    coupler: float = 1.0,
    rocker: float = 1.0,
    ground: float = 1.0,
    crank_angle_deg: float = 45.0,
    branch: int = 1,
    mass: float = 1.0,
    inertia=(1.0, 1.0, 1.0),
    name: str | None = None,
) -> MechanismSpec:
    """Planar four-bar: crank A at the origin, rocker C at (ground, 0), coupler B.

    ``branch`` picks which of the two assemblies (B left of the line from the
    crank tip to the rocker pivot for +1).  The defaults are the parallelogram
    four-bar of paper 000 section 4.3 (the contract's example).
    """
    O1 = np.zeros(3)
    O2 = np.array([ground, 0.0, 0.0])
    a = math.radians(crank_angle_deg)
    PA = O1 + crank * np.array([math.cos(a), math.sin(a), 0.0])
    dvec = O2 - PA
    dist = float(np.linalg.norm(dvec))
    if dist > coupler + rocker or dist < abs(coupler - rocker) or dist == 0.0:
        raise ValueError("these link lengths cannot be assembled at this crank angle")
    x = (coupler**2 - rocker**2 + dist**2) / (2 * dist)
    h = math.sqrt(max(coupler**2 - x**2, 0.0))
    e = dvec / dist
    nrm = np.array([-e[1], e[0], 0.0])
    PB = PA + x * e + branch * h * nrm
    bodies = (
        rod_body("A", O1, PA, mass, inertia),
        rod_body("B", PA, PB, mass, inertia),
        rod_body("C", O2, PB, mass, inertia),
    )
    z = (0, 0, 1)
    joints = (
        joint_spec("J1", "revolute", GROUND, "A", O1, axis=z),
        joint_spec("J2", "revolute", "A", "B", PA, axis=z),
        joint_spec("J3", "revolute", "B", "C", PB, axis=z),
        joint_spec("J4", "revolute", "C", GROUND, O2, axis=z),
    )
    parallelogram = abs(crank - rocker) < 1e-12 and abs(coupler - ground) < 1e-12
    title = name or ("parallelogram four-bar" if parallelogram else "four-bar")
    return finish(MechanismSpec(
        bodies=bodies, joints=joints, gravity=G, name=title,
        description=f"Planar four-bar: crank {crank:g} m, coupler {coupler:g} m, rocker {rocker:g} m, "
                    f"ground {ground:g} m; crank at {crank_angle_deg:g} deg, released at rest.",
    ))


def closed_loop(
    n: int,
    spread_deg: float = 60.0,
    length: float = 1.0,
    mass: float = 1.0,
    inertia=(1.0, 1.0, 1.0),
    name: str | None = None,
) -> MechanismSpec:
    """n links hanging between two ground pivots at the same height.

    Link k points at -spread + 2 spread k/(n-1) degrees from the horizontal, so
    the shape is mirror-symmetric about the vertical through the middle and is
    not an equilibrium: released at rest it swings symmetrically.
    """
    if n < 2:
        raise ValueError("a closed loop needs at least two links")
    angles = [math.radians(-spread_deg + 2 * spread_deg * k / (n - 1)) for k in range(n)]
    pts = [np.zeros(3)]
    for th in angles:
        pts.append(pts[-1] + length * np.array([math.cos(th), math.sin(th), 0.0]))
    pts[-1][1] = 0.0  # exact by symmetry; remove round-off
    names = [f"L{k + 1}" for k in range(n)]
    bodies = tuple(rod_body(names[k], pts[k], pts[k + 1], mass, inertia) for k in range(n))
    z = (0, 0, 1)
    joints = [joint_spec("J1", "revolute", GROUND, names[0], pts[0], axis=z)]
    for k in range(1, n):
        joints.append(joint_spec(f"J{k + 1}", "revolute", names[k - 1], names[k], pts[k], axis=z))
    joints.append(joint_spec(f"J{n + 1}", "revolute", names[-1], GROUND, pts[n], axis=z))
    return finish(MechanismSpec(
        bodies=bodies, joints=tuple(joints), gravity=G,
        name=name or f"closed loop of {n} bodies",
        description=f"{n} links of {length:g} m, {mass:g} kg between two ground pivots "
                    f"{pts[n][0]:.4g} m apart, revolute joints, symmetric start at rest.",
    ))


def _hanging_points(p0, p1, n: int, length: float) -> list:
    """Joint points of a mirror-symmetric chain of ``n`` links hanging from ``p0`` to
    ``p1`` (xy-plane): link k at -s + 2 s k/(n-1) from the chord, s chosen to span it."""
    chord = np.asarray(p1, float) - np.asarray(p0, float)
    D = float(np.linalg.norm(chord))
    if not 0.0 < D < n * length:
        raise ValueError("the chain cannot span these points")
    e = chord / D
    up = np.array([-e[1], e[0], 0.0])

    def span(s):
        return sum(length * math.cos(-s + 2 * s * k / (n - 1)) for k in range(n)) - D

    lo, hi = 0.0, math.pi / 2  # span decreases in s; bisection to round-off
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if span(mid) > 0 else (lo, mid)
    s = 0.5 * (lo + hi)
    pts = [np.asarray(p0, float).copy()]
    for k in range(n):
        th = -s + 2 * s * k / (n - 1)
        pts.append(pts[-1] + length * (math.cos(th) * e + math.sin(th) * up))
    pts[-1] = np.asarray(p1, float).copy()  # exact closure; the residual is round-off
    return pts


def double_loop(spread_deg: float = 60.0, length: float = 1.0, mass: float = 1.0,
                inertia=(1.0, 1.0, 1.0), name: str | None = None) -> MechanismSpec:
    """Coupled double loop of 8 bodies (paper 001 case 3, our geometry).

    Four links L1..L4 hang between two ground pivots (:func:`closed_loop`, case 1);
    a second four-link chain L5..L8 hangs from the L1/L2 joint point to its mirror
    image, the L3/L4 joint point.  10 revolute joints, 8 bodies, two coupled
    loops, 4 DOF, mirror-symmetric start at rest.  Along the 10 s of paper 001's
    study the loop Jacobian stays well conditioned (smallest singular value over
    largest > 0.5), so the study compares formulations, not singularity handling.
    """
    base = closed_loop(4, spread_deg, length, mass, inertia)
    P = [np.array(j.anchor) for j in base.joints]
    pts = _hanging_points(P[1], P[3], 4, length)
    names = [f"L{k}" for k in range(5, 9)]
    bodies = tuple(rod_body(names[k], pts[k], pts[k + 1], mass, inertia) for k in range(4))
    z = (0, 0, 1)
    joints = [joint_spec("J6", "revolute", "L1", names[0], pts[0], axis=z)]
    for k in range(1, 4):
        joints.append(joint_spec(f"J{6 + k}", "revolute", names[k - 1], names[k], pts[k], axis=z))
    joints.append(joint_spec("J10", "revolute", names[-1], "L4", pts[4], axis=z))
    return finish(MechanismSpec(
        bodies=base.bodies + bodies, joints=base.joints + tuple(joints), gravity=G,
        name=name or "coupled double loop of 8 bodies",
        description="Four links between two ground pivots, and four more hanging from the L1/L2 joint to "
                    "the L3/L4 joint: two coupled loops, 8 bodies, 10 revolute joints, mirror-symmetric "
                    "start at rest (paper 001 case 3, our geometry).",
    ))


def fivebar(legs: int = 3, base_half: float = 1.0, length: float = 1.0, tip=(0.0, 1.2),
            mass: float = 1.0, inertia=(1.0, 1.0, 1.0), name: str | None = None) -> MechanismSpec:
    """Planar parallel five-bar: two-link legs from base pivots to a common tip.

    ``legs = 2`` is the classic five-bar (2 DOF); ``legs = 3`` adds a third leg
    from (0, -base_half/2): the redundant parallel five-bar of paper 002
    section 4.2 -- still 2 DOF, now with two coupled loops.
    """
    if legs not in (2, 3):
        raise ValueError("legs must be 2 or 3")
    tipv = np.array([tip[0], tip[1], 0.0])
    bases = [np.array([-base_half, 0.0, 0.0]), np.array([base_half, 0.0, 0.0])]
    sides = [1, -1]
    if legs == 3:
        bases.append(np.array([0.0, -0.5 * base_half, 0.0]))
        sides.append(1)
    bodies, joints = [], []
    z = (0, 0, 1)
    for i, (B, side) in enumerate(zip(bases, sides)):
        dvec = tipv - B
        dist = float(np.linalg.norm(dvec))
        if dist >= 2 * length or dist == 0.0:
            raise ValueError(f"leg {i + 1} cannot reach the tip")
        e = dvec / dist
        h = math.sqrt(length**2 - (dist / 2) ** 2)
        nrm = np.array([-e[1], e[0], 0.0])
        E = B + 0.5 * dvec + side * h * nrm
        p, d = f"P{i + 1}", f"D{i + 1}"
        bodies += [rod_body(p, B, E, mass, inertia), rod_body(d, E, tipv, mass, inertia)]
        joints += [joint_spec(f"B{i + 1}", "revolute", GROUND, p, B, axis=z),
                   joint_spec(f"E{i + 1}", "revolute", p, d, E, axis=z)]
    joints.append(joint_spec("T12", "revolute", "D1", "D2", tipv, axis=z))
    if legs == 3:
        joints.append(joint_spec("T13", "revolute", "D1", "D3", tipv, axis=z))
    title = name or ("redundant parallel five-bar" if legs == 3 else "five-bar")
    return finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), gravity=G, name=title,
        description=f"Planar parallel mechanism: {legs} legs of two {length:g} m links meeting at the tip "
                    f"({tip[0]:g}, {tip[1]:g}); 2 DOF; released at rest.",
    ))


def ladder(cells: int, spacing: float = 1.0, length: float = 1.0, tilt_x_deg: float = 30.0,
           tilt_z_deg: float = 20.0, mass: float = 1.0, inertia=(1.0, 1.0, 1.0),
           name: str | None = None) -> MechanismSpec:
    """Spatial ladder of L cells (paper 002 section 4.3, our geometry).

    L + 1 legs hang from ground pivots at (i * spacing, 0, 0) by Hooke joints
    (first axis x in ground, second axis the leg's z); L rungs join the leg
    tips by revolute joints whose axes are the legs' z axes.  All legs stay
    parallel and the rungs only roll about their own axis, so the ladder has 2
    degrees of freedom whatever L: N = 2L + 1 bodies, 4L independent closure
    equations in the paper's count.  The legs start tilted by Rx(tilt_x) Rz(tilt_z).
    """
    if cells < 1:
        raise ValueError("a ladder needs at least one cell")
    ax, az = math.radians(tilt_x_deg), math.radians(tilt_z_deg)
    Rx = np.array([[1, 0, 0], [0, math.cos(ax), -math.sin(ax)], [0, math.sin(ax), math.cos(ax)]])
    Rz = np.array([[math.cos(az), -math.sin(az), 0], [math.sin(az), math.cos(az), 0], [0, 0, 1]])
    Rleg = Rx @ Rz
    qleg = quat_from_rotation(Rleg)
    qrung = quat_from_rotation(Rx)
    down = Rleg @ np.array([0.0, -length, 0.0])
    zaxis = Rx @ np.array([0.0, 0.0, 1.0])
    bodies, joints = [], []
    tips = []
    for i in range(cells + 1):
        top = np.array([i * spacing, 0.0, 0.0])
        tip = top + down
        tips.append(tip)
        bodies.append(rod_body(f"leg{i + 1}", top, tip, mass, inertia, orientation=qleg))
        joints.append(joint_spec(f"U{i + 1}", "universal", GROUND, f"leg{i + 1}", top,
                                 axes=((1, 0, 0), zaxis)))
    for i in range(cells):
        bodies.append(rod_body(f"rung{i + 1}", tips[i], tips[i + 1], mass, inertia, orientation=qrung))
        joints.append(joint_spec(f"R{i + 1}a", "revolute", f"leg{i + 1}", f"rung{i + 1}", tips[i], axis=zaxis))
        joints.append(joint_spec(f"R{i + 1}b", "revolute", f"rung{i + 1}", f"leg{i + 2}", tips[i + 1],
                                 axis=zaxis))
    return finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), gravity=G,
        name=name or f"spatial ladder, {cells} cell{'s' if cells > 1 else ''}",
        description=f"Spatial ladder of {cells} cells: {cells + 1} legs on Hooke joints, {cells} rungs on "
                    "revolute joints; 2 DOF whatever the number of cells (paper 002, 4.3).",
    ))
