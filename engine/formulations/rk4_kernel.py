"""The ``rk4`` integrator's inner loop in compiled code, for any formulation whose
right-hand side is one state kernel (:class:`.base.StateKernel`: ``dca``, ``hdca``).

A whole run of a small mechanism spent most of its time around the right-hand sides:
the classical Runge-Kutta step's array arithmetic in numpy (four stages, a dozen small
temporaries) and one call from Python per right-hand side.  :func:`rk4_interval` does
an output interval's steps in one call and calls the right-hand side's compiled code
directly, by the address of its machine code with its table alone
(:func:`call_by_table_bool`): it is compiled once for every formulation, small, and does
not link the right-hand side's code into its own (each kernel a caller calls by name is
optimised into the caller again, which would double the formulation's compile time).

The arithmetic is :func:`.base.rk4_step`'s and :meth:`.base.Formulation.rk4_steps`'s,
operation for operation, so a run gives the same numbers bit for bit whichever path
it takes (tests/engine/formulations/test_rk4_kernel.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ..kinematics import normalize_quaternions
from .workspace import NCOL, compiled_address, compiled_entry, unpack


def _call_with_tuple(restype, failed, checked: bool = False):
    """An intrinsic calling the compiled kernel at ``address`` -- numba's native entry of a
    kernel returning ``restype``, compiled for exactly the types of the tuple ``args``
    (:func:`native_address`) -- with the members of ``args``.  It returns what the kernel
    returned (``failed`` if it raised), or for a kernel returning nothing whether it
    raised nothing; ``checked``: ``(whether it raised nothing, what it returned)``, for a
    ``restype`` with no value to stand for a failure (a tuple).  A kernel called by name
    would be compiled again into its caller."""
    void = restype == types.none

    def typer(typingctx, address, args):
        if not isinstance(address, types.Integer) or not isinstance(args, types.BaseTuple):
            return None
        argtys = tuple(args.types)

        def codegen(context, builder, signature, llargs):
            fnty = context.call_conv.get_function_type(restype, argtys)
            fn = builder.inttoptr(llargs[0], fnty.as_pointer())
            values = [builder.extract_value(llargs[1], i) for i in range(len(argtys))]
            status, res = context.call_conv.call_function(builder, fn, restype, argtys, values)
            if void:
                return status.is_ok
            if checked:
                return context.make_tuple(builder, signature.return_type, [status.is_ok, res])
            return builder.select(status.is_ok, res, context.get_constant(restype, failed))

        returns = types.boolean if void else types.Tuple((types.boolean, restype)) if checked else restype
        return returns(address, args), codegen

    return typer


#: ``call_void(address, args) -> bool``: a kernel that returns nothing (False if it raised)
call_void = intrinsic(_call_with_tuple(types.none, None))
#: ``call_float(address, args) -> float``: a kernel that returns a float64 (NaN if it raised)
call_float = intrinsic(_call_with_tuple(types.float64, float("nan")))
#: ``call_checked_float(address, args) -> (ok, float)``: a kernel returning a float64, and
#: whether it raised nothing (where its NaN is an answer, not a failure)
call_checked_float = intrinsic(_call_with_tuple(types.float64, None, checked=True))
#: ``call_checked_count(address, args) -> (ok, (int, float))``: index3's Newton iterations
call_checked_count = intrinsic(_call_with_tuple(types.Tuple((types.int64, types.float64)), None, checked=True))
#: ``call_checked_floats3(address, args) -> (ok, (float, float, float))``: index3's velocity projection
call_checked_floats3 = intrinsic(_call_with_tuple(types.UniTuple(types.float64, 3), None, checked=True))


#: what a table holds in place of a kernel's ``proto``: a numba type is passed as one opaque
#: pointer whose value no kernel reads (its type is the kernel's, fixed when it was compiled)
_ANY_PROTO = types.TypeRef(types.none)


def table_call(restype, failed, address, desc, arrays):
    """The signature and code generator of a call ``kernel(desc, proto, *arrays) -> restype``
    at ``address`` with the table ``desc`` alone (:func:`_by_table`)."""
    if not isinstance(address, types.Integer):
        return None
    argtys = (desc, _ANY_PROTO, *arrays)

    def codegen(context, builder, signature, args):
        fnty = context.call_conv.get_function_type(restype, argtys)
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        values = [args[1], context.get_constant_null(_ANY_PROTO), *args[2:]]
        status, res = context.call_conv.call_function(builder, fn, restype, argtys, values)
        return builder.select(status.is_ok, res, context.get_constant(restype, failed))

    return restype(address, desc, *arrays), codegen


def _by_table(restype, failed):
    """An intrinsic ``(address, desc, a, b) -> restype`` calling a state kernel
    ``kernel(desc, proto, a, b) -> restype`` at ``address`` (numba's native entry for its
    table's type and these arrays: :meth:`.base.StateKernel.native`) with its table
    ``desc`` alone: ``proto`` is a type, read by the kernel when it was compiled, and
    passed as a null pointer.  A kernel's address and table can then be held in another
    kernel's table, and a caller is compiled once for every workspace type.  ``failed``
    if it raised."""

    def typer(typingctx, address, desc, a, b):
        return table_call(restype, failed, address, desc, (a, b))

    return typer


@intrinsic
def call_dynamics_by_table(typingctx, address, desc, q, v, out):
    """``rcr``'s dynamics kernel ``dynamics(desc, proto, q, v, out) -> bool`` at ``address``
    with its table alone (as :func:`_by_table`'s calls); False if it raised."""
    return table_call(types.boolean, False, address, desc, (q, v, out))


@intrinsic
def call_positions_by_table(typingctx, address, desc, q):
    """``rcr``'s positions kernel ``positions(desc, proto, q) -> float`` at ``address`` with
    its table alone (as :func:`_by_table`'s calls); NaN if it raised."""
    return table_call(types.float64, float("nan"), address, desc, (q,))


#: ``call_by_table(address, desc, a, b) -> float``: an operations kernel (NaN if it raised)
call_by_table = intrinsic(_by_table(types.float64, float("nan")))
#: ``call_by_table_bool(address, desc, y, out) -> bool``: a right-hand side's state kernel
#: (False if it raised)
call_by_table_bool = intrinsic(_by_table(types.boolean, False))


def native_address(kernel, *args) -> int:
    """The address of ``kernel``'s machine code for the types of ``args`` (compiled if need
    be), for :func:`call_void`."""
    return compiled_address(kernel, args)


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def copy1(dst, src):
    """``dst[:] = src`` for two 1-D arrays of one length, element by element."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _stage(st, y, c, k):
    """A stage's state ``st = y + c k`` (``c`` = h/2 or h, as numpy's ``y + h / 2 * k``)."""
    for i in range(y.shape[0]):
        st[i] = y[i] + c * k[i]


@njit(cache=True, nogil=True, _nrt=False)
def rk4_interval(f, f_desc, p, p_desc, clock, y, stages, time):
    """``n`` classical Runge-Kutta steps from ``(t0, y)`` to ``t1`` in place on ``y``
    (``clock`` = (t0, t1, n)), each followed by the post-step kernel ``p`` (0: none), as
    the generic loop does them.  ``f``, ``p``: the addresses of the right-hand side's and
    the post-step's state kernels, each with its table (:func:`call_by_table_bool`);
    ``stages``: (5, len(y)) scratch for k1..k4 and the stage state; ``time``: where a
    time-dependent right-hand side reads its time, each stage's written into ``time[0]``
    before it is called (empty: none).  Where ``clock`` has a
    fourth slot and it is not 0, ``stages[0]`` already holds ``f`` at ``(t0, y)`` (the row
    loop's evaluation at the output instant wrote it: :func:`engine.row_kernels.rk4_rows`) and
    the first step takes it as its k1 instead of evaluating ``f`` again -- the same
    numbers, counted as the right-hand side they are.

    Returns ``(right-hand sides evaluated, t)``: ``t`` is NaN when every one was finite,
    else the time of the first that was not (the interval stops there)."""
    t0, t1 = clock[0], clock[1]
    n = np.int64(clock[2])
    k1, k2, k3, k4, st = stages[0], stages[1], stages[2], stages[3], stages[4]
    m = y.shape[0]
    h = (t1 - t0) / n
    count = 0
    known = clock.shape[0] > 3 and clock[3] != 0.0
    timed = time.shape[0] > 0
    for i in range(n):
        t = t0 + i * h
        count += 1
        if timed:
            time[0] = t
        if not (known and i == 0) and not call_by_table_bool(f, f_desc, y, k1):
            return count, t
        _stage(st, y, h / 2, k1)
        count += 1
        if timed:
            time[0] = t + h / 2
        if not call_by_table_bool(f, f_desc, st, k2):
            return count, t + h / 2
        _stage(st, y, h / 2, k2)
        count += 1
        if not call_by_table_bool(f, f_desc, st, k3):
            return count, t + h / 2
        _stage(st, y, h, k3)
        count += 1
        if timed:
            time[0] = t + h
        if not call_by_table_bool(f, f_desc, st, k4):
            return count, t + h
        for k in range(m):
            y[k] = y[k] + h / 6 * (((k1[k] + 2 * k2[k]) + 2 * k3[k]) + k4[k])
        if p != 0:
            call_by_table_bool(p, p_desc, y, k1)  # k1: free until the next step's
    return count, np.nan


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _split_rates(pa, p_desc, da, d_desc, nq, state, out):
    """``rcr``'s right-hand side at ``state`` into ``out``: its positions kernel, then its
    dynamics (``RCRFormulation._solve``); (whether finite, the positions' conditioning)."""
    cond = call_positions_by_table(pa, p_desc, state[:nq])
    return call_dynamics_by_table(da, d_desc, state[:nq], state[nq:], out), cond


@njit(cache=True, nogil=True, _nrt=False)
def rk4_interval_split(positions, dynamics, mk, quaternions, post, clock, y, stages, time):
    """:func:`rk4_interval` for a right-hand side of two kernels (``rcr``, ``embedding``:
    ``positions`` at ``q``, then the ``dynamics`` at ``(q, v)``, each (address, table) as
    :func:`call_positions_by_table` and :func:`call_dynamics_by_table` take them), with after
    each step the post-step ``post`` = (address, table) (:func:`call_by_table_bool`,
    ``out`` the free k1; address 0: none), or else the quaternions' normalisation by the
    kinematic arrays ``mk`` if ``quaternions``; ``clock`` = (t0, t1, n, nq), and where it
    has a fifth slot that is not 0, ``stages[0]`` holds the rates at ``(t0, y)`` already
    (:func:`rk4_interval`'s fourth); ``time`` as :func:`rk4_interval`'s, and before the
    post-step the step's end as :meth:`.base.Formulation.rk4_steps` computes it.  Returns
    ``(right-hand sides evaluated, t, the last positions' conditioning)``, ``t`` as
    :func:`rk4_interval`'s."""
    pa, p_desc = positions
    da, d_desc = dynamics
    t0, t1 = clock[0], clock[1]
    n = np.int64(clock[2])
    nq = np.int64(clock[3])
    known = clock.shape[0] > 4 and clock[4] != 0.0
    timed = time.shape[0] > 0
    k1, k2, k3, k4, st = stages[0], stages[1], stages[2], stages[3], stages[4]
    m = y.shape[0]
    h = (t1 - t0) / n
    count = 0
    cond = np.nan
    for i in range(n):
        t = t0 + i * h
        count += 1
        if timed:
            time[0] = t
        if not (known and i == 0):
            ok, cond = _split_rates(pa, p_desc, da, d_desc, nq, y, k1)
            if not ok:
                return count, t, cond
        _stage(st, y, h / 2, k1)
        count += 1
        if timed:
            time[0] = t + h / 2
        ok, cond = _split_rates(pa, p_desc, da, d_desc, nq, st, k2)
        if not ok:
            return count, t + h / 2, cond
        _stage(st, y, h / 2, k2)
        count += 1
        ok, cond = _split_rates(pa, p_desc, da, d_desc, nq, st, k3)
        if not ok:
            return count, t + h / 2, cond
        _stage(st, y, h, k3)
        count += 1
        if timed:
            time[0] = t + h
        ok, cond = _split_rates(pa, p_desc, da, d_desc, nq, st, k4)
        if not ok:
            return count, t + h, cond
        for k in range(m):
            y[k] = y[k] + h / 6 * (((k1[k] + 2 * k2[k]) + 2 * k3[k]) + k4[k])
        if timed:  # the step's end as Formulation.rk4_steps hands it to post_step
            time[0] = t1 if i == n - 1 else t0 + (i + 1) * h
        if post[0] != 0:
            call_by_table_bool(post[0], post[1], y, k1)  # k1: free until the next step's
        elif quaternions:
            normalize_quaternions(mk, y)
    return count, np.nan, cond


@njit(cache=True, nogil=True, _nrt=False)
def normalize_state(desc, proto, y, out):
    """The tree formulations' post-step as a state kernel: the spherical joints'
    quaternions in ``y``'s coordinates renormalised in place (``out`` is ``y``); the
    table holds the kinematic arrays."""
    (mk,) = unpack(desc, proto)
    normalize_quaternions(mk, y)
    return True


#: :func:`rk4_interval`'s ``time`` for a right-hand side that takes none
_NO_TIME = np.zeros(0)


class RK4Interval:
    """:func:`rk4_interval` bound to a formulation's right-hand side and post-step
    state kernels (:class:`.base.StateKernel`; ``post`` None: none): called with
    ``(t0, t1, y, n)``, it returns ``(y at t1, right-hand sides evaluated, t)`` as
    :func:`rk4_interval` does, ``y`` untouched.  Calls the compiled entry for its
    argument types directly (the dispatcher would type the tables' numba types in
    Python on every call, :class:`.base.StateKernel`)."""

    def __init__(self, rhs, post=None):
        self.rhs, self.post = rhs, post
        self._args = None
        self._entry = None
        self.clock = np.zeros(3)
        self.stages = None

    def __reduce__(self):
        """Copied or pickled, bound again at its first call (addresses are this process's)."""
        return RK4Interval, (self.rhs, self.post)

    def _bind(self, m: int) -> None:
        rhs, post = self.rhs, self.post or self.rhs
        self._args = (rhs.native(), rhs.desc, 0 if self.post is None else post.native(), post.desc)
        self.stages = np.zeros((5, m))
        self._entry = compiled_entry(rk4_interval, (*self._args, self.clock, self.stages[0], self.stages, _NO_TIME))

    def __call__(self, t0: float, t1: float, y: np.ndarray, n: int) -> tuple[np.ndarray, int, float]:
        out = np.array(y, dtype=np.float64)  # a copy: the integrator restarts from y on a retry
        if self._entry is None or self.stages.shape[1] != out.shape[0]:
            self._bind(out.shape[0])
        clock = self.clock
        clock[0], clock[1], clock[2] = t0, t1, n
        count, t = self._entry(*self._args, clock, out, self.stages, _NO_TIME)
        return out, count, t


#: :func:`rk4_interval_split`'s ``post`` where there is none
NO_POST = (0, np.zeros((0, NCOL), dtype=np.int64))


class RK4SplitInterval:
    """:func:`rk4_interval_split` bound to ``rcr``'s two kernels (positions, dynamics:
    :class:`.base.StateKernel`) and kinematic arrays ``mk``: called with ``(t0, t1, y, n,
    nq)``, it returns ``(y at t1, right-hand sides evaluated, t, the last positions'
    conditioning)``, ``y`` untouched (as :class:`RK4Interval`)."""

    def __init__(self, positions, dynamics, mk, quaternions: bool):
        self.positions, self.dynamics, self.mk, self.quaternions = positions, dynamics, mk, quaternions
        self._args = None
        self._entry = None
        self.clock = np.zeros(4)
        self.stages = None

    def __reduce__(self):
        """Copied or pickled, bound again at its first call (addresses are this process's)."""
        return RK4SplitInterval, (self.positions, self.dynamics, self.mk, self.quaternions)

    def _bind(self, m: int) -> None:
        pos, dyn = self.positions, self.dynamics
        self._args = ((pos.native(1), pos.desc), (dyn.native(3), dyn.desc), self.mk,
                      np.bool_(self.quaternions), NO_POST)
        self.stages = np.zeros((5, m))
        self._entry = compiled_entry(rk4_interval_split, (*self._args, self.clock, self.stages[0], self.stages,
                                                          _NO_TIME))

    def __call__(self, t0: float, t1: float, y: np.ndarray, n: int, nq: int):
        out = np.array(y, dtype=np.float64)  # a copy: the integrator restarts from y on a retry
        if self._entry is None or self.stages.shape[1] != out.shape[0]:
            self._bind(out.shape[0])
        clock = self.clock
        clock[0], clock[1], clock[2], clock[3] = t0, t1, n, nq
        count, t, cond = self._entry(*self._args, clock, out, self.stages, _NO_TIME)
        return out, count, t, cond
