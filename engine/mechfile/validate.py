"""Reading a parsed mechanism file into a :class:`~.spec.MechanismSpec`: every rule the
file breaks is reported as a :class:`~engine.errors.MechanismError` whose message starts
with the JSON path (``bodies[2].mass: must be > 0 (got -1)``); what is only unusual
(unknown keys, inertia no rigid body has) becomes one of the spec's ``warnings``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .. import config
from ..errors import MechanismError
from .spec import (
    COUPLING_TYPES, DRIVER_KINDS, FORCE_TYPES, FORMAT_NAME, FORMAT_VERSION, GROUND, JOINT_TYPES, MAX_MAGNITUDE,
    SHAPE_KINDS,
    BodySpec, CouplingSpec, DriverSpec, ForceSpec, JointSpec, MechanismSpec, MotionSpec, ShapeSpec, Vec3,
)

class _Reader:
    """Typed access to untrusted JSON values, raising path-named errors."""

    def __init__(self):
        self.warnings: list[str] = []

    # -- primitives
    def obj(self, path: str, v: Any) -> dict:
        if not isinstance(v, dict):
            raise MechanismError(path or "(file)", f"must be a JSON object (got {_kind(v)})")
        return v

    def lst(self, path: str, v: Any) -> list:
        if not isinstance(v, list):
            raise MechanismError(path, f"must be a list (got {_kind(v)})")
        return v

    def string(self, path: str, v: Any, nonempty: bool = True) -> str:
        if not isinstance(v, str):
            raise MechanismError(path, f"must be a string (got {_kind(v)})")
        if nonempty and not v.strip():
            raise MechanismError(path, "must not be empty")
        return v

    def boolean(self, path: str, v: Any) -> bool:
        if not isinstance(v, bool):
            raise MechanismError(path, f"must be true or false (got {_kind(v)})")
        return v

    def number(self, path: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise MechanismError(path, f"must be a number (got {_kind(v)})")
        try:
            x = float(v)
        except OverflowError:
            raise MechanismError(path, "must be a finite number (got a number too large)") from None
        if not math.isfinite(x):
            raise MechanismError(path, f"must be a finite number (got {x})")
        if abs(x) > MAX_MAGNITUDE:
            raise MechanismError(path, f"magnitude must not exceed 1e12 (got {x:.3g})")
        return x

    def positive(self, path: str, v: Any) -> float:
        x = self.number(path, v)
        if not x > 0.0:
            raise MechanismError(path, f"must be > 0 (got {_fmt(x)})")
        return x

    def nonneg(self, path: str, v: Any) -> float:
        x = self.number(path, v)
        if x < 0.0:
            raise MechanismError(path, f"must be >= 0 (got {_fmt(x)})")
        return x

    def vector(self, path: str, v: Any, n: int) -> tuple[float, ...]:
        items = self.lst(path, v)
        if len(items) != n:
            raise MechanismError(path, f"must be a list of {n} numbers (got {len(items)} items)")
        return tuple(self.number(f"{path}[{i}]", x) for i, x in enumerate(items))

    def vec3(self, path: str, v: Any) -> Vec3:
        return self.vector(path, v, 3)  # type: ignore[return-value]

    def direction(self, path: str, v: Any) -> Vec3:
        a = np.array(self.vec3(path, v))
        n = float(np.linalg.norm(a))
        if not n > 1e-12 or not math.isfinite(n):
            raise MechanismError(path, "must be a non-zero direction")
        a = a / n
        return (float(a[0]), float(a[1]), float(a[2]))

    def keys(self, path: str, d: dict, allowed: set[str]) -> None:
        for k in d:
            if k not in allowed:
                where = f"{path}.{k}" if path else str(k)
                self.warnings.append(f"{where}: unknown key, ignored")


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _read_inertia(r: _Reader, path: str, v: Any) -> tuple[Vec3, Vec3, Vec3]:
    items = r.lst(path, v)
    if len(items) == 3 and all(not isinstance(x, list) for x in items):
        moments = [r.number(f"{path}[{i}]", x) for i, x in enumerate(items)]
        for i, x in enumerate(moments):
            if not x > 0.0:
                raise MechanismError(
                    path, f"must be positive definite (principal moment [{i}] = {_fmt(x)})"
                )
        a, b, c = moments
        if a + b < c * (1 - 1e-9) or b + c < a * (1 - 1e-9) or a + c < b * (1 - 1e-9):
            r.warnings.append(
                f"{path}: principal moments break the triangle inequality; no rigid body has them"
            )
        return ((a, 0.0, 0.0), (0.0, b, 0.0), (0.0, 0.0, c))
    if len(items) != 3:
        raise MechanismError(
            path, f"must be 3 principal moments or a 3x3 matrix (got {len(items)} items)"
        )
    rows = [r.vec3(f"{path}[{i}]", row) for i, row in enumerate(items)]
    m = np.array(rows, dtype=float)
    scale = float(np.max(np.abs(m)))
    if not np.allclose(m, m.T, rtol=0.0, atol=1e-9 * max(scale, 1e-300)):
        raise MechanismError(path, "must be a symmetric matrix")
    m = 0.5 * (m + m.T)
    try:
        w = np.linalg.eigvalsh(m)
    except np.linalg.LinAlgError:
        raise MechanismError(path, "must be positive definite") from None
    if not (np.all(np.isfinite(w)) and w[0] > 1e-12 * max(w[-1], 0.0) and w[0] > 0.0):
        raise MechanismError(path, f"must be positive definite (smallest eigenvalue {w[0]:.3g})")
    return tuple(tuple(float(x) for x in row) for row in m)  # type: ignore[return-value]


def _read_shape(r: _Reader, path: str, v: Any) -> ShapeSpec:
    d = r.obj(path, v)
    if "kind" not in d:
        raise MechanismError(f"{path}.kind", "is required")
    kind = r.string(f"{path}.kind", d["kind"])
    if kind not in SHAPE_KINDS:
        raise MechanismError(f"{path}.kind", f"must be one of {', '.join(SHAPE_KINDS)} (got {kind!r})")
    allowed = {"kind", "color"}

    def need(key):
        if key not in d:
            raise MechanismError(f"{path}.{key}", f"is required for a {kind}")
        return d[key]

    if kind == "rod":
        allowed |= {"from", "to", "radius"}
        s = ShapeSpec(
            kind,
            p_from=r.vec3(f"{path}.from", need("from")),
            p_to=r.vec3(f"{path}.to", need("to")),
            radius=r.positive(f"{path}.radius", d.get("radius", 0.03)),
        )
    elif kind == "box":
        allowed |= {"size"}
        size = r.vec3(f"{path}.size", need("size"))
        for i, x in enumerate(size):
            if not x > 0:
                raise MechanismError(f"{path}.size[{i}]", f"must be > 0 (got {_fmt(x)})")
        s = ShapeSpec(kind, size=size)
    elif kind == "sphere":
        allowed |= {"radius"}
        s = ShapeSpec(kind, radius=r.positive(f"{path}.radius", need("radius")))
    elif kind == "cylinder":
        allowed |= {"radius", "length", "axis"}
        s = ShapeSpec(
            kind,
            radius=r.positive(f"{path}.radius", need("radius")),
            length=r.positive(f"{path}.length", need("length")),
            axis=r.direction(f"{path}.axis", d.get("axis", [0.0, 0.0, 1.0])),
        )
    else:  # mesh
        allowed |= {"path", "scale"}
        s = ShapeSpec(
            kind,
            path=r.string(f"{path}.path", need("path")),
            scale=r.positive(f"{path}.scale", d.get("scale", 1.0)),
        )
    r.keys(path, d, allowed)
    return s


def _read_body(r: _Reader, path: str, v: Any) -> BodySpec:
    d = r.obj(path, v)
    for key in ("name", "mass", "inertia", "position"):
        if key not in d:
            raise MechanismError(f"{path}.{key}", "is required")
    r.keys(
        path,
        d,
        {"name", "mass", "inertia", "position", "orientation", "velocity", "angular_velocity",
         "shape", "color"},
    )
    name = r.string(f"{path}.name", d["name"])
    if name == GROUND:
        raise MechanismError(f"{path}.name", '"ground" is reserved for the fixed base')
    mass = r.positive(f"{path}.mass", d["mass"])
    inertia = _read_inertia(r, f"{path}.inertia", d["inertia"])
    position = r.vec3(f"{path}.position", d["position"])
    q = r.vector(f"{path}.orientation", d.get("orientation", [1.0, 0.0, 0.0, 0.0]), 4)
    nq = math.sqrt(sum(x * x for x in q))
    if abs(nq - 1.0) > config.QUATERNION_TOL:
        raise MechanismError(
            f"{path}.orientation", f"must be a unit quaternion (|q| = {nq:.12g}, tolerance 1e-9)"
        )
    # kept as written (the model normalises it), so a file round-trips bit for bit
    velocity = r.vec3(f"{path}.velocity", d.get("velocity", [0.0, 0.0, 0.0]))
    omega = r.vec3(f"{path}.angular_velocity", d.get("angular_velocity", [0.0, 0.0, 0.0]))
    shape = _read_shape(r, f"{path}.shape", d["shape"]) if d.get("shape") is not None else None
    return BodySpec(name, mass, inertia, position, q, velocity, omega, shape)  # type: ignore[arg-type]


def _read_joint(r: _Reader, path: str, v: Any, index: int, names: set[str]) -> JointSpec:
    d = r.obj(path, v)
    for key in ("type", "parent", "child", "anchor"):
        if key not in d:
            raise MechanismError(f"{path}.{key}", "is required")
    jtype = r.string(f"{path}.type", d["type"])
    if jtype not in JOINT_TYPES:
        raise MechanismError(
            f"{path}.type", f"must be one of {', '.join(JOINT_TYPES)} (got {jtype!r})"
        )
    dof, axis_field = JOINT_TYPES[jtype]
    allowed = {"name", "type", "parent", "child", "anchor", "rate", "cut"}
    name = r.string(f"{path}.name", d["name"]) if "name" in d else f"J{index + 1}"
    parent = r.string(f"{path}.parent", d["parent"])
    child = r.string(f"{path}.child", d["child"])
    for key, who in (("parent", parent), ("child", child)):
        if who != GROUND and who not in names:
            raise MechanismError(f"{path}.{key}", f"unknown body {who!r}")
    if parent == child:
        raise MechanismError(f"{path}.child", f"a joint cannot connect {parent!r} to itself")
    anchor = r.vec3(f"{path}.anchor", d["anchor"])
    axis = axes = None
    if axis_field == "axis":
        allowed.add("axis")
        if "axis" not in d:
            raise MechanismError(f"{path}.axis", f"is required for a {jtype} joint")
        axis = r.direction(f"{path}.axis", d["axis"])
    elif axis_field == "axes":
        allowed.add("axes")
        if "axes" not in d:
            raise MechanismError(f"{path}.axes", f"is required for a {jtype} joint")
        items = r.lst(f"{path}.axes", d["axes"])
        if len(items) != 2:
            raise MechanismError(f"{path}.axes", f"must be two axes [a1, a2] (got {len(items)})")
        a1 = r.direction(f"{path}.axes[0]", items[0])
        a2 = r.direction(f"{path}.axes[1]", items[1])
        dot = abs(sum(x * y for x, y in zip(a1, a2)))
        if dot > config.AXES_ORTHOGONAL_TOL:
            raise MechanismError(
                f"{path}.axes", f"a1 and a2 must be orthogonal (|a1.a2| = {dot:.3g} for unit axes)"
            )
        axes = (a1, a2)
    rate = None
    if d.get("rate") is not None:
        raw = d["rate"]
        if dof == 0:
            raise MechanismError(f"{path}.rate", "a fixed joint has no freedom to give a rate to")
        if isinstance(raw, list):
            if len(raw) != dof:
                raise MechanismError(
                    f"{path}.rate", f"must have {dof} value(s) for a {jtype} joint (got {len(raw)})"
                )
            rate = tuple(r.number(f"{path}.rate[{i}]", x) for i, x in enumerate(raw))
        else:
            if dof != 1:
                raise MechanismError(
                    f"{path}.rate", f"must be a list of {dof} values for a {jtype} joint"
                )
            rate = (r.number(f"{path}.rate", raw),)
    cut = r.boolean(f"{path}.cut", d["cut"]) if "cut" in d else False
    r.keys(path, d, allowed)
    return JointSpec(name, jtype, parent, child, anchor, axis, axes, rate, cut)  # type: ignore[arg-type]


def _read_force(
    r: _Reader, path: str, v: Any, bodies: dict[str, BodySpec], joints: dict[str, JointSpec]
) -> ForceSpec:
    d = r.obj(path, v)
    if "type" not in d:
        raise MechanismError(f"{path}.type", "is required")
    ftype = r.string(f"{path}.type", d["type"])
    if ftype not in FORCE_TYPES:
        raise MechanismError(f"{path}.type", f"must be one of {', '.join(FORCE_TYPES)} (got {ftype!r})")

    def need(key):
        if key not in d:
            raise MechanismError(f"{path}.{key}", f"is required for a {ftype}")
        return d[key]

    def body_ref(key):
        name = r.string(f"{path}.{key}", need(key))
        if name != GROUND and name not in bodies:
            raise MechanismError(f"{path}.{key}", f"unknown body {name!r}")
        return name

    def joint_ref():
        name = r.string(f"{path}.joint", need("joint"))
        if name not in joints:
            raise MechanismError(f"{path}.joint", f"unknown joint {name!r}")
        return joints[name]

    if ftype == "spring":
        r.keys(path, d, {"type", "body1", "point1", "body2", "point2", "stiffness", "damping",
                         "rest_length"})
        b1, b2 = body_ref("body1"), body_ref("body2")
        if b1 == b2:
            raise MechanismError(f"{path}.body2", "a spring must connect two different bodies")
        p1 = r.vec3(f"{path}.point1", need("point1"))
        p2 = r.vec3(f"{path}.point2", need("point2"))
        rest = d.get("rest_length")
        rest_length = None if rest is None else r.nonneg(f"{path}.rest_length", rest)
        return ForceSpec(
            ftype, body1=b1, point1=p1, body2=b2, point2=p2,
            stiffness=r.nonneg(f"{path}.stiffness", need("stiffness")),
            damping=r.nonneg(f"{path}.damping", d.get("damping", 0.0)),
            rest_length=rest_length,
        )
    if ftype == "joint-spring":
        r.keys(path, d, {"type", "joint", "stiffness", "damping", "rest"})
        j = joint_ref()
        if j.dof != 1:
            raise MechanismError(
                f"{path}.joint", f"a joint-spring needs a one-freedom joint ({j.name!r} is {j.type})"
            )
        return ForceSpec(
            ftype, joint=j.name,
            stiffness=r.nonneg(f"{path}.stiffness", need("stiffness")),
            damping=r.nonneg(f"{path}.damping", d.get("damping", 0.0)),
            rest=r.number(f"{path}.rest", d.get("rest", 0.0)),
        )
    # joint-torque
    r.keys(path, d, {"type", "joint", "value"})
    j = joint_ref()
    if j.dof == 0:
        raise MechanismError(f"{path}.joint", f"{j.name!r} is a fixed joint: it has no freedom")
    raw = need("value")
    if isinstance(raw, list):
        if len(raw) != j.dof:
            raise MechanismError(
                f"{path}.value", f"must have {j.dof} value(s) for {j.type} joint {j.name!r}"
            )
        value = tuple(r.number(f"{path}.value[{i}]", x) for i, x in enumerate(raw))
    else:
        if j.dof != 1:
            raise MechanismError(f"{path}.value", f"must be a list of {j.dof} values for a {j.type} joint")
        value = (r.number(f"{path}.value", raw),)
    return ForceSpec(ftype, joint=j.name, value=value)


def _read_couplings(r: _Reader, v: Any, joints: list[JointSpec]) -> tuple[CouplingSpec, ...]:
    """``couplings`` (docs/file-format.md, "Mechanism file"): gear pairs between one-freedom joints.

    Refused: an unknown type or joint, a joint with other than one freedom, a gear
    from a joint to itself, a zero ratio, a joint geared twice, a geared joint marked
    ``"cut"`` (its coordinate must be a tree coordinate), a duplicate name."""
    jmap = {j.name: j for j in joints}
    out: list[CouplingSpec] = []
    names: dict[str, int] = {}
    geared: dict[str, str] = {}  # joint name -> path of the gear that uses it
    for i, c in enumerate(r.lst("couplings", v)):
        path = f"couplings[{i}]"
        d = r.obj(path, c)
        if "type" not in d:
            raise MechanismError(f"{path}.type", f"is required (one of: {', '.join(COUPLING_TYPES)})")
        ctype = r.string(f"{path}.type", d["type"])
        if ctype not in COUPLING_TYPES:
            raise MechanismError(f"{path}.type", f"must be one of {', '.join(COUPLING_TYPES)} (got {ctype!r})")
        r.keys(path, d, {"type", "name", "driver", "driven", "ratio"})
        name = r.string(f"{path}.name", d["name"]) if "name" in d else f"G{i + 1}"
        if name in names:
            raise MechanismError(f"{path}.name", f"duplicate coupling name {name!r} (also couplings[{names[name]}])")
        names[name] = i
        ends = []
        for key in ("driver", "driven"):
            if key not in d:
                raise MechanismError(f"{path}.{key}", "is required for a gear")
            jn = r.string(f"{path}.{key}", d[key])
            if jn not in jmap:
                raise MechanismError(f"{path}.{key}", f"unknown joint {jn!r}")
            j = jmap[jn]
            if j.dof != 1:
                raise MechanismError(
                    f"{path}.{key}",
                    f"a gear needs a one-freedom joint (revolute or prismatic); {jn!r} is {j.type} "
                    f"with {j.dof} freedom{'s' if j.dof != 1 else ''}")
            if j.cut:
                raise MechanismError(
                    f"{path}.{key}",
                    f"joint {jn!r} is marked \"cut\"; a geared joint must stay in the spanning tree "
                    "(mark another joint of its loop as cut)")
            if jn in geared:
                raise MechanismError(f"{path}.{key}", f"joint {jn!r} is already geared by {geared[jn]}")
            if ends and ends[0] == jn:
                raise MechanismError(f"{path}.driven", f"a gear cannot couple joint {jn!r} to itself")
            ends.append(jn)
        for jn in ends:
            geared[jn] = path
        if "ratio" not in d:
            raise MechanismError(f"{path}.ratio", "is required for a gear")
        ratio = r.number(f"{path}.ratio", d["ratio"])
        if ratio == 0.0:
            raise MechanismError(f"{path}.ratio", "must be non-zero (got 0)")
        out.append(CouplingSpec(name, ends[0], ends[1], ratio, ctype))
    return tuple(out)


def _read_motion(r: _Reader, path: str, v: Any) -> MotionSpec:
    """A driver's ``motion`` (docs/file-format.md, "Drivers")."""
    d = r.obj(path, v)
    if "kind" not in d:
        raise MechanismError(f"{path}.kind", f"is required (one of: {', '.join(DRIVER_KINDS)})")
    kind = r.string(f"{path}.kind", d["kind"])
    if kind not in DRIVER_KINDS:
        raise MechanismError(f"{path}.kind", f"must be one of {', '.join(DRIVER_KINDS)} (got {kind!r})")

    def need(key):
        if key not in d:
            raise MechanismError(f"{path}.{key}", f"is required for a {kind} motion")
        return d[key]

    if kind == "constant-rate":
        r.keys(path, d, {"kind", "rate"})
        return MotionSpec(kind, rate=r.number(f"{path}.rate", need("rate")))
    if kind == "harmonic":
        r.keys(path, d, {"kind", "amplitude", "frequency", "phase", "offset"})
        return MotionSpec(kind, amplitude=r.number(f"{path}.amplitude", need("amplitude")),
                          frequency=r.nonneg(f"{path}.frequency", need("frequency")),
                          phase=r.number(f"{path}.phase", d.get("phase", 0.0)),
                          offset=r.number(f"{path}.offset", d.get("offset", 0.0)))
    r.keys(path, d, {"kind", "t", "q"})
    ts = [r.number(f"{path}.t[{i}]", x) for i, x in enumerate(r.lst(f"{path}.t", need("t")))]
    qs = [r.number(f"{path}.q[{i}]", x) for i, x in enumerate(r.lst(f"{path}.q", need("q")))]
    if len(ts) < 2:
        raise MechanismError(f"{path}.t", f"must hold at least 2 instants (got {len(ts)})")
    if len(qs) != len(ts):
        raise MechanismError(f"{path}.q", f"must hold one value per instant of {path}.t ({len(ts)}; got {len(qs)})")
    for i in range(1, len(ts)):
        if not ts[i] > ts[i - 1]:
            raise MechanismError(f"{path}.t[{i}]",
                                 f"instants must increase (got {_fmt(ts[i])} after {_fmt(ts[i - 1])})")
    return MotionSpec(kind, t=tuple(ts), q=tuple(qs))


