"""Pure editing operations on mechanism specs (no Qt, no document).

Every function takes immutable values and returns new ones; the document
records the before/after pair as one undoable edit.  Geometry follows the
file format: a joint *is* a world point (its anchor at t = 0), rods run
between world points, so moving a point moves every anchor, rod end, spring
point and centre of mass that sits on it, and a loop can never come apart.

Derived quantities stay derived: a rod body whose centre of mass was the
middle of its rod keeps it there, and an inertia that equalled the slender-rod
inertia of the old rod is recomputed for the new one.  Anything the user typed
explicitly is left alone.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from linkwork.engine.mechfile import (
    GROUND, JOINT_TYPES, BodySpec, CouplingSpec, DriverSpec, ForceSpec, JointSpec, MechanismSpec, MotionSpec,
    ShapeSpec,
)
from linkwork.engine.spatial import quat_to_rot as _quat_to_rot

Vec3 = tuple[float, float, float]

#: two points closer than this (relative to their size, at least 1e-9 m) are one point
POINT_TOL = 1e-9
#: inertia modes of new links drawn in the sketch
INERTIA_MODES = ("rod", "unit")


def vec(v) -> Vec3:
    return (float(v[0]), float(v[1]), float(v[2]))


def same_point(p, q, tol: float = POINT_TOL) -> bool:
    if p is None or q is None:
        return False
    p = np.asarray(p, float)
    q = np.asarray(q, float)
    scale = max(1.0, float(np.max(np.abs(p))), float(np.max(np.abs(q))))
    return bool(np.max(np.abs(p - q)) <= tol * scale)


def quat_to_rot(q) -> np.ndarray:
    """Rotation of ``q / |q|`` (the engine's kernel); identity for a zero quaternion
    (an orientation half typed in the editor)."""
    q = np.asarray(q, dtype=float)
    R = np.eye(3)
    if np.dot(q, q) > 0.0:
        _quat_to_rot(q, R)
    return R


def rod_inertia_world(mass: float, p0, p1, radius: float) -> np.ndarray:
    """Central inertia of a uniform solid rod from p0 to p1 (world axes)."""
    d = np.asarray(p1, float) - np.asarray(p0, float)
    L = float(np.linalg.norm(d))
    r2 = radius * radius  # not radius**2: a float power raises OverflowError above 1.3e154, a product is inf
    if L == 0.0:
        return np.eye(3) * mass * r2 / 2.0
    u = d / L
    it = mass * (3 * r2 + L * L) / 12.0
    ia = mass * r2 / 2.0
    with np.errstate(over="ignore", invalid="ignore"):  # a radius beyond float range: inf and NaN
        return it * (np.eye(3) - np.outer(u, u)) + ia * np.outer(u, u)  # entries, which validation refuses


def rod_inertia_body(body: BodySpec, p0, p1, radius: float, mass: float | None = None):
    """The slender-rod inertia in ``body``'s frame (the file's convention)."""
    R0 = quat_to_rot(body.orientation)
    Iw = rod_inertia_world(body.mass if mass is None else mass, p0, p1, radius)
    with np.errstate(over="ignore", invalid="ignore"):  # (rod_inertia_world's inf and NaN)
        Ib = R0.T @ Iw @ R0
    Ib = 0.5 * (Ib + Ib.T)
    return tuple(vec(row) for row in Ib)


def _inertia_close(a, b) -> bool:
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-12 * max(1.0, float(np.max(np.abs(b))))))


def is_rod_inertia(body: BodySpec) -> bool:
    """Whether the body's inertia is the slender-rod inertia of its rod shape."""
    s = body.shape
    if s is None or s.kind != "rod":
        return False
    return _inertia_close(body.inertia, rod_inertia_body(body, s.p_from, s.p_to, s.radius))


def diag_inertia(moments) -> tuple[Vec3, Vec3, Vec3]:
    a, b, c = (float(x) for x in moments)
    return ((a, 0.0, 0.0), (0.0, b, 0.0), (0.0, 0.0, c))


# ----------------------------------------------------------------------- names


def _letters(k: int) -> str:
    s = ""
    k += 1
    while k > 0:
        k, r = divmod(k - 1, 26)
        s = chr(ord("A") + r) + s
    return s


def next_body_name(spec: MechanismSpec) -> str:
    used = {b.name for b in spec.bodies} | {GROUND}
    k = 0
    while _letters(k) in used:
        k += 1
    return _letters(k)


