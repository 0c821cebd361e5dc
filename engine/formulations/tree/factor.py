"""Small dense algebra of one merge: the pivoted Cholesky factor of its ``K`` (rank
bounded where redundant rows are dropped) and the solves with it, minimum-norm least
squares where the factor has lower rank (docs/derivations.md, "Redundant rows")."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit


class Factor(NamedTuple):
    """One merge's pivoted Cholesky factor where :func:`pchol` left it, as the solves read
    it: ``K[piv][:, piv] = L L^T`` on the leading ``rank`` rows.  Built by the merge
    kernels from the tree's workspace (``TreeWork.Kf``, ``Kp``, ``Kr``), a tuple of
    references: no copy."""

    L: np.ndarray  # the factors, flat: this one's n x n at L[kb:] (TreeWork.Kf)
    P: np.ndarray  # the pivot orders: this one's at P[rb:rb+n] (TreeWork.Kp)
    kb: np.int64  # its offset in L (TreeIndex.m_K)
    rb: np.int64  # its offset in P (TreeIndex.m_R)
    n: np.int64  # the rows of K
    rank: np.int64  # the factor's rank (below n: null_factor has completed it)



@njit(cache=True, nogil=True, _nrt=False)
def pchol(W, L, P, kb, rb, n, tol, cap):
    """Pivoted Cholesky of the symmetric positive semi-definite n x n matrix stored
    flat at ``W[kb:]`` (overwritten): ``K[piv][:, piv] = L L^T`` on the leading
    ``rank`` rows, ``L`` flat at ``L[kb:]``, ``piv`` at ``P[rb:]``.

    Stops when the largest remaining diagonal is below ``tol`` times the largest
    initial one, or after ``cap`` pivots (the merge's rank bound, ``TreeLayout.Kr``:
    its redundant rows, decided where the loops close); returns the rank.  A factor of
    lower rank is completed by :func:`null_factor` for the minimum-norm solves.
    """
    for k in range(n):
        P[rb + k] = k
    dmax0 = 0.0
    for k in range(n):
        if W[kb + k * n + k] > dmax0:
            dmax0 = W[kb + k * n + k]
    if dmax0 <= 0.0:
        for k in range(n * n):
            L[kb + k] = 0.0
        return 0
    thresh = tol * dmax0
    # first try without pivoting (K is definite unless closure equations are redundant)
    ok = cap >= n
    for k in range(n if ok else 0):
        d = W[kb + k * n + k]
        for i in range(k):
            d -= L[kb + k * n + i] * L[kb + k * n + i]
        if d <= thresh:
            ok = False
            break
        d = np.sqrt(d)
        L[kb + k * n + k] = d
        inv = 1.0 / d
        for i in range(k + 1, n):
            t = W[kb + i * n + k]
            for q in range(k):
                t -= L[kb + i * n + q] * L[kb + k * n + q]
            L[kb + i * n + k] = t * inv
        for i in range(k + 1, n):
            L[kb + k * n + i] = 0.0
    if ok:
        return n
    for k in range(n * n):
        L[kb + k] = 0.0
    rank = 0
    for k in range(n):
        p = k
        dmax = W[kb + k * n + k]
        for i in range(k + 1, n):
            if W[kb + i * n + i] > dmax:
                dmax = W[kb + i * n + i]
                p = i
        if dmax <= thresh or rank >= cap:
            break
        if p != k:
            # symmetric swap of rows/columns k and p in W, rows in L, entries in piv
            for i in range(n):
                t = W[kb + k * n + i]
                W[kb + k * n + i] = W[kb + p * n + i]
                W[kb + p * n + i] = t
            for i in range(n):
                t = W[kb + i * n + k]
                W[kb + i * n + k] = W[kb + i * n + p]
                W[kb + i * n + p] = t
            for i in range(k):
                t = L[kb + k * n + i]
                L[kb + k * n + i] = L[kb + p * n + i]
                L[kb + p * n + i] = t
            t2 = P[rb + k]
            P[rb + k] = P[rb + p]
            P[rb + p] = t2
        d = np.sqrt(W[kb + k * n + k])
        L[kb + k * n + k] = d
        for i in range(k + 1, n):
            L[kb + i * n + k] = W[kb + i * n + k] / d
        for i in range(k + 1, n):
            lik = L[kb + i * n + k]
            if lik != 0.0:
                for j in range(k + 1, i + 1):
                    W[kb + i * n + j] -= lik * L[kb + j * n + k]
                    W[kb + j * n + i] = W[kb + i * n + j]
        rank += 1
    return rank


@njit(cache=True, nogil=True, _nrt=False)
def null_factor(L, kb, n, rank):
    """For a factor of rank ``r < n`` (``K[piv][:, piv] = [L11; L21] [L11; L21]^T``): the null
    space of ``K`` in pivoted order, ``Z = [T; I]`` with ``T = -L11^-T L21^T`` (r x z, z = n -
    r), and the lower Cholesky factor ``R`` of ``Z^T Z = T^T T + I``; ``T`` row-major at
    ``L[L.shape[0] // 2 + kb:]``, ``R`` after it (z x z), for :func:`pinv_solve`.

    With redundant rows the multipliers of a merge are not unique; the basic solution of
    the pivoted factor (zero on the rows not pivoted) jumps by a self-equilibrated set
    whenever two nearly equal diagonals swap pivots between nearby states.  The
    minimum-norm one is the same smooth function of the state whichever rows were
    pivoted, at the conditioning of the basic solve.  dca's accelerations do not see the
    difference; hdca's momenta carry the multipliers, and their jumps made its right-hand
    side discontinuous (docs/derivations.md, "Redundant rows")."""
    z = n - rank
    h = L.shape[0] // 2 + kb
    hr = h + rank * z
    for j in range(z):  # column j of T: L11^T t = -(row r + j of L)
        for k in range(rank - 1, -1, -1):
            t = -L[kb + (rank + j) * n + k]
            for i in range(k + 1, rank):
                t -= L[kb + i * n + k] * L[h + i * z + j]
            L[h + k * z + j] = t / L[kb + k * n + k]
    for a in range(z):  # R R^T = T^T T + I
        for b in range(a + 1):
            t = 1.0 if a == b else 0.0
            for k in range(rank):
                t += L[h + k * z + a] * L[h + k * z + b]
            for q in range(b):
                t -= L[hr + a * z + q] * L[hr + b * z + q]
            L[hr + a * z + b] = np.sqrt(t) if a == b else t / L[hr + b * z + b]


@njit(cache=True, nogil=True, _nrt=False)
def null_out(L, kb, n, rank, v, o, w, wo):
    """``v[o:o+n]`` (pivoted order) minus its part in the null space of the rank-r factor:
    ``v - Z (Z^T Z)^-1 Z^T v`` with :func:`null_factor`'s ``Z = [T; I]`` and ``R``;
    ``w[wo:wo+n-r]`` is scratch."""
    z = n - rank
    h = L.shape[0] // 2 + kb
    hr = h + rank * z
    for j in range(z):  # w = R^-1 Z^T v
        t = v[o + rank + j]
        for k in range(rank):
            t += L[h + k * z + j] * v[o + k]
        for q in range(j):
            t -= L[hr + j * z + q] * w[wo + q]
        w[wo + j] = t / L[hr + j * z + j]
    for j in range(z - 1, -1, -1):  # w = R^-T w
        t = w[wo + j]
        for q in range(j + 1, z):
            t -= L[hr + q * z + j] * w[wo + q]
        w[wo + j] = t / L[hr + j * z + j]
    for k in range(rank):  # v -= Z w
        t = 0.0
        for j in range(z):
            t += L[h + k * z + j] * w[wo + j]
        v[o + k] -= t
    for j in range(z):
        v[o + rank + j] -= w[wo + j]


@njit(cache=True, nogil=True, _nrt=False)
def pinv_solve(L, kb, n, rank, v, o, w, wo):
    """``v[o:o+n] = K^+ v[o:o+n]`` (pivoted order) for a factor of rank below n: the
    right-hand side's part in the range of ``K`` (where the rows are dependent on the
    closure it all is; off it, the dependent rows' O(offset) inconsistency is dropped),
    the pivoted rows solved for it, and the solution's null-space part removed -- the
    minimum-norm least-squares solution for the rank-r ``K``, which does not depend on
    which rows were pivoted (:func:`null_factor`), at the basic solve's conditioning.
    Called, not inlined: only merges with redundant rows take it, and inlined into every
    pass variant it made dca's cold compile 40 % longer."""
    null_out(L, kb, n, rank, v, o, w, wo)
    for k in range(rank):
        s = v[o + k]
        for i in range(k):
            s -= L[kb + k * n + i] * v[o + i]
        v[o + k] = s / L[kb + k * n + k]
    for k in range(rank - 1, -1, -1):
        s = v[o + k]
        for i in range(k + 1, rank):
            s -= L[kb + i * n + k] * v[o + i]
        v[o + k] = s / L[kb + k * n + k]
    for k in range(rank, n):
        v[o + k] = 0.0
    null_out(L, kb, n, rank, v, o, w, wo)


@njit(cache=True, nogil=True, _nrt=False)
def psolve_vec(f, b, x, vb, sgn, scr, m, t0):
    """x[vb:vb+n] = sgn K^-1 b[vb:vb+n] with the factor ``f`` (:class:`Factor`; basic
    solution, minimum-norm least squares where the rank is below n, :func:`pinv_solve`);
    ``scr[m, t0:t0+2n]`` is scratch."""
    L, P, kb, rb, n, rank = f
    if rank < n:
        for k in range(n):
            scr[m, t0 + k] = b[vb + P[rb + k]]
        pinv_solve(L, kb, n, rank, scr[m], t0, scr[m], t0 + n)
        for k in range(n):
            x[vb + P[rb + k]] = sgn * scr[m, t0 + k]
        return
    for k in range(rank):
        s = b[vb + P[rb + k]]
        for i in range(k):
            s -= L[kb + k * n + i] * scr[m, t0 + i]
        scr[m, t0 + k] = s / L[kb + k * n + k]
    for k in range(rank - 1, -1, -1):
        s = scr[m, t0 + k]
        for i in range(k + 1, rank):
            s -= L[kb + i * n + k] * scr[m, t0 + i]
        scr[m, t0 + k] = s / L[kb + k * n + k]
    for k in range(n):
        x[vb + k] = 0.0
    for k in range(rank):
        x[vb + P[rb + k]] = sgn * scr[m, t0 + k]


@njit(cache=True, nogil=True, _nrt=False)
def psolve_rows(f, B, X, base, ncol, sgn, scr, m, t0):
    """X[base:base+n, :ncol] = sgn K^-1 B[base:base+n, :ncol] with the factor ``f``
    (:class:`Factor`; basic solution, minimum-norm least squares where the rank is below n,
    :func:`pinv_solve`); ``scr[m, t0:t0+2n]`` is scratch."""
    L, P, kb, rb, n, rank = f
    for d in range(ncol):
        if rank < n:
            for k in range(n):
                scr[m, t0 + k] = B[base + P[rb + k], d]
            pinv_solve(L, kb, n, rank, scr[m], t0, scr[m], t0 + n)
            for k in range(n):
                X[base + P[rb + k], d] = sgn * scr[m, t0 + k]
            continue
        for k in range(rank):
            s = B[base + P[rb + k], d]
            for i in range(k):
                s -= L[kb + k * n + i] * scr[m, t0 + i]
            scr[m, t0 + k] = s / L[kb + k * n + k]
        for k in range(rank - 1, -1, -1):
            s = scr[m, t0 + k]
            for i in range(k + 1, rank):
                s -= L[kb + i * n + k] * scr[m, t0 + i]
            scr[m, t0 + k] = s / L[kb + k * n + k]
        for k in range(n):
            X[base + k, d] = 0.0
        for k in range(rank):
            X[base + P[rb + k], d] = sgn * scr[m, t0 + k]
