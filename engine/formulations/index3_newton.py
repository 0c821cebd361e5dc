"""numba kernels of the ``index3`` step (paper 000; docs/index3.md): the Newton residual,
the tree solve's leaves, the right-hand sides, and the fused kernels of one step -- the
Newton-Raphson loop (eqs. 15-39) and the mass-orthogonal projections (eqs. 40-69), each
one numba call.  Coordinates, notation and the named tuples of arrays they take
(``model``: :class:`~.index3_kernels.ModelArrays`, ``body``: :class:`~.index3_kernels.BodyState`,
``rows``: :class:`~.index3_kernels.JointRows`, ``leaf``: :class:`~.index3_kernels.LeafWork`,
``work``: :class:`~.tree.TreeWork`, ``settings``) are :mod:`.index3_kernels`'s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import config, njit, prange

from ..forces import applied_forces, joint_coordinates_from_poses
from ..settings import penalty_at
from ..threads import PARALLEL_MIN_BODIES
from . import tree
from .index3_kernels import body_kinematics, body_mass_forces, geometric_stiffness, joint_rows, stiffness_rows
from .rk4_kernel import call_void, native_address

#: The exact projections move the Newton positions onto the constraints where the least
#: mass-weighted correction onto them exceeds this (metres, Euler-parameter units;
#: docs/index3.md, "Position projection"), then factorise afresh at the corrected positions
#: and look again: at most POSITION_ROUNDS matrix passes in all.  A smaller correction is
#: not applied (the velocity projection's matrices stay those of the final positions):
#: with each step started from the multipliers of its projected accelerations, a smaller
#: tolerance helps only a penalty weaker than the step's default (docs/index3.md,
#: "Position projection").
POSITION_TOL = 1e-7
POSITION_ROUNDS = 3


# ------------------------------------------------------------------ Newton residual


@njit(cache=True, nogil=True, inline='always')
def _residual_one(i, ix, q, mu, lam, body, rows, res):
    """res_i = M_i qdd_i + sum_joints Phi_qi^T lam + Psi_qi^T mu_i - Q_i (eq. 12)."""
    node_nh, node_h_start, h_joint, h_side = ix.node_nh, ix.node_h_start, ix.h_joint, ix.h_side
    row_adr, n_rows = ix.row_adr, ix.rows
    Mb, Qb, qdd, G7 = body.Mb, body.Qb, body.qdd, rows.G7
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
        for k in range(r, r + n_rows[j]):
            lk = lam[k]
            for a in range(7):
                res[i, a] += G7[w, k, a] * lk


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def residuals(ix, q, mu, lam, body, rows):
    """Every body's residual g_i (eq. 12) into ``body.res``, from ``body.Mb``, ``body.Qb``,
    the iterate's ``body.qdd`` and the rows ``rows.G7`` (Phi_q)."""
    nb = q.shape[0]
    res = body.res  # written: passed on as an array (index3_kernels' module doc)
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _residual_one(i, ix, q, mu, lam, body, rows, res)
    else:
        for i in range(nb):
            _residual_one(i, ix, q, mu, lam, body, rows, res)


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
    # offsets and sizes as int64s, not literals: numba compiles a copy per literal value
    if coupled:
        return _inv_spd(A, out, np.int64(0), np.int64(7))
    for a in range(3):
        for b in range(3, 7):
            out[a, b] = 0.0
            out[b, a] = 0.0
    return _inv_spd(A, out, np.int64(0), np.int64(3)) and _inv_spd(A, out, np.int64(3), np.int64(4))


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
def _leaf_block(i, mass, inertia_inv, Mb, Hgeo, q, c4, geo, kpsi, scale, A, D):
    """D = scale * M_cc^-1, M_cc = M_i + c4 * kpsi * Psi_q^T Psi_q (+ c4 * H_geo) (eqs. 22-26;
    Newton: c4 = dt^2/4, kpsi = alpha, scale = -c4, D = delta_i), into ``D`` (``leaf.D[i]``).
    Without geometric stiffness (``geo`` False: H_geo is not read) D in closed form
    (:func:`_closed_inverse`); with it, or where the closed form does not hold
    (c4 kpsi <= 0, p = 0), M_cc in ``A`` (``leaf.Mcc[i]``) and its Cholesky inverse.
    Returns 1, or 0 if M_cc is not positive definite (then D = 0)."""
    k = c4 * kpsi
    s = q[i, 3] ** 2 + q[i, 4] ** 2 + q[i, 5] ** 2 + q[i, 6] ** 2
    if not geo and k > 0.0 and s > 0.0 and mass[i] > 0.0:
        _closed_inverse(np.int64(i), q, mass, inertia_inv, k, scale, D)  # int64: one specialisation (module doc)
        return 1
    for a in range(7):
        for b in range(7):
            A[a, b] = Mb[i, a, b] + (c4 * Hgeo[i, a, b] if geo else 0.0)
    for a in range(4):
        for b in range(4):
            A[3 + a, 3 + b] += k * q[i, 3 + a] * q[i, 3 + b]
    ok = 1
    if not _inv7(A, D):
        ok = 0
        for a in range(7):
            for b in range(7):
                D[a, b] = 0.0
    for a in range(7):
        for b in range(7):
            D[a, b] *= scale
    return ok


