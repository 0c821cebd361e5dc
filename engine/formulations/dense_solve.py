"""Formulation ``dense`` in compiled code: the equations of motion, the closure's
projections, the singularity watch and whole runs of Runge-Kutta steps.

:mod:`.dense` says what the equations are; this module evaluates them in one kernel call
per right-hand side (the numpy version cost ~0.6 ms per call on a four-bar, almost all of
it Python between small linear-algebra calls) and advances :func:`rk4_steps` many steps
per call, so a fixed-step run pays Python once per output instant, not four times per step.

The linear algebra is :mod:`.dense_linalg`'s.  The rank of the closure is decided once
for the mechanism (:meth:`.dense.DenseFormulation.closure_rank`) and every solve keeps
that many directions (:func:`.dense_linalg.filter_factors`).  The data a kernel reads
are two named tuples built once per formulation: :class:`.dense_data.DenseModel` (the
mechanism) and :class:`.dense_data.DenseWork` (the workspace, whose arrays are the
formulation's attributes), handed to every kernel as one table (``desc, proto``:
:mod:`.workspace`) that it unpacks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .. import config
from ..drivers import motion
from ..forces import tree_applied_forces
from ..kinematics import (
    classical_into, fk_accelerations, fk_positions, fk_velocities, motion_subspace, normalize_quaternions,
    project_columns, qdot_from_v, subtree_sums,
)
from ..model import SPHERICAL
from .dense_data import (FILTERED, HAS_PREV, MU_REL, NEAR, RATE, RESIDUAL, RESIDUAL_SCALE, RHS_COUNT, S_PREV, T_FAILED,
                         T_FILTERED, T_PREV)
from .dense_kernels import Frames, body_terms, crba, loop_rows, multiplier_reactions
from .dense_linalg import backward, cholesky, filter_factors, filtered_solve, forward, roundoff_floor, thin_svd, whiten
from .workspace import unpack

#: status of a kernel call (0: done); the formulation turns the others into SingularSystemError
NOT_POSITIVE_DEFINITE = 1
NOT_FINITE = 2
#: status of an operation :func:`projection_entry` does not have
NOT_AN_OPERATION = 3

# ------------------------------------------------------------------ the mechanism's terms
#
# The geometry of a state -- the positions (x, R, P, S), the mass matrix M and its factor
# L, the closure rows K, Kt = K L^-T and the SVD of Kt -- depends on its coordinates
# alone.  Whatever forms all of it (dynamics, singularity, a projection of the velocities)
# says so in DenseWork.geometry with the coordinates (_keep_geometry); whatever writes any
# of it first says it is no longer so (kinematics, mass_matrix: every path that forms the
# geometry starts with one of them).  A later evaluation or singularity measure at the
# same coordinates, bit for bit, takes it instead of forming it again (_fresh).

@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _keep_geometry(w, q):
    """The workspace's geometry is that of the coordinates ``q``."""
    g = w.geometry
    for k in range(q.shape[0]):
        g[1 + k] = q[k]
    g[0] = 1.0


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _fresh(w, y):
    """Whether the workspace's geometry is that of ``y``'s coordinates, bit for bit."""
    g = w.geometry
    if g[0] == 0.0:
        return False
    for k in range(g.shape[0] - 1):
        if g[1 + k] != y[k]:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def kinematics(desc, proto, q, v):
    """Poses, joint points, motion subspace, twists and velocity products at ``(q, v)``."""
    dm, w = unpack(desc, proto)
    w.geometry[0] = 0.0
    fk_positions(dm.mk, q, w.x, w.R, w.P)
    motion_subspace(dm.mk, q, w.R, w.S)
    fk_velocities(dm.mk, w.x, w.P, w.S, v, w.V, w.c)


