"""numba kernels of the ``index3`` formulation (paper 000; docs/index3.md).

Per body ``i`` the absolute coordinates are ``q_i = [r_i; p_i]`` (centre of mass,
Euler parameters ``p = [e0, e1, e2, e3]``), nd = 7.  World angular velocity
``w = 2 E(p) p_dot``, body angular velocity ``w' = 2 G(p) p_dot`` with

    E(p) = [-e,  e~ + e0 1],     G(p) = [-e, -e~ + e0 1]      (paper 000, eq. 7)

so a joint row ``Phi_dot = G_a^tw V_a + G_b^tw V_b`` of :mod:`engine.constraints`
(twists ``V = [v_C; w]``) becomes, in absolute coordinates,

    Phi_q = [G^tw_lin,  2 G^tw_ang E(p)].

The Euler-parameter normalisation is ``Psi = (p^T p - 1) / 2`` (``Psi_q = [0, p^T]``).
Every kernel takes arrays only and never allocates in the step loop except
where noted; body loops go parallel from ``threads.PARALLEL_MIN_BODIES`` on.
A ``prange`` index is unsigned: the per-body kernels called from both the parallel
and the serial loop get it as ``np.int64(i)``, so numba compiles them once, not
once per index type (docs/performance.md, "Compile time").
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..constraints import joint_constraint
from ..forces import point_and_velocity, world_vector, applied_forces, joint_coordinates_from_poses
from ..model import F_JOINT_SPRING, REVOLUTE
from ..spatial import quat_to_rot, shift_force_by
from . import tree
from ..threads import PARALLEL_MIN_BODIES

#: :func:`engine.constraints.joint_constraint` inlined into :func:`joint_rows`: called out
#: of line, its 22 array arguments cost more than a spherical joint's rows (128 joints:
#: 29-40 us against 21-23 us inlined; docs/index3.md, "Timing").  Not cached on its own:
#: an ``inline='always'`` function is compiled only as part of its callers.  (Under
#: ``NUMBA_DISABLE_JIT`` the decorator returns the plain function, which has no ``py_func``.)
_joint_constraint = njit(nogil=True, _nrt=True, inline='always')(getattr(joint_constraint, "py_func",
                                                                         joint_constraint))


# ------------------------------------------------------------------ quaternion algebra


@njit(cache=True, nogil=True, _nrt=False)
def emat(p, E):
    """E(p) (3 x 4): w = 2 E(p) p_dot (world angular velocity)."""
    e0, e1, e2, e3 = p[0], p[1], p[2], p[3]
    E[0, 0] = -e1
    E[0, 1] = e0
    E[0, 2] = -e3
    E[0, 3] = e2
    E[1, 0] = -e2
    E[1, 1] = e3
    E[1, 2] = e0
    E[1, 3] = -e1
    E[2, 0] = -e3
    E[2, 1] = -e2
    E[2, 2] = e1
    E[2, 3] = e0


@njit(cache=True, nogil=True, _nrt=False)
def gmat(p, G):
    """G(p) (3 x 4): w' = 2 G(p) p_dot (body-frame angular velocity), paper 000 eq. 7."""
    e0, e1, e2, e3 = p[0], p[1], p[2], p[3]
    G[0, 0] = -e1
    G[0, 1] = e0
    G[0, 2] = e3
    G[0, 3] = -e2
    G[1, 0] = -e2
    G[1, 1] = -e3
    G[1, 2] = e0
    G[1, 3] = e1
    G[2, 0] = -e3
    G[2, 1] = e2
    G[2, 2] = -e1
    G[2, 3] = e0


# ------------------------------------------------------------------ body kernels


@njit(cache=True, nogil=True, _nrt=False)
def _body_kin(i, q, qd, qdd, x, R, V, A, E):
    """Pose, twist [v_C; w] and classical acceleration [a_C; alpha] of body i."""
    for k in range(3):
        x[i, k] = q[i, k]
    p = q[i, 3:7]
    quat_to_rot(p, R[i])
    Ei = E[i]
    emat(p, Ei)
    for k in range(3):
        V[i, k] = qd[i, k]
        A[i, k] = qdd[i, k]
        w = 0.0
        a = 0.0
        for c in range(4):
            w += 2.0 * Ei[k, c] * qd[i, 3 + c]
            a += 2.0 * Ei[k, c] * qdd[i, 3 + c]  # E_dot p_dot = 0: alpha = 2 E p_ddot
        V[i, 3 + k] = w
        A[i, 3 + k] = a


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def body_kinematics(q, qd, qdd, x, R, V, A, E):
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _body_kin(np.int64(i), q, qd, qdd, x, R, V, A, E)
    else:
        for i in range(nb):
            _body_kin(i, q, qd, qdd, x, R, V, A, E)


