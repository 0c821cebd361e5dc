"""A formulation's workspace handed to its evaluation kernel as one descriptor.

An evaluation kernel reads and writes some 120 arrays (the model's, the layout's, the
formulation's workspace).  Passed as arguments, each is unboxed by numba on every call
-- a Python object inspected, a record filled -- which cost a right-hand side about
1.8 us whatever the mechanism's size (docs/performance.md, "The workspace as one
argument").  Since the workspace is allocated once and only ever written in place,
its arrays' addresses, shapes and strides are fixed for the formulation's life: they
are written once into an ``int64`` table (:func:`pack`), and the kernel rebuilds the
same arrays from it (:func:`unpack`) -- the views numba would have unboxed, with the
same types, so every pass compiles as before.

    desc, proto = pack((mk, ix, x, alpha))       # once, in Python
    mk, ix, x, alpha = unpack(desc, proto)       # first line of the kernel

``proto`` is the numba type of the values; passed to a kernel, a numba type is a
``TypeRef`` argument (unboxed for nothing), the kernel is compiled for it, and
:func:`unpack` walks it depth first as :func:`pack` walked the values.  The caller keeps
the values alive (``StateKernel`` holds them): the table holds only addresses.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np
from llvmlite import ir
from numba import types, typeof
from numba.core import cgutils, config
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from .. import start_parallel_backend

#: the most dimensions of a workspace array
MAX_NDIM = 4
#: a row of the table: address, shape (MAX_NDIM), strides (MAX_NDIM); a scalar: its bits in column 0
NCOL = 1 + 2 * MAX_NDIM


#: scalar classes whose numba type does not depend on the value
_FIXED_SCALARS = (bool, float, type(None), np.float64, np.int64, np.bool_)
_TYPES: dict = {}
#: the numba types keyed by identity in _TYPES, kept alive so that no other object takes their id
_KEPT: dict = {}
#: (dispatcher, the arguments' keys) -> compiled overload (compiled_entry, compiled_address)
_OVERLOADS: dict = {}


def _array_key(v: np.ndarray) -> tuple:
    """What numba's type of the array ``v`` depends on (:func:`_type_key`, :func:`pack`)."""
    f = v.flags
    return (v.dtype.str, v.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)


def _type_key(v):
    """What numba's type of ``v`` depends on, cheaply; None where not known here.  A numba
    type (a workspace's prototypes, passed as an argument) by identity: numba interns its
    types, and hashing a tuple type hashes every member's, a millisecond for a large
    workspace."""
    if isinstance(v, np.ndarray):
        return _array_key(v)
    if isinstance(v, tuple):
        keys = tuple(_type_key(w) for w in v)
        return None if None in keys else (type(v), keys)  # a named tuple types as one
    cls = type(v)
    if cls in _FIXED_SCALARS:
        return cls
    if cls is int and -(1 << 63) <= v < (1 << 63):
        return int
    if isinstance(v, types.Type):
        _KEPT.setdefault(id(v), v)
        return (types.Type, id(v))
    return None


def typeof_cached(v):
    """numba's ``typeof(v)`` for arrays, scalars and tuples of those, remembered by what it
    depends on (dtype, dimensions, layout, writeable, aligned): numba builds and hashes a
    tuple's type anew on every call, a millisecond for a workspace of a hundred arrays --
    a tenth of starting a run of a small mechanism."""
    key = _type_key(v)
    if key is None:
        return typeof(v)
    t = _TYPES.get(key)
    if t is None:
        t = _TYPES[key] = typeof(v)
    return t


def _overload(dispatcher, args: tuple):
    """``dispatcher``'s compiled overload for the types of ``args``, compiled if need be;
    found again by the arguments' cheap keys (:func:`_type_key`), not by hashing their
    numba types."""
    keys = tuple(_type_key(a) for a in args)
    known = None not in keys
    if known:
        cres = _OVERLOADS.get((dispatcher, keys))
        if cres is not None:
            return cres
    sig = tuple(typeof_cached(a) for a in args)
    if sig not in dispatcher.overloads:
        start_parallel_backend()  # a formulation unpickled in another process was not constructed
        dispatcher.compile(sig)
    cres = dispatcher.overloads[sig]
    if known:
        _OVERLOADS[(dispatcher, keys)] = cres
    return cres


def compiled_entry(dispatcher, args: tuple):
    """The entry point of ``dispatcher`` compiled for the types of ``args`` (callable with
    such arguments without the dispatcher's typing in Python)."""
    return _overload(dispatcher, args).entry_point


def compiled_address(dispatcher, args: tuple) -> int:
    """The address of ``dispatcher``'s machine code for the types of ``args`` (what the
    compiled callers call by address)."""
    cres = _overload(dispatcher, args)
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


