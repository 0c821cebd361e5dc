"""A MuJoCo model of a Linkwork mechanism, built from Linkwork's :class:`~engine.model.Model`
with MuJoCo's model-editing API (``MjSpec``; MJCF text nests one element per body and its
parser stops at a few hundred levels).

Frames: every body's frame sits at its tree joint's anchor, parallel to the world at
t = 0, so MuJoCo's reference configuration ``qpos0`` is Linkwork's initial one and every
joint coordinate is zero there, as in Linkwork.  The body's inertia is Linkwork's (mass at
the centre of mass, central inertia turned into world axes).  No geoms, contacts off.

* Tree joints: revolute -> hinge, prismatic -> slide, cylindrical -> hinge and slide on
  one axis, universal -> two hinges (the first about ``a1``, fixed in the parent; MuJoCo
  turns a body's later joints with its earlier ones, so the second turns about ``a2``,
  fixed in the child), spherical -> ball, fixed -> no joint.  Axes are Linkwork's internal
  ones, so a coordinate means what it means in Linkwork (and in the file).
* Cut joints (the loops): spherical -> one ``connect``, revolute -> two ``connect`` s at
  the two points of :mod:`.closure_points` on its axis (six equations for a joint's five:
  MuJoCo's soft constraints take the redundant row), fixed -> one ``weld``; all between
  sites, so the closure error is read off the same sites.  Prismatic, cylindrical and
  universal cut joints have no MuJoCo equality: :func:`not_comparable` says so.
* Gears -> ``joint`` equalities ``q_d - q_d0 = mu (q_n - q_n0)``.
* Forces: point springs -> spatial tendons between two sites (stiffness, damping,
  spring length); joint springs -> the joint's stiffness, ``springref`` and damping;
  joint torques -> constant generalized forces (``qfrc_applied``, set by
  :func:`initial_data`).  A joint force on a cut joint and a spherical joint's torque
  (Linkwork fixes its components in the parent's frame, a ball joint's generalized force
  is in the child's) have no counterpart.

MuJoCo's constraints are soft (``solref``/``solimp``, MuJoCo's defaults here): a loop
closes only as far as its constraint impedance holds it, which is what its closure
error measures.  :func:`initial_data` gives MuJoCo Linkwork's initial velocities (the
least-squares joint velocities of Linkwork's body twists through MuJoCo's Jacobians).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..model import (CYLINDRICAL, F_JOINT_SPRING, F_JOINT_TORQUE, F_SPRING, FIXED, PRISMATIC, REVOLUTE,
                     SPHERICAL, TYPE_NAME, UNIVERSAL, Model)
from .closure_points import ClosurePoints, closure_points, unsupported_cuts


class WorldFrames(NamedTuple):
    """Tree joints' anchors and axes and the bodies' inertias in world axes at t = 0."""

    anchor: np.ndarray  # (nb, 3) anchor of body i's tree joint
    axis: np.ndarray  # (nb, 3) its first axis (revolute, prismatic, cylindrical; universal a1)
    axis2: np.ndarray  # (nb, 3) a universal joint's second axis a2 (zero otherwise)
    inertia: np.ndarray  # (nb, 3, 3) central inertia of body i, world axes


def world_frames(model: Model) -> WorldFrames:
    """World anchor and axes of every tree joint and world inertia of every body at t = 0."""
    nb = model.nb
    anchor = np.zeros((nb, 3))
    axis = np.zeros((nb, 3))
    axis2 = np.zeros((nb, 3))
    inertia = np.zeros((nb, 3, 3))
    for i in range(nb):
        p = model.pred[i]
        Rp = np.eye(3) if p < 0 else model.R0_body[p]
        anchor[i] = model.anchor_pred[i] if p < 0 else model.x0[p] + Rp @ model.anchor_pred[i]
        axis[i] = Rp @ model.axis_pred[i]
        axis2[i] = Rp @ model.axis2_pred[i]
        R = model.R0_body[i]
        inertia[i] = R @ model.inertia[i] @ R.T
    return WorldFrames(anchor, axis, axis2, inertia)


@dataclass(frozen=True)
class MujocoMechanism:
    """A compiled MuJoCo model of a Linkwork mechanism and what a run needs besides."""

    mj: object  # mujoco.MjModel
    qfrc: np.ndarray  # (nv,) constant generalized forces of the joint-torque elements
    sites: np.ndarray  # (k, 2) site ids of the closure point pairs (pred side, succ side)
    gears: np.ndarray  # (ng, 3) driver qpos address, driven qpos address, ratio
    dof_adr: np.ndarray  # (nb,) first MuJoCo dof of Linkwork's tree joint i (-1: fixed joint)
    #: (nb,) MuJoCo's id of Linkwork's body i (MuJoCo numbers bodies depth first, Linkwork
    #: breadth first: on a branched tree they differ)
    body_id: np.ndarray
    points: ClosurePoints
    #: the model's equalities, by kind (connect, weld, joint)
    equalities: dict


def not_comparable(model: Model) -> list[str]:
    """What in ``model`` MuJoCo's model cannot carry (empty: the model is the mechanism)."""
    why = [f"{c} has no MuJoCo equality" for c in unsupported_cuts(model)]
    for e in range(model.f_type.shape[0]):
        ft, j = int(model.f_type[e]), int(model.f_joint[e])
        if ft == F_SPRING:
            continue
        what = "joint spring" if ft == F_JOINT_SPRING else "joint torque"
        if j >= model.nb:
            why.append(f"{what} on the cut joint {model.joint_names[j]!r} (MuJoCo has no joint there)")
        elif ft == F_JOINT_TORQUE and int(model.jtype[j]) == SPHERICAL:
            why.append(f"joint torque on the spherical joint {model.joint_names[j]!r} (Linkwork fixes its "
                       "components in the parent's frame, a ball joint's generalized force is in the child's)")
    return why


