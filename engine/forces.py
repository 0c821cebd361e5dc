"""Applied forces and energies, shared by every formulation.

All force elements are turned into wrenches ``[f; n]`` about each body's
centre of mass in world components (``F`` (nb, 6)).  A joint force element
acts on the file's child with the opposite wrench on the file's parent:

- joint-spring (revolute or prismatic): ``tau = -k (q - rest) - c qdot``;
- joint-torque: constant generalized forces, one per freedom -- revolute: a
  torque about the axis; prismatic: a force along it; cylindrical: (torque,
  force); universal: torques about a1 and a2; spherical: a torque vector in
  the parent body's frame.

Joint coordinates of one-freedom joints (``jq``) are supplied by the caller:
tree coordinates where a formulation has them, otherwise
:func:`joint_coordinates_from_poses` (unwrapped against a reference).

Energies (docs/file-format.md, "Results CSV"): kinetic; potential = gravity (zero at the
world origin) + springs + joint springs.  Joint torques do work and are not
part of the potential.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from .model import F_JOINT_SPRING, F_JOINT_TORQUE, F_SPRING, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL, \
    CYLINDRICAL, Model


class ForceArrays(NamedTuple):
    """The model arrays the force kernels read (:class:`~linkwork.engine.model.Model` says
    what each holds)."""

    mass: np.ndarray
    gravity: np.ndarray
    f_type: np.ndarray
    f_body: np.ndarray
    f_point: np.ndarray
    f_joint: np.ndarray
    f_params: np.ndarray
    jtype: np.ndarray
    pred: np.ndarray
    succ: np.ndarray
    reversed: np.ndarray
    anchor_pred: np.ndarray
    anchor_succ: np.ndarray
    axis_pred: np.ndarray
    axis2_pred: np.ndarray
    axis_succ: np.ndarray
    R0_rel: np.ndarray


def force_arrays(model: Model) -> ForceArrays:
    """The model arrays the force kernels read."""
    return ForceArrays(
        model.mass, model.gravity, model.f_type, model.f_body, model.f_point, model.f_joint,
        model.f_params, model.jtype, model.pred, model.succ, model.reversed, model.anchor_pred,
        model.anchor_succ, model.axis_pred, model.axis2_pred, model.axis_succ, model.R0_rel,
    )


def driver_force_arrays(m: Model) -> tuple[ForceArrays, np.ndarray]:
    """``force_arrays(m)`` with one joint-torque element per driver after the file's, and
    the writable view of their values: the drivers' efforts, which the formulations that
    find them by superposition set (``dca``, ``rcr``; docs/derivations.md, "Drivers").
    The arrays are read-only, as the model's, so the kernels keep their compiled types;
    the values are written through their writable base."""
    def frozen(a):
        a = np.ascontiguousarray(a)
        a.setflags(write=False)
        return a

    nd, nf = m.nd, m.f_type.shape[0]
    params = np.concatenate([m.f_params, np.zeros((nd, m.f_params.shape[1]))])
    view = params.view()
    view.setflags(write=False)
    fa = force_arrays(m)._replace(
        f_type=frozen(np.concatenate([m.f_type, np.full(nd, F_JOINT_TORQUE, dtype=m.f_type.dtype)])),
        f_body=frozen(np.concatenate([m.f_body, np.full((nd, 2), -1, dtype=m.f_body.dtype)])),
        f_point=frozen(np.concatenate([m.f_point, np.zeros((nd, 2, 3))])),
        f_joint=frozen(np.concatenate([m.f_joint, m.d_joint.astype(m.f_joint.dtype)])),
        f_params=view)
    return fa, params[nf:, 0]



@njit(cache=True, nogil=True, _nrt=True)
def _add_point_force(F, b, x, f, p):
    """Add force f applied at world point p to body b (wrench about its COM)."""
    if b < 0:
        return
    rx = p[0] - x[b, 0]
    ry = p[1] - x[b, 1]
    rz = p[2] - x[b, 2]
    F[b, 0] += f[0]
    F[b, 1] += f[1]
    F[b, 2] += f[2]
    F[b, 3] += ry * f[2] - rz * f[1]
    F[b, 4] += rz * f[0] - rx * f[2]
    F[b, 5] += rx * f[1] - ry * f[0]


@njit(cache=True, nogil=True, _nrt=True)
def _add_torque(F, b, t, sign):
    if b < 0:
        return
    F[b, 3] += sign * t[0]
    F[b, 4] += sign * t[1]
    F[b, 5] += sign * t[2]


@njit(cache=True, nogil=True, _nrt=True)
def world_vector(R, b, s, out):
    if b < 0:
        for k in range(3):
            out[k] = s[k]
    else:
        for k in range(3):
            out[k] = R[b, k, 0] * s[0] + R[b, k, 1] * s[1] + R[b, k, 2] * s[2]


@njit(cache=True, nogil=True, _nrt=True)
def point_and_velocity(x, R, V, b, s, p, vp):
    """World position and velocity of the point with body coordinates s."""
    r = np.empty(3)
    world_vector(R, b, s, r)
    if b < 0:
        for k in range(3):
            p[k] = r[k]
            vp[k] = 0.0
        return
    for k in range(3):
        p[k] = x[b, k] + r[k]
    w = V[b, 3:]
    vp[0] = V[b, 0] + w[1] * r[2] - w[2] * r[1]
    vp[1] = V[b, 1] + w[2] * r[0] - w[0] * r[2]
    vp[2] = V[b, 2] + w[0] * r[1] - w[1] * r[0]


@njit(cache=True, nogil=True, _nrt=True)
def _joint_ends(fa, j, R):
    """Predecessor, successor and the world axis carried by the predecessor of joint ``j``
    (a tuple: an output row takes it for every one-freedom joint)."""
    a, s = fa.pred[j], fa.axis_pred
    if a < 0:
        return a, fa.succ[j], (s[j, 0], s[j, 1], s[j, 2])
    return a, fa.succ[j], (R[a, 0, 0] * s[j, 0] + R[a, 0, 1] * s[j, 1] + R[a, 0, 2] * s[j, 2],
                           R[a, 1, 0] * s[j, 0] + R[a, 1, 1] * s[j, 1] + R[a, 1, 2] * s[j, 2],
                           R[a, 2, 0] * s[j, 0] + R[a, 2, 1] * s[j, 1] + R[a, 2, 2] * s[j, 2])


@njit(cache=True, nogil=True, _nrt=True)
def _joint_points(fa, j, x, R, V, pa, va, pb, vb):
    """World positions and velocities of joint ``j``'s anchor points on its predecessor
    (``pa``, ``va``) and successor (``pb``, ``vb``)."""
    anchor_pred, anchor_succ = fa.anchor_pred, fa.anchor_succ
    point_and_velocity(x, R, V, fa.pred[j], anchor_pred[j], pa, va)
    point_and_velocity(x, R, V, fa.succ[j], anchor_succ[j], pb, vb)


@njit(cache=True, nogil=True, _nrt=True)
def joint_rate(fa, j, x, R, V):
    """Rate of a one-freedom joint from the body states (internal = file sense)."""
    a, b, aw = _joint_ends(fa, j, R)
    if fa.jtype[j] == REVOLUTE:
        s = 0.0
        for k in range(3):
            wb = V[b, 3 + k]
            wa = V[a, 3 + k] if a >= 0 else 0.0
            s += (wb - wa) * aw[k]
        return s
    # prismatic: d/dt (d . a) with d = succ anchor - pred anchor
    pa, va, pb, vb = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    _joint_points(fa, j, x, R, V, pa, va, pb, vb)
    s = 0.0
    for k in range(3):
        s += (vb[k] - va[k]) * aw[k]
    if a >= 0:
        w = V[a, 3:]
        wxa0 = w[1] * aw[2] - w[2] * aw[1]
        wxa1 = w[2] * aw[0] - w[0] * aw[2]
        wxa2 = w[0] * aw[1] - w[1] * aw[0]
        s += (pb[0] - pa[0]) * wxa0 + (pb[1] - pa[1]) * wxa1 + (pb[2] - pa[2]) * wxa2
    return s


@njit(cache=True, nogil=True, _nrt=True)
def joint_acceleration(fa, j, x, R, V, acc):
    """Second derivative of a one-freedom joint's coordinate from the body states and
    classical accelerations ``acc`` (nb, 6) ``[a_C; alpha]`` (the time derivative of
    :func:`joint_rate`; used for the gear residual's acceleration level).

    revolute:  a.(alpha_b - alpha_a) + (w_a x a).(w_b - w_a)
    prismatic: (acc_Pb - acc_Pa).a + 2 (v_Pb - v_Pa).(w_a x a) + d.(alpha_a x a + w_a x (w_a x a))
    with ``a`` the axis carried by the predecessor and ``d`` = succ anchor - pred anchor."""
    a, b, aw = _joint_ends(fa, j, R)
    wa = np.zeros(3)
    ala = np.zeros(3)
    if a >= 0:
        for k in range(3):
            wa[k] = V[a, 3 + k]
            ala[k] = acc[a, 3 + k]
    wxa = np.empty(3)
    wxa[0] = wa[1] * aw[2] - wa[2] * aw[1]
    wxa[1] = wa[2] * aw[0] - wa[0] * aw[2]
    wxa[2] = wa[0] * aw[1] - wa[1] * aw[0]
    if fa.jtype[j] == REVOLUTE:
        s = 0.0
        for k in range(3):
            s += (acc[b, 3 + k] - ala[k]) * aw[k] + wxa[k] * (V[b, 3 + k] - wa[k])
        return s
    pa, va, pb, vb = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    _joint_points(fa, j, x, R, V, pa, va, pb, vb)
    # point accelerations a_C + alpha x r + w x (w x r)
    acp = np.zeros((2, 3))
    for side in range(2):
        body = a if side == 0 else b
        if body < 0:
            continue
        p = pa if side == 0 else pb
        r0 = p[0] - x[body, 0]
        r1 = p[1] - x[body, 1]
        r2 = p[2] - x[body, 2]
        w0, w1, w2 = V[body, 3], V[body, 4], V[body, 5]
        l0, l1, l2 = acc[body, 3], acc[body, 4], acc[body, 5]
        u0 = w1 * r2 - w2 * r1
        u1 = w2 * r0 - w0 * r2
        u2 = w0 * r1 - w1 * r0
        acp[side, 0] = acc[body, 0] + l1 * r2 - l2 * r1 + w1 * u2 - w2 * u1
        acp[side, 1] = acc[body, 1] + l2 * r0 - l0 * r2 + w2 * u0 - w0 * u2
        acp[side, 2] = acc[body, 2] + l0 * r1 - l1 * r0 + w0 * u1 - w1 * u0
    # alpha_a x a + w_a x (w_a x a)
    c0 = ala[1] * aw[2] - ala[2] * aw[1] + wa[1] * wxa[2] - wa[2] * wxa[1]
    c1 = ala[2] * aw[0] - ala[0] * aw[2] + wa[2] * wxa[0] - wa[0] * wxa[2]
    c2 = ala[0] * aw[1] - ala[1] * aw[0] + wa[0] * wxa[1] - wa[1] * wxa[0]
    s = (pb[0] - pa[0]) * c0 + (pb[1] - pa[1]) * c1 + (pb[2] - pa[2]) * c2
    for k in range(3):
        s += (acp[1, k] - acp[0, k]) * aw[k] + 2.0 * (vb[k] - va[k]) * wxa[k]
    return s


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _rrel(R, R0_rel, a, b, j, i, k):
    """Entry ``(i, k)`` of a revolute joint's ``Ra^T Rb R0^T`` (``a`` may be ground)."""
    s = 0.0
    for m in range(3):
        for n in range(3):
            ra = (R[a, m, i] if a >= 0 else (1.0 if m == i else 0.0))
            s += ra * R[b, m, n] * R0_rel[j, k, n]
    return s


@njit(cache=True, nogil=True, _nrt=True)
def joint_coordinate(fa, j, x, R, ref):
    """Coordinate of a one-freedom joint from body poses, the branch nearest ``ref``."""
    mass, gravity, f_type, f_body, f_point, f_joint, f_params, jtype, pred, succ, rev, anchor_pred, \
        anchor_succ, axis_pred, axis2_pred, axis_succ, R0_rel = fa
    a = pred[j]
    b = succ[j]
    if jtype[j] == REVOLUTE:
        # Rrel = Ra^T Rb R0^T (pred frame) = Rot(axis_pred, theta)
        ax = axis_pred[j]
        sn = 0.5 * ((_rrel(R, R0_rel, a, b, j, 2, 1) - _rrel(R, R0_rel, a, b, j, 1, 2)) * ax[0]
                    + (_rrel(R, R0_rel, a, b, j, 0, 2) - _rrel(R, R0_rel, a, b, j, 2, 0)) * ax[1]
                    + (_rrel(R, R0_rel, a, b, j, 1, 0) - _rrel(R, R0_rel, a, b, j, 0, 1)) * ax[2])
        cs = 0.5 * (_rrel(R, R0_rel, a, b, j, 0, 0) + _rrel(R, R0_rel, a, b, j, 1, 1)
                    + _rrel(R, R0_rel, a, b, j, 2, 2) - 1.0)
        th = np.arctan2(sn, cs)
        two_pi = 2.0 * np.pi
        return th + two_pi * np.round((ref - th) / two_pi)
    aw = np.empty(3)
    world_vector(R, a, axis_pred[j], aw)
    pa = np.empty(3)
    pb = np.empty(3)
    world_vector(R, a, anchor_pred[j], pa)
    world_vector(R, b, anchor_succ[j], pb)
    s = 0.0
    for k in range(3):
        xa = x[a, k] if a >= 0 else 0.0
        s += (x[b, k] + pb[k] - xa - pa[k]) * aw[k]
    return s


@njit(cache=True, nogil=True, _nrt=False)
def applied_forces(fa, x, R, V, jq, F):
    """Wrenches of gravity and every force element about each COM (overwrites F).

    ``jq`` (nj,): coordinates of the joints that carry joint-springs.  Compiled without
    reference counting, so that gravity alone costs nothing but its loop (unpacking
    ``fa``'s 17 arrays with it took 0.14 us a call); the force elements allocate their
    scratch (:func:`_element_forces`)."""
    mass, gravity, f_type = fa.mass, fa.gravity, fa.f_type
    nb = mass.shape[0]
    for i in range(nb):
        for k in range(3):
            F[i, k] = mass[i] * gravity[k]
            F[i, 3 + k] = 0.0
    if f_type.shape[0] > 0:
        _element_forces(fa, x, R, V, jq, F)


@njit(cache=True, nogil=True, _nrt=True)
def _element_forces(fa, x, R, V, jq, F):
    """Adds every force element's wrench about each COM to F."""
    mass, gravity, f_type, f_body, f_point, f_joint, f_params, jtype, pred, succ, rev, anchor_pred, \
        anchor_succ, axis_pred, axis2_pred, axis_succ, R0_rel = fa
    p1 = np.empty(3)
    p2 = np.empty(3)
    v1 = np.empty(3)
    v2 = np.empty(3)
    f = np.empty(3)
    aw = np.empty(3)
    a2w = np.empty(3)
    t = np.empty(3)
    P = np.empty(3)
    for e in range(f_type.shape[0]):
        ft = f_type[e]
        if ft == F_SPRING:
            b1 = f_body[e, 0]
            b2 = f_body[e, 1]
            point_and_velocity(x, R, V, b1, f_point[e, 0], p1, v1)
            point_and_velocity(x, R, V, b2, f_point[e, 1], p2, v2)
            L = np.sqrt((p2[0] - p1[0]) ** 2 + (p2[1] - p1[1]) ** 2 + (p2[2] - p1[2]) ** 2)
            if L < 1e-300:
                continue
            Ld = 0.0
            for k in range(3):
                Ld += (p2[k] - p1[k]) * (v2[k] - v1[k])
            Ld /= L
            T = f_params[e, 0] * (L - f_params[e, 2]) + f_params[e, 1] * Ld
            for k in range(3):
                f[k] = T * (p2[k] - p1[k]) / L
            _add_point_force(F, b1, x, f, p1)
            for k in range(3):
                f[k] = -f[k]
            _add_point_force(F, b2, x, f, p2)
            continue
        j = f_joint[e]
        a = pred[j]
        b = succ[j]
        jt = jtype[j]
        # wrench on the internal successor; the file child is pred when reversed
        world_vector(R, a, axis_pred[j], aw)
        world_vector(R, a, anchor_pred[j], P)
        if a >= 0:
            for k in range(3):
                P[k] += x[a, k]
        if ft == F_JOINT_SPRING:
            qd = joint_rate(fa, j, x, R, V)
            tau = -f_params[e, 0] * (jq[j] - f_params[e, 2]) - f_params[e, 1] * qd
            if jt == REVOLUTE:
                for k in range(3):
                    t[k] = tau * aw[k]
                _add_torque(F, b, t, 1.0)
                _add_torque(F, a, t, -1.0)
            else:
                for k in range(3):
                    f[k] = tau * aw[k]
                _add_point_force(F, b, x, f, P)
                for k in range(3):
                    f[k] = -f[k]
                _add_point_force(F, a, x, f, P)
            continue
        # constant joint torque, values in file order
        if jt == REVOLUTE or jt == PRISMATIC or jt == CYLINDRICAL:
            torque = 0.0
            force = 0.0
            if jt == REVOLUTE:
                torque = f_params[e, 0]
            elif jt == PRISMATIC:
                force = f_params[e, 0]
            else:
                torque = f_params[e, 0]
                force = f_params[e, 1]
            for k in range(3):
                t[k] = torque * aw[k]
                f[k] = force * aw[k]
        elif jt == UNIVERSAL:
            # second axis: a2 carried by the successor
            world_vector(R, b, axis_succ[j], a2w)
            tau1 = f_params[e, 0]
            tau2 = f_params[e, 1]
            if rev[j]:  # internal axes are (-a2, -a1) of the file: values swap
                tau1 = f_params[e, 1]
                tau2 = f_params[e, 0]
            for k in range(3):
                t[k] = tau1 * aw[k] + tau2 * a2w[k]
                f[k] = 0.0
        else:  # SPHERICAL: components in the file parent's frame
            fp = b if rev[j] else a
            sgn = -1.0 if rev[j] else 1.0
            for k in range(3):
                s = 0.0
                for m in range(3):
                    Rkm = R[fp, k, m] if fp >= 0 else (1.0 if k == m else 0.0)
                    s += Rkm * f_params[e, m]
                t[k] = sgn * s
                f[k] = 0.0
        _add_torque(F, b, t, 1.0)
        _add_torque(F, a, t, -1.0)
        _add_point_force(F, b, x, f, P)
        for k in range(3):
            f[k] = -f[k]
        _add_point_force(F, a, x, f, P)


@njit(cache=True, nogil=True, _nrt=True)
def energies(fa, inertia, x, R, V, jq):
    """(kinetic, potential) energy."""
    mass, gravity, f_type, f_body, f_point, f_joint, f_params, jtype, pred, succ, rev, anchor_pred, \
        anchor_succ, axis_pred, axis2_pred, axis_succ, R0_rel = fa
    nb = mass.shape[0]
    ke = 0.0
    pe = 0.0
    wb = np.empty(3)
    for i in range(nb):
        v2 = V[i, 0] ** 2 + V[i, 1] ** 2 + V[i, 2] ** 2
        # w_body = R^T w
        for k in range(3):
            wb[k] = R[i, 0, k] * V[i, 3] + R[i, 1, k] * V[i, 4] + R[i, 2, k] * V[i, 5]
        rot = 0.0
        for k in range(3):
            for m in range(3):
                rot += wb[k] * inertia[i, k, m] * wb[m]
        ke += 0.5 * mass[i] * v2 + 0.5 * rot
        pe -= mass[i] * (gravity[0] * x[i, 0] + gravity[1] * x[i, 1] + gravity[2] * x[i, 2])
    p1 = np.empty(3)
    p2 = np.empty(3)
    v1 = np.empty(3)
    for e in range(f_type.shape[0]):
        if f_type[e] == F_SPRING:
            point_and_velocity(x, R, V, f_body[e, 0], f_point[e, 0], p1, v1)
            point_and_velocity(x, R, V, f_body[e, 1], f_point[e, 1], p2, v1)
            L = np.sqrt((p2[0] - p1[0]) ** 2 + (p2[1] - p1[1]) ** 2 + (p2[2] - p1[2]) ** 2)
            pe += 0.5 * f_params[e, 0] * (L - f_params[e, 2]) ** 2
        elif f_type[e] == F_JOINT_SPRING:
            pe += 0.5 * f_params[e, 0] * (jq[f_joint[e]] - f_params[e, 2]) ** 2
    return ke, pe


def spring_joints(model: Model) -> np.ndarray:
    """Internal indices of the joints whose coordinate the forces need."""
    return np.unique(model.f_joint[model.f_type == F_JOINT_SPRING]).astype(np.int64)


@njit(cache=True, nogil=True, _nrt=True)
def joint_coordinates_from_poses(fa, joints, x, R, ref, jq):
    """Fill ``jq[j]`` for ``j`` in ``joints`` from the poses (nearest branch to ``ref[j]``)."""
    for k in range(joints.shape[0]):
        j = joints[k]
        jq[j] = joint_coordinate(fa, j, x, R, ref[j])


@njit(cache=True, nogil=True, _nrt=False)
def tree_applied_forces(fa, q, q_adr, spring_tree, spring_cut, x, R, V, jq, jq_ref, F):
    """:func:`applied_forces` for a formulation in tree coordinates ``q``: the joint
    springs' coordinates from ``q`` (tree joints) or from the poses (cut joints), then
    every force element's wrench."""
    for k in range(spring_tree.shape[0]):
        j = spring_tree[k]
        jq[j] = q[q_adr[j]]
    if spring_cut.shape[0] > 0:
        joint_coordinates_from_poses(fa, spring_cut, x, R, jq_ref, jq)
    applied_forces(fa, x, R, V, jq, F)
