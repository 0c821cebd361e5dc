"""The closure's linear algebra in formulation ``dense``: filtered least squares, the
mass-whitened rows and their rank, and the steps of the mass-orthogonal projection.

Every solve works on the closure rows ``K`` whitened by the joint-space mass matrix
``M = L L^T`` (``K L^-T``), so that lengths are kinetic energy and a singular
configuration amplifies round-off by 1/d, not 1/d^2 (docs/derivations.md, "Dense
reference").  The rank of the closure is decided once for the mechanism
(:func:`closure_rank`) and every solve keeps that many directions (:func:`filtered_lstsq`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .. import config
from ..errors import SingularSystemError
from ..model import SPHERICAL, Model


def filtered_lstsq(A: np.ndarray, b: np.ndarray, mu_rel: float, floor: float = 0.0,
                   rank: int | None = None) -> np.ndarray:
    """Filtered minimum-norm least squares of rank at most ``rank``:
    ``x = V_r diag(s^7 / (s^8 + mu^8)) U_r^T b`` over the ``rank`` largest singular values.

    ``rank`` is the rank of the closure equations, decided once for the mechanism
    (:func:`closure_rank`): the directions beyond it are the redundant
    rows', which are dependent *on* the closure but lift to singular values ~d at a state
    off it by d (a Runge-Kutta stage, a drifted position).  Kept, such a direction would
    impose a constraint that is not the mechanism's -- its row is the O(d) perturbation,
    normalised -- and remove a real freedom for one stage (docs/derivations.md, "Redundant
    rows").  ``None``: every singular value, as filtered below.

    ``mu = max(mu_rel * s_max, floor)``: ``floor`` is the size below which a singular
    value is round-off whatever the largest one (:func:`roundoff_floor`; when
    every row of A is round-off, a loop joint redundant with the tree, ``s_max`` is
    round-off too and a filter relative to it would keep it).  For ``s >> mu`` this is
    the exact pseudo-inverse (relative error (mu/s)^8); and while a singular configuration
    is being crossed (``mu_rel = DENSE_FILTER_RTOL``) the vanishing direction is switched
    off smoothly within ~mu of it, so round-off is amplified by at most ~0.8/mu instead of
    1/s (docs/derivations.md, section 5, "The dense reference").
    """
    if A.size == 0:
        return np.zeros(A.shape[1])
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    if s[0] == 0.0:
        return np.zeros(A.shape[1])
    r = s / max(mu_rel * s[0], floor)
    inv = 1.0 / np.where(s > 0, s, 1.0)
    f = np.where(r > 1e3, inv, inv * (r**8 / (r**8 + 1.0)))
    if rank is not None:
        f[rank:] = 0.0
    return Vt.T @ (f * (U.T @ b))


def cholesky_lower(M: np.ndarray, t: float = 0.0) -> np.ndarray:
    """The lower factor ``L`` of the joint-space mass matrix ``M = L L^T``; a
    :class:`SingularSystemError` at time ``t`` if ``M`` is not positive definite."""
    try:
        return scipy.linalg.cholesky(M, lower=True, check_finite=True)
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise SingularSystemError(t, f"joint-space mass matrix is not positive definite ({exc})") from None


def whitened(L: np.ndarray, K: np.ndarray) -> np.ndarray:
    """``K L^-T``: the rows ``K`` in mass-whitened velocity coordinates."""
    return scipy.linalg.solve_triangular(L, K.T, lower=True).T


def roundoff_floor(L: np.ndarray, Kabs: np.ndarray) -> float:
    """The singular value of the whitened cut rows below which it is round-off:
    ``REDUNDANT_RTOL`` times the whitened size of ``Kabs`` (the magnitudes of the terms
    each entry sums).  Zero without cut rows (gear rows never cancel)."""
    if not Kabs.shape[0]:
        return 0.0
    return config.REDUNDANT_RTOL * float(np.linalg.norm(scipy.linalg.solve_triangular(L, Kabs.T, lower=True)))


def closure_rank(Kt: np.ndarray, floor: float) -> int:
    """The number of singular values of the whitened rows ``Kt`` above ``RANK_RTOL`` of
    the largest and above the round-off ``floor``."""
    s = np.linalg.svd(Kt, compute_uv=False)
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int(np.sum(s > max(config.RANK_RTOL * s[0], floor)))


def position_increment(L: np.ndarray, K: np.ndarray, phi: np.ndarray, mu_rel: float, floor: float,
                       rank: int) -> np.ndarray:
    """One mass-weighted Gauss-Newton step towards ``Phi = 0``: the tree-velocity
    increment ``dv`` of least kinetic metric with ``K dv = -Phi`` (apply it with
    :func:`apply_increment`)."""
    u = -filtered_lstsq(whitened(L, K), phi, mu_rel, floor, rank)
    return scipy.linalg.solve_triangular(L, u, lower=True, trans="T")


def project_velocities(L: np.ndarray, K: np.ndarray, v: np.ndarray, mu_rel: float, floor: float,
                       rank: int) -> np.ndarray:
    """``v`` projected mass-orthogonally onto ``K v = 0``."""
    Kt = whitened(L, K)
    u = L.T @ v
    u -= filtered_lstsq(Kt, Kt @ u, mu_rel, floor, rank)
    return scipy.linalg.solve_triangular(L, u, lower=True, trans="T")


def apply_increment(model: Model, q: np.ndarray, dv: np.ndarray) -> np.ndarray:
    """q (+) dv: joint increments, quaternions rotated by the pred-frame vector."""
    m = model
    q = q.copy()
    for j in range(m.nb):
        qa, va, n = m.q_adr[j], m.v_adr[j], m.nv_j[j]
        if n == 0:
            continue
        if m.jtype[j] == SPHERICAL:
            w = dv[va:va + 3]
            ang = np.linalg.norm(w)
            if ang > 0:
                ax = w / ang
                dq = np.r_[np.cos(ang / 2), np.sin(ang / 2) * ax]
                Q = q[qa:qa + 4]
                q[qa:qa + 4] = [
                    dq[0] * Q[0] - dq[1] * Q[1] - dq[2] * Q[2] - dq[3] * Q[3],
                    dq[0] * Q[1] + dq[1] * Q[0] + dq[2] * Q[3] - dq[3] * Q[2],
                    dq[0] * Q[2] - dq[1] * Q[3] + dq[2] * Q[0] + dq[3] * Q[1],
                    dq[0] * Q[3] + dq[1] * Q[2] - dq[2] * Q[1] + dq[3] * Q[0],
                ]
        else:
            q[qa:qa + n] += dv[va:va + n]
    return q
