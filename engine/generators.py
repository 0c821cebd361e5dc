"""Parametric mechanisms: the papers' test cases and families used by the GUI.

Every function returns a validated :class:`~engine.mechfile.MechanismSpec` in
SI units with gravity along -y.  Geometry that the papers describe only in
figures lost in extraction (paper 001's loops, paper 002's five-bar and
ladder) is our own choice, documented in ``docs/examples.md``.
"""

from __future__ import annotations

import math

import numpy as np

from .mechfile import (
    GROUND, BodySpec, CouplingSpec, ForceSpec, JointSpec, MechanismSpec, ShapeSpec, spec_from_dict,
    spec_to_dict,
)

G = (0.0, -9.81, 0.0)
UNIT_INERTIA = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def _t(v) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def rod_inertia(mass: float, p0, p1, radius: float = 0.03):
    """Central inertia (world = body frame at t=0) of a uniform rod from p0 to p1."""
    d = np.asarray(p1, float) - np.asarray(p0, float)
    L = float(np.linalg.norm(d))
    u = d / L
    it = mass * (3 * radius**2 + L**2) / 12.0
    ia = mass * radius**2 / 2.0
    I = it * (np.eye(3) - np.outer(u, u)) + ia * np.outer(u, u)
    return tuple(_t(row) for row in I)


def _rod_body(name, p0, p1, mass=1.0, inertia=None, radius=0.03, orientation=(1.0, 0.0, 0.0, 0.0)):
    p0 = np.asarray(p0, float)
    p1 = np.asarray(p1, float)
    if inertia is None:
        inertia = rod_inertia(mass, p0, p1, radius)
    elif len(inertia) == 3 and not hasattr(inertia[0], "__len__"):
        inertia = ((inertia[0], 0.0, 0.0), (0.0, inertia[1], 0.0), (0.0, 0.0, inertia[2]))
    return BodySpec(
        name=name, mass=float(mass), inertia=inertia, position=_t(0.5 * (p0 + p1)),
        orientation=orientation,
        shape=ShapeSpec("rod", p_from=_t(p0), p_to=_t(p1), radius=radius),
    )


def _finish(spec: MechanismSpec) -> MechanismSpec:
    """Round-trip through the validator, so generated specs obey every file rule."""
    return spec_from_dict(spec_to_dict(spec))


def _joint(name, jtype, parent, child, anchor, axis=None, axes=None, rate=None, cut=False):
    return JointSpec(
        name=name, type=jtype, parent=parent, child=child, anchor=_t(anchor),
        axis=None if axis is None else _t(np.asarray(axis) / np.linalg.norm(axis)),
        axes=None if axes is None else tuple(_t(np.asarray(a) / np.linalg.norm(a)) for a in axes),
        rate=rate, cut=cut,
    )


# ------------------------------------------------------------------------- chains


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
        bodies.append(_rod_body(bname, p, q, mass, inertia))
        parent = GROUND if k == 0 else f"L{k}"
        if joint == "revolute":
            if planar:
                ax = (0, 0, 1)
            else:
                horiz = np.cross(d, [0.0, 1.0, 0.0])
                ax = horiz if k % 2 == 0 else (0, 1, 0)
            joints.append(_joint(f"J{k + 1}", "revolute", parent, bname, p, axis=ax))
        elif joint == "universal":
            if planar:
                axes = ((0, 0, 1), (0, 1, 0))
            else:
                a1 = np.cross(d, [0.0, 1.0, 0.0])
                axes = (a1, (0, 1, 0))
            joints.append(_joint(f"J{k + 1}", "universal", parent, bname, p, axes=axes))
        else:
            joints.append(_joint(f"J{k + 1}", "spherical", parent, bname, p))
        p = q
    kind = "planar" if planar else "spatial"
    return _finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), gravity=_t(gravity),
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
    A = _rod_body("A", (0, 0, 0), (1, 0, 0), 1.0, (1.0, 1.0, 1.0))
    B = _rod_body("B", (1, 0, 0), (1, 0, 1), 1.0, (1.0, 1.0, 1.0))
    joints = (
        _joint("J1", "spherical", GROUND, "A", (0, 0, 0)),
        _joint("J2", "spherical", "A", "B", (1, 0, 0)),
    )
    return _finish(MechanismSpec(
        bodies=(A, B), joints=joints, gravity=G, name="spatial double pendulum (paper 000, 4.2)",
        description="Paper 000 section 4.2: body A along x from the origin, body B from A's tip along z; "
                    "spherical joints; 1 m, 1 kg, J' = diag(1,1,1); released at rest.",
    ))