@njit(cache=True, nogil=True, _nrt=False)
def _body_mq(i, mass, inertia, q, qd, R, F, Mb, Qb):
    """Mass matrix M_i (eq. 7) and generalized forces Q_i (eq. 8) of body i.

    ``F[i]`` is the applied wrench [f; n] about the COM in world components.
    No allocation: G(p), G(p_dot) as tuples, J' G kept in the (zero) block M[:3, 3:].
    """
    e0, e1, e2, e3 = q[i, 3], q[i, 4], q[i, 5], q[i, 6]
    d0, d1, d2, d3 = qd[i, 3], qd[i, 4], qd[i, 5], qd[i, 6]
    G = ((-e1, e0, e3, -e2), (-e2, -e3, e0, e1), (-e3, e2, -e1, e0))  # gmat(p)
    Gd = ((-d1, d0, d3, -d2), (-d2, -d3, d0, d1), (-d3, d2, -d1, d0))  # gmat(p_dot)
    J = inertia[i]
    M = Mb[i]
    for a in range(3):  # JG = J' G in M[:3, 3:]
        for c in range(4):
            M[a, 3 + c] = J[a, 0] * G[0][c] + J[a, 1] * G[1][c] + J[a, 2] * G[2][c]
    for c in range(4):
        for d in range(4):
            M[3 + c, 3 + d] = 4.0 * (G[0][c] * M[0, 3 + d] + G[1][c] * M[1, 3 + d] + G[2][c] * M[2, 3 + d])
    # J' G p_dot
    h0 = M[0, 3] * d0 + M[0, 4] * d1 + M[0, 5] * d2 + M[0, 6] * d3
    h1 = M[1, 3] * d0 + M[1, 4] * d1 + M[1, 5] * d2 + M[1, 6] * d3
    h2 = M[2, 3] * d0 + M[2, 4] * d1 + M[2, 5] * d2 + M[2, 6] * d3
    for a in range(3):
        for b in range(7):
            M[a, b] = 0.0
            M[b, a] = 0.0
        M[a, a] = mass[i]
        Qb[i, a] = F[i, a]
    # body-frame torque n' = R^T n
    Ri = R[i]
    nb0 = Ri[0, 0] * F[i, 3] + Ri[1, 0] * F[i, 4] + Ri[2, 0] * F[i, 5]
    nb1 = Ri[0, 1] * F[i, 3] + Ri[1, 1] * F[i, 4] + Ri[2, 1] * F[i, 5]
    nb2 = Ri[0, 2] * F[i, 3] + Ri[1, 2] * F[i, 4] + Ri[2, 2] * F[i, 5]
    for c in range(4):
        Qb[i, 3 + c] = 2.0 * (G[0][c] * nb0 + G[1][c] * nb1 + G[2][c] * nb2) \
            - 8.0 * (Gd[0][c] * h0 + Gd[1][c] * h1 + Gd[2][c] * h2)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def body_mass_forces(mass, inertia, q, qd, R, F, Mb, Qb):
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _body_mq(np.int64(i), mass, inertia, q, qd, R, F, Mb, Qb)
    else:
        for i in range(nb):
            _body_mq(i, mass, inertia, q, qd, R, F, Mb, Qb)


# ------------------------------------------------------------------ joint rows


@njit(cache=True, nogil=True, inline='always')
def _joint_rows_one(j, ca, row_adr, x, R, V, E, x0, R0, V0, phi, Ga, Gb, g, G7):
    pred, succ, nc_j = ca[1], ca[2], ca[11]
    a = pred[j]
    b = succ[j]
    r = row_adr[j]
    n = nc_j[j]
    xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
    _joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[r:r + n], Ga[r:r + n], Gb[r:r + n], g[r:r + n])
    for k in range(r, r + n):
        for side in range(2):
            body = a if side == 0 else b
            Gt = Ga if side == 0 else Gb
            if body < 0:
                for c in range(7):
                    G7[side, k, c] = 0.0
                continue
            for c in range(3):
                G7[side, k, c] = Gt[k, c]
            Eb = E[body]
            for c in range(4):
                G7[side, k, 3 + c] = 2.0 * (Gt[k, 3] * Eb[0, c] + Gt[k, 4] * Eb[1, c] + Gt[k, 5] * Eb[2, c])


@njit(cache=True, nogil=True, parallel=True, _nrt=True)
def joint_rows(ca, row_adr, x, R, V, E, phi, Ga, Gb, g, G7):
    """Every joint's residual ``phi``, twist Jacobians ``Ga``, ``Gb``, quadratic term ``g``
    and the absolute-coordinate Jacobian rows ``G7`` (2, n_rows, 7): [0] pred, [1] succ."""
    nj = ca[0].shape[0]
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    if nj >= PARALLEL_MIN_BODIES:
        for j in prange(nj):
            _joint_rows_one(np.int64(j), ca, row_adr, x, R, V, E, x0, R0, V0, phi, Ga, Gb, g, G7)
    else:
        for j in range(nj):
            _joint_rows_one(j, ca, row_adr, x, R, V, E, x0, R0, V0, phi, Ga, Gb, g, G7)


# ------------------------------------------------------------------ force-element rows