@njit(cache=True, nogil=True, inline='always')
def _leaf_handles(i, ix, D, Phi):
    """Every handle pair (h, k) of leaf i gets its block D_i: the node relation's
    ``Phi_hk = delta_i`` for a physical body (eq. 24)."""
    nh = ix.node_nh[i]
    ph = ix.node_pair_start[i]
    for h in range(nh * nh):
        for a in range(7):
            for b in range(7):
                Phi[ph + h, a, b] = D[a, b]


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def leaf_matrices(ix, model, Mb, Hgeo, q, c4, geo, kpsi, scale, leaf, Phi):
    """Every body's leaf block ``D_i = scale M_cc^-1`` (:func:`_leaf_block`; eqs. 22-26) into
    ``leaf.D`` (``leaf.ok``: 1 where M_cc is positive definite, ``leaf.pst``: p at this pass)
    and the tree's node blocks ``Phi`` (:func:`_leaf_handles`)."""
    nb = q.shape[0]
    mass, inertia_inv = model.mass, model.inertia_inv
    Mcc = leaf.Mcc  # written: one field a line, passed on as arrays (index3_kernels' module doc)
    Dl = leaf.D
    pst = leaf.pst
    ok = leaf.ok
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            for c in range(4):
                pst[i, c] = q[i, 3 + c]
            ok[i] = _leaf_block(i, mass, inertia_inv, Mb, Hgeo, q, c4, geo, kpsi, scale, Mcc[i], Dl[i])
            _leaf_handles(i, ix, Dl[i], Phi)
    else:
        for i in range(nb):
            for c in range(4):
                pst[i, c] = q[i, 3 + c]
            ok[i] = _leaf_block(i, mass, inertia_inv, Mb, Hgeo, q, c4, geo, kpsi, scale, Mcc[i], Dl[i])
            _leaf_handles(i, ix, Dl[i], Phi)


@njit(cache=True, nogil=True, inline='always')
def _leaf_bias_one(i, ix, leaf, bl, bv):
    """b_i = base_i + D_i rhs_i, copied to every handle of leaf i."""
    node_nh, node_h_start = ix.node_nh, ix.node_h_start
    Dl, base, rhs = leaf.D, leaf.base, leaf.rhs
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
def leaf_biases(ix, leaf, bv):
    """Every leaf's bias ``b_i = base_i + D_i rhs_i`` into ``leaf.bl`` and the tree's node
    biases ``bv`` (delta3_i of eq. 24; theta_i, xi_i of eqs. 45, 60)."""
    nb = leaf.D.shape[0]
    bl = leaf.bl  # written: passed on as an array (index3_kernels' module doc)
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _leaf_bias_one(i, ix, leaf, bl, bv)
    else:
        for i in range(nb):
            _leaf_bias_one(i, ix, leaf, bl, bv)


@njit(cache=True, nogil=True, inline='always')
def _leaf_result_one(i, ix, leaf, Fh, out):
    """x_i = D_i sum_h F_h + b_i (eqs. 24/25, 43/44, 58/59 for a physical body)."""
    node_nh, node_h_start = ix.node_nh, ix.node_h_start
    Dl, bl = leaf.D, leaf.bl
    sh = node_h_start[i]
    D = Dl[i]
    for a in range(7):
        s = bl[i, a]
        for h in range(node_nh[i]):
            for b in range(7):
                s += D[a, b] * Fh[sh + h, b]
        out[i, a] = s


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def leaf_results(ix, leaf, Fh):
    """Every body's solution ``x_i = D_i sum_h F_h + b_i`` into ``leaf.out``, from the handles'
    forces ``Fh`` of the disassembly."""
    nb = leaf.D.shape[0]
    out = leaf.out  # written: passed on as an array (index3_kernels' module doc)
    if nb >= PARALLEL_MIN_BODIES:
        for i in prange(nb):
            _leaf_result_one(i, ix, leaf, Fh, out)
    else:
        for i in range(nb):
            _leaf_result_one(i, ix, leaf, Fh, out)


