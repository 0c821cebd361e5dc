"""The closure's linear algebra in formulation ``dense``, in compiled code: the
Cholesky factor of the mass matrix, triangular solves, the closure rows whitened by it,
their round-off floor, and the filtered least squares by a thin singular value
decomposition (one-sided Jacobi rotations for a mechanism's small systems, LAPACK's
``gesdd`` above).  Every solve works on the closure rows ``K`` whitened by the
joint-space mass matrix ``M = L L^T`` (``K L^-T``), so that lengths are kinetic energy
and a singular configuration amplifies round-off by 1/d, not 1/d^2 (docs/derivations.md,
"Dense reference").  :mod:`.dense_solve` builds the equations of motion on them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .. import config
from .dense_kernels import cholesky_in_place

#: the largest rank :func:`thin_svd` decomposes by Jacobi rotations (LAPACK above it), and
#: its most sweeps (one to three rotate a mechanism's closure rows to round-off)
JACOBI_MAX_RANK = 24
JACOBI_SWEEPS = 30


class ThinSVD(NamedTuple):
    """A thin singular value decomposition ``A = U diag(s) V^T`` of an (m, n) matrix,
    k = min(m, n), and its workspace (:func:`thin_svd`)."""

    U: np.ndarray  # (m, k)
    s: np.ndarray  # (k,) largest first
    V: np.ndarray  # (n, k)
    f: np.ndarray  # (k,) the least squares' filter (filter_factors); scratch of thin_svd
    W: np.ndarray  # (k, max(m, n)) the rotated columns, one per row
    J: np.ndarray  # (k, k) the accumulated rotations, one column per row
    order: np.ndarray  # (k,) int64


@njit(cache=True, nogil=True, _nrt=True)
def svd_work(m, n):
    """An empty :class:`ThinSVD` for (m, n) matrices."""
    k = min(m, n)
    return ThinSVD(np.zeros((m, k)), np.zeros(k), np.zeros((n, k)), np.zeros(k), np.zeros((k, max(m, n))),
                   np.zeros((k, k)), np.zeros(k, dtype=np.int64))


@njit(cache=True, nogil=True, _nrt=False)
def cholesky(M, L):
    """``L`` (lower) with ``M = L L^T``; False when ``M`` is not positive definite (or
    not finite)."""
    n = M.shape[0]
    for i in range(n):
        for j in range(n):
            L[i, j] = M[i, j] if j <= i else 0.0
    return cholesky_in_place(L, n)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def forward(L, b, x):
    """``x = L^-1 b`` (``x`` may be ``b``)."""
    for i in range(L.shape[0]):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def backward(L, b, x):
    """``x = L^-T b`` (``x`` may be ``b``)."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@njit(cache=True, nogil=True, _nrt=False)
def whiten(L, K, Kt):
    """``Kt = K L^-T``, row by row: the rows in mass-whitened velocity coordinates."""
    for r in range(K.shape[0]):
        forward(L, K[r], Kt[r])


@njit(cache=True, nogil=True, _nrt=False)
def roundoff_floor(L, Kabs, tmp):
    """The singular value of the whitened cut rows below which it is round-off:
    ``REDUNDANT_RTOL`` times the Frobenius norm of ``L^-1 Kabs^T`` (``Kabs``: the magnitudes of
    the terms each entry sums).  Zero without cut rows (gear rows never cancel)."""
    if Kabs.shape[0] == 0:
        return 0.0
    ss = 0.0
    for r in range(Kabs.shape[0]):
        forward(L, Kabs[r], tmp)
        for k in range(tmp.shape[0]):
            ss += tmp[k] * tmp[k]
    return config.REDUNDANT_RTOL * math.sqrt(ss)