@njit(cache=True, nogil=True, _nrt=True)
def stiffness_rows(fa, s_elem, s_row, s_pred, dt, alpha, x, R, V, E, G):
    """The force elements' tangent as tree rows (docs/index3.md, "Force elements in the
    tangent"), element ``s_elem[k]`` from row ``s_row[k]`` on: rows ``sqrt(kappa / alpha) d_q``
    on both ends, so that with ``g0 = 0`` and ``eps = 1 / alpha`` each adds
    ``dt^2/4 kappa d_q^T d_q`` to the Newton tangent, coupling the element's two bodies.

    * joint spring, coordinate ``l``: one row, ``d = l``, ``kappa = k + 2 c / dt``;
    * spring of length ``L``, tension ``T = k (L - L0) + c L_dot``, unit vector ``u``: the
      stiffness of the force ``T u`` in the relative displacement of its points is
      ``k_eff u u^T + T/L (1 - u u^T)``: three rows, along ``u`` (``kappa = k_eff``) and two
      directions normal to it (``kappa = T / L``, zero under compression, where it would
      make the tangent indefinite).

    ``s_pred[k]``: the body of the element's pred end (-1 = ground)."""
    mass, gravity, f_type, f_body, f_point, f_joint, f_params, jtype, pred, succ, rev, anchor_pred, \
        anchor_succ, axis_pred, axis2_pred, axis_succ, R0_rel = fa
    tw = np.zeros((3, 2, 6))  # per row of the element: twist rows of both ends
    sc = np.zeros(3)  # per row: sqrt(kappa / alpha)
    dirs = np.zeros((3, 3))  # spring: u, n1, n2
    ends = np.empty(2, dtype=np.int64)
    p1 = np.empty(3)
    p2 = np.empty(3)
    v1 = np.empty(3)
    v2 = np.empty(3)
    aw = np.empty(3)
    P = np.empty(3)
    for k in range(s_elem.shape[0]):
        e = s_elem[k]
        r = s_row[k]
        keff = f_params[e, 0] + 2.0 * f_params[e, 1] / dt
        for i in range(3):
            sc[i] = 0.0
            for c in range(6):
                tw[i, 0, c] = 0.0
                tw[i, 1, c] = 0.0
        nrow = 1
        if f_type[e] == F_JOINT_SPRING:
            sc[0] = np.sqrt(keff / alpha) if keff > 0.0 else 0.0
            j = f_joint[e]
            a = pred[j]
            b = succ[j]
            ends[0] = a
            ends[1] = b
            world_vector(R, a, axis_pred[j], aw)
            if jtype[j] == REVOLUTE:
                # l_dot = (w_b - w_a) . a_w
                for c in range(3):
                    tw[0, 1, 3 + c] = aw[c]
                    tw[0, 0, 3 + c] = -aw[c]
            else:
                # prismatic: l_dot = (v_Pb - v_Pa) . a_w + (P_b - P_a) . (w_a x a_w), P_b the
                # succ anchor: succ [a_w, (P_b - x_b) x a_w], pred [-a_w, -(P_b - x_a) x a_w]
                world_vector(R, b, anchor_succ[j], P)
                for c in range(3):
                    P[c] += x[b, c]
                    tw[0, 1, c] = aw[c]
                    tw[0, 0, c] = -aw[c]
                rb0, rb1, rb2 = P[0] - x[b, 0], P[1] - x[b, 1], P[2] - x[b, 2]
                tw[0, 1, 3] = rb1 * aw[2] - rb2 * aw[1]
                tw[0, 1, 4] = rb2 * aw[0] - rb0 * aw[2]
                tw[0, 1, 5] = rb0 * aw[1] - rb1 * aw[0]
                if a >= 0:
                    ra0, ra1, ra2 = P[0] - x[a, 0], P[1] - x[a, 1], P[2] - x[a, 2]
                    tw[0, 0, 3] = -(ra1 * aw[2] - ra2 * aw[1])
                    tw[0, 0, 4] = -(ra2 * aw[0] - ra0 * aw[2])
                    tw[0, 0, 5] = -(ra0 * aw[1] - ra1 * aw[0])
        else:
            # spring: rows d . (v_P2 - v_P1) for d = u, n1, n2: body end +-[d, r x d], r = P - x
            nrow = 3
            b1 = f_body[e, 0]
            b2 = f_body[e, 1]
            point_and_velocity(x, R, V, b1, f_point[e, 0], p1, v1)
            point_and_velocity(x, R, V, b2, f_point[e, 1], p2, v2)
            L = np.sqrt((p2[0] - p1[0]) ** 2 + (p2[1] - p1[1]) ** 2 + (p2[2] - p1[2]) ** 2)
            if L > 1e-300:
                Ld = 0.0
                for c in range(3):
                    dirs[0, c] = (p2[c] - p1[c]) / L
                    Ld += dirs[0, c] * (v2[c] - v1[c])
                T = f_params[e, 0] * (L - f_params[e, 2]) + f_params[e, 1] * Ld
                sc[0] = np.sqrt(keff / alpha) if keff > 0.0 else 0.0
                st = np.sqrt(T / L / alpha) if T > 0.0 else 0.0
                sc[1] = st
                sc[2] = st
                # n1: u x (the world axis least aligned with u), n2 = u x n1
                m_ax = 0
                for c in range(1, 3):
                    if abs(dirs[0, c]) < abs(dirs[0, m_ax]):
                        m_ax = c
                u0, u1, u2 = dirs[0, 0], dirs[0, 1], dirs[0, 2]
                e0 = 1.0 if m_ax == 0 else 0.0
                e1 = 1.0 if m_ax == 1 else 0.0
                e2 = 1.0 if m_ax == 2 else 0.0
                n0, n1, n2 = u1 * e2 - u2 * e1, u2 * e0 - u0 * e2, u0 * e1 - u1 * e0
                nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
                dirs[1, 0], dirs[1, 1], dirs[1, 2] = n0 / nn, n1 / nn, n2 / nn
                dirs[2, 0] = u1 * dirs[1, 2] - u2 * dirs[1, 1]
                dirs[2, 1] = u2 * dirs[1, 0] - u0 * dirs[1, 2]
                dirs[2, 2] = u0 * dirs[1, 1] - u1 * dirs[1, 0]
            # side 0 holds the end at s_pred[k] (body1 unless it is the ground end of body2's spring)
            side1 = 0 if b1 == s_pred[k] else 1
            for w in range(2):
                body = b1 if w == 0 else b2
                pt = p1 if w == 0 else p2
                sgn = -1.0 if w == 0 else 1.0
                side = side1 if w == 0 else 1 - side1
                ends[side] = body
                if body < 0:
                    continue
                r0, r1, r2 = pt[0] - x[body, 0], pt[1] - x[body, 1], pt[2] - x[body, 2]
                for i in range(3):
                    d0, d1, d2 = sgn * dirs[i, 0], sgn * dirs[i, 1], sgn * dirs[i, 2]
                    tw[i, side, 0] = d0
                    tw[i, side, 1] = d1
                    tw[i, side, 2] = d2
                    tw[i, side, 3] = r1 * d2 - r2 * d1
                    tw[i, side, 4] = r2 * d0 - r0 * d2
                    tw[i, side, 5] = r0 * d1 - r1 * d0
        for i in range(nrow):
            for side in range(2):
                body = ends[side]
                if body < 0:
                    for c in range(7):
                        G[side, r + i, c] = 0.0
                    continue
                for c in range(3):
                    G[side, r + i, c] = sc[i] * tw[i, side, c]
                Eb = E[body]
                for c in range(4):
                    G[side, r + i, 3 + c] = 2.0 * sc[i] * (tw[i, side, 3] * Eb[0, c] + tw[i, side, 4] * Eb[1, c]
                                                           + tw[i, side, 5] * Eb[2, c])


