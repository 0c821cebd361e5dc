"""Numba kernels of formulation ``rcr`` (paper 002; docs/rcr.md).

Every spatial quantity here is in world components *about the world origin*
(Featherstone's absolute form), so the shift matrices S^k of paper 002 eq. (10)
are identities and a body's articulated inertia adds to its parent's without a
transform.  Motion vectors are ``[v_O; w]`` (the velocity of the body point at
the origin, the angular velocity), forces ``[f; n_O]``.

The layout tuple ``lx`` (int64 arrays, built by :func:`engine.formulations.rcr.build_partition`):

====  ==============  =========================================================
 0    body_cl         (nb,) cluster of the body's tree joint, -1 outside loops
 1    cl_base         (ncl,) loop base body 0_i of the cluster (-1 ground)
 2    cl_first        (ncl,) smallest body index of the cluster
 3    cl_bstart       (ncl+1,) CSR into cl_bodies
 4    cl_bodies       cluster bodies, ascending
 5    cl_istart       (ncl+1,) CSR into ind_cols: independent speeds per cluster
 6    ind_cols        global velocity index of each independent speed
 7    cl_kstart       (ncl+1,) CSR into the blocks, in solve order
 8    blk_rstart      (nblk+1,) CSR into blk_rows
 9    blk_rows        cut-joint constraint rows of each block
10    blk_cstart      (nblk+1,) CSR into blk_cols
11    blk_cols        velocity indices the block's rows touch (loop path columns)
12    blk_dstart      (nblk+1,) CSR into blk_dep
13    blk_dep         local positions (in blk_cols) of the block's dependent speeds
14    blk_kofs        (nblk+1,) offsets of the block matrices in Kval (m x n)
15    blk_qofs        (nblk+1,) offsets of the dependent QR factors in Qf (m x r)
16    row_joint       (ncr,) cut joint of each cut row
17    row_adr         (nj,) first cut row of a cut joint (tree joints: 0)
18    lca             (nj,) loop base of cut joint j: common ancestor of its bodies
19    col_joint       (nv,) tree joint of each velocity
====  ==============  =========================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..forces import tree_applied_forces
from ..kinematics import fk_accelerations, fk_positions, fk_velocities, motion_subspace, ode_rates
from ..model import SPHERICAL
from ..spatial import quat_mul
from .dca import _cut_rows
from .workspace import unpack


@njit(cache=True, nogil=True, _nrt=False)
def _chol(A, n):
    """In-place Cholesky A = L L^T of the leading n x n block (lower triangle); False
    if a pivot is not positive."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _chol_solve(L, n, b):
    """b <- (L L^T)^-1 b for the factor of :func:`_chol`."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]


@njit(cache=True, nogil=True, _nrt=False)
def _origin_rows(nb, nj, row_adr, nc_j, P, GA, GB):
    """Cut rows acting on spatial accelerations about P_j (dca._cut_rows) re-expressed
    about the origin: G_ang += P_j x G_lin."""
    for j in range(nb, nj):
        for r in range(row_adr[j], row_adr[j] + nc_j[j]):
            g0, g1, g2 = GA[r, 0], GA[r, 1], GA[r, 2]
            GA[r, 3] += P[j, 1] * g2 - P[j, 2] * g1
            GA[r, 4] += P[j, 2] * g0 - P[j, 0] * g2
            GA[r, 5] += P[j, 0] * g1 - P[j, 1] * g0
            g0, g1, g2 = GB[r, 0], GB[r, 1], GB[r, 2]
            GB[r, 3] += P[j, 1] * g2 - P[j, 2] * g1
            GB[r, 4] += P[j, 2] * g0 - P[j, 0] * g2
            GB[r, 5] += P[j, 0] * g1 - P[j, 1] * g0


@njit(cache=True, nogil=True, _nrt=False)
def block_rows(lx, parent, v_adr, nv_j, succ, pred, S6, GA, GB, Kval, pos):
    """Per block (one loop, or the loops the greedy partition could not separate): the
    loop Jacobian over the loop's path columns (paper 002 eq. 33, written for all loop
    speeds at once); :func:`block_qr` factorises it.  A row whose ``row_joint`` is negative is not a cut-joint row (formulation
    ``embedding``'s constant joint-space rows): it is left zero here for its owner to fill."""
    blk_rstart, blk_rows, blk_cstart, blk_cols = lx[8], lx[9], lx[10], lx[11]
    blk_kofs, row_joint, lca = lx[14], lx[16], lx[18]
    nblk = blk_rstart.shape[0] - 1
    for b in range(nblk):
        r0, m = blk_rstart[b], blk_rstart[b + 1] - blk_rstart[b]
        c0, n = blk_cstart[b], blk_cstart[b + 1] - blk_cstart[b]
        K = Kval[blk_kofs[b]:blk_kofs[b + 1]]
        for cc in range(n):
            pos[blk_cols[c0 + cc]] = cc
        for k in range(m * n):
            K[k] = 0.0
        for rr in range(m):
            r = blk_rows[r0 + rr]
            j = row_joint[r]
            if j < 0:
                continue
            for side in range(2):
                i = succ[j] if side == 0 else pred[j]
                G = GB if side == 0 else GA
                while i != lca[j]:
                    for c in range(v_adr[i], v_adr[i] + nv_j[i]):
                        s = 0.0
                        for k in range(6):
                            s += G[r, k] * S6[c, k]
                        K[rr * n + pos[c]] += s
                    i = parent[i]


@njit(cache=True, nogil=True, _nrt=False)
def block_qr(lx, colscale, Kval, Qf, tau):
    """Householder QR of every block's dependent columns, scaled by the partition's
    mass-whitening factors -- eq. (34)'s ``[(P^T P)^-1 P^T]`` as a least-squares solve,
    so redundant closure rows need no special case.  Returns the smallest
    ``min |R_ii| / max |R_ii|`` of any block (the conditioning the partition monitor
    watches)."""
    blk_rstart, blk_cstart, blk_cols = lx[8], lx[10], lx[11]
    blk_dstart, blk_dep, blk_kofs, blk_qofs = lx[12], lx[13], lx[14], lx[15]
    nblk = blk_rstart.shape[0] - 1
    worst = 1.0
    for b in range(nblk):
        m = blk_rstart[b + 1] - blk_rstart[b]
        c0, n = blk_cstart[b], blk_cstart[b + 1] - blk_cstart[b]
        d0, nd = blk_dstart[b], blk_dstart[b + 1] - blk_dstart[b]
        K = Kval[blk_kofs[b]:blk_kofs[b + 1]]
        # Householder QR of the scaled dependent columns (m x nd, column-major in Qf)
        Q = Qf[blk_qofs[b]:blk_qofs[b + 1]]
        for cc in range(nd):
            loc = blk_dep[d0 + cc]
            sc = colscale[blk_cols[c0 + loc]]
            for rr in range(m):
                Q[cc * m + rr] = K[rr * n + loc] * sc
        rmax = 0.0
        rmin = np.inf
        for k in range(nd):
            nrm = 0.0
            for rr in range(k, m):
                nrm += Q[k * m + rr] ** 2
            nrm = np.sqrt(nrm)
            a = Q[k * m + k]
            alpha = -nrm if a >= 0.0 else nrm
            tau[d0 + k] = 0.0
            if nrm > 0.0:
                Q[k * m + k] = a - alpha
                vnorm2 = 0.0
                for rr in range(k, m):
                    vnorm2 += Q[k * m + rr] ** 2
                if vnorm2 > 0.0:
                    tau[d0 + k] = 2.0 / vnorm2
                    for cc in range(k + 1, nd):
                        s = 0.0
                        for rr in range(k, m):
                            s += Q[k * m + rr] * Q[cc * m + rr]
                        s *= tau[d0 + k]
                        for rr in range(k, m):
                            Q[cc * m + rr] -= s * Q[k * m + rr]
            # the reflector's head stays in Q; R_kk = alpha goes to the second half of tau
            tau[tau.shape[0] // 2 + d0 + k] = alpha
            ak = abs(alpha)
            rmax = max(rmax, ak)
            rmin = min(rmin, ak)
        if nd > 0:
            worst = min(worst, rmin / rmax if rmax > 0.0 else 0.0)
    return worst


@njit(cache=True, nogil=True, _nrt=False)
def _solve_blocks(lx, cl, Kval, Qf, tau, colscale, x, gam, w):
    """Dependent speeds of cluster ``cl`` in ``x`` from the others, block after block in
    solve order (eqs. 34/35 per loop, and eqs. 72-80's propagation of the known
    quantities into the next coupled loop): ``K_D x_D = gam - K_I x_I``."""
    cl_kstart = lx[7]
    blk_rstart, blk_rows, blk_cstart, blk_cols = lx[8], lx[9], lx[10], lx[11]
    blk_dstart, blk_dep, blk_kofs, blk_qofs = lx[12], lx[13], lx[14], lx[15]
    half = tau.shape[0] // 2
    for b in range(cl_kstart[cl], cl_kstart[cl + 1]):
        r0, m = blk_rstart[b], blk_rstart[b + 1] - blk_rstart[b]
        c0, n = blk_cstart[b], blk_cstart[b + 1] - blk_cstart[b]
        d0, nd = blk_dstart[b], blk_dstart[b + 1] - blk_dstart[b]
        K = Kval[blk_kofs[b]:blk_kofs[b + 1]]
        Q = Qf[blk_qofs[b]:blk_qofs[b + 1]]
        for cc in range(nd):  # dependent entries do not enter the right-hand side
            x[blk_cols[c0 + blk_dep[d0 + cc]]] = 0.0
        for rr in range(m):
            s = gam[blk_rows[r0 + rr]]
            for cc in range(n):
                s -= K[rr * n + cc] * x[blk_cols[c0 + cc]]
            w[rr] = s
        for k in range(nd):  # w <- Q^T w
            s = 0.0
            for rr in range(k, m):
                s += Q[k * m + rr] * w[rr]
            s *= tau[d0 + k]
            for rr in range(k, m):
                w[rr] -= s * Q[k * m + rr]
        for k in range(nd - 1, -1, -1):  # R y = (Q^T w)[:nd]
            s = w[k]
            for cc in range(k + 1, nd):
                s -= Q[cc * m + k] * w[cc]
            w[k] = s / tau[half + d0 + k]
        for cc in range(nd):
            c = blk_cols[c0 + blk_dep[d0 + cc]]
            x[c] = w[cc] * colscale[c]


@njit(cache=True, nogil=True, _nrt=False)
def _origin_columns(v_adr, nv_j, P, S, S6):
    """Motion-subspace columns about the origin: s_lin + P_j x s_ang."""
    nb = nv_j.shape[0]
    for i in range(nb):
        for c in range(v_adr[i], v_adr[i] + nv_j[i]):
            a0, a1, a2 = S[c, 3], S[c, 4], S[c, 5]
            S6[c, 0] = S[c, 0] + P[i, 1] * a2 - P[i, 2] * a1
            S6[c, 1] = S[c, 1] + P[i, 2] * a0 - P[i, 0] * a2
            S6[c, 2] = S[c, 2] + P[i, 0] * a1 - P[i, 1] * a0
            S6[c, 3] = a0
            S6[c, 4] = a1
            S6[c, 5] = a2


@njit(cache=True, nogil=True, _nrt=False)
def _positions_and_blocks(desc, proto, q):
    """Kinematics at q, closure rows, block matrices and their factors.  This and
    :func:`dynamics`, the two kernels of a right-hand side, take their workspace as one
    table (:mod:`.workspace`; ``RCRFormulation._kernels`` lists it) and are
    ``_nrt=False``, as dca's ``_evaluate``; the passes below that allocate scratch are
    ``_nrt=True`` and free it before they return.  (Not one kernel: numba would compile
    ``dynamics``'s code a second time into it, 4.4 s more cold compile, +31 % for rcr's
    own kernels.)"""
    (mk, ca, lx, nb, nv_j, x, R, P, S, S6, V0, GA, GB, g0, phi, colscale, Kval, Qf, tau, pos) = unpack(desc, proto)
    position_rows(mk, ca, lx, nb, nv_j, q, x, R, P, S, S6, V0, GA, GB, g0, phi, Kval, pos)
    return block_qr(lx, colscale, Kval, Qf, tau)


@njit(cache=True, nogil=True, _nrt=False)
def joint_space_rows(jr_k, jr_row, jr_q, jr_val, jr_q0, q, phi, Kval):
    """``embedding``'s constant joint-space rows (gears, paper 003 eq. 37) into the block
    matrices: entry k puts ``jr_val[k]`` at ``Kval[jr_k[k]]`` and adds
    ``jr_val[k] (q[jr_q[k]] - jr_q0[k])`` to the row's residual (``rcr``: no entries)."""
    for k in range(jr_k.shape[0]):
        phi[jr_row[k]] = 0.0
    for k in range(jr_k.shape[0]):
        Kval[jr_k[k]] = jr_val[k]
        phi[jr_row[k]] += jr_val[k] * (q[jr_q[k]] - jr_q0[k])


@njit(cache=True, nogil=True, _nrt=True)
def position_rows(mk, ca, lx, nb, nv_j, q, x, R, P, S, S6, V0, GA, GB, g0, phi, Kval, pos):
    """Kinematics at q, the cut joints' closure rows and residuals, and the block
    matrices (not yet factorised: :func:`block_qr`)."""
    parent, v_adr, pred, succ = mk[0], mk[3], mk[4], mk[5]
    nj = pred.shape[0]
    fk_positions(mk, q, x, R, P)
    motion_subspace(mk, q, R, S)
    _origin_columns(v_adr, nv_j, P, S, S6)
    if nj > nb:
        _cut_rows(ca, nb, x, R, V0, P, GA, GB, g0, phi, lx[17], 0.0, 0.0)
        _origin_rows(nb, nj, lx[17], ca[11], P, GA, GB)
    block_rows(lx, parent, v_adr, nv_j, succ, pred, S6, GA, GB, Kval, pos)


@njit(cache=True, nogil=True, _nrt=False)
def _close_velocities(lx, Kval, Qf, tau, colscale, v, zero_rows, w):
    """Eq. (34) for every cluster: dependent speeds from the independent ones."""
    ncl = lx[1].shape[0]
    for cl in range(ncl):
        _solve_blocks(lx, cl, Kval, Qf, tau, colscale, v, zero_rows, w)


@njit(cache=True, nogil=True, _nrt=True)
def _body_terms(mass, inertia, x, R, V, Fext, I6, p6):
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
def _to_origin(x, P, A, c, Ao, co):
    """Accelerations about each COM and joint velocity-product terms about each joint
    point, re-expressed about the origin."""
    nb = x.shape[0]
    for i in range(nb):
        for k in range(3, 6):
            Ao[i, k] = A[i, k]
            co[i, k] = c[i, k]
        Ao[i, 0] = A[i, 0] + x[i, 1] * A[i, 5] - x[i, 2] * A[i, 4]
        Ao[i, 1] = A[i, 1] + x[i, 2] * A[i, 3] - x[i, 0] * A[i, 5]
        Ao[i, 2] = A[i, 2] + x[i, 0] * A[i, 4] - x[i, 1] * A[i, 3]
        co[i, 0] = c[i, 0] + P[i, 1] * c[i, 5] - P[i, 2] * c[i, 4]
        co[i, 1] = c[i, 1] + P[i, 2] * c[i, 3] - P[i, 0] * c[i, 5]
        co[i, 2] = c[i, 2] + P[i, 0] * c[i, 4] - P[i, 1] * c[i, 3]


@njit(cache=True, nogil=True, _nrt=False)
def _loop_rhs(nb, nj, row_adr, nc_j, pred, succ, GA, GB, g0, Abias, gam):
    """Acceleration-level closure right-hand side (eq. 35's remainder terms):
    ``gam = -(G_b A_t^b + G_a A_t^a + g)`` with the accelerations at zero joint
    accelerations (velocity products only)."""
    for j in range(nb, nj):
        a, b = pred[j], succ[j]
        for r in range(row_adr[j], row_adr[j] + nc_j[j]):
            s = g0[r]
            for k in range(6):
                s += GB[r, k] * Abias[b, k]
                if a >= 0:
                    s += GA[r, k] * Abias[a, k]
            gam[r] = -s


@njit(cache=True, nogil=True, _nrt=False)
def _cluster_maps(lx, cl, parent, v_adr, nv_j, S6, co, N, g, Gam, beta):
    """Eqs. (50)-(54), (58) over a whole cluster: each body's spatial acceleration relative
    to the loop base as ``Gam_k vdot_I + beta_k`` (Gam: the nonholonomic partial
    velocities of eq. 58; beta: the remainder, which carries eq. 79-80's Theta terms
    from one coupled loop into the next)."""
    body_cl, cl_bstart, cl_bodies, cl_istart = lx[0], lx[3], lx[4], lx[5]
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
def _dynamics(lx, parent, v_adr, nv_j, S6, co, I6, p6, N, g, Gam, beta, U, Dl, u, Ucl, Dcl, ucl, a, vdot, t6):
    """Recursive triangularisation (eqs. 14-19, 60-66) and forward substitution (eqs.
    24-27, 67-71), with every loop cluster folded onto its base body as one virtual
    body of d_C independent speeds (the paper's p_i with inertias I^{p;0}, I^p)."""
    return _dynamics_loop(lx, parent, v_adr, nv_j, S6, co, I6, p6, N, g, Gam, beta, U, Dl, u, Ucl, Dcl, ucl, a,
                          vdot, t6, np.empty(3), np.empty(max(Dcl.shape[1], 1)), np.empty((6, 6)), np.empty(6))


@njit(cache=True, nogil=True, _nrt=False)
def _dynamics_loop(lx, parent, v_adr, nv_j, S6, co, I6, p6, N, g, Gam, beta, U, Dl, u, Ucl, Dcl, ucl, a, vdot, t6,
                   tmp, tmpd, Isum, psum):
    body_cl, cl_base, cl_first, cl_bstart, cl_bodies, cl_istart = lx[0], lx[1], lx[2], lx[3], lx[4], lx[5]
    nb = parent.shape[0]
    IA = I6
    pA = p6
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
            _chol(Dl[i], n)
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
            if d > 0 and not _chol(Dc, d):
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


@njit(cache=True, nogil=True, _nrt=False)
def dynamics(desc, proto, q, v_in, out):
    """The rest of one RCR right-hand side after :func:`_positions_and_blocks` (docs/rcr.md):
    velocity closure, kinematics, loop maps, the recursive triangularisation and forward
    substitution; then, if ``out`` is as long as the state (q, v_in), the right-hand side
    (qdot of the closed speeds ``v``, ``vdot``) into it, in the same call
    (:func:`~engine.kinematics.ode_rates`).  Returns False if a cluster's reduced inertia
    is not positive definite or a rate is not finite."""
    (mk, ca, fa, lx, mass, inertia, q_adr, nv_j, spring_tree, spring_cut, x, R, P, S, S6, V, c, Ab, Ao, co, Fext, jq,
     jq_ref, GA, GB, g0, phi, gam, zero_rows, colscale, Kval, Qf, tau, w, I6, p6, N, g, Gam, beta, U, Dl, u, Ucl,
     Dcl, ucl, a, v, vdot, t6, zero_v) = unpack(desc, proto)
    parent, v_adr, pred, succ = mk[0], mk[3], mk[4], mk[5]
    nb = parent.shape[0]
    nj = pred.shape[0]
    for k in range(v.shape[0]):
        v[k] = v_in[k]
    _close_velocities(lx, Kval, Qf, tau, colscale, v, zero_rows, w)  # eq. (34)
    fk_velocities(mk, x, P, S, v, V, c)
    tree_applied_forces(fa, q, q_adr, spring_tree, spring_cut, x, R, V, jq, jq_ref, Fext)
    fk_accelerations(mk, x, P, S, c, zero_v, Ab)
    _to_origin(x, P, Ab, c, Ao, co)
    if nj > nb:
        _cut_rows(ca, nb, x, R, V, P, GA, GB, g0, phi, lx[17], 0.0, 0.0)
        _origin_rows(nb, nj, lx[17], ca[11], P, GA, GB)
        _loop_rhs(nb, nj, lx[17], ca[11], pred, succ, GA, GB, g0, Ao, gam)
    # particular solution of eq. (35) with zero independent accelerations, and the
    # columns of N (dependent speeds per unit independent speed, eq. 34)
    cl_istart, ind_cols = lx[5], lx[6]
    ncl = lx[1].shape[0]
    for cl in range(ncl):
        for k in range(cl_istart[cl], cl_istart[cl + 1]):
            g[ind_cols[k]] = 0.0
        _solve_blocks(lx, cl, Kval, Qf, tau, colscale, g, gam, w)
        for e in range(cl_istart[cl + 1] - cl_istart[cl]):
            col = N[e]
            for k in range(cl_istart[cl], cl_istart[cl + 1]):
                col[ind_cols[k]] = 0.0
            col[ind_cols[cl_istart[cl] + e]] = 1.0
            _solve_blocks(lx, cl, Kval, Qf, tau, colscale, col, zero_rows, w)
        _cluster_maps(lx, cl, parent, v_adr, nv_j, S6, co, N, g, Gam, beta)
    _body_terms(mass, inertia, x, R, V, Fext, I6, p6)
    if not _dynamics(lx, parent, v_adr, nv_j, S6, co, I6, p6, N, g, Gam, beta, U, Dl, u, Ucl, Dcl, ucl, a, vdot,
                     t6):
        return False
    if out.shape[0] != q.shape[0] + v_in.shape[0]:
        return True
    return ode_rates(mk, q, v, vdot, out)


@njit(cache=True, nogil=True, _nrt=True)
def newton_step(mk, lx, nb, nv_j, q, phi, colscale, Kval, Qf, tau, w, dq, rhs, tol):
    """One Newton step on the loop equations (issue 18 item 4): the dependent coordinates'
    increment from ``K_D dq_D = -Phi - K_I 0`` with the blocks and factors of eq. (34),
    applied to q (spherical joints: the increment as a rotation in the predecessor's
    frame); none if the largest |Phi| is already at most ``tol``.  Returns that |Phi|."""
    jtype, q_adr, v_adr = mk[1], mk[2], mk[3]
    ncl = lx[1].shape[0]
    res = 0.0
    for r in range(phi.shape[0]):
        res = max(res, abs(phi[r]))
        rhs[r] = -phi[r]
    if res <= tol:
        return res
    for k in range(dq.shape[0]):
        dq[k] = 0.0
    for cl in range(ncl):
        _solve_blocks(lx, cl, Kval, Qf, tau, colscale, dq, rhs, w)
    qa = np.empty(4)
    qb = np.empty(4)
    for i in range(nb):
        n = nv_j[i]
        if n == 0:
            continue
        qi, vi = q_adr[i], v_adr[i]
        if jtype[i] == SPHERICAL:
            w0, w1, w2 = dq[vi], dq[vi + 1], dq[vi + 2]
            ang = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            if ang > 0.0:
                sa = np.sin(0.5 * ang) / ang
                qa[0] = np.cos(0.5 * ang)
                qa[1] = sa * w0
                qa[2] = sa * w1
                qa[3] = sa * w2
                for k in range(4):
                    qb[k] = q[qi + k]
                quat_mul(qa, qb, q[qi:qi + 4])
        else:
            for k in range(n):
                q[qi + k] += dq[vi + k]
    return res