# ------------------------------------------------------------------ Newton / projection right-hand sides


#: the penalty of a step (settings.penalty_at, compiled as it is: the same number as Python's)
step_penalty = njit(cache=True, nogil=True, _nrt=False, inline='always')(penalty_at)


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
def newton_state(q, dt, mu, lam, model, ix, body, rows):
    """State and residual of a Newton iterate at positions ``q``: ``body.qd``, ``body.qdd``
    from the difference equations (eqs. 15-16), body kinematics, applied forces, M_i and Q_i
    (eqs. 7-8), the joint rows at q and the residuals g_i (eq. 12)."""
    x, R, V, A, E, F = body.x, body.R, body.V, body.A, body.E, body.F
    difference_rates(q, body.qd_hat, body.qdd_hat, dt, body.qd, body.qdd)
    body_kinematics(q, body.qd, body.qdd, x, R, V, A, E)
    if model.springs.shape[0]:
        joint_coordinates_from_poses(model.fa, model.springs, x, R, body.jq_ref, body.jq)
    applied_forces(model.fa, x, R, V, body.jq, F)
    body_mass_forces(model.mass, model.inertia, q, body.qd, R, F, body.Mb, body.Qb)
    joint_rows(model.ca, ix.row_adr, body, rows)
    residuals(ix, q, mu, lam, body, rows)


@njit(cache=True, nogil=True, _nrt=False)
def tree_solve(ix, leaf, work, g0, eps, sgn, tol, matrices):
    """One solve over the tree of ``x_i = D_i sum F + b_i``, ``G x + g0 = eps Lambda``
    (eqs. 24-39; 43-54 and 58-69 for the projections): the leaf biases
    ``b_i = base_i + D_i rhs_i``, the tree passes (the matrix pass if asked; leaf blocks
    already filled), and ``x_i = D_i sum F_h + b_i`` per body into ``leaf.out``, the
    multipliers Lambda into ``work.lam``.  ``sgn``: -1 where the blocks are negative definite
    (Newton's delta), +1 for the exact ones; ``tol``: the pivots' relative tolerance.

    Kernels pass ``matrices`` as ``np.bool_(False)``, not the literal ``False``: numba
    compiles a separate specialisation for a literal argument, and this kernel is large
    (docs/compile-time.md)."""
    leaf_biases(ix, leaf, work.bv)
    if matrices:
        tree.assemble_matrices7(ix, work, eps, sgn, tol, None)  # hy: None, as by address (one compile)
    tree.assemble_biases7(ix, work, g0, sgn)
    tree.disassemble7(ix, work)
    leaf_results(ix, leaf, work.Fh)


class TreeCalls(NamedTuple):
    """The tree solve's kernels by the addresses of their machine code, for the fused
    kernels of a step (:func:`tree_calls`): called by name, each would be linked into the
    Newton iterations and both projections and optimised again there (docs/compile-time.md).
    Addresses hold in the process that made them only: a formulation makes its own, and
    drops them when it is pickled."""

    solve: int  # tree_solve
    matrices: int  # tree.assemble_matrices7


def tree_calls(ix, leaf, work, nr: int) -> TreeCalls:
    """:class:`TreeCalls` for a formulation's layout ``ix``, leaves ``leaf`` and tree
    work ``work`` with ``nr`` rows, compiled if need be (zeros where the kernels run as
    Python)."""
    if config.DISABLE_JIT:
        return TreeCalls(0, 0)
    g0 = np.zeros(nr)
    return TreeCalls(native_address(tree_solve, ix, leaf, work, g0, 0.0, 0.0, 0.0, np.bool_(False)),
                     native_address(tree.assemble_matrices7, ix, work, 0.0, 0.0, 0.0, None))


if config.DISABLE_JIT:  # plain Python: the kernels by name
    def _tree_solve(calls, ix, leaf, work, g0, eps, sgn, tol, matrices):
        tree_solve(ix, leaf, work, g0, eps, sgn, tol, matrices)

    def _assemble_matrices(calls, ix, work, eps, sgn, tol):
        tree.assemble_matrices7(ix, work, eps, sgn, tol, None)