@njit(cache=True, nogil=True, _nrt=False)
def mass_matrix(desc, proto):
    """The joint-space mass matrix into ``w.M`` (composite rigid bodies)."""
    dm, w = unpack(desc, proto)
    w.geometry[0] = 0.0
    M = w.M
    for i in range(M.shape[0]):
        for k in range(M.shape[1]):
            M[i, k] = 0.0
    crba(dm.mk.parent, dm.mass, dm.inertia, w.R, w.x, w.P, w.S, dm.mk.v_adr, dm.nv_j, M, w.crba)


@njit(cache=True, nogil=True, _nrt=False)
def newton_euler(desc, proto, vdot, out):
    """``out = M vdot + h``, body by body (recursive Newton-Euler): accelerations into
    ``w.A``, force balances into ``w.Fbody``, subtree sums into ``w.fj``."""
    dm, w = unpack(desc, proto)
    mk = dm.mk
    fk_accelerations(mk, w.x, w.P, w.S, w.c, vdot, w.A)
    body_terms(dm.mass, dm.inertia, w.R, w.V, w.A, w.Fext, w.Fbody)
    subtree_sums(mk.parent, w.x, w.P, w.Fbody, w.fj)
    project_columns(mk.parent.shape[0], mk.v_adr, dm.nv_j, w.S, w.fj, out)


@njit(cache=True, nogil=True, _nrt=False)
def gear_rows(desc, proto, q):
    """The gear rows of ``K``, ``phi``, ``gamma`` (after the cut rows), each scaled."""
    dm, w = unpack(desc, proto)
    g = dm.gears
    q_adr, v_adr = dm.mk.q_adr, dm.mk.v_adr
    nc = dm.nc
    for i in range(g.driver.shape[0]):
        d, n, mu, s = g.driver[i], g.driven[i], g.ratio[i], g.scale[i]
        r = nc + i
        w.phi[r] = s * ((q[q_adr[d]] - g.q0[i, 0]) - mu * (q[q_adr[n]] - g.q0[i, 1]))
        for k in range(w.K.shape[1]):
            w.K[r, k] = 0.0
        w.K[r, v_adr[d]] = s * 1.0
        w.K[r, v_adr[n]] = s * -mu
        w.gamma[r] = 0.0


@njit(cache=True, nogil=True, _nrt=False)
def driver_rows(desc, proto, t, q):
    """The driver rows of ``K``, ``phi``, ``nu`` and ``gamma`` at time ``t`` (after the gear
    rows), each scaled: ``q_J - (f(t) - f(0))``, ``e_J``, ``f'(t)``, ``f''(t)``."""
    dm, w = unpack(desc, proto)
    d = dm.drivers
    q_adr, v_adr = dm.mk.q_adr, dm.mk.v_adr
    r0 = dm.nc + dm.gears.driver.shape[0]
    for i in range(d.joint.shape[0]):
        j, s = d.joint[i], d.scale[i]
        f, fd, fdd = motion(d.motion, i, t)
        r = r0 + i
        w.phi[r] = s * (q[q_adr[j]] - (f - d.f0[i]))
        for k in range(w.K.shape[1]):
            w.K[r, k] = 0.0
        w.K[r, v_adr[j]] = s
        w.nu[r] = s * fd
        w.gamma[r] = s * fdd


@njit(cache=True, nogil=True, _nrt=False)
def closure_rows(desc, proto, t, q, v, acc):
    """Kinematics at ``(q, v)`` and the closure rows ``K``, ``phi``, ``nu`` and ``gamma``
    (from the classical body accelerations ``acc``; the drivers' at time ``t``)."""
    kinematics(desc, proto, q, v)
    rows_at(desc, proto, t, q, acc)


@njit(cache=True, nogil=True, _nrt=False)
def rows_at(desc, proto, t, q, acc):
    """The closure rows ``K``, ``phi``, ``nu`` and ``gamma`` from the workspace's kinematics,
    which are those of ``q`` (:func:`closure_rows` without forming them)."""
    dm, w = unpack(desc, proto)
    mk = dm.mk
    loop_rows(dm.ca, mk.parent, mk.v_adr, dm.nv_j, mk.parent.shape[0], Frames(w.x, w.R, w.V, w.P, w.S), acc,
              w.rows, w.scratch)
    gear_rows(desc, proto, q)
    driver_rows(desc, proto, t, q)


