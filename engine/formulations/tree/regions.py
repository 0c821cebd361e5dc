"""Articulated-body regions inside the tree passes (docs/derivations.md, "The
articulated-body regions"): a subtree of the spanning tree whose only handles are its
root's joints is assembled by the articulated-body recursion in inertia form instead of
merge by merge -- :func:`region_matrices`, :func:`region_biases`, :func:`region_down`."""

from __future__ import annotations

import numpy as np
from numba import njit


# A region (topology.articulated_regions) is a subtree of the spanning tree whose only
# handle is the joint to its root.  Its bodies obey, about their joint points,
# ``I x = F + W`` (x the handle quantity, F the handle force; a leaf's I = X^T M X and
# W = X^T w for its wrench w at the centre of mass).  The recursion eliminates each
# joint c to parent p with its nv freedoms (x_c = x_p + c + S s, S^T F_c = 0):
#     U = I_c S,  D = S^T U,  I_p += Y^T (I_c - U D^-1 U^T) Y,
#     W_p += Y^T (z - U D^-1 S^T z),  z = W_c - I_c c,
# with Y the shift from P_p to P_c, and hands the merges above the root's relation
# ``x = I^-1 F + I^-1 W``; on the way down  s = D^-1 (S^T z - U^T Y x_p),
# x_c = Y x_p + c + S s,  F_c = I_c x_c - W_c  (docs/derivations.md, "The
# articulated-body regions").  ``c = -G_succ^T g0`` is the joint's constant term: its
# part along S does not matter, and the constraint rows carry the rest.


@njit(cache=True, nogil=True, inline='always')
def _ax(S, c, q, va, nvj, k):
    """Entry k of freedom q of joint c in the region basis: a spherical joint's unit
    angular axes (its S spans the same space, with three nonzero entries per column),
    else the joint's motion subspace column."""
    if nvj[c] == 3:
        return 1.0 if k == 3 + q else 0.0
    return S[va[c] + q, k]


@njit(cache=True, nogil=True, inline='always')
def _inv_small(D, n):
    """In-place inverse of the symmetric positive definite n x n (n <= 3) D[:n, :n]."""
    if n == 1:
        D[0, 0] = 1.0 / D[0, 0]
    elif n == 2:
        a, b, d = D[0, 0], D[0, 1], D[1, 1]
        det = a * d - b * b
        D[0, 0] = d / det
        D[1, 1] = a / det
        D[0, 1] = -b / det
        D[1, 0] = -b / det
    elif n == 3:
        a, b, c = D[0, 0], D[0, 1], D[0, 2]
        e, f, i = D[1, 1], D[1, 2], D[2, 2]
        A = e * i - f * f
        B = c * f - b * i
        C = b * f - c * e
        E = a * i - c * c
        F = b * c - a * f
        II = a * e - b * b
        det = a * A + b * B + c * C
        D[0, 0] = A / det
        D[0, 1] = B / det
        D[0, 2] = C / det
        D[1, 0] = B / det
        D[1, 1] = E / det
        D[1, 2] = F / det
        D[2, 0] = C / det
        D[2, 1] = F / det
        D[2, 2] = II / det


@njit(cache=True, nogil=True, inline='always')
def _chol_solve6(L, b, x):
    """x = (L L^T)^-1 b for the 6 x 6 lower factor L (x may alias b)."""
    for i in range(6):
        t = b[i]
        for k in range(i):
            t -= L[i, k] * x[k]
        x[i] = t / L[i, i]
    for i in range(5, -1, -1):
        t = x[i]
        for k in range(i + 1, 6):
            t -= L[k, i] * x[k]
        x[i] = t / L[i, i]


@njit(cache=True, nogil=True, inline='always')
def _region_step(k, hy):
    """Entry k of the regions' body list: the body c, its parent p, its joint's freedom
    count and first freedom, and d = P_c - P_p (the shift from the parent's joint point)."""
    P, reg_body, parent, va, nvj = hy.P, hy.reg_body, hy.parent, hy.va, hy.nvj
    c = reg_body[k]
    p = parent[c]
    return c, p, nvj[c], va[c], P[c, 0] - P[p, 0], P[c, 1] - P[p, 1], P[c, 2] - P[p, 2]


