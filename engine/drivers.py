"""Drivers' motion laws (docs/file-format.md, "Drivers"): ``f(t)``, ``f'(t)``, ``f''(t)``.

A driver prescribes its joint's coordinate, measured from its value at t = 0:
``q_J(t) - q_J(0) = f(t) - f(0)`` (docs/derivations.md, "Drivers").  The laws are
flattened into arrays once per model (:func:`motion_arrays`) and evaluated by one
compiled function (:func:`motion`), which the formulations' kernels and the recorder call:

- ``constant-rate`` (code :data:`CONSTANT_RATE`): ``f = w t``; ``params = (w, 0, 0, 0)``;
- ``harmonic`` (:data:`HARMONIC`): ``f = c + A sin(2 pi nu t + p)``; ``params = (A, 2 pi nu, p, c)``;
- ``table`` (:data:`TABLE`): the natural cubic spline through the knots, continued by
  its end tangents beyond the first and last knot; a natural spline has zero curvature
  at its ends, so the continuation keeps ``f`` twice continuously differentiable.
  ``knots[i, :n]`` are the instants, ``coef[i, k]`` the polynomial of interval ``k``
  in ``s = t - knots[i, k]``: ``coef[i, k, 0] + coef[i, k, 1] s + coef[i, k, 2] s^2 + coef[i, k, 3] s^3``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

CONSTANT_RATE, HARMONIC, TABLE = range(3)
KIND_CODE = {"constant-rate": CONSTANT_RATE, "harmonic": HARMONIC, "table": TABLE}


class MotionArrays(NamedTuple):
    """Every driver's motion law, flat (``nd`` drivers, ``nk`` the most knots of any table)."""

    kind: np.ndarray  # (nd,) CONSTANT_RATE, HARMONIC or TABLE
    params: np.ndarray  # (nd, 4) the law's constants (module docstring)
    nknots: np.ndarray  # (nd,) knots of a table (0 otherwise)
    knots: np.ndarray  # (nd, nk) a table's instants
    coef: np.ndarray  # (nd, nk, 4) a table's interval polynomials; the last row: the end tangent's


def natural_spline(t, q) -> np.ndarray:
    """The coefficients (n, 4) of the natural cubic spline through ``(t, q)``: row ``k`` is
    the polynomial of ``[t_k, t_k+1]`` in ``s = t - t_k``; row ``n - 1`` the straight
    continuation beyond the last knot (its value and slope there).  Solved by the
    tridiagonal system of the knots' second derivatives ``m`` (``m_0 = m_n-1 = 0``)."""
    t = np.asarray(t, dtype=float)
    q = np.asarray(q, dtype=float)
    n = t.shape[0]
    h = np.diff(t)
    m = np.zeros(n)
    if n > 2:
        A = np.zeros((n - 2, n - 2))
        rhs = np.zeros(n - 2)
        for i in range(1, n - 1):
            A[i - 1, i - 1] = 2.0 * (h[i - 1] + h[i])
            if i > 1:
                A[i - 1, i - 2] = h[i - 1]
            if i < n - 2:
                A[i - 1, i] = h[i]
            rhs[i - 1] = 6.0 * ((q[i + 1] - q[i]) / h[i] - (q[i] - q[i - 1]) / h[i - 1])
        m[1:-1] = np.linalg.solve(A, rhs)
    coef = np.zeros((n, 4))
    for k in range(n - 1):
        coef[k, 0] = q[k]
        coef[k, 1] = (q[k + 1] - q[k]) / h[k] - h[k] * (2.0 * m[k] + m[k + 1]) / 6.0
        coef[k, 2] = m[k] / 2.0
        coef[k, 3] = (m[k + 1] - m[k]) / (6.0 * h[k])
    hk = h[-1]
    c = coef[n - 2]
    coef[n - 1, 0] = q[-1]
    coef[n - 1, 1] = c[1] + 2.0 * c[2] * hk + 3.0 * c[3] * hk * hk
    return coef


def motion_arrays(drivers) -> MotionArrays:
    """The flat arrays of the drivers' motion laws (``drivers``: the spec's :class:`DriverSpec` s)."""
    nd = len(drivers)
    nk = max([len(d.motion.t) for d in drivers] + [1])
    kind = np.zeros(nd, dtype=np.int64)
    params = np.zeros((nd, 4))
    nknots = np.zeros(nd, dtype=np.int64)
    knots = np.zeros((nd, nk))
    coef = np.zeros((nd, nk, 4))
    for i, d in enumerate(drivers):
        mo = d.motion
        kind[i] = KIND_CODE[mo.kind]
        if mo.kind == "constant-rate":
            params[i, 0] = mo.rate
        elif mo.kind == "harmonic":
            params[i] = (mo.amplitude, 2.0 * math.pi * mo.frequency, mo.phase, mo.offset)
        else:
            n = len(mo.t)
            nknots[i] = n
            knots[i, :n] = mo.t
            coef[i, :n] = natural_spline(mo.t, mo.q)
    return MotionArrays(kind, params, nknots, knots, coef)


@njit(cache=True, nogil=True, _nrt=False)
def motion(ma, i, t):
    """``(f, f', f'')`` of driver ``i``'s law at time ``t``."""
    kind = ma.kind[i]
    p = ma.params[i]
    if kind == CONSTANT_RATE:
        return p[0] * t, p[0], 0.0
    if kind == HARMONIC:
        arg = p[1] * t + p[2]
        s = math.sin(arg)
        return p[3] + p[0] * s, p[0] * p[1] * math.cos(arg), -p[0] * p[1] * p[1] * s
    n = ma.nknots[i]
    tk = ma.knots[i]
    if t <= tk[0]:  # the first interval's tangent (zero curvature there)
        c = ma.coef[i, 0]
        s = t - tk[0]
        return c[0] + c[1] * s, c[1], 0.0
    if t >= tk[n - 1]:
        c = ma.coef[i, n - 1]
        s = t - tk[n - 1]
        return c[0] + c[1] * s, c[1], 0.0
    lo, hi = 0, n - 1  # tk[lo] <= t < tk[hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tk[mid] <= t:
            lo = mid
        else:
            hi = mid
    c = ma.coef[i, lo]
    s = t - tk[lo]
    return (c[0] + s * (c[1] + s * (c[2] + s * c[3])), c[1] + s * (2.0 * c[2] + 3.0 * s * c[3]),
            2.0 * c[2] + 6.0 * s * c[3])


def motion_values(ma: MotionArrays, i: int, t: float) -> tuple[float, float, float]:
    """:func:`motion` from Python, as floats."""
    f, fd, fdd = motion(ma, np.int64(i), float(t))
    return float(f), float(fd), float(fdd)
