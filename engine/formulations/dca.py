"""Formulation ``dca``: Featherstone's divide-and-conquer algorithm with closed loops.

Joint coordinates and 6-D spatial vectors (docs/derivations.md, "DCA").  Each
body is a two- (or more-) handle articulated body: for handles ``h``, ``k`` at
joint points ``P_h``, ``P_k``,

    A_h = sum_k Phi_hk F_k + b_h,    Phi_hk = X_h^T I_C^-1 X_k,    b_h = X_h^T I_C^-1 (F_ext - V x* I V)

(``X_k`` shifts a wrench from ``P_k`` to the centre of mass, ``A_h`` is the
spatial acceleration about ``P_h``).  Tree joints constrain
``T_j^T (A_succ - A_pred - c_j) = 0`` with ``T_j`` the orthonormal complement of
the motion subspace; cut joints constrain the absolute-coordinate closure
equations of :mod:`engine.constraints` re-expressed at the joint point, so loop
closures, drift terms and multipliers are those of the ``dense`` reference.
The assembly/disassembly over the binary tree is :mod:`.treesolve`; the joint
accelerations come from the body accelerations, ``vdot_j = S_j^T (A_succ - A_pred - c_j)``.

Loops are held by projection at the output instants (:mod:`.stabilise`, on by default;
``projection=False`` lets the drift be studied); ``baumgarte=(alpha, beta)`` adds
``2 alpha Phi_dot + beta^2 Phi`` to the closure rows between them.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit, prange

from .. import config
from ..atomics import claim, load_acquire, store_release, wait_for
from ..constraints import con_arrays, joint_constraint
from ..errors import SingularSystemError
from ..forces import force_arrays, spring_joints, tree_applied_forces
from ..initial import initial_state, tree_velocities
from ..kinematics import (
    _position_step, _subspace_step, _velocity_step, classical_accelerations, fk_positions, fk_velocities,
    kin_arrays, motion_subspace, normalize_quaternions, ode_rates, qdot_from_v, second_rates,
)
from ..model import CYLINDRICAL, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL, Model
from ..spatial import shift_force_by, shift_motion, shift_motion_by
from ..topology import cheaper_tree
from . import treesolve
from .base import NO_RATES, Evaluation, Formulation, StateKernel, check_consistent
from .stabilise import LoopProjection
from .workspace import unpack


# --------------------------------------------------------------------- kernels


@njit(cache=True, nogil=True, _nrt=False)
def _world_inertia(R, Ib, out):
    """out = R Ib R^T: column b of ``Ib R^T`` once, then row by row (54 multiply-adds;
    the same sums in the same order as forming ``Ib R^T`` anew for every entry)."""
    for b in range(3):
        t0 = Ib[0, 0] * R[b, 0] + Ib[0, 1] * R[b, 1] + Ib[0, 2] * R[b, 2]
        t1 = Ib[1, 0] * R[b, 0] + Ib[1, 1] * R[b, 1] + Ib[1, 2] * R[b, 2]
        t2 = Ib[2, 0] * R[b, 0] + Ib[2, 1] * R[b, 1] + Ib[2, 2] * R[b, 2]
        for a in range(3):
            out[a, b] = R[a, 0] * t0 + R[a, 1] * t1 + R[a, 2] * t2


@njit(cache=True, nogil=True, inline='always')
def _body_rhs(i, mass, inertia, R, V, Fext, rhs_body):
    """DCA's bias wrench of body i about its COM: ``F_ext - V x* I V``."""
    Ri = R[i]
    Ib = inertia[i]
    m = mass[i]
    w0, w1, w2 = V[i, 3], V[i, 4], V[i, 5]
    v0, v1, v2 = V[i, 0], V[i, 1], V[i, 2]
    # J w = R (Ib (R^T w)): three matrix-vector products instead of forming J
    b0 = Ri[0, 0] * w0 + Ri[1, 0] * w1 + Ri[2, 0] * w2
    b1 = Ri[0, 1] * w0 + Ri[1, 1] * w1 + Ri[2, 1] * w2
    b2 = Ri[0, 2] * w0 + Ri[1, 2] * w1 + Ri[2, 2] * w2
    h0 = Ib[0, 0] * b0 + Ib[0, 1] * b1 + Ib[0, 2] * b2
    h1 = Ib[1, 0] * b0 + Ib[1, 1] * b1 + Ib[1, 2] * b2
    h2 = Ib[2, 0] * b0 + Ib[2, 1] * b1 + Ib[2, 2] * b2
    Jw0 = Ri[0, 0] * h0 + Ri[0, 1] * h1 + Ri[0, 2] * h2
    Jw1 = Ri[1, 0] * h0 + Ri[1, 1] * h1 + Ri[1, 2] * h2
    Jw2 = Ri[2, 0] * h0 + Ri[2, 1] * h1 + Ri[2, 2] * h2
    # V x* I V = [m w x v_C; w x J w]
    rb = rhs_body[i]
    rb[0] = Fext[i, 0] - m * (w1 * v2 - w2 * v1)
    rb[1] = Fext[i, 1] - m * (w2 * v0 - w0 * v2)
    rb[2] = Fext[i, 2] - m * (w0 * v1 - w1 * v0)
    rb[3] = Fext[i, 3] - (w1 * Jw2 - w2 * Jw1)
    rb[4] = Fext[i, 4] - (w2 * Jw0 - w0 * Jw2)
    rb[5] = Fext[i, 5] - (w0 * Jw1 - w1 * Jw0)


@njit(cache=True, nogil=True, inline='always')
def _leaf_blocks(i, ix, mass, inertia_inv, x, R, P, Phi, bv, rhs_body, Jinv_w, scratch, blocks):
    """Body i as a leaf of the tree solve: the handle biases ``b_h = X_h^T D w`` for the
    body wrench (or impulse) ``w = rhs_body[i]`` and, if ``blocks``, the mobility
    blocks ``Phi_hk = X_h^T D X_k`` and the world inverse inertia."""
    node_nh, node_h_start, node_pair_start, h_joint = ix[4], ix[5], ix[6], ix[7]
    if blocks:
        _world_inertia(R[i], inertia_inv[i], Jinv_w[i])
    Ji = Jinv_w[i]
    m = mass[i]
    rb = rhs_body[i]
    # response of the COM: a = D rb
    a0 = rb[0] / m
    a1 = rb[1] / m
    a2 = rb[2] / m
    al0 = Ji[0, 0] * rb[3] + Ji[0, 1] * rb[4] + Ji[0, 2] * rb[5]
    al1 = Ji[1, 0] * rb[3] + Ji[1, 1] * rb[4] + Ji[1, 2] * rb[5]
    al2 = Ji[2, 0] * rb[3] + Ji[2, 1] * rb[4] + Ji[2, 2] * rb[5]
    nh = node_nh[i]
    sh = node_h_start[i]
    ph = node_pair_start[i]
    A = scratch[i]  # Jinv ~l_k
    for h in range(nh):
        jh = h_joint[sh + h]
        lh0 = P[jh, 0] - x[i, 0]
        lh1 = P[jh, 1] - x[i, 1]
        lh2 = P[jh, 2] - x[i, 2]
        # bias at P_h: shift_motion(a, l_h) = [a + alpha x l_h; alpha]
        bv[sh + h, 0] = a0 + al1 * lh2 - al2 * lh1
        bv[sh + h, 1] = a1 + al2 * lh0 - al0 * lh2
        bv[sh + h, 2] = a2 + al0 * lh1 - al1 * lh0
        bv[sh + h, 3] = al0
        bv[sh + h, 4] = al1
        bv[sh + h, 5] = al2
        if not blocks:
            continue
        for k in range(h, nh):  # Phi_kh = Phi_hk^T: mirrored below
            jk = h_joint[sh + k]
            lk0 = P[jk, 0] - x[i, 0]
            lk1 = P[jk, 1] - x[i, 1]
            lk2 = P[jk, 2] - x[i, 2]
            # A = Jinv ~l_k  (columns of ~l_k: [0, l2, -l1], [-l2, 0, l0], [l1, -l0, 0])
            for r in range(3):
                A[r, 0] = Ji[r, 1] * lk2 - Ji[r, 2] * lk1
                A[r, 1] = -Ji[r, 0] * lk2 + Ji[r, 2] * lk0
                A[r, 2] = Ji[r, 0] * lk1 - Ji[r, 1] * lk0
            blk = Phi[ph + h * nh + k]
            # top-left: 1/m - ~l_h A ; top-right: -~l_h Jinv ; bottom-left: A ; bottom-right: Jinv
            for c in range(3):
                blk[0, c] = -(lh1 * A[2, c] - lh2 * A[1, c])
                blk[1, c] = -(lh2 * A[0, c] - lh0 * A[2, c])
                blk[2, c] = -(lh0 * A[1, c] - lh1 * A[0, c])
                blk[0, 3 + c] = -(lh1 * Ji[2, c] - lh2 * Ji[1, c])
                blk[1, 3 + c] = -(lh2 * Ji[0, c] - lh0 * Ji[2, c])
                blk[2, 3 + c] = -(lh0 * Ji[1, c] - lh1 * Ji[0, c])
                for r in range(3):
                    blk[3 + r, c] = A[r, c]
                    blk[3 + r, 3 + c] = Ji[r, c]
            blk[0, 0] += 1.0 / m
            blk[1, 1] += 1.0 / m
            blk[2, 2] += 1.0 / m
            if k != h:
                blk2 = Phi[ph + k * nh + h]
                for c in range(6):
                    for d in range(6):
                        blk2[d, c] = blk[c, d]