def _add_joints(mujoco, body, model: Model, i: int, wf: WorldFrames) -> list[str]:
    """Body ``i``'s MuJoCo joints for Linkwork's tree joint ``i``; returns their names."""
    jt = int(model.jtype[i])
    hinge, slide = mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE
    if jt == REVOLUTE:
        parts = [(hinge, wf.axis[i])]
    elif jt == PRISMATIC:
        parts = [(slide, wf.axis[i])]
    elif jt == CYLINDRICAL:
        parts = [(hinge, wf.axis[i]), (slide, wf.axis[i])]
    elif jt == UNIVERSAL:
        parts = [(hinge, wf.axis[i]), (hinge, wf.axis2[i])]
    elif jt == SPHERICAL:
        parts = [(mujoco.mjtJoint.mjJNT_BALL, None)]
    elif jt == FIXED:
        parts = []
    else:  # pragma: no cover - the model's type codes are the six above
        raise ValueError(f"joint type {TYPE_NAME.get(jt, jt)!r}")
    names = []
    for k, (kind, axis) in enumerate(parts):
        name = f"J{i}" if k == 0 else f"J{i}.{k}"
        if axis is None:
            body.add_joint(name=name, type=kind)
        else:
            body.add_joint(name=name, type=kind, axis=axis)
        names.append(name)
    return names


def _coefficient(obj, attr: str, value: float) -> None:
    """Set a stiffness or damping: a scalar in older MuJoCo, the linear term of a
    polynomial (``[value, 0, 0]``) in MuJoCo 4."""
    setattr(obj, attr, [value] + [0.0] * (len(getattr(obj, attr)) - 1) if np.ndim(getattr(obj, attr)) else value)


def _joint_forces(model: Model, joints: list, qfrc_of: dict) -> None:
    """Joint springs into the joints' stiffness and damping; joint torques into ``qfrc_of``
    (MuJoCo joint name -> generalized force)."""
    springs: dict[int, list] = {}
    for e in range(model.f_type.shape[0]):
        ft, j = int(model.f_type[e]), int(model.f_joint[e])
        if ft == F_SPRING or j >= model.nb:
            continue
        k, c, rest = (float(v) for v in model.f_params[e, :3])
        if ft == F_JOINT_SPRING:
            springs.setdefault(j, []).append((k, c, rest))
            continue
        jt = int(model.jtype[j])
        vals = [float(v) for v in model.f_params[e]]
        if jt in (REVOLUTE, PRISMATIC):
            gen = [vals[0]]
        elif jt == CYLINDRICAL:
            gen = [vals[0], vals[1]]
        elif jt == UNIVERSAL:  # internal axes of a reversed joint are (-a2, -a1): values swap
            gen = [vals[1], vals[0]] if model.reversed[j] else [vals[0], vals[1]]
        else:
            continue
        for name, g in zip(joints[j][1], gen):
            qfrc_of[name] = qfrc_of.get(name, 0.0) + g
    for j, elems in springs.items():
        mj_joint = joints[j][0][0]
        k = sum(e[0] for e in elems)
        _coefficient(mj_joint, "stiffness", k)
        _coefficient(mj_joint, "damping", sum(e[1] for e in elems))
        # several springs on one joint: one spring of their summed stiffness about their weighted rest
        mj_joint.springref = sum(e[0] * e[2] for e in elems) / k if k else 0.0