@njit(cache=True, nogil=True, inline='always')
def _grounded(rg, ix, hy):
    """Region ``rg`` takes in its root's joint to ground: its head merge has no handle."""
    return ix.node_nh[ix.nb + hy.reg_head[rg]] == 0


@njit(cache=True, nogil=True, inline='always')
def _into_parent(T, Ip):
    """``I_p += T`` for a child's articulated inertia ``T`` already shifted to the
    parent's joint point, from its upper triangle of blocks (the lower left block is the
    upper right's transpose)."""
    for a in range(3):
        for b in range(3):
            Ip[a, b] += T[a, b]
            Ip[a, 3 + b] += T[a, 3 + b]
            Ip[3 + a, b] += T[b, 3 + a]
            Ip[3 + a, 3 + b] += T[3 + a, 3 + b]


@njit(cache=True, nogil=True, inline='always')
def _matrix_step_ball(p, v0, d0, d1, d2, Ic, D, U, IA, T):
    """:func:`matrix_step` for a spherical joint, whose freedoms in the region basis are
    the unit angular axes: ``U`` = the angular columns of ``I``, ``D`` = its angular
    block, and of ``I - U D^-1 U^T`` only the linear block ``A`` remains (the joint passes
    no moment), which goes to the parent as ``[[A, -A ~d], [~d A, -~d A ~d]]``: exactly,
    where the subtraction would leave round-off of the size eps |I| cond(D) that a
    slender parent's small axial inertia would see magnified.  The same sums in the same
    order as the general step's for these entries, without the products by S's zeros
    and ones."""
    for q in range(3):  # U = I S: I's angular columns
        for a in range(6):
            U[v0 + q, a] = Ic[a, 3 + q]
    for q in range(3):  # D = S^T U: I's angular block
        for r in range(3):
            D[q, r] = Ic[3 + q, 3 + r] if q <= r else Ic[3 + r, 3 + q]
    _inv_small(D, 3)
    if p < 0:  # a grounded region's root: its parent, ground, takes nothing
        return p
    for a in range(3):  # T = I - U D^-1 U^T, linear block
        w0 = 0.0
        w1 = 0.0
        w2 = 0.0
        for q in range(3):
            u = U[v0 + q, a]
            w0 += u * D[q, 0]
            w1 += u * D[q, 1]
            w2 += u * D[q, 2]
        for b in range(a, 3):
            t = Ic[a, b]
            t -= w0 * U[v0, b]
            t -= w1 * U[v0 + 1, b]
            t -= w2 * U[v0 + 2, b]
            T[a, b] = t
            T[b, a] = t
    for r in range(3):  # B12 = -A ~d, row r: -(row r of A) x d
        m0, m1, m2 = T[r, 0], T[r, 1], T[r, 2]
        T[r, 3] = 0.0 - (m1 * d2 - m2 * d1)
        T[r, 4] = 0.0 - (m2 * d0 - m0 * d2)
        T[r, 5] = 0.0 - (m0 * d1 - m1 * d0)
    for col in range(3):  # A22 = ~d B12, column by column
        b0, b1, b2 = T[0, 3 + col], T[1, 3 + col], T[2, 3 + col]
        T[3, 3 + col] = 0.0 + (d1 * b2 - d2 * b1)
        T[4, 3 + col] = 0.0 + (d2 * b0 - d0 * b2)
        T[5, 3 + col] = 0.0 + (d0 * b1 - d1 * b0)
    _into_parent(T, IA[p])
    return p