def _next_numbered(prefix: str, used: set[str]) -> str:
    """``<prefix><k>`` with the first k >= len(used) + 1 not in ``used``."""
    k = len(used) + 1
    while f"{prefix}{k}" in used:
        k += 1
    return f"{prefix}{k}"


def next_joint_name(spec: MechanismSpec) -> str:
    return _next_numbered("J", {j.name for j in spec.joints})


# ------------------------------------------------------------- field-level edits


def set_mechanism(spec: MechanismSpec, **changes) -> MechanismSpec:
    """Change name, description or gravity."""
    if "gravity" in changes:
        changes["gravity"] = vec(changes["gravity"])
    return replace(spec, **changes)


def _replace_body(spec: MechanismSpec, name: str, body: BodySpec) -> MechanismSpec:
    return replace(spec, bodies=tuple(body if b.name == name else b for b in spec.bodies))


def set_body(spec: MechanismSpec, name: str, /, **changes) -> MechanismSpec:
    """Change fields of body ``name``; a new ``name`` is renamed everywhere."""
    body = spec.body(name)
    new_name = changes.pop("name", name)
    if "mass" in changes and is_rod_inertia(body) and "inertia" not in changes:
        # an inertia derived from mass and rod stays derived
        s = body.shape
        changes["inertia"] = rod_inertia_body(body, s.p_from, s.p_to, s.radius, mass=float(changes["mass"]))
    for key in ("position", "velocity", "angular_velocity"):
        if key in changes:
            changes[key] = vec(changes[key])
    if "orientation" in changes:
        changes["orientation"] = tuple(float(c) for c in changes["orientation"])
    spec = _replace_body(spec, name, replace(body, **changes))
    if new_name != name:
        spec = rename_body(spec, name, new_name)
    return spec


def rename_body(spec: MechanismSpec, old: str, new: str) -> MechanismSpec:
    """Rename a body and every reference to it (joints, forces)."""
    if old == new:
        return spec

    def r(n):
        return new if n == old else n

    bodies = tuple(replace(b, name=new) if b.name == old else b for b in spec.bodies)
    joints = tuple(replace(j, parent=r(j.parent), child=r(j.child)) for j in spec.joints)
    forces = tuple(replace(f, body1=r(f.body1), body2=r(f.body2)) if f.type == "spring" else f
                   for f in spec.forces)
    return replace(spec, bodies=bodies, joints=joints, forces=forces)


