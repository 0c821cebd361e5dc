"""The divide-and-conquer machinery shared by ``dca``, ``hdca`` and ``index3``.

Every node of the binary assembly tree (:class:`~engine.topology.AssemblyTree`)
is a set of bodies with *handles* -- the joints with one end inside it.  Each
formulation brings, per node, the linear relation between the forces applied
at its handles and a handle quantity ``x`` (spatial acceleration for DCA,
spatial velocity for HDCA, position increment for index-3):

    x_h = sum_k Phi[h, k] F_k + b_h                                   (1)

with ``nd x nd`` blocks (``nd`` = 6, or 7 for Euler-parameter coordinates),
and, per joint ``j``, its constraint rows on both ends

    G_pred,j x_pred + G_succ,j x_succ + g0_j = eps * Lambda_j,        (2)
    F on pred = G_pred,j^T Lambda_j,   F on succ = G_succ,j^T Lambda_j.

Merging children A and B over their shared (interface) joints eliminates the
interface multipliers:  with ``E_e`` the rows of ``G Phi`` coupling interface
constraints to external handle ``e`` and

    K = sum_sides G Phi G^T - eps 1,     r0 = sum_sides G b + g0,
    Y_e = K^-1 E_e,   y0 = K^-1 r0,
    Lambda = -(sum_e Y_e F_e + y0)                                    (3)

the merged node obeys (1) with

    Phi^C[e, f] = [e, f on one side] Phi^X[e, f] - E_e^T Y_f,   b^C_e = b^X_e - Y_e^T r0.   (4)

For DCA/HDCA these are Featherstone's formulas (paper 001 eqs. 26-36);
for index-3 with ``Phi = delta`` and ``eps = 1/alpha`` they are paper 000's
eqs. (35)-(39) (``C = -K^-1``).  ``K`` is factorised by Cholesky with diagonal
pivoting: dependent rows (redundant closure equations) show as vanishing
pivots and get zero multipliers -- a valid solution, since a force in the null
space of ``G Phi G^T`` moves nothing (docs/derivations.md, "DCA").

The matrix pass (``Phi^C``, ``K``, ``Y``) and the bias pass (``r0``, ``y0``,
``b^C``) are separate kernels: index-3's modified Newton iterations and
projections rerun only the bias pass.  Level ``l``'s merges are independent, so
each pass runs one ``prange`` per level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .. import config
from ..model import Model
from ..topology import AssemblyTree

#: levels with fewer merges than this run on one thread (no parallel-region launch)
PARALLEL_MIN_MERGES = 8


@dataclass(eq=False)
class TreeLayout:
    """Flat index arrays (``ix``) and workspace (``ws``) of one tree solve."""

    nd: int
    ix: tuple
    n_rows: int  # total constraint rows (all joints)
    tree: AssemblyTree
    # workspace, grouped by pass
    Phi: np.ndarray  # (n_pairs, nd, nd) node blocks, filled by the leaf kernel + matrix pass
    bv: np.ndarray  # (n_slots, nd) node biases, leaf kernel + bias pass
    Fh: np.ndarray  # (n_slots, nd) handle forces, disassembly
    GA: np.ndarray  # (n_rows, nd) constraint rows on the pred end, formulation
    GB: np.ndarray  # (n_rows, nd) constraint rows on the succ end, formulation
    g0: np.ndarray  # (n_rows,) constant term of each constraint row, formulation
    lam: np.ndarray  # (n_rows,) multipliers, disassembly
    Kf: np.ndarray  # (sum nr^2,) pivoted Cholesky factor of each merge's K, matrix pass
    Kp: np.ndarray  # (sum nr,) its pivot order
    Kr: np.ndarray  # (nm,) its rank
    Ks: np.ndarray  # (sum nr^2,) scratch for the factorisation
    Y: np.ndarray  # (sum ne*nr, nd) K^-1 E_e per external handle, matrix pass
    E: np.ndarray  # (sum ne*nr, nd) E_e, matrix pass
    r0: np.ndarray  # (sum nr,) bias pass
    y0: np.ndarray  # (sum nr,) K^-1 r0, bias pass

    @property
    def arrays(self):
        return (self.Phi, self.bv, self.Fh, self.GA, self.GB, self.g0, self.lam, self.Kf, self.Kp,
                self.Kr, self.Ks, self.Y, self.E, self.r0, self.y0)


def build_layout(model: Model, tree: AssemblyTree, nd: int, rows_per_joint: np.ndarray) -> TreeLayout:
    """Index arrays for ``tree`` with ``rows_per_joint[j]`` constraint rows per joint."""
    nb, nm = tree.nb, tree.n_merges
    rows = np.asarray(rows_per_joint, dtype=np.int64)
    row_adr = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    n_rows = int(rows.sum())
    m_nr = np.zeros(nm, dtype=np.int64)
    if_roff = np.zeros(len(tree.if_joint), dtype=np.int64)
    for m in range(nm):
        off = 0
        for ii in range(tree.if_start[m], tree.if_start[m + 1]):
            if_roff[ii] = off
            off += rows[tree.if_joint[ii]]
        m_nr[m] = off
    node_of = nb + np.arange(nm, dtype=np.int64)
    ne = tree.node_nh[node_of] if nm else np.zeros(0, dtype=np.int64)
    m_K = np.concatenate([[0], np.cumsum(m_nr**2)[:-1]]).astype(np.int64) if nm else np.zeros(0, np.int64)
    m_R = np.concatenate([[0], np.cumsum(m_nr)[:-1]]).astype(np.int64) if nm else np.zeros(0, np.int64)
    m_E = np.concatenate([[0], np.cumsum(ne * m_nr)[:-1]]).astype(np.int64) if nm else np.zeros(0, np.int64)
    nK = int((m_nr**2).sum())
    nR = int(m_nr.sum())
    nE = int((ne * m_nr).sum())
    ix = (
        np.int64(nb), tree.left, tree.right, tree.level_start, tree.node_nh, tree.node_h_start,
        tree.node_pair_start, tree.h_joint, tree.h_side, tree.h_src, tree.if_start, tree.if_joint,
        tree.if_left, tree.if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows,
    )
    return TreeLayout(
        nd=nd, ix=ix, n_rows=n_rows, tree=tree,
        Phi=np.zeros((tree.n_pairs, nd, nd)), bv=np.zeros((tree.n_slots, nd)),
        Fh=np.zeros((tree.n_slots, nd)), GA=np.zeros((n_rows, nd)), GB=np.zeros((n_rows, nd)),
        g0=np.zeros(n_rows), lam=np.zeros(n_rows), Kf=np.zeros(nK), Kp=np.zeros(nR, dtype=np.int64),
        Kr=np.zeros(nm, dtype=np.int64), Ks=np.zeros(nK), Y=np.zeros((nE, nd)), E=np.zeros((nE, nd)),
        r0=np.zeros(nR), y0=np.zeros(nR),
    )


# ------------------------------------------------------------------ small algebra


@njit(cache=True)
def _pchol(W, L, piv, n, tol):
    """Pivoted Cholesky of the symmetric positive semi-definite ``W`` (n x n, flat,
    overwritten): ``W[piv][:, piv] = L L^T`` on the leading ``rank`` rows.

    Stops when the largest remaining diagonal is below ``tol`` times the largest
    initial one; returns the rank.  ``L`` (n x n flat) receives the factor.
    """
    for k in range(n):
        piv[k] = k
    for k in range(n * n):
        L[k] = 0.0
    dmax0 = 0.0
    for k in range(n):
        if W[k * n + k] > dmax0:
            dmax0 = W[k * n + k]
    if dmax0 <= 0.0:
        return 0
    thresh = tol * dmax0
    rank = 0
    for k in range(n):
        p = k
        dmax = W[k * n + k]
        for i in range(k + 1, n):
            if W[i * n + i] > dmax:
                dmax = W[i * n + i]
                p = i
        if dmax <= thresh:
            break
        if p != k:
            # symmetric swap of rows/columns k and p in W, rows in L, entries in piv
            for i in range(n):
                t = W[k * n + i]
                W[k * n + i] = W[p * n + i]
                W[p * n + i] = t
            for i in range(n):
                t = W[i * n + k]
                W[i * n + k] = W[i * n + p]
                W[i * n + p] = t
            for i in range(k):
                t = L[k * n + i]
                L[k * n + i] = L[p * n + i]
                L[p * n + i] = t
            t2 = piv[k]
            piv[k] = piv[p]
            piv[p] = t2
        d = np.sqrt(W[k * n + k])
        L[k * n + k] = d
        for i in range(k + 1, n):
            L[i * n + k] = W[i * n + k] / d
        for i in range(k + 1, n):
            lik = L[i * n + k]
            if lik != 0.0:
                for j in range(k + 1, i + 1):
                    W[i * n + j] -= lik * L[j * n + k]
                    W[j * n + i] = W[i * n + j]
        rank += 1
    return rank


@njit(cache=True)
def _psolve(L, piv, n, rank, b, x, tmp):
    """Basic solution of K x = b from :func:`_pchol` (dependent components zero)."""
    for k in range(rank):
        s = b[piv[k]]
        for i in range(k):
            s -= L[k * n + i] * tmp[i]
        tmp[k] = s / L[k * n + k]
    for k in range(rank - 1, -1, -1):
        s = tmp[k]
        for i in range(k + 1, rank):
            s -= L[i * n + k] * tmp[i]
        tmp[k] = s / L[k * n + k]
    for k in range(n):
        x[k] = 0.0
    for k in range(rank):
        x[piv[k]] = tmp[k]


# ----------------------------------------------------------------- merge kernels


@njit(cache=True)
def _side_rows(GA, GB, pred_side, r):
    """Constraint rows acting on the node that holds the given end of a joint."""
    if pred_side:
        return GA[r]
    return GB[r]


@njit(cache=True)
def _merge_matrices(m, ix, Phi, GA, GB, Kf, Kp, Kr, Ks, Y, E, eps, sgn, tol):
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows = ix
    nd = Phi.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    pL = node_pair_start[Ln]
    nR = 0
    sR = 0
    pR = 0
    if Rn >= 0:
        nR = node_nh[Rn]
        sR = node_h_start[Rn]
        pR = node_pair_start[Rn]
    nr = m_nr[m]
    kb = m_K[m]
    i0 = if_start[m]
    i1 = if_start[m + 1]
    # ---- K = G Phi G^T (both sides) - eps 1, scaled by sgn to be positive semi-definite
    for a in range(nr * nr):
        Ks[kb + a] = 0.0
    for ii in range(i0, i1):
        j1 = if_joint[ii]
        r1 = row_adr[j1]
        o1 = if_roff[ii]
        lp1 = h_side[sL + if_left[ii]] == 0  # left node holds the pred end of j1
        for jj in range(i0, i1):
            j2 = if_joint[jj]
            r2 = row_adr[j2]
            o2 = if_roff[jj]
            lp2 = h_side[sL + if_left[jj]] == 0
            # left side
            blk = pL + if_left[ii] * nL + if_left[jj]
            for a in range(rows[j1]):
                g1 = _side_rows(GA, GB, lp1, r1 + a)
                for b in range(rows[j2]):
                    g2 = _side_rows(GA, GB, lp2, r2 + b)
                    s = 0.0
                    for c in range(nd):
                        t = 0.0
                        for d in range(nd):
                            t += Phi[blk, c, d] * g2[d]
                        s += g1[c] * t
                    Ks[kb + (o1 + a) * nr + o2 + b] += sgn * s
            if Rn >= 0:
                blk = pR + if_right[ii] * nR + if_right[jj]
                for a in range(rows[j1]):
                    g1 = _side_rows(GA, GB, not lp1, r1 + a)
                    for b in range(rows[j2]):
                        g2 = _side_rows(GA, GB, not lp2, r2 + b)
                        s = 0.0
                        for c in range(nd):
                            t = 0.0
                            for d in range(nd):
                                t += Phi[blk, c, d] * g2[d]
                            s += g1[c] * t
                        Ks[kb + (o1 + a) * nr + o2 + b] += sgn * s
    if eps != 0.0:
        for a in range(nr):
            Ks[kb + a * nr + a] -= sgn * eps
    rank = _pchol(Ks[kb:kb + nr * nr], Kf[kb:kb + nr * nr], Kp[m_R[m]:m_R[m] + nr], nr, tol)
    Kr[m] = rank
    # ---- E_e and Y_e = K^-1 E_e for each external handle
    n_h = node_nh[n]
    sN = node_h_start[n]
    eb = m_E[m]
    col = np.empty(nr)
    sol = np.empty(nr)
    tmp = np.empty(nr)
    for e in range(n_h):
        src = h_src[sN + e]
        onleft = src < nL
        for ii in range(i0, i1):
            j1 = if_joint[ii]
            r1 = row_adr[j1]
            o1 = if_roff[ii]
            lp1 = h_side[sL + if_left[ii]] == 0
            for a in range(rows[j1]):
                if onleft:
                    g1 = _side_rows(GA, GB, lp1, r1 + a)
                    blk = pL + if_left[ii] * nL + src
                else:
                    g1 = _side_rows(GA, GB, not lp1, r1 + a)
                    blk = pR + if_right[ii] * nR + (src - nL)
                for d in range(nd):
                    s = 0.0
                    for c in range(nd):
                        s += g1[c] * Phi[blk, c, d]
                    E[eb + e * nr + o1 + a, d] = s
        for d in range(nd):
            for a in range(nr):
                col[a] = E[eb + e * nr + a, d]
            _psolve(Kf[kb:kb + nr * nr], Kp[m_R[m]:m_R[m] + nr], nr, rank, col, sol, tmp)
            for a in range(nr):
                Y[eb + e * nr + a, d] = sgn * sol[a]
    # ---- Phi^C[e, f] = [same side] Phi^X[e, f] - E_e^T Y_f
    pN = node_pair_start[n]
    for e in range(n_h):
        se = h_src[sN + e]
        for f in range(e, n_h):
            sf = h_src[sN + f]
            blk = pN + e * n_h + f
            if (se < nL) == (sf < nL):
                if se < nL:
                    src_blk = pL + se * nL + sf
                else:
                    src_blk = pR + (se - nL) * nR + (sf - nL)
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk, c, d] = Phi[src_blk, c, d]
            else:
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk, c, d] = 0.0
            for c in range(nd):
                for d in range(nd):
                    s = 0.0
                    for a in range(nr):
                        s += E[eb + e * nr + a, c] * Y[eb + f * nr + a, d]
                    Phi[blk, c, d] -= s
            if f != e:
                blk2 = pN + f * n_h + e
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk2, d, c] = Phi[blk, c, d]


@njit(cache=True)
def _merge_bias(m, ix, bv, GA, GB, g0, Kf, Kp, Kr, Y, r0, y0, sgn):
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows = ix
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
        lp = h_side[sL + if_left[ii]] == 0
        for a in range(rows[j]):
            gl = _side_rows(GA, GB, lp, r + a)
            s = g0[r + a]
            for c in range(nd):
                s += gl[c] * bv[sL + if_left[ii], c]
            if Rn >= 0:
                gr = _side_rows(GA, GB, not lp, r + a)
                for c in range(nd):
                    s += gr[c] * bv[sR + if_right[ii], c]
            r0[rb + o + a] = s
    tmp = np.empty(nr)
    kb = m_K[m]
    _psolve(Kf[kb:kb + nr * nr], Kp[rb:rb + nr], nr, Kr[m], r0[rb:rb + nr], y0[rb:rb + nr], tmp)
    for a in range(nr):
        y0[rb + a] *= sgn
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(node_nh[n]):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            s = bv[slot, d]
            for a in range(nr):
                s -= Y[eb + e * nr + a, d] * r0[rb + a]
            bv[sN + e, d] = s


@njit(cache=True)
def _merge_down(m, ix, Fh, GA, GB, lam, Y, y0):
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows = ix
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
    # Lambda = -(sum_e Y_e F_e + y0)
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        o = if_roff[ii]
        for a in range(rows[j]):
            s = y0[rb + o + a]
            for e in range(node_nh[n]):
                for d in range(nd):
                    s += Y[eb + e * nr + o + a, d] * Fh[sN + e, d]
            lam[row_adr[j] + a] = -s
    # external handles pass their forces down
    for e in range(node_nh[n]):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            Fh[slot, d] = Fh[sN + e, d]
    # interface handles receive G^T Lambda
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        r = row_adr[j]
        lp = h_side[sL + if_left[ii]] == 0
        sl = sL + if_left[ii]
        for d in range(nd):
            s = 0.0
            for a in range(rows[j]):
                s += _side_rows(GA, GB, lp, r + a)[d] * lam[r + a]
            Fh[sl, d] = s
        if Rn >= 0:
            sr = sR + if_right[ii]
            for d in range(nd):
                s = 0.0
                for a in range(rows[j]):
                    s += _side_rows(GA, GB, not lp, r + a)[d] * lam[r + a]
                Fh[sr, d] = s


# ----------------------------------------------------------------- level passes


@njit(cache=True, parallel=True)
def assemble_matrices(ix, Phi, GA, GB, Kf, Kp, Kr, Ks, Y, E, eps, sgn, tol):
    """Matrix pass, leaves to root (Phi of the leaves already filled)."""
    level_start = ix[3]
    for lvl in range(level_start.shape[0] - 1):
        lo = level_start[lvl]
        hi = level_start[lvl + 1]
        if hi - lo >= PARALLEL_MIN_MERGES:
            for m in prange(lo, hi):
                _merge_matrices(m, ix, Phi, GA, GB, Kf, Kp, Kr, Ks, Y, E, eps, sgn, tol)
        else:
            for m in range(lo, hi):
                _merge_matrices(m, ix, Phi, GA, GB, Kf, Kp, Kr, Ks, Y, E, eps, sgn, tol)


@njit(cache=True, parallel=True)
def assemble_biases(ix, bv, GA, GB, g0, Kf, Kp, Kr, Y, r0, y0, sgn):
    """Bias pass, leaves to root (the leaves' bv already filled)."""
    level_start = ix[3]
    for lvl in range(level_start.shape[0] - 1):
        lo = level_start[lvl]
        hi = level_start[lvl + 1]
        if hi - lo >= PARALLEL_MIN_MERGES:
            for m in prange(lo, hi):
                _merge_bias(m, ix, bv, GA, GB, g0, Kf, Kp, Kr, Y, r0, y0, sgn)
        else:
            for m in range(lo, hi):
                _merge_bias(m, ix, bv, GA, GB, g0, Kf, Kp, Kr, Y, r0, y0, sgn)


@njit(cache=True, parallel=True)
def disassemble(ix, Fh, GA, GB, lam, Y, y0):
    """Root to leaves: every joint's multipliers and every handle's force."""
    level_start = ix[3]
    for lvl in range(level_start.shape[0] - 2, -1, -1):
        lo = level_start[lvl]
        hi = level_start[lvl + 1]
        if hi - lo >= PARALLEL_MIN_MERGES:
            for m in prange(lo, hi):
                _merge_down(m, ix, Fh, GA, GB, lam, Y, y0)
        else:
            for m in range(lo, hi):
                _merge_down(m, ix, Fh, GA, GB, lam, Y, y0)


def solve(lay: TreeLayout, eps: float = 0.0, sgn: float = 1.0, matrices: bool = True,
          tol: float = config.PIVOT_RTOL) -> None:
    """Assemble (matrix pass optional) and disassemble; results in ``lay.Fh``, ``lay.lam``.

    ``sgn`` = +1 when ``G Phi G^T - eps`` is positive semi-definite (DCA, HDCA),
    -1 when it is negative definite (index-3's ``delta`` blocks).
    """
    if matrices:
        assemble_matrices(lay.ix, lay.Phi, lay.GA, lay.GB, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E,
                          eps, sgn, tol)
    assemble_biases(lay.ix, lay.bv, lay.GA, lay.GB, lay.g0, lay.Kf, lay.Kp, lay.Kr, lay.Y, lay.r0,
                    lay.y0, sgn)
    disassemble(lay.ix, lay.Fh, lay.GA, lay.GB, lay.lam, lay.Y, lay.y0)