# ------------------------------------------------------------------ Newton residual


@njit(cache=True, nogil=True, inline='always')
def _residual_one(i, ix, Mb, Qb, q, qdd, mu, lam, G7, row_adr, rows, res):
    """res_i = M_i qdd_i + sum_joints Phi_qi^T lam + Psi_qi^T mu_i - Q_i (eq. 12)."""
    node_nh, node_h_start, h_joint, h_side = ix.node_nh, ix.node_h_start, ix.h_joint, ix.h_side
    M = Mb[i]
    for a in range(7):
        s = -Qb[i, a]
        for b in range(7):
            s += M[a, b] * qdd[i, b]
        res[i, a] = s
    for c in range(4):
        res[i, 3 + c] += q[i, 3 + c] * mu[i]
    sh = node_h_start[i]
    for h in range(node_nh[i]):
        j = h_joint[sh + h]
        w = h_side[sh + h]
        r = row_adr[j]
        for k in range(r, r + rows[j]):
            lk = lam[k]
            for a in range(7):
                res[i, a] += G7[w, k, a] * lk


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def residuals(ix, Mb, Qb, q, qdd, mu, lam, G7, row_adr, rows, res):
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _residual_one(i, ix, Mb, Qb, q, qdd, mu, lam, G7, row_adr, rows, res)
    else:
        for i in range(nb):
            _residual_one(i, ix, Mb, Qb, q, qdd, mu, lam, G7, row_adr, rows, res)


# ------------------------------------------------------------------ leaf coefficients


@njit(cache=True, nogil=True, _nrt=False)
def _inv_spd(A, out, o, n):
    """out[o:o+n, o:o+n] = A[o:o+n, o:o+n]^-1 for a symmetric positive definite block,
    in place in ``out`` (Cholesky L, then L^-1, then L^-T L^-1); False if not definite."""
    for k in range(n):  # L in the lower triangle of out
        d = A[o + k, o + k]
        for m in range(k):
            d -= out[o + k, o + m] * out[o + k, o + m]
        if d <= 0.0:
            return False
        d = np.sqrt(d)
        out[o + k, o + k] = d
        for r in range(k + 1, n):
            t = A[o + r, o + k]
            for m in range(k):
                t -= out[o + r, o + m] * out[o + k, o + m]
            out[o + r, o + k] = t / d
    for k in range(n):  # L^-1 in place, column by column
        out[o + k, o + k] = 1.0 / out[o + k, o + k]
        for r in range(k + 1, n):
            t = 0.0
            for m in range(k, r):
                t -= out[o + r, o + m] * out[o + m, o + k]
            out[o + r, o + k] = t / out[o + r, o + r]
    for i in range(n):  # (L^-T L^-1)[i, j] = sum_{k >= i} Li[k, i] Li[k, j], j <= i; row i of Li last read here
        for j in range(i + 1):
            t = 0.0
            for k in range(i, n):
                t += out[o + k, o + i] * out[o + k, o + j]
            out[o + i, o + j] = t
    for i in range(n):
        for j in range(i + 1, n):
            out[o + i, o + j] = out[o + j, o + i]
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _inv7(A, out):
    """out = A^-1 for a symmetric positive definite 7 x 7; the translation (3) and
    Euler-parameter (4) blocks separately when A couples them not (no geometric stiffness)."""
    coupled = False
    for a in range(3):
        for b in range(3, 7):
            if A[a, b] != 0.0:
                coupled = True
    if coupled:
        return _inv_spd(A, out, 0, 7)
    for a in range(3):
        for b in range(3, 7):
            out[a, b] = 0.0
            out[b, a] = 0.0
    return _inv_spd(A, out, 0, 3) and _inv_spd(A, out, 3, 4)


@njit(cache=True, nogil=True, _nrt=False)  # out of line: numba's parfor analysis rejects G's tuples inlined
def _closed_inverse(i, q, mass, inertia_inv, k, scale, D):
    """D = scale (M_i + k p p^T)^-1 in closed form, M_i = diag(m, m, m, 4 G^T J' G) (eq. 7),
    for k > 0 and p != 0 (docs/index3.md, "The leaf blocks in closed form"):

        (4 G^T J' G + k p p^T)^-1 = G^T J'^-1 G / (4 s^2) + p p^T / (k s^2),   s = p^T p,

    from G G^T = s 1, G p = 0 and G^T G = s 1 - p p^T.  A fifth of the Cholesky inverse's
    time (its square roots and divisions run in a chain)."""
    e0, e1, e2, e3 = q[i, 3], q[i, 4], q[i, 5], q[i, 6]
    G = ((-e1, e0, e3, -e2), (-e2, -e3, e0, e1), (-e3, e2, -e1, e0))  # gmat(p)
    p = (e0, e1, e2, e3)
    s = e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3
    Ji = inertia_inv[i]
    ca = scale / (4.0 * s * s)
    cb = scale / (k * s * s)
    cm = scale / mass[i]
    for a in range(7):
        for b in range(7):
            D[a, b] = 0.0
    for a in range(3):
        D[a, a] = cm
    for c in range(4):
        w0 = Ji[0, 0] * G[0][c] + Ji[0, 1] * G[1][c] + Ji[0, 2] * G[2][c]  # column c of J'^-1 G
        w1 = Ji[1, 0] * G[0][c] + Ji[1, 1] * G[1][c] + Ji[1, 2] * G[2][c]
        w2 = Ji[2, 0] * G[0][c] + Ji[2, 1] * G[1][c] + Ji[2, 2] * G[2][c]
        for d in range(c, 4):
            t = ca * (G[0][d] * w0 + G[1][d] * w1 + G[2][d] * w2) + cb * p[c] * p[d]
            D[3 + c, 3 + d] = t
            D[3 + d, 3 + c] = t