@njit(cache=True, nogil=True, inline='always')
def _region_leaf(i, mass, inertia, x, R, P, rhs_body, blocks, hy):
    """Body i in an articulated-body region (treesolve): its bias wrench about its joint
    point, ``W = X^T w = [f; n + l x f]`` (``l`` from the joint point to the centre of
    mass), and, if ``blocks``, its inertia there, ``X^T M X = [[m 1, -m ~l], [m ~l, J - m ~l ~l]]``.
    No world inverse inertia: a region body's acceleration comes from its recursion
    (``_region_acceleration``), not from its handle forces."""
    W = hy[3]
    l0 = x[i, 0] - P[i, 0]
    l1 = x[i, 1] - P[i, 1]
    l2 = x[i, 2] - P[i, 2]
    shift_force_by(rhs_body[i], l0, l1, l2, W[i])
    if blocks:
        _region_inertia(i, mass, inertia, x, R, P, hy)


@njit(cache=True, nogil=True, inline='always')
def _region_inertia(i, mass, inertia, x, R, P, hy):
    """Body i's inertia about its joint point (:func:`_region_leaf`)."""
    IA = hy[2]
    l0 = x[i, 0] - P[i, 0]
    l1 = x[i, 1] - P[i, 1]
    l2 = x[i, 2] - P[i, 2]
    A = IA[i]
    _world_inertia(R[i], inertia[i], A[3:, 3:])
    m = mass[i]
    ll = l0 * l0 + l1 * l1 + l2 * l2
    for a in range(3):
        for b in range(3):
            A[a, b] = m if a == b else 0.0
    A[3, 3] += m * (ll - l0 * l0)
    A[4, 4] += m * (ll - l1 * l1)
    A[5, 5] += m * (ll - l2 * l2)
    A[3, 4] -= m * l0 * l1
    A[4, 3] -= m * l0 * l1
    A[3, 5] -= m * l0 * l2
    A[5, 3] -= m * l0 * l2
    A[4, 5] -= m * l1 * l2
    A[5, 4] -= m * l1 * l2
    # m ~l below, -m ~l above (its transpose)
    A[3, 0] = 0.0
    A[3, 1] = -m * l2
    A[3, 2] = m * l1
    A[4, 0] = m * l2
    A[4, 1] = 0.0
    A[4, 2] = -m * l0
    A[5, 0] = -m * l1
    A[5, 1] = m * l0
    A[5, 2] = 0.0
    for a in range(3):
        for b in range(3):
            A[a, 3 + b] = A[3 + b, a]


#: the per-body loops run in parallel as this many chunks, each a call of the loop's
#: serial kernel (``_leaves_over``, ``_accelerations_over``): the per-body code is then
#: compiled once, not once in the parallel region's body and again in the serial loop
BODY_CHUNKS = 16


@njit(cache=True, nogil=True, _nrt=False)
def _leaves_over(i0, i1, ix, mass, inertia, inertia_inv, x, R, V, Fext, P, Phi, bv, rhs_body, Jinv_w, scratch,
                 dca_rhs, blocks, hy):
    """:func:`_leaves` for bodies ``i0 .. i1 - 1``."""
    in_region = hy[19]
    for i in range(i0, i1):
        if dca_rhs:
            _body_rhs(i, mass, inertia, R, V, Fext, rhs_body)
        if in_region[i] >= 0:
            _region_leaf(i, mass, inertia, x, R, P, rhs_body, blocks, hy)
        else:
            _leaf_blocks(i, ix, mass, inertia_inv, x, R, P, Phi, bv, rhs_body, Jinv_w, scratch, blocks)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def _leaves(ix, mass, inertia, inertia_inv, x, R, V, Fext, P, Phi, bv, rhs_body, Jinv_w, scratch, dca_rhs,
            blocks, hy):
    """Every body as a leaf (in parallel for large mechanisms); with ``dca_rhs`` the body
    wrench is DCA's ``F_ext - V x* I V``, otherwise ``rhs_body`` is taken as given.  A
    body in an articulated-body region gets its inertia and bias wrench about its joint
    point instead of mobility blocks (:func:`_region_leaf`).

    The flags are runtime bools: kernels pass ``np.bool_(...)``, never the literals, so
    dca, hdca's two phases and its Python-side reaction pass share one specialisation
    (numba compiles one per literal value; docs/performance.md, "Compile time")."""
    nb = ix[0]
    if nb >= ix[24]:
        for k in prange(BODY_CHUNKS):
            _leaves_over(k * nb // BODY_CHUNKS, (k + 1) * nb // BODY_CHUNKS, ix, mass, inertia, inertia_inv, x, R,
                         V, Fext, P, Phi, bv, rhs_body, Jinv_w, scratch, dca_rhs, blocks, hy)
    else:  # 0 * nb: an int64 as in the chunks (one specialisation)
        _leaves_over(0 * nb, nb, ix, mass, inertia, inertia_inv, x, R, V, Fext, P, Phi, bv, rhs_body, Jinv_w,
                     scratch, dca_rhs, blocks, hy)


@njit(cache=True, nogil=True, inline='always')
def _row_constants(i, mk, GA, GB, row_adr):
    """The entries of tree joint i's rows that no state changes (:func:`tree_row_constants`):
    the unit rows and the zero halves of the others, and ``GA = -GB`` of them."""
    jt = mk[1][i]
    r = row_adr[i]
    if jt == SPHERICAL or jt == REVOLUTE or jt == UNIVERSAL or jt == FIXED:
        for k in range(3):
            for cc in range(6):
                GB[r + k, cc] = 1.0 if cc == k else 0.0
                GA[r + k, cc] = -GB[r + k, cc]
    if jt == REVOLUTE:  # angular rows after the three linear ones
        for rr in range(r + 3, r + 5):
            for cc in range(3):
                GB[rr, cc] = 0.0
                GA[rr, cc] = -GB[rr, cc]
    elif jt == CYLINDRICAL or jt == PRISMATIC:  # linear rows u1, u2 first
        for rr in range(r, r + 2):
            for cc in range(3, 6):
                GB[rr, cc] = 0.0
                GA[rr, cc] = -GB[rr, cc]
        if jt == CYLINDRICAL:  # then angular rows u1, u2
            for rr in range(r + 2, r + 4):
                for cc in range(3):
                    GB[rr, cc] = 0.0
                    GA[rr, cc] = -GB[rr, cc]
    if jt == PRISMATIC:
        for k in range(3):
            for cc in range(6):
                GB[r + 2 + k, cc] = 1.0 if cc == 3 + k else 0.0
                GA[r + 2 + k, cc] = -GB[r + 2 + k, cc]
    elif jt == FIXED:
        for k in range(3):
            for cc in range(6):
                GB[r + 3 + k, cc] = 1.0 if cc == 3 + k else 0.0
                GA[r + 3 + k, cc] = -GB[r + 3 + k, cc]
    elif jt == UNIVERSAL:
        for cc in range(3):
            GB[r + 3, cc] = 0.0
            GA[r + 3, cc] = -GB[r + 3, cc]


