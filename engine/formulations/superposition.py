"""Drivers by superposition in compiled code: a forward-dynamics kernel made a
time-dependent right-hand side that holds the driven joints on their laws.

The driven joints' accelerations are affine in the efforts applied to them
(docs/derivations.md, "Drivers"), so ``nd + 1`` evaluations of the forward dynamics --
no effort, then a unit effort on each driven joint -- give the efforts ``tau`` that
produce ``f''(t)``: ``Phi tau = f''(t) - a0``, ``Phi[:, k]`` the driven accelerations'
response to a unit effort on joint ``k``; a last evaluation applies them.
:func:`superposed_rates` does this around a formulation's own kernel, called by address,
so the compiled row loop and the Python pipeline (which calls it too) take the same
steps; its time is read from a one-slot array the caller writes (the row loop: each
stage's time, :func:`.rk4_kernel.rk4_interval`'s ``time``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..drivers import motion
from .base import StateKernel
from .rk4_kernel import call_by_table_bool, call_dynamics_by_table
from .workspace import unpack

#: :func:`superposed_rates`' ``status`` values
SOLVED, UNRESPONSIVE = 0.0, 1.0


@njit(cache=True, nogil=True, _nrt=False)
def solve_in_place(A, b):
    """``A x = b`` by Gaussian elimination with partial pivoting (the first largest pivot
    of a column), ``x`` into ``b``, ``A`` overwritten; False where a pivot is exactly zero
    (LAPACK's ``gesv`` calls such a matrix singular).  For the few drivers of a mechanism."""
    n = b.shape[0]
    for c in range(n):
        p = c
        for r in range(c + 1, n):
            if abs(A[r, c]) > abs(A[p, c]):
                p = r
        if A[p, c] == 0.0:
            return False
        if p != c:
            for k in range(n):
                A[c, k], A[p, k] = A[p, k], A[c, k]
            b[c], b[p] = b[p], b[c]
        for r in range(c + 1, n):
            f = A[r, c] / A[c, c]
            for k in range(c + 1, n):
                A[r, k] -= f * A[c, k]
            b[r] -= f * b[c]
    for c in range(n - 1, -1, -1):
        s = b[c]
        for k in range(c + 1, n):
            s -= A[c, k] * b[k]
        b[c] = s / A[c, c]
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _superpose_start(effort, status):
    """The superposition's start: no effort, no failure; the evaluations before the last
    (``nd + 1``: without effort, then a unit effort on each driven joint)."""
    status[0] = SOLVED
    for i in range(effort.shape[0]):
        effort[i] = 0.0
    return effort.shape[0] + 1


@njit(cache=True, nogil=True, _nrt=False)
def _superpose_after(effort, driven_v, vdot, laws, time, Phi, b, status, k):
    """One step of the superposition after the evaluation with effort ``k - 1`` (``k`` 0:
    none): ``a0`` into ``b`` (``k`` 0) or column ``k - 1`` of ``Phi``; the next unit
    effort set.  At ``k = nd`` the efforts solved for instead; False where they cannot be."""
    nd = effort.shape[0]
    if k == 0:
        for i in range(nd):
            b[i] = vdot[driven_v[i]]  # a0, for now
    else:
        for i in range(nd):
            Phi[i, k - 1] = vdot[driven_v[i]] - b[i]
    for i in range(nd):
        effort[i] = 0.0
    if k < nd:
        effort[k] = 1.0
        return True
    for i in range(nd):
        b[i] = motion(laws, i, time[0])[2] - b[i]
    if not solve_in_place(Phi, b):
        status[0] = UNRESPONSIVE
        return False
    for i in range(nd):
        effort[i] = b[i]
    return True


@njit(cache=True, nogil=True, _nrt=False)
def superposed_rates(desc, proto, y, out):
    """The right-hand side of state ``y`` into ``out`` (empty: none) at time ``time[0]``
    with the drivers' efforts found by superposition (module docstring): ``inner`` the
    formulation's kernel (address and table: ``kernel(desc, proto, y, out) -> finite``)
    applying the efforts ``effort`` as joint torques and leaving the joint accelerations
    in ``vdot``; ``driven_v`` the driven joints' speeds; ``laws`` their motion laws.
    Returns whether the rates are finite; ``status[0]`` UNRESPONSIVE where the driven
    accelerations do not respond to their efforts (a driver on a joint its loops lock)."""
    (inner, inner_desc, none, time, effort, driven_v, vdot, laws, Phi, b, status) = unpack(desc, proto)
    for k in range(_superpose_start(effort, status)):
        call_by_table_bool(inner, inner_desc, y, none)
        if not _superpose_after(effort, driven_v, vdot, laws, time, Phi, b, status, k):
            return False
    return call_by_table_bool(inner, inner_desc, y, out)


@njit(cache=True, nogil=True, _nrt=False)
def superposed_dynamics(desc, proto, q, v, out):
    """:func:`superposed_rates` for a right-hand side of two kernels (``rcr``: its positions
    kernel, called at ``q`` before, then its dynamics): ``inner`` the dynamics kernel
    (address and table: ``dynamics(desc, proto, q, v, out) -> finite``), evaluated
    ``nd + 2`` times with the efforts the superposition needs, the last with the solved
    ones, its rates into ``out`` (empty: none).  The same arithmetic as
    :func:`superposed_rates`."""
    (inner, inner_desc, none, time, effort, driven_v, vdot, laws, Phi, b, status) = unpack(desc, proto)
    for k in range(_superpose_start(effort, status)):
        call_dynamics_by_table(inner, inner_desc, q, v, none)
        if not _superpose_after(effort, driven_v, vdot, laws, time, Phi, b, status, k):
            return False
    return call_dynamics_by_table(inner, inner_desc, q, v, out)


def superposed_kernel(kernel, time, effort, driven_v, vdot, laws, split: bool = False):
    """:func:`superposed_rates` around the state kernel ``kernel``
    (:class:`.base.StateKernel`), or with ``split`` :func:`superposed_dynamics` around
    ``rcr``'s dynamics kernel; ``(kernel, status)``."""
    nd = effort.shape[0]
    status = np.zeros(1)
    outer, address = (superposed_dynamics, kernel.native(3)) if split else (superposed_rates, kernel.native())
    return StateKernel(outer, (
        address, kernel.desc, np.empty(0), time, effort, driven_v, vdot, laws, np.zeros((nd, nd)),
        np.zeros(nd), status)), status
