"""The per-body kernels of the tree formulations (``dca``, ``hdca``): each body's leaf
blocks and bias (its ``Phi`` and ``b`` as a one-body articulated body, eq. (1) of
:mod:`.tree`), the constraint rows of tree and cut joints at the joint points, and the
accelerations from the handle forces (docs/derivations.md, "DCA"; paper 001 eqs. 10-25)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..constraints import joint_constraint
from ..model import CYLINDRICAL, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL
from ..spatial import shift_force_by, shift_motion, shift_motion_by


class TreeModel(NamedTuple):
    """The model's arrays that dca's and hdca's kernels read besides ``mk``, ``ca`` and
    ``fa`` (:class:`~linkwork.engine.model.Model` says what each holds), gathered once by
    :class:`~.tree_formulation.TreeFormulation` (``tm``)."""

    perp_pred: np.ndarray  # (nj, 3, 3) each joint's constraint directions in the pred frame
    mass: np.ndarray  # (nb,)
    inertia: np.ndarray  # (nb, 3, 3) about the COM, body frame
    inertia_inv: np.ndarray  # (nb, 3, 3)
    q_adr: np.ndarray  # (nj,) first coordinate of each joint
    v_adr: np.ndarray  # (nj,) first freedom of each joint
    nv_j: np.ndarray  # (nj,) freedoms of each joint
    ncut: np.int64  # cut joints
    spring_tree: np.ndarray  # tree joints with a joint spring
    spring_cut: np.ndarray  # cut joints with a joint spring


class BodyWork(NamedTuple):
    """The bodies' arrays of one dca or hdca evaluation, position -> velocity ->
    acceleration, as the leaves (:func:`leaves`) and the accelerations
    (:func:`accelerations`) read and write them; allocated once by the formulation (``bw``).
    hdca's velocity phase has a tuple of its own over the same poses (``HDCAWorkspace.bw1``:
    zero twists, the joints' known impulses as the bodies' loads, the twists and joint
    velocities where this has the accelerations).  Nothing else: numba passes a tuple to
    a kernel it calls member by member, the members it does not read too."""

    x: np.ndarray  # (nb, 3) centres of mass, fk_positions
    R: np.ndarray  # (nb, 3, 3) orientations, fk_positions
    P: np.ndarray  # (nj, 3) joint points, fk_positions
    S: np.ndarray  # (nv, 6) motion subspace columns, motion_subspace
    V: np.ndarray  # (nb, 6) twists about the COM, fk_velocities
    c: np.ndarray  # (nb, 6) velocity-product terms, fk_velocities
    Fext: np.ndarray  # (nb, 6) applied wrenches at the COM, tree_applied_forces
    rhs_body: np.ndarray  # (nb, 6) each body's wrench as a leaf, F_ext - V x* I V (body_rhs), leaves
    Jinv_w: np.ndarray  # (nb, 3, 3) world inverse inertias, leaves
    scratch: np.ndarray  # (nb, 3, 3) per-body scratch of the leaves
    A: np.ndarray  # (nb, 6) spatial accelerations about the COM, accelerations
    vdot: np.ndarray  # (nv,) joint accelerations, accelerations


class Baumgarte(NamedTuple):
    """Baumgarte's terms in the cut joints' rows, ``2 alpha Phi_dot + beta^2 Phi``
    (:func:`cut_rows`; dca's ``baumgarte`` setting; (0, 0): none)."""

    alpha: float
    beta: float


@njit(cache=True, nogil=True, _nrt=False)
def world_inertia(R, Ib, out):
    """out = R Ib R^T: column b of ``Ib R^T`` once, then row by row (54 multiply-adds;
    the same sums in the same order as forming ``Ib R^T`` anew for every entry)."""
    for b in range(3):
        t0 = Ib[0, 0] * R[b, 0] + Ib[0, 1] * R[b, 1] + Ib[0, 2] * R[b, 2]
        t1 = Ib[1, 0] * R[b, 0] + Ib[1, 1] * R[b, 1] + Ib[1, 2] * R[b, 2]
        t2 = Ib[2, 0] * R[b, 0] + Ib[2, 1] * R[b, 1] + Ib[2, 2] * R[b, 2]
        for a in range(3):
            out[a, b] = R[a, 0] * t0 + R[a, 1] * t1 + R[a, 2] * t2


@njit(cache=True, nogil=True, inline='always')
def body_rhs(i, mass, inertia, R, V, Fext, rhs_body):
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
def leaf_blocks(i, ix, mass, inertia_inv, bw, Phi, bv, blocks):
    """Body i as a leaf of the tree solve: the handle biases ``b_h = X_h^T D w`` for the
    body wrench (or impulse) ``w = bw.rhs_body[i]`` and, if ``blocks``, the mobility
    blocks ``Phi_hk = X_h^T D X_k`` and the world inverse inertia."""
    node_nh, node_h_start, node_pair_start, h_joint = ix.node_nh, ix.node_h_start, ix.node_pair_start, ix.h_joint
    x, R, P, rhs_body = bw.x, bw.R, bw.P, bw.rhs_body
    Jinv_w = bw.Jinv_w
    scratch = bw.scratch
    if blocks:
        world_inertia(R[i], inertia_inv[i], Jinv_w[i])
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
def region_leaf(i, mass, inertia, x, R, P, rhs_body, blocks, hy):
    """Body i in an articulated-body region (:mod:`.tree.regions`): its bias wrench about its joint
    point, ``W = X^T w = [f; n + l x f]`` (``l`` from the joint point to the centre of
    mass), and, if ``blocks``, its inertia there, ``X^T M X = [[m 1, -m ~l], [m ~l, J - m ~l ~l]]``.
    No world inverse inertia: a region body's acceleration comes from its recursion
    (``region_acceleration``), not from its handle forces."""
    W = hy.W
    l0 = x[i, 0] - P[i, 0]
    l1 = x[i, 1] - P[i, 1]
    l2 = x[i, 2] - P[i, 2]
    shift_force_by(rhs_body[i], l0, l1, l2, W[i])
    if blocks:
        region_inertia(i, mass, inertia, x, R, P, hy)


@njit(cache=True, nogil=True, inline='always')
def region_inertia(i, mass, inertia, x, R, P, hy):
    """Body i's inertia about its joint point (:func:`region_leaf`)."""
    IA = hy.IA
    l0 = x[i, 0] - P[i, 0]
    l1 = x[i, 1] - P[i, 1]
    l2 = x[i, 2] - P[i, 2]
    A = IA[i]
    world_inertia(R[i], inertia[i], A[3:, 3:])
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
#: serial kernel (``leaves_over``, ``accelerations_over``): the per-body code is then
#: compiled once, not once in the parallel region's body and again in the serial loop
BODY_CHUNKS = 16


@njit(cache=True, nogil=True, _nrt=False)
def leaves_over(i0, i1, ix, mass, inertia, inertia_inv, bw, Phi, bv, dca_rhs, blocks, hy):
    """:func:`leaves` for bodies ``i0 .. i1 - 1``."""
    in_region = hy.in_region
    x, R, V, Fext, P = bw.x, bw.R, bw.V, bw.Fext, bw.P
    rhs_body = bw.rhs_body
    for i in range(i0, i1):
        if dca_rhs:
            body_rhs(i, mass, inertia, R, V, Fext, rhs_body)
        if in_region[i] >= 0:
            region_leaf(i, mass, inertia, x, R, P, rhs_body, blocks, hy)
        else:
            leaf_blocks(i, ix, mass, inertia_inv, bw, Phi, bv, blocks)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def leaves(ix, mass, inertia, inertia_inv, bw, Phi, bv, dca_rhs, blocks, hy):
    """Every body as a leaf (in parallel for large mechanisms): its blocks and biases into
    the tree's ``Phi`` and ``bv`` (``TreeWork``), or into the regions' ``hy``, from the
    bodies' arrays ``bw``; with ``dca_rhs`` the body wrench ``bw.rhs_body`` is DCA's
    ``F_ext - V x* I V``, otherwise it is taken as given.  A body in an articulated-body
    region gets its inertia and bias wrench about its joint point instead of mobility
    blocks (:func:`region_leaf`).

    The flags are runtime bools: kernels pass ``np.bool_(...)``, never the literals, so
    dca, hdca's two phases and its Python-side reaction pass share one specialisation
    (numba compiles one per literal value; docs/compile-time.md)."""
    nb = ix.nb
    if nb >= ix.body_parallel_from:  # the tuples handed on, never written through here
        for k in prange(BODY_CHUNKS):
            leaves_over(k * nb // BODY_CHUNKS, (k + 1) * nb // BODY_CHUNKS, ix, mass, inertia, inertia_inv, bw, Phi,
                        bv, dca_rhs, blocks, hy)
    else:  # 0 * nb: an int64 as in the chunks (one specialisation)
        leaves_over(0 * nb, nb, ix, mass, inertia, inertia_inv, bw, Phi, bv, dca_rhs, blocks, hy)


@njit(cache=True, nogil=True, inline='always')
def row_constants(i, mk, GA, GB, row_adr):
    """The entries of tree joint i's rows that no state changes (:func:`tree_row_constants`):
    the unit rows and the zero halves of the others, and ``GA = -GB`` of them."""
    jt = mk.jtype[i]
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
    for a layout: :func:`tree_rows` writes only the others on each evaluation (a chain's
    spherical joint has three unit rows, a revolute joint three of its five; writing them
    on every call took most of the pass; docs/performance.md, "The articulated-body
    regions")."""
    for i in range(mk.parent.shape[0]):
        row_constants(i, mk, GA, GB, row_adr)


@njit(cache=True, nogil=True, inline='always')
def set_row(GA, GB, rr, o, w0, w1, w2):
    """Row rr's entries o .. o + 2: ``GB = w``, ``GA = -w``."""
    GB[rr, o] = w0
    GB[rr, o + 1] = w1
    GB[rr, o + 2] = w2
    GA[rr, o] = -w0
    GA[rr, o + 1] = -w1
    GA[rr, o + 2] = -w2


@njit(cache=True, nogil=True, inline='always')
def row_step(i, mk, perp_pred, R, S, c, GA, GB, g0, row_adr):
    """Tree joint i's rows T^T (:func:`tree_rows`), its parent's rotation and its
    velocity-product term done: the entries that depend on the state, ``GA = -GB`` of
    them, and ``g0``."""
    parent, jtype, q_adr, v_adr = mk.parent, mk.jtype, mk.q_adr, mk.v_adr
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
                set_row(GA, GB, r + 3 + s, 3, w0, w1, w2)
            else:  # linear rows u1, u2 first
                set_row(GA, GB, r + s, 0, w0, w1, w2)
                if jt == CYLINDRICAL:  # then angular rows u1, u2
                    set_row(GA, GB, r + 2 + s, 3, w0, w1, w2)
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
        set_row(GA, GB, r + 3, 3, n0 / nn, n1 / nn, n2 / nn)
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
def tree_rows(mk, perp_pred, R, S, c, GA, GB, g0, row_adr):
    """Rows T_j^T of every tree joint: GB = T^T, GA = -T^T, g0 = -T^T c_j (about P_j);
    the entries no state changes were written once (:func:`tree_row_constants`)."""
    for i in range(mk.parent.shape[0]):
        row_step(i, mk, perp_pred, R, S, c, GA, GB, g0, row_adr)


@njit(cache=True, nogil=True, _nrt=True)
def cut_rows(ca, nb, x, R, V, P, GA, GB, g0, phi, row_adr, bg):
    """Closure rows of the cut joints, re-expressed at the joint point P_j for
    spatial accelerations: G^P = G [[1, -~l], [0, 1]], g0 = g + G_lin (w x v_C), with
    Baumgarte's terms ``bg`` (:class:`Baumgarte`)."""
    jtype, pred, succ, c_adr, nc_j = ca.jtype, ca.pred, ca.succ, ca.c_adr, ca.nc_j
    alpha, beta = bg.alpha, bg.beta
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
def body_acceleration(i, ix, x, P, Fh, rhs_body, mass, Jinv_w, A):
    """Spatial acceleration about the COM of body i from its handle forces."""
    node_nh, node_h_start, h_joint = ix.node_nh, ix.node_h_start, ix.h_joint
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
def joint_acceleration(i, nb, parent, v_adr, x, P, S, c, A, vdot):
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
def region_acceleration(i, x, P, xa, A):
    """Spatial acceleration about the COM of body i in an articulated-body region: its
    joint point's, ``xa[i]`` (the tree's disassembly), shifted to the COM.  Not from the
    forces: the net moment on a slender body about its axis is the small difference of
    its joints' moments, each with round-off relative to the whole subtree's, and its
    small inertia about that axis would magnify that difference (docs/derivations.md,
    "The articulated-body regions")."""
    shift_motion_by(xa[i], x[i, 0] - P[i, 0], x[i, 1] - P[i, 1], x[i, 2] - P[i, 2], A[i])


@njit(cache=True, nogil=True, _nrt=False)
def accelerations_over(phase, i0, i1, ix, mk, mass, bw, Fh, hy):
    """:func:`accelerations` for bodies ``i0 .. i1 - 1``: phase 0 the bodies'
    accelerations, phase 1 (every body's done) their joints'."""
    nb = ix.nb
    parent, v_adr = mk.parent, mk.v_adr
    in_region = hy.in_region
    xa = hy.xa
    x, P, S, c, rhs_body, Jinv_w = bw.x, bw.P, bw.S, bw.c, bw.rhs_body, bw.Jinv_w
    A = bw.A
    vdot = bw.vdot
    for i in range(i0, i1):
        if phase == 1:
            joint_acceleration(i, nb, parent, v_adr, x, P, S, c, A, vdot)
        elif in_region[i] >= 0:
            region_acceleration(i, x, P, xa, A)
        else:
            body_acceleration(i, ix, x, P, Fh, rhs_body, mass, Jinv_w, A)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def accelerations(ix, mk, mass, bw, Fh, hy):
    """Body spatial accelerations about the COM (``bw.A``) from the handle forces ``Fh``
    (``TreeWork``; in a region: from its recursion), then the joints' (``bw.vdot``)."""
    nb = ix.nb
    for phase in range(2):
        if nb >= ix.body_parallel_from:  # the tuples handed on, never written through here
            for k in prange(BODY_CHUNKS):
                accelerations_over(phase, k * nb // BODY_CHUNKS, (k + 1) * nb // BODY_CHUNKS, ix, mk, mass, bw, Fh,
                                    hy)
        else:
            accelerations_over(phase, 0 * nb, nb, ix, mk, mass, bw, Fh, hy)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _largest_of_row(A, i):
    """``max |A[i, k]|`` (without the temporary array of ``np.abs(A[i]).max()``)."""
    m = 0.0
    for k in range(A.shape[1]):
        m = max(m, abs(A[i, k]))
    return m


@njit(cache=True, nogil=True, _nrt=True)
def residual(ix_rows, pred, succ, x, P, A, GA, GB, g0, nj):
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
        mb = _largest_of_row(A, b) * (1.0 + np.sqrt(l[0] ** 2 + l[1] ** 2 + l[2] ** 2))
        ma = 0.0
        if a >= 0:
            for k in range(3):
                l[k] = P[j, k] - x[a, k]
            shift_motion(A[a], l, Aa)
            ma = _largest_of_row(A, a) * (1.0 + np.sqrt(l[0] ** 2 + l[1] ** 2 + l[2] ** 2))
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