@njit(cache=True, nogil=True, _nrt=False)
def cut_phi_K(desc, proto, t, q, v):
    """Kinematics, ``Phi``, ``K`` and ``M`` at ``(q, v)`` and time ``t`` (for the projections)."""
    dm, w = unpack(desc, proto)
    closure_rows(desc, proto, t, q, v, w.zero_acc)
    mass_matrix(desc, proto)


@njit(cache=True, nogil=True, _nrt=False)
def dynamics(desc, proto, t, y, fresh):
    """The joint accelerations ``w.vdot`` and multipliers ``w.lam`` at state ``y``
    (:meth:`.dense.DenseFormulation._dynamics` gives the equations).  ``fresh``: the
    workspace's geometry is already that of ``y``'s coordinates (:func:`_fresh`), and only
    what depends on the velocities is formed.  Returns a status."""
    dm, w = unpack(desc, proto)
    mk = dm.mk
    nb = mk.parent.shape[0]
    nv = w.S.shape[0]
    nq = y.shape[0] - nv
    q = y[:nq]
    v = y[nq:]
    if fresh:
        fk_velocities(mk, w.x, w.P, w.S, v, w.V, w.c)
    else:
        kinematics(desc, proto, q, v)
        mass_matrix(desc, proto)
    tree_applied_forces(dm.fa, q, mk.q_adr, dm.spring_tree, dm.spring_cut, w.x, w.R, w.V, w.jq, w.jq_ref, w.Fext)
    newton_euler(desc, proto, w.zero_nv, w.h)  # the bias forces: M vdot + h at vdot = 0
    for i in range(nb):
        for k in range(6):
            w.A_bias[i, k] = w.A[i, k]
    L = w.L
    if not fresh and not cholesky(w.M, L):
        w.stats[T_FAILED] = t
        return NOT_POSITIVE_DEFINITE
    for k in range(nv):
        w.u0[k] = -w.h[k]
    forward(L, w.u0, w.u0)
    vdot = w.vdot
    ncr = w.K.shape[0]
    if ncr:
        acc = w.acc  # classical accelerations: a_C = A_lin + w x v_C
        for i in range(nb):
            V = w.V[i]
            Ab = w.A_bias[i]
            acc[i, 0] = Ab[0] + (V[4] * V[2] - V[5] * V[1])
            acc[i, 1] = Ab[1] + (V[5] * V[0] - V[3] * V[2])
            acc[i, 2] = Ab[2] + (V[3] * V[1] - V[4] * V[0])
            for k in range(3, 6):
                acc[i, k] = Ab[k]
        rows_at(desc, proto, t, q, acc)  # the kinematics above are still the workspace's
        Kt = w.Kt
        if not fresh:
            whiten(L, w.K, Kt)
        floor = roundoff_floor(L, w.Kabs, w.u)
        mu_rel = w.watch[MU_REL]
        rank = w.rank[0]
        # min |u - u0| s.t. Kt u = gamma, with u = L^T vdot: the mass-orthogonal correction
        for r in range(ncr):
            s = 0.0
            for k in range(nv):
                s += Kt[r, k] * w.u0[k]
            w.b[r] = s - w.gamma[r]
        z = w.z
        if not fresh:
            thin_svd(Kt, w.sv)
        filter_factors(w.sv, mu_rel, floor, rank)
        filtered_solve(w.sv, w.b, z, np.bool_(False))
        for k in range(nv):
            w.u[k] = w.u0[k] - z[k]
        backward(L, w.u, vdot)
        filtered_solve(w.sv, z, w.lam, np.bool_(True))
        g = dm.gears
        for i in range(g.driver.shape[0]):
            w.lam[dm.nc + i] *= g.scale[i]  # the gear rows' own multipliers
        dr = dm.drivers
        for i in range(dr.joint.shape[0]):
            w.lam[dm.nc + g.driver.shape[0] + i] *= dr.scale[i]  # the drivers' (minus their efforts)
        res = 0.0
        res_scale = 0.0
        for r in range(ncr):
            kv = 0.0
            for k in range(nv):
                kv += w.K[r, k] * vdot[k]
            res = max(res, abs(kv - w.gamma[r]))
            res_scale = max(res_scale, abs(w.gamma[r]), abs(kv))
        w.stats[RESIDUAL] = res
        w.stats[RESIDUAL_SCALE] = res_scale
    else:
        backward(L, w.u0, vdot)
        # one step of iterative refinement of M vdot = -h, the residual by Newton-Euler
        newton_euler(desc, proto, vdot, w.tau)
        forward(L, w.tau, w.tau)
        backward(L, w.tau, w.tau)
        for k in range(nv):
            vdot[k] -= w.tau[k]
    for k in range(nv):
        if not math.isfinite(vdot[k]):
            w.stats[T_FAILED] = t
            return NOT_FINITE
    _keep_geometry(w, q)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def rhs(desc, proto, t, y, out):
    """The right-hand side ``[qdot; vdot]`` at ``(t, y)`` into ``out``; returns a status."""
    dm, w = unpack(desc, proto)
    w.stats[RHS_COUNT] += 1.0
    status = dynamics(desc, proto, t, y, _fresh(w, y))
    if status:
        return status
    _rates(dm, y, w.vdot, out)
    return 0


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _rates(dm, y, vdot, out):
    """``out = [qdot; vdot]`` at the state ``y`` with the joint accelerations ``vdot``."""
    nv = vdot.shape[0]
    nq = y.shape[0] - nv
    qdot_from_v(dm.mk, y[:nq], y[nq:], out)  # writes out[:nq] only
    for k in range(nv):
        out[nq + k] = vdot[k]


