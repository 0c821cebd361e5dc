"""The error-controlled integrators ``rk45`` (Dormand-Prince 5(4)) and ``dop853``
(Dormand-Prince 8(5,3)) with their steps in compiled code.

scipy's ``RK45`` and ``DOP853`` take a step as a dozen numpy operations on arrays of a
few dozen numbers and one Python call per stage, 60-100 us a step around right-hand
sides of 3-15 us.  :func:`erk_step` takes one accepted step -- the stages, the error
estimate, the step-size control, the rejected attempts -- in one call, calling the
formulation's right-hand side by the address of its machine code; :class:`CompiledRK`
offers it to the pipeline with scipy's solver interface (``step``, ``t``, ``y``,
``status``, ``max_step``, ``dense_output``), so :mod:`engine.integrators` drives it as
it drives scipy's.

It is scipy's algorithm, decision for decision (the tableaux are scipy's
coefficients): the initial step (Hairer, Norsett & Wanner, II.4), the RMS error norm
(``dop853``'s combination of its 5th- and 3rd-order estimates), the safety factor 0.9,
the factors' bounds 0.2 and 10, no growth right after a rejection, the smallest step
(10 ulp of t), landing on the bound, and the dense output (``rk45``'s quartic,
``dop853``'s 7th-degree interpolant with its three extra stages).  The arithmetic of a
stage is a loop where scipy calls BLAS, so the numbers agree with scipy's to round-off,
not bit for bit (tests/engine/formulations/test_erk_kernel.py).

The right-hand side is a state kernel ``kernel(desc, proto, y, out)`` -- the tree
formulations' rates (returns whether finite) or ``dense``'s operations kernel with the
operation in its clock (returns a status, 0 for success): :meth:`.base.Formulation.rates_kernel`.
The kernel is called with its table alone (:func:`.rk4_kernel.call_by_table`), so
:func:`erk_step` is compiled once, for every formulation.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .rk4_kernel import call_by_table, call_by_table_bool

#: the right-hand side's kinds (:class:`Rates`)
STATE, OPERATION = 0, 1

#: the solver's scalars, one float64 array (:func:`erk_step`)
(T, T_OLD, H_ABS, T_BOUND, MAX_STEP, RTOL, ATOL, STATUS, NFEV, H_PREV, T_FAIL, METHOD, KIND, OP,
 NSTAGES, ORDER) = range(16)
NSLOTS = 16
#: STATUS values
RUNNING, FINISHED, TOO_SMALL, NOT_FINITE = 0.0, 1.0, 2.0, 3.0

SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0


class Coefficients(NamedTuple):
    """One method's coefficients as the kernels read them: contiguous arrays, scipy's."""

    A: np.ndarray  # (extended stages, extended stages) the stages' weights, dense output's extra stages included
    B: np.ndarray  # (stages,) the solution's weights
    C: np.ndarray  # (extended stages,) the stages' times, fractions of the step
    E: np.ndarray  # (stages + 1,) the error estimate's weights (dop853: its E5)
    E3: np.ndarray  # (stages + 1,) dop853's third-order error weights (rk45: zeros, unread)
    P: np.ndarray  # the interpolant's coefficients: rk45's P, dop853's D


class Tableau:
    """One method's coefficients (:attr:`coef`, :class:`Coefficients`) and sizes: ``stages``,
    ``extended`` (with dense output's extra stages), ``order`` (the error estimator's),
    ``kind`` (0.0 rk45, 1.0 dop853)."""

    def __init__(self, method: str):
        # scipy's coefficients, imported here: scipy.integrate takes a quarter of a second to
        # import, which every run would pay at start-up for the integrators few runs use
        from scipy.integrate._ivp import dop853_coefficients as _dop
        from scipy.integrate._ivp.rk import RK45 as _RK45

        if method == "rk45":
            s = _RK45.n_stages
            self.A = np.zeros((s + 1, s + 1))
            self.A[:s, :_RK45.A.shape[1]] = _RK45.A
            self.B, self.C = np.ascontiguousarray(_RK45.B), np.zeros(s + 1)
            self.C[:s] = _RK45.C
            self.E, self.E3 = np.ascontiguousarray(_RK45.E), np.zeros(s + 1)
            self.P = np.ascontiguousarray(_RK45.P)
            self.stages, self.extended, self.order, self.kind = s, s + 1, _RK45.error_estimator_order, 0.0
        elif method == "dop853":
            s = _dop.N_STAGES
            self.A = np.ascontiguousarray(_dop.A)
            self.B, self.C = np.ascontiguousarray(_dop.B), np.ascontiguousarray(_dop.C)
            self.E, self.E3 = np.ascontiguousarray(_dop.E5), np.ascontiguousarray(_dop.E3)
            self.P = np.ascontiguousarray(_dop.D)
            self.stages, self.extended, self.order, self.kind = s, _dop.N_STAGES_EXTENDED, 7, 1.0
        else:
            raise ValueError(f"no compiled steps for {method!r} (rk45, dop853)")
        self.coef = Coefficients(self.A, self.B, self.C, self.E, self.E3, self.P)


_TABLEAUX: dict[str, Tableau] = {}


def tableau(method: str) -> Tableau:
    if method not in _TABLEAUX:
        _TABLEAUX[method] = Tableau(method)
    return _TABLEAUX[method]


def solver_constants(method: str, kind: int, op: int, rtol: float, atol: float) -> np.ndarray:
    """A solver's scalars (:func:`erk_step`'s ``sol``) that stay through a run: the method,
    the right-hand side's kind and operation, the tolerances (rtol at scipy's floor,
    where scipy warns and raises it); every other slot 0, as :func:`erk_reset` starts."""
    if not atol >= 0:
        raise ValueError("`atol` must be positive.")
    tab = tableau(method)
    const = np.zeros(NSLOTS)
    const[RTOL], const[ATOL] = max(float(rtol), 100 * np.finfo(float).eps), atol
    const[METHOD], const[KIND], const[OP], const[NSTAGES], const[ORDER] = tab.kind, kind, op, tab.stages, tab.order
    return const


# -- the kernels ---------------------------------------------------------------------------


@njit(cache=True, nogil=True, _nrt=False)
def erk_reset(sol, const, t0, t_bound, max_step, h):
    """A new solver's scalars in ``sol``: ``const`` (:func:`solver_constants`), at ``t0``
    towards ``t_bound``, steps at most ``max_step``, the first ``h`` (0: chosen by
    :func:`erk_start`)."""
    for i in range(sol.shape[0]):
        sol[i] = const[i]
    sol[T], sol[T_OLD], sol[T_BOUND], sol[MAX_STEP], sol[H_PREV], sol[H_ABS] = t0, np.nan, t_bound, max_step, np.nan, h


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _rates(sol, f, f_desc, clock, t, y, out):
    """The right-hand side at ``(t, y)`` into ``out``; whether it succeeded (finite)."""
    sol[NFEV] += 1.0
    if sol[KIND] == OPERATION:
        clock[0] = t
        clock[3] = sol[OP]
        return call_by_table(f, f_desc, y, out) == 0.0
    return call_by_table_bool(f, f_desc, y, out)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _rms(x, scale):
    """scipy's ``norm(x / scale)``: the RMS of ``x / scale``."""
    s = 0.0
    for i in range(x.shape[0]):
        r = x[i] / scale[i]
        s += r * r
    return math.sqrt(s) / math.sqrt(x.shape[0])


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _combine(out, base, K, a, s, h):
    """``out = base + h * (K[:s].T @ a[:s])``: a stage's state, or the step's result with ``B``."""
    n = out.shape[0]
    for i in range(n):
        d = 0.0
        for j in range(s):
            d += K[j, i] * a[j]
        out[i] = base[i] + d * h