@njit(cache=True, nogil=True, inline='always')
def _leaf_matrix_one(i, ix, Mb, Hgeo, q, c4, geo, mass, inertia_inv, kpsi, scale, Mcc, Dl, pst, Phi, ok):
    """M_cc = M_i + c4 * kpsi * Psi_q^T Psi_q (+ c4 * H_geo), D_i = scale * M_cc^-1;
    every handle pair (h, k) of leaf i gets the block D_i (eqs. 22-26).  Without geometric
    stiffness (``geo`` False: H_geo is not read) D_i in closed form (:func:`_closed_inverse`);
    with it, or where the closed form does not hold (c4 kpsi <= 0, p = 0), M_cc in ``Mcc[i]``
    and its Cholesky inverse."""
    node_nh, node_h_start, node_pair_start = ix.node_nh, ix.node_h_start, ix.node_pair_start
    for c in range(4):
        pst[i, c] = q[i, 3 + c]
    D = Dl[i]
    k = c4 * kpsi
    s = q[i, 3] ** 2 + q[i, 4] ** 2 + q[i, 5] ** 2 + q[i, 6] ** 2
    if not geo and k > 0.0 and s > 0.0 and mass[i] > 0.0:
        _closed_inverse(np.int64(i), q, mass, inertia_inv, k, scale, D)  # int64: one specialisation (module doc)
        ok[i] = 1
    else:
        A = Mcc[i]
        for a in range(7):
            for b in range(7):
                A[a, b] = Mb[i, a, b] + (c4 * Hgeo[i, a, b] if geo else 0.0)
        for a in range(4):
            for b in range(4):
                A[3 + a, 3 + b] += k * q[i, 3 + a] * q[i, 3 + b]
        if not _inv7(A, D):
            ok[i] = 0
            for a in range(7):
                for b in range(7):
                    D[a, b] = 0.0
        else:
            ok[i] = 1
        for a in range(7):
            for b in range(7):
                D[a, b] *= scale
    nh = node_nh[i]
    ph = node_pair_start[i]
    for h in range(nh * nh):
        for a in range(7):
            for b in range(7):
                Phi[ph + h, a, b] = D[a, b]


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def leaf_matrices(ix, Mb, Hgeo, q, c4, geo, mass, inertia_inv, kpsi, scale, Mcc, Dl, pst, Phi, ok):
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _leaf_matrix_one(i, ix, Mb, Hgeo, q, c4, geo, mass, inertia_inv, kpsi, scale, Mcc, Dl, pst, Phi, ok)
    else:
        for i in range(nb):
            _leaf_matrix_one(i, ix, Mb, Hgeo, q, c4, geo, mass, inertia_inv, kpsi, scale, Mcc, Dl, pst, Phi, ok)


@njit(cache=True, nogil=True, inline='always')
def _leaf_bias_one(i, ix, Dl, base, rhs, bl, bv):
    """b_i = base_i + D_i rhs_i, copied to every handle of leaf i."""
    node_nh, node_h_start = ix.node_nh, ix.node_h_start
    D = Dl[i]
    for a in range(7):
        s = base[i, a]
        for b in range(7):
            s += D[a, b] * rhs[i, b]
        bl[i, a] = s
    sh = node_h_start[i]
    for h in range(node_nh[i]):
        for a in range(7):
            bv[sh + h, a] = bl[i, a]


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def leaf_biases(ix, Dl, base, rhs, bl, bv):
    nb = Dl.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _leaf_bias_one(i, ix, Dl, base, rhs, bl, bv)
    else:
        for i in range(nb):
            _leaf_bias_one(i, ix, Dl, base, rhs, bl, bv)


@njit(cache=True, nogil=True, inline='always')
def _leaf_result_one(i, ix, Dl, bl, Fh, out):
    """x_i = D_i sum_h F_h + b_i (eqs. 24/25, 43/44, 58/59 for a physical body)."""
    node_nh, node_h_start = ix.node_nh, ix.node_h_start
    sh = node_h_start[i]
    D = Dl[i]
    for a in range(7):
        s = bl[i, a]
        for h in range(node_nh[i]):
            for b in range(7):
                s += D[a, b] * Fh[sh + h, b]
        out[i, a] = s


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def leaf_results(ix, Dl, bl, Fh, out):
    nb = Dl.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _leaf_result_one(i, ix, Dl, bl, Fh, out)
    else:
        for i in range(nb):
            _leaf_result_one(i, ix, Dl, bl, Fh, out)


# ------------------------------------------------------------------ Newton / projection right-hand sides


@njit(cache=True, nogil=True, _nrt=False)
def newton_rhs(q, res, alpha, rhs):
    """rhs_i = g_i + Psi_qi^T alpha Psi_i (eq. 22, Psi = (p^T p - 1) / 2)."""
    nb = q.shape[0]
    for i in range(nb):
        psi = 0.5 * (q[i, 3] ** 2 + q[i, 4] ** 2 + q[i, 5] ** 2 + q[i, 6] ** 2 - 1.0)
        for a in range(3):
            rhs[i, a] = res[i, a]
        for c in range(4):
            rhs[i, 3 + c] = res[i, 3 + c] + alpha * psi * q[i, 3 + c]


@njit(cache=True, nogil=True, _nrt=False)
def newton_update(q, dq, mu, alpha):
    """q += dq, mu += alpha (Psi + Psi_q dq) (eq. 21); returns |dq|^2."""
    nb = q.shape[0]
    s = 0.0
    for i in range(nb):
        psi = 0.5 * (q[i, 3] ** 2 + q[i, 4] ** 2 + q[i, 5] ** 2 + q[i, 6] ** 2 - 1.0)
        lin = 0.0
        for c in range(4):
            lin += q[i, 3 + c] * dq[i, 3 + c]
        mu[i] += alpha * (psi + lin)
        for a in range(7):
            q[i, a] += dq[i, a]
            s += dq[i, a] * dq[i, a]
    return s