# ------------------------------------------------------------------ projection

@njit(cache=True, nogil=True, _nrt=False)
def apply_increment(dm, q, dv):
    """``q (+) dv`` in place: joint increments, quaternions rotated by the pred-frame vector."""
    mk = dm.mk
    for j in range(mk.parent.shape[0]):
        qa, va = mk.q_adr[j], mk.v_adr[j]
        if mk.jtype[j] == SPHERICAL:
            w0, w1, w2 = dv[va], dv[va + 1], dv[va + 2]
            ang = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            if ang > 0:
                c = math.cos(ang / 2)
                s = math.sin(ang / 2)
                d1, d2, d3 = s * (w0 / ang), s * (w1 / ang), s * (w2 / ang)
                Q0, Q1, Q2, Q3 = q[qa], q[qa + 1], q[qa + 2], q[qa + 3]
                q[qa] = c * Q0 - d1 * Q1 - d2 * Q2 - d3 * Q3
                q[qa + 1] = c * Q1 + d1 * Q0 + d2 * Q3 - d3 * Q2
                q[qa + 2] = c * Q2 - d1 * Q3 + d2 * Q0 + d3 * Q1
                q[qa + 3] = c * Q3 + d1 * Q2 - d2 * Q1 + d3 * Q0
        else:
            for k in range(dm.nv_j[j]):
                q[qa + k] += dv[va + k]