# -------------------------------------------------------------------------- loops


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
        _rod_body("A", O1, PA, mass, inertia),
        _rod_body("B", PA, PB, mass, inertia),
        _rod_body("C", O2, PB, mass, inertia),
    )
    z = (0, 0, 1)
    joints = (
        _joint("J1", "revolute", GROUND, "A", O1, axis=z),
        _joint("J2", "revolute", "A", "B", PA, axis=z),
        _joint("J3", "revolute", "B", "C", PB, axis=z),
        _joint("J4", "revolute", "C", GROUND, O2, axis=z),
    )
    parallelogram = abs(crank - rocker) < 1e-12 and abs(coupler - ground) < 1e-12
    title = name or ("parallelogram four-bar" if parallelogram else "four-bar")
    return _finish(MechanismSpec(
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
    bodies = tuple(_rod_body(names[k], pts[k], pts[k + 1], mass, inertia) for k in range(n))
    z = (0, 0, 1)
    joints = [_joint("J1", "revolute", GROUND, names[0], pts[0], axis=z)]
    for k in range(1, n):
        joints.append(_joint(f"J{k + 1}", "revolute", names[k - 1], names[k], pts[k], axis=z))
    joints.append(_joint(f"J{n + 1}", "revolute", names[-1], GROUND, pts[n], axis=z))
    return _finish(MechanismSpec(
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
    bodies = tuple(_rod_body(names[k], pts[k], pts[k + 1], mass, inertia) for k in range(4))
    z = (0, 0, 1)
    joints = [_joint("J6", "revolute", "L1", names[0], pts[0], axis=z)]
    for k in range(1, 4):
        joints.append(_joint(f"J{6 + k}", "revolute", names[k - 1], names[k], pts[k], axis=z))
    joints.append(_joint("J10", "revolute", names[-1], "L4", pts[4], axis=z))
    return _finish(MechanismSpec(
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
        bodies += [_rod_body(p, B, E, mass, inertia), _rod_body(d, E, tipv, mass, inertia)]
        joints += [_joint(f"B{i + 1}", "revolute", GROUND, p, B, axis=z),
                   _joint(f"E{i + 1}", "revolute", p, d, E, axis=z)]
    joints.append(_joint("T12", "revolute", "D1", "D2", tipv, axis=z))
    if legs == 3:
        joints.append(_joint("T13", "revolute", "D1", "D3", tipv, axis=z))
    title = name or ("redundant parallel five-bar" if legs == 3 else "five-bar")
    return _finish(MechanismSpec(
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
    qleg = _rot_to_quat(Rleg)
    qrung = _rot_to_quat(Rx)
    down = Rleg @ np.array([0.0, -length, 0.0])
    zaxis = Rx @ np.array([0.0, 0.0, 1.0])
    bodies, joints = [], []
    tips = []
    for i in range(cells + 1):
        top = np.array([i * spacing, 0.0, 0.0])
        tip = top + down
        tips.append(tip)
        bodies.append(_rod_body(f"leg{i + 1}", top, tip, mass, inertia, orientation=qleg))
        joints.append(_joint(f"U{i + 1}", "universal", GROUND, f"leg{i + 1}", top,
                             axes=((1, 0, 0), zaxis)))
    for i in range(cells):
        bodies.append(_rod_body(f"rung{i + 1}", tips[i], tips[i + 1], mass, inertia, orientation=qrung))
        joints.append(_joint(f"R{i + 1}a", "revolute", f"leg{i + 1}", f"rung{i + 1}", tips[i], axis=zaxis))
        joints.append(_joint(f"R{i + 1}b", "revolute", f"rung{i + 1}", f"leg{i + 2}", tips[i + 1],
                             axis=zaxis))
    return _finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), gravity=G,
        name=name or f"spatial ladder, {cells} cell{'s' if cells > 1 else ''}",
        description=f"Spatial ladder of {cells} cells: {cells + 1} legs on Hooke joints, {cells} rungs on "
                    "revolute joints; 2 DOF whatever the number of cells (paper 002, 4.3).",
    ))


def _rot_to_quat(R) -> tuple[float, float, float, float]:
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    w = math.sqrt(max(0.0, 1.0 + tr)) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + R[0, 0] - R[1, 1] - R[2, 2])) / 2, R[2, 1] - R[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1 - R[0, 0] + R[1, 1] - R[2, 2])) / 2, R[0, 2] - R[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1 - R[0, 0] - R[1, 1] + R[2, 2])) / 2, R[1, 0] - R[0, 1])
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return (w / n, x / n, y / n, z / n)


