"""numba kernels of the ``index3`` formulation (paper 000; docs/index3.md): the data they
share, the bodies' kinematics, masses and forces, the constraint rows and the geometric
stiffness.  The tree solve and the step (residuals, leaf blocks, Newton-Raphson loop,
projections) are in :mod:`.index3_newton`.

Per body ``i`` the absolute coordinates are ``q_i = [r_i; p_i]`` (centre of mass,
Euler parameters ``p = [e0, e1, e2, e3]``), nd = 7.  World angular velocity
``w = 2 E(p) p_dot``, body angular velocity ``w' = 2 G(p) p_dot`` with

    E(p) = [-e,  e~ + e0 1],     G(p) = [-e, -e~ + e0 1]      (paper 000, eq. 7)

so a joint row ``Phi_dot = G_a^tw V_a + G_b^tw V_b`` of :mod:`engine.constraints`
(twists ``V = [v_C; w]``) becomes, in absolute coordinates,

    Phi_q = [G^tw_lin,  2 G^tw_ang E(p)].

The Euler-parameter normalisation is ``Psi = (p^T p - 1) / 2`` (``Psi_q = [0, p^T]``).

The kernels' arrays come in named tuples, built once by ``Index3Formulation`` and
holding the very arrays the kernels write in place: :class:`ModelArrays` (the model),
:class:`BodyState` (per body), :class:`JointRows` (per constraint row), :class:`LeafWork`
(the tree's leaves), :class:`~.tree.TreeWork` (the tree's merges: its layout's ``work``) and the
settings :class:`NewtonSettings`, :class:`ProjectionSettings`.  A field read ``body.x``
compiles to the same code as a tuple item.  The classes are module-level so that numba's
cache can pickle them.  Three rules keep numba's parallel passes (``parallel=True`` kernels
and the inline functions they call) from losing writes or failing
(https://github.com/numba/numba/issues/5872, /7135, /5703):

* an array a parallel loop's body writes is taken from its tuple before the loop and passed
  to the body as an array (``res = body.res``; the per-body functions take such arrays
  after the tuples): written through a tuple inside the loop, it is dropped as dead code;
* a field a kernel writes is read on a line of its own (``res = body.res``), not unpacked
  with others (``a, b = t.a, t.b``), which the same passes lose as an alias of the argument;
* a parallel loop's body takes no tuple nested in a tuple (``ModelArrays.ca``): the kernel
  passes it the fields it needs.

No kernel allocates in the step loop except where noted; body loops go parallel from
``threads.PARALLEL_MIN_BODIES`` on.  A ``prange`` index is unsigned: the per-body kernels
called from both the parallel and the serial loop get it as ``np.int64(i)``, so numba
compiles them once, not once per index type (docs/compile-time.md).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..constraints import ConArrays, joint_constraint
from ..forces import ForceArrays, point_and_velocity, world_vector
from ..model import F_JOINT_SPRING, REVOLUTE
from ..spatial import quat_to_rot, shift_force_by
from ..threads import PARALLEL_MIN_BODIES

#: :func:`engine.constraints.joint_constraint` inlined into :func:`joint_rows`: called out
#: of line, its 22 arrays (those of ``ca`` included) cost more than a spherical joint's rows
#: (128 joints: 29-40 us against 21-23 us inlined; docs/index3.md, "Timing").  Not cached on
#: its own: an ``inline='always'`` function is compiled only as part of its callers.  (Under
#: ``NUMBA_DISABLE_JIT`` the decorator returns the plain function, which has no ``py_func``.)
_joint_constraint = njit(nogil=True, _nrt=True, inline='always')(getattr(joint_constraint, "py_func",
                                                                         joint_constraint))


# ------------------------------------------------------------------ the kernels' data


class ModelArrays(NamedTuple):
    """The model's arrays (``nb`` bodies, ``nj`` joints; :class:`~linkwork.engine.model.Model`)."""

    mass: np.ndarray  # (nb,) m_i of M_i = diag(m_i 1, 4 G^T J'_i G) (eq. 7)
    inertia: np.ndarray  # (nb, 3, 3) J'_i, about the COM in body axes (eq. 7)
    inertia_inv: np.ndarray  # (nb, 3, 3) J'_i^-1, for the leaf blocks in closed form
    ca: ConArrays  # the joints, for engine.constraints.joint_constraint
    fa: ForceArrays  # the force elements, for engine.forces.applied_forces
    springs: np.ndarray  # the joints whose coordinate a joint spring needs (forces.spring_joints)
    s_elem: np.ndarray  # (ns,) the force elements with rows in the Newton tangent (stiffness_rows)
    s_row: np.ndarray  # (ns,) element k's first row (they follow the joints' rows)
    s_pred: np.ndarray  # (ns,) the body at element k's pred end in the tree (-1: ground)
    n_joint_rows: int  # the joints' rows, 0 .. n_joint_rows - 1


