"""The articulated-body passes of formulation ``rcr`` (paper 002; docs/rcr.md): every
body's spatial inertia and bias force about the origin, the loop clusters' maps from
their independent accelerations, and the recursive triangularisation and forward
substitution with each cluster folded onto its loop base as one virtual body.

Spatial quantities are in world components about the world origin, as in
:mod:`.rcr_kernels`; the cluster layout is :class:`.rcr_layout.PartitionLayout`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .dense_kernels import cholesky_in_place
from .dense_linalg import backward, forward


class Articulated(NamedTuple):
    """Per body and per tree speed: the quantities of the triangularisation (eqs. 14-19)."""

    IA: np.ndarray  # (nb, 6, 6) spatial inertia about the origin (body_terms), made articulated in place
    pA: np.ndarray  # (nb, 6) bias force (body_terms), made articulated in place
    U: np.ndarray  # (nv, 6) IA S per tree speed
    D: np.ndarray  # (nb, 3, 3) Cholesky factors of S^T IA S per tree joint
    u: np.ndarray  # (nv,) -S^T pA per tree speed


class LoopMaps(NamedTuple):
    """The loop clusters' speeds and accelerations as maps of their independent ones
    (eqs. 34, 35, 50-54, 58); ``d``: the most independent speeds of a cluster."""

    N: np.ndarray  # (d, nv) dependent speeds per unit independent speed (eq. 34)
    g: np.ndarray  # (nv,) particular solution of eq. (35) at zero independent accelerations
    Gam: np.ndarray  # (nb, 6, d) nonholonomic partial velocities of the cluster bodies (eq. 58)
    beta: np.ndarray  # (nb, 6) remainder accelerations of the cluster bodies


class ClusterFold(NamedTuple):
    """Each loop cluster folded onto its base body (eqs. 60-66): its coupling inertia,
    reduced inertia (factorised in place) and reduced forces over its independent speeds."""

    U: np.ndarray  # (ncl, 6, d) coupling inertia
    D: np.ndarray  # (ncl, d, d) reduced inertia, then its Cholesky factor
    u: np.ndarray  # (ncl, d) reduced forces


class ArticulatedScratch(NamedTuple):
    """Scratch of :func:`solve_articulated`'s passes."""

    t6: np.ndarray  # (6,)
    tmp: np.ndarray  # (3,) one tree joint's speeds
    tmpd: np.ndarray  # (max(d, 1),) one cluster's independent speeds
    Isum: np.ndarray  # (6, 6) sum of a cluster's articulated inertias
    psum: np.ndarray  # (6,) sum of a cluster's articulated bias forces


@njit(cache=True, nogil=True, _nrt=False)
def _chol_solve(L, n, b):
    """b[:n] <- (L L^T)^-1 b[:n] for the leading n x n factor of
    :func:`.dense_kernels.cholesky_in_place` (:func:`.dense_linalg.forward`, ``backward``)."""
    Ln, bn = L[:n, :n], b[:n]
    forward(Ln, bn, bn)
    backward(Ln, bn, bn)


@njit(cache=True, nogil=True, _nrt=True)
def body_terms(mass, inertia, x, R, V, Fext, I6, p6):
    """Spatial inertia (eq. 11) and bias force (the negative of eq. 12's F^k) of every
    body about the origin: I = [[m, -m~c], [m~c, J - m~c~c]], p = V x* I V - F_ext."""
    _body_terms_loop(mass, inertia, x, R, V, Fext, I6, p6, np.empty((3, 3)))


# The body loops run without numba's reference counting (``_nrt=False``, see
# engine/kinematics.py): they allocate nothing; their wrappers allocate the scratch.
@njit(cache=True, nogil=True, _nrt=False)
def _body_terms_loop(mass, inertia, x, R, V, Fext, I6, p6, J):
    nb = mass.shape[0]
    for i in range(nb):
        Ri = R[i]
        for a in range(3):
            for b in range(3):
                s = 0.0
                for k in range(3):
                    for l in range(3):
                        s += Ri[a, k] * inertia[i, k, l] * Ri[b, l]
                J[a, b] = s
        m = mass[i]
        c0, c1, c2 = x[i, 0], x[i, 1], x[i, 2]
        I = I6[i]
        for a in range(6):
            for b in range(6):
                I[a, b] = 0.0
        # ~c
        C = ((0.0, -c2, c1), (c2, 0.0, -c0), (-c1, c0, 0.0))
        for a in range(3):
            I[a, a] = m
            for b in range(3):
                I[a, 3 + b] = -m * C[a][b]
                I[3 + a, b] = m * C[a][b]
                cc = 0.0
                for k in range(3):
                    cc += C[a][k] * C[k][b]
                I[3 + a, 3 + b] = J[a, b] - m * cc
        w0, w1, w2 = V[i, 3], V[i, 4], V[i, 5]
        v0, v1, v2 = V[i, 0], V[i, 1], V[i, 2]
        h0 = J[0, 0] * w0 + J[0, 1] * w1 + J[0, 2] * w2
        h1 = J[1, 0] * w0 + J[1, 1] * w1 + J[1, 2] * w2
        h2 = J[2, 0] * w0 + J[2, 1] * w1 + J[2, 2] * w2
        f0 = m * (w1 * v2 - w2 * v1) - Fext[i, 0]
        f1 = m * (w2 * v0 - w0 * v2) - Fext[i, 1]
        f2 = m * (w0 * v1 - w1 * v0) - Fext[i, 2]
        n0 = w1 * h2 - w2 * h1 - Fext[i, 3]
        n1 = w2 * h0 - w0 * h2 - Fext[i, 4]
        n2 = w0 * h1 - w1 * h0 - Fext[i, 5]
        p6[i, 0] = f0
        p6[i, 1] = f1
        p6[i, 2] = f2
        p6[i, 3] = n0 + c1 * f2 - c2 * f1
        p6[i, 4] = n1 + c2 * f0 - c0 * f2
        p6[i, 5] = n2 + c0 * f1 - c1 * f0