else:
    @njit(cache=True, nogil=True, _nrt=False, inline='always')
    def _tree_solve(calls, ix, leaf, work, g0, eps, sgn, tol, matrices):
        """:func:`tree_solve` at ``calls.solve`` (it raises nothing: no allocation, no check)."""
        call_void(calls.solve, (ix, leaf, work, g0, eps, sgn, tol, matrices))

    @njit(cache=True, nogil=True, _nrt=False, inline='always')
    def _assemble_matrices(calls, ix, work, eps, sgn, tol):
        """``tree.assemble_matrices7`` at ``calls.matrices``."""
        call_void(calls.matrices, (ix, work, eps, sgn, tol, None))


@njit(cache=True, nogil=True, _nrt=True)
def newton_iterations(settings, dt, q, mu, lam, model, ix, body, rows, leaf, work, calls):
    """The Newton-Raphson loop of one step over the tree (eqs. 17-39; docs/index3.md,
    "Newton-Raphson on positions"): ``settings.iters`` iterations, or fewer once
    |dq| < ``settings.tol``; the matrix pass (leaf blocks ``delta_i = -dt^2/4 M_cc^-1``,
    eq. 26, then the merges, eqs. 35-39) every ``settings.hold`` iterations, with the force
    elements' rows (:func:`stiffness_rows`, after the joints'; their multipliers stay zero:
    the element forces are in ``Q``); each iteration solves eq. 22 with the updates of
    eq. 21.  Updates q, lam, mu in place (``leaf.base`` must be zero); ``calls``: the tree
    solve by address (:class:`TreeCalls`).  Returns (iterations, |dq|), iterations = -1 if a
    body's M_cc is not positive definite.  The penalty is that of the step ``dt``
    (:func:`step_penalty`: the automatic penalty follows the monitor's sub-steps)."""
    alpha = step_penalty(settings.alpha, settings.alpha_dt, dt)
    c4 = 0.25 * dt * dt
    dqn = np.inf
    ok, out, dlam = leaf.ok, leaf.out, work.lam
    G = work.G  # written: one field a line (index3_kernels' module doc)
    s_row = model.s_row
    nb = q.shape[0]
    for it in range(settings.iters):
        newton_state(q, dt, mu, lam, model, ix, body, rows)
        refresh = it % settings.hold == 0
        if refresh:
            if settings.geo:
                geometric_stiffness(ix, model.ca, ix.row_adr, q, lam, mu, settings.h_geo, body.Hgeo)
            leaf_matrices(ix, model, body.Mb, body.Hgeo, q, c4, settings.geo, alpha, -c4, leaf, work.Phi)
            for i in range(nb):
                if ok[i] == 0:
                    return -1, dqn
            G[:] = rows.G7
            if model.s_elem.shape[0]:
                stiffness_rows(model, dt, alpha, body, G)
        newton_rhs(q, body.res, alpha, leaf.rhs)
        _tree_solve(calls, ix, leaf, work, rows.phi, 1.0 / alpha, -1.0, settings.pivot_tol, refresh)
        for k in range(lam.shape[0]):
            lam[k] += dlam[k]
        if s_row.shape[0]:  # the force elements' rows follow the joints'
            for k in range(s_row[0], lam.shape[0]):
                lam[k] = 0.0
        dqn = np.sqrt(newton_update(q, out, mu, alpha))
        if dqn < settings.tol:
            return it + 1, dqn
    return settings.iters, dqn


# ------------------------------------------------------------------ projections