@njit(cache=True, nogil=True, inline='always')
def _matrix_step_one(p, v0, d0, d1, d2, s, Ic, D, U, IA, T):
    """:func:`matrix_step` for a joint of one freedom (revolute, prismatic) with motion
    subspace column ``s``: ``U = I s``, ``D = s^T U`` and ``I - U D^-1 U^T`` with ``s``'s
    six entries in registers, where the general step reads each through :func:`_ax` and a
    branch.  The products by ``s``'s zero entries add exact zeros, so the sums equal the
    general step's term by term -- the same result bit for bit."""
    s0, s1, s2, s3, s4, s5 = s[0], s[1], s[2], s[3], s[4], s[5]
    for a in range(6):  # U = I s
        U[v0, a] = (((((0.0 + Ic[a, 0] * s0) + Ic[a, 1] * s1) + Ic[a, 2] * s2) + Ic[a, 3] * s3) + Ic[a, 4] * s4) \
            + Ic[a, 5] * s5
    D[0, 0] = 1.0 / (((((((0.0 + s0 * U[v0, 0]) + s1 * U[v0, 1]) + s2 * U[v0, 2]) + s3 * U[v0, 3])
                       + s4 * U[v0, 4]) + s5 * U[v0, 5]))
    if p < 0:  # a grounded region's root: its parent, ground, takes nothing
        return p
    dinv = D[0, 0]
    for a in range(6):  # T = I - U D^-1 U^T
        w0 = U[v0, a] * dinv
        for b in range(a, 6):
            t = Ic[a, b] - w0 * U[v0, b]
            T[a, b] = t
            T[b, a] = t
    _shift_into_parent(T, d0, d1, d2, IA[p])
    return p


@njit(cache=True, nogil=True, inline='always')
def _shift_into_parent(T, d0, d1, d2, Ip):
    """``I_p += Y^T T Y`` for the shift ``d = P_c - P_p``:
    ``[[A11, B12], [B12^T, A22 - A21 ~d + ~d B12]]``, ``B12 = A12 - A11 ~d`` (``T`` is
    overwritten)."""
    for r in range(3):
        # A21 ~d, row r: (row r of A21) x d, before B12 overwrites A12 (A21 = T[3:, :3] stays)
        g0_ = T[3 + r, 1] * d2 - T[3 + r, 2] * d1
        g1_ = T[3 + r, 2] * d0 - T[3 + r, 0] * d2
        g2_ = T[3 + r, 0] * d1 - T[3 + r, 1] * d0
        T[3 + r, 3] -= g0_
        T[3 + r, 4] -= g1_
        T[3 + r, 5] -= g2_
    for r in range(3):
        m0, m1, m2 = T[r, 0], T[r, 1], T[r, 2]
        T[r, 3] -= m1 * d2 - m2 * d1
        T[r, 4] -= m2 * d0 - m0 * d2
        T[r, 5] -= m0 * d1 - m1 * d0
    for col in range(3):  # + ~d B12, column by column
        b0, b1, b2 = T[0, 3 + col], T[1, 3 + col], T[2, 3 + col]
        T[3, 3 + col] += d1 * b2 - d2 * b1
        T[4, 3 + col] += d2 * b0 - d0 * b2
        T[5, 3 + col] += d0 * b1 - d1 * b0
    _into_parent(T, Ip)


@njit(cache=True, nogil=True, inline='always')
def matrix_step(k, T, hy):
    """Step k of a region's matrix pass (:func:`region_matrices`): body c's ``U``,
    ``D^-1`` and its articulated inertia taken into its parent's (``T``: 6 x 6 scratch).
    Returns the parent (-1: a grounded region's root, the pass's last step)."""
    S, IA, U, Dinv, va, nvj = hy.S, hy.IA, hy.U, hy.Dinv, hy.va, hy.nvj
    c, p, n, v0, d0, d1, d2 = _region_step(k, hy)
    Ic = IA[c]
    D = Dinv[c]
    if n == 3:
        return _matrix_step_ball(p, v0, d0, d1, d2, Ic, D, U, IA, T)
    if n == 1:
        return _matrix_step_one(p, v0, d0, d1, d2, S[va[c]], Ic, D, U, IA, T)
    for q in range(n):  # U = I S
        for a in range(6):
            t = 0.0
            for b in range(6):
                sb = _ax(S, c, q, va, nvj, b)
                if sb != 0.0:
                    t += Ic[a, b] * sb
            U[v0 + q, a] = t
    for q in range(n):  # D = S^T U
        for r in range(q, n):
            t = 0.0
            for b in range(6):
                sb = _ax(S, c, q, va, nvj, b)
                if sb != 0.0:
                    t += sb * U[v0 + r, b]
            D[q, r] = t
            D[r, q] = t
    _inv_small(D, n)
    if p < 0:  # a grounded region's root: its parent, ground, takes nothing
        return p
    for a in range(6):  # T = I - U D^-1 U^T
        w0 = 0.0
        w1 = 0.0
        w2 = 0.0
        for q in range(n):
            u = U[v0 + q, a]
            w0 += u * D[q, 0]
            w1 += u * D[q, 1]
            w2 += u * D[q, 2]
        for b in range(a, 6):
            t = Ic[a, b]
            if n > 0:
                t -= w0 * U[v0, b]
            if n > 1:
                t -= w1 * U[v0 + 1, b]
            if n > 2:
                t -= w2 * U[v0 + 2, b]
            T[a, b] = t
            T[b, a] = t
    _shift_into_parent(T, d0, d1, d2, IA[p])  # I_p += Y^T T Y, d = P_c - P_p
    return p