@njit(cache=True, nogil=True, _nrt=False)
def tree_row_constants(mk, GA, GB, row_adr):
    """Write the entries of every tree joint's rows that do not depend on the state, once
    for a layout: :func:`_tree_rows` writes only the others on each evaluation (a chain's
    spherical joint has three unit rows, a revolute joint three of its five; writing them
    on every call took most of the pass, docs/performance.md "The rows in the trailing
    role")."""
    for i in range(mk[0].shape[0]):
        _row_constants(i, mk, GA, GB, row_adr)


@njit(cache=True, nogil=True, inline='always')
def _set_row(GA, GB, rr, o, w0, w1, w2):
    """Row rr's entries o .. o + 2: ``GB = w``, ``GA = -w``."""
    GB[rr, o] = w0
    GB[rr, o + 1] = w1
    GB[rr, o + 2] = w2
    GA[rr, o] = -w0
    GA[rr, o + 1] = -w1
    GA[rr, o + 2] = -w2


@njit(cache=True, nogil=True, inline='always')
def _row_step(i, mk, perp_pred, R, S, c, GA, GB, g0, row_adr):
    """Tree joint i's rows T^T (:func:`_tree_rows`), its parent's rotation and its
    velocity-product term done: the entries that depend on the state, ``GA = -GB`` of
    them, and ``g0``."""
    parent, jtype, q_adr, v_adr = mk[0], mk[1], mk[2], mk[3]
    jt = jtype[i]
    p = parent[i]
    r = row_adr[i]
    n = 0
    unit_first = jt == SPHERICAL or jt == REVOLUTE or jt == UNIVERSAL or jt == FIXED  # UNIT_FIRST
    if unit_first:
        n = 3
    if jt == REVOLUTE or jt == CYLINDRICAL or jt == PRISMATIC:
        # perpendicular pair carried by the predecessor
        for s in range(2):
            u0 = perp_pred[i, s, 0]
            u1 = perp_pred[i, s, 1]
            u2 = perp_pred[i, s, 2]
            if p >= 0:
                w0 = R[p, 0, 0] * u0 + R[p, 0, 1] * u1 + R[p, 0, 2] * u2
                w1 = R[p, 1, 0] * u0 + R[p, 1, 1] * u1 + R[p, 1, 2] * u2
                w2 = R[p, 2, 0] * u0 + R[p, 2, 1] * u1 + R[p, 2, 2] * u2
            else:
                w0, w1, w2 = u0, u1, u2
            if jt == REVOLUTE:  # angular rows after the three linear ones
                _set_row(GA, GB, r + 3 + s, 3, w0, w1, w2)
            else:  # linear rows u1, u2 first
                _set_row(GA, GB, r + s, 0, w0, w1, w2)
                if jt == CYLINDRICAL:  # then angular rows u1, u2
                    _set_row(GA, GB, r + 2 + s, 3, w0, w1, w2)
        if jt == REVOLUTE:
            n = 5
        elif jt == CYLINDRICAL:
            n = 4
    if jt == PRISMATIC:
        n = 5
    elif jt == FIXED:
        n = 6
    elif jt == UNIVERSAL:
        va = v_adr[i]
        a0, a1, a2 = S[va, 3], S[va, 4], S[va, 5]
        b0, b1, b2 = S[va + 1, 3], S[va + 1, 4], S[va + 1, 5]
        n0 = a1 * b2 - a2 * b1
        n1 = a2 * b0 - a0 * b2
        n2 = a0 * b1 - a1 * b0
        nn = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        _set_row(GA, GB, r + 3, 3, n0 / nn, n1 / nn, n2 / nn)
        n = 4
    if unit_first:  # rows e_0, e_1, e_2, then rows with zero linear halves: the sums below without their zeros
        for k in range(3):
            g0[r + k] = -(0.0 + c[i, k])
        for k in range(3, n):
            g0[r + k] = -(((0.0 + GB[r + k, 3] * c[i, 3]) + GB[r + k, 4] * c[i, 4]) + GB[r + k, 5] * c[i, 5])
        return
    for k in range(n):
        s = 0.0
        for cc in range(6):
            s += GB[r + k, cc] * c[i, cc]
        g0[r + k] = -s


@njit(cache=True, nogil=True, _nrt=False)
def _tree_rows(mk, perp_pred, R, S, c, GA, GB, g0, row_adr):
    """Rows T_j^T of every tree joint: GB = T^T, GA = -T^T, g0 = -T^T c_j (about P_j);
    the entries no state changes were written once (:func:`tree_row_constants`)."""
    for i in range(mk[0].shape[0]):
        _row_step(i, mk, perp_pred, R, S, c, GA, GB, g0, row_adr)


@njit(cache=True, nogil=True, _nrt=True)
def _cut_rows(ca, nb, x, R, V, P, GA, GB, g0, phi, row_adr, alpha, beta):
    """Closure rows of the cut joints, re-expressed at the joint point P_j for
    spatial accelerations: G^P = G [[1, -~l], [0, 1]], g0 = g + G_lin (w x v_C)."""
    jtype, pred, succ, c_adr, nc_j = ca[0], ca[1], ca[2], ca[10], ca[11]
    nj = jtype.shape[0]
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    for j in range(nb, nj):
        a = pred[j]
        b = succ[j]
        r = row_adr[j]
        n = nc_j[j]
        xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[r:r + n], GA[r:r + n], GB[r:r + n],
                         g0[r:r + n])
        for k in range(r, r + n):
            # velocity residual (for Baumgarte) before the rows are transformed
            vres = 0.0
            for cc in range(6):
                vres += GB[k, cc] * V[b, cc]
                if a >= 0:
                    vres += GA[k, cc] * V[a, cc]
            for side in range(2):
                body = b if side == 1 else a
                G = GB if side == 1 else GA
                if body < 0:
                    for cc in range(6):
                        G[k, cc] = 0.0
                    continue
                w0, w1, w2 = V[body, 3], V[body, 4], V[body, 5]
                v0, v1, v2 = V[body, 0], V[body, 1], V[body, 2]
                # g0 += G_lin . (w x v_C)
                g0[k] += G[k, 0] * (w1 * v2 - w2 * v1) + G[k, 1] * (w2 * v0 - w0 * v2) + \
                    G[k, 2] * (w0 * v1 - w1 * v0)
                l0 = x[body, 0] - P[j, 0]
                l1 = x[body, 1] - P[j, 1]
                l2 = x[body, 2] - P[j, 2]
                gl0, gl1, gl2 = G[k, 0], G[k, 1], G[k, 2]
                # G_ang += l x g_lin
                G[k, 3] += l1 * gl2 - l2 * gl1
                G[k, 4] += l2 * gl0 - l0 * gl2
                G[k, 5] += l0 * gl1 - l1 * gl0
            g0[k] += 2.0 * alpha * vres + beta * beta * phi[k]


