"""Assembly of a rough drawing: the body poses nearest the drawing, in the mass metric,
that satisfy every joint's constraint (docs/derivations.md, "Assembling a rough drawing").

With ``z`` the body poses, ``z_0`` the drawn ones and ``c(z) = 0`` the stacked
constraints -- every joint's absolute-coordinate equations (engine/constraints.py),
every gear ``(q_d - q_d0) - mu (q_n - q_n0)``, every held joint ``q_j - q_j0 - value``
and every driver's joint held at its drawn coordinate -- assembly solves

    min  1/2 |z - z_0|_M^2   subject to   c(z) = 0,
    M = diag(m_i I_3, R_i J_i R_i^T)                       (mass metric)

by Gauss–Newton in the body twists ``delta = [dx_i; dtheta_i]`` (world; the update
``x += dx``, ``R <- exp(dtheta) R``).  Linearising ``c`` and the distance at ``z``
with ``e = z - z_0`` (``dx``, ``log(R R_0^T)`` per body), the step is the
mass-metric minimum-norm correction of the constraints plus the pull back towards
the drawing inside their tangent space (``^`` = scaled by ``M^(1/2)``):

    delta^ = -(I - A^+ A^) e^ - A^+ c,        A^ = A M^(-1/2),

with ``A^+`` the pseudo-inverse (redundant rows cost nothing).  A step is cut so
that no body turns by more than ``MAX_TURN`` nor moves more than ``MAX_MOVE`` link
lengths (damping).  The iteration stops at ``max |c| <= CLOSURE_TOL`` (scaled by
the mechanism's size) once the step has died out; it keeps the branch nearest the
drawing because every step is the smallest mass-weighted motion that closes the
linearised loops, so a drawing on one side of a singular configuration stays on
that side.  When the loops cannot close (``c`` stalls above the tolerance) the
assembly is refused, with the Grashof numbers for a planar four-bar.

A *rough drawing* is a mechanism file whose joints may say where the child's end of
the joint was drawn when it misses the parent's: ``child_anchor`` (world point at
t = 0) and ``child_axis`` (revolute, prismatic, cylindrical: the axis; universal: ``a2``)
(docs/file-format.md, "Rough drawings").  Without them a file already closes, and
assembly with held joints (``--fix J=VALUE``) moves the mechanism to another
configuration.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import LinkworkError, MechanismError
from ..forces import force_arrays, joint_coordinate
from ..mechfile import MechanismSpec, spec_from_dict
from ..model import REVOLUTE, PRISMATIC, Model, build_model, perpendicular_pair
from ..spatial import rot_to_quat
from .mobility import four_bar, gear_rows, joint_rate_row

#: closure target: max |c| <= CLOSURE_TOL * max(1, size of the mechanism in m)
CLOSURE_TOL = 1e-13
#: the tangent pull-back is done when a step moves no body by more than this (m, rad)
STEP_TOL = 1e-10
#: damping: largest turn of a body in one step (rad), largest move in link lengths
MAX_TURN = 0.5
MAX_MOVE = 0.5
#: Gauss–Newton iterations before the loops count as not closing
MAX_ITER = 100
#: singular values of the scaled Jacobian below this fraction of the largest are dropped
PINV_RTOL = 1e-10
#: keys a joint of a rough drawing may carry (read here only)
DRAWING_KEYS = ("child_anchor", "child_axis")


class AssemblyError(LinkworkError):
    """The drawing cannot be assembled (exit status 2 on the command line)."""


@dataclass(frozen=True)
class Drawing:
    """A mechanism as drawn: the model (body-frame joint geometry taken from the parent's
    ``anchor``/``axis`` and the child's ``child_anchor``/``child_axis``) at the drawn poses
    ``model.x0``, ``model.R0_body``, and the spec it was read from."""

    spec: MechanismSpec
    model: Model
    gaps: tuple[str, ...] = ()  # joints drawn with a child end of their own


@dataclass(frozen=True)
class Assembly:
    """Assembled poses (internal body order) and how far each body moved."""

    x: np.ndarray  # (nb, 3) centres of mass
    R: np.ndarray  # (nb, 3, 3)
    translation: np.ndarray  # (nb,) |x - x_drawn|, m
    rotation: np.ndarray  # (nb,) angle of R R_drawn^T, deg
    closure: float  # max |c| at the end (joint rows m or dimensionless, gears and held joints)
    gap_drawn: float  # max |Phi| of the drawing's joint rows (how far it was from closing)
    iterations: int
    dq: np.ndarray  # (nj,) change of every one-freedom joint's coordinate (0 for the others)


# ----------------------------------------------------------------------- drawings


def _vec3(path: str, v) -> np.ndarray:
    if not (isinstance(v, list) and len(v) == 3 and all(isinstance(a, (int, float)) and not isinstance(a, bool)
                                                        for a in v)):
        raise MechanismError(path, f"must be a list of 3 numbers (got {json.dumps(v)[:40]})")
    a = np.array(v, dtype=float)
    if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1e12):
        raise MechanismError(path, "must be finite, magnitude at most 1e12")
    return a


def drawing_from_dict(data) -> Drawing:
    """A rough drawing from a parsed mechanism file (``child_anchor``/``child_axis`` read
    here; every other rule is the format's)."""
    spec = spec_from_dict(data)
    child_anchor, child_axis = {}, {}
    for k, jd in enumerate(data.get("joints", [])):
        path = f"joints[{k}]"
        js = spec.joints[k]
        if "child_anchor" in jd:
            child_anchor[js.name] = _vec3(f"{path}.child_anchor", jd["child_anchor"])
        if "child_axis" in jd:
            if js.axis is None and js.axes is None:
                raise MechanismError(f"{path}.child_axis", f"only a revolute, prismatic, cylindrical or universal "
                                                           f"joint has one (this is {js.type})")
            a = _vec3(f"{path}.child_axis", jd["child_axis"])
            if np.linalg.norm(a) == 0.0:
                raise MechanismError(f"{path}.child_axis", "must not be zero")
            child_axis[js.name] = a / np.linalg.norm(a)
    ours = tuple(f".{key}: unknown key" for key in DRAWING_KEYS)
    spec = replace(spec, warnings=tuple(w for w in spec.warnings if not any(o in w for o in ours)))
    return drawing(spec, child_anchor, child_axis)


def load_drawing(path) -> Drawing:
    """Read a (rough) drawing from a ``*.mech.json`` file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MechanismError("(file)", f"no such file: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MechanismError("(file)", f"cannot read {p}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise MechanismError("(file)", f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") \
            from None
    return drawing_from_dict(data)


def drawing(spec: MechanismSpec, child_anchor: dict | None = None, child_axis: dict | None = None) -> Drawing:
    """The drawing of ``spec`` with the children's ends of some joints drawn apart:
    ``child_anchor[name]`` world point, ``child_axis[name]`` unit world axis (t = 0): the
    joint's axis as the child carries it (a universal joint's ``a2``)."""
    model = build_model(spec)
    child_anchor, child_axis = child_anchor or {}, child_axis or {}
    if not child_anchor and not child_axis:
        return Drawing(spec, model)
    arr = {k: getattr(model, k).copy() for k in ("anchor_pred", "anchor_succ", "axis_pred", "axis_succ",
                                                 "perp_pred")}

    def pose(b):
        return (np.zeros(3), np.eye(3)) if b < 0 else (model.x0[b], model.R0_body[b])

    for name in set(child_anchor) | set(child_axis):
        j = model.joint_index(name)
        rev = bool(model.reversed[j])
        c = int(model.pred[j] if rev else model.succ[j])  # the file's child
        xc, Rc = pose(c)
        if name in child_anchor:
            arr["anchor_pred" if rev else "anchor_succ"][j] = Rc.T @ (child_anchor[name] - xc)
        if name in child_axis:
            a = np.asarray(child_axis[name], dtype=float)
            if rev:  # the child is the pred: its axis, reversed, carries the perpendiculars
                arr["axis_pred"][j] = Rc.T @ -a
                u1, u2 = perpendicular_pair(-a)
                arr["perp_pred"][j] = (Rc.T @ u1, Rc.T @ u2)
            else:
                arr["axis_succ"][j] = Rc.T @ a
    for v in arr.values():
        v.setflags(write=False)
    gaps = tuple(sorted(set(child_anchor) | set(child_axis)))
    return Drawing(spec, replace(model, **arr), gaps)


# ----------------------------------------------------------------------- assembly


def _exp(w: np.ndarray) -> np.ndarray:
    """Rotation matrix of the rotation vector ``w`` (Rodrigues)."""
    th = float(np.linalg.norm(w))
    K = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    if th < 1e-8:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + math.sin(th) / th * K + (1.0 - math.cos(th)) / th ** 2 * K @ K


def _log(R: np.ndarray) -> np.ndarray:
    """Rotation vector of ``R`` (angle in [0, pi])."""
    q = np.zeros(4)
    rot_to_quat(np.ascontiguousarray(R), q)
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-300:
        return np.zeros(3)
    return 2.0 * math.atan2(s, q[0]) / s * q[1:]


def one_freedom_joints(model: Model) -> list[int]:
    return [j for j in range(model.nj) if model.jtype[j] in (REVOLUTE, PRISMATIC)]


def _coordinates(model: Model, fa, x, R, ref) -> np.ndarray:
    """Every one-freedom joint's coordinate from the poses, nearest ``ref``."""
    jq = np.zeros(model.nj)
    for j in one_freedom_joints(model):
        jq[j] = joint_coordinate(fa, j, x, R, ref[j])
    return jq


def _size(model: Model) -> float:
    """A link length: the largest distance of a joint point from its body's centre."""
    return float(max(1e-3, np.abs(model.anchor_succ).max(initial=0.0),
                     np.abs(model.anchor_pred[model.pred >= 0]).max(initial=0.0)))


class _Rows:
    """The stacked constraints ``c`` and their twist Jacobian ``A`` at given poses."""

    def __init__(self, model: Model, held: dict[int, float]):
        from ..constraints import constraint_jacobian

        self.model, self.held, self.fa = model, held, force_arrays(model)
        self._jac = constraint_jacobian
        self.q_drawn = _coordinates(model, self.fa, model.x0, model.R0_body, np.zeros(model.nj))

    def __call__(self, x, R, ref):
        m = self.model
        A, phi, _ = self._jac(m, x, R)
        jq = _coordinates(m, self.fa, x, R, ref)
        dq = jq - self.q_drawn
        c = [phi]
        rows = [A]
        if m.ng:
            c.append(dq[m.g_driver] - m.g_ratio * dq[m.g_driven])
            rows.append(gear_rows(m, x, R))
        for j, value in self.held.items():
            c.append([dq[j] - value])
            rows.append(joint_rate_row(m, j, x, R)[None, :])
        return np.vstack(rows), np.concatenate(c), jq


def held_joints(d: Drawing, fix: dict[str, float] | None = None) -> dict[int, float]:
    """Internal joint -> held coordinate change: every ``fix`` entry (file sense, measured
    from the drawing) and every driver's joint at its drawn coordinate."""
    model, fix = d.model, dict(fix or {})
    for dv in getattr(d.spec, "drivers", ()):
        fix.setdefault(dv.joint, 0.0)
    held = {}
    for name, value in fix.items():
        if name not in model.joint_names:
            raise MechanismError(f"--fix {name}", f"no joint named {name!r} (joints: {', '.join(model.joint_names)})")
        j = model.joint_index(name)
        if model.jtype[j] not in (REVOLUTE, PRISMATIC):
            raise MechanismError(f"--fix {name}", f"only a revolute or prismatic joint can be held "
                                                   f"({name} is {d.spec.joint(name).type})")
        if not math.isfinite(value):
            raise MechanismError(f"--fix {name}", f"must be a finite number (got {value})")
        held[j] = float(value)
    return held


def _why(d: Drawing, fix: dict, closure: float, worst: str) -> str:
    held = ", ".join(f"{k} = {v:g}" for k, v in fix.items())
    msg = (f"the loops cannot close{f' with {held} held' if held else ''}: max |Phi| stays at {closure:.3g} "
           f"(worst at {worst})")
    fb = four_bar(d.model)
    if fb is not None:
        msg += f"; four-bar: {fb.describe()}"
    return msg


def _row_owner(model: Model, r: int) -> str:
    if r < model.nc:
        j = int(np.searchsorted(model.c_adr, r, side="right") - 1)
        return f"joint {model.joint_names[j]}"
    r -= model.nc
    if r < model.ng:
        return f"gear {model.g_names[r]}"
    return "a held joint"


def assemble(d: Drawing, fix: dict[str, float] | None = None, max_iter: int = MAX_ITER) -> Assembly:
    """Assemble the drawing ``d``, holding the one-freedom joints of ``fix`` (name ->
    coordinate change from the drawing, rad or m, file sense).  Raises
    :class:`AssemblyError` when the loops cannot close."""
    model = d.model
    held = held_joints(d, fix)
    fb = four_bar(model)
    if fb is not None and fb.cls == "impossible":
        raise AssemblyError(f"the loop cannot close: {fb.describe()}")
    nb = model.nb
    x0, R0 = model.x0.copy(), model.R0_body.copy()
    x, R = x0.copy(), R0.copy()
    size = _size(model)
    tol = CLOSURE_TOL * max(1.0, size)
    rows = _Rows(model, held)
    ref = rows.q_drawn.copy()
    for j, v in held.items():
        ref[j] += v
    A, c, jq = rows(x, R, ref)
    gap_drawn = float(np.abs(c[:model.nc]).max(initial=0.0))
    it = 0
    for it in range(1, max_iter + 1):
        # mass metric: S = M^(1/2) per body, delta^ = S delta
        S = np.zeros((6 * nb, 6 * nb))
        Sinv = np.zeros_like(S)
        e = np.zeros(6 * nb)
        for i in range(nb):
            Iw = R[i] @ model.inertia[i] @ R[i].T
            w, V = np.linalg.eigh(Iw)
            sq = V @ np.diag(np.sqrt(w)) @ V.T
            k = 6 * i
            S[k:k + 3, k:k + 3] = math.sqrt(model.mass[i]) * np.eye(3)
            S[k + 3:k + 6, k + 3:k + 6] = sq
            Sinv[k:k + 3, k:k + 3] = np.eye(3) / math.sqrt(model.mass[i])
            Sinv[k + 3:k + 6, k + 3:k + 6] = V @ np.diag(1.0 / np.sqrt(w)) @ V.T
            e[k:k + 3] = x[i] - x0[i]
            e[k + 3:k + 6] = _log(R[i] @ R0[i].T)
        Ah = A @ Sinv
        eh = S @ e
        U, s, Vt = np.linalg.svd(Ah, full_matrices=False)
        keep = s > PINV_RTOL * s[0] if s.size else s > 0
        U, s, Vt = U[:, keep], s[keep], Vt[keep]
        step = -(eh - Vt.T @ (Vt @ eh)) - Vt.T @ ((U.T @ c) / s)
        delta = (Sinv @ step).reshape(nb, 6)
        turn = float(np.linalg.norm(delta[:, 3:], axis=1).max())
        move = float(np.linalg.norm(delta[:, :3], axis=1).max())
        scale = min(1.0, MAX_TURN / max(turn, 1e-300), MAX_MOVE * size / max(move, 1e-300))
        delta *= scale
        for i in range(nb):
            x[i] = x[i] + delta[i, :3]
            R[i] = _exp(delta[i, 3:]) @ R[i]
        A, c, jq = rows(x, R, jq)
        closure = float(np.abs(c).max(initial=0.0))
        if closure <= tol and max(turn, move / max(size, 1.0)) * scale <= STEP_TOL:
            break
    closure = float(np.abs(c).max(initial=0.0))
    if not closure <= tol * 10:
        worst = _row_owner(model, int(np.argmax(np.abs(c))))
        raise AssemblyError(_why(d, dict(fix or {}), closure, worst))
    trans = np.linalg.norm(x - x0, axis=1)
    rot = np.degrees([np.linalg.norm(_log(R[i] @ R0[i].T)) for i in range(nb)])
    dq = np.zeros(model.nj)
    one = one_freedom_joints(model)
    dq[one] = jq[one] - rows.q_drawn[one]
    return Assembly(x=x, R=R, translation=trans, rotation=np.asarray(rot), closure=closure,
                    gap_drawn=gap_drawn, iterations=it, dq=dq)


# ----------------------------------------------------------------------- writing


def _quat(R: np.ndarray) -> tuple[float, float, float, float]:
    q = np.zeros(4)
    rot_to_quat(np.ascontiguousarray(R), q)
    return tuple(float(v) for v in q)


def _t(v) -> tuple[float, float, float]:
    return tuple(float(a) for a in v)


def assembled_spec(d: Drawing, a: Assembly) -> MechanismSpec:
    """The mechanism at the assembled poses, as a closed file: every body, its shape,
    velocities and spring points carried by its own motion; every joint's anchor and
    axes where its parent holds them; joint-spring rests shifted by the joint's change
    (so the springs are as loaded as in the drawing)."""
    model, spec = d.model, d.spec
    x0, R0 = model.x0, model.R0_body
    idx = {name: i for i, name in enumerate(model.body_names)}
    dR = {i: a.R[i] @ R0[i].T for i in range(model.nb)}

    def carry(b: str, p):
        if b not in idx:
            return _t(p)
        i = idx[b]
        return _t(a.x[i] + dR[i] @ (np.asarray(p, dtype=float) - x0[i]))

    bodies = []
    for b in spec.bodies:
        i = idx[b.name]
        shape = b.shape
        if shape is not None and shape.kind == "rod":
            shape = replace(shape, p_from=carry(b.name, shape.p_from), p_to=carry(b.name, shape.p_to))
        elif shape is not None and shape.kind == "cylinder" and shape.axis is not None:
            shape = replace(shape, axis=_t(dR[i] @ np.asarray(shape.axis)))
        bodies.append(replace(b, position=_t(a.x[i]), orientation=_quat(a.R[i]),
                              velocity=_t(dR[i] @ np.asarray(b.velocity)),
                              angular_velocity=_t(dR[i] @ np.asarray(b.angular_velocity)), shape=shape))

    def pose(bi):
        return (np.zeros(3), np.eye(3)) if bi < 0 else (a.x[bi], a.R[bi])

    joints = []
    for js in spec.joints:
        j = model.joint_index(js.name)
        p, s = int(model.pred[j]), int(model.succ[j])
        (xp, Rp), (xs, Rs) = pose(p), pose(s)
        rev = bool(model.reversed[j])
        # the anchor where the file's parent holds it
        anchor = xs + Rs @ model.anchor_succ[j] if rev else xp + Rp @ model.anchor_pred[j]
        ch = {"anchor": _t(anchor)}
        if js.axis is not None:
            ax = Rp @ model.axis_pred[j]
            ch["axis"] = _t((-ax if rev else ax) / np.linalg.norm(ax))
        if js.axes is not None:
            a1, a2 = Rp @ model.axis_pred[j], Rs @ model.axis_succ[j]
            if rev:
                a1, a2 = -a2, -a1
            ch["axes"] = (_t(a1 / np.linalg.norm(a1)), _t(a2 / np.linalg.norm(a2)))
        joints.append(replace(js, **ch))
    forces = []
    for f in spec.forces:
        if f.type == "spring":
            rest = f.rest_length
            if rest is None:
                rest = float(np.linalg.norm(np.asarray(f.point2) - np.asarray(f.point1)))
            f = replace(f, point1=carry(f.body1, f.point1), point2=carry(f.body2, f.point2), rest_length=rest)
        elif f.type == "joint-spring":
            f = replace(f, rest=float(f.rest - a.dq[model.joint_index(f.joint)]))
        forces.append(f)
    return replace(spec, bodies=tuple(bodies), joints=tuple(joints), forces=tuple(forces), warnings=())


__all__ = ["Assembly", "AssemblyError", "Drawing", "assemble", "assembled_spec", "drawing", "drawing_from_dict",
           "held_joints", "load_drawing"]