@njit(cache=True, nogil=True, _nrt=False)
def projection_rhs(pst, qs, nu, kpsi, base, rhs):
    """Projection biases (eqs. 45, 60): base = qs, rhs = kpsi p (p^T qs - nu), so that
    b = qs + D rhs = M_cc^-1 (M_c qs + c4 kpsi p nu) with M_c = M_cc - c4 kpsi p p^T."""
    nb = qs.shape[0]
    for i in range(nb):
        s = -nu[i]
        for c in range(4):
            s += pst[i, c] * qs[i, 3 + c]
        for a in range(7):
            base[i, a] = qs[i, a]
        for a in range(3):
            rhs[i, a] = 0.0
        for c in range(4):
            rhs[i, 3 + c] = kpsi * pst[i, c] * s


@njit(cache=True, nogil=True, _nrt=True)
def body_wrench_from_rows(ca, row_adr, x, P, Gb, lam, out):
    """Wrench [f; n] the predecessor exerts on the successor of each joint, about P[j]:
    minus the succ rows' force G_b^T lam (about the succ COM), shifted to P[j]."""
    succ, nc_j = ca[2], ca[11]
    nj = succ.shape[0]
    for j in range(nj):
        b = succ[j]
        r = row_adr[j]
        w = np.zeros(6)
        for k in range(r, r + nc_j[j]):
            for c in range(6):
                w[c] -= Gb[k, c] * lam[k]
        shift_force_by(w, x[b, 0] - P[j, 0], x[b, 1] - P[j, 1], x[b, 2] - P[j, 2], out[j])


# ------------------------------------------------------------------ geometric stiffness


@njit(cache=True, nogil=True, _nrt=False)
def _pose_of(qi, xo, Ro, Eo):
    for k in range(3):
        xo[k] = qi[k]
    quat_to_rot(qi[3:7], Ro)
    emat(qi[3:7], Eo)


@njit(cache=True, nogil=True, _nrt=True)
def _end_force(ca, j, side, qa, qb, has_a, lam, r, n, x0, R0, V0, tmp_phi, tmp_Ga, tmp_Gb, tmp_g, out):
    """out = Phi_q(side)^T lam for joint j with the bodies at (qa, qb)."""
    xa = np.empty(3)
    Ra = np.empty((3, 3))
    Ea = np.empty((3, 4))
    xb = np.empty(3)
    Rb = np.empty((3, 3))
    Eb = np.empty((3, 4))
    _pose_of(qb, xb, Rb, Eb)
    if has_a:
        _pose_of(qa, xa, Ra, Ea)
        joint_constraint(ca, j, xa, Ra, V0, xb, Rb, V0, tmp_phi[:n], tmp_Ga[:n], tmp_Gb[:n], tmp_g[:n])
    else:
        joint_constraint(ca, j, x0, R0, V0, xb, Rb, V0, tmp_phi[:n], tmp_Ga[:n], tmp_Gb[:n], tmp_g[:n])
    Gt = tmp_Ga if side == 0 else tmp_Gb
    Ex = Ea if side == 0 else Eb
    for a in range(7):
        out[a] = 0.0
    for k in range(n):
        lk = lam[r + k]
        for c in range(3):
            out[c] += Gt[k, c] * lk
        for c in range(4):
            out[3 + c] += 2.0 * (Gt[k, 3] * Ex[0, c] + Gt[k, 4] * Ex[1, c] + Gt[k, 5] * Ex[2, c]) * lk


@njit(cache=True, nogil=True, _nrt=True)
def _geo_one(i, ix, ca, row_adr, q, lam, mu, h, H):
    """H_i = sum_joints d(Phi_qi^T lam)/dq_i (central differences) + mu_i 1_p, symmetrised:
    the body-diagonal blocks of Phi_qq^T lam + Psi_qq^T mu (paper 000, sect. 4.4)."""
    node_nh, node_h_start, h_joint, h_side = ix.node_nh, ix.node_h_start, ix.h_joint, ix.h_side
    pred, succ, nc_j = ca[1], ca[2], ca[11]
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    tphi = np.empty(6)
    tGa = np.empty((6, 6))
    tGb = np.empty((6, 6))
    tg = np.empty(6)
    fp = np.empty(7)
    fm = np.empty(7)
    qa = np.empty(7)
    qb = np.empty(7)
    Hi = H[i]
    for a in range(7):
        for b in range(7):
            Hi[a, b] = 0.0
    sh = node_h_start[i]
    for hh in range(node_nh[i]):
        j = h_joint[sh + hh]
        if j >= pred.shape[0]:  # a force element's row (stiffness_rows), not a joint
            continue
        side = h_side[sh + hh]
        a_ = pred[j]
        b_ = succ[j]
        r = row_adr[j]
        n = nc_j[j]
        for c in range(7):
            qb[c] = q[b_, c]
            qa[c] = q[a_, c] if a_ >= 0 else 0.0
        for c in range(7):
            if side == 0:
                qa[c] += h
            else:
                qb[c] += h
            _end_force(ca, j, side, qa, qb, a_ >= 0, lam, r, n, x0, R0, V0, tphi, tGa, tGb, tg, fp)
            if side == 0:
                qa[c] -= 2.0 * h
            else:
                qb[c] -= 2.0 * h
            _end_force(ca, j, side, qa, qb, a_ >= 0, lam, r, n, x0, R0, V0, tphi, tGa, tGb, tg, fm)
            if side == 0:
                qa[c] += h
            else:
                qb[c] += h
            for a in range(7):
                Hi[a, c] += (fp[a] - fm[a]) / (2.0 * h)
    for a in range(7):
        for b in range(a + 1, 7):
            s = 0.5 * (Hi[a, b] + Hi[b, a])
            Hi[a, b] = s
            Hi[b, a] = s
    for c in range(4):
        Hi[3 + c, 3 + c] += mu[i]