@njit(cache=True, nogil=True, _nrt=False)
def cluster_maps(lx, cl, parent, v_adr, nv_j, S6, co, maps):
    """Eqs. (50)-(54), (58) over a whole cluster: each body's spatial acceleration relative
    to the loop base as ``Gam_k vdot_I + beta_k`` (Gam: the nonholonomic partial
    velocities of eq. 58; beta: the remainder, which carries eq. 79-80's Theta terms
    from one coupled loop into the next).  Fills ``maps.Gam`` and ``maps.beta`` from
    ``maps.N`` and ``maps.g``."""
    N, g, Gam, beta = maps.N, maps.g, maps.Gam, maps.beta
    body_cl, cl_bstart, cl_bodies, cl_istart = lx.body_cl, lx.cl_bstart, lx.cl_bodies, lx.cl_istart
    d = cl_istart[cl + 1] - cl_istart[cl]
    for kk in range(cl_bstart[cl], cl_bstart[cl + 1]):
        k = cl_bodies[kk]
        p = parent[k]
        inside = p >= 0 and body_cl[p] == cl
        for a in range(6):
            bsum = co[k, a]
            if inside:
                bsum += beta[p, a]
            for c in range(v_adr[k], v_adr[k] + nv_j[k]):
                bsum += S6[c, a] * g[c]
            beta[k, a] = bsum
            for e in range(d):
                s = Gam[p, a, e] if inside else 0.0
                for c in range(v_adr[k], v_adr[k] + nv_j[k]):
                    s += S6[c, a] * N[e, c]
                Gam[k, a, e] = s


@njit(cache=True, nogil=True, _nrt=True)
def solve_articulated(lx, parent, v_adr, nv_j, S6, co, art, maps, fold, a, vdot, t6):
    """Recursive triangularisation (eqs. 14-19, 60-66) and forward substitution (eqs.
    24-27, 67-71), with every loop cluster folded onto its base body as one virtual
    body of d_C independent speeds (the paper's p_i with inertias I^{p;0}, I^p).

    ``art``: the bodies' inertias and bias forces (:func:`body_terms`), made articulated
    in place; ``maps``: the clusters' loop maps (:func:`cluster_maps`); ``fold``: the
    clusters' reduced quantities, filled; ``a``, ``vdot``: the spatial accelerations about
    the origin and the tree accelerations, filled; ``t6``: (6,) scratch.  Returns False
    if a cluster's reduced inertia is not positive definite."""
    scratch = ArticulatedScratch(t6, np.empty(3), np.empty(max(fold.D.shape[1], 1)), np.empty((6, 6)), np.empty(6))
    return _articulated_passes(lx, parent, v_adr, nv_j, S6, co, art, maps, fold, a, vdot, scratch)


