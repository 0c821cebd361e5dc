"""Numba kernels of formulation ``dense``: the bodies' force balances, the joint-space
mass matrix by the composite-rigid-body algorithm, and the cut joints' closure rows
(:mod:`engine.formulations.dense` says how they make the equations of motion).

Each kernel walks the tree body by body in world components; nothing here is shared
with the divide-and-conquer machinery.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..constraints import joint_constraint
from ..kinematics import subtree_sums
from ..model import PRISMATIC
from ..spatial import shift_force


class Frames(NamedTuple):
    """The tree's kinematics at one state, world components (the kinematic kernels of
    :mod:`engine.kinematics` fill them)."""

    x: np.ndarray  # (nb, 3) centres of mass, fk_positions
    R: np.ndarray  # (nb, 3, 3) orientations, fk_positions
    V: np.ndarray  # (nb, 6) twists of the centres of mass, fk_velocities
    P: np.ndarray  # (nj, 3) joint points, fk_positions
    S: np.ndarray  # (nv, 6) motion subspace of each tree velocity about its joint point, motion_subspace


class LoopRows(NamedTuple):
    """The cut joints' rows :func:`loop_rows` fills, cut joint after cut joint."""

    K: np.ndarray  # (rows, nv) loop Jacobian in the tree velocities
    Kabs: np.ndarray  # (rows, nv) each entry's sum of the magnitudes of its terms (its round-off scale)
    gamma: np.ndarray  # (rows,) -(Phi_ddot at the given body accelerations)
    phi: np.ndarray  # (rows,) closure residuals Phi


class JointRowScratch(NamedTuple):
    """One cut joint's rows as :func:`engine.constraints.joint_constraint` gives them
    (its first ``nc_j`` rows are used)."""

    Ga: np.ndarray  # (6, 6) rows on the predecessor's twist
    Gb: np.ndarray  # (6, 6) rows on the successor's twist
    g: np.ndarray  # (6,) velocity-product terms
    x0: np.ndarray  # (3,) zeros: the ground's position,
    R0: np.ndarray  # (3, 3) identity: its orientation
    V0: np.ndarray  # (6,) zeros: its twist


def joint_row_scratch() -> JointRowScratch:
    """A :class:`JointRowScratch`, the ground's pose and twist in it."""
    return JointRowScratch(np.zeros((6, 6)), np.zeros((6, 6)), np.zeros(6), np.zeros(3), np.eye(3), np.zeros(6))


class CrbaScratch(NamedTuple):
    """What :func:`crba` computes in, allocated once with the workspace (not on every call)."""

    Ic: np.ndarray  # (nb, 6, 6) composite inertias
    X: np.ndarray  # (6, 6) a shift
    XI: np.ndarray  # (6, 6) X Ic
    F: np.ndarray  # (6,) a column's force
    Fs: np.ndarray  # (6,) shifted
    l: np.ndarray  # (3,) a shift's arm


def crba_scratch(nb: int) -> CrbaScratch:
    return CrbaScratch(np.zeros((nb, 6, 6)), np.zeros((6, 6)), np.zeros((6, 6)), np.zeros(6), np.zeros(6), np.zeros(3))