@njit(cache=True, nogil=True, parallel=True, _nrt=True)
def geometric_stiffness(ix, ca, row_adr, q, lam, mu, h, H):
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _geo_one(np.int64(i), ix, ca, row_adr, q, lam, mu, h, H)
    else:
        for i in range(nb):
            _geo_one(i, ix, ca, row_adr, q, lam, mu, h, H)


# ------------------------------------------------------------------ fused calls
# One dispatch instead of six to eight: at 128 bodies a step is ~1 ms, and each numba
# call with the tree's index tuple costs 2-4 us to unbox.


@njit(cache=True, nogil=True, _nrt=False)
def predictor(qb, qdb, qddb, dt, q, qd_hat, qdd_hat):
    """The step's start (paper 000 sect. 3.5): the predictor ``q = qb + dt qdb + dt^2/2 qddb``
    and the trapezoidal rule's constant terms, so that ``q_dot = 2/dt q + qd_hat`` and
    ``q_ddot = 4/dt^2 q + qdd_hat`` (eqs. 15-16)."""
    for i in range(qb.shape[0]):
        for a in range(7):
            q[i, a] = qb[i, a] + (dt * qdb[i, a] + 0.5 * dt * dt * qddb[i, a])
            qd_hat[i, a] = -(2.0 / dt * qb[i, a] + qdb[i, a])
            qdd_hat[i, a] = -(4.0 / (dt * dt) * qb[i, a] + 4.0 / dt * qdb[i, a] + qddb[i, a])


@njit(cache=True, nogil=True, _nrt=False)
def difference_rates(q, qd_hat, qdd_hat, dt, qd, qdd):
    """q_dot and q_ddot of positions q from the difference equations (eqs. 15-16)."""
    c1 = 2.0 / dt
    c2 = 4.0 / (dt * dt)
    for i in range(q.shape[0]):
        for a in range(7):
            qd[i, a] = c1 * q[i, a] + qd_hat[i, a]
            qdd[i, a] = c2 * q[i, a] + qdd_hat[i, a]


@njit(cache=True, nogil=True, _nrt=True)
def newton_state(q, qd_hat, qdd_hat, dt, qd, qdd, mu, lam, fa, springs, jq_ref, jq, ca, ix, mass, inertia,
                 x, R, V, A, E, F, Mb, Qb, phi, Ga, Gb, gq, G7, res):
    """State and residual of a Newton iterate: q_dot, q_ddot from the difference
    equations (eqs. 15-16), body kinematics, applied forces, M_i and Q_i, the joint
    rows at q and the residuals g_i (eq. 12)."""
    difference_rates(q, qd_hat, qdd_hat, dt, qd, qdd)
    body_kinematics(q, qd, qdd, x, R, V, A, E)
    if springs.shape[0]:
        joint_coordinates_from_poses(fa, springs, x, R, jq_ref, jq)
    applied_forces(fa, x, R, V, jq, F)
    body_mass_forces(mass, inertia, q, qd, R, F, Mb, Qb)
    row_adr, rows = ix.row_adr, ix.rows
    joint_rows(ca, row_adr, x, R, V, E, phi, Ga, Gb, gq, G7)
    residuals(ix, Mb, Qb, q, qdd, mu, lam, G7, row_adr, rows, res)


@njit(cache=True, nogil=True, _nrt=False)
def tree_solve(ix, Dl, base, rhs, bl, out, Phi, bv, Fh, G, sel, g0, lam, Kf, Kp, Kr, Ks, Y, E, r0, y0, scr,
               eps, sgn, tol, matrices):
    """Leaf biases b_i = base_i + D_i rhs_i, the tree passes (matrix pass if asked;
    leaf blocks already filled), and x_i = D_i sum F_h + b_i per body into ``out``.

    Kernels pass ``matrices`` as ``np.bool_(False)``, not the literal ``False``: numba
    compiles a separate specialisation for a literal argument, and this kernel is large
    (docs/performance.md, "Compile time")."""
    leaf_biases(ix, Dl, base, rhs, bl, bv)
    if matrices:
        tree.assemble_matrices7(ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol)
    tree.assemble_biases7(ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn)
    tree.disassemble7(ix, Fh, G, sel, lam, Y, y0)
    leaf_results(ix, Dl, bl, Fh, out)