#: (address, weak reference) of every array packed, by ``id``: an array's memory does not
#: move while it lives (nothing here resizes one in place), and ``ndarray.ctypes.data`` costs
#: a microsecond -- half of packing a workspace, which a partition switch does for a dozen
#: kernels.  An entry goes when its array does (its reference's callback)
_ADDRESSES: dict = {}
#: a table row's zero padding after ``ndim`` shape or stride entries
_PAD = tuple((0,) * (MAX_NDIM - n) for n in range(MAX_NDIM + 1))
_SCALAR_PAD = (0,) * (NCOL - 1)


def _forget(ref, key: int) -> None:
    entry = _ADDRESSES.get(key)
    if entry is not None and entry[1] is ref:
        del _ADDRESSES[key]


def _address(v: np.ndarray) -> int:
    key = id(v)
    entry = _ADDRESSES.get(key)
    if entry is not None and entry[1]() is v:
        return entry[0]
    address = v.ctypes.data
    _ADDRESSES[key] = (address, weakref.ref(v, lambda ref: _forget(ref, key)))
    return address


def _walk(v, rows: list):
    """``v``'s rows appended to ``rows``, depth first; returns :func:`_type_key`'s key of
    ``v`` (None where it has none), computed on the same walk."""
    if isinstance(v, np.ndarray):
        nd = v.ndim
        if nd > MAX_NDIM:
            raise TypeError(f"pack: an array of {nd} dimensions (at most {MAX_NDIM})")
        rows.append((_address(v),) + v.shape + _PAD[nd] + v.strides + _PAD[nd])
        return _array_key(v)
    if isinstance(v, tuple):
        keys = tuple([_walk(w, rows) for w in v])
        return None if None in keys else (type(v), keys)
    cls = type(v)
    if cls is bool or cls is np.bool_ or cls is np.int64 or (cls is int and -(1 << 63) <= v < (1 << 63)):
        rows.append((int(v),) + _SCALAR_PAD)
        return cls
    if cls is float or cls is np.float64:
        rows.append((int(np.float64(v).view(np.int64)),) + _SCALAR_PAD)
        return cls
    if v is None:
        rows.append((0,) + _SCALAR_PAD)
        return cls
    raise TypeError(f"pack: cannot pass a {cls.__name__} ({typeof(v)})")


def pack(values: tuple) -> tuple[np.ndarray, types.BaseTuple]:
    """(table, numba type) of ``values``: a tuple of arrays, scalars (int64, float64, bool),
    None and tuples of those.  Raises ``TypeError`` for anything else, or an array of more than
    ``MAX_NDIM`` dimensions."""
    rows: list = []
    key = _walk(values, rows)
    proto = _TYPES.get(key) if key is not None else None
    if proto is None:
        proto = typeof_cached(values)
    return np.array(rows, dtype=np.int64).reshape(-1, NCOL), proto


@intrinsic
def unpack(typingctx, desc, proto):
    """The values :func:`pack` described: arrays as views of the memory they had (no
    reference counting: the caller owns them), scalars by value."""
    target = proto.instance_type

    def codegen(context, builder, sig, args):
        base = make_array(sig.args[0])(context, builder, args[0]).data
        i64 = ir.IntType(64)
        row_of = itertools.count()

        def build(ty):
            if isinstance(ty, types.BaseTuple):
                return context.make_tuple(builder, ty, [build(t) for t in ty])
            row = builder.gep(base, [ir.Constant(i64, next(row_of) * NCOL)])

            def col(c):
                return builder.load(builder.gep(row, [ir.Constant(i64, c)]))

            if isinstance(ty, types.Array):
                ary = make_array(ty)(context, builder)
                dty = context.get_data_type(ty.dtype)
                populate_array(
                    ary, data=builder.inttoptr(col(0), dty.as_pointer()),
                    shape=cgutils.pack_array(builder, [col(1 + d) for d in range(ty.ndim)], i64),
                    strides=cgutils.pack_array(builder, [col(1 + MAX_NDIM + d) for d in range(ty.ndim)], i64),
                    itemsize=ir.Constant(i64, context.get_abi_sizeof(dty)), meminfo=None)
                return ary._getvalue()
            if isinstance(ty, types.NoneType):
                return context.get_dummy_value()
            if isinstance(ty, types.Boolean):
                return builder.icmp_unsigned("!=", col(0), ir.Constant(i64, 0))
            if ty == types.float64:
                return builder.bitcast(col(0), ir.DoubleType())
            if ty == types.int64:
                return col(0)
            raise TypeError(f"unpack: cannot rebuild a {ty}")

        return build(target)

    if not isinstance(proto, types.TypeRef) or not isinstance(desc, types.Array) or desc.dtype != types.int64:
        return None
    if not isinstance(target, types.BaseTuple):
        return None
    return target(desc, proto), codegen


if config.DISABLE_JIT:  # kernels run as plain Python: the table is the values themselves
    def pack(values: tuple) -> tuple[tuple, None]:  # noqa: F811
        """Under ``NUMBA_DISABLE_JIT``: ``(values, None)``."""
        return values, None

    def unpack(desc, proto):  # noqa: F811
        """Under ``NUMBA_DISABLE_JIT``: the values :func:`pack` was given."""
        return desc