@njit(cache=True, nogil=True, _nrt=False)
def project_state(desc, proto, t, q, v, velocities, iterations, rows_done):
    """Mass-orthogonal projection, in place, of ``(q, v)`` onto ``Phi = 0`` and ``K v = nu``
    at time ``t`` (of ``q`` alone unless ``velocities``): ``iterations`` Gauss-Newton steps at most, each
    the increment of least kinetic metric.  ``rows_done``: the workspace's kinematics and
    closure rows are already those of ``(q, v)`` at ``t`` (a CLOSURE just asked whether to
    project), so the first step does not form them again.  ``M`` is formed where a step
    or the velocities need it, not to find the positions closed.  Leaves the workspace's
    kinematics and K at the projected state, and M with the velocities; returns a status."""
    dm, w = unpack(desc, proto)
    L, Kt = w.L, w.Kt
    mu_rel = w.watch[MU_REL]
    rank = w.rank[0]
    nv = v.shape[0]
    for it in range(iterations):
        if it > 0 or not rows_done:
            closure_rows(desc, proto, t, q, v, w.zero_acc)
        worst = 0.0
        for r in range(w.phi.shape[0]):
            worst = max(worst, abs(w.phi[r]))
        if worst < config.PROJECTION_TOL:
            break
        mass_matrix(desc, proto)
        if not cholesky(w.M, L):
            w.stats[T_FAILED] = t
            return NOT_POSITIVE_DEFINITE
        whiten(L, w.K, Kt)
        thin_svd(Kt, w.sv)
        filter_factors(w.sv, mu_rel, roundoff_floor(L, w.Kabs, w.u), rank)
        filtered_solve(w.sv, w.phi, w.z, np.bool_(False))
        for k in range(nv):
            w.u[k] = -w.z[k]
        backward(L, w.u, w.dv)
        apply_increment(dm, q, w.dv)
    else:
        closure_rows(desc, proto, t, q, v, w.zero_acc)
    if not velocities:
        return 0
    mass_matrix(desc, proto)
    if not cholesky(w.M, L):
        w.stats[T_FAILED] = t
        return NOT_POSITIVE_DEFINITE
    whiten(L, w.K, Kt)
    u = w.u
    for i in range(nv):  # u = L^T v
        s = 0.0
        for k in range(i, nv):
            s += L[k, i] * v[k]
        u[i] = s
    for r in range(Kt.shape[0]):
        s = 0.0
        for k in range(nv):
            s += Kt[r, k] * u[k]
        w.b[r] = s - w.nu[r]
    thin_svd(Kt, w.sv)
    filter_factors(w.sv, mu_rel, roundoff_floor(L, w.Kabs, w.dv), rank)
    filtered_solve(w.sv, w.b, w.z, np.bool_(False))
    for k in range(nv):
        u[k] -= w.z[k]
    backward(L, u, v)
    _keep_geometry(w, q)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def post_step(desc, proto, t, y):
    """After an accepted step, in place: quaternions renormalised, the state projected onto
    the closure (when the formulation projects and has closure rows); returns a status."""
    dm, w = unpack(desc, proto)
    nv = w.S.shape[0]
    nq = y.shape[0] - nv
    normalize_quaternions(dm.mk, y[:nq])
    if dm.project and w.K.shape[0]:
        # a bool and an int64, as the entry points pass them, not literals: one compiled copy
        return project_state(desc, proto, t, y[:nq], y[nq:], np.bool_(True), np.int64(config.PROJECTION_MAX_ITER),
                             np.bool_(False))
    return 0


# ------------------------------------------------------------------ singular configurations

@njit(cache=True, nogil=True, _nrt=False)
def singularity(desc, proto, t, y):
    """``s_min / s_max`` of the mass-whitened closure rows over the closure's rank at state
    ``y`` (1.0 without a live direction); NaN if the mass matrix is not positive definite."""
    dm, w = unpack(desc, proto)
    if not w.K.shape[0]:
        return 1.0
    nv = w.S.shape[0]
    nq = y.shape[0] - nv
    if not _fresh(w, y):
        cut_phi_K(desc, proto, t, y[:nq], y[nq:])
        if not cholesky(w.M, w.L):
            w.stats[T_FAILED] = t
            return np.nan
        whiten(w.L, w.K, w.Kt)
        thin_svd(w.Kt, w.sv)
        _keep_geometry(w, y[:nq])
    return _measure(w)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _measure(w):
    """``s_min / s_max`` over the closure's rank of the singular values in ``w.sv``."""
    s = w.sv.s
    r = min(w.rank[0], s.shape[0])
    if r == 0 or s[0] == 0.0:
        return 1.0
    return s[r - 1] / s[0]