@njit(cache=True, nogil=True, _nrt=True)
def body_terms(mass, inertia, R, V, A, Fext, Fbias):
    """Per body: I A + V x* I V - F_ext about the COM (world)."""
    nb = mass.shape[0]
    Jw = np.empty((3, 3))
    tmp = np.empty((3, 3))
    for i in range(nb):
        for a in range(3):
            for b in range(3):
                s = 0.0
                for k in range(3):
                    s += inertia[i, a, k] * R[i, b, k]
                tmp[a, b] = s
        for a in range(3):
            for b in range(3):
                s = 0.0
                for k in range(3):
                    s += R[i, a, k] * tmp[k, b]
                Jw[a, b] = s
        w = V[i, 3:]
        m = mass[i]
        # J w and J alpha as loops: numba's ``@`` would compile its BLAS glue (and its
        # error messages) per operand layout (docs/compile-time.md)
        Jw_w = (Jw[0, 0] * w[0] + Jw[0, 1] * w[1] + Jw[0, 2] * w[2],
                Jw[1, 0] * w[0] + Jw[1, 1] * w[1] + Jw[1, 2] * w[2],
                Jw[2, 0] * w[0] + Jw[2, 1] * w[1] + Jw[2, 2] * w[2])
        al = A[i, 3:]
        Jw_al = (Jw[0, 0] * al[0] + Jw[0, 1] * al[1] + Jw[0, 2] * al[2],
                 Jw[1, 0] * al[0] + Jw[1, 1] * al[1] + Jw[1, 2] * al[2],
                 Jw[2, 0] * al[0] + Jw[2, 1] * al[1] + Jw[2, 2] * al[2])
        # linear: m (A_lin + w x v_C)
        Fbias[i, 0] = m * (A[i, 0] + w[1] * V[i, 2] - w[2] * V[i, 1]) - Fext[i, 0]
        Fbias[i, 1] = m * (A[i, 1] + w[2] * V[i, 0] - w[0] * V[i, 2]) - Fext[i, 1]
        Fbias[i, 2] = m * (A[i, 2] + w[0] * V[i, 1] - w[1] * V[i, 0]) - Fext[i, 2]
        Fbias[i, 3] = Jw_al[0] + w[1] * Jw_w[2] - w[2] * Jw_w[1] - Fext[i, 3]
        Fbias[i, 4] = Jw_al[1] + w[2] * Jw_w[0] - w[0] * Jw_w[2] - Fext[i, 4]
        Fbias[i, 5] = Jw_al[2] + w[0] * Jw_w[1] - w[1] * Jw_w[0] - Fext[i, 5]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def composite_force(Ic, s, F):
    """``F = Ic s``: the 6x6 composite inertia ``Ic`` times the motion subspace column
    ``s``, the force the composite-rigid-body algorithm carries up the tree."""
    for k in range(6):
        acc = 0.0
        for m_ in range(6):
            acc += Ic[k, m_] * s[m_]
        F[k] = acc


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def mass_entries(M, S, F, ci, v0, n):
    """``M[cj, ci] = M[ci, cj] = S[cj] . F`` for the speeds ``cj = v0 .. v0 + n - 1`` (one
    body's, where ``F`` is expressed as ``S`` is)."""
    for cj in range(v0, v0 + n):
        acc = 0.0
        for k in range(6):
            acc += S[cj, k] * F[k]
        M[cj, ci] = acc
        M[ci, cj] = acc


@njit(cache=True, nogil=True, _nrt=True)
def crba(parent, mass, inertia, R, x, P, S, v_adr, nv_j, M, sc):
    """Joint-space mass matrix by the composite-rigid-body algorithm (world frame);
    ``sc``: a :class:`CrbaScratch` for ``parent.shape[0]`` bodies."""
    nb = parent.shape[0]
    Ic, X, XI = sc.Ic, sc.X, sc.XI
    for i in range(nb):
        for a in range(6):
            for b in range(6):
                Ic[i, a, b] = 0.0
    for i in range(nb):
        # body inertia about P_i:  [[m, -m~c], [m~c, Jw - m~c~c]], c = x_i - P_i, Jw = R I R^T
        # (loops, not numba's ``@``: docs/compile-time.md)
        c0 = x[i, 0] - P[i, 0]
        c1 = x[i, 1] - P[i, 1]
        c2 = x[i, 2] - P[i, 2]
        m = mass[i]
        C = ((0.0, -c2, c1), (c2, 0.0, -c0), (-c1, c0, 0.0))
        for a in range(3):
            Ic[i, a, a] += m
        for a in range(3):
            for b in range(3):
                Ic[i, a, 3 + b] += -m * C[a][b]
                Ic[i, 3 + a, b] += m * C[a][b]
        for a in range(3):
            for b in range(3):
                Jw = 0.0
                for k in range(3):
                    for l_ in range(3):
                        Jw += R[i, a, k] * inertia[i, k, l_] * R[i, b, l_]
                CC = C[a][0] * C[0][b] + C[a][1] * C[1][b] + C[a][2] * C[2][b]
                Ic[i, 3 + a, 3 + b] += Jw - m * CC
    for i in range(nb - 1, 0, -1):
        p = parent[i]
        if p < 0:
            continue
        # shift composite inertia from P_i to P_p: X Ic X^T, X = shift_matrix(P_i - P_p)
        l0 = P[i, 0] - P[p, 0]
        l1 = P[i, 1] - P[p, 1]
        l2 = P[i, 2] - P[p, 2]
        for a in range(6):
            for b in range(6):
                X[a, b] = 1.0 if a == b else 0.0
        X[3, 1] = -l2
        X[3, 2] = l1
        X[4, 0] = l2
        X[4, 2] = -l0
        X[5, 0] = -l1
        X[5, 1] = l0
        # Ic[p] += X Ic[i] X^T
        for a in range(6):
            for b in range(6):
                t = 0.0
                for k in range(6):
                    t += X[a, k] * Ic[i, k, b]
                XI[a, b] = t
        for a in range(6):
            for b in range(6):
                t = 0.0
                for k in range(6):
                    t += XI[a, k] * X[b, k]
                Ic[p, a, b] += t
    F, Fs, l = sc.F, sc.Fs, sc.l
    for i in range(nb):
        for ci in range(v_adr[i], v_adr[i] + nv_j[i]):
            composite_force(Ic[i], S[ci], F)
            j = i
            while j >= 0:
                mass_entries(M, S, F, ci, v_adr[j], nv_j[j])
                p = parent[j]
                if p < 0:
                    break
                for k in range(3):
                    l[k] = P[j, k] - P[p, k]
                shift_force(F, l, Fs)
                for k in range(6):
                    F[k] = Fs[k]
                j = p