def _read_drivers(r: _Reader, v: Any, joints: list[JointSpec],
                  couplings: tuple[CouplingSpec, ...]) -> tuple[DriverSpec, ...]:
    """``drivers`` (docs/file-format.md, "Drivers"): prescribed motions of one-freedom joints.

    Refused: an unknown type or joint, a joint with other than one freedom, a geared
    joint, a joint driven twice, a driven joint marked ``"cut"`` (its coordinate must be a
    tree coordinate), a duplicate name, a motion law that breaks its own rules."""
    jmap = {j.name: j for j in joints}
    geared = {n: f"couplings[{i}]" for i, c in enumerate(couplings) for n in (c.driver, c.driven)}
    out: list[DriverSpec] = []
    names: dict[str, int] = {}
    driven: dict[str, int] = {}
    for i, item in enumerate(r.lst("drivers", v)):
        path = f"drivers[{i}]"
        d = r.obj(path, item)
        if "type" not in d:
            raise MechanismError(f"{path}.type", 'is required (must be "driver")')
        dtype = r.string(f"{path}.type", d["type"])
        if dtype != "driver":
            raise MechanismError(f"{path}.type", f'must be "driver" (got {dtype!r})')
        r.keys(path, d, {"type", "name", "joint", "motion"})
        name = r.string(f"{path}.name", d["name"]) if "name" in d else f"D{i + 1}"
        if name in names:
            raise MechanismError(f"{path}.name", f"duplicate driver name {name!r} (also drivers[{names[name]}])")
        names[name] = i
        if "joint" not in d:
            raise MechanismError(f"{path}.joint", "is required")
        jn = r.string(f"{path}.joint", d["joint"])
        if jn not in jmap:
            raise MechanismError(f"{path}.joint", f"unknown joint {jn!r}")
        j = jmap[jn]
        if j.dof != 1:
            raise MechanismError(
                f"{path}.joint", f"a driver needs a one-freedom joint (revolute or prismatic); {jn!r} is {j.type} "
                                 f"with {j.dof} freedom{'s' if j.dof != 1 else ''}")
        if jn in geared:
            raise MechanismError(f"{path}.joint", f"joint {jn!r} is geared by {geared[jn]}; drive the gear's "
                                                  "other joint or neither (a geared joint cannot be driven)")
        if jn in driven:
            raise MechanismError(f"{path}.joint", f"joint {jn!r} is already driven by drivers[{driven[jn]}]")
        if j.cut:
            raise MechanismError(f"{path}.joint", f"joint {jn!r} is marked \"cut\"; a driven joint must stay in "
                                                  "the spanning tree (mark another joint of its loop as cut)")
        driven[jn] = i
        if "motion" not in d:
            raise MechanismError(f"{path}.motion", "is required")
        out.append(DriverSpec(name, jn, _read_motion(r, f"{path}.motion", d["motion"])))
    return tuple(out)