@njit(cache=True, nogil=True, _nrt=True)
def thin_svd(A, sv):
    """The thin singular value decomposition ``A = U diag(s) V^T`` into ``sv``, singular
    values largest first (compiled with reference counting, stated: a kernel without it
    that calls this one would otherwise pass its flag on, and LAPACK's branch allocates): by one-sided Jacobi rotations (Hestenes) for the small systems
    of a mechanism's closure (rank at most :data:`JACOBI_MAX_RANK`), which computes even
    small singular values to high relative accuracy and needs no allocation; by LAPACK's
    ``gesdd`` above that."""
    m, n = A.shape
    k = min(m, n)
    if k == 0:
        return
    U, s, V, W, J = sv.U, sv.s, sv.V, sv.W, sv.J
    if k > JACOBI_MAX_RANK:
        Ul, sl, Vt = np.linalg.svd(np.ascontiguousarray(A), full_matrices=False)
        for i in range(k):
            s[i] = sl[i]
            for r in range(m):
                U[r, i] = Ul[r, i]
            for r in range(n):
                V[r, i] = Vt[i, r]
        return
    tall = m >= n
    p = m if tall else n
    # W's rows are the columns being rotated (contiguous: the dots and rotations run along
    # rows), J's rows the accumulated rotations' columns
    for c in range(k):
        for r in range(p):
            W[c, r] = A[r, c] if tall else A[c, r]
    for r in range(k):
        for c in range(k):
            J[r, c] = 1.0 if r == c else 0.0
    # a column below round-off of the whole (a redundant row's direction) has no
    # direction to rotate to: it stays, or the sweeps would chase round-off forever
    tiny = 0.0
    for c in range(k):
        for r in range(p):
            tiny += W[c, r] * W[c, r]
    tiny *= 1e-30
    nrm = s  # the columns' squared norms during the sweeps (s is written at the end)
    for _ in range(JACOBI_SWEEPS):
        for c in range(k):  # afresh each sweep: the updates below drift by round-off
            t = 0.0
            for r in range(p):
                t += W[c, r] * W[c, r]
            nrm[c] = t
        rotated = False
        for i in range(k - 1):
            for j in range(i + 1, k):
                a = nrm[i]
                b = nrm[j]
                if a <= tiny or b <= tiny:
                    continue
                g = 0.0
                for r in range(p):
                    g += W[i, r] * W[j, r]
                if abs(g) <= 1e-15 * math.sqrt(a * b):
                    continue
                rotated = True
                zeta = (b - a) / (2.0 * g)
                t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + math.hypot(1.0, zeta))
                c = 1.0 / math.sqrt(1.0 + t * t)
                sn = c * t
                for r in range(p):
                    wi, wj = W[i, r], W[j, r]
                    W[i, r] = c * wi - sn * wj
                    W[j, r] = sn * wi + c * wj
                for r in range(k):
                    wi, wj = J[i, r], J[j, r]
                    J[i, r] = c * wi - sn * wj
                    J[j, r] = sn * wi + c * wj
                nrm[i] = a - t * g  # the rotated columns' norms (g is now zero)
                nrm[j] = b + t * g
        if not rotated:
            break
    # column norms are the singular values; order them, largest first
    norm = sv.f
    for c in range(k):
        t = 0.0
        for r in range(p):
            t += W[c, r] * W[c, r]
        norm[c] = math.sqrt(t)
    order = sv.order
    for c in range(k):
        order[c] = c
    for i in range(k):
        best = i
        for j in range(i + 1, k):
            if norm[order[j]] > norm[order[best]]:
                best = j
        order[i], order[best] = order[best], order[i]
    # A = W^T J^T (tall) or A^T = W^T J^T: the normalised rows of W are one side's vectors
    left, right = (U, V) if tall else (V, U)
    for o in range(k):
        c = order[o]
        sc = norm[c]
        s[o] = sc
        inv = 1.0 / sc if sc > 0.0 else 0.0
        for r in range(p):
            left[r, o] = W[c, r] * inv
        for r in range(k):
            right[r, o] = J[c, r]