@njit(cache=True, nogil=True, _nrt=False)
def watch_singular(desc, proto, t, y):
    """The singularity measure at an accepted state, its rate, and the filter width that
    follows (:meth:`.dense.DenseFormulation.watch_singular` says when it widens); returns a
    status."""
    dm, w = unpack(desc, proto)
    if not (dm.project and w.K.shape[0]):
        return 0
    s = singularity(desc, proto, t, y)
    if math.isnan(s):
        return NOT_POSITIVE_DEFINITE
    _watch(w, t, s)
    return 0


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _watch(w, t, s):
    """:func:`watch_singular`'s verdict on the measure ``s`` at time ``t``."""
    wt = w.watch
    rate = 0.0
    if wt[HAS_PREV] > 0.0 and t > wt[T_PREV]:
        rate = (wt[S_PREV] - s) / (t - wt[T_PREV])  # > 0 while approaching
    wt[HAS_PREV] = 1.0
    wt[T_PREV] = t
    wt[S_PREV] = s
    wt[RATE] = rate
    near = s < config.SINGULAR_WINDOW and abs(rate) > 0.0 and s / abs(rate) < config.CROSSING_TIME
    # the smallest measure at either end of a step taken with the filter widened: where, on
    # a pass near a singular configuration that crosses none, it is exact only to (mu/s)^8
    if (near or wt[NEAR] != 0.0) and s < wt[FILTERED]:
        wt[FILTERED] = s
        wt[T_FILTERED] = t
    wt[NEAR] = 1.0 if near else 0.0
    wt[MU_REL] = config.DENSE_FILTER_RTOL if near else config.DENSE_BASE_FILTER_RTOL


# ------------------------------------------------------------------ whole runs of steps

@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _keep_evaluation(w, t, y):
    """Keep the dynamics EVALUATE just made at ``(t, y)``: an output instant's evaluation
    is the next interval's first right-hand side (:func:`rk4_steps`)."""
    w.evaluated[0] = t
    w.evaluated[1] = 1.0
    w.evaluated[2] = w.watch[MU_REL]
    w.evaluated[3] = w.rank[0]
    for k in range(y.shape[0]):
        w.evaluated_y[k] = y[k]
    for k in range(w.vdot.shape[0]):
        w.evaluated_vdot[k] = w.vdot[k]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _evaluated_at(w, t, y):
    """Whether the kept evaluation (:func:`_keep_evaluation`) is the dynamics at ``(t, y)``
    as :func:`dynamics` would make them now: the same time and state bit for bit, the same
    filter and rank."""
    if w.evaluated[1] == 0.0 or w.evaluated[0] != t or w.evaluated[2] != w.watch[MU_REL] \
            or w.evaluated[3] != w.rank[0]:
        return False
    for k in range(y.shape[0]):
        if w.evaluated_y[k] != y[k]:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def rk4_steps(desc, proto, t0, t1, y, n):
    """``n`` classical Runge-Kutta steps from ``(t0, y)`` to ``t1``, in place on ``y``,
    each followed by :func:`post_step` and :func:`watch_singular` -- the same arithmetic,
    step for step, as :func:`engine.integrators.rk4`'s loop over the formulation's methods.
    The first step's k1 is the output instant's evaluation where EVALUATE left the dynamics
    at ``(t0, y)`` (:func:`_evaluated_at`: the same numbers :func:`rhs` would make, counted
    as the right-hand side they stand for).  Returns a status."""
    dm, w = unpack(desc, proto)
    k1, k2, k3, k4, st = w.stages
    m = y.shape[0]
    h = (t1 - t0) / n
    known = _evaluated_at(w, t0, y)
    w.evaluated[1] = 0.0
    for i in range(n):
        t = t0 + i * h
        ti = t1 if i == n - 1 else t0 + (i + 1) * h
        if i == 0 and known:  # the output instant's evaluation stands for this right-hand side
            w.stats[RHS_COUNT] += 1.0
            _rates(dm, y, w.evaluated_vdot, k1)
        else:
            status = rhs(desc, proto, t, y, k1)
            if status:
                return status
        for k in range(m):
            st[k] = y[k] + h / 2 * k1[k]
        status = rhs(desc, proto, t + h / 2, st, k2)
        if status:
            return status
        for k in range(m):
            st[k] = y[k] + h / 2 * k2[k]
        status = rhs(desc, proto, t + h / 2, st, k3)
        if status:
            return status
        for k in range(m):
            st[k] = y[k] + h * k3[k]
        status = rhs(desc, proto, t + h, st, k4)
        if status:
            return status
        for k in range(m):
            y[k] = y[k] + h / 6 * (((k1[k] + 2 * k2[k]) + 2 * k3[k]) + k4[k])
        status = post_step(desc, proto, ti, y)
        if status:
            return status
        status = watch_singular(desc, proto, ti, y)
        if status:
            return status
    return 0