@njit(cache=True, nogil=True, _nrt=False)
def region_matrices(rg, ix, Phi, hy):
    """Matrix pass of region ``rg``: articulated inertias tips first, then the head
    node's ``Phi`` = the inverse of the root's (factor kept in ``LA[rg]``); a grounded
    region (its head has no handle) ends with its root joint's ``D^-1`` instead."""
    nb, node_pair_start = ix.nb, ix.node_pair_start
    IA, LA = hy.IA, hy.LA
    reg_start, reg_body, reg_head = hy.reg_start, hy.reg_body, hy.reg_head
    T = LA[rg]  # scratch until the root's factor goes there
    k0 = reg_start[rg]
    k1 = reg_start[rg + 1]
    grounded = _grounded(rg, ix, hy)
    for k in range(k0, k1 if grounded else k1 - 1):
        if matrix_step(k, T, hy) < 0:
            break
    if grounded:
        return
    root = reg_body[k1 - 1]
    L = LA[rg]
    A = IA[root]
    for i in range(6):  # Cholesky of the root's articulated inertia
        for j in range(i + 1):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            if i == j:
                L[i, i] = np.sqrt(t)
            else:
                L[i, j] = t / L[j, j]
        for j in range(i + 1, 6):
            L[i, j] = 0.0
    blk = node_pair_start[nb + reg_head[rg]]
    for col in range(6):  # Phi = I^-1, column by column
        for i in range(6):
            Phi[blk, i, col] = 1.0 if i == col else 0.0
        _chol_solve6(L, Phi[blk, :, col], Phi[blk, :, col])


@njit(cache=True, nogil=True, inline='always')
def bias_step(k, row_adr, rows, G, g0, hy):
    """Step k of a region's bias pass (:func:`region_biases`): body c's ``S^T z`` and its
    bias wrench taken into its parent's.  Returns the parent (-1: a grounded region's
    root, the pass's last step)."""
    S, IA, W, U, Dinv, sz, cperp, xa = hy.S, hy.IA, hy.W, hy.U, hy.Dinv, hy.sz, hy.cperp, hy.xa
    va, nvj, unit_first = hy.va, hy.nvj, hy.unit_first
    c, p, n, v0, d0, d1, d2 = _region_step(k, hy)
    cp = cperp[c]
    z = xa[c]  # scratch here: z = W_c - I_c c
    Ic = IA[c]
    r0_, r1_ = row_adr[c], row_adr[c] + rows[c]
    if unit_first[c]:  # rows e_0, e_1, e_2, then angular ones: the sums below without their zeros
        cp[0] = 0.0 - g0[r0_]
        cp[1] = 0.0 - g0[r0_ + 1]
        cp[2] = 0.0 - g0[r0_ + 2]
        cp[3] = 0.0
        cp[4] = 0.0
        cp[5] = 0.0
        for rr in range(r0_ + 3, r1_):
            gg = g0[rr]
            if gg != 0.0:
                cp[3] -= G[1, rr, 3] * gg
                cp[4] -= G[1, rr, 4] * gg
                cp[5] -= G[1, rr, 5] * gg
    else:
        for a in range(6):
            cp[a] = 0.0
        for rr in range(r0_, r1_):
            gg = g0[rr]
            if gg != 0.0:
                for a in range(6):
                    cp[a] -= G[1, rr, a] * gg
    ball = n == 3  # S: the unit angular axes (_ax), products by its zeros and ones skipped
    if ball and unit_first[c]:  # its three rows the unit ones: c's angular half is zero
        for a in range(6):
            z[a] = ((W[c, a] - Ic[a, 0] * cp[0]) - Ic[a, 1] * cp[1]) - Ic[a, 2] * cp[2]
    else:
        for a in range(6):
            t = W[c, a]
            for b in range(6):
                t -= Ic[a, b] * cp[b]
            z[a] = t
    for q in range(n):
        if ball:
            sz[v0 + q] = 0.0 + z[3 + q]
            continue
        t = 0.0
        for b in range(6):
            sb = _ax(S, c, q, va, nvj, b)
            if sb != 0.0:
                t += sb * z[b]
        sz[v0 + q] = t
    if p < 0:  # a grounded region's root
        return p
    D = Dinv[c]
    for q in range(n):  # z -= U D^-1 S^T z
        t = 0.0
        for r in range(n):
            t += D[q, r] * sz[v0 + r]
        for a in range(3 if ball else 6):  # a spherical joint's angular part is set to zero below
            z[a] -= U[v0 + q, a] * t
    if ball:  # no moment through a spherical joint (as in region_matrices)
        z[3] = 0.0
        z[4] = 0.0
        z[5] = 0.0
    W[p, 0] += z[0]
    W[p, 1] += z[1]
    W[p, 2] += z[2]
    W[p, 3] += z[3] + d1 * z[2] - d2 * z[1]
    W[p, 4] += z[4] + d2 * z[0] - d0 * z[2]
    W[p, 5] += z[5] + d0 * z[1] - d1 * z[0]
    return p