class BodyState(NamedTuple):
    """Per-body arrays of a step (``nb`` bodies, rows in the internal body order)."""

    qd_hat: np.ndarray  # (nb, 7) q_dot = 2/dt q + qd_hat (eq. 15), predictor
    qdd_hat: np.ndarray  # (nb, 7) q_ddot = 4/dt^2 q + qdd_hat (eq. 16), predictor
    qd: np.ndarray  # (nb, 7) q_dot of the Newton iterate (eq. 15), newton_state
    qdd: np.ndarray  # (nb, 7) q_ddot of the Newton iterate (eq. 16), newton_state
    x: np.ndarray  # (nb, 3) centre of mass r_i, body_kinematics
    R: np.ndarray  # (nb, 3, 3) rotation of the normalised p_i, body_kinematics
    E: np.ndarray  # (nb, 3, 4) E(p_i), body_kinematics
    V: np.ndarray  # (nb, 6) twist [v_C; w], body_kinematics
    A: np.ndarray  # (nb, 6) classical acceleration [a_C; alpha], body_kinematics
    jq_ref: np.ndarray  # (nj,) the spring joints' coordinates at the step's start (their branch)
    jq: np.ndarray  # (nj,) the spring joints' coordinates, forces.joint_coordinates_from_poses
    F: np.ndarray  # (nb, 6) applied wrench [f; n] about the COM, world axes, forces.applied_forces
    Mb: np.ndarray  # (nb, 7, 7) M_i (eq. 7), body_mass_forces
    Qb: np.ndarray  # (nb, 7) Q_i (eq. 8), body_mass_forces
    res: np.ndarray  # (nb, 7) the residual g_i (eq. 12), index3_newton.residuals
    Hgeo: np.ndarray  # (nb, 7, 7) geometric stiffness H_i (sect. 4.4), geometric_stiffness
    nu: np.ndarray  # (nb,) nu_i of Psi_ddot = p^T p_ddot - nu_i: 0 for velocities, -p_dot^T p_dot
    zero7: np.ndarray  # (nb, 7) zeros: the accelerations of the exact projections' kinematics


class JointRows(NamedTuple):
    """The constraint rows at ``q`` (``n_rows``: the joints', then the force elements',
    which stay zero here: :func:`stiffness_rows` writes those into the tree's ``G``), joint_rows."""

    phi: np.ndarray  # (n_rows,) Phi
    Ga: np.ndarray  # (n_rows, 6) twist Jacobian G^tw_a of the pred end
    Gb: np.ndarray  # (n_rows, 6) twist Jacobian G^tw_b of the succ end
    gq: np.ndarray  # (n_rows,) g of Phi_ddot = Phi_q q_ddot + g (the paper's gamma = -g)
    G7: np.ndarray  # (2, n_rows, 7) Phi_q = [G^tw_lin, 2 G^tw_ang E(p)]: [0] pred end, [1] succ end
    zero_rows: np.ndarray  # (n_rows,) zeros: the velocity projection's g0