@njit(cache=True, nogil=True, _nrt=False)
def erk_start(f, f_desc, clock, sol, y, fy, work):
    """A solver's start at ``(sol[T], y)``: ``fy`` = the right-hand side there, and,
    where ``sol[H_ABS]`` is not positive, the initial step of Hairer, Norsett & Wanner
    (II.4), as scipy's ``select_initial_step``.  ``work``: (3, n) scratch.  Returns
    False where a right-hand side was not finite (``sol[T_FAIL]`` its time, ``work[0]``
    its state)."""
    t0 = sol[T]
    n = y.shape[0]
    if not _rates(sol, f, f_desc, clock, t0, y, fy):
        sol[T_FAIL] = t0
        for i in range(n):
            work[0, i] = y[i]
        return False
    if sol[H_ABS] > 0.0:
        return True
    length = abs(sol[T_BOUND] - t0)
    if n == 0:
        sol[H_ABS] = np.inf
        return True
    if length == 0.0:
        sol[H_ABS] = 0.0
        return True
    scale, y1, f1 = work[0], work[1], work[2]
    rtol, atol = sol[RTOL], sol[ATOL]
    for i in range(n):
        scale[i] = atol + abs(y[i]) * rtol
    d0 = _rms(y, scale)
    d1 = _rms(fy, scale)
    if d0 < 1e-5 or d1 < 1e-5:
        h0 = 1e-6
    else:
        h0 = 0.01 * d0 / d1
    h0 = min(h0, length)
    for i in range(n):
        y1[i] = y[i] + h0 * fy[i]
    if not _rates(sol, f, f_desc, clock, t0 + h0, y1, f1):
        sol[T_FAIL] = t0 + h0
        for i in range(n):
            work[0, i] = y1[i]
        return False
    s = 0.0
    for i in range(n):
        r = (f1[i] - fy[i]) / scale[i]
        s += r * r
    d2 = math.sqrt(s) / math.sqrt(n) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (sol[ORDER] + 1.0))
    sol[H_ABS] = min(100.0 * h0, h1, length, sol[MAX_STEP])
    return True


