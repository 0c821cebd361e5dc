"""``rcr``'s and ``embedding``'s output rows on mechanisms with loops, in compiled code: the
step's loop closure (:func:`close_post`), the output instant's checks, multipliers and
reactions (:func:`loop_check`), as :class:`.rcr.RCRFormulation` does them in Python --
which calls the same kernels for the closure (:func:`close_loops`: the Newton steps of
:func:`close_post`), the closure residual (:func:`closure_residual`) and the multipliers
(:func:`loop_multipliers`), so the two make the same rows bit for bit
(tests/engine/test_row_loop.py).

The multipliers: coordinate reduction never forms them; they follow from the generalized
forces the accelerations leave unbalanced, ``K^T lam = -(M vdot + h)`` -- one
inverse-dynamics sum about the origin and a least-squares solve, minimum-norm where
closure rows are redundant (singular values at most ``rcond`` of the largest dropped, as
numpy's ``lstsq``), as in ``dense``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kinematics import classical_into, normalize_quaternions
from .base import TICK_FAILED
from .dense_linalg import svd_work, thin_svd
from .rcr_articulated import body_terms
from .rcr_kernels import block_conditioning, close_velocities, dying_blocks, newton_step, pivots_fell
from .rcr_partition import SWITCH_FALL
from .rk4_kernel import call_by_table_bool, call_positions_by_table, call_void
from .stabilise import projector_project, projector_residual
from .workspace import unpack


@njit(cache=True, nogil=True, _nrt=True)
def close_post(desc, proto, y, out):
    """:meth:`.rcr.RCRFormulation.post_step` after one rk4 step, in place on ``y`` (``out``
    unused), for the compiled row loop (:func:`.rk4_kernel.rk4_interval_split`): the
    quaternions renormalised, Newton on the loop equations for the dependent coordinates
    (the positions kernel by address, ``positions``; :func:`.rcr_kernels.newton_step`), the
    quaternions again, eq. (34) for the dependent speeds; then, where ``hold`` has a
    projector, the drivers held (:func:`_hold`).  Where Python would do more -- raise
    (Newton not converged), or re-choose the partition (a block conditioning under the
    threshold ``search[0]``, or a step whose stages or end, ``lowest[0]`` since the last
    step's end (:func:`.rcr_kernels.lowest_so_far`, reset here), fell by more than
    ``SWITCH_FALL`` below the last step's end, or any pivot's lowest over them,
    ``lowest[1 + k]``, as far below its value there (``ends``,
    :func:`.rcr_kernels.pivots_fell`), or a pivot of any block would reach zero within
    ``reach`` steps like this one (:func:`.rcr_kernels.dying_blocks`, which updates
    ``ends``), or ``singular[0]``: Python's monitor is tracking a near-singular pass) --
    it sets ``tick[TICK_FAILED]`` and the row loop leaves the interval to Python.  ``search``: [the partition monitor's threshold,
    SWITCH_RTOL, the conditioning at the last step's end], as
    :meth:`.rcr_monitor.PartitionMonitor._searches` keeps it."""
    (mk, nq, positions, lx, nb, nv_j, phi, blocks, work, nu, w, tol, max_iter, search, lowest, singular,
     tick, hold, ends, reach) = unpack(desc, proto)
    q, v = y[:nq], y[nq:]
    normalize_quaternions(mk, q)
    if phi.shape[0]:  # as RCRFormulation._close: nothing more without rows to close
        cond, res, it = _newton(mk, positions, lx, nb, nv_j, q, phi, blocks, work, tol, max_iter)
        if cond != cond or not (np.isfinite(res) and res < 1e3 * tol + 1e-9):
            tick[TICK_FAILED] = 1.0
            return False
        close_velocities(lx, blocks, v, nu, w)
        if cond >= search[1]:
            search[0] = search[1]
        # the step's stages and closure (``lowest``), or its end, fell by more than SWITCH_FALL:
        # a dead point of the partition near or inside the step, which Python takes in parts
        low = lowest[0]
        falling = (low < search[1] and SWITCH_FALL * low < search[2]) or pivots_fell(
            lx.blk_dstart, lowest, ends, search[1], SWITCH_FALL)
        lowest[:] = np.inf
        search[2] = cond
        # or a pivot of any block would reach zero within ``reach`` steps like this one
        falling = dying_blocks(lx.blk_dstart, blocks.tau, ends, search[1], reach) or falling
        if cond < search[0] or falling or singular[0] != 0.0:
            tick[TICK_FAILED] = 1.0
            return False
    return hold[0] == 0 or _hold(hold, q, v, tol, max_iter, tick)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _newton(mk, positions, lx, nb, nv_j, q, phi, blocks, work, tol, max_iter):
    """Newton on the loop equations for the dependent coordinates of ``q`` (the positions
    kernel by address before each step), then the quaternions renormalised: (the block
    conditioning, the last residual, the steps beyond the first); after ``max_iter`` steps
    the next is the last whatever its residual."""
    it = 0
    while True:
        cond = call_positions_by_table(positions[0], positions[1], q)
        lim = tol if it < max_iter else np.inf
        res = newton_step(mk, lx, nb, nv_j, q, phi, blocks, work, lim)
        if res <= lim or cond != cond or it > max_iter:
            break
        it += 1
    normalize_quaternions(mk, q)
    return cond, res, it


@njit(cache=True, nogil=True, _nrt=True)
def close_loops(desc, proto, y, result):
    """:meth:`.rcr.RCRFormulation._close` in one call, in place on ``y``: the quaternions
    renormalised, :func:`_newton`, eq. (34) for the dependent speeds; ``result`` gets (the
    block conditioning, the residual, the Newton steps beyond the first), which Python
    judges.  Needs rows to close."""
    mk, nq, positions, lx, nb, nv_j, phi, blocks, work, nu, w, tol, max_iter = unpack(desc, proto)
    q, v = y[:nq], y[nq:]
    normalize_quaternions(mk, q)
    cond, res, it = _newton(mk, positions, lx, nb, nv_j, q, phi, blocks, work, tol, max_iter)
    close_velocities(lx, blocks, v, nu, w)
    result[0], result[1], result[2] = cond, res, it


@njit(cache=True, nogil=True, _nrt=False)
def _hold(hold, q, v, tol, iterations, tick):
    """:meth:`.rcr.RCRFormulation._hold_drivers` at the time ``time[0]``: ``dense``'s
    projector's CLOSURE of ``(q, v)`` (operation ``ops[0]``), and where its largest residual
    exceeds ``tol`` its PROJECT (``ops[1]``, flags ``ops[2]``), in place, counted in
    ``count[0]``; False, with ``tick[TICK_FAILED]``, where Python might decide otherwise or
    the projector fails."""
    proj, proj_desc, clock, phi, K, nu, time, ops, count = hold
    worst = projector_residual(proj, proj_desc, clock, time[0], ops[0], q, v, phi, K, nu, tol, tick)
    if worst != worst:
        return False
    return worst <= tol or projector_project(proj, proj_desc, clock, time[0], iterations, ops, q, v, tick, count, 0)


@njit(cache=True, nogil=True, _nrt=False)
def closure_residual(nb, pred, succ, row_adr, nc_j, GA, GB, g0, Ao):
    """(largest acceleration residual of the cut rows at the accelerations ``Ao`` about the
    origin, the largest sum of its terms' magnitudes): what :func:`.base.check_consistent`
    judges."""
    worst, scale = 0.0, 0.0
    for j in range(nb, pred.shape[0]):
        a, b = pred[j], succ[j]
        for r in range(row_adr[j], row_adr[j] + nc_j[j]):
            t1 = 0.0
            for k in range(6):
                t1 += GB[r, k] * Ao[b, k]
            t2 = 0.0
            if a >= 0:
                for k in range(6):
                    t2 += GA[r, k] * Ao[a, k]
            worst = max(worst, abs(t1 + t2 + g0[r]))
            scale = max(scale, abs(t1) + abs(t2) + abs(g0[r]))
    return worst, scale


@njit(cache=True, nogil=True, _nrt=False)
def _block_multipliers(lx, Kval, Qf, qr_tau, colscale, g, lam):
    """The minimum-norm solution of ``K^T lam = g`` from the partition's block factors
    (:func:`.rcr_kernels.block_qr`), in O(rows) instead of a dense least-squares solve.

    The dependent columns make ``K_D`` block lower triangular in solve order
    (:func:`.rcr_kernels._solve_blocks` reads only earlier blocks' speeds), so ``K_D^T lam
    = g_D`` is solved from the last block back: each block's ``(K_D S)^T lam_b = S g_D``
    (``S`` the column scales) by ``R^T z = S g_D`` and ``lam_b = Q [z; 0]``, then its rows'
    terms leave ``g``.  This is the whole system's minimum-norm solution: the independent
    columns' equations hold where the accelerations satisfy the loops (the rest is
    round-off); and as a partition's dependent speeds are as many as the rank of ``K``,
    the null space of ``K^T`` is the sum of the blocks' own (each block's rank is its
    dependent speeds' number), so the minimum-norm solution is the one in the range of
    each block's ``K_D`` -- which ``Q [z; 0]`` is, redundant rows (a spatial loop's rows
    of a planar motion) included."""
    blk_rstart, blk_rows, blk_cstart, blk_cols = lx.blk_rstart, lx.blk_rows, lx.blk_cstart, lx.blk_cols
    blk_dstart, blk_dep, blk_kofs, blk_qofs = lx.blk_dstart, lx.blk_dep, lx.blk_kofs, lx.blk_qofs
    half = qr_tau.shape[0] // 2
    for b in range(blk_rstart.shape[0] - 2, -1, -1):
        r0, m = blk_rstart[b], blk_rstart[b + 1] - blk_rstart[b]
        c0, n = blk_cstart[b], blk_cstart[b + 1] - blk_cstart[b]
        d0, nd = blk_dstart[b], blk_dstart[b + 1] - blk_dstart[b]
        K = Kval[blk_kofs[b]:blk_kofs[b + 1]]
        Q = Qf[blk_qofs[b]:blk_qofs[b + 1]]
        for k in range(nd):  # R^T z = S g_D, forward (R[i, k] = Q[k m + i] above the diagonal)
            c = blk_cols[c0 + blk_dep[d0 + k]]
            s = colscale[c] * g[c]
            for i in range(k):
                s -= Q[k * m + i] * lam[blk_rows[r0 + i]]
            lam[blk_rows[r0 + k]] = s / qr_tau[half + d0 + k]
        for k in range(nd, m):
            lam[blk_rows[r0 + k]] = 0.0
        for k in range(nd - 1, -1, -1):  # lam_b = H_0 ... H_{nd-1} [z; 0]
            s = 0.0
            for rr in range(k, m):
                s += Q[k * m + rr] * lam[blk_rows[r0 + rr]]
            s *= qr_tau[d0 + k]
            for rr in range(k, m):
                lam[blk_rows[r0 + rr]] -= s * Q[k * m + rr]
        for rr in range(m):
            lr = lam[blk_rows[r0 + rr]]
            for cc in range(n):
                g[blk_cols[c0 + cc]] -= K[rr * n + cc] * lr


@njit(cache=True, nogil=True, _nrt=True)
def loop_multipliers(desc, proto, lam, out):
    """The closure rows' multipliers ``lam`` (``dense``'s row order and sign: the cut rows,
    then the constant joint-space rows ``Kc``; ``out``: unused) from the spatial
    accelerations ``a`` about the origin (in the table): each body's inertial minus applied wrench about the origin
    (:func:`.rcr_articulated.body_terms`), summed over the subtrees, on each tree
    freedom's column (``tau``); then ``K^T lam = -tau`` in the least-squares sense,
    minimum-norm (module docstring): where ``blocks_only`` (no joint-space row), by the
    partition's block factors (:func:`_block_multipliers`); else ``K`` scattered from the
    blocks and the constant rows, by its singular value decomposition.  Returns True."""
    (a, mass, inertia, x, R, V, Fext, I6, p6, F, parent, S6, col_joint, lx, Kval, Kc, K, tau, rcond, blocks_only,
     Qf, qr_tau, colscale) = unpack(desc, proto)
    nb = x.shape[0]
    nr, nv = K.shape
    for i in range(lam.shape[0]):
        lam[i] = 0.0
    if nr == 0 or nv == 0:
        return True
    body_terms(mass, inertia, x, R, V, Fext, I6, p6)
    for i in range(nb):
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += I6[i, r, c] * a[i, c]
            F[i, r] = s + p6[i, r]
    for i in range(nb - 1, 0, -1):  # subtree sums: about the origin, plain sums
        if parent[i] >= 0:
            for r in range(6):
                F[parent[i], r] += F[i, r]
    for c in range(nv):
        s = 0.0
        for r in range(6):
            s += S6[c, r] * F[col_joint[c], r]
        tau[c] = s
    if blocks_only:
        for c in range(nv):
            tau[c] = -tau[c]
        _block_multipliers(lx, Kval, Qf, qr_tau, colscale, tau, lam)
        return True
    K[:, :] = 0.0
    rstart, rows, cstart, cols, kofs = lx.blk_rstart, lx.blk_rows, lx.blk_cstart, lx.blk_cols, lx.blk_kofs
    for b in range(rstart.shape[0] - 1):
        n = cstart[b + 1] - cstart[b]
        for rr in range(rstart[b + 1] - rstart[b]):
            for cc in range(n):
                K[rows[rstart[b] + rr], cols[cstart[b] + cc]] = Kval[kofs[b] + rr * n + cc]
    ncut = nr - Kc.shape[0]
    for r in range(Kc.shape[0]):
        for c in range(nv):
            K[ncut + r, c] = Kc[r, c]
    At = np.empty((nv, nr))
    for r in range(nr):
        for c in range(nv):
            At[c, r] = K[r, c]
    sv = svd_work(nv, nr)
    thin_svd(At, sv)
    k = min(nv, nr)
    cut = rcond * sv.s[0]
    for i in range(k):
        if not sv.s[i] > cut:
            break
        s = 0.0
        for c in range(nv):
            s -= sv.U[c, i] * tau[c]
        s /= sv.s[i]
        for r in range(nr):
            lam[r] += s * sv.V[r, i]
    return True


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def com_accelerations(a, x, A):
    """The spatial accelerations ``a`` about the origin as ``A`` about each centre of mass
    ``x`` (lin += alpha x c, as numpy's ``cross`` computes it)."""
    for i in range(a.shape[0]):
        c0 = a[i, 4] * x[i, 2] - a[i, 5] * x[i, 1]
        c1 = a[i, 5] * x[i, 0] - a[i, 3] * x[i, 2]
        c2 = a[i, 3] * x[i, 1] - a[i, 4] * x[i, 0]
        A[i, 0] = a[i, 0] + c0
        A[i, 1] = a[i, 1] + c1
        A[i, 2] = a[i, 2] + c2
        for k in range(3, 6):
            A[i, k] = a[i, k]


@njit(cache=True, nogil=True, _nrt=False)
def loop_check(desc, proto, y, out):
    """What :meth:`.rcr.RCRFormulation.evaluate` does on a mechanism with loops after the
    positions and dynamics kernels, for the compiled row loop: False where it would raise
    (speeds or accelerations not finite; the closure's acceleration residual beyond
    :func:`.base.check_consistent`'s limit), else the cut joints' springs' branch
    reference, the accelerations about each centre of mass (:func:`com_accelerations`), the multipliers
    (:func:`loop_multipliers` by address), the reactions (``multiplier_reactions`` by
    address), the classical accelerations, and the partition's conditioning into
    ``health``.  ``y``, ``out``: unused."""
    (multipliers, reactions, vdot, v, a, x, V, A, acc, lam, rows, rtol, cut_spring, jq, jq_ref, lx, tau,
     health) = unpack(desc, proto)
    for i in range(vdot.shape[0]):
        if not (np.isfinite(vdot[i]) and np.isfinite(v[i])):
            return False
    nb, pred, succ, row_adr, nc_j, GA, GB, g0 = rows
    res, scale = closure_residual(nb, pred, succ, row_adr, nc_j, GA, GB, g0, a)
    if not np.isfinite(res) or res > rtol * max(scale, 1.0):
        return False
    for j in cut_spring:
        jq_ref[j] = jq[j]
    com_accelerations(a, x, A)
    ok = call_by_table_bool(multipliers[0], multipliers[1], lam, lam)
    ok = ok and call_void(reactions[0], reactions[1])
    classical_into(V, A, acc)
    health[0] = 1.0
    health[1] = block_conditioning(lx, tau)
    return ok
