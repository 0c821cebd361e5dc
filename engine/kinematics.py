"""Tree kinematics in joint coordinates (numba kernels).

``jcalc`` is the only place that switches on the joint type for tree joints.
The kernels take the model's kinematic arrays as one tuple ``mk`` (see
:func:`kin_arrays`) and write into preallocated workspace arrays:

- positions:  ``x`` (nb, 3) centres of mass, ``R`` (nb, 3, 3) orientations,
  ``P`` (nj, 3) joint points (the anchor fixed in the predecessor, world);
- velocities: ``S`` (nv, 6) motion-subspace columns about the joint point,
  ``V`` (nb, 6) twists ``[v_C; w]`` about each centre of mass,
  ``c`` (nb, 6) velocity-product term of each tree joint about its point;
- accelerations: ``A`` (nb, 6) spatial accelerations about each centre of mass.

Relations (docs/derivations.md, section "Joint kinematics"):
``V_succ(P) = V_pred(P) + S v_j`` and
``A_succ(P) = A_pred(P) + S vdot_j + c_j`` with ``c_j = V_pred(P) x_m S v_j``
(plus ``v1 v2 s1 x_m s2`` for a universal joint, whose second axis is carried
by the successor).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .model import CYLINDRICAL, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, TYPE_NV, UNIVERSAL, Model
from .spatial import axis_angle_rot, crm, matmul3, quat_to_rot, shift_force, shift_motion


class KinArrays(NamedTuple):
    """The model arrays the kinematic kernels read (:class:`~linkwork.engine.model.Model`
    says what each holds), and their scratch."""

    parent: np.ndarray
    jtype: np.ndarray
    q_adr: np.ndarray
    v_adr: np.ndarray
    pred: np.ndarray
    succ: np.ndarray
    anchor_pred: np.ndarray
    anchor_succ: np.ndarray
    axis_pred: np.ndarray
    axis2_pred: np.ndarray
    R0_rel: np.ndarray
    rot_scratch: np.ndarray  # (8, 3, 3)
    vec_scratch: np.ndarray  # (7, 6)


def kin_arrays(model: Model) -> KinArrays:
    """The model arrays the kinematic kernels read, and their scratch: (8, 3, 3)
    and (7, 6) arrays the body loops below work in, allocated here once rather than on
    every call (each allocation, and each array a kernel compiled with reference counting
    unpacks, cost a right-hand side tens of nanoseconds: docs/performance.md, "Reference
    counting and scratch at the kernels' edges").  One tuple per user: two threads must
    not share it."""
    return KinArrays(
        model.parent, model.jtype, model.q_adr, model.v_adr, model.pred, model.succ,
        model.anchor_pred, model.anchor_succ, model.axis_pred, model.axis2_pred, model.R0_rel,
        np.empty((8, 3, 3)), np.empty((7, 6)),
    )


@njit(cache=True, nogil=True, inline='always')
def jcalc(jt, q, qa, ax, ax2, Rrel, d, tmp):
    """Relative rotation ``Rrel`` and translation ``d`` (both in the pred frame)
    of a tree joint of type ``jt`` whose coordinates start at ``q[qa]``.
    ``tmp`` is a (2, 3, 3) scratch array (allocation-free)."""
    for k in range(3):
        d[k] = 0.0
    if jt == REVOLUTE:
        axis_angle_rot(ax, q[qa], Rrel)
    elif jt == PRISMATIC:
        for i in range(3):
            for k in range(3):
                Rrel[i, k] = 1.0 if i == k else 0.0
        for k in range(3):
            d[k] = ax[k] * q[qa]
    elif jt == CYLINDRICAL:
        axis_angle_rot(ax, q[qa], Rrel)
        for k in range(3):
            d[k] = ax[k] * q[qa + 1]
    elif jt == UNIVERSAL:
        axis_angle_rot(ax, q[qa], tmp[0])
        axis_angle_rot(ax2, q[qa + 1], tmp[1])
        matmul3(tmp[0], tmp[1], Rrel)
    elif jt == SPHERICAL:
        quat_to_rot(q[qa:qa + 4], Rrel)
    else:  # FIXED
        for i in range(3):
            for k in range(3):
                Rrel[i, k] = 1.0 if i == k else 0.0


# The loops over bodies run in kernels compiled without numba's reference counting
# (``_nrt=False``): every array view they take (``R[p]``, ``q[qa:qa + 4]``) would
# otherwise cost two atomic counter updates, which made a serial body loop about twice
# as slow as the same loop in a parallel region (docs/performance.md, "Reference counting
# and scratch at the kernels' edges").  Such a kernel cannot allocate: its scratch comes
# with ``mk`` (:func:`kin_arrays`).
@njit(cache=True, nogil=True, inline='always')
def position_step(i, mk, q, x, R, P):
    """Body i's pose and its joint's point (:func:`fk_positions`), its parent's done."""
    parent, jtype, q_adr, v_adr, pred, succ, anchor_pred, anchor_succ, axis_pred, axis2_pred, R0_rel, s33, s6 = mk
    Rrel, Rp, M, scratch, d = s33[0], s33[1], s33[2], s33[3:5], s33[5, 0]
    p = parent[i]
    jcalc(jtype[i], q, q_adr[i], axis_pred[i], axis2_pred[i], Rrel, d, scratch)
    if p < 0:
        for a in range(3):
            for b in range(3):
                Rp[a, b] = 1.0 if a == b else 0.0
        px, py, pz = 0.0, 0.0, 0.0
    else:
        for a in range(3):
            for b in range(3):
                Rp[a, b] = R[p, a, b]
        px, py, pz = x[p, 0], x[p, 1], x[p, 2]
    ap0, ap1, ap2 = anchor_pred[i, 0], anchor_pred[i, 1], anchor_pred[i, 2]
    P0 = px + Rp[0, 0] * ap0 + Rp[0, 1] * ap1 + Rp[0, 2] * ap2
    P1 = py + Rp[1, 0] * ap0 + Rp[1, 1] * ap1 + Rp[1, 2] * ap2
    P2 = pz + Rp[2, 0] * ap0 + Rp[2, 1] * ap1 + Rp[2, 2] * ap2
    P[i, 0] = P0
    P[i, 1] = P1
    P[i, 2] = P2
    # M = Rp Rrel, R_i = M R0_rel
    for a in range(3):
        for b in range(3):
            M[a, b] = Rp[a, 0] * Rrel[0, b] + Rp[a, 1] * Rrel[1, b] + Rp[a, 2] * Rrel[2, b]
    for a in range(3):
        for b in range(3):
            R[i, a, b] = M[a, 0] * R0_rel[i, 0, b] + M[a, 1] * R0_rel[i, 1, b] + M[a, 2] * R0_rel[i, 2, b]
    as0, as1, as2 = anchor_succ[i, 0], anchor_succ[i, 1], anchor_succ[i, 2]
    for a in range(3):
        ca = P[i, a] + Rp[a, 0] * d[0] + Rp[a, 1] * d[1] + Rp[a, 2] * d[2]
        x[i, a] = ca - (R[i, a, 0] * as0 + R[i, a, 1] * as1 + R[i, a, 2] * as2)


@njit(cache=True, nogil=True, _nrt=False)
def fk_positions(mk, q, x, R, P):
    """Body poses and joint points from tree coordinates ``q``."""
    parent, jtype, pred, anchor_pred = mk.parent, mk.jtype, mk.pred, mk.anchor_pred
    nb = parent.shape[0]
    nj = jtype.shape[0]
    for i in range(nb):
        position_step(i, mk, q, x, R, P)
    for j in range(nb, nj):
        a = pred[j]
        if a < 0:
            for k in range(3):
                P[j, k] = anchor_pred[j, k]
        else:
            for k in range(3):
                P[j, k] = x[a, k] + R[a, k, 0] * anchor_pred[j, 0] + R[a, k, 1] * anchor_pred[j, 1] \
                    + R[a, k, 2] * anchor_pred[j, 2]


@njit(cache=True, nogil=True, inline='always')
def subspace_step(i, mk, q, R, S):
    """Tree joint i's motion subspace columns (:func:`motion_subspace`)."""
    parent, jtype, q_adr, v_adr, pred, succ, anchor_pred, anchor_succ, axis_pred, axis2_pred, R0_rel, s33, s6 = mk
    aw, R1, t = s33[6, 0], s33[7], s33[6, 1]
    jt = jtype[i]
    if jt == FIXED:
        return
    p = parent[i]
    va = v_adr[i]
    ax = axis_pred[i]
    # axis in world
    for k in range(3):
        if p < 0:
            aw[k] = ax[k]
        else:
            aw[k] = R[p, k, 0] * ax[0] + R[p, k, 1] * ax[1] + R[p, k, 2] * ax[2]
    if jt == REVOLUTE:
        for k in range(3):
            S[va, k] = 0.0
            S[va, 3 + k] = aw[k]
    elif jt == PRISMATIC:
        for k in range(3):
            S[va, k] = aw[k]
            S[va, 3 + k] = 0.0
    elif jt == CYLINDRICAL:
        for k in range(3):
            S[va, k] = 0.0
            S[va, 3 + k] = aw[k]
            S[va + 1, k] = aw[k]
            S[va + 1, 3 + k] = 0.0
    elif jt == UNIVERSAL:
        axis_angle_rot(ax, q[q_adr[i]], R1)
        ax2 = axis2_pred[i]
        for k in range(3):
            t[k] = R1[k, 0] * ax2[0] + R1[k, 1] * ax2[1] + R1[k, 2] * ax2[2]
        for k in range(3):
            S[va, k] = 0.0
            S[va, 3 + k] = aw[k]
            S[va + 1, k] = 0.0
            if p < 0:
                S[va + 1, 3 + k] = t[k]
            else:
                S[va + 1, 3 + k] = R[p, k, 0] * t[0] + R[p, k, 1] * t[1] + R[p, k, 2] * t[2]
    else:  # SPHERICAL: relative angular velocity in the pred frame
        for c in range(3):
            for k in range(3):
                S[va + c, k] = 0.0
                if p < 0:
                    S[va + c, 3 + k] = 1.0 if k == c else 0.0
                else:
                    S[va + c, 3 + k] = R[p, k, c]


@njit(cache=True, nogil=True, _nrt=False)
def motion_subspace(mk, q, R, S):
    """Columns of every tree joint's motion subspace, world frame, about its point."""
    for i in range(mk.parent.shape[0]):
        subspace_step(i, mk, q, R, S)


@njit(cache=True, nogil=True, inline='always')
def velocity_step(i, mk, x, P, S, v, V, c):
    """Body i's twist and its joint's velocity-product term (:func:`fk_velocities`),
    its parent's done."""
    parent, jtype, q_adr, v_adr, pred, succ, anchor_pred, anchor_succ, axis_pred, axis2_pred, R0_rel, s33, s6 = mk
    Vp, Sv, Vi, l, tmp, s0, s1 = s6[0], s6[1], s6[2], s6[3, :3], s6[4], s6[5], s6[6]
    p = parent[i]
    if p < 0:
        for k in range(6):
            Vp[k] = 0.0
    else:
        for k in range(3):
            l[k] = P[i, k] - x[p, k]
        shift_motion(V[p], l, Vp)
    for k in range(6):
        Sv[k] = 0.0
    va = v_adr[i]
    jt = jtype[i]
    nv = TYPE_NV[jt]
    for col in range(nv):
        for k in range(6):
            Sv[k] += S[va + col, k] * v[va + col]
    crm(Vp, Sv, c[i])
    if jt == UNIVERSAL:
        for k in range(6):
            s0[k] = S[va, k]
            s1[k] = S[va + 1, k]
        crm(s0, s1, tmp)
        w = v[va] * v[va + 1]
        for k in range(6):
            c[i, k] += w * tmp[k]
    for k in range(6):
        Vi[k] = Vp[k] + Sv[k]
    for k in range(3):
        l[k] = x[i, k] - P[i, k]
    shift_motion(Vi, l, V[i])


@njit(cache=True, nogil=True, _nrt=False)
def fk_velocities(mk, x, P, S, v, V, c):
    """COM twists ``V`` and velocity-product terms ``c`` from joint velocities ``v``."""
    for i in range(mk.parent.shape[0]):
        velocity_step(i, mk, x, P, S, v, V, c)


@njit(cache=True, nogil=True, _nrt=False)
def fk_accelerations(mk, x, P, S, c, vdot, A):
    """Spatial accelerations ``A`` about each COM from joint accelerations ``vdot``
    (``vdot = 0`` gives the velocity-product bias accelerations)."""
    parent, jtype, q_adr, v_adr, pred, succ, anchor_pred, anchor_succ, axis_pred, axis2_pred, R0_rel, s33, s6 = mk
    nb = parent.shape[0]
    Ap, Ai, l = s6[0], s6[1], s6[3, :3]
    for i in range(nb):
        p = parent[i]
        if p < 0:
            for k in range(6):
                Ap[k] = 0.0
        else:
            for k in range(3):
                l[k] = P[i, k] - x[p, k]
            shift_motion(A[p], l, Ap)
        jt = jtype[i]
        va = v_adr[i]
        nv = TYPE_NV[jt]
        for k in range(6):
            Ai[k] = Ap[k] + c[i, k]
        for col in range(nv):
            for k in range(6):
                Ai[k] += S[va + col, k] * vdot[va + col]
        for k in range(3):
            l[k] = x[i, k] - P[i, k]
        shift_motion(Ai, l, A[i])


@njit(cache=True, nogil=True, _nrt=True)
def subtree_sums(parent, x, P, W, out):
    """``out[k]`` = sum over the bodies outboard of tree joint k of their wrenches
    ``W`` (about each COM), about the joint point ``P[k]``: one backward pass
    (children have larger indices than their parents)."""
    nb = parent.shape[0]
    tmp = np.empty(6)
    l = np.empty(3)
    for i in range(nb):
        for k in range(3):
            l[k] = x[i, k] - P[i, k]
        shift_force(W[i], l, out[i])
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            for k in range(3):
                l[k] = P[i, k] - P[p, k]
            shift_force(out[i], l, tmp)
            for k in range(6):
                out[p, k] += tmp[k]


@njit(cache=True, nogil=True, _nrt=True)
def joint_momenta(mk, nv_j, mass, inertia, x, R, P, S, v, scratch, out):
    """``p = M v`` at the poses in ``x``, ``R``, ``P``, ``S``: the body momenta ``H`` (about
    each COM: ``m v_c``, ``R I R^T w``) of the twists ``V`` of ``v`` (:func:`fk_velocities`,
    with ``c``), summed over each tree joint's subtree about its point (``h``,
    :func:`subtree_sums`) and projected on its freedoms (:func:`project_columns`).
    ``scratch``: ``(V, c, H, h)``, each (nb, 6).  ``hdca``'s momenta of given velocities
    (its impulse reset, :mod:`.formulations.stabilise`)."""
    V, c, H, h = scratch
    fk_velocities(mk, x, P, S, v, V, c)
    nb = x.shape[0]
    for i in range(nb):
        for k in range(3):
            H[i, k] = mass[i] * V[i, k]
        w0, w1, w2 = V[i, 3], V[i, 4], V[i, 5]
        t0 = R[i, 0, 0] * w0 + R[i, 1, 0] * w1 + R[i, 2, 0] * w2  # R^T w: in the body frame
        t1 = R[i, 0, 1] * w0 + R[i, 1, 1] * w1 + R[i, 2, 1] * w2
        t2 = R[i, 0, 2] * w0 + R[i, 1, 2] * w1 + R[i, 2, 2] * w2
        J = inertia[i]
        u0 = J[0, 0] * t0 + J[0, 1] * t1 + J[0, 2] * t2
        u1 = J[1, 0] * t0 + J[1, 1] * t1 + J[1, 2] * t2
        u2 = J[2, 0] * t0 + J[2, 1] * t1 + J[2, 2] * t2
        for r in range(3):
            H[i, 3 + r] = R[i, r, 0] * u0 + R[i, r, 1] * u1 + R[i, r, 2] * u2
    subtree_sums(mk.parent, x, P, H, h)
    project_columns(nb, mk.v_adr, nv_j, S, h, out)


@njit(cache=True, nogil=True, _nrt=True)
def project_columns(nb, v_adr, nv_j, S, fj, out):
    """``out[c] = S_c . fj[k]`` for each freedom ``c`` of each tree joint ``k``: the
    wrenches ``fj`` about the joint points on the joints' motion subspaces."""
    for i in range(nb):
        for c in range(v_adr[i], v_adr[i] + nv_j[i]):
            s = 0.0
            for k in range(6):
                s += S[c, k] * fj[i, k]
            out[c] = s


@njit(cache=True, nogil=True, _nrt=False)
def qdot_from_v(mk, q, v, qd):
    """Time derivative of the tree coordinates (quaternion kinematics for spherical joints)."""
    parent, jtype, q_adr, v_adr, pred, succ, anchor_pred, anchor_succ, axis_pred, axis2_pred, R0_rel, s33, s6 = mk
    nb = parent.shape[0]
    for i in range(nb):
        jt = jtype[i]
        qa = q_adr[i]
        va = v_adr[i]
        if jt == REVOLUTE or jt == PRISMATIC:
            qd[qa] = v[va]
        elif jt == CYLINDRICAL or jt == UNIVERSAL:
            qd[qa] = v[va]
            qd[qa + 1] = v[va + 1]
        elif jt == SPHERICAL:
            # Qdot = 1/2 [0, w] (x) Q, w = relative angular velocity, pred frame
            w0, w1, w2 = v[va], v[va + 1], v[va + 2]
            a, b, cc, dd = q[qa], q[qa + 1], q[qa + 2], q[qa + 3]
            qd[qa] = 0.5 * (-w0 * b - w1 * cc - w2 * dd)
            qd[qa + 1] = 0.5 * (w0 * a + w1 * dd - w2 * cc)
            qd[qa + 2] = 0.5 * (-w0 * dd + w1 * a + w2 * b)
            qd[qa + 3] = 0.5 * (w0 * cc - w1 * b + w2 * a)


@njit(cache=True, nogil=True, _nrt=False)
def ode_rates(mk, q, v, second, out):
    """An ODE formulation's right-hand side in one call: ``out[:nq]`` the rates of the
    tree coordinates (:func:`qdot_from_v`), ``out[nq:]`` the rate ``second`` of the
    state's second half (vdot, or hdca's momentum rates).  Returns whether ``v`` and
    ``second`` are all finite -- the check every formulation makes before it hands a
    right-hand side to the integrator, here without two more numpy calls per evaluation."""
    qdot_from_v(mk, q, v, out)  # writes out[q_adr[i] ...] only: indices below nq
    return second_rates(v, second, out)


@njit(cache=True, nogil=True, inline='always')
def second_rates(v, second, out):
    """:func:`ode_rates` after the tree coordinates' rates: ``out[nq:] = second``, and
    whether ``v`` and ``second`` are all finite."""
    nq = out.shape[0] - second.shape[0]
    finite = True
    for k in range(v.shape[0]):
        if not math.isfinite(v[k]):
            finite = False
    for k in range(second.shape[0]):
        out[nq + k] = second[k]
        if not math.isfinite(second[k]):
            finite = False
    return finite


@njit(cache=True, nogil=True, _nrt=False)
def normalize_quaternions(mk, q):
    """Renormalise the quaternion coordinates of spherical joints in place."""
    parent, jtype, q_adr, v_adr, pred, succ, anchor_pred, anchor_succ, axis_pred, axis2_pred, R0_rel, s33, s6 = mk
    for i in range(parent.shape[0]):
        if jtype[i] == SPHERICAL:
            qa = q_adr[i]
            n = np.sqrt(q[qa] ** 2 + q[qa + 1] ** 2 + q[qa + 2] ** 2 + q[qa + 3] ** 2)
            for k in range(4):
                q[qa + k] /= n


def classical_accelerations(V: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``[a_C; alpha]`` from spatial accelerations about the COM: a_C = A_lin + w x v_C."""
    out = np.empty((A.shape[0], 6))
    classical_into(np.ascontiguousarray(V), np.ascontiguousarray(A), out)
    return out


@njit(cache=True, nogil=True, _nrt=False)
def classical_into(V, A, out):
    """:func:`classical_accelerations` into ``out``."""
    for i in range(A.shape[0]):
        out[i, 0] = A[i, 0] + (V[i, 4] * V[i, 2] - V[i, 5] * V[i, 1])
        out[i, 1] = A[i, 1] + (V[i, 5] * V[i, 0] - V[i, 3] * V[i, 2])
        out[i, 2] = A[i, 2] + (V[i, 3] * V[i, 1] - V[i, 4] * V[i, 0])
        for k in range(3, 6):
            out[i, k] = A[i, k]
