"""engine.formulations.workspace: a kernel's workspace as one table (pack / unpack)."""

import numba
import numpy as np
import pytest
from numba import typeof

from linkwork.engine.formulations.workspace import pack, unpack


@numba.njit(_nrt=False)
def _roundtrip(desc, proto, out):
    """Reads every value back and writes through the views: a (3, 4) float array gets +1,
    an int array doubles, the 3-D array's [1, 2, 3] gets the scalars' sum; returns the
    values' checksum."""
    a, (b, (c, flag, none)), d, strided, ro, e, alpha, n = unpack(desc, proto)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] += 1.0
    for i in range(b.shape[0]):
        b[i] *= 2
    total = 0.0
    for i in range(strided.shape[0]):
        total += strided[i]
    for i in range(ro.shape[0]):
        total += ro[i]
    d[1, 2, 3] = alpha + n + (1.0 if flag else 0.0)
    out[0] = total
    out[1] = c.shape[0] + c.shape[1] + e.shape[0]
    out[2] = 1.0 if none is None else 0.0
    return b.shape[0]


def _values():
    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(5, dtype=np.int64)
    c = np.zeros((0, 6))  # empty, as a mechanism without loops has
    d = np.zeros((2, 3, 4))
    base = np.arange(20.0)
    strided = base[1::3]  # not contiguous: the table keeps its strides
    ro = np.arange(4.0)
    ro.flags.writeable = False
    e = np.zeros(3, dtype=np.bool_)
    return (a, (b, (c, True, None)), d, strided, ro, e, 0.25, 7)


def test_unpack_rebuilds_every_value_as_a_view_of_the_same_memory():
    vals = _values()
    a, (b, _), d, strided, ro, _, _, _ = vals
    a0, b0 = a.copy(), b.copy()
    desc, proto = pack(vals)
    assert proto == typeof(vals)  # the types the kernel compiles for are the values' own
    out = np.zeros(3)
    assert _roundtrip(desc, proto, out) == 5
    assert np.array_equal(a, a0 + 1.0)  # writes land in the caller's arrays
    assert np.array_equal(b, 2 * b0)
    assert d[1, 2, 3] == 0.25 + 7 + 1.0 and np.count_nonzero(d) == 1
    assert out[0] == strided.sum() + ro.sum()
    assert out[1] == 0 + 6 + 3
    assert out[2] == 1.0


def test_a_read_only_array_stays_read_only_in_the_kernel():
    ro = np.arange(3.0)
    ro.flags.writeable = False

    @numba.njit
    def write(desc, proto):
        (x,) = unpack(desc, proto)
        x[0] = 1.0

    with pytest.raises(numba.TypingError):
        write(*pack((ro,)))


@pytest.mark.parametrize("bad", [np.zeros((1, 1, 1, 1, 1)), np.float32(1.0), np.int32(3), "text"])
def test_pack_refuses_what_unpack_cannot_rebuild(bad):
    with pytest.raises((TypeError, ValueError)):
        pack((np.zeros(2), bad))


def test_typeof_cached_is_numbas_typeof_for_every_kind_of_value_a_kernel_is_given():
    """The remembered type is numba's own for arrays of every layout and writability,
    scalars, named and nested tuples -- and does not confuse two that differ only in a
    property the key must hold (a transposed, a strided, a read-only array; a named tuple)."""
    from collections import namedtuple

    from linkwork.engine.formulations.workspace import typeof_cached

    Pair = namedtuple("Pair", "a b")
    a = np.zeros((3, 4))
    frozen = np.zeros(3)
    frozen.setflags(write=False)
    values = [a, a.T, a[:, 1], a[::2], np.zeros(3, np.int64), np.zeros(2, np.bool_), frozen, 3, 2**63 - 1, 2**63,
              -5, 1.5, True, None, np.float64(2.0), np.int64(4), (a, 1.0), Pair(a, 2), (a, 2), (a.T, (frozen, 1))]
    for _ in range(2):  # the second time from the memory
        for v in values:
            assert typeof_cached(v) == typeof(v), v


def test_a_new_array_in_a_dead_ones_place_gets_its_own_address():
    """pack remembers array addresses by identity: an array allocated where a packed one
    was freed (CPython reuses both the object's id and, often, its memory) is looked up
    afresh, never given the dead array's address, shape or strides."""
    from linkwork.engine.formulations import workspace

    known = len(workspace._ADDRESSES)
    seen = set()
    for n in range(1, 200):
        a = np.zeros((n % 7 + 1, 3)) if n % 2 else np.zeros(n % 5 + 2)[::2]
        seen.add(id(a))
        desc, _ = pack((a,))
        assert desc[0, 0] == a.ctypes.data
        assert tuple(desc[0, 1:1 + a.ndim]) == a.shape and tuple(desc[0, 5:5 + a.ndim]) == a.strides
        del a
    assert len(seen) < 199  # ids were reused: the case this test is about happened
    assert len(workspace._ADDRESSES) <= known  # and the dead arrays' entries went with them