class LeafWork(NamedTuple):
    """The leaves of the tree solve, one per body: ``x_i = D_i sum_h F_h + b_i``
    (eqs. 24-26 for the Newton iterations, 43/44 and 58/59 for the projections)."""

    Mcc: np.ndarray  # (nb, 7, 7) M_cc where index3_newton.leaf_matrices inverts it by Cholesky
    D: np.ndarray  # (nb, 7, 7) D_i = scale M_cc^-1 (Newton: delta_i, eq. 26), leaf_matrices
    pst: np.ndarray  # (nb, 4) p_i at the last matrix pass, leaf_matrices
    ok: np.ndarray  # (nb,) int64: 1 where M_cc is positive definite, leaf_matrices
    base: np.ndarray  # (nb, 7) the biases' base term (zero in the Newton iterations), projection_rhs
    rhs: np.ndarray  # (nb, 7) the biases' right-hand side, newton_rhs / projection_rhs
    bl: np.ndarray  # (nb, 7) b_i = base_i + D_i rhs_i, leaf_biases
    out: np.ndarray  # (nb, 7) the solution x_i, leaf_results


class NewtonSettings(NamedTuple):
    """The Newton-Raphson loop's settings (docs/index3.md, "Settings")."""

    iters: int  # newton_iters: iterations per call, at most
    hold: int  # tangent_hold: the matrix pass every ``hold`` iterations (modified Newton)
    tol: float  # newton_tol: stop once |dq| < tol
    geo: bool  # geometric_stiffness: H_i in the leaf blocks
    h_geo: float  # the central-difference step of H_i
    alpha: float  # the penalty alpha (joints and Euler-parameter normalisation) at steps of alpha_dt or longer
    alpha_dt: float  # below it, alpha (alpha_dt / dt)^2 (settings.penalty_at; 0: alpha at every step)
    pivot_tol: float  # relative pivot tolerance of the merges' factorisation (config.PIVOT_RTOL)


class ProjectionSettings(NamedTuple):
    """The mass-orthogonal projections' settings (docs/index3.md, "Mass-orthogonal projections")."""

    exact: bool  # exact_projections: their own matrix pass, leaf blocks (M + k p p^T)^-1, eps = 0
    k_exact: float  # that k
    alpha: float  # the penalty: the penalised projections' eps = 1 / alpha, kpsi = alpha
    pivot_tol: float  # relative pivot tolerance of the merges' factorisation (config.PIVOT_RTOL)


class GeoScratch(NamedTuple):
    """Scratch of one body's geometric stiffness (allocated per body by :func:`_geo_one`)."""

    x0: np.ndarray  # (3,) the ground's pose
    R0: np.ndarray  # (3, 3)
    V0: np.ndarray  # (6,) a zero twist
    phi: np.ndarray  # (6,) one joint's rows at perturbed poses
    Ga: np.ndarray  # (6, 6)
    Gb: np.ndarray  # (6, 6)
    g: np.ndarray  # (6,)


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
    """Every body's pose ``x``, ``R``, ``E(p)``, twist ``V = [r_dot; 2 E p_dot]`` and
    classical acceleration ``A = [r_ddot; 2 E p_ddot]`` (eq. 7; docs/index3.md, "Coordinates,
    mass matrix, forces")."""
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
    """Every body's mass matrix M_i (eq. 7) and generalized forces Q_i (eq. 8) from the
    applied wrenches ``F``."""
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _body_mq(np.int64(i), mass, inertia, q, qd, R, F, Mb, Qb)
    else:
        for i in range(nb):
            _body_mq(i, mass, inertia, q, qd, R, F, Mb, Qb)


# ------------------------------------------------------------------ joint rows