def _world_point(model: Model, b: int, p: np.ndarray) -> np.ndarray:
    return np.asarray(p, dtype=float).copy() if b < 0 else model.x0[b] + model.R0_body[b] @ p


def build(model: Model, dt: float | None = None) -> MujocoMechanism:
    """MuJoCo's model of ``model`` (module docstring); ``dt``: RK4 at that step (None:
    MuJoCo's default integrator and step, for a model only evaluated)."""
    import mujoco

    wf = world_frames(model)
    spec = mujoco.MjSpec()
    spec.compiler.degree = False  # springref and every angle in radians, as Linkwork's
    spec.option.gravity = np.asarray(model.gravity, dtype=float)
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    if dt is not None:
        spec.option.integrator = int(mujoco.mjtIntegrator.mjINT_RK4)
        spec.option.timestep = float(dt)
    bodies, joints = [], []
    for i in range(model.nb):
        p = int(model.parent[i])
        pa = np.zeros(3) if p < 0 else wf.anchor[p]
        b = (spec.worldbody if p < 0 else bodies[p]).add_body(name=f"B{i}", pos=wf.anchor[i] - pa)
        b.explicitinertial = True
        b.mass = float(model.mass[i])
        b.ipos = model.x0[i] - wf.anchor[i]
        I = wf.inertia[i]
        b.fullinertia = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        names = _add_joints(mujoco, b, model, i, wf)
        joints.append((list(b.joints), names))
        bodies.append(b)

    def site(b: int, name: str, world: np.ndarray) -> str:
        parent = spec.worldbody if b < 0 else bodies[b]
        parent.add_site(name=name, pos=world - (0.0 if b < 0 else wf.anchor[b]))
        return name

    # loops: connects and welds between the closure points' sites
    pts = closure_points(model)
    pair_names = [(site(int(pts.body[k, 0]), f"C{k}.p", pts.point[k, 0]),
                   site(int(pts.body[k, 1]), f"C{k}.s", pts.point[k, 1])) for k in range(pts.count)]
    equalities = {"connect": 0, "weld": 0, "joint": 0}
    for k in range(pts.count):
        j = int(pts.joint[k])
        jt = int(model.jtype[j])
        first = k == 0 or int(pts.joint[k - 1]) != j
        if jt == FIXED and not first:
            continue  # one weld per fixed joint, at its anchor; the other points only measure
        kind = "weld" if jt == FIXED else "connect"
        eq = spec.add_equality(name=f"{kind}{k}")
        eq.type = mujoco.mjtEq.mjEQ_WELD if jt == FIXED else mujoco.mjtEq.mjEQ_CONNECT
        eq.objtype = mujoco.mjtObj.mjOBJ_SITE
        eq.name1, eq.name2 = pair_names[k][1], pair_names[k][0]
        equalities[kind] += 1
    # gears
    gears = []
    for g in range(model.ng):
        d, n = int(model.g_driver[g]), int(model.g_driven[g])
        eq = spec.add_equality(name=f"gear{g}")
        eq.type = mujoco.mjtEq.mjEQ_JOINT
        eq.name1, eq.name2 = joints[d][1][0], joints[n][1][0]
        data = np.zeros(len(eq.data))
        data[1] = float(model.g_ratio[g])  # polycoef: q1 - q1_0 = c0 + c1 (q2 - q2_0) + ...
        eq.data = data
        equalities["joint"] += 1
        gears.append((joints[d][1][0], joints[n][1][0], float(model.g_ratio[g])))
    # point springs: spatial tendons
    for e in range(model.f_type.shape[0]):
        if int(model.f_type[e]) != F_SPRING:
            continue
        ends = [site(int(model.f_body[e, s]), f"F{e}.{s}",
                     _world_point(model, int(model.f_body[e, s]), model.f_point[e, s])) for s in range(2)]
        k, c, rest = (float(v) for v in model.f_params[e, :3])
        t = spec.add_tendon(name=f"spring{e}", springlength=[rest, rest])
        _coefficient(t, "stiffness", k)
        _coefficient(t, "damping", c)
        for name in ends:
            t.wrap_site(name)
    qfrc_of: dict[str, float] = {}
    _joint_forces(model, joints, qfrc_of)

    mj = spec.compile()
    qfrc = np.zeros(mj.nv)
    for name, g in qfrc_of.items():
        qfrc[mj.jnt_dofadr[mj.joint(name).id]] += g
    sites = np.array([[mj.site(a).id, mj.site(b).id] for a, b in pair_names], dtype=np.int64).reshape(-1, 2)
    gear_adr = np.array([[mj.jnt_qposadr[mj.joint(a).id], mj.jnt_qposadr[mj.joint(b).id], r]
                         for a, b, r in gears], dtype=float).reshape(-1, 3)
    dof_adr = np.array([mj.jnt_dofadr[mj.joint(names[0]).id] if names else -1 for _, names in joints],
                       dtype=np.int64)
    body_id = np.array([mj.body(f"B{i}").id for i in range(model.nb)], dtype=np.int64)
    return MujocoMechanism(mj, qfrc, sites, gear_adr, dof_adr, body_id, pts, equalities)