@njit(cache=True, nogil=True, _nrt=True)
def velocity_projection(settings, q, qd, model, ix, body, rows, leaf, work, calls):
    """The mass-orthogonal velocity projection of one step at the final ``q``, in place on
    ``qd`` (eqs. 40-54; docs/index3.md, "Mass-orthogonal projections"): leaf biases
    ``theta_i`` (eq. 45), rows ``g0 = 0``.

    ``settings.exact``: first one matrix pass at ``q`` with leaf blocks ``(M + k p p^T)^-1``
    and ``eps = 0`` (M from the applied forces ``body.F`` of the last Newton state; only M is
    used), and with it the position projection, in place on ``q``: the least mass-weighted
    ``dq`` with ``G dq + phi = 0`` (rows ``g0 = phi``, zero biases), once more at the
    corrected ``q``, where ``|dq|`` exceeds ``POSITION_TOL``.  Penalised (the paper's): the
    last Newton matrices, refactorised without the force elements' rows (rows
    ``model.n_joint_rows`` on) where there are any.  Returns the solve's
    ``(eps, sgn, kpsi)`` for :func:`acceleration_projection`, ``eps`` = NaN if a leaf block
    is not positive definite.  ``Index3Formulation._python_projections`` is the same
    sequence with the dense linear solve (the test oracle)."""
    x, R, V, A, E = body.x, body.R, body.V, body.A, body.E
    pst, ok = leaf.pst, leaf.ok
    G = work.G  # written: one field a line (index3_kernels' module doc)
    n_joint_rows, pivot_tol = model.n_joint_rows, settings.pivot_tol
    nu = body.nu
    if settings.exact:
        k_exact = settings.k_exact
        eps, sgn, kp = 0.0, 1.0, -k_exact
        for rnd in range(POSITION_ROUNDS):
            body_kinematics(q, qd, body.zero7, x, R, V, A, E)
            body_mass_forces(model.mass, model.inertia, q, qd, R, body.F, body.Mb, body.Qb)
            joint_rows(model.ca, ix.row_adr, body, rows)
            leaf_matrices(ix, model, body.Mb, body.Mb, q, 1.0, np.bool_(False), k_exact, 1.0, leaf, work.Phi)
            for i in range(q.shape[0]):
                if ok[i] == 0:
                    return np.nan, sgn, kp
            G[:] = rows.G7
            _assemble_matrices(calls, ix, work, eps, sgn, pivot_tol)
            # the position projection: the least mass-weighted dq with G dq + phi = 0
            nu[:] = 0.0
            projection_rhs(pst, body.zero7, nu, kp, leaf.base, leaf.rhs)
            _tree_solve(calls, ix, leaf, work, rows.phi, eps, sgn, pivot_tol, np.bool_(False))
            dq = 0.0  # max |dq|, without a temporary array each step
            for i in range(q.shape[0]):
                for a in range(7):
                    dq = max(dq, abs(leaf.out[i, a]))
            if rnd == POSITION_ROUNDS - 1 or dq < POSITION_TOL:
                break
            q += leaf.out
    else:
        eps, sgn, kp = 1.0 / settings.alpha, -1.0, settings.alpha
        if n_joint_rows < G.shape[1]:
            G[:, n_joint_rows:] = 0.0
            _assemble_matrices(calls, ix, work, eps, sgn, pivot_tol)
    nu[:] = 0.0
    projection_rhs(pst, qd, nu, kp, leaf.base, leaf.rhs)
    _tree_solve(calls, ix, leaf, work, rows.zero_rows, eps, sgn, pivot_tol, np.bool_(False))
    qd[:] = leaf.out
    return eps, sgn, kp


@njit(cache=True, nogil=True, _nrt=True)
def acceleration_projection(settings, solve, q, qd, qdd, model, ix, body, rows, leaf, work, calls):
    """The mass-orthogonal acceleration projection (eqs. 55-69) after
    :func:`velocity_projection`, in place on ``qdd``, with its ``solve = (eps, sgn, kpsi)``:
    ``g`` at the projected velocities, the same matrices, leaf biases ``xi_i`` (eq. 60),
    rows ``g0 = g``.  Returns the position residual |phi| at ``q``; ``leaf.base`` is left zero."""
    eps, sgn, kp = solve
    phi = rows.phi
    nu = body.nu  # written: one field a line (index3_kernels' module doc)
    base = leaf.base
    body_kinematics(q, qd, qdd, body.x, body.R, body.V, body.A, body.E)
    joint_rows(model.ca, ix.row_adr, body, rows)
    viol = 0.0
    for k in range(phi.shape[0]):
        viol += phi[k] * phi[k]
    for i in range(q.shape[0]):
        nu[i] = -(qd[i, 3] ** 2 + qd[i, 4] ** 2 + qd[i, 5] ** 2 + qd[i, 6] ** 2)
    projection_rhs(leaf.pst, qdd, nu, kp, base, leaf.rhs)
    _tree_solve(calls, ix, leaf, work, rows.gq, eps, sgn, settings.pivot_tol, np.bool_(False))
    qdd[:] = leaf.out
    base[:] = 0.0
    return np.sqrt(viol)