@njit(cache=True, nogil=True, _nrt=True)
def newton_iterations(iters, hold, tol, geo, h_geo, dt, alpha, q, qd_hat, qdd_hat, mu, lam, fa, springs, jq_ref, jq, ca,
                      ix, mass, inertia, inertia_inv, qd, qdd, x, R, V, A, E, F, Mb, Qb, phi, Ga, Gb, gq, G7, res, Hgeo,
                      Mcc, Dl, pst, ok, base, rhs, bl, out, Phi, bv, Fh, G, sel, dlam, Kf, Kp, Kr, Ks, Y, Ew, r0, y0,
                      scr, s_elem, s_row, s_pred, pivot_tol):
    """The Newton-Raphson loop of one step over the tree (docs/index3.md): ``iters``
    iterations, or fewer once |dq| < tol; the matrix pass every ``hold`` iterations,
    with the force elements' rows ``s_*`` (:func:`stiffness_rows`, after the joints'; their
    multipliers stay zero: the element forces are in ``Q``).  Updates q, lam, mu in place (``base``
    must be zero).  Returns (iterations, |dq|), iterations = -1 if a body's M_cc is not
    positive definite."""
    c4 = 0.25 * dt * dt
    dqn = np.inf
    row_adr = ix.row_adr
    nb = q.shape[0]
    for it in range(iters):
        newton_state(q, qd_hat, qdd_hat, dt, qd, qdd, mu, lam, fa, springs, jq_ref, jq, ca, ix, mass, inertia,
                     x, R, V, A, E, F, Mb, Qb, phi, Ga, Gb, gq, G7, res)
        refresh = it % hold == 0
        if refresh:
            if geo:
                geometric_stiffness(ix, ca, row_adr, q, lam, mu, h_geo, Hgeo)
            leaf_matrices(ix, Mb, Hgeo, q, c4, geo, mass, inertia_inv, alpha, -c4, Mcc, Dl, pst, Phi, ok)
            for i in range(nb):
                if ok[i] == 0:
                    return -1, dqn
            G[:] = G7
            if s_elem.shape[0]:
                stiffness_rows(fa, s_elem, s_row, s_pred, dt, alpha, x, R, V, E, G)
        newton_rhs(q, res, alpha, rhs)
        tree_solve(ix, Dl, base, rhs, bl, out, Phi, bv, Fh, G, sel, phi, dlam, Kf, Kp, Kr, Ks, Y, Ew, r0, y0, scr,
                   1.0 / alpha, -1.0, pivot_tol, refresh)
        for k in range(lam.shape[0]):
            lam[k] += dlam[k]
        if s_row.shape[0]:  # the force elements' rows follow the joints'
            for k in range(s_row[0], lam.shape[0]):
                lam[k] = 0.0
        dqn = np.sqrt(newton_update(q, out, mu, alpha))
        if dqn < tol:
            return it + 1, dqn
    return iters, dqn


# ------------------------------------------------------------------ projections


@njit(cache=True, nogil=True, _nrt=True)
def velocity_projection(exact, k_exact, alpha, q, qd, zero7, zero_rows, nu, n_joint_rows, mass, inertia,
                        inertia_inv, ca, ix, x, R, V, A, E, F, Mb, Qb, phi, Ga, Gb, gq, G7, Mcc, Dl, pst, ok, base,
                        rhs, bl, out, Phi, bv, Fh, G, sel, lam, Kf, Kp, Kr, Ks, Y, Ew, r0, y0, scr, pivot_tol):
    """The mass-orthogonal velocity projection of one step at the final ``q``, in place on
    ``qd`` (eqs. 40-54; docs/index3.md, "Mass-orthogonal projections").

    ``exact``: first one matrix pass at ``q`` with leaf blocks ``(M + k p p^T)^-1`` and
    ``eps = 0`` (M from the applied forces ``F`` of the last Newton state; only M is used).
    Penalised (the paper's): the last Newton matrices, refactorised without the force
    elements' rows (rows ``n_joint_rows`` on) where there are any.  Returns the solve's
    ``(eps, sgn, kpsi)`` for :func:`acceleration_projection`, ``eps`` = NaN if a leaf block
    is not positive definite.  ``Index3Formulation._python_projections`` is the same
    sequence with the dense linear solve (the test oracle)."""
    if exact:
        eps, sgn, kp = 0.0, 1.0, -k_exact
        body_kinematics(q, qd, zero7, x, R, V, A, E)
        body_mass_forces(mass, inertia, q, qd, R, F, Mb, Qb)
        joint_rows(ca, ix.row_adr, x, R, V, E, phi, Ga, Gb, gq, G7)
        leaf_matrices(ix, Mb, Mb, q, 1.0, np.bool_(False), mass, inertia_inv, k_exact, 1.0, Mcc, Dl, pst, Phi, ok)
        for i in range(q.shape[0]):
            if ok[i] == 0:
                return np.nan, sgn, kp
        G[:] = G7
        tree.assemble_matrices7(ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, Ew, scr, eps, sgn, pivot_tol)
    else:
        eps, sgn, kp = 1.0 / alpha, -1.0, alpha
        if n_joint_rows < G.shape[1]:
            G[:, n_joint_rows:] = 0.0
            tree.assemble_matrices7(ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, Ew, scr, eps, sgn, pivot_tol)
    nu[:] = 0.0
    projection_rhs(pst, qd, nu, kp, base, rhs)
    tree_solve(ix, Dl, base, rhs, bl, out, Phi, bv, Fh, G, sel, zero_rows, lam, Kf, Kp, Kr, Ks, Y, Ew, r0, y0, scr,
               eps, sgn, pivot_tol, np.bool_(False))
    qd[:] = out
    return eps, sgn, kp


@njit(cache=True, nogil=True, _nrt=True)
def acceleration_projection(eps, sgn, kp, q, qd, qdd, nu, ca, ix, x, R, V, A, E, phi, Ga, Gb, gq, G7, Dl, pst,
                            base, rhs, bl, out, Phi, bv, Fh, G, sel, lam, Kf, Kp, Kr, Ks, Y, Ew, r0, y0, scr,
                            pivot_tol):
    """The mass-orthogonal acceleration projection (eqs. 55-69) after
    :func:`velocity_projection`, in place on ``qdd``: ``g`` at the projected velocities,
    the same matrices.  Returns the position residual |phi| at ``q``; ``base`` is left zero."""
    body_kinematics(q, qd, qdd, x, R, V, A, E)
    joint_rows(ca, ix.row_adr, x, R, V, E, phi, Ga, Gb, gq, G7)
    viol = 0.0
    for k in range(phi.shape[0]):
        viol += phi[k] * phi[k]
    for i in range(q.shape[0]):
        nu[i] = -(qd[i, 3] ** 2 + qd[i, 4] ** 2 + qd[i, 5] ** 2 + qd[i, 6] ** 2)
    projection_rhs(pst, qdd, nu, kp, base, rhs)
    tree_solve(ix, Dl, base, rhs, bl, out, Phi, bv, Fh, G, sel, gq, lam, Kf, Kp, Kr, Ks, Y, Ew, r0, y0, scr,
               eps, sgn, pivot_tol, np.bool_(False))
    qdd[:] = out
    base[:] = 0.0
    return np.sqrt(viol)