@njit(cache=True, nogil=True, inline='always')
def _body_acceleration(i, ix, x, P, Fh, rhs_body, mass, Jinv_w, A):
    """Spatial acceleration about the COM of body i from its handle forces."""
    node_nh, node_h_start, h_joint = ix[4], ix[5], ix[7]
    f0, f1, f2 = rhs_body[i, 0], rhs_body[i, 1], rhs_body[i, 2]
    n0, n1, n2 = rhs_body[i, 3], rhs_body[i, 4], rhs_body[i, 5]
    sh = node_h_start[i]
    for h in range(node_nh[i]):
        j = h_joint[sh + h]
        F = Fh[sh + h]
        l0 = P[j, 0] - x[i, 0]
        l1 = P[j, 1] - x[i, 1]
        l2 = P[j, 2] - x[i, 2]
        # shift the wrench from P_j to the COM: n + l x f
        f0 += F[0]
        f1 += F[1]
        f2 += F[2]
        n0 += F[3] + l1 * F[2] - l2 * F[1]
        n1 += F[4] + l2 * F[0] - l0 * F[2]
        n2 += F[5] + l0 * F[1] - l1 * F[0]
    Ji = Jinv_w[i]
    m = mass[i]
    A[i, 0] = f0 / m
    A[i, 1] = f1 / m
    A[i, 2] = f2 / m
    A[i, 3] = Ji[0, 0] * n0 + Ji[0, 1] * n1 + Ji[0, 2] * n2
    A[i, 4] = Ji[1, 0] * n0 + Ji[1, 1] * n1 + Ji[1, 2] * n2
    A[i, 5] = Ji[2, 0] * n0 + Ji[2, 1] * n1 + Ji[2, 2] * n2


@njit(cache=True, nogil=True, inline='always')
def _joint_acceleration(i, nb, parent, v_adr, x, P, S, c, A, vdot):
    """vdot of tree joint i: S^T (A_i(P) - A_parent(P) - c_i)."""
    p = parent[i]
    l0 = P[i, 0] - x[i, 0]
    l1 = P[i, 1] - x[i, 1]
    l2 = P[i, 2] - x[i, 2]
    w0, w1, w2 = A[i, 3], A[i, 4], A[i, 5]
    d0 = A[i, 0] + w1 * l2 - w2 * l1
    d1 = A[i, 1] + w2 * l0 - w0 * l2
    d2 = A[i, 2] + w0 * l1 - w1 * l0
    d3, d4, d5 = w0, w1, w2
    if p >= 0:
        l0 = P[i, 0] - x[p, 0]
        l1 = P[i, 1] - x[p, 1]
        l2 = P[i, 2] - x[p, 2]
        w0, w1, w2 = A[p, 3], A[p, 4], A[p, 5]
        d0 -= A[p, 0] + w1 * l2 - w2 * l1
        d1 -= A[p, 1] + w2 * l0 - w0 * l2
        d2 -= A[p, 2] + w0 * l1 - w1 * l0
        d3 -= w0
        d4 -= w1
        d5 -= w2
    d0 -= c[i, 0]
    d1 -= c[i, 1]
    d2 -= c[i, 2]
    d3 -= c[i, 3]
    d4 -= c[i, 4]
    d5 -= c[i, 5]
    va = v_adr[i]
    vb = v_adr[i + 1] if i + 1 < nb else vdot.shape[0]
    for col in range(va, vb):
        vdot[col] = S[col, 0] * d0 + S[col, 1] * d1 + S[col, 2] * d2 + S[col, 3] * d3 + S[col, 4] * d4 \
            + S[col, 5] * d5


@njit(cache=True, nogil=True, inline='always')
def _region_acceleration(i, x, P, xa, A):
    """Spatial acceleration about the COM of body i in an articulated-body region: its
    joint point's, ``xa[i]`` (treesolve's disassembly), shifted to the COM.  Not from the
    forces: the net moment on a slender body about its axis is the small difference of
    its joints' moments, each with round-off relative to the whole subtree's, and its
    small inertia about that axis would magnify that difference (docs/derivations.md,
    "The articulated-body regions")."""
    shift_motion_by(xa[i], x[i, 0] - P[i, 0], x[i, 1] - P[i, 1], x[i, 2] - P[i, 2], A[i])


@njit(cache=True, nogil=True, _nrt=False)
def _accelerations_over(phase, i0, i1, ix, mk, x, P, S, c, Fh, rhs_body, mass, Jinv_w, A, vdot, hy):
    """:func:`_accelerations` for bodies ``i0 .. i1 - 1``: phase 0 the bodies'
    accelerations, phase 1 (every body's done) their joints'."""
    nb = ix[0]
    parent, v_adr = mk[0], mk[3]
    in_region = hy[19]
    xa = hy[8]
    for i in range(i0, i1):
        if phase == 1:
            _joint_acceleration(i, nb, parent, v_adr, x, P, S, c, A, vdot)
        elif in_region[i] >= 0:
            _region_acceleration(i, x, P, xa, A)
        else:
            _body_acceleration(i, ix, x, P, Fh, rhs_body, mass, Jinv_w, A)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def _accelerations(ix, mk, x, P, S, c, Fh, rhs_body, mass, Jinv_w, A, vdot, hy):
    """Body spatial accelerations about the COM from the handle forces (in a region: from
    its recursion), then vdot."""
    nb = ix[0]
    for phase in range(2):
        if nb >= ix[24]:
            for k in prange(BODY_CHUNKS):
                _accelerations_over(phase, k * nb // BODY_CHUNKS, (k + 1) * nb // BODY_CHUNKS, ix, mk, x, P, S, c,
                                    Fh, rhs_body, mass, Jinv_w, A, vdot, hy)
        else:
            _accelerations_over(phase, 0 * nb, nb, ix, mk, x, P, S, c, Fh, rhs_body, mass, Jinv_w, A, vdot, hy)


@njit(cache=True, nogil=True, _nrt=True)
def _residual(ix_rows, pred, succ, x, P, A, GA, GB, g0, nj):
    """Max |G_a A_a(P) + G_b A_b(P) + g0| over all rows, and the largest sum of the
    absolute values of its terms (the scale its round-off is relative to)."""
    row_adr, rows = ix_rows
    worst = 0.0
    scale = 0.0
    Ab = np.empty(6)
    Aa = np.empty(6)
    l = np.empty(3)
    for j in range(nj):
        a = pred[j]
        b = succ[j]
        for k in range(3):
            l[k] = P[j, k] - x[b, k]
        shift_motion(A[b], l, Ab)
        # shift_motion's own round-off scale: |A| (1 + |l|)
        mb = np.abs(A[b]).max() * (1.0 + np.sqrt(l[0] ** 2 + l[1] ** 2 + l[2] ** 2))
        ma = 0.0
        if a >= 0:
            for k in range(3):
                l[k] = P[j, k] - x[a, k]
            shift_motion(A[a], l, Aa)
            ma = np.abs(A[a]).max() * (1.0 + np.sqrt(l[0] ** 2 + l[1] ** 2 + l[2] ** 2))
        else:
            for k in range(6):
                Aa[k] = 0.0
        for r in range(row_adr[j], row_adr[j] + rows[j]):
            s1 = 0.0
            s2 = 0.0
            t = abs(g0[r])  # the sum of |terms|: the scale of the round-off in res
            for k in range(6):
                s1 += GB[r, k] * Ab[k]
                s2 += GA[r, k] * Aa[k]
                t += abs(GB[r, k]) * (abs(Ab[k]) + mb) + abs(GA[r, k]) * (abs(Aa[k]) + ma)
            res = abs(s1 + s2 + g0[r])
            if res > worst:
                worst = res
            if t > scale:
                scale = t
    return worst, scale