@njit(cache=True, nogil=True, _nrt=False)
def region_biases(rg, ix, bv, G, g0, hy):
    """Bias pass of region ``rg``: bias wrenches tips first (the leaves set each body's
    own), then the head node's ``b = I^-1 W`` of the root (a grounded region: its root
    joint's ``S^T z`` instead)."""
    nb, node_h_start, row_adr, rows = ix.nb, ix.node_h_start, ix.row_adr, ix.rows
    W, LA = hy.W, hy.LA
    reg_start, reg_body, reg_head = hy.reg_start, hy.reg_body, hy.reg_head
    k0 = reg_start[rg]
    k1 = reg_start[rg + 1]
    grounded = _grounded(rg, ix, hy)
    for k in range(k0, k1 if grounded else k1 - 1):
        if bias_step(k, row_adr, rows, G, g0, hy) < 0:
            break
    if not grounded:
        _chol_solve6(LA[rg], W[reg_body[k1 - 1]], bv[node_h_start[nb + reg_head[rg]]])


@njit(cache=True, nogil=True, inline='always')
def down_step(k, row_adr, rows, Fh, G, lam, hy, forces):
    """Step k of a region's disassembly (:func:`region_down`), its parent's done: body
    c's handle quantity ``x_c``; and if ``forces``, its joint's force and multipliers."""
    S, IA, W, U, Dinv, sz, cperp, xa = hy.S, hy.IA, hy.W, hy.U, hy.Dinv, hy.sz, hy.cperp, hy.xa
    slot_in, slot_out, va, nvj, unit_first = hy.slot_in, hy.slot_out, hy.va, hy.nvj, hy.unit_first
    c, p, n, v0, d0, d1, d2 = _region_step(k, hy)
    xc = xa[c]
    if p >= 0:  # x_p shifted to P_c: [a + alpha x d; alpha]
        xp = xa[p]
        xc[0] = xp[0] + xp[4] * d2 - xp[5] * d1
        xc[1] = xp[1] + xp[5] * d0 - xp[3] * d2
        xc[2] = xp[2] + xp[3] * d1 - xp[4] * d0
        xc[3] = xp[3]
        xc[4] = xp[4]
        xc[5] = xp[5]
    else:  # a grounded region's root: ground at rest
        for a in range(6):
            xc[a] = 0.0
    e0 = 0.0
    e1 = 0.0
    e2 = 0.0
    for q in range(n):  # e = S^T z - U^T x
        t = sz[v0 + q]
        for a in range(6):
            t -= U[v0 + q, a] * xc[a]
        if q == 0:
            e0 = t
        elif q == 1:
            e1 = t
        else:
            e2 = t
    D = Dinv[c]
    for a in range(6):
        xc[a] += cperp[c, a]
    for q in range(n):  # x_c += S D^-1 e
        sq = D[q, 0] * e0
        if n > 1:
            sq += D[q, 1] * e1
        if n > 2:
            sq += D[q, 2] * e2
        for b in range(6):
            sb = _ax(S, c, q, va, nvj, b)
            if sb != 0.0:
                xc[b] += sb * sq
    if not forces:
        return
    Ic = IA[c]
    si = slot_in[c]
    so = slot_out[c]
    for a in range(6):  # F_c, in the body's own handle slot for now
        t = -W[c, a]
        for b in range(6):
            t += Ic[a, b] * xc[b]
        Fh[si, a] = t
    # the multipliers, and F_c = G_succ^T lambda: the joint's force exactly in its
    # constraint space (no moment through a spherical joint, none about a hinge's axis),
    # where I_c x_c - W_c has round-off along S that a slender body's small inertia
    # about its axis would turn into a large error in its acceleration
    r0_, r1_ = row_adr[c], row_adr[c] + rows[c]
    if unit_first[c]:  # rows e_0, e_1, e_2, then angular ones: the sums below without their zeros
        f3, f4, f5 = Fh[si, 3], Fh[si, 4], Fh[si, 5]
        for a in range(3):
            lam[r0_ + a] = 0.0 + Fh[si, a]
            Fh[si, a] = 0.0 + lam[r0_ + a]
        m3 = 0.0
        m4 = 0.0
        m5 = 0.0
        for rr in range(r0_ + 3, r1_):
            t = ((0.0 + G[1, rr, 3] * f3) + G[1, rr, 4] * f4) + G[1, rr, 5] * f5
            lam[rr] = t
            m3 += G[1, rr, 3] * t
            m4 += G[1, rr, 4] * t
            m5 += G[1, rr, 5] * t
        Fh[si, 3] = m3
        Fh[si, 4] = m4
        Fh[si, 5] = m5
    else:
        for rr in range(r0_, r1_):
            t = 0.0
            for a in range(6):
                t += G[1, rr, a] * Fh[si, a]
            lam[rr] = t
        for a in range(6):
            Fh[si, a] = 0.0
        for rr in range(r0_, r1_):
            t = lam[rr]
            for a in range(6):
                Fh[si, a] += G[1, rr, a] * t
    if so >= 0:  # on the parent's handle (none on ground)
        for a in range(6):
            Fh[so, a] = -Fh[si, a]