# ------------------------------------------------------------------ the entry point
#
# What the formulation calls from Python, with its workspace ``(DenseModel, DenseWork)``
# as one table (:class:`.base.StateKernel`): unboxed as some 140 arrays it cost a call
# ~100 us.  The kernels above take the same table (``desc, proto``) and unpack what they
# read: with the two tuples as arguments each kernel compiled for a signature of a
# thousand values, about 2 s of a cold compile apiece.  One entry point for every
# operation, chosen by ``clock[3]``, its scalars in the rest of ``clock``: each kernel
# an entry point calls is linked and optimised into it again.

#: the operations of :func:`entry` (``clock[3]``)
RHS, DYNAMICS, RK4, POST_STEP, WATCH, SINGULARITY, PROJECT, CLOSURE, CUT_PHI_K, EVALUATE = range(10)
#: PROJECT's ``clock[2]``, the sum of its flags: the velocities too; the closure rows are
#: those of the state already, a CLOSURE having just asked whether to project (:func:`project_state`)
PROJECT_VELOCITIES, PROJECT_ROWS_DONE = 1, 2


@njit(cache=True, nogil=True, _nrt=False)
def entry(desc, proto, a, b):
    """Operation ``clock[3]`` on the arrays ``a``, ``b``; returns its status (0: done), or
    the measure for SINGULARITY:

    - RHS: :func:`rhs` at ``(clock[0], a)`` into ``b``
    - DYNAMICS: :func:`dynamics` at ``(clock[0], a)``
    - RK4: :func:`rk4_steps` on ``a`` from ``clock[0]`` to ``clock[1]`` in ``clock[2]`` steps
    - POST_STEP, WATCH: :func:`post_step` (in place), :func:`watch_singular` at ``(clock[0], a)``
    - SINGULARITY: :func:`singularity` of state ``a``
    - PROJECT: :func:`project_state` of ``q = a``, ``v = b`` in place, ``clock[1]``
      iterations, ``clock[2]`` its flags (:data:`PROJECT_VELOCITIES`, :data:`PROJECT_ROWS_DONE`)
    - CLOSURE, CUT_PHI_K: :func:`closure_rows` (without gamma), :func:`cut_phi_K` at ``(a, b)``
      and time ``clock[0]``
    - EVALUATE: an output row's terms at ``(clock[0], a)``: the dynamics (unless
      ``clock[1]``: the last right-hand side's ``vdot`` and ``lam``, already in the
      workspace, were this state's -- then the kinematics and applied wrenches alone; the
      dynamics it makes are kept for the next RK4's k1), the bodies' spatial and classical
      accelerations and every joint's reaction."""
    dm, w = unpack(desc, proto)
    op = np.int64(w.clock[3])
    t = w.clock[0]
    if op == RHS:
        return float(rhs(desc, proto, t, a, b))
    if op == DYNAMICS:
        return float(dynamics(desc, proto, t, a, np.bool_(False)))
    if op == RK4:
        return float(rk4_steps(desc, proto, t, w.clock[1], a, np.int64(w.clock[2])))
    if op == POST_STEP:
        return float(post_step(desc, proto, t, a))
    if op == WATCH:
        return float(watch_singular(desc, proto, t, a))
    done = _projection_operation(desc, proto, op, a, b)
    if done != NOT_MINE:  # (a NaN measure too)
        return done
    # EVALUATE
    fresh = _fresh(w, a)
    nv = w.S.shape[0]
    nq = a.shape[0] - nv
    q = a[:nq]
    if w.clock[1] != 0.0:
        kinematics(desc, proto, q, a[nq:])
        tree_applied_forces(dm.fa, q, dm.mk.q_adr, dm.spring_tree, dm.spring_cut, w.x, w.R, w.V, w.jq, w.jq_ref,
                            w.Fext)
    else:
        status = dynamics(desc, proto, t, a, fresh)
        if status:
            return float(status)
        _keep_evaluation(w, t, a)
    fk_accelerations(dm.mk, w.x, w.P, w.S, w.c, w.vdot, w.A)
    classical_into(w.V, w.A, w.acc_out)
    multiplier_reactions(dm.ca, dm.rm, Frames(w.x, w.R, w.V, w.P, w.S), w.A, w.Fext, w.lam, w.react)
    return 0.0