@njit(cache=True, nogil=True, _nrt=False)
def erk_step(f, f_desc, clock, coef, sol, y, y_old, fy, K, work):
    """One accepted step from ``(sol[T], y)`` in place, as scipy's ``RungeKutta.step``
    with the method's coefficients ``coef`` (:class:`Coefficients`):
    ``y_old`` gets the state before it, ``fy`` the right-hand side at the new state, ``K``
    (extended stages, n) the stages (``K[0]`` the old ``fy``), ``sol`` the new time,
    step proposal, previous step and status.  ``work``: (3, n) scratch.  Returns
    ``sol[STATUS]``: RUNNING, FINISHED (the bound reached), TOO_SMALL (the step fell
    below 10 ulp of t: scipy's failure) or NOT_FINITE (a right-hand side was not finite:
    ``sol[T_FAIL]`` its time, ``work[0]`` its state)."""
    A, B, C, E, E3 = coef.A, coef.B, coef.C, coef.E, coef.E3
    n = y.shape[0]
    t = sol[T]
    t_bound = sol[T_BOUND]
    if n == 0 or t == t_bound:
        sol[T_OLD] = t
        sol[T] = t_bound
        sol[STATUS] = FINISHED
        return FINISHED
    s = np.int64(sol[NSTAGES])
    exponent = -1.0 / (sol[ORDER] + 1.0)
    max_step = sol[MAX_STEP]
    rtol, atol = sol[RTOL], sol[ATOL]
    min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
    h_abs = sol[H_ABS]
    if h_abs > max_step:
        h_abs = max_step
    elif h_abs < min_step:
        h_abs = min_step
    ynew, scale, st = work[0], work[1], work[2]
    rejected = False
    while True:
        if h_abs < min_step:
            sol[STATUS] = TOO_SMALL
            return TOO_SMALL
        h = h_abs
        t_new = t + h
        if t_new - t_bound > 0.0:
            t_new = t_bound
        h = t_new - t
        h_abs = abs(h)
        # the stages (scipy's rk_step)
        for i in range(n):
            K[0, i] = fy[i]
        for k in range(1, s):
            _combine(st, y, K, A[k], k, h)
            if not _rates(sol, f, f_desc, clock, t + C[k] * h, st, K[k]):
                sol[T_FAIL] = t + C[k] * h
                for i in range(n):
                    ynew[i] = st[i]
                sol[STATUS] = NOT_FINITE
                return NOT_FINITE
        _combine(ynew, y, K, B, s, h)
        if not _rates(sol, f, f_desc, clock, t + h, ynew, K[s]):
            sol[T_FAIL] = t + h
            sol[STATUS] = NOT_FINITE
            return NOT_FINITE
        for i in range(n):
            scale[i] = atol + max(abs(y[i]), abs(ynew[i])) * rtol
        if sol[METHOD] == 0.0:  # rk45: norm(K.T @ E * h / scale)
            acc = 0.0
            for i in range(n):
                e = 0.0
                for j in range(s + 1):
                    e += K[j, i] * E[j]
                r = e * h / scale[i]
                acc += r * r
            error_norm = math.sqrt(acc) / math.sqrt(n)
        else:  # dop853: the 5th-order estimate, corrected by the 3rd-order one
            e5 = 0.0
            e3 = 0.0
            for i in range(n):
                a5 = 0.0
                a3 = 0.0
                for j in range(s + 1):
                    a5 += K[j, i] * E[j]
                    a3 += K[j, i] * E3[j]
                a5 /= scale[i]
                a3 /= scale[i]
                e5 += a5 * a5
                e3 += a3 * a3
            if e5 == 0.0:
                # scipy's "both zero", and where the sum of squares underflowed (stages of
                # 1e-150 and less; scipy's BLAS norm scales and finds a tiny estimate): the
                # estimate is at most |h| sqrt(e5 / n), so 0, the same decision -- not 0 / 0
                error_norm = 0.0
            else:
                error_norm = abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * n)
        if error_norm < 1.0:
            if error_norm == 0.0:
                factor = MAX_FACTOR
            else:
                factor = min(MAX_FACTOR, SAFETY * error_norm ** exponent)
            if rejected:
                factor = min(1.0, factor)
            h_abs *= factor
            break
        h_abs *= max(MIN_FACTOR, SAFETY * error_norm ** exponent)
        rejected = True
    sol[H_PREV] = h
    for i in range(n):
        y_old[i] = y[i]
        y[i] = ynew[i]
        fy[i] = K[s, i]
    sol[T_OLD] = t
    sol[T] = t_new
    sol[H_ABS] = h_abs
    status = FINISHED if t_new - t_bound >= 0.0 else RUNNING
    sol[STATUS] = status
    return status