def _evaluator(direct: bool):
    """The evaluation kernel; ``direct``, a compile-time constant (numba prunes the other
    branch before typing it), for a tree that is one grounded region on one thread."""

    @njit(cache=True, nogil=True, _nrt=False)
    def evaluate(desc, proto, y, out):
        """One DCA evaluation: every pass, in one call (docs/derivations.md, "DCA").

        The workspace comes as one table (``desc``, ``proto``: :mod:`.workspace`,
        :meth:`DCAFormulation._workspace` lists it): unboxing its ~120 arrays one by one
        cost about 1.8 us a call whatever the size (docs/performance.md, "The workspace
        as one argument").  Compiled without reference counting (``_nrt=False``)
        although some passes allocate scratch (those are ``_nrt=True`` themselves and
        free it before they return; none returns an array): the workspace's arrays are
        plain views.

        ``direct`` (``_evaluate_region``): the whole tree is one grounded region on one
        thread (``TreeLayout.one_region``: an open tree hanging from ground by one joint,
        so no cut joint either), and the region's three passes and the serial body loops
        are called directly.  Through the tree passes each call layer passes ``ix`` and
        ``hy`` on, some 400 words, and the six layers skipped cost about 1 us a
        right-hand side (docs/performance.md, "One region, called directly").  The same
        arithmetic in the same order: the same result bit for bit.  A kernel of its own,
        chosen when the formulation is built: as a branch at run time the extra call
        sites made every other mechanism's right-hand side about 1 us slower.

        ``y`` = (q, v) is the state.  The right-hand side (qdot, vdot) goes to ``out`` if
        it is as long as ``y``; an empty ``out`` (``NO_RATES``) fills the workspace only.
        With the rates, ``direct`` leaves the joints' forces and multipliers out of the
        disassembly: a region's accelerations come from its recursion, and nothing in the
        rates reads them (docs/performance.md, "The rates without the multipliers"); the
        formulation's readers of them evaluate without rates (``_solve``).
        The rates are computed here (:func:`~engine.kinematics.ode_rates`): as a second
        kernel call they cost 1 us a right-hand side.  Returns whether v and vdot are all
        finite."""
        (mk, ca, fa, ix, perp_pred, mass, inertia, inertia_inv, q_adr, ncut, spring_tree, spring_cut, x, R, P, S, V,
         c, Fext, jq, jq_ref, G, g0, phi, alpha, beta, Phi, bv, Fh, lam, sel, Kf, Kp, Kr, Ks, Y, E, r0, y0, scr, tol,
         rhs_body, Jinv_w, scratch, A, vdot, hy, mk_trail, progress) = unpack(desc, proto)
        nb = ix[0]
        row_adr = ix[19]
        nq = y.shape[0] - vdot.shape[0]
        q = y[:nq]
        v = y[nq:]
        fk_positions(mk, q, x, R, P)
        motion_subspace(mk, q, R, S)
        fk_velocities(mk, x, P, S, v, V, c)
        tree_applied_forces(fa, q, q_adr, spring_tree, spring_cut, x, R, V, jq, jq_ref, Fext)
        _tree_rows(mk, perp_pred, R, S, c, G[0], G[1], g0, row_adr)
        if direct:
            _leaves_over(0 * nb, nb, ix, mass, inertia, inertia_inv, x, R, V, Fext, P, Phi, bv, rhs_body, Jinv_w,
                         scratch, np.bool_(True), np.bool_(True), hy)
            treesolve.region_matrices(0, ix, Phi, hy)
            treesolve.region_biases(0, ix, bv, G, g0, hy)
            treesolve.region_down(0, ix, Fh, G, lam, hy, out.shape[0] != y.shape[0])
            for phase in range(2):
                _accelerations_over(phase, 0 * nb, nb, ix, mk, x, P, S, c, Fh, rhs_body, mass, Jinv_w, A, vdot, hy)
        else:
            if ncut > 0:
                _cut_rows(ca, nb, x, R, V, P, G[0], G[1], g0, phi, row_adr, alpha, beta)
            _leaves(ix, mass, inertia, inertia_inv, x, R, V, Fext, P, Phi, bv, rhs_body, Jinv_w, scratch,
                    np.bool_(True), np.bool_(True), hy)
            treesolve.assemble_matrices6(ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, 0.0, 1.0, tol, hy)
            treesolve.assemble_biases6(ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0, scr, 1.0, hy)
            treesolve.disassemble6(ix, Fh, G, sel, lam, Y, y0, hy)
            _accelerations(ix, mk, x, P, S, c, Fh, rhs_body, mass, Jinv_w, A, vdot, hy)
        if out.shape[0] != y.shape[0]:
            return True
        return ode_rates(mk, q, v, vdot, out)

    return evaluate


#: the evaluation kernel, and the one for a tree that is one grounded region on one thread
_evaluate = _evaluator(False)
_evaluate_region = _evaluator(True)


#: left automatic, dca runs an open branched tree (no loop) of fewer bodies on one thread
#: (:meth:`DCAFormulation.run_threads`): measured up to 512 bodies, where two threads took
#: 1.48 x one thread's time; above, every thread as before
TREE_PARALLEL_MIN_BODIES = 1024


# ------------------------------------------------------- two threads on one chain

#: bodies per block of the two-thread chain kernel: each role publishes its progress, and
#: reads the other's, once a block -- a count written for every body would move its cache
#: line between the two cores a thousand times a pass
CHAIN_BLOCK = 16
#: how many bodies a role stays behind the last one the other has published, beyond
#: what its step needs: two blocks, so that neither it nor its core's prefetcher (which
#: reads ahead along the arrays) touches the cache lines the other core is writing --
#: a line read while it is written goes back and forth between the cores
#: (docs/performance.md, "Two threads on one chain": 3-11 % off the two-thread time, interleaved)
CHAIN_LAG = 2 * CHAIN_BLOCK
#: how many times the first role to arrive reads the handshake before it takes the
#: whole evaluation on alone (the other thread busy elsewhere, or never coming)
CHAIN_PATIENCE = 20000
#: the progress counters (``progress``, int64), a cache line apart: the handshake; the
#: bodies whose positions are done (root first), whose twists and rows are, whose own
#: inertias are (tips first), the matrix pass's steps done, the bodies disassembled (root
#: first); and whether the rates came out finite
_ROLE, _POS, _VEL, _INERTIA, _MAT, _DOWN, _FINITE = 0, 8, 16, 24, 32, 40, 48
CHAIN_PROGRESS = 56


@njit(cache=True, nogil=True, inline='always')
def _take_role(progress):
    """Which part of the evaluation this thread does: 0 the leading role, 1 the trailing
    one, 2 all of it (the other thread did not come in ``CHAIN_PATIENCE`` reads: a thread
    that waited for a role nobody runs would wait for ever), 3 none (the first went on
    alone).  The first to arrive leads."""
    if claim(progress, _ROLE, 0, 1):
        for _ in range(CHAIN_PATIENCE):
            if load_acquire(progress, _ROLE) == 2:
                return 0
        if claim(progress, _ROLE, 1, 3):
            return 2
        return 0
    if claim(progress, _ROLE, 1, 2):
        return 1
    return 3


@njit(cache=True, nogil=True, _nrt=False)
def _chain_lead(nb, mk, fa, ix, q, q_adr, spring_tree, spring_cut, mass, inertia, inertia_inv, x, R, P, S, V, c,
                Fext, jq, jq_ref, G, g0, Phi, bv, Fh, lam, rhs_body, Jinv_w, scratch, hy, forces, progress):
    """The leading role of :func:`_evaluate_chain`: positions (root first), the bodies'
    own inertias (tips first), then -- once the twists and rows are done -- the applied
    forces, the bodies' bias wrenches, the bias pass behind the matrix pass, and the
    disassembly (with the joints' forces and multipliers if ``forces``)."""
    row_adr, rows = ix[19], ix[20]
    for i0 in range(0, nb, CHAIN_BLOCK):
        i1 = min(i0 + CHAIN_BLOCK, nb)
        for i in range(i0, i1):
            _position_step(i, mk, q, x, R, P)
        store_release(progress, _POS, i1)
    for i1 in range(nb, 0, -CHAIN_BLOCK):
        i0 = max(i1 - CHAIN_BLOCK, 0)
        for i in range(i0, i1):
            _region_inertia(i, mass, inertia, x, R, P, hy)
        store_release(progress, _INERTIA, nb - i0)
    wait_for(progress, _VEL, nb, 0)
    tree_applied_forces(fa, q, q_adr, spring_tree, spring_cut, x, R, V, jq, jq_ref, Fext)
    _leaves_over(0 * nb, nb, ix, mass, inertia, inertia_inv, x, R, V, Fext, P, Phi, bv, rhs_body, Jinv_w, scratch,
                 np.bool_(True), np.bool_(False), hy)
    done = 0
    for k in range(nb):  # body nb - 1 - k, once the matrix pass has passed it
        need = min(k + 1 + CHAIN_LAG, nb)
        if done < need:
            done = wait_for(progress, _MAT, need, done)
        treesolve._bias_step(k, row_adr, rows, G, g0, hy)
    for k in range(nb - 1, -1, -1):  # body nb - 1 - k, root first
        treesolve._down_step(k, row_adr, rows, Fh, G, lam, hy, forces)
        if (nb - k) % CHAIN_BLOCK == 0 or k == 0:
            store_release(progress, _DOWN, nb - k)