# ------------------------------------------------------------------------ others


def slider_crank(crank: float = 0.3, rod: float = 1.0, crank_angle_deg: float = 60.0,
                 crank_rate: float = 6.0, stiffness: float = 200.0) -> MechanismSpec:
    """Slider-crank with a spring on the slider: revolute, prismatic and a spring."""
    a = math.radians(crank_angle_deg)
    A = np.array([crank * math.cos(a), crank * math.sin(a), 0.0])
    xs = A[0] + math.sqrt(rod**2 - A[1] ** 2)
    S = np.array([xs, 0.0, 0.0])
    crank_b = _rod_body("crank", (0, 0, 0), A, 1.0)
    rod_b = _rod_body("rod", A, S, 0.5)
    slider = BodySpec("slider", 2.0, ((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01)), _t(S),
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
        _joint("crank_pin", "revolute", GROUND, "crank", (0, 0, 0), axis=z, rate=(crank_rate,)),
        _joint("wrist", "revolute", "crank", "rod", A, axis=z, rate=(phi_rate - crank_rate,)),
        _joint("gudgeon", "revolute", "rod", "slider", S, axis=z, rate=(-phi_rate,)),
        _joint("guide", "prismatic", GROUND, "slider", S, axis=(1, 0, 0), rate=(slide_rate,)),
    )
    forces = (
        ForceSpec("spring", body1=GROUND, point1=_t(S + np.array([1.0, 0, 0])), body2="slider",
                  point2=_t(S), stiffness=stiffness, damping=0.0, rest_length=1.0),
    )
    return _finish(MechanismSpec(
        bodies=(crank_b, rod_b, slider), joints=joints, forces=forces, gravity=G,
        name="slider-crank with spring",
        description="Crank, connecting rod and a slider on a prismatic guide, held by a spring; the crank "
                    "starts at 6 rad/s.",
    ))