@njit(cache=True, nogil=True, _nrt=False)
def erk_dense_prepare(f, f_desc, clock, coef, sol, y, y_old, fy, K, Q, work):
    """The interpolant of the last step into ``Q``: ``rk45``'s ``K.T @ P`` (n, 4);
    ``dop853``'s three extra stages into ``K`` and its ``F`` (7, n) -- scipy's
    ``_dense_output_impl``.  False where an extra stage's right-hand side was not finite."""
    A, C, P = coef.A, coef.C, coef.P
    n = y.shape[0]
    s = np.int64(sol[NSTAGES])
    if sol[METHOD] == 0.0:
        for i in range(n):
            for c in range(P.shape[1]):
                acc = 0.0
                for j in range(s + 1):
                    acc += K[j, i] * P[j, c]
                Q[c, i] = acc
        return True
    h = sol[H_PREV]
    t_old = sol[T_OLD]
    st = work[2]
    for k in range(s + 1, K.shape[0]):
        _combine(st, y_old, K, A[k], k, h)
        if not _rates(sol, f, f_desc, clock, t_old + C[k] * h, st, K[k]):
            sol[T_FAIL] = t_old + C[k] * h
            for i in range(n):
                work[0, i] = st[i]
            return False
    for i in range(n):
        dy = y[i] - y_old[i]
        Q[0, i] = dy
        Q[1, i] = h * K[0, i] - dy
        Q[2, i] = 2.0 * dy - h * (fy[i] + K[0, i])
    for r in range(P.shape[0]):
        for i in range(n):
            acc = 0.0
            for j in range(K.shape[0]):
                acc += P[r, j] * K[j, i]
            Q[3 + r, i] = h * acc
    return True


@njit(cache=True, nogil=True, _nrt=False)
def erk_dense_at(method, t_old, h, y_old, Q, t, out):
    """The interpolant (:func:`erk_dense_prepare`) at ``t`` into ``out``."""
    n = y_old.shape[0]
    x = (t - t_old) / h
    if method == 0.0:
        p1 = x
        p2 = p1 * x
        p3 = p2 * x
        p4 = p3 * x
        for i in range(n):
            out[i] = h * (Q[0, i] * p1 + Q[1, i] * p2 + Q[2, i] * p3 + Q[3, i] * p4) + y_old[i]
        return
    for i in range(n):
        out[i] = 0.0
    m = Q.shape[0]
    for k in range(m):
        r = m - 1 - k
        for i in range(n):
            out[i] += Q[r, i]
            if k % 2 == 0:
                out[i] *= x
            else:
                out[i] *= 1.0 - x
    for i in range(n):
        out[i] += y_old[i]


# -- the solver ------------------------------------------------------------------------------