@njit(cache=True, nogil=True, _nrt=True)
def loop_rows(ca, parent, v_adr, nv_j, nb, kin, acc, rows, scratch):
    """Rows of every cut joint: K (loop Jacobian in tree velocities), gamma =
    -(Phi_ddot at the given body accelerations ``acc``), and Phi.  The body
    Jacobians are walked along the tree path, column by column (no dense J).
    ``Kabs``: each entry's sum of the magnitudes of the terms that make it, the scale of
    its round-off -- a row whose terms cancel exactly (a loop joint redundant with the
    tree, as a hinge beside a fixed joint) is round-off of that size, not a constraint.

    ``kin``: the tree's :class:`Frames` at the state; ``acc``: (nb, 6) classical body
    accelerations; ``rows``: the :class:`LoopRows` filled; ``scratch``: one joint's rows
    (:class:`JointRowScratch`)."""
    x, R, V, P, S = kin.x, kin.R, kin.V, kin.P, kin.S
    K, Kabs, gamma, phi = rows.K, rows.Kabs, rows.gamma, rows.phi
    Gs_a, Gs_b, gs = scratch.Ga, scratch.Gb, scratch.g
    jtype, pred, succ, nc_j = ca.jtype, ca.pred, ca.succ, ca.nc_j
    nj = jtype.shape[0]
    x0, R0, V0 = scratch.x0, scratch.R0, scratch.V0
    for a in range(K.shape[0]):
        for c in range(K.shape[1]):
            K[a, c] = 0.0
            Kabs[a, c] = 0.0
    row = 0
    for j in range(nb, nj):
        n = nc_j[j]
        a = pred[j]
        b = succ[j]
        xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[row:row + n], Gs_a[:n], Gs_b[:n], gs[:n])
        for r in range(n):
            g = gs[r]
            for k in range(6):
                g += Gs_b[r, k] * acc[b, k]
                if a >= 0:
                    g += Gs_a[r, k] * acc[a, k]
            gamma[row + r] = -g
        for side in range(2):
            body = b if side == 1 else a
            if body < 0:
                continue
            i = body
            while i >= 0:
                for col in range(v_adr[i], v_adr[i] + nv_j[i]):
                    # J_body[:, col] = [s_lin + s_ang x (x_body - P_i); s_ang]
                    l0 = x[body, 0] - P[i, 0]
                    l1 = x[body, 1] - P[i, 1]
                    l2 = x[body, 2] - P[i, 2]
                    s3, s4, s5 = S[col, 3], S[col, 4], S[col, 5]
                    j0 = S[col, 0] + s4 * l2 - s5 * l1
                    j1 = S[col, 1] + s5 * l0 - s3 * l2
                    j2 = S[col, 2] + s3 * l1 - s4 * l0
                    for r in range(n):
                        if side == 1:
                            t = Gs_b[r, 0] * j0 + Gs_b[r, 1] * j1 + Gs_b[r, 2] * j2 + \
                                Gs_b[r, 3] * s3 + Gs_b[r, 4] * s4 + Gs_b[r, 5] * s5
                        else:
                            t = Gs_a[r, 0] * j0 + Gs_a[r, 1] * j1 + Gs_a[r, 2] * j2 + \
                                Gs_a[r, 3] * s3 + Gs_a[r, 4] * s4 + Gs_a[r, 5] * s5
                        K[row + r, col] += t
                        Kabs[row + r, col] += abs(t)
                i = parent[i]
        row += n


@njit(cache=True, nogil=True, _nrt=False)
def cholesky_in_place(A, n):
    """In-place Cholesky A = L L^T of the leading n x n block (lower triangle, the upper
    left as it was); False if a pivot is not positive (or not finite)."""
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