def set_joint(spec: MechanismSpec, name: str, /, **changes) -> MechanismSpec:
    """Change fields of joint ``name``.

    A new ``type`` gets the axis fields it needs (derived from the old axis or
    the given ``normal``) and loses those it cannot have; its initial rate is
    reset.  A new ``anchor`` moves the joint's point (see :func:`move_point`).
    """
    joint = spec.joint(name)
    new_name = changes.pop("name", name)
    normal = changes.pop("normal", (0.0, 0.0, 1.0))
    if "anchor" in changes:
        new_anchor = vec(changes.pop("anchor"))
        if not same_point(new_anchor, joint.anchor):
            spec, _ = move_point(spec, (), joint.anchor, new_anchor)
            joint = spec.joint(name)
    if "type" in changes and changes["type"] != joint.type:
        jtype = changes["type"]
        field = JOINT_TYPES[jtype][1]
        old_axis = joint.axis or (joint.axes[0] if joint.axes else None) or vec(normal)
        if field == "axis":
            changes.setdefault("axis", vec(old_axis))
            changes.setdefault("axes", None)
        elif field == "axes":
            a1 = np.asarray(old_axis, float)
            a1 = a1 / np.linalg.norm(a1)
            t = np.array([1.0, 0.0, 0.0]) if abs(a1[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
            a2 = np.cross(a1, t)
            a2 /= np.linalg.norm(a2)
            changes.setdefault("axes", (vec(a1), vec(a2)))
            changes.setdefault("axis", None)
        else:
            changes.setdefault("axis", None)
            changes.setdefault("axes", None)
        changes.setdefault("rate", None)
    if changes.get("axis") is not None:
        changes["axis"] = vec(changes["axis"])
    if changes.get("axes") is not None:
        changes["axes"] = (vec(changes["axes"][0]), vec(changes["axes"][1]))
    if changes.get("rate") is not None:
        changes["rate"] = tuple(float(x) for x in changes["rate"])
    joint = replace(joint, **changes)
    spec = replace(spec, joints=tuple(joint if j.name == name else j for j in spec.joints))
    if new_name != name:
        spec = rename_joint(spec, name, new_name)
    return spec


def rename_joint(spec: MechanismSpec, old: str, new: str) -> MechanismSpec:
    """Rename a joint and every reference to it (force elements, gears, drivers)."""
    if old == new:
        return spec
    joints = tuple(replace(j, name=new) if j.name == old else j for j in spec.joints)
    forces = tuple(replace(f, joint=new) if f.joint == old else f for f in spec.forces)

    def r(n):
        return new if n == old else n

    couplings = tuple(replace(c, driver=r(c.driver), driven=r(c.driven)) for c in spec.couplings)
    drivers = tuple(replace(d, joint=r(d.joint)) for d in spec.drivers)
    return replace(spec, joints=joints, forces=forces, couplings=couplings, drivers=drivers)


# ------------------------------------------------------------------------ gears


def free_joints(spec: MechanismSpec, exclude: str | None = None) -> list[str]:
    """One-freedom joints (revolute, prismatic) in no gear and under no driver -- those a
    gear or a driver may take (docs/file-format.md) -- but ``exclude``, in file order."""
    used = {d.joint for d in spec.drivers} | {n for c in spec.couplings for n in (c.driver, c.driven)}
    return [j.name for j in spec.joints
            if JOINT_TYPES[j.type][0] == 1 and j.name not in used and j.name != exclude]


def next_gear_name(spec: MechanismSpec) -> str:
    return _next_numbered("G", {c.name for c in spec.couplings})


def add_gear(spec: MechanismSpec, driver: str, driven: str | None = None, ratio: float = 1.0,
             name: str | None = None) -> MechanismSpec:
    """Append a gear ``driver -> driven`` (docs/file-format.md, "Couplings").  Without
    ``driven``, the first one-freedom joint not yet geared is taken; the loader's
    rules judge the result like any file (one-freedom joints, each geared once,
    finite non-zero ratio)."""
    if driven is None:
        free = free_joints(spec, exclude=driver)
        if not free:
            raise ValueError(f"no other one-freedom joint is free to gear to {driver!r}")
        driven = free[0]
    gear = CouplingSpec(name or next_gear_name(spec), driver, driven, float(ratio))
    return replace(spec, couplings=spec.couplings + (gear,))


def set_gear(spec: MechanismSpec, name: str, /, **changes) -> MechanismSpec:
    """Change fields of gear ``name`` (``name``, ``driver``, ``driven``, ``ratio``)."""
    if "ratio" in changes:
        changes["ratio"] = float(changes["ratio"])
    spec.coupling(name)  # KeyError for an unknown gear
    return replace(spec, couplings=tuple(replace(c, **changes) if c.name == name else c
                                         for c in spec.couplings))


def delete_gear(spec: MechanismSpec, name: str) -> MechanismSpec:
    return replace(spec, couplings=tuple(c for c in spec.couplings if c.name != name))


# ---------------------------------------------------------------------- drivers

#: the motion law a new driver starts with: one turn a second (60 rpm) on a revolute
#: joint, 1 m/s on a prismatic one
NEW_DRIVER_RATE = 2.0 * math.pi
#: the fields each motion law uses (docs/file-format.md, "Drivers")
MOTION_FIELDS = {"constant-rate": ("rate",), "harmonic": ("amplitude", "frequency", "phase", "offset"),
                 "table": ("t", "q")}


def motion_summary(m: MotionSpec) -> str:
    """A driver's motion law in a few words, for lists."""
    if m.kind == "constant-rate":
        return f"constant rate {m.rate:g}"
    if m.kind == "harmonic":
        return f"{m.offset:g} + {m.amplitude:g} sin(2π·{m.frequency:g} t + {m.phase:g})"
    return f"table of {len(m.t)} points"


def next_driver_name(spec: MechanismSpec) -> str:
    return _next_numbered("M", {d.name for d in spec.drivers})


def add_driver(spec: MechanismSpec, joint: str, name: str | None = None,
               motion: MotionSpec | None = None) -> MechanismSpec:
    """Append a driver on ``joint`` (docs/file-format.md, "Drivers"): by default a constant
    rate of :data:`NEW_DRIVER_RATE` (rad/s or m/s).  The loader's rules judge the result
    like any file (one-freedom joint, at most one driver, no gear on it)."""
    spec.joint(joint)  # KeyError for an unknown joint
    rate = NEW_DRIVER_RATE if spec.joint(joint).type == "revolute" else 1.0
    driver = DriverSpec(name or next_driver_name(spec), joint, motion or MotionSpec("constant-rate", rate=rate))
    return replace(spec, drivers=spec.drivers + (driver,))


def set_driver(spec: MechanismSpec, name: str, /, **changes) -> MechanismSpec:
    """Change driver ``name``: ``name``, ``joint``, or its motion law -- ``kind`` and the
    law's numbers (``rate``; ``amplitude``, ``frequency``, ``phase``, ``offset``; ``t``, ``q``).
    A law keeps only its own numbers (those of another kind fall back to zero), as the
    file holds it."""
    old = next((d for d in spec.drivers if d.name == name), None)
    if old is None:
        raise KeyError(name)
    motion_keys = {"kind"} | {k for fields in MOTION_FIELDS.values() for k in fields}
    law = {k: changes.pop(k) for k in list(changes) if k in motion_keys}
    for k in ("t", "q"):
        if k in law:
            law[k] = tuple(float(x) for x in law[k])
    for k in ("rate", "amplitude", "frequency", "phase", "offset"):
        if k in law:
            law[k] = float(law[k])
    motion = replace(old.motion, **law)
    # only the law's own numbers are kept, as the file holds them (spec_to_dict)
    motion = MotionSpec(motion.kind, **{k: getattr(motion, k) for k in MOTION_FIELDS.get(motion.kind, ())})
    new = replace(old, motion=motion, **changes)
    return replace(spec, drivers=tuple(new if d.name == name else d for d in spec.drivers))


def delete_driver(spec: MechanismSpec, name: str) -> MechanismSpec:
    return replace(spec, drivers=tuple(d for d in spec.drivers if d.name != name))


def set_force(spec: MechanismSpec, index: int, **changes) -> MechanismSpec:
    f = spec.forces[index]
    for key in ("point1", "point2"):
        if changes.get(key) is not None:
            changes[key] = vec(changes[key])
    if changes.get("value") is not None:
        changes["value"] = tuple(float(x) for x in changes["value"])
    forces = list(spec.forces)
    forces[index] = replace(f, **changes)
    return replace(spec, forces=tuple(forces))


def add_force(spec: MechanismSpec, force: ForceSpec) -> MechanismSpec:
    return replace(spec, forces=spec.forces + (force,))


# --------------------------------------------------------------------- deleting


def delete_force(spec: MechanismSpec, index: int) -> MechanismSpec:
    return replace(spec, forces=tuple(f for k, f in enumerate(spec.forces) if k != index))


def delete_joint(spec: MechanismSpec, name: str) -> MechanismSpec:
    """Remove a joint, the force elements acting on it and the gears and drivers using it."""
    return replace(
        spec,
        joints=tuple(j for j in spec.joints if j.name != name),
        forces=tuple(f for f in spec.forces if f.joint != name),
        couplings=tuple(c for c in spec.couplings if name not in (c.driver, c.driven)),
        drivers=tuple(d for d in spec.drivers if d.joint != name),
    )


def delete_body(spec: MechanismSpec, name: str) -> MechanismSpec:
    """Remove a body, its joints and every force element, gear and driver that refers to them."""
    gone_joints = {j.name for j in spec.joints if name in (j.parent, j.child)}
    return replace(
        spec,
        bodies=tuple(b for b in spec.bodies if b.name != name),
        joints=tuple(j for j in spec.joints if j.name not in gone_joints),
        forces=tuple(f for f in spec.forces
                     if f.joint not in gone_joints and name not in (f.body1, f.body2)),
        couplings=tuple(c for c in spec.couplings if not gone_joints & {c.driver, c.driven}),
        drivers=tuple(d for d in spec.drivers if d.joint not in gone_joints),
    )


# ----------------------------------------------------------------------- points


def _moved_rod_body(b: BodySpec, f_new, t_new) -> BodySpec:
    s = b.shape
    changes = {"shape": replace(s, p_from=vec(f_new), p_to=vec(t_new))}
    mid_old = 0.5 * (np.asarray(s.p_from) + np.asarray(s.p_to))
    if same_point(b.position, mid_old):
        changes["position"] = vec(0.5 * (np.asarray(f_new) + np.asarray(t_new)))
    if is_rod_inertia(b):
        changes["inertia"] = rod_inertia_body(b, f_new, t_new, s.radius)
    return replace(b, **changes)


def move_point(spec: MechanismSpec, pivots: Sequence[Vec3], old, new) -> tuple[MechanismSpec, tuple]:
    """Move everything that sits on world point ``old`` to ``new``.

    Joint anchors, rod ends, spring attachment points, centres of mass and
    sketch pivots at ``old`` all follow; rods keep derived centres and inertias.
    """
    new = vec(new)
    bodies = []
    for b in spec.bodies:
        s = b.shape
        if s is not None and s.kind == "rod":
            f = new if same_point(s.p_from, old) else s.p_from
            t = new if same_point(s.p_to, old) else s.p_to
            if f is not s.p_from or t is not s.p_to:
                nb = _moved_rod_body(b, f, t)
                if same_point(b.position, old):
                    nb = replace(nb, position=new)
                bodies.append(nb)
                continue
        if same_point(b.position, old):
            bodies.append(replace(b, position=new))
        else:
            bodies.append(b)
    joints = tuple(replace(j, anchor=new) if same_point(j.anchor, old) else j for j in spec.joints)
    forces = []
    for f in spec.forces:
        if f.type == "spring":
            ch = {}
            if same_point(f.point1, old):
                ch["point1"] = new
            if same_point(f.point2, old):
                ch["point2"] = new
            f = replace(f, **ch) if ch else f
        forces.append(f)
    piv = tuple(new if same_point(p, old) else tuple(p) for p in pivots)
    return replace(spec, bodies=tuple(bodies), joints=joints, forces=tuple(forces)), piv


def translate_bodies(spec: MechanismSpec, names: set[str], delta, joints: set[str] = frozenset()):
    """Rigidly translate the bodies ``names`` (and the joints ``joints``) by ``delta``."""
    d = np.asarray(delta, float)

    def tr(p):
        return vec(np.asarray(p, float) + d)

    bodies = []
    for b in spec.bodies:
        if b.name in names:
            s = b.shape
            if s is not None and s.kind == "rod":
                s = replace(s, p_from=tr(s.p_from), p_to=tr(s.p_to))
            b = replace(b, position=tr(b.position), shape=s)
        bodies.append(b)
    js = tuple(replace(j, anchor=tr(j.anchor)) if j.name in joints else j for j in spec.joints)
    forces = []
    for f in spec.forces:
        if f.type == "spring":
            ch = {}
            if f.body1 in names:
                ch["point1"] = tr(f.point1)
            if f.body2 in names:
                ch["point2"] = tr(f.point2)
            f = replace(f, **ch) if ch else f
        forces.append(f)
    return replace(spec, bodies=tuple(bodies), joints=js, forces=tuple(forces))


def _component(spec: MechanismSpec, start: str, removed: str) -> set[str]:
    """Bodies (and possibly "ground") reachable from ``start`` without passing ``removed``."""
    adj: dict[str, list[str]] = {}
    for j in spec.joints:
        if removed in (j.parent, j.child):
            continue
        adj.setdefault(j.parent, []).append(j.child)
        adj.setdefault(j.child, []).append(j.parent)
    seen = {start}
    stack = [start]
    while stack:
        for n in adj.get(stack.pop(), []):
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return seen


def rod_length(body: BodySpec) -> float | None:
    s = body.shape
    if s is None or s.kind != "rod":
        return None
    return float(np.linalg.norm(np.asarray(s.p_to) - np.asarray(s.p_from)))


def set_rod_length(spec: MechanismSpec, name: str, length: float) -> MechanismSpec:
    """Make rod body ``name`` ``length`` long by moving its ``to`` end along the rod.

    What hangs off that end and does not lead back to ground without this
    body (the rest of an open chain) is carried along rigidly; a body that
    closes a loop through that end is stretched instead.
    """
    body = spec.body(name)
    s = body.shape
    if s is None or s.kind != "rod":
        raise ValueError(f"body {name!r} has no rod shape, so it has no length")
    if not (length > 0 and math.isfinite(length)):
        raise ValueError("length must be a positive number")
    f = np.asarray(s.p_from, float)
    t = np.asarray(s.p_to, float)
    d = t - f
    L = float(np.linalg.norm(d))
    if L == 0.0:
        raise ValueError(f"body {name!r} has a rod of zero length; move one of its ends instead")
    t_new = f + d * (length / L)
    delta = t_new - t
    # bodies attached at the moving end, through joints there
    carried: set[str] = set()
    carried_joints: set[str] = set()
    for j in spec.joints:
        if not same_point(j.anchor, t) or name not in (j.parent, j.child):
            continue
        other = j.child if j.parent == name else j.parent
        if other == GROUND or other in carried:
            continue
        comp = _component(spec, other, name)
        if GROUND not in comp:
            carried |= comp
    if carried:
        carried_joints = {j.name for j in spec.joints
                          if (j.parent in carried and j.child in carried)
                          or ({j.parent, j.child} & carried and name in (j.parent, j.child)
                              and same_point(j.anchor, t))}
        spec = translate_bodies(spec, carried, delta, carried_joints)
    spec, _ = move_point(spec, (), vec(t), vec(t_new))
    return spec


# ------------------------------------------------------------------- sketching


def joint_axes_for(jtype: str, normal, direction=None) -> dict:
    """Axis fields of a new joint drawn in a plane with unit ``normal``.

    Revolute and cylindrical joints turn about the normal; a prismatic joint
    slides along the drawn link ``direction``; a universal joint has its first
    axis along the normal and its second in the plane, across the link.
    """
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    field = JOINT_TYPES[jtype][1]
    d = None
    if direction is not None:
        d = np.asarray(direction, float)
        d = d - n * float(d @ n)
        if np.linalg.norm(d) < 1e-12:
            d = None
    if d is None:
        t = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        d = np.cross(n, t)
    d = d / np.linalg.norm(d)
    if field is None:
        return {}
    if field == "axes":
        a2 = np.cross(d, n)
        return {"axes": (vec(n), vec(a2 / np.linalg.norm(a2)))}
    if jtype == "prismatic":
        return {"axis": vec(d)}
    return {"axis": vec(n)}


def make_joint(spec: MechanismSpec, parent: str, child: str, anchor, jtype: str, normal,
               direction=None, name: str | None = None) -> JointSpec:
    return JointSpec(name=name or next_joint_name(spec), type=jtype, parent=parent, child=child,
                     anchor=vec(anchor), **joint_axes_for(jtype, normal, direction))


def add_link(spec: MechanismSpec, p0, p1, attach: str | None, jtype: str, normal,
             mass: float = 1.0, inertia_mode: str = "rod", radius: float = 0.03,
             name: str | None = None) -> tuple[MechanismSpec, str, str | None]:
    """Add a rod body from ``p0`` to ``p1`` jointed at ``p0`` to ``attach``.

    ``attach`` is a body name, ``"ground"``, or None for a free start.  Returns
    (spec, body name, joint name or None).
    """
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    if np.linalg.norm(p1 - p0) < 1e-9:
        raise ValueError("a link needs two different end points")
    bname = name or next_body_name(spec)
    if inertia_mode == "rod":
        inertia = tuple(vec(r) for r in rod_inertia_world(mass, p0, p1, radius))
    elif inertia_mode == "unit":
        inertia = diag_inertia((1.0, 1.0, 1.0))
    else:
        raise ValueError(f"inertia mode must be one of {INERTIA_MODES}")
    body = BodySpec(name=bname, mass=float(mass), inertia=inertia, position=vec(0.5 * (p0 + p1)),
                    shape=ShapeSpec("rod", p_from=vec(p0), p_to=vec(p1), radius=float(radius)))
    spec = replace(spec, bodies=spec.bodies + (body,))
    jname = None
    if attach is not None:
        j = make_joint(spec, attach, bname, p0, jtype, normal, p1 - p0)
        spec = replace(spec, joints=spec.joints + (j,))
        jname = j.name
    return spec, bname, jname


def add_joint(spec: MechanismSpec, parent: str, child: str, anchor, jtype: str, normal,
              direction=None) -> tuple[MechanismSpec, str]:
    j = make_joint(spec, parent, child, anchor, jtype, normal, direction)
    return replace(spec, joints=spec.joints + (j,)), j.name