class Rates:
    """A formulation's right-hand side as :func:`erk_step` calls it: a state kernel
    (:class:`.base.StateKernel`) of kind :data:`STATE` (returns whether finite) or
    :data:`OPERATION` (an operations kernel: ``clock[3]`` = ``op``, ``clock[0]`` = t,
    returns 0 on success), for formulation ``form``: its ``nfev`` counts the evaluations,
    and its ``rhs`` raises its own error where the compiled call failed."""

    def __init__(self, kernel, kind: int, form, clock: np.ndarray | None = None, op: int = 0):
        self.kernel, self.kind, self.form, self.op = kernel, kind, form, op
        self.clock = clock if clock is not None else np.zeros(4)
        self.address = kernel.native()
        self.desc = kernel.desc

    def raise_at(self, t: float, y: np.ndarray) -> None:
        self.form.rhs(t, y)

    def solver(self, method: str):
        """A constructor with scipy's solver signature, ``(fun, t0, y, t_bound, **kwargs)``,
        making :class:`CompiledRK` for ``method`` on these rates: one solver, started again
        where the integrator makes a new one (it never steps an earlier solver after making
        the next)."""
        made: list[CompiledRK] = []

        def make(fun, t0, y, t_bound, **kwargs):
            if made:
                return made[0].restart(t0, y, t_bound, **kwargs)
            made.append(CompiledRK(method, self, t0, y, t_bound, **kwargs))
            return made[0]

        return make

    def count(self, n: int) -> None:
        self.form.nfev += n


def interpolant_array(tab: Tableau, n: int) -> np.ndarray:
    """A new array for the interpolant's coefficients of a state of ``n`` (:func:`erk_dense_prepare`'s
    ``Q``): ``rk45``'s (4, n), ``dop853``'s (7, n)."""
    return np.zeros((tab.P.shape[1], n) if tab.kind == 0.0 else (3 + tab.P.shape[0], n))


class _Dense:
    """The last step's interpolant, scipy's ``DenseOutput`` call: ``dense(t) -> y(t)``."""

    __slots__ = ("method", "t_old", "h", "y_old", "Q")

    def __init__(self, method, t_old, h, y_old, Q):
        self.method, self.t_old, self.h, self.y_old, self.Q = method, t_old, h, y_old, Q

    def __call__(self, t: float) -> np.ndarray:
        out = np.empty_like(self.y_old)
        erk_dense_at(self.method, self.t_old, self.h, self.y_old, self.Q, float(t), out)
        return out


