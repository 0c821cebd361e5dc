"""Mechanism files as text and on disk: parse and validate (:func:`loads`, :func:`load`),
and write a spec back (:func:`spec_to_dict`, :func:`dumps`, :func:`save`) so that a
file read and written again round-trips bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MechanismError
from .spec import FORMAT_NAME, FORMAT_VERSION, MechanismSpec, MotionSpec, ShapeSpec
from .validate import spec_from_dict


def loads(text: str) -> MechanismSpec:
    """Parse and validate the text of a mechanism file."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MechanismError("(file)", f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise MechanismError("(file)", "not valid JSON (nested too deeply)") from None
    return spec_from_dict(data)


def load(path: str | Path) -> MechanismSpec:
    """Read, parse and validate a ``*.mech.json`` file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MechanismError("(file)", f"no such file: {p}") from None
    except UnicodeDecodeError:
        raise MechanismError("(file)", f"{p} is not UTF-8 text") from None
    except OSError as exc:
        raise MechanismError("(file)", f"cannot read {p}: {exc.strerror}") from None
    return loads(text)


# ---------------------------------------------------------------------------- saving


def _vec(v) -> list[float]:
    return [float(x) for x in v]


def _shape_to_dict(s: ShapeSpec) -> dict:
    d: dict[str, Any] = {"kind": s.kind}
    if s.kind == "rod":
        d.update({"from": _vec(s.p_from), "to": _vec(s.p_to), "radius": s.radius})
    elif s.kind == "box":
        d["size"] = _vec(s.size)
    elif s.kind == "sphere":
        d["radius"] = s.radius
    elif s.kind == "cylinder":
        d.update({"radius": s.radius, "length": s.length, "axis": _vec(s.axis)})
    else:
        d.update({"path": s.path, "scale": s.scale})
    return d


def _motion_to_dict(m: MotionSpec) -> dict:
    if m.kind == "constant-rate":
        return {"kind": m.kind, "rate": m.rate}
    if m.kind == "harmonic":
        return {"kind": m.kind, "amplitude": m.amplitude, "frequency": m.frequency, "phase": m.phase,
                "offset": m.offset}
    return {"kind": m.kind, "t": list(m.t), "q": list(m.q)}


def spec_to_dict(spec: MechanismSpec) -> dict:
    """The JSON document of ``spec`` (inverse of :func:`spec_from_dict`)."""
    bodies = []
    for b in spec.bodies:
        I = np.array(b.inertia)
        inertia = _vec(np.diag(I)) if np.count_nonzero(I - np.diag(np.diag(I))) == 0 else [
            _vec(row) for row in I
        ]
        d: dict[str, Any] = {
            "name": b.name, "mass": b.mass, "inertia": inertia, "position": _vec(b.position),
            "orientation": _vec(b.orientation), "velocity": _vec(b.velocity),
            "angular_velocity": _vec(b.angular_velocity),
        }
        if b.shape is not None:
            d["shape"] = _shape_to_dict(b.shape)
        bodies.append(d)
    joints = []
    for j in spec.joints:
        d = {"name": j.name, "type": j.type, "parent": j.parent, "child": j.child,
             "anchor": _vec(j.anchor)}
        if j.axis is not None:
            d["axis"] = _vec(j.axis)
        if j.axes is not None:
            d["axes"] = [_vec(j.axes[0]), _vec(j.axes[1])]
        if j.rate is not None:
            d["rate"] = j.rate[0] if len(j.rate) == 1 else list(j.rate)
        if j.cut:
            d["cut"] = True
        joints.append(d)
    forces = []
    for f in spec.forces:
        if f.type == "spring":
            d = {"type": f.type, "body1": f.body1, "point1": _vec(f.point1), "body2": f.body2,
                 "point2": _vec(f.point2), "stiffness": f.stiffness, "damping": f.damping}
            if f.rest_length is not None:
                d["rest_length"] = f.rest_length
        elif f.type == "joint-spring":
            d = {"type": f.type, "joint": f.joint, "stiffness": f.stiffness, "damping": f.damping,
                 "rest": f.rest}
        else:
            d = {"type": f.type, "joint": f.joint,
                 "value": f.value[0] if len(f.value) == 1 else list(f.value)}
        forces.append(d)
    out: dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out.update({"gravity": _vec(spec.gravity), "bodies": bodies, "joints": joints, "forces": forces})
    if spec.couplings:
        out["couplings"] = [{"type": c.type, "name": c.name, "driver": c.driver, "driven": c.driven,
                             "ratio": c.ratio} for c in spec.couplings]
    if spec.drivers:
        out["drivers"] = [{"type": d.type, "name": d.name, "joint": d.joint, "motion": _motion_to_dict(d.motion)}
                          for d in spec.drivers]
    if spec.settings:
        out["settings"] = dict(spec.settings)
    return out


def dumps(spec: MechanismSpec) -> str:
    """The file text of ``spec``; floats are written with ``repr`` precision."""
    return json.dumps(spec_to_dict(spec), indent=2) + "\n"


def save(spec: MechanismSpec, path: str | Path) -> None:
    """Write ``spec`` to ``path`` atomically (a failed write leaves the old file)."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(dumps(spec), encoding="utf-8")
    tmp.replace(p)