@njit(cache=True, nogil=True, _nrt=False)
def _articulated_passes(lx, parent, v_adr, nv_j, S6, co, art, maps, fold, a, vdot, scratch):
    IA, pA, U, Dl, u = art.IA, art.pA, art.U, art.D, art.u
    N, g, Gam, beta = maps.N, maps.g, maps.Gam, maps.beta
    Ucl, Dcl, ucl = fold.U, fold.D, fold.u
    t6, tmp, tmpd, Isum, psum = scratch.t6, scratch.tmp, scratch.tmpd, scratch.Isum, scratch.psum
    body_cl, cl_base, cl_first = lx.body_cl, lx.cl_base, lx.cl_first
    cl_bstart, cl_bodies, cl_istart = lx.cl_bstart, lx.cl_bodies, lx.cl_istart
    nb = parent.shape[0]
    # ---- backward pass (triangularisation)
    for i in range(nb - 1, -1, -1):
        cl = body_cl[i]
        if cl < 0:
            n = nv_j[i]
            va = v_adr[i]
            # U = IA S, D = S^T U, u = -S^T pA
            for e in range(n):
                for k in range(6):
                    s = 0.0
                    for l in range(6):
                        s += IA[i, k, l] * S6[va + e, l]
                    U[va + e, k] = s
            for e in range(n):
                s = 0.0
                for k in range(6):
                    s -= S6[va + e, k] * pA[i, k]
                u[va + e] = s
                for f in range(n):
                    s = 0.0
                    for k in range(6):
                        s += S6[va + e, k] * U[va + f, k]
                    Dl[i, e, f] = s
            cholesky_in_place(Dl[i], n)
            p = parent[i]
            # Ia = IA - U D^-1 U^T, pa = pA + Ia c + U D^-1 u
            for k in range(6):  # column k of U D^-1 U^T and U D^-1 u
                for e in range(n):
                    tmp[e] = U[va + e, k]
                _chol_solve(Dl[i], n, tmp)
                for l in range(6):
                    s = 0.0
                    for e in range(n):
                        s += U[va + e, l] * tmp[e]
                    IA[i, l, k] -= s
            for e in range(n):
                tmp[e] = u[va + e]
            _chol_solve(Dl[i], n, tmp)
            for k in range(6):
                s = 0.0
                for l in range(6):
                    s += (IA[i, k, l]) * co[i, l]
                for e in range(n):
                    s += U[va + e, k] * tmp[e]
                t6[k] = s
            if p >= 0:
                for k in range(6):
                    pA[p, k] += pA[i, k] + t6[k]
                    for l in range(6):
                        IA[p, k, l] += IA[i, k, l]
        elif i == cl_first[cl]:
            B = cl_base[cl]
            d = cl_istart[cl + 1] - cl_istart[cl]
            Uc = Ucl[cl]
            Dc = Dcl[cl]
            uc = ucl[cl]
            for e in range(d):
                uc[e] = 0.0
                for k in range(6):
                    Uc[k, e] = 0.0
                for f in range(d):
                    Dc[e, f] = 0.0
            for r in range(6):
                psum[r] = 0.0
                for l in range(6):
                    Isum[r, l] = 0.0
            for kk in range(cl_bstart[cl], cl_bstart[cl + 1]):
                k = cl_bodies[kk]
                # w = IA_k beta_k + pA_k
                for r in range(6):
                    s = pA[k, r]
                    for l in range(6):
                        s += IA[k, r, l] * beta[k, l]
                        Isum[r, l] += IA[k, r, l]
                    t6[r] = s
                    psum[r] += s
                for e in range(d):
                    s = 0.0
                    for r in range(6):
                        s -= Gam[k, r, e] * t6[r]
                    uc[e] += s
                    for r in range(6):  # (IA Gam)[:, e]
                        s = 0.0
                        for l in range(6):
                            s += IA[k, r, l] * Gam[k, l, e]
                        Uc[r, e] += s
                        for f in range(d):
                            Dc[f, e] += Gam[k, r, f] * s
            if d > 0 and not cholesky_in_place(Dc, d):
                return False
            if B >= 0:
                for r in range(6):
                    for e in range(d):
                        tmpd[e] = Uc[r, e]
                    _chol_solve(Dc, d, tmpd)
                    for l in range(6):
                        s = 0.0
                        for e in range(d):
                            s += Uc[l, e] * tmpd[e]
                        IA[B, l, r] += Isum[l, r] - s
                for e in range(d):
                    tmpd[e] = uc[e]
                _chol_solve(Dc, d, tmpd)
                for r in range(6):
                    s = psum[r]
                    for e in range(d):
                        s += Uc[r, e] * tmpd[e]
                    pA[B, r] += s
    # ---- forward pass (substitution)
    for i in range(nb):
        cl = body_cl[i]
        p = parent[i]
        if cl < 0:
            n = nv_j[i]
            va = v_adr[i]
            for k in range(6):
                t6[k] = (a[p, k] if p >= 0 else 0.0) + co[i, k]
            for e in range(n):
                s = u[va + e]
                for k in range(6):
                    s -= U[va + e, k] * t6[k]
                tmp[e] = s
            _chol_solve(Dl[i], n, tmp)
            for e in range(n):
                vdot[va + e] = tmp[e]
            for k in range(6):
                s = t6[k]
                for e in range(n):
                    s += S6[va + e, k] * tmp[e]
                a[i, k] = s
        elif i == cl_first[cl]:
            B = cl_base[cl]
            d = cl_istart[cl + 1] - cl_istart[cl]
            for e in range(d):
                s = ucl[cl, e]
                if B >= 0:
                    for k in range(6):
                        s -= Ucl[cl, k, e] * a[B, k]
                tmpd[e] = s
            _chol_solve(Dcl[cl], d, tmpd)
            for kk in range(cl_bstart[cl], cl_bstart[cl + 1]):
                k = cl_bodies[kk]
                for r in range(6):
                    s = (a[B, r] if B >= 0 else 0.0) + beta[k, r]
                    for e in range(d):
                        s += Gam[k, r, e] * tmpd[e]
                    a[k, r] = s
                for c in range(v_adr[k], v_adr[k] + nv_j[k]):
                    s = g[c]
                    for e in range(d):
                        s += N[e, c] * tmpd[e]
                    vdot[c] = s
    return True