class ReactionModel(NamedTuple):
    """What :func:`multiplier_reactions` reads of the mechanism besides the cut joints'
    constraint arrays."""

    parent: np.ndarray  # (nb,) parent body
    mass: np.ndarray  # (nb,)
    inertia: np.ndarray  # (nb, 3, 3) about the COM, body frame
    jtype: np.ndarray  # (nj,) joint types
    axis_pred: np.ndarray  # (nj, 3) joint axis in the predecessor's frame
    g_driver: np.ndarray  # (ng,) gears' driving joints
    g_driven: np.ndarray  # (ng,) driven joints
    g_ratio: np.ndarray  # (ng,) mu


@njit(cache=True, nogil=True, _nrt=True)
def multiplier_reactions(ca, rm, kin, A, Fext, lam, react):
    """Every joint's wrench on its successor (about its point) into ``react`` (nj, 6) from
    the closure rows' multipliers ``lam`` (dense's row order and sign: the cut joints',
    then the gears' if ``lam`` holds them) and the spatial accelerations ``A`` about each
    COM (:func:`engine.formulations.dense.reactions_from_multipliers` says how)."""
    x, R, V, P = kin.x, kin.R, kin.V, kin.P
    jtype, pred, succ, nc_j = ca.jtype, ca.pred, ca.succ, ca.nc_j
    nb = x.shape[0]
    nj = jtype.shape[0]
    Fcut = np.zeros((nb, 6))
    phi = np.empty(6)
    Ga = np.empty((6, 6))
    Gb = np.empty((6, 6))
    g = np.empty(6)
    Fb = np.empty(6)
    l = np.empty(3)
    out = np.empty(6)
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    for c in range(6):
        for j in range(nj):
            react[j, c] = 0.0
    row = 0
    for j in range(nb, nj):
        n = nc_j[j]
        a = pred[j]
        b = succ[j]
        if a < 0:
            joint_constraint(ca, j, x0, R0, V0, x[b], R[b], V[b], phi[:n], Ga[:n], Gb[:n], g[:n])
        else:
            joint_constraint(ca, j, x[a], R[a], V[a], x[b], R[b], V[b], phi[:n], Ga[:n], Gb[:n], g[:n])
        for k in range(6):
            sb = 0.0
            sa = 0.0
            for r in range(n):
                sb += Gb[r, k] * lam[row + r]
                sa += Ga[r, k] * lam[row + r]
            Fb[k] = -sb  # the wrench on b about its COM
            Fcut[b, k] += -sb
            if a >= 0:
                Fcut[a, k] += -sa
        for k in range(3):
            l[k] = x[b, k] - P[j, k]
        shift_force(Fb, l, out)
        for k in range(6):
            react[j, k] = out[k]
        row += n
    ng = rm.g_driver.shape[0]
    if ng and lam.shape[0] >= row + ng:
        for i in range(ng):
            lg = lam[row + i]
            for side in range(2):
                j = rm.g_driver[i] if side == 0 else rm.g_driven[i]
                tau = -lg if side == 0 else rm.g_ratio[i] * lg
                a, b = pred[j], succ[j]
                ax = np.empty(3)
                for r in range(3):
                    if a < 0:
                        ax[r] = rm.axis_pred[j, r]
                    else:
                        ax[r] = R[a, r, 0] * rm.axis_pred[j, 0] + R[a, r, 1] * rm.axis_pred[j, 1] + \
                            R[a, r, 2] * rm.axis_pred[j, 2]
                for end in range(2):
                    body = b if end == 0 else a
                    sgn = 1.0 if end == 0 else -1.0
                    if body < 0:
                        continue
                    if rm.jtype[j] == PRISMATIC:
                        f0, f1, f2 = sgn * tau * ax[0], sgn * tau * ax[1], sgn * tau * ax[2]
                        d0, d1, d2 = P[j, 0] - x[body, 0], P[j, 1] - x[body, 1], P[j, 2] - x[body, 2]
                        Fcut[body, 0] += f0
                        Fcut[body, 1] += f1
                        Fcut[body, 2] += f2
                        Fcut[body, 3] += d1 * f2 - d2 * f1
                        Fcut[body, 4] += d2 * f0 - d0 * f2
                        Fcut[body, 5] += d0 * f1 - d1 * f0
                    else:
                        for r in range(3):
                            Fcut[body, 3 + r] += sgn * tau * ax[r]
    F = Fext + Fcut
    Fbody = np.zeros((nb, 6))
    fj = np.zeros((nb, 6))
    body_terms(rm.mass, rm.inertia, R, V, A, F, Fbody)
    subtree_sums(rm.parent, x, P, Fbody, fj)
    for i in range(nb):
        for k in range(6):
            react[i, k] = fj[i, k]