@njit(cache=True, nogil=True, _nrt=False)
def _chain_trail(nb, mk, ix, q, v, perp_pred, x, R, P, S, V, c, G, g0, Fh, rhs_body, mass, Jinv_w, A, vdot, out,
                 hy, progress):
    """The trailing role of :func:`_evaluate_chain`: motion subspaces, twists and the
    joints' rows behind the positions, the matrix pass behind the bodies' own inertias,
    the coordinates' rates (if ``out`` is to have them) while the disassembly starts, the
    accelerations behind it."""
    row_adr = ix[19]
    done = 0
    for i0 in range(0, nb, CHAIN_BLOCK):
        i1 = min(i0 + CHAIN_BLOCK, nb)
        done = wait_for(progress, _POS, min(i1 + CHAIN_LAG, nb), done)
        for i in range(i0, i1):
            _subspace_step(i, mk, q, R, S)
            _velocity_step(i, mk, x, P, S, v, V, c)
            _row_step(i, mk, perp_pred, R, S, c, G[0], G[1], g0, row_adr)
        store_release(progress, _VEL, i1)
    T = hy[9][0]
    done = 0
    for k in range(nb):  # body nb - 1 - k into its parent, both bodies' own inertias set
        need = min(k + 2 + CHAIN_LAG, nb)
        if done < need:
            done = wait_for(progress, _INERTIA, need, done)
        treesolve._matrix_step(k, T, hy)
        if (k + 1) % CHAIN_BLOCK == 0 or k == nb - 1:
            store_release(progress, _MAT, k + 1)
    if out.shape[0] == q.shape[0] + v.shape[0]:
        qdot_from_v(mk, q, v, out)
    done = 0
    for i0 in range(0, nb, CHAIN_BLOCK):
        i1 = min(i0 + CHAIN_BLOCK, nb)
        done = wait_for(progress, _DOWN, min(i1 + CHAIN_LAG, nb), done)
        for phase in range(2):  # a joint's acceleration needs its parent's body's: in this block or before
            _accelerations_over(phase, i0, i1, ix, mk, x, P, S, c, Fh, rhs_body, mass, Jinv_w, A, vdot, hy)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def _evaluate_chain(desc, proto, y, out):
    """``_evaluate_region`` on two threads, for an unbranched chain hanging from ground
    (docs/performance.md, "Two threads on one chain"): the same steps in the same order
    for each body -- the same result bit for bit -- in two roles that run beside each
    other, each recursion ``CHAIN_LAG`` bodies or more behind the one it needs (:func:`_chain_lead`,
    :func:`_chain_trail`), so that the passes along the chain, sequential each, overlap.
    The body order is the region's: body ``i``'s parent is ``i - 1`` and the matrix pass's
    step ``k`` is body ``nb - 1 - k`` (``DCAFormulation`` checks).  When the other thread
    does not come (numba set to one thread, or the second core busy elsewhere), the first
    does it all as ``_evaluate_region`` after ``CHAIN_PATIENCE`` reads (:func:`_take_role`)."""
    (mk, ca, fa, ix, perp_pred, mass, inertia, inertia_inv, q_adr, ncut, spring_tree, spring_cut, x, R, P, S, V,
     c, Fext, jq, jq_ref, G, g0, phi, alpha, beta, Phi, bv, Fh, lam, sel, Kf, Kp, Kr, Ks, Y, E, r0, y0, scr, tol,
     rhs_body, Jinv_w, scratch, A, vdot, hy, mk_trail, progress) = unpack(desc, proto)
    nb = ix[0]
    nq = y.shape[0] - vdot.shape[0]
    q = y[:nq]
    v = y[nq:]
    for k in range(0, CHAIN_PROGRESS, 8):
        progress[k] = 0
    for _ in prange(2):
        role = _take_role(progress)
        if role == 0:
            _chain_lead(nb, mk, fa, ix, q, q_adr, spring_tree, spring_cut, mass, inertia, inertia_inv, x, R, P, S,
                        V, c, Fext, jq, jq_ref, G, g0, Phi, bv, Fh, lam, rhs_body, Jinv_w, scratch, hy,
                        out.shape[0] != y.shape[0], progress)
        elif role == 1:
            _chain_trail(nb, mk_trail, ix, q, v, perp_pred, x, R, P, S, V, c, G, g0, Fh, rhs_body, mass, Jinv_w, A,
                         vdot, out, hy, progress)
        elif role == 2:
            progress[_FINITE] = _evaluate_region(desc, proto, y, out)
    if progress[_ROLE] == 3:  # one thread did it all
        return progress[_FINITE] != 0
    if out.shape[0] != y.shape[0]:
        return True
    return second_rates(v, vdot, out)


#: a chain's ``rhs`` on two threads chooses its kernels (``DCAFormulation._choose_kernels``) at
#: the right-hand sides whose count ``nfev`` has ``nfev & CHAIN_RETIME_MASK == CHAIN_RETIME_AT``:
#: the 16th, then every 1024th.  Six extra calls a choice: about 0.6 % more work
CHAIN_RETIME_MASK = 1023
CHAIN_RETIME_AT = 16


def _seconds(kernel: StateKernel, y: np.ndarray) -> float:
    """Wall seconds of one rates call of ``kernel`` at ``y``."""
    t0 = time.perf_counter()
    kernel.rates(y)
    return time.perf_counter() - t0


#: the arrays one role of ``_evaluate_chain`` writes and the other reads, kept in two
#: copies that right-hand sides use in turn (``DCAFormulation._rhs_two_roles``).  Where a role
#: writes a cache line the other core read in the previous call, each store waits for
#: that core to give its copy up: on a 1024-body revolute chain the trailing role's
#: root-first loop took 69-72 us instead of 38.  With two copies the lines a call writes
#: were last touched two calls before (docs/performance.md, "Two copies of what the roles
#: hand over").
CHAIN_TWIN = ("x", "R", "P", "S", "V", "c", "Fext", "G", "g0", "Fh", "lam", "rhs_body", "A", "vdot",
              "IA", "W", "U", "Dinv", "sz", "xa")


def _swapped(values: tuple, old: list, new: list) -> tuple:
    """``values`` (a workspace, nested tuples) with each array of ``old``, wherever it
    occurs, replaced by the array of ``new`` at the same place."""
    by_id = {id(a): b for a, b in zip(old, new)}

    def walk(v):
        if isinstance(v, tuple):
            return tuple(walk(w) for w in v)
        return by_id.get(id(v), v) if isinstance(v, np.ndarray) else v

    return walk(values)


def unbranched_chain(model: Model) -> bool:
    """An open chain: one body on ground, every body at most one child, no cut joint."""
    parent = model.parent
    return (not model.ncut and (parent < 0).sum() == 1
            and np.bincount(parent[parent >= 0], minlength=1).max() <= 1)


#: the joint types whose rows are e_0, e_1, e_2, then rows with zero linear halves
#: (:func:`_row_constants`; the kernels spell the same test out)
UNIT_FIRST = (SPHERICAL, REVOLUTE, UNIVERSAL, FIXED)


def unit_rows(model: Model, row_adr: np.ndarray) -> np.ndarray:
    """For each constraint row: k if the tree-joint row is +-e_k (see :func:`_tree_rows`), else -1."""
    sel = np.full(int(model.nc_j.sum()), -1, dtype=np.int64)
    for j in range(model.nb):
        r, t = row_adr[j], model.jtype[j]
        if t in UNIT_FIRST:
            sel[r:r + 3] = (0, 1, 2)
        if t == FIXED:
            sel[r + 3:r + 6] = (3, 4, 5)
        if t == PRISMATIC:
            sel[r + 2:r + 5] = (3, 4, 5)
    return sel


