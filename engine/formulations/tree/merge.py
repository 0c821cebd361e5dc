"""The merge kernels: eqs. (3)-(4) of :mod:`.tree` for one merge -- the matrix pass
(``K``, ``Y = K^-1 E``, ``Phi^C = Phi^X - E^T Y``), the bias pass (``r0``, ``y0``,
``b^C``) and the disassembly (``Lambda``, handle forces) -- in a general form for merges
over several joints and in one-joint forms with the block size a compile-time constant
(paper 001 eqs. 26-36; paper 000 eqs. 35-39)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .factor import Factor, null_factor, pchol, pinv_solve, psolve_rows, psolve_vec


# The per-merge functions below that the level loops call are ``inline='always'``:
# they take the layout's tuple of 24 index arrays, and called out of line each call
# cost more than a merge's arithmetic (docs/index3.md, "Timing").  The per-body
# kernels of dca, hdca and index3 are inlined for the same reason.  The matrix and bias
# kernels take the passes' workspace as ``tw`` (:class:`~.layout.TreeWork`), each array
# they write read from it on a line of its own; the disassembly's take its six arrays
# (``passes._passes``); a merge's factor goes to the solves as a :class:`~.factor.Factor`
# (a tuple of references).


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def gphi(Gs, w, r, nr, Phi, blk, out, nd):
    """out[:nr] = G_w[r:r+nr] Phi[blk]  (axpy form over the nd columns; zero entries skipped)."""
    for a in range(nr):
        for d in range(nd):
            out[a, d] = 0.0
        for c in range(nd):
            g = Gs[w, r + a, c]
            if g != 0.0:
                for d in range(nd):
                    out[a, d] += g * Phi[blk, c, d]


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def psolve_cols(f, B, X, base, sgn, Z, nd, w):
    """X[base:base+n, :nd] = sgn K^-1 B[base:base+n, :nd], all nd columns at once, with the
    factor ``f`` (:class:`Factor`; basic solution of the pivoted factor, minimum-norm least
    squares where the rank is below n: :func:`pinv_solve`; ``Z`` is (>= n, nd) scratch,
    ``w`` (>= 2n,) scratch)."""
    L, P, kb, rb, n, rank = f
    if rank < n:
        for d in range(nd):
            for k in range(n):
                w[k] = B[base + P[rb + k], d]
            pinv_solve(L, kb, n, rank, w, np.int64(0), w, n)  # an int64 offset, not a literal: one compiled copy
            for k in range(n):
                X[base + P[rb + k], d] = sgn * w[k]
        return
    for k in range(rank):
        pk = P[rb + k]
        for d in range(nd):
            Z[k, d] = B[base + pk, d]
        for i in range(k):
            lki = L[kb + k * n + i]
            for d in range(nd):
                Z[k, d] -= lki * Z[i, d]
        inv = 1.0 / L[kb + k * n + k]
        for d in range(nd):
            Z[k, d] *= inv
    for k in range(rank - 1, -1, -1):
        for i in range(k + 1, rank):
            lik = L[kb + i * n + k]
            for d in range(nd):
                Z[k, d] -= lik * Z[i, d]
        inv = 1.0 / L[kb + k * n + k]
        for d in range(nd):
            Z[k, d] *= inv
    for k in range(n):
        for d in range(nd):
            X[base + k, d] = 0.0
    for k in range(rank):
        pk = P[rb + k]
        for d in range(nd):
            X[base + pk, d] = sgn * Z[k, d]


@njit(cache=True, nogil=True, inline='always')
def merge_matrices_one(m, ix, tw, eps, sgn, tol, nd):
    """:func:`merge_matrices` for one interface joint (every merge of a chain or tree):
    the same equations in axpy form over the ``nd`` (= Phi.shape[2], a compile-time
    constant of the calling pass: :func:`_passes`) columns, which the compiler unrolls and
    vectorises, and zero entries of G skipped."""
    Phi = tw.Phi
    Kf = tw.Kf
    Kp = tw.Kp
    Kr = tw.Kr
    Ks = tw.Ks
    Y = tw.Y
    E = tw.E
    scr = tw.scr
    G = tw.G
    nb, left, right, node_nh, node_h_start = ix.nb, ix.left, ix.right, ix.node_nh, ix.node_h_start
    node_pair_start, h_side, h_src, if_start = ix.node_pair_start, ix.h_side, ix.h_src, ix.if_start
    if_joint = ix.if_joint
    if_left, if_right, m_K, m_R, m_E = ix.if_left, ix.if_right, ix.m_K, ix.m_R, ix.m_E
    row_adr, rows = ix.row_adr, ix.rows
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    pL = node_pair_start[Ln]
    nR = node_nh[Rn] if Rn >= 0 else 0
    pR = node_pair_start[Rn] if Rn >= 0 else 0
    ii = if_start[m]
    j = if_joint[ii]
    r = row_adr[j]
    nr = rows[j]
    kb = m_K[m]
    rb = m_R[m]
    wl = h_side[sL + if_left[ii]]
    wr = 1 - wl
    hl = if_left[ii]
    hr = if_right[ii]
    T = scr[m, scr.shape[1] - nd * nd:].reshape((nd, nd))  # scratch, no allocation
    # K = sgn (G_l Phi^L_ll G_l^T + G_r Phi^R_rr G_r^T - eps 1)
    for a in range(nr * nr):
        Ks[kb + a] = 0.0
    nside = 2 if Rn >= 0 else 1
    for side in range(nside):
        w = wl if side == 0 else wr
        blk = pL + hl * nL + hl if side == 0 else pR + hr * nR + hr
        gphi(G, w, r, nr, Phi, blk, T, nd)
        for b in range(nr):
            for d in range(nd):
                g = G[w, r + b, d]
                if g != 0.0:
                    for a in range(nr):
                        Ks[kb + a * nr + b] += sgn * g * T[a, d]
    if eps != 0.0:
        for a in range(nr):
            Ks[kb + a * nr + a] -= sgn * eps
    # the rank bound (TreeLayout.cap_ranks) is an exact solve's: a penalised K (eps) is definite
    rank = pchol(Ks, Kf, Kp, kb, rb, nr, tol, Kr[Kr.shape[0] // 2 + m] if eps == 0.0 else nr)
    Kr[m] = rank
    if rank < nr:
        null_factor(Kf, kb, nr, rank)
    fac = Factor(Kf, Kp, kb, rb, nr, rank)
    n_h = node_nh[n]
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(n_h):
        src = h_src[sN + e]
        if src < nL:
            gphi(G, wl, r, nr, Phi, pL + hl * nL + src, T, nd)
        else:
            gphi(G, wr, r, nr, Phi, pR + hr * nR + (src - nL), T, nd)
        base = eb + e * nr
        for a in range(nr):
            for d in range(nd):
                E[base + a, d] = T[a, d]
        psolve_cols(fac, E, Y, base, sgn, T, nd, scr[m])
    pN = node_pair_start[n]
    for e in range(n_h):
        se = h_src[sN + e]
        be = eb + e * nr
        for f in range(e, n_h):
            sf = h_src[sN + f]
            bf = eb + f * nr
            blk = pN + e * n_h + f
            if (se < nL) == (sf < nL):
                src_blk = pL + se * nL + sf if se < nL else pR + (se - nL) * nR + (sf - nL)
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk, c, d] = Phi[src_blk, c, d]
            else:
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk, c, d] = 0.0
            for a in range(nr):
                for c in range(nd):
                    ea = E[be + a, c]
                    if ea != 0.0:
                        for d in range(nd):
                            Phi[blk, c, d] -= ea * Y[bf + a, d]
            if f != e:
                blk2 = pN + f * n_h + e
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk2, d, c] = Phi[blk, c, d]


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def gphi7(G, w, r, a, P, S, o):
    """S[o:o+7] = row r+a of G_w times the 7 x 7 block P, in seven accumulators."""
    t0 = t1 = t2 = t3 = t4 = t5 = t6 = 0.0
    for c in range(7):
        g = G[w, r + a, c]
        t0 += g * P[c, 0]
        t1 += g * P[c, 1]
        t2 += g * P[c, 2]
        t3 += g * P[c, 3]
        t4 += g * P[c, 4]
        t5 += g * P[c, 5]
        t6 += g * P[c, 6]
    S[o], S[o + 1], S[o + 2], S[o + 3], S[o + 4], S[o + 5], S[o + 6] = t0, t1, t2, t3, t4, t5, t6


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def merge_matrices_leaf3(m, ix, tw, eps, sgn, tol):
    """:func:`merge_matrices_one` for 7 x 7 blocks, a joint of three rows (spherical) and a
    merged node whose one handle comes from a leaf child whose ``Phi`` blocks are all the
    same (index-3's ``delta_i``): every merge but the last of a spherical chain assembled
    tips first.  Then ``E = G_leaf delta`` is the product ``K`` takes from that side, and
    with ``K = L L^T``, ``W = L^-1 E``: ``Y = sgn L^-T W``, ``Phi^C = delta - sgn W^T W``.
    The 3 x 3 factor in scalars, the products in a row of ``scr`` (C-contiguous): 2.6 x
    faster than the general kernel (``benchmarks/index3_merge_probe.py``; docs/index3.md,
    "Timing").  Returns False where this does not apply or ``K`` needs a pivot (the
    general kernel then runs and overwrites what this wrote); the same results to
    round-off otherwise (``Kp`` the identity, ``Kr`` 3, as the general kernel's)."""
    Phi = tw.Phi
    Kf = tw.Kf
    Kp = tw.Kp
    Kr = tw.Kr
    Ks = tw.Ks
    Y = tw.Y
    E = tw.E
    scr = tw.scr
    G = tw.G
    nb, left, right, node_nh = ix.nb, ix.left, ix.right, ix.node_nh
    node_h_start, node_pair_start, h_side, h_src = ix.node_h_start, ix.node_pair_start, ix.h_side, ix.h_src
    if_start, if_joint, if_left, if_right = ix.if_start, ix.if_joint, ix.if_left, ix.if_right
    m_K, m_R, m_E, row_adr = ix.m_K, ix.m_R, ix.m_E, ix.row_adr
    rows = ix.rows
    n = nb + m
    ii = if_start[m]
    j = if_joint[ii]
    if node_nh[n] != 1 or rows[j] != 3 or Kr[Kr.shape[0] // 2 + m] < 3:
        return False
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    src = h_src[node_h_start[n]]
    ext_left = src < nL
    if not (Ln < nb if ext_left else 0 <= Rn < nb):
        return False
    r = row_adr[j]
    sL = node_h_start[Ln]
    hl = if_left[ii]
    hr = if_right[ii]
    wl = h_side[sL + hl]
    # X: the leaf child with the external handle; O: the other child (if any)
    if ext_left:
        wx, px, kx, so = wl, node_pair_start[Ln], nL, src
        wo, po = 1 - wl, (node_pair_start[Rn] + hr * node_nh[Rn] + hr) if Rn >= 0 else -1
    else:
        wx, px, kx, so = 1 - wl, node_pair_start[Rn], node_nh[Rn], src - nL
        wo, po = wl, node_pair_start[Ln] + hl * nL + hl
    S = scr[m]  # E = G_X delta at [0, 21), then W; G_O Phi_O at [21, 42)
    delta = Phi[px]
    for a in range(3):
        gphi7(G, wx, r, a, delta, S, 7 * a)
        if po >= 0:
            gphi7(G, wo, r, a, Phi[po], S, 21 + 7 * a)
    kb = m_K[m]
    for a in range(3):  # K = sgn (G_X delta G_X^T + G_O Phi_O G_O^T - eps 1)
        for b in range(a + 1):
            t = 0.0
            for d in range(7):
                t += S[7 * a + d] * G[wx, r + b, d]
            if po >= 0:
                for d in range(7):
                    t += S[21 + 7 * a + d] * G[wo, r + b, d]
            Ks[kb + 3 * a + b] = sgn * t
            Ks[kb + 3 * b + a] = sgn * t
        Ks[kb + 4 * a] -= sgn * eps
    k00, k10, k11, k20, k21, k22 = Ks[kb], Ks[kb + 3], Ks[kb + 4], Ks[kb + 6], Ks[kb + 7], Ks[kb + 8]
    # Cholesky without pivoting, with pchol's test
    thresh = tol * max(k00, k11, k22)
    if max(k00, k11, k22) <= 0.0 or k00 <= thresh:
        return False
    l00 = np.sqrt(k00)
    l10 = k10 / l00
    l20 = k20 / l00
    d1 = k11 - l10 * l10
    if d1 <= thresh:
        return False
    l11 = np.sqrt(d1)
    l21 = (k21 - l20 * l10) / l11
    d2 = k22 - l20 * l20 - l21 * l21
    if d2 <= thresh:
        return False
    l22 = np.sqrt(d2)
    Kf[kb], Kf[kb + 1], Kf[kb + 2] = l00, 0.0, 0.0
    Kf[kb + 3], Kf[kb + 4], Kf[kb + 5] = l10, l11, 0.0
    Kf[kb + 6], Kf[kb + 7], Kf[kb + 8] = l20, l21, l22
    rb = m_R[m]
    Kp[rb], Kp[rb + 1], Kp[rb + 2] = 0, 1, 2
    Kr[m] = 3
    i00, i11, i22 = 1.0 / l00, 1.0 / l11, 1.0 / l22
    eb = m_E[m]
    for d in range(7):
        e0, e1, e2 = S[d], S[7 + d], S[14 + d]
        E[eb, d], E[eb + 1, d], E[eb + 2, d] = e0, e1, e2
        w0 = e0 * i00
        w1 = (e1 - l10 * w0) * i11
        w2 = (e2 - l20 * w0 - l21 * w1) * i22
        S[d], S[7 + d], S[14 + d] = w0, w1, w2
        y2 = w2 * i22
        y1 = (w1 - l21 * y2) * i11
        y0 = (w0 - l10 * y1 - l20 * y2) * i00
        Y[eb, d], Y[eb + 1, d], Y[eb + 2, d] = sgn * y0, sgn * y1, sgn * y2
    src_blk = px + so * kx + so
    out = Phi[node_pair_start[n]]
    for c in range(7):
        w0, w1, w2 = S[c], S[7 + c], S[14 + c]
        for d in range(c, 7):
            v = Phi[src_blk, c, d] - sgn * (w0 * S[d] + w1 * S[7 + d] + w2 * S[14 + d])
            out[c, d] = v
            out[d, c] = v
    return True


@njit(cache=True, nogil=True, _nrt=False)
def merge_matrices(m, ix, tw, eps, sgn, tol):
    """Eqs. (3)-(4) of :mod:`.tree` for merge ``m`` over any number of interface joints:
    ``K``, its factor, ``E``, ``Y = K^-1 E`` and the merged node's blocks ``Phi^C``."""
    Phi = tw.Phi
    Kf = tw.Kf
    Kp = tw.Kp
    Kr = tw.Kr
    Ks = tw.Ks
    Y = tw.Y
    E = tw.E
    scr = tw.scr
    G, sel = tw.G, tw.sel
    nb, left, right, node_nh, node_h_start = ix.nb, ix.left, ix.right, ix.node_nh, ix.node_h_start
    node_pair_start, h_side, h_src, if_start = ix.node_pair_start, ix.h_side, ix.h_src, ix.if_start
    if_joint = ix.if_joint
    if_left, if_right, if_roff, m_nr, m_K = ix.if_left, ix.if_right, ix.if_roff, ix.m_nr, ix.m_K
    m_R, m_E, row_adr, rows = ix.m_R, ix.m_E, ix.row_adr, ix.rows
    nd = Phi.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    pL = node_pair_start[Ln]
    nR = 0
    pR = 0
    if Rn >= 0:
        nR = node_nh[Rn]
        pR = node_pair_start[Rn]
    nr = m_nr[m]
    kb = m_K[m]
    rb = m_R[m]
    i0 = if_start[m]
    i1 = if_start[m + 1]
    # ---- K = sgn (G Phi G^T - eps 1) over both sides: rows of G Phi (in scr[m, :nd]), then G^T
    for a in range(nr * nr):
        Ks[kb + a] = 0.0
    nside = 2 if Rn >= 0 else 1
    for side in range(nside):
        for ii in range(i0, i1):
            j1 = if_joint[ii]
            r1 = row_adr[j1]
            o1 = if_roff[ii]
            # end of j1 held by this side: left holds pred iff h_side == 0
            w1 = h_side[sL + if_left[ii]]
            if side == 1:
                w1 = 1 - w1
            h1 = if_left[ii] if side == 0 else if_right[ii]
            for jj in range(i0, i1):
                j2 = if_joint[jj]
                r2 = row_adr[j2]
                o2 = if_roff[jj]
                w2 = h_side[sL + if_left[jj]]
                if side == 1:
                    w2 = 1 - w2
                h2 = if_left[jj] if side == 0 else if_right[jj]
                blk = pL + h1 * nL + h2 if side == 0 else pR + h1 * nR + h2
                for a in range(rows[j1]):
                    k1 = sel[r1 + a]
                    if k1 >= 0:  # unit row: a signed copy of a row of Phi
                        sg = G[w1, r1 + a, k1]
                        for d in range(nd):
                            scr[m, d] = sg * Phi[blk, k1, d]
                    else:
                        for d in range(nd):
                            t = 0.0
                            for c in range(nd):
                                t += G[w1, r1 + a, c] * Phi[blk, c, d]
                            scr[m, d] = t
                    for b in range(rows[j2]):
                        k2 = sel[r2 + b]
                        if k2 >= 0:
                            t = scr[m, k2] * G[w2, r2 + b, k2]
                        else:
                            t = 0.0
                            for d in range(nd):
                                t += scr[m, d] * G[w2, r2 + b, d]
                        Ks[kb + (o1 + a) * nr + o2 + b] += sgn * t
    if eps != 0.0:
        for a in range(nr):
            Ks[kb + a * nr + a] -= sgn * eps
    # the rank bound (TreeLayout.cap_ranks) is an exact solve's: a penalised K (eps) is definite
    rank = pchol(Ks, Kf, Kp, kb, rb, nr, tol, Kr[Kr.shape[0] // 2 + m] if eps == 0.0 else nr)
    Kr[m] = rank
    if rank < nr:
        null_factor(Kf, kb, nr, rank)
    fac = Factor(Kf, Kp, kb, rb, nr, rank)
    # ---- E_e (rows of G Phi coupling interface constraints to handle e), Y_e = K^-1 E_e
    n_h = node_nh[n]
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(n_h):
        src = h_src[sN + e]
        onleft = src < nL
        for ii in range(i0, i1):
            j1 = if_joint[ii]
            r1 = row_adr[j1]
            o1 = if_roff[ii]
            w1 = h_side[sL + if_left[ii]]
            if onleft:
                blk = pL + if_left[ii] * nL + src
            else:
                w1 = 1 - w1
                blk = pR + if_right[ii] * nR + (src - nL)
            for a in range(rows[j1]):
                row = eb + e * nr + o1 + a
                k1 = sel[r1 + a]
                if k1 >= 0:
                    sg = G[w1, r1 + a, k1]
                    for d in range(nd):
                        E[row, d] = sg * Phi[blk, k1, d]
                else:
                    for d in range(nd):
                        t = 0.0
                        for c in range(nd):
                            t += G[w1, r1 + a, c] * Phi[blk, c, d]
                        E[row, d] = t
        psolve_rows(fac, E, Y, eb + e * nr, nd, sgn, scr, m, nd)
    # ---- Phi^C[e, f] = [same side] Phi^X[e, f] - E_e^T Y_f  (upper blocks, mirrored)
    pN = node_pair_start[n]
    for e in range(n_h):
        se = h_src[sN + e]
        for f in range(e, n_h):
            sf = h_src[sN + f]
            blk = pN + e * n_h + f
            same = (se < nL) == (sf < nL)
            src_blk = 0
            if same:
                if se < nL:
                    src_blk = pL + se * nL + sf
                else:
                    src_blk = pR + (se - nL) * nR + (sf - nL)
            for c in range(nd):
                d0 = c if f == e else 0  # diagonal blocks are symmetric
                for d in range(d0, nd):
                    t = Phi[src_blk, c, d] if same else 0.0
                    for a in range(nr):
                        t -= E[eb + e * nr + a, c] * Y[eb + f * nr + a, d]
                    Phi[blk, c, d] = t
                    if f == e:
                        Phi[blk, d, c] = t
            if f != e:
                blk2 = pN + f * n_h + e
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk2, d, c] = Phi[blk, c, d]


@njit(cache=True, nogil=True, _nrt=False)
def one_joint(m, ix):
    """Indices of a merge with one interface joint (the ``*_one`` kernels): right child
    (-1: none), the left child's handle count, both children's first handle slots, the
    joint's first row and row count, the merge's row base, the pred/succ end the left
    child holds, the left and right interface handle slots, the merged node's first
    handle slot, its E/Y row base and handle count."""
    nb, left, right, node_nh, node_h_start = ix.nb, ix.left, ix.right, ix.node_nh, ix.node_h_start
    h_side = ix.h_side
    if_start, if_joint, if_left, if_right = ix.if_start, ix.if_joint, ix.if_left, ix.if_right
    m_R, m_E, row_adr, rows = ix.m_R, ix.m_E, ix.row_adr, ix.rows
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    sL = node_h_start[Ln]
    sR = node_h_start[Rn] if Rn >= 0 else 0
    ii = if_start[m]
    j = if_joint[ii]
    return (Rn, node_nh[Ln], sL, sR, row_adr[j], rows[j], m_R[m], h_side[sL + if_left[ii]], sL + if_left[ii],
            sR + if_right[ii], node_h_start[n], m_E[m], node_nh[n])


@njit(cache=True, nogil=True, inline='always')
def merge_bias_one(m, ix, tw, g0, sgn, nd):
    """:func:`merge_bias` for one interface joint (axpy form; ``nd`` = bv.shape[1], a
    constant of the calling pass)."""
    bv = tw.bv
    r0 = tw.r0
    y0 = tw.y0
    scr = tw.scr
    G, Kf, Kp, Kr, Y = tw.G, tw.Kf, tw.Kp, tw.Kr, tw.Y
    Rn, nL, sL, sR, r, nr, rb, wl, bl, br, sN, eb, n_h = one_joint(m, ix)
    wr = 1 - wl
    h_src, m_K = ix.h_src, ix.m_K
    for a in range(nr):
        t = g0[r + a]
        for c in range(nd):
            t += G[wl, r + a, c] * bv[bl, c]
        if Rn >= 0:
            for c in range(nd):
                t += G[wr, r + a, c] * bv[br, c]
        r0[rb + a] = t
    # scratch after the first nd entries; bv.shape[1] (= nd, not the literal): the one
    # specialisation of psolve_vec that merge_bias uses too
    psolve_vec(Factor(Kf, Kp, m_K[m], rb, nr, Kr[m]), r0, y0, rb, sgn, scr, m, bv.shape[1])
    for e in range(n_h):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            bv[sN + e, d] = bv[slot, d]
        for a in range(nr):
            ra = r0[rb + a]
            for d in range(nd):
                bv[sN + e, d] -= Y[eb + e * nr + a, d] * ra


@njit(cache=True, nogil=True, inline='always')
def merge_down_one(m, ix, Fh, G, lam, Y, y0, nd):
    """:func:`merge_down` for one interface joint (axpy form; ``nd`` = Fh.shape[1], a
    constant of the calling pass)."""
    Rn, nL, sL, sR, r, nr, rb, wl, sl, sr, sN, eb, n_h = one_joint(m, ix)
    wr = 1 - wl
    h_src = ix.h_src
    for a in range(nr):
        t = y0[rb + a]
        for e in range(n_h):
            for d in range(nd):
                t += Y[eb + e * nr + a, d] * Fh[sN + e, d]
        lam[r + a] = -t
    for e in range(n_h):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            Fh[slot, d] = Fh[sN + e, d]
    for d in range(nd):
        Fh[sl, d] = 0.0
    if Rn >= 0:
        for d in range(nd):
            Fh[sr, d] = 0.0
    for a in range(nr):
        la = lam[r + a]
        for d in range(nd):
            Fh[sl, d] += G[wl, r + a, d] * la
        if Rn >= 0:
            for d in range(nd):
                Fh[sr, d] += G[wr, r + a, d] * la


@njit(cache=True, nogil=True, _nrt=False)
def merge_bias(m, ix, tw, g0, sgn):
    """Eqs. (3)-(4) of :mod:`.tree` for merge ``m`` over any number of interface joints:
    ``r0``, ``y0 = K^-1 r0`` and the merged node's biases ``b^C``."""
    bv = tw.bv
    r0 = tw.r0
    y0 = tw.y0
    scr = tw.scr
    G, sel, Kf, Kp, Kr, Y = tw.G, tw.sel, tw.Kf, tw.Kp, tw.Kr, tw.Y
    nb, left, right, node_nh, node_h_start = ix.nb, ix.left, ix.right, ix.node_nh, ix.node_h_start
    h_side, h_src, if_start, if_joint, if_left = ix.h_side, ix.h_src, ix.if_start, ix.if_joint, ix.if_left
    if_right, if_roff, m_nr, m_K, m_R = ix.if_right, ix.if_roff, ix.m_nr, ix.m_K, ix.m_R
    m_E, row_adr, rows = ix.m_E, ix.row_adr, ix.rows
    nd = bv.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    sR = node_h_start[Rn] if Rn >= 0 else 0
    nr = m_nr[m]
    rb = m_R[m]
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        r = row_adr[j]
        o = if_roff[ii]
        wl = h_side[sL + if_left[ii]]
        wr = 1 - wl
        bl = sL + if_left[ii]
        br = sR + if_right[ii]
        for a in range(rows[j]):
            t = g0[r + a]
            k = sel[r + a]
            if k >= 0:
                t += G[wl, r + a, k] * bv[bl, k]
                if Rn >= 0:
                    t += G[wr, r + a, k] * bv[br, k]
            else:
                for c in range(nd):
                    t += G[wl, r + a, c] * bv[bl, c]
                if Rn >= 0:
                    for c in range(nd):
                        t += G[wr, r + a, c] * bv[br, c]
            r0[rb + o + a] = t
    psolve_vec(Factor(Kf, Kp, m_K[m], rb, nr, Kr[m]), r0, y0, rb, sgn, scr, m, nd)
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(node_nh[n]):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            t = bv[slot, d]
            for a in range(nr):
                t -= Y[eb + e * nr + a, d] * r0[rb + a]
            bv[sN + e, d] = t


@njit(cache=True, nogil=True, _nrt=False)
def merge_down(m, ix, Fh, G, sel, lam, Y, y0):
    """Eq. (3) of :mod:`.tree` for merge ``m`` over any number of interface joints: the
    interface multipliers ``Lambda`` and the children's handle forces."""
    nb, left, right, node_nh, node_h_start = ix.nb, ix.left, ix.right, ix.node_nh, ix.node_h_start
    h_side, h_src, if_start, if_joint, if_left = ix.h_side, ix.h_src, ix.if_start, ix.if_joint, ix.if_left
    if_right, if_roff, m_nr, m_R, m_E = ix.if_right, ix.if_roff, ix.m_nr, ix.m_R, ix.m_E
    row_adr, rows = ix.row_adr, ix.rows
    nd = Fh.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    sR = node_h_start[Rn] if Rn >= 0 else 0
    nr = m_nr[m]
    rb = m_R[m]
    sN = node_h_start[n]
    eb = m_E[m]
    n_h = node_nh[n]
    # Lambda = -(sum_e Y_e F_e + y0)
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        o = if_roff[ii]
        for a in range(rows[j]):
            t = y0[rb + o + a]
            for e in range(n_h):
                for d in range(nd):
                    t += Y[eb + e * nr + o + a, d] * Fh[sN + e, d]
            lam[row_adr[j] + a] = -t
    # external handles pass their forces down
    for e in range(n_h):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            Fh[slot, d] = Fh[sN + e, d]
    # interface handles receive G^T Lambda
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        r = row_adr[j]
        wl = h_side[sL + if_left[ii]]
        wr = 1 - wl
        sl = sL + if_left[ii]
        sr = sR + if_right[ii]
        for d in range(nd):
            Fh[sl, d] = 0.0
            if Rn >= 0:
                Fh[sr, d] = 0.0
        for a in range(rows[j]):
            la = lam[r + a]
            k = sel[r + a]
            if k >= 0:
                Fh[sl, k] += G[wl, r + a, k] * la
                if Rn >= 0:
                    Fh[sr, k] += G[wr, r + a, k] * la
            else:
                for d in range(nd):
                    Fh[sl, d] += G[wl, r + a, d] * la
                if Rn >= 0:
                    for d in range(nd):
                        Fh[sr, d] += G[wr, r + a, d] * la
