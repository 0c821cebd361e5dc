"""Numba kernels of formulation ``rcr`` (paper 002; docs/rcr.md): kinematics and closure
rows at a configuration, the partition's block matrices and their QR factors, the
dependent speeds from the independent ones, one right-hand side, and the Newton step
that closes the loops.  The articulated-body passes are in :mod:`.rcr_articulated`.

Every spatial quantity here is in world components *about the world origin*
(Featherstone's absolute form), so the shift matrices S^k of paper 002 eq. (10)
are identities and a body's articulated inertia adds to its parent's without a
transform.  Motion vectors are ``[v_O; w]`` (the velocity of the body point at
the origin, the angular velocity), forces ``[f; n_O]``.

The partition reaches the kernels as ``lx``, a :class:`.rcr_layout.PartitionLayout`
(built by :func:`engine.formulations.rcr_partition.build_partition`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..forces import tree_applied_forces
from ..kinematics import fk_accelerations, fk_positions, fk_velocities, motion_subspace, ode_rates
from ..model import SPHERICAL
from ..spatial import quat_mul
from .rcr_articulated import body_terms, cluster_maps, solve_articulated
from .tree_kernels import Baumgarte, cut_rows
from .workspace import unpack


class Poses(NamedTuple):
    """The tree at one configuration, world components (:func:`position_rows` fills it)."""

    x: np.ndarray  # (nb, 3) centres of mass
    R: np.ndarray  # (nb, 3, 3) orientations
    P: np.ndarray  # (nj, 3) joint points
    S: np.ndarray  # (nv, 6) motion subspace of each tree speed about its joint point
    S6: np.ndarray  # (nv, 6) ... about the origin


class CutRows(NamedTuple):
    """The cut joints' closure rows about the origin (``tree_kernels.cut_rows``, then
    re-expressed about the origin), one per constrained direction."""

    GA: np.ndarray  # (ncr, 6) rows on the predecessor's spatial acceleration
    GB: np.ndarray  # (ncr, 6) ... on the successor's
    g0: np.ndarray  # (ncr,) velocity-product part of the rows
    phi: np.ndarray  # (rows,) closure residuals (embedding: its joint-space rows after the cut rows)


class Blocks(NamedTuple):
    """The partition's block loop Jacobians and the QR factors of their dependent columns
    (:func:`block_rows`, :func:`block_qr`; offsets in the :class:`.rcr_layout.PartitionLayout`)."""

    Kval: np.ndarray  # every block's loop Jacobian, m x n row-major at blk_kofs
    Qf: np.ndarray  # Householder vectors of the scaled dependent columns, m x r column-major at blk_qofs
    tau: np.ndarray  # (2 ndep,) reflector scales, then the diagonals R_kk
    colscale: np.ndarray  # (nv,) the partition's mass-whitening factor 1/sqrt(M_cc) of each speed


class NewtonScratch(NamedTuple):
    """Scratch of :func:`newton_step`."""

    w: np.ndarray  # (rows,) block solve
    dq: np.ndarray  # (nv,) the tree speeds' increment
    rhs: np.ndarray  # (rows,) -Phi


@njit(cache=True, nogil=True, _nrt=False)
def _origin_rows(nb, nj, row_adr, nc_j, P, GA, GB):
    """Cut rows acting on spatial accelerations about P_j (tree_kernels.cut_rows) re-expressed
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
    speeds at once); :func:`block_qr` factorises it.  A row whose ``row_joint`` is negative
    is not a cut-joint row (formulation ``embedding``'s constant joint-space rows): it is
    left zero here for its owner to fill."""
    blk_rstart, blk_rows, blk_cstart, blk_cols = lx.blk_rstart, lx.blk_rows, lx.blk_cstart, lx.blk_cols
    blk_kofs, row_joint, lca = lx.blk_kofs, lx.row_joint, lx.lca
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
    so redundant closure rows need no special case.  Returns :func:`block_conditioning`."""
    blk_rstart, blk_cstart, blk_cols = lx.blk_rstart, lx.blk_cstart, lx.blk_cols
    blk_dstart, blk_dep, blk_kofs, blk_qofs = lx.blk_dstart, lx.blk_dep, lx.blk_kofs, lx.blk_qofs
    nblk = blk_rstart.shape[0] - 1
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
    return block_conditioning(lx, tau)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _block_max(dstart, tau, b, half):
    """Block ``b``'s largest ``|R_ii|`` (the R diagonals :func:`block_qr` left in the second
    half of ``tau``, from ``half``)."""
    rmax = 0.0
    for k in range(dstart[b], dstart[b + 1]):
        rmax = max(rmax, abs(tau[half + k]))
    return rmax


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _pivot(tau, half, k, rmax):
    """Dependent speed ``k``'s pivot ``|R_kk|`` over its block's largest, ``rmax``."""
    return abs(tau[half + k]) / rmax if rmax > 0.0 else 0.0


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _one_block(dstart, tau, b):
    """Block ``b``'s ``min |R_ii| / max |R_ii|``: its smallest :func:`_pivot`; 1.0 for a
    block without dependent speeds."""
    half = tau.shape[0] // 2
    if dstart[b + 1] == dstart[b]:
        return 1.0
    rmax = _block_max(dstart, tau, b, half)
    worst = np.inf
    for k in range(dstart[b], dstart[b + 1]):
        worst = min(worst, _pivot(tau, half, k, rmax))
    return worst


@njit(cache=True, nogil=True, _nrt=False)
def block_conditioning(lx, tau):
    """The smallest ``min |R_ii| / max |R_ii|`` of any block (:func:`_one_block`): the
    conditioning the partition monitor watches."""
    dstart = lx.blk_dstart
    worst = 1.0
    for b in range(dstart.shape[0] - 1):
        worst = min(worst, _one_block(dstart, tau, b))
    return worst


@njit(cache=True, nogil=True, _nrt=False)
def dead_point_bound(dstart, tau, conds, last, dt, rtol, reach, fraction):
    """Each block's conditioning (:func:`_one_block`) into ``conds``, and where ``last``
    holds them ``dt`` > 0 seconds before (same length), the adaptive step bound of
    :meth:`.rcr_monitor.PartitionMonitor.step_bound`: ``fraction`` of the least time in
    which a falling block would reach zero at its rate, over the blocks under ``rtol``
    or within ``reach`` such falls of zero; ``inf`` for none."""
    bound = np.inf
    for b in range(conds.shape[0]):
        c = _one_block(dstart, tau, b)
        conds[b] = c
        if dt > 0.0 and last.shape[0] == conds.shape[0]:
            drop = last[b] - c
            if drop > 0.0 and (c < rtol or c < reach * drop):
                bound = min(bound, fraction * c / (drop / dt))
    return bound


@njit(cache=True, nogil=True, _nrt=False)
def dying_blocks(dstart, tau, ends, rtol, reach):
    """The partition monitor's watch of each pivot at an accepted state: each dependent
    speed's ``|R_kk|`` over its block's largest now, against ``ends``, its value at the last
    accepted state (NaN: unknown).  A block dies where one of its pivots reaches zero,
    which its smallest pivot (:func:`_one_block`) hides while another block stays lower
    (``mechanism(40013, 16, 4)`` under embedding: one block held at 0.0025 while the other
    fell from 0.05 to a dead point).  Returns whether a pivot under ``rtol`` would reach zero
    within ``reach`` steps like the last; ``ends`` gets the values now."""
    dying = False
    half = tau.shape[0] // 2
    for b in range(dstart.shape[0] - 1):
        rmax = _block_max(dstart, tau, b, half)
        for k in range(dstart[b], min(dstart[b + 1], ends.shape[0])):
            c = _pivot(tau, half, k, rmax)
            drop = ends[k] - c
            ends[k] = c
            if c < rtol and drop > 0.0 and c < reach * drop:
                dying = True
    return dying


@njit(cache=True, nogil=True, _nrt=False)
def _solve_blocks(lx, cl, blocks, x, gam, w):
    """Dependent speeds of cluster ``cl`` in ``x`` from the others, block after block in
    solve order (eqs. 34/35 per loop, and eqs. 72-80's propagation of the known
    quantities into the next coupled loop): ``K_D x_D = gam - K_I x_I``."""
    Kval, Qf, tau, colscale = blocks.Kval, blocks.Qf, blocks.tau, blocks.colscale
    cl_kstart = lx.cl_kstart
    blk_rstart, blk_rows, blk_cstart, blk_cols = lx.blk_rstart, lx.blk_rows, lx.blk_cstart, lx.blk_cols
    blk_dstart, blk_dep, blk_kofs, blk_qofs = lx.blk_dstart, lx.blk_dep, lx.blk_kofs, lx.blk_qofs
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
def positions_and_blocks(desc, proto, q):
    """Kinematics at q, closure rows, block matrices and their factors.  This and
    :func:`dynamics`, the two kernels of a right-hand side, take their workspace as one
    table (:mod:`.workspace`; ``RCRFormulation._kernels`` lists it) and are
    ``_nrt=False``, as dca's ``_evaluate``; the passes below that allocate scratch are
    ``_nrt=True`` and free it before they return.  (Not one kernel: numba would compile
    ``dynamics``'s code a second time into it, 4.4 s more cold compile, +31 % for rcr's
    own kernels.)"""
    (mk, ca, lx, nb, nv_j, x, R, P, S, S6, V0, GA, GB, g0, phi, colscale, Kval, Qf, tau, pos,
     lowest) = unpack(desc, proto)
    position_rows(mk, ca, lx, nb, nv_j, q, Poses(x, R, P, S, S6), V0, CutRows(GA, GB, g0, phi), Kval, pos)
    return lowest_so_far(lowest, lx.blk_dstart, tau, block_qr(lx, colscale, Kval, Qf, tau))


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def lowest_so_far(lowest, dstart, tau, cond):
    """``cond``, kept in ``lowest[0]`` where it is the lowest since that was last reset
    (``inf``), and each pivot's ``|R_kk|`` over its block's largest in ``lowest[1 + k]``
    likewise: what the right-hand side's stages saw between two closed states, for
    :func:`.rcr_rows.close_post` and :meth:`.rcr_monitor.PartitionMonitor._rk4_guarded`."""
    if cond < lowest[0]:
        lowest[0] = cond
    half = tau.shape[0] // 2
    for b in range(dstart.shape[0] - 1):
        rmax = _block_max(dstart, tau, b, half)
        for k in range(dstart[b], min(dstart[b + 1], lowest.shape[0] - 1)):
            c = _pivot(tau, half, k, rmax)
            if c < lowest[1 + k]:
                lowest[1 + k] = c
    return cond


@njit(cache=True, nogil=True, _nrt=False)
def pivots_fell(dstart, lowest, ends, rtol, fall):
    """Whether a pivot's lowest value over a step's stages (``lowest[1 + k]``,
    :func:`lowest_so_far`) is under ``rtol`` and more than ``fall`` times below its value
    at the step's start (``ends[k]``, :func:`dying_blocks`)."""
    for k in range(min(dstart[dstart.shape[0] - 1], ends.shape[0], lowest.shape[0] - 1)):
        low = lowest[1 + k]
        if low < rtol and fall * low < ends[k]:
            return True
    return False


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
def position_rows(mk, ca, lx, nb, nv_j, q, poses, V0, rows, Kval, pos):
    """Kinematics at q, the cut joints' closure rows and residuals, and the block
    matrices (not yet factorised: :func:`block_qr`): ``poses`` and ``rows`` filled,
    the rows with the twists ``V0`` (zero: position-level rows)."""
    x, R, P, S, S6 = poses.x, poses.R, poses.P, poses.S, poses.S6
    GA, GB, g0, phi = rows.GA, rows.GB, rows.g0, rows.phi
    parent, v_adr, pred, succ = mk.parent, mk.v_adr, mk.pred, mk.succ
    nj = pred.shape[0]
    fk_positions(mk, q, x, R, P)
    motion_subspace(mk, q, R, S)
    _origin_columns(v_adr, nv_j, P, S, S6)
    if nj > nb:
        cut_rows(ca, nb, x, R, V0, P, GA, GB, g0, phi, lx.row_adr, Baumgarte(0.0, 0.0))
        _origin_rows(nb, nj, lx.row_adr, ca.nc_j, P, GA, GB)
    block_rows(lx, parent, v_adr, nv_j, succ, pred, S6, GA, GB, Kval, pos)


@njit(cache=True, nogil=True, _nrt=False)
def close_velocities(lx, blocks, v, zero_rows, w):
    """Eq. (34) for every cluster: dependent speeds from the independent ones."""
    ncl = lx.cl_base.shape[0]
    for cl in range(ncl):
        _solve_blocks(lx, cl, blocks, v, zero_rows, w)


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
def dynamics(desc, proto, q, v_in, out):
    """The rest of one RCR right-hand side after :func:`positions_and_blocks` (docs/rcr.md):
    velocity closure, kinematics, loop maps, the recursive triangularisation and forward
    substitution; then, if ``out`` is as long as the state (q, v_in), the right-hand side
    (qdot of the closed speeds ``v``, ``vdot``) into it, in the same call
    (:func:`~engine.kinematics.ode_rates`).  Returns False if a cluster's reduced inertia
    is not positive definite or a rate is not finite."""
    (mk, ca, fa, lx, mass, inertia, q_adr, nv_j, spring_tree, spring_cut, poses, V, c, Ab, Ao, co, Fext, jq, jq_ref,
     rows, gam, nu, zero_rows, blocks, w, art, maps, fold, a, v, vdot, t6, zero_v) = unpack(desc, proto)
    x, R, P, S, S6 = poses.x, poses.R, poses.P, poses.S, poses.S6
    GA, GB, g0, phi = rows.GA, rows.GB, rows.g0, rows.phi
    N, g = maps.N, maps.g
    parent, v_adr, pred, succ = mk.parent, mk.v_adr, mk.pred, mk.succ
    nb = parent.shape[0]
    nj = pred.shape[0]
    for k in range(v.shape[0]):
        v[k] = v_in[k]
    close_velocities(lx, blocks, v, nu, w)  # eq. (34); nu: the rheonomic rows' rates (embedding's drivers)
    fk_velocities(mk, x, P, S, v, V, c)
    tree_applied_forces(fa, q, q_adr, spring_tree, spring_cut, x, R, V, jq, jq_ref, Fext)
    fk_accelerations(mk, x, P, S, c, zero_v, Ab)
    _to_origin(x, P, Ab, c, Ao, co)
    if nj > nb:
        cut_rows(ca, nb, x, R, V, P, GA, GB, g0, phi, lx.row_adr, Baumgarte(0.0, 0.0))
        _origin_rows(nb, nj, lx.row_adr, ca.nc_j, P, GA, GB)
        _loop_rhs(nb, nj, lx.row_adr, ca.nc_j, pred, succ, GA, GB, g0, Ao, gam)
    # particular solution of eq. (35) with zero independent accelerations, and the
    # columns of N (dependent speeds per unit independent speed, eq. 34)
    cl_istart, ind_cols = lx.cl_istart, lx.ind_cols
    ncl = lx.cl_base.shape[0]
    for cl in range(ncl):
        for k in range(cl_istart[cl], cl_istart[cl + 1]):
            g[ind_cols[k]] = 0.0
        _solve_blocks(lx, cl, blocks, g, gam, w)
        for e in range(cl_istart[cl + 1] - cl_istart[cl]):
            col = N[e]
            for k in range(cl_istart[cl], cl_istart[cl + 1]):
                col[ind_cols[k]] = 0.0
            col[ind_cols[cl_istart[cl] + e]] = 1.0
            _solve_blocks(lx, cl, blocks, col, zero_rows, w)
        cluster_maps(lx, cl, parent, v_adr, nv_j, S6, co, maps)
    body_terms(mass, inertia, x, R, V, Fext, art.IA, art.pA)
    if not solve_articulated(lx, parent, v_adr, nv_j, S6, co, art, maps, fold, a, vdot, t6):
        return False
    if out.shape[0] != q.shape[0] + v_in.shape[0]:
        return True
    return ode_rates(mk, q, v, vdot, out)


@njit(cache=True, nogil=True, _nrt=True)
def newton_step(mk, lx, nb, nv_j, q, phi, blocks, work, tol):
    """One Newton step on the loop equations: the dependent coordinates'
    increment from ``K_D dq_D = -Phi - K_I 0`` with the blocks and factors of eq. (34),
    applied to q (spherical joints: the increment as a rotation in the predecessor's
    frame); none if the largest |Phi| is already at most ``tol``.  Returns that |Phi|.
    ``blocks``: the factors of :func:`positions_and_blocks` at q; ``work``: scratch."""
    w, dq, rhs = work.w, work.dq, work.rhs
    jtype, q_adr, v_adr = mk.jtype, mk.q_adr, mk.v_adr
    ncl = lx.cl_base.shape[0]
    res = 0.0
    for r in range(phi.shape[0]):
        res = max(res, abs(phi[r]))
        rhs[r] = -phi[r]
    if res <= tol:
        return res
    for k in range(dq.shape[0]):
        dq[k] = 0.0
    for cl in range(ncl):
        _solve_blocks(lx, cl, blocks, dq, rhs, w)
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
