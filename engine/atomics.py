"""Atomic progress counters for two numba threads that work one pass behind the other.

numba's ``prange`` has no way for one iteration to wait for another.  ``dca``'s
two-thread chain kernel (docs/dca-two-threads.md, "Two threads on one chain") gives its two
roles progress counters in an int64 array: the producer writes its results and then
the count of bodies done with :func:`store_release`; the consumer reads the count with
:func:`load_acquire` before it reads those results.  Release and acquire order the
plain loads and stores around them (on x86 they only keep the compiler from moving
them; the hardware already keeps stores in order).  :func:`claim` is a compare-and-swap,
for the handshake that decides which iteration takes which role.

Each counter should have a cache line of its own (stride 8 int64): a consumer reading
a line the producer writes to for something else would slow both down.
"""
from __future__ import annotations

import platform

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: x86's spin-wait hint: a waiting core leaves its pipeline to the other and does not
#: flood the memory system with reads (elsewhere a no-op)
_PAUSE = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _pointer(context, builder, signature, args):
    """The address of ``arr[idx]``, the intrinsics' first two arguments."""
    aty = signature.args[0]
    ary = context.make_array(aty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aty, ary, [args[1]])


@intrinsic
def load_acquire(typingctx, arr, idx):
    """``arr[idx]`` (int64), read atomically with acquire ordering."""

    def codegen(context, builder, signature, args):
        ptr = _pointer(context, builder, signature, args)
        return builder.load_atomic(ptr, "acquire", 8)

    return types.int64(arr, idx), codegen


@intrinsic
def store_release(typingctx, arr, idx, val):
    """``arr[idx] = val`` (int64), written atomically with release ordering."""

    def codegen(context, builder, signature, args):
        ptr = _pointer(context, builder, signature, args)
        builder.store_atomic(context.cast(builder, args[2], signature.args[2], types.int64), ptr, "release", 8)
        return context.get_dummy_value()

    return types.void(arr, idx, val), codegen


@intrinsic
def claim(typingctx, arr, idx, expected, new):
    """Compare-and-swap: if ``arr[idx] == expected`` set it to ``new``, atomically
    (sequentially consistent); returns whether it did."""

    def codegen(context, builder, signature, args):
        ptr = _pointer(context, builder, signature, args)
        old = context.cast(builder, args[2], signature.args[2], types.int64)
        val = context.cast(builder, args[3], signature.args[3], types.int64)
        res = builder.cmpxchg(ptr, old, val, "seq_cst", "seq_cst")
        return builder.extract_value(res, 1)

    return types.boolean(arr, idx, expected, new), codegen


@intrinsic
def spin_pause(typingctx):
    """The processor's spin-wait hint (x86 ``pause``)."""

    def codegen(context, builder, signature, args):
        if _PAUSE:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


@njit(cache=True, nogil=True, inline='always')
def wait_for(arr, idx, need, known):
    """Spin until ``arr[idx] >= need``; ``known`` is the count last read (returned
    again, updated, so a consumer reads the shared line only when it has to)."""
    while known < need:
        known = load_acquire(arr, idx)
        if known < need:
            spin_pause()
    return known