def _disc(name, centre, radius, thickness, mass, axis=(0.0, 0.0, 1.0)) -> BodySpec:
    """A rotor: a uniform disc with its centre of mass on its axis (drawn as a cylinder)."""
    u = np.asarray(axis, float) / np.linalg.norm(axis)
    ia = mass * radius**2 / 2.0
    it = mass * (3 * radius**2 + thickness**2) / 12.0
    I = it * (np.eye(3) - np.outer(u, u)) + ia * np.outer(u, u)
    return BodySpec(name, float(mass), tuple(_t(r) for r in I), _t(centre),
                    shape=ShapeSpec("cylinder", radius=radius, length=thickness, axis=_t(u)))


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
    link = _rod_body("link", (0, 0, 0), tip, mass)
    rotor = _disc("rotor", (0.0, 0.0, 0.1), rotor_radius, 0.04, rotor_mass)
    z = (0, 0, 1)
    joints = (
        _joint("pivot", "revolute", GROUND, "link", (0, 0, 0), axis=z,
               rate=None if rate is None else (float(rate),)),
        _joint("motor", "revolute", GROUND, "rotor", (0, 0, 0.1), axis=z),
    )
    return _finish(MechanismSpec(
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
    upper = _rod_body("upper_arm", (0, 0, 0), E, 2.0, radius=0.035)
    fore = _rod_body("forearm", E, W, 1.0, radius=0.03)
    M = 0.6 * E + np.array([0.0, 0.0, 0.12])  # the rotor's centre, on its axis
    rotor = _disc("rotor", M, 0.06, 0.03, 0.3)
    z = (0, 0, 1)
    joints = (
        _joint("shoulder", "revolute", GROUND, "upper_arm", (0, 0, 0), axis=z),
        _joint("elbow", "revolute", "upper_arm", "forearm", E, axis=z),
        _joint("motor", "revolute", "upper_arm", "rotor", M, axis=z),
    )
    return _finish(MechanismSpec(
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
    joints = base.joints + (_joint("motor", "revolute", GROUND, "motor_rotor", centre, axis=(0, 0, 1)),)
    forces = (
        ForceSpec("joint-torque", joint="motor", value=(float(torque),)),
        ForceSpec("joint-spring", joint="motor", stiffness=0.0, damping=float(damping), rest=0.0),
    )
    return _finish(base.with_(
        bodies=base.bodies + (rotor,), joints=joints, forces=forces, name="geared crank-rocker four-bar",
        couplings=(CouplingSpec("pinion", "motor", "J1", float(ratio)),),
        description=f"Crank-rocker four-bar (crank 0.4, coupler 1.2, rocker 0.9, ground 1.0 m) whose crank J1 "
                    f"is driven by a motor rotor through an external gear pair, ratio {ratio:g}; motor torque "
                    f"{torque:g} N m with {damping:g} N m s/rad viscous loss.",
    ))


def joint_zoo() -> MechanismSpec:
    """A small tree using every joint type and every force type (for tests and demos)."""
    bodies = (
        _rod_body("arm", (0, 0, 0), (0.6, 0, 0), 1.0),
        BodySpec("slide", 0.8, ((0.02, 0, 0), (0, 0.03, 0), (0, 0, 0.02)), (0.9, 0.0, 0.0),
                 orientation=(math.cos(0.2), 0.0, math.sin(0.2), 0.0),
                 shape=ShapeSpec("box", size=(0.2, 0.1, 0.1))),
        _rod_body("spinner", (0.9, 0, 0), (0.9, -0.5, 0), 0.6),
        _rod_body("hook", (0.9, -0.5, 0), (1.3, -0.5, 0.2), 0.5),
        _rod_body("ball", (1.3, -0.5, 0.2), (1.3, -0.9, 0.5), 0.4),
        BodySpec("weld", 0.3, ((0.004, 0.001, 0), (0.001, 0.004, 0), (0, 0, 0.005)), (1.3, -1.0, 0.6),
                 shape=ShapeSpec("sphere", radius=0.08)),
    )
    joints = (
        _joint("shoulder", "revolute", GROUND, "arm", (0, 0, 0), axis=(0, 0.3, 1), rate=(0.5,)),
        _joint("rail", "prismatic", "arm", "slide", (0.6, 0, 0), axis=(1, 0, 0.2), rate=(0.1,)),
        _joint("tube", "cylindrical", "slide", "spinner", (0.9, 0, 0), axis=(0, 1, 0), rate=(1.0, 0.0)),
        _joint("hooke", "universal", "spinner", "hook", (0.9, -0.5, 0), axes=((1, 0, 0), (0, 0, 1))),
        _joint("socket", "spherical", "hook", "ball", (1.3, -0.5, 0.2), rate=(0.2, -0.3, 0.4)),
        _joint("weld", "fixed", "ball", "weld", (1.3, -0.9, 0.5)),
    )
    forces = (
        ForceSpec("joint-spring", joint="rail", stiffness=20.0, damping=0.5, rest=0.0),
        ForceSpec("joint-spring", joint="shoulder", stiffness=3.0, damping=0.1, rest=0.2),
        ForceSpec("joint-torque", joint="tube", value=(0.05, 0.0)),
        ForceSpec("joint-torque", joint="hooke", value=(0.02, -0.01)),
        ForceSpec("spring", body1=GROUND, point1=(1.3, 0.5, 0.5), body2="weld",
                  point2=(1.3, -1.0, 0.6), stiffness=15.0, damping=0.2, rest_length=1.2),
    )
    return _finish(MechanismSpec(
        bodies=bodies, joints=joints, forces=forces, gravity=G, name="joint zoo",
        description="A branch using every joint type (revolute, prismatic, cylindrical, universal, "
                    "spherical, fixed) and every force type (spring, joint-spring, joint-torque).",
    ))


# ------------------------------------------------------------------------ random


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
        _rod_body("hub", hub0, hub1, 2.0),
        _rod_body("crank", O1, PA),
        _rod_body("coupler", PA, PB),
        _rod_body("rocker", O2, PB),
        _rod_body("pendulum", P0, P0 + np.array([0.0, -0.5, 0.2]), 0.5),
        _rod_body("arm", A0, A0 + np.array([0.6, -0.3, 0.0])),
    )
    z = (0, 0, 1)

    def rate(w):
        return (w,) if rates else None

    joints = (
        _joint("Jhub", "revolute", GROUND, "hub", (0, 0, 0), axis=(0, 1, 0), rate=rate(1.5)),
        _joint("J1", "revolute", "hub", "crank", O1, axis=z, rate=rate(2.0)),
        _joint("J2", "revolute", "crank", "coupler", PA, axis=z),
        _joint("J3", "revolute", "coupler", "rocker", PB, axis=z),
        _joint("J4", "revolute", "rocker", "hub", O2, axis=z, cut=cut),
        _joint("Jp", "revolute", "hub", "pendulum", P0, axis=(1, 0, 0), rate=rate(-1.0)),
        _joint("Ja", "revolute", GROUND, "arm", A0, axis=z, rate=rate(0.7)),
    )
    return _finish(MechanismSpec(
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
        _rod_body("arm", base, O2 + 0.1 * u, 1.5),
        _rod_body("crank", O1, PA),
        _rod_body("coupler", PA, PB),
        _rod_body("rocker", O2, PB),
    )
    joints = (
        _joint("Jarm", "revolute", GROUND, "arm", base, axis=axis, rate=(2.5,)),
        _joint("J1", "revolute", "arm", "crank", O1, axis=nrm, rate=(-1.5,)),
        _joint("J2", "revolute", "crank", "coupler", PA, axis=nrm),
        _joint("J3", "revolute", "coupler", "rocker", PB, axis=nrm),
        _joint("J4", "revolute", "rocker", "arm", O2, axis=nrm),
    )
    mid = 0.5 * (PA + PB)
    forces = (
        ForceSpec("spring", body1="coupler", point1=_t(mid), body2=GROUND, point2=_t(mid + np.array([0.0, 0.6, 0.0])),
                  stiffness=20.0, damping=damping, rest_length=0.5),
        ForceSpec("joint-torque", joint="J1", value=(torque,)),
    )
    return _finish(MechanismSpec(
        bodies=bodies, joints=joints, forces=forces, gravity=G, name="four-bar on a spinning arm",
        description="A four-bar in a plane fixed to an arm that spins about a tilted axis, with a damped "
                    "spring and a crank torque.",
    ))


def _random_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _quat_rot(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def random_mechanism(seed: int, n_bodies: int = 6, loops: int = 0,
                     joint_types=("revolute", "prismatic", "cylindrical", "universal", "spherical",
                                  "fixed"),
                     loop_joint_types=("spherical", "universal", "revolute"),
                     forces: bool = True, rates: bool = True) -> MechanismSpec:
    """A random tree of ``n_bodies`` with ``loops`` extra loop-closing joints.

    Bodies have random poses, masses and full inertia tensors; tree joints
    have random types and axes; each loop joint connects two random bodies at
    a point between them, so the file's t = 0 configuration closes every loop.
    Random joint rates and body velocities give a random (and, after the
    initial projection, consistent) velocity state.
    """
    rng = np.random.default_rng(seed)
    bodies, joints = [], []
    pos = []
    names = []
    for i in range(n_bodies):
        parent = -1 if i == 0 or rng.random() < 0.15 else int(rng.integers(0, i))
        base = np.zeros(3) if parent < 0 else pos[parent]
        anchor = base + rng.normal(scale=0.4, size=3)
        x = anchor + rng.normal(scale=0.4, size=3)
        q = _random_quat(rng)
        m = float(rng.uniform(0.3, 2.0))
        A = rng.normal(size=(3, 3))
        Ib = A @ A.T * 0.05 + np.eye(3) * 0.02
        # keep the triangle inequality: use an actual mass distribution
        w = np.linalg.eigvalsh(Ib)
        if w[0] + w[1] < w[2]:
            Ib = Ib + np.eye(3) * (w[2] - w[0] - w[1])
        name = f"b{i}"
        names.append(name)
        pos.append(x)
        bodies.append(BodySpec(name, m, tuple(_t(r) for r in Ib), _t(x), tuple(float(c) for c in q),
                               velocity=_t(rng.normal(scale=0.3, size=3)) if rates else (0.0, 0.0, 0.0),
                               angular_velocity=_t(rng.normal(scale=0.3, size=3)) if rates else
                               (0.0, 0.0, 0.0)))
        jt = str(rng.choice(joint_types))
        pname = GROUND if parent < 0 else names[parent]
        axis = axes = rate = None
        if jt in ("revolute", "prismatic", "cylindrical"):
            axis = rng.normal(size=3)
        elif jt == "universal":
            a1 = rng.normal(size=3)
            a1 /= np.linalg.norm(a1)
            a2 = np.cross(a1, rng.normal(size=3))
            axes = (a1, a2)
        dof = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "spherical": 3,
               "fixed": 0}[jt]
        if rates and dof:
            rate = tuple(float(r) for r in rng.normal(scale=0.8, size=dof))
        # randomly swap parent and child in the file to exercise reversed joints
        if pname != GROUND and rng.random() < 0.3:
            joints.append(_joint(f"j{i}", jt, name, pname, anchor, axis=axis, axes=axes, rate=rate))
        else:
            joints.append(_joint(f"j{i}", jt, pname, name, anchor, axis=axis, axes=axes, rate=rate))
    for k in range(loops):
        i, j = rng.choice(n_bodies + 1, size=2, replace=False) - 1
        a = GROUND if i < 0 else names[i]
        b = GROUND if j < 0 else names[j]
        pa = np.zeros(3) if i < 0 else pos[i]
        pb = np.zeros(3) if j < 0 else pos[j]
        anchor = 0.5 * (pa + pb) + rng.normal(scale=0.2, size=3)
        jt = str(rng.choice(loop_joint_types))
        axis = axes = None
        if jt in ("revolute", "prismatic", "cylindrical"):
            axis = rng.normal(size=3)
        elif jt == "universal":
            a1 = rng.normal(size=3)
            a1 /= np.linalg.norm(a1)
            axes = (a1, np.cross(a1, rng.normal(size=3)))
        joints.append(_joint(f"c{k}", jt, a, b, anchor, axis=axis, axes=axes))
    fl = []
    if forces:
        b1, b2 = rng.choice(n_bodies, size=2, replace=False)
        fl.append(ForceSpec("spring", body1=names[b1], point1=_t(pos[b1]), body2=names[b2],
                            point2=_t(pos[b2] + 0.1), stiffness=float(rng.uniform(1, 20)),
                            damping=float(rng.uniform(0, 1)), rest_length=0.3))
        for j in joints[:n_bodies]:
            if j.type in ("revolute", "prismatic"):
                fl.append(ForceSpec("joint-spring", joint=j.name, stiffness=float(rng.uniform(0, 5)),
                                    damping=float(rng.uniform(0, 0.5)), rest=float(rng.normal(0, 0.2))))
                break
        for j in joints[:n_bodies]:
            if j.dof > 0:
                fl.append(ForceSpec("joint-torque", joint=j.name,
                                    value=tuple(float(v) for v in rng.normal(scale=0.3, size=j.dof))))
                break
    return _finish(MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), forces=tuple(fl),
        gravity=_t(rng.normal(scale=5.0, size=3)), name=f"random mechanism {seed}",
        description=f"Random tree of {n_bodies} bodies with {loops} loop-closing joints (seed {seed}).",
    ))


# ------------------------------------------------------------------------ catalogue


def paper_cases() -> dict[str, MechanismSpec]:
    """Every numerical test case of papers 000, 001 and 002, keyed by file stem."""
    cases = {
        "spatial-double-pendulum": spatial_double_pendulum(),
        "parallelogram-fourbar": fourbar(),
        "chain-128-spherical": paper000_chain(128),
        "loop-4": closed_loop(4, name="single loop of 4 bodies (paper 001 case 1)"),
        "loop-8": closed_loop(8, name="single loop of 8 bodies (paper 001 case 2)"),
        "double-loop-8": double_loop(name="double loop of 8 bodies (paper 001 case 3)"),
        "fourbar-crank-rocker": fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0,
                                        crank_angle_deg=60.0, inertia=None,
                                        name="crank-rocker four-bar (paper 002, 4.1)"),
        "fivebar-redundant": fivebar(3, name="redundant parallel five-bar (paper 002, 4.2)"),
    }
    for cells in (1, 2, 4, 8, 16):
        cases[f"ladder-{cells}"] = ladder(cells)
    return cases


#: Run settings carried by the examples whose fast modes rk4 at the default dt = 0.01 s
#: cannot follow (contract section 1, "settings"): rk4 diverged on both at the defaults
#: (exit 3 at 2 s and 1.72 s, the state exceeding 1e12) -- the spectral radius of their
#: right-hand sides reaches 179-679 1/s within 2 s (dense and hdca, chain-6-universal-spatial
#: and joint-zoo, benchmarks/results/hdca_spectrum.md), near or past rk4's stability limit
#: 2.8 / 0.01 s = 280 1/s.  An error-controlled integrator follows
#: them at the default tolerances and keeps the 0.01 s output interval.
ADAPTIVE = (("integrator", "dop853"),)


def demo_cases() -> dict[str, MechanismSpec]:
    """Further shipped examples: chains, a slider-crank, every joint type."""
    return {
        "chain-8-revolute": chain(8, "revolute", planar=True, angle_deg=20.0),
        "chain-6-universal-spatial": chain(6, "universal", planar=False).with_(settings=ADAPTIVE),
        "chain-5-spherical-spatial": chain(5, "spherical", planar=False),
        "slider-crank": slider_crank(),
        "joint-zoo": joint_zoo().with_(settings=ADAPTIVE),
        "fivebar": fivebar(2),
        "geared-arm": geared_arm(),
        "fourbar-geared": geared_fourbar(),
    }


def write_examples(directory) -> list:
    """Write every paper case and demo to ``directory`` as ``<name>.mech.json``."""
    from pathlib import Path

    from .mechfile import save

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in {**paper_cases(), **demo_cases()}.items():
        save(spec, d / f"{name}.mech.json")
        written.append(d / f"{name}.mech.json")
    return written


if __name__ == "__main__":  # python -m linkwork.engine.generators [DIR]
    import sys

    from .paths import examples_dir

    for p in write_examples(sys.argv[1] if len(sys.argv) > 1 else examples_dir()):
        print(p)