@njit(cache=True, nogil=True, inline='always')
def _joint_rows_one(j, ca, row_adr, body, x0, R0, V0, phi, Ga, Gb, g, G7):
    """Joint j's rows at the poses and twists of ``body`` (``x0, R0, V0``: the ground's) into
    the arrays of :class:`JointRows` (passed one by one: module doc)."""
    pred, succ, nc_j = ca[1], ca[2], ca[11]
    x, R, V, E = body.x, body.R, body.V, body.E
    a = pred[j]
    b = succ[j]
    r = row_adr[j]
    n = nc_j[j]
    xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
    _joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[r:r + n], Ga[r:r + n], Gb[r:r + n], g[r:r + n])
    for k in range(r, r + n):
        for side in range(2):
            bd = a if side == 0 else b
            Gt = Ga if side == 0 else Gb
            if bd < 0:
                for c in range(7):
                    G7[side, k, c] = 0.0
                continue
            for c in range(3):
                G7[side, k, c] = Gt[k, c]
            Eb = E[bd]
            for c in range(4):
                G7[side, k, 3 + c] = 2.0 * (Gt[k, 3] * Eb[0, c] + Gt[k, 4] * Eb[1, c] + Gt[k, 5] * Eb[2, c])


@njit(cache=True, nogil=True, parallel=True, _nrt=True)
def joint_rows(ca, row_adr, body, rows):
    """Every joint's rows at the poses and twists of ``body`` (``x``, ``R``, ``V``, ``E``) into
    ``rows``: the residual ``phi`` (Phi), the twist Jacobians ``Ga``, ``Gb``, the quadratic
    term ``gq`` of ``Phi_ddot = Phi_q q_ddot + g`` and the absolute-coordinate Jacobian
    ``G7`` = Phi_q (2, n_rows, 7): [0] pred, [1] succ (docs/index3.md, "Constraints")."""
    nj = ca[0].shape[0]
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    phi = rows.phi  # written: one field a line, passed on as arrays (module doc)
    Ga = rows.Ga
    Gb = rows.Gb
    g = rows.gq
    G7 = rows.G7
    if nj >= PARALLEL_MIN_BODIES:
        for j in prange(nj):
            _joint_rows_one(np.int64(j), ca, row_adr, body, x0, R0, V0, phi, Ga, Gb, g, G7)
    else:
        for j in range(nj):
            _joint_rows_one(j, ca, row_adr, body, x0, R0, V0, phi, Ga, Gb, g, G7)


# ------------------------------------------------------------------ force-element rows


@njit(cache=True, nogil=True, _nrt=True)
def stiffness_rows(model, dt, alpha, body, G):
    """The force elements' tangent as tree rows (docs/index3.md, "Force elements in the
    tangent"), element ``model.s_elem[k]`` from row ``model.s_row[k]`` on: rows
    ``sqrt(kappa / alpha) d_q`` on both ends, so that with ``g0 = 0`` and ``eps = 1 / alpha``
    each adds ``dt^2/4 kappa d_q^T d_q`` to the Newton tangent, coupling the element's two bodies.

    * joint spring, coordinate ``l``: one row, ``d = l``, ``kappa = k + 2 c / dt``;
    * spring of length ``L``, tension ``T = k (L - L0) + c L_dot``, unit vector ``u``: the
      stiffness of the force ``T u`` in the relative displacement of its points is
      ``k_eff u u^T + T/L (1 - u u^T)``: three rows, along ``u`` (``kappa = k_eff``) and two
      directions normal to it (``kappa = T / L``, zero under compression, where it would
      make the tangent indefinite).

    ``model.s_pred[k]``: the body of the element's pred end (-1 = ground); ``body``: the poses
    and twists (``x``, ``R``, ``V``, ``E``); ``G``: the tree's rows (:class:`~.tree.TreeWork`)."""
    s_elem, s_row, s_pred, fa = model.s_elem, model.s_row, model.s_pred, model.fa
    x, R, V, E = body.x, body.R, body.V, body.E
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
                bd = b1 if w == 0 else b2
                pt = p1 if w == 0 else p2
                sgn = -1.0 if w == 0 else 1.0
                side = side1 if w == 0 else 1 - side1
                ends[side] = bd
                if bd < 0:
                    continue
                r0, r1, r2 = pt[0] - x[bd, 0], pt[1] - x[bd, 1], pt[2] - x[bd, 2]
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
                bd = ends[side]
                if bd < 0:
                    for c in range(7):
                        G[side, r + i, c] = 0.0
                    continue
                for c in range(3):
                    G[side, r + i, c] = sc[i] * tw[i, side, c]
                Eb = E[bd]
                for c in range(4):
                    G[side, r + i, 3 + c] = 2.0 * sc[i] * (tw[i, side, 3] * Eb[0, c] + tw[i, side, 4] * Eb[1, c]
                                                           + tw[i, side, 5] * Eb[2, c])