def spec_from_dict(data: Any) -> MechanismSpec:
    """Validate a parsed JSON document and return its :class:`MechanismSpec`.

    Raises :class:`MechanismError` naming the JSON path of the first broken rule.
    """
    r = _Reader()
    d = r.obj("", data)
    if "format" not in d:
        raise MechanismError("format", f'is required and must be "{FORMAT_NAME}"')
    if d["format"] != FORMAT_NAME:
        raise MechanismError("format", f'must be "{FORMAT_NAME}" (got {json.dumps(d["format"])[:60]})')
    if "version" not in d:
        raise MechanismError("version", "is required")
    version = d["version"]
    if isinstance(version, bool) or not isinstance(version, (int, float)) or version != FORMAT_VERSION:
        raise MechanismError(
            "version", f"this Linkwork reads version {FORMAT_VERSION} (got {json.dumps(version)[:40]})"
        )
    r.keys("", d, {"format", "version", "name", "description", "gravity", "bodies", "joints", "forces",
                   "couplings", "drivers", "settings"})
    name = r.string("name", d["name"], nonempty=False) if "name" in d else ""
    description = r.string("description", d["description"], nonempty=False) if "description" in d else ""
    gravity = r.vec3("gravity", d["gravity"]) if "gravity" in d else (0.0, -9.81, 0.0)

    if "bodies" not in d:
        raise MechanismError("bodies", "is required")
    raw_bodies = r.lst("bodies", d["bodies"])
    if not raw_bodies:
        raise MechanismError("bodies", "must contain at least one body")
    bodies: list[BodySpec] = []
    seen: dict[str, int] = {}
    for i, b in enumerate(raw_bodies):
        body = _read_body(r, f"bodies[{i}]", b)
        if body.name in seen:
            raise MechanismError(
                f"bodies[{i}].name", f"duplicate body name {body.name!r} (also bodies[{seen[body.name]}])"
            )
        seen[body.name] = i
        bodies.append(body)
    names = set(seen)

    if "joints" not in d:
        raise MechanismError("joints", "is required")
    joints: list[JointSpec] = []
    jseen: dict[str, int] = {}
    for i, j in enumerate(r.lst("joints", d["joints"])):
        joint = _read_joint(r, f"joints[{i}]", j, i, names)
        if joint.name in jseen:
            raise MechanismError(
                f"joints[{i}].name", f"duplicate joint name {joint.name!r} (also joints[{jseen[joint.name]}])"
            )
        jseen[joint.name] = i
        joints.append(joint)

    forces: list[ForceSpec] = []
    if d.get("forces") is not None:
        bmap = {b.name: b for b in bodies}
        jmap = {j.name: j for j in joints}
        for i, f in enumerate(r.lst("forces", d["forces"])):
            forces.append(_read_force(r, f"forces[{i}]", f, bmap, jmap))

    couplings = _read_couplings(r, d["couplings"], joints) if d.get("couplings") is not None else ()
    drivers = _read_drivers(r, d["drivers"], joints, couplings) if d.get("drivers") is not None else ()
    settings = _read_settings(r, d["settings"]) if d.get("settings") is not None else ()

    _check_connected(bodies, joints)
    return MechanismSpec(
        bodies=tuple(bodies), joints=tuple(joints), forces=tuple(forces), couplings=couplings,
        drivers=drivers, gravity=gravity,
        name=name, description=description, settings=settings, warnings=tuple(r.warnings),
    )