@njit(cache=True, nogil=True, _nrt=False)
def region_down(rg, ix, Fh, G, lam, hy, forces):
    """Disassembly of region ``rg`` from its handle force: root first, each body's handle
    quantity, and if ``forces`` its joint's force ``F_c`` (on both handles) and multipliers
    ``G_succ F_c``.  The region's bodies' accelerations come from the handle quantities
    alone (``tree_kernels.region_acceleration``): only a joint force that leaves the region -- a
    root's on a parent outside it -- and the multipliers need ``forces``.  A grounded
    region starts from ground at rest with its root's joint."""
    nb, node_h_start, row_adr, rows = ix.nb, ix.node_h_start, ix.row_adr, ix.rows
    W, xa, LA = hy.W, hy.xa, hy.LA
    reg_start, reg_body, reg_head, slot_in = hy.reg_start, hy.reg_body, hy.reg_head, hy.slot_in
    k0 = reg_start[rg]
    k1 = reg_start[rg + 1]
    grounded = _grounded(rg, ix, hy)
    if not grounded:
        root = reg_body[k1 - 1]
        sN = node_h_start[nb + reg_head[rg]]
        xr = xa[root]
        for a in range(6):
            Fh[slot_in[root], a] = Fh[sN, a]
            xr[a] = Fh[sN, a] + W[root, a]
        _chol_solve6(LA[rg], xr, xr)
    for k in range(k1 - 1 if grounded else k1 - 2, k0 - 1, -1):
        down_step(k, row_adr, rows, Fh, G, lam, hy, forces)