# ------------------------------------------------------------------ reactions


@njit(cache=True, nogil=True, _nrt=True)
def body_wrench_from_rows(ca, row_adr, x, P, Gb, lam, out):
    """Wrench [f; n] the predecessor exerts on the successor of each joint, about P[j]:
    minus the succ rows' force G_b^T lam (about the succ COM), shifted to P[j]
    (docs/index3.md, "Reactions")."""
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


@njit(cache=True, nogil=True, _nrt=False)
def joint_points(pred, anchor_pred, x, R, P):
    """Each joint's point ``P[j]``: its anchor fixed in the predecessor, ``x_a + R_a
    anchor`` (ground anchors are world points), each sum over the anchor's three
    coordinates in their order."""
    for j in range(pred.shape[0]):
        a = pred[j]
        if a < 0:
            for i in range(3):
                P[j, i] = anchor_pred[j, i]
            continue
        for i in range(3):
            P[j, i] = x[a, i] + (R[a, i, 0] * anchor_pred[j, 0] + R[a, i, 1] * anchor_pred[j, 1]
                                 + R[a, i, 2] * anchor_pred[j, 2])


# ------------------------------------------------------------------ geometric stiffness


@njit(cache=True, nogil=True, _nrt=False)
def _pose_of(qi, xo, Ro, Eo):
    """Pose of one body's coordinates ``qi = [r; p]``: ``xo = r``, ``Ro`` the rotation of p,
    ``Eo = E(p)`` (eq. 7)."""
    for k in range(3):
        xo[k] = qi[k]
    quat_to_rot(qi[3:7], Ro)
    emat(qi[3:7], Eo)


@njit(cache=True, nogil=True, _nrt=True)
def _end_force(ca, j, side, qa, qb, has_a, lam, r, n, s, out):
    """out = Phi_q(side)^T lam for joint j (rows r .. r + n - 1) with the bodies at (qa, qb);
    ``has_a``: the pred end is a body, else the ground (``s.x0``, ``s.R0``); ``s``: scratch
    (:class:`GeoScratch`)."""
    xa = np.empty(3)
    Ra = np.empty((3, 3))
    Ea = np.empty((3, 4))
    xb = np.empty(3)
    Rb = np.empty((3, 3))
    Eb = np.empty((3, 4))
    V0 = s.V0
    _pose_of(qb, xb, Rb, Eb)
    if has_a:
        _pose_of(qa, xa, Ra, Ea)
        joint_constraint(ca, j, xa, Ra, V0, xb, Rb, V0, s.phi[:n], s.Ga[:n], s.Gb[:n], s.g[:n])
    else:
        joint_constraint(ca, j, s.x0, s.R0, V0, xb, Rb, V0, s.phi[:n], s.Ga[:n], s.Gb[:n], s.g[:n])
    Gt = s.Ga if side == 0 else s.Gb
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
    sc = GeoScratch(np.zeros(3), np.eye(3), np.zeros(6), np.empty(6), np.empty((6, 6)), np.empty((6, 6)),
                    np.empty(6))
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
            _end_force(ca, j, side, qa, qb, a_ >= 0, lam, r, n, sc, fp)
            if side == 0:
                qa[c] -= 2.0 * h
            else:
                qb[c] -= 2.0 * h
            _end_force(ca, j, side, qa, qb, a_ >= 0, lam, r, n, sc, fm)
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
    """H (nb, 7, 7): every body's :func:`_geo_one` at positions ``q``, multipliers ``lam``, ``mu``."""
    nb = q.shape[0]
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _geo_one(np.int64(i), ix, ca, row_adr, q, lam, mu, h, H)
    else:
        for i in range(nb):
            _geo_one(i, ix, ca, row_adr, q, lam, mu, h, H)