#: what :func:`_projection_operation` returns for an operation not its own (no status or
#: measure is negative)
NOT_MINE = -1.0


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _projection_operation(desc, proto, op, a, b):
    """Operation ``op`` if it is one of a projection's (SINGULARITY, PROJECT, CLOSURE,
    CUT_PHI_K: :func:`entry` says what each does), its status or measure; else NOT_MINE."""
    w = unpack(desc, proto)[1]
    t = w.clock[0]
    if op == SINGULARITY:
        return singularity(desc, proto, t, a)
    if op == PROJECT:
        flags = np.int64(w.clock[2])
        return float(project_state(desc, proto, t, a, b, flags & PROJECT_VELOCITIES != 0, np.int64(w.clock[1]),
                                   flags & PROJECT_ROWS_DONE != 0))
    if op == CLOSURE:
        closure_rows(desc, proto, t, a, b, w.zero_acc)
        return 0.0
    if op == CUT_PHI_K:
        cut_phi_K(desc, proto, t, a, b)
        return 0.0
    return NOT_MINE


@njit(cache=True, nogil=True, _nrt=False)
def projection_entry(desc, proto, a, b):
    """What another formulation's projection onto the loops calls of :func:`entry` (the
    operations PROJECT, CLOSURE, CUT_PHI_K and SINGULARITY, the same code), and nothing
    else: the status NOT_AN_OPERATION.  ``dca``, ``hdca`` and ``rcr`` compile this, not
    the whole of :func:`entry` with its right-hand side, rk4 loop and evaluation."""
    w = unpack(desc, proto)[1]
    done = _projection_operation(desc, proto, np.int64(w.clock[3]), a, b)
    return float(NOT_AN_OPERATION) if done == NOT_MINE else done


@njit(cache=True, nogil=True, _nrt=False)
def output_check(desc, proto, y, out):
    """What :meth:`.dense.DenseFormulation.evaluate` does after the operation EVALUATE,
    for the compiled row loop (:class:`.base.RowKernels`): False where it would raise
    (the closure's acceleration residual beyond :func:`.base.check_consistent`'s limit),
    else the cut joints' springs' branch reference updated and the loop conditioning
    (:meth:`~.dense.DenseFormulation.health`) into ``health``.  ``y``, ``out``: unused."""
    stats, watch, rtol, loops, cut_spring, jq, jq_ref, health = unpack(desc, proto)
    if loops:
        res = stats[RESIDUAL]
        if not np.isfinite(res) or res > rtol * max(stats[RESIDUAL_SCALE], 1.0):
            return False
    for j in cut_spring:
        jq_ref[j] = jq[j]
    health[0] = 1.0 if watch[HAS_PREV] != 0.0 else 0.0
    health[1] = watch[S_PREV]
    return True