@njit(cache=True, nogil=True, _nrt=False)
def filter_factors(sv, mu_rel, floor, rank):
    """Into ``sv.f``, the filter of the least squares by ``sv``'s decomposition of rank at
    most ``rank``: ``f_i = s_i^7 / (s_i^8 + mu^8)``, ``mu = max(mu_rel s_max, floor)``,
    zero beyond ``rank`` (and everywhere if ``s_max`` is zero): the least-squares
    solution is then ``x = V_r diag(f) U_r^T b`` (:func:`filtered_solve`).

    ``rank`` is the rank of the closure equations, decided once for the mechanism: the
    directions beyond it are the redundant rows', which are dependent *on* the closure but
    lift to singular values ~d at a state off it by d (a Runge-Kutta stage, a drifted
    position).  Kept, such a direction would impose a constraint that is not the
    mechanism's -- its row is the O(d) perturbation, normalised -- and remove a real
    freedom for one stage (docs/derivations.md, "Redundant rows").

    ``mu = max(mu_rel * s_max, floor)``: ``floor`` is the size below which a singular
    value is round-off whatever the largest one (:func:`roundoff_floor`; when every row of
    A is round-off, a loop joint redundant with the tree, ``s_max`` is round-off too and a
    filter relative to it would keep it).  For ``s >> mu`` this is the exact
    pseudo-inverse (relative error (mu/s)^8); and while a singular configuration is being
    crossed (``mu_rel = DENSE_FILTER_RTOL``) the vanishing direction is switched off
    smoothly within ~mu of it, so round-off is amplified by at most ~0.8/mu instead of 1/s
    (docs/derivations.md, "The dense reference")."""
    k = sv.s.shape[0]
    f = sv.f
    for i in range(k):
        f[i] = 0.0
    if k == 0 or sv.s[0] == 0.0:
        return
    mu = max(mu_rel * sv.s[0], floor)
    for i in range(min(rank, k)):
        si = sv.s[i]
        r = si / mu
        inv = 1.0 / si if si > 0 else 1.0
        f[i] = inv if r > 1e3 else inv * (r**8 / (r**8 + 1.0))


@njit(cache=True, nogil=True, _nrt=False)
def filtered_solve(sv, b, x, transposed):
    """``x = V diag(f) U^T b``: the filtered minimum-norm least-squares solution of
    ``A x = b`` by ``sv``'s decomposition of ``A`` and its :func:`filter_factors`; with
    ``transposed``, ``x = U diag(f) V^T b``, the same for ``A^T x = b``."""
    P, Q = (sv.V, sv.U) if transposed else (sv.U, sv.V)
    for r in range(x.shape[0]):
        x[r] = 0.0
    for i in range(sv.s.shape[0]):
        c = 0.0
        for r in range(b.shape[0]):
            c += P[r, i] * b[r]
        c *= sv.f[i]
        for r in range(x.shape[0]):
            x[r] += Q[r, i] * c


@njit(cache=True, nogil=True, _nrt=False)
def velocity_residual(K, v, nu):
    """``max_r |K_r v - nu_r|``, each row's sum from its first column on: what decides
    whether a state's velocities are projected, the same number in Python
    (:meth:`.dense.DenseFormulation.closure_residuals`) and in the compiled post-steps
    (:func:`.stabilise.projector_residual`) -- numpy's ``K @ v`` sums in another order,
    and a residual within that rounding of the tolerance would be decided two ways."""
    worst = 0.0
    for r in range(K.shape[0]):
        s = 0.0
        for c in range(K.shape[1]):
            s += K[r, c] * v[c]
        worst = max(worst, abs(s - nu[r]))
    return worst


@njit(cache=True, nogil=True, _nrt=True)
def singular_values(A):
    """The singular values of ``A``, largest first."""
    sv = svd_work(A.shape[0], A.shape[1])
    thin_svd(A, sv)
    return sv.s.copy()