def unit_rows_first(model: Model) -> np.ndarray:
    """For each tree joint: its rows are e_0, e_1, e_2 first, then rows with zero linear
    halves (:func:`_row_constants`; ``TreeLayout.unit_first``)."""
    return np.isin(model.jtype[:model.nb], UNIT_FIRST)


# ----------------------------------------------------------------- formulation


class TreeFormulation(LoopProjection, treesolve.SingularityWatch, Formulation):
    """What ``dca`` and ``hdca`` share: kernel arrays, the assembly tree and its layout
    (6-D handles, the joints' constraint rows, unit-row selection, the rank of the
    closure rows), the singularity watch, springs, the position-level workspace,
    quaternion renormalisation and the projection onto the loops (:mod:`.stabilise`)."""

    #: assemble the tree's articulated-body regions by the recursion in inertia form
    #: (treesolve, docs/derivations.md "The articulated-body regions"); False: merge by merge
    articulated_regions = True
    #: a chain hanging from ground is one region with its ground joint (one thread: the
    #: tips-first tree merges ground last); False: the region's root merges with ground.
    #: dca's, not hdca's: the recursion derives joint forces from accelerations, and hdca's
    #: regions' joint impulses from velocities lose digits there (docs/performance.md,
    #: "The ground joint in the region")
    grounded_regions = False

    def __init__(self, model: Model, settings):
        super().__init__(model, settings)
        m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        self.threads = threads = self.run_threads(m, settings)
        lay_threads = self.layout_threads(m, threads)
        self.tree = cheaper_tree(m, m.nc_j, lay_threads, ground_last=self.grounded_regions)
        self.lay = treesolve.build_layout(m, self.tree, 6, m.nc_j, lay_threads, regions=self.articulated_regions,
                                          grounded=self.grounded_regions)
        self.lay.sel[:] = unit_rows(m, self.lay.ix[19])
        if self.lay.unit_first.size:
            self.lay.unit_first[:] = unit_rows_first(m)
        tree_row_constants(self.mk, self.lay.G[0], self.lay.G[1], self.lay.ix[19])
        self._watch_init(self.lay, m.nb)
        self.spring_joints = spring_joints(m)
        self.cut_spring = np.array([j for j in self.spring_joints if j >= m.nb], dtype=np.int64)
        self.spring_tree = np.array([j for j in self.spring_joints if j < m.nb], dtype=np.int64)
        self.jq_ref = np.zeros(m.nj)
        self.jq = np.full(m.nj, np.nan)
        self.x = np.zeros((m.nb, 3))  # COM, fk_positions
        self.R = np.zeros((m.nb, 3, 3))  # orientation, fk_positions
        self.P = np.zeros((m.nj, 3))  # joint points, fk_positions
        self.S = np.zeros((m.nv, 6))  # motion subspace columns, motion_subspace
        self.hy = self.lay.hybrid(self.S, self.P)  # the passes' articulated-body regions
        self._projection_init()

    @classmethod
    def run_threads(cls, model: Model, settings) -> int:
        """As :meth:`Formulation.run_threads`; but left automatic (``threads`` None), one
        thread on an unbranched open chain shorter than ``CHAIN_PARALLEL_MIN_BODIES``:
        there the root-first half's merges, and a parallel region per pass, cost more
        than the second thread gives (docs/performance.md, "Automatic threads").  A
        thread count the user sets is taken as it is."""
        threads = getattr(settings, "threads", None)
        n = treesolve.run_threads(model.nb, threads)
        if threads is None and n > 1 and model.nb < treesolve.CHAIN_PARALLEL_MIN_BODIES and unbranched_chain(model):
            return 1
        return n

    @classmethod
    def layout_threads(cls, model: Model, threads: int) -> int:
        """The thread count the assembly tree and its layout are built for: ``threads``
        (``dca`` runs an unbranched chain on two threads with the one-thread layout)."""
        return threads

    def rhs(self, t, y):
        """One evaluation (``self._kernel``: the subclass's ``_evaluate``, whose last pass
        writes the rates) into a new array; ``not_finite`` says which rates were not.
        ``dca``'s one-region kernels leave the multipliers out of a rates call: the
        formulation's own readers evaluate through :meth:`_solve`, with them.  ``dca``
        on a chain on two threads takes ``DCAFormulation._rhs_two_roles`` instead."""
        self.nfev += 1
        out, finite = self._kernel.rates(y)
        if not finite:
            raise SingularSystemError(t, self.not_finite)
        return out

    def post_step(self, t, y):
        y = y.copy()
        normalize_quaternions(self.mk, y[: self.model.nq])
        if self._project:
            self._stabilise(t, y)
        return y

    #: the projection of the state (q, v); hdca's state (q, p*) takes its own
    _stabilise = LoopProjection._project_velocity_state

    def _decide_ranks(self) -> None:
        """Bound each loop-closing merge's rank by the one it has at the file's configuration,
        where the loops close (:meth:`treesolve.TreeLayout.cap_ranks`): whether a closure
        row is redundant is then the mechanism's property, not one state's.  Called by the
        subclasses once their kernel exists."""
        m = self.model
        if not m.ncut:
            return
        self._solve(0.0, np.concatenate([m.q_zero(), np.zeros(m.nv)]), check=False)
        self.lay.cap_ranks()

    def _reactions(self) -> np.ndarray:
        """Each joint's wrench on its successor, ``G_b^T lambda``, from the last disassembly."""
        lay = self.lay
        out = np.zeros((self.model.nj, 6))
        _joint_wrenches(lay.ix[19], lay.ix[20], lay.G[1], lay.lam, out)
        return out


@njit(cache=True, nogil=True, _nrt=False)
def _joint_wrenches(row_adr, rows, Gb, lam, out):
    for j in range(out.shape[0]):
        for a in range(row_adr[j], row_adr[j] + rows[j]):
            for c in range(6):
                out[j, c] += Gb[a, c] * lam[a]