class CompiledRK:
    """scipy's ``RK45`` / ``DOP853`` (what :mod:`engine.integrators` uses of them) over
    :func:`erk_step`: ``(rates, t0, y0, t_bound, rtol, atol, first_step, max_step)`` as
    scipy's constructor; ``step()`` one accepted step (None, or scipy's message where it
    failed); ``t``, ``y``, ``t_old``, ``step_size``, ``h_abs``, ``status``, ``max_step``
    (settable), ``nfev``, ``dense_output()``.  A right-hand side that is not finite raises
    the formulation's own error (``rates.raise_at``)."""

    TOO_SMALL_STEP = "Required step size is less than spacing between numbers."

    def __init__(self, method: str, rates: Rates, t0: float, y0, t_bound: float, rtol: float, atol: float,
                 first_step: float | None = None, max_step: float = np.inf):
        tab = tableau(method)
        self.method, self.rates, self.tab = method, rates, tab
        n = len(y0)
        self.sol = np.zeros(NSLOTS)
        self._const = None  # solver_constants, for the tolerances of the last start
        self._y = np.zeros(n)
        self._y_old = np.zeros(n)
        self._f = np.zeros(n)
        self._K = np.zeros((tab.extended, n))
        self._work = np.zeros((3, n))
        self._args = (rates.address, rates.desc, rates.clock)
        self._nfev = 0
        self.restart(t0, y0, t_bound, rtol, atol, first_step, max_step)

    def restart(self, t0: float, y0, t_bound: float, rtol: float, atol: float, first_step: float | None = None,
                max_step: float = np.inf) -> "CompiledRK":
        """Start again at ``(t0, y0)`` towards ``t_bound`` in this solver's arrays (a new
        solver's state, as the constructor makes it; ``y0`` as long as before): the
        integrator restarts its solver at every output instant of a run whose states are
        projected there."""
        if not max_step > 0:
            raise ValueError("`max_step` must be positive.")
        const = self._const
        if const is None or const[RTOL] != max(float(rtol), 100 * np.finfo(float).eps) or const[ATOL] != atol:
            const = self._const = solver_constants(self.method, self.rates.kind, self.rates.op, rtol, atol)
        if first_step is not None:
            if first_step <= 0:
                raise ValueError("`first_step` must be positive.")
            if first_step > abs(t_bound - t0):
                raise ValueError("`first_step` exceeds bounds.")
        sol = self.sol
        erk_reset(sol, const, float(t0), float(t_bound), float(max_step), 0.0 if first_step is None else float(first_step))
        self._nfev = 0
        self._y[:] = y0
        ok = erk_start(*self._args, sol, self._y, self._f, self._work)
        self._counted()
        if not ok:
            self._fail()
        return self

    def _counted(self) -> None:
        """Hand the right-hand sides evaluated since the last call to the formulation's count."""
        n = int(self.sol[NFEV])
        self.rates.count(n - self._nfev)
        self._nfev = n

    def _fail(self):
        t = float(self.sol[T_FAIL])
        self.rates.raise_at(t, self._work[0].copy())
        from ..errors import SimulationError

        raise SimulationError(t, "the right-hand side was not finite")  # raise_at did not raise

    @property
    def t(self) -> float:
        return float(self.sol[T])

    @property
    def t_old(self) -> float | None:
        t = self.sol[T_OLD]
        return None if t != t else float(t)

    @property
    def y(self) -> np.ndarray:
        return self._y.copy()

    @property
    def t_bound(self) -> float:
        return float(self.sol[T_BOUND])

    @property
    def h_abs(self) -> float:
        return float(self.sol[H_ABS])

    @property
    def step_size(self) -> float | None:
        t_old = self.t_old
        return None if t_old is None else abs(self.t - t_old)

    @property
    def max_step(self) -> float:
        return float(self.sol[MAX_STEP])

    @max_step.setter
    def max_step(self, value: float) -> None:
        self.sol[MAX_STEP] = value

    @property
    def nfev(self) -> int:
        return int(self.sol[NFEV])

    @property
    def status(self) -> str:
        s = self.sol[STATUS]
        return "running" if s == RUNNING else "finished" if s == FINISHED else "failed"

    def step(self) -> str | None:
        if self.sol[STATUS] != RUNNING:
            raise RuntimeError("Attempt to step on a failed or finished solver.")
        tab = self.tab
        status = erk_step(*self._args, tab.coef, self.sol, self._y, self._y_old, self._f, self._K, self._work)
        self._counted()
        if status == NOT_FINITE:
            self._fail()
        return self.TOO_SMALL_STEP if status == TOO_SMALL else None

    def dense_output(self) -> _Dense:
        tab = self.tab
        Q = self.interpolant_array()
        ok = erk_dense_prepare(*self._args, tab.coef, self.sol, self._y, self._y_old, self._f, self._K, Q,
                               self._work)
        self._counted()
        if not ok:
            self._fail()
        return self.interpolant(float(self.sol[T_OLD]), float(self.sol[H_PREV]), Q)

    def interpolant_array(self) -> np.ndarray:
        """A new array for the interpolant's coefficients (:func:`erk_dense_prepare`'s ``Q``)."""
        return interpolant_array(self.tab, self._y.shape[0])

    def interpolant(self, t_old: float, h: float, Q: np.ndarray) -> _Dense:
        """The last step's interpolant from its coefficients ``Q`` (copied), the step from
        ``t_old`` of length ``h``."""
        return _Dense(self.tab.kind, t_old, h, self._y_old.copy(), Q.copy())

    @property
    def state_arrays(self) -> tuple:
        """The arrays the steps work in, for a compiled caller that steps this solver
        (:func:`engine.row_kernels.erk_dense_rows`): (coefficients, the constants of its
        last start, its scalars, state, state before the last step, right-hand side,
        stages, scratch)."""
        return (self.tab.coef, self._const, self.sol, self._y, self._y_old, self._f, self._K, self._work)

    def evaluated_elsewhere(self, count: int) -> None:
        """``count`` right-hand sides a compiled caller evaluated stepping this solver's
        arrays: counted for the formulation, and this solver's own count taken from its
        scalars as they are now."""
        self.rates.count(count)
        self._nfev = int(self.sol[NFEV])