#: the run settings a file may recommend, in the order they are stored
SETTINGS_KEYS = ("dt", "t_end", "integrator", "rtol", "atol")


def _read_settings(r: _Reader, v: Any) -> tuple[tuple[str, Any], ...]:
    """``settings``: the run settings this mechanism needs (docs/file-format.md, "Additions").

    A mechanism whose fast modes the default fixed step cannot follow says so here
    (e.g. ``{"integrator": "dop853"}``), so that it runs at *its* defaults."""
    d = r.obj("settings", v)
    r.keys("settings", d, set(SETTINGS_KEYS))
    out: list[tuple[str, Any]] = []
    for key in SETTINGS_KEYS:
        if key not in d:
            continue
        if key == "integrator":
            from ..integrators import ALL_INTEGRATORS

            name = r.string("settings.integrator", d[key])
            if name not in ALL_INTEGRATORS:
                raise MechanismError("settings.integrator",
                                     f"unknown integrator {name!r} (one of: {', '.join(ALL_INTEGRATORS)})")
            out.append((key, name))
        else:
            out.append((key, r.positive(f"settings.{key}", d[key])))
    got = dict(out)
    if "dt" in got and "t_end" in got and got["dt"] > got["t_end"]:
        raise MechanismError("settings.dt", f"must not exceed settings.t_end ({_fmt(got['t_end'])}) "
                                            f"(got {_fmt(got['dt'])})")
    return tuple(out)


def _check_connected(bodies: list[BodySpec], joints: list[JointSpec]) -> None:
    """Refuse bodies with no path of joints to ground (docs/file-format.md, "Mechanism file")."""
    adj: dict[str, list[str]] = {b.name: [] for b in bodies}
    adj[GROUND] = []
    for j in joints:
        adj[j.parent].append(j.child)
        adj[j.child].append(j.parent)
    reached = {GROUND}
    stack = [GROUND]
    while stack:
        for nb in adj[stack.pop()]:
            if nb not in reached:
                reached.add(nb)
                stack.append(nb)
    for i, b in enumerate(bodies):
        if b.name not in reached:
            raise MechanismError(f"bodies[{i}]", f"body {b.name!r} is not connected to ground by any joint")