class DCAFormulation(TreeFormulation):
    name = "dca"
    title = "divide-and-conquer algorithm (Featherstone), acceleration level"
    kind = "ode"
    parameters = ("projection", "baumgarte", "threads")
    not_finite = "accelerations are not finite"
    grounded_regions = True
    singular_remedy = ("dca closes loops at the acceleration level and cannot tell the branch through a singular "
                       "configuration: use dense or index3 (docs/formulations.md, \"Singular configurations\").")
    summary = ("Featherstone's divide-and-conquer algorithm in joint coordinates: O(n) work, "
               "O(log n) depth over a binary assembly tree, loops closed at the acceleration level.")

    def __init__(self, model: Model, settings):
        super().__init__(model, settings)
        m = model
        bg = getattr(settings, "baumgarte", None)
        self.alpha, self.beta = (float(bg[0]), float(bg[1])) if bg else (0.0, 0.0)
        # workspace: position -> velocity -> acceleration -> constraint
        self.V = np.zeros((m.nb, 6))  # COM twists, fk_velocities
        self.c = np.zeros((m.nb, 6))  # velocity-product terms, fk_velocities
        self.Fext = np.zeros((m.nb, 6))  # applied wrenches at the COM, applied_forces
        self.rhs_body = np.zeros((m.nb, 6))  # F_ext - V x* I V, _leaves
        self.Jinv_w = np.zeros((m.nb, 3, 3))  # world inverse inertia, _leaves
        self._scratch = np.zeros((m.nb, 3, 3))  # per-body scratch of _leaves
        self.A = np.zeros((m.nb, 6))  # spatial accelerations about the COM, _accelerations
        self.vdot = np.zeros(m.nv)  # joint accelerations, _accelerations
        self.phi = np.zeros(self.lay.n_rows)  # closure residuals of cut joints, _cut_rows
        self._row_ix = (self.lay.ix[19], self.lay.ix[20])
        # _evaluate_chain's trailing role: the same model arrays, scratch of its own
        self.mk_trail = self.mk[:-2] + tuple(np.empty_like(a) for a in self.mk[-2:])
        self._progress = np.zeros(CHAIN_PROGRESS, dtype=np.int64)  # _evaluate_chain's counters
        # one grounded region on one thread: its passes called directly (_evaluate_region);
        # an unbranched chain's on two threads, beside one another (_evaluate_chain)
        direct = self.lay.one_region and m.nb < self.lay.ix[24]
        self.two_roles = direct and self.threads > 1 and np.array_equal(self.lay.reg[2], np.arange(m.nb)[::-1])
        kernel = _evaluate_chain if self.two_roles else _evaluate_region if direct else _evaluate
        self._kernel = StateKernel(kernel, self._workspace())
        self.twin = {}  # the second copies of CHAIN_TWIN's arrays, by name (two roles only)
        self._roles = self._alone = None
        self.kernel_choices: list[tuple[int, float, float]] = []  # (nfev, two roles s, alone s) of each choice
        if self.two_roles:  # right-hand sides alternate between two copies of what the roles hand over
            first = self._chain_twin()
            self.twin = {n: a.copy() for n, a in zip(CHAIN_TWIN, first)}
            self._roles = (self._kernel,
                           StateKernel(kernel, _swapped(self._workspace(), first, list(self.twin.values()))))
            # and the one-thread kernel on the same workspace (compiled with the roles: they
            # call it when the second thread does not come): rhs takes the faster
            self._alone = StateKernel(_evaluate_region, self._workspace())
            self._rhs_kernels = self._roles
            self.rhs = self._rhs_two_roles  # the other mechanisms' rhs pays nothing for the choice
        self._decide_ranks()

    def _rhs_two_roles(self, t, y):
        """``rhs`` of a chain on two threads: the calls take ``_rhs_kernels`` in turn --
        the two roles' two copies of the arrays they hand each other
        (:data:`CHAIN_TWIN`), or one thread alone (:meth:`_choose_kernels`) -- so after
        it the workspace may hold the call before last."""
        self.nfev += 1
        if self.nfev & CHAIN_RETIME_MASK == CHAIN_RETIME_AT:
            self._choose_kernels(y)
        out, finite = self._rhs_kernels[self.nfev & 1].rates(y)
        if not finite:
            raise SingularSystemError(t, self.not_finite)
        return out

    def _choose_kernels(self, y) -> None:
        """On an unbranched chain on two threads, times the two roles against one thread
        alone at state ``y`` (twice each, the best) and takes the faster for the next
        right-hand sides: both give the same result bit for bit, but where the two cores
        hand cache lines over slowly the roles take twice one thread's time
        (docs/performance.md, "One thread when two are slower")."""
        roles, alone = self._roles, self._alone
        t_roles = min(_seconds(roles[0], y), _seconds(roles[1], y), _seconds(roles[0], y), _seconds(roles[1], y))
        t_alone = min(_seconds(alone, y), _seconds(alone, y))
        self._rhs_kernels = roles if t_roles < t_alone else (alone, alone)
        if len(self.kernel_choices) < 1000:
            self.kernel_choices.append((self.nfev, t_roles, t_alone))

    def _chain_twin(self) -> list:
        """The arrays of :data:`CHAIN_TWIN`: the layout's by its names, the formulation's by its own."""
        return [getattr(self.lay, n) if hasattr(self.lay, n) else getattr(self, n) for n in CHAIN_TWIN]

    @classmethod
    def run_threads(cls, model: Model, settings) -> int:
        """As :meth:`TreeFormulation.run_threads`; and, left automatic, one thread on an
        open branched tree (no loop) of fewer than ``TREE_PARALLEL_MIN_BODIES`` bodies.
        On one thread such a tree is assembled by the articulated-body recursion with its
        ground joint; on two it is cut into subtrees that merge, and random trees of 128,
        256 and 512 bodies took 1.5-1.9 times one thread's time there
        (``benchmarks/thread_choice.py``, 2026-11-28; docs/performance.md, "Automatic
        threads").  ``hdca`` keeps its rule: its regions end in a merge with ground, and
        it broke even on the same trees (0.91-1.09)."""
        n = super().run_threads(model, settings)
        if (getattr(settings, "threads", None) is None and n > 1 and not model.ncut
                and model.nb < TREE_PARALLEL_MIN_BODIES and not unbranched_chain(model)):
            return 1
        return n

    @classmethod
    def warm_variants(cls, model: Model, settings) -> list:
        """An unbranched chain of ``PARALLEL_MIN_BODIES`` bodies or more on two threads:
        its two roles (``_evaluate_chain``) are a kernel of their own, which a run calls
        wherever it gets two threads (``--threads 2``; the automatic count from
        ``CHAIN_PARALLEL_MIN_BODIES`` bodies: every core from the command line, every core
        but one in the application).  Compiled at that run's start they took 52 s while the
        application said it was loading."""
        import numba

        if (numba.config.NUMBA_NUM_THREADS < 2 or model.nb < treesolve.PARALLEL_MIN_BODIES
                or not unbranched_chain(model)):
            return []
        return [settings.replace(threads=2)]

    @classmethod
    def layout_threads(cls, model: Model, threads: int) -> int:
        """An unbranched open chain hanging from ground is one region on any thread count:
        on two or more threads it runs in two roles (``_evaluate_chain``) instead of being
        cut into parts that merge (docs/performance.md, "Two threads on one chain")."""
        if threads > 1 and unbranched_chain(model):
            return 1
        return threads

    @classmethod
    def supports(cls, model: Model) -> tuple[bool, str]:
        return super().supports(model)  # refuses couplings (gears): they are not rows here

    def initial_state(self) -> np.ndarray:
        m = self.model
        ini = initial_state(m)
        self.initial = ini
        q = m.q_zero()
        fk_positions(self.mk, q, self.x, self.R, self.P)
        v = tree_velocities(m, ini.V, self.x, self.R, self.P)
        return np.concatenate([q, v])

    # ---------------------------------------------------------------- passes
    def _workspace(self) -> tuple:
        """``_evaluate``'s workspace, in the order it unpacks it, gathered once
        (``StateKernel``): every array is allocated in ``__init__`` and only ever written
        in place."""
        m, lay = self.model, self.lay
        return (self.mk, self.ca, self.fa, lay.ix, m.perp_pred, m.mass, m.inertia, m.inertia_inv, m.q_adr, m.ncut,
                self.spring_tree, self.cut_spring, self.x, self.R, self.P, self.S, self.V, self.c, self.Fext, self.jq,
                self.jq_ref, lay.G, lay.g0, self.phi, self.alpha, self.beta, lay.Phi, lay.bv, lay.Fh, lay.lam,
                lay.sel, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.r0, lay.y0, lay.scr, config.PIVOT_RTOL,
                self.rhs_body, self.Jinv_w, self._scratch, self.A, self.vdot, self.hy, self.mk_trail, self._progress)

    def _solve(self, t, y, check=True):
        """One evaluation of state ``y`` into the workspace; ``check``: refuse non-finite
        accelerations."""
        self._kernel(y, NO_RATES)
        if check and not np.isfinite(self.vdot).all():
            raise SingularSystemError(t, self.not_finite)

    def closure_residual(self) -> tuple[float, float]:
        """(largest acceleration residual of any joint row, largest term) of the last solve."""
        m, lay = self.model, self.lay
        return _residual(self._row_ix, m.pred, m.succ, self.x, self.P, self.A, lay.G[0], lay.G[1], lay.g0, m.nj)

    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        q, v = y[: m.nq], y[m.nq:]
        self._solve(t, y)
        check_consistent(t, *self.closure_residual())
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        reactions = self._reactions()
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(),
                          acc=classical_accelerations(self.V, self.A), P=self.P.copy(), reactions=reactions,
                          jq=self.jq.copy(), extra={"vdot": self.vdot.copy(), "q": q.copy(), "v": v.copy()})