def initial_data(mech: MujocoMechanism, V: np.ndarray):
    """MuJoCo data at Linkwork's initial state: ``qpos0``, the joint velocities that give
    Linkwork's body twists ``V`` (nb, 6) ``[v_C; w]`` (least squares through MuJoCo's
    Jacobians of the centres of mass), the joint torques.  Returns (data, the largest
    twist residual of those velocities: 0 up to round-off when ``V`` is a velocity of the
    tree, as Linkwork's initial velocities are)."""
    import mujoco

    m = mech.mj
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    nb = V.shape[0]
    J = np.zeros((6 * nb, m.nv))
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for i in range(nb):
        mujoco.mj_jacBodyCom(m, d, jacp, jacr, int(mech.body_id[i]))
        J[6 * i: 6 * i + 3] = jacp
        J[6 * i + 3: 6 * i + 6] = jacr
    b = np.asarray(V, dtype=float).reshape(-1)
    qvel = np.linalg.lstsq(J, b, rcond=None)[0] if m.nv else np.zeros(0)
    residual = float(np.max(np.abs(J @ qvel - b))) if b.size else 0.0
    d.qvel[:] = qvel
    d.qfrc_applied[:] = mech.qfrc
    mujoco.mj_forward(m, d)
    return d, residual


def closure_error(mech: MujocoMechanism, d) -> float:
    """The largest distance between the two sites of a closure pair (positions as of the
    last kinematics pass)."""
    if mech.sites.shape[0] == 0:
        return 0.0
    x = d.site_xpos
    return float(np.max(np.linalg.norm(x[mech.sites[:, 1]] - x[mech.sites[:, 0]], axis=1)))


def gear_error(mech: MujocoMechanism, d) -> float:
    """The largest gear residual ``|(q_d - q_d0) - mu (q_n - q_n0)|`` (``qpos0`` is zero)."""
    if mech.gears.shape[0] == 0:
        return 0.0
    q = d.qpos
    a, b = mech.gears[:, 0].astype(int), mech.gears[:, 1].astype(int)
    return float(np.max(np.abs(q[a] - mech.gears[:, 2] * q[b])))


def diverged(d) -> bool:
    """MuJoCo resets its data to ``qpos0`` when an acceleration is not finite (a warning,
    not an error): whether that happened, or the state is not finite."""
    import mujoco

    return (d.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)].number > 0
            or not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))))


def body_accelerations(mech: MujocoMechanism, d, nb: int) -> np.ndarray:
    """(nb, 6) world ``[a_C; alpha]`` of every body after ``mj_forward`` (MuJoCo's
    accelerations carry gravity as a base acceleration: added back here)."""
    import mujoco

    m = mech.mj
    mujoco.mj_rnePostConstraint(m, d)
    out = np.empty((nb, 6))
    res = np.zeros(6)
    for i in range(nb):
        mujoco.mj_objectAcceleration(m, d, mujoco.mjtObj.mjOBJ_BODY, int(mech.body_id[i]), res, 0)
        out[i, :3] = res[3:] + m.opt.gravity
        out[i, 3:] = res[:3]
    return out
