"""Work-around for a reference-counting bug of the installed Qt binding.

PySide6 6.12.0 wheels assume CPython >= 3.12, where ``None``, ``True`` and
``False`` are *immortal*: their functions return these singletons without
taking a reference.  On CPython 3.11 every void Qt call (``setText``,
``processEvents``, ``start`` ...) therefore drops one reference to ``None``
and every ``Signal.emit()`` one to ``True``; after a few thousand calls the
interpreter aborts with "Fatal Python error: none_dealloc" (or
"bool_dealloc").  Minimal reproduction::

    from PySide6.QtCore import QObject
    o = QObject()
    for _ in range(100_000):
        o.setObjectName("x")      # Fatal Python error: none_dealloc

:func:`apply` probes for the bug and, only where it is present, does what
CPython 3.12 does: it gives the three singletons a reference count so large
(2**40) that the lost references can never bring it to zero.  Nothing changes
on CPython >= 3.12 or with a fixed PySide6.
"""

from __future__ import annotations

import ctypes
import sys

#: added to the reference counts of None, True and False (CPython 3.12 uses ~2**32)
_BOOST = 1 << 40
_applied = False


def _refcnt(obj) -> ctypes.c_ssize_t:
    # ob_refcnt is the first field of every object in a release build of CPython
    return ctypes.c_ssize_t.from_address(id(obj))


def binding_drops_references(n: int = 64) -> bool:
    """Probe: do void Qt calls lose a reference to ``None``?"""
    from PySide6.QtCore import QObject

    o = QObject()
    before = sys.getrefcount(None)
    for _ in range(n):
        o.setObjectName("probe")
    lost = before - sys.getrefcount(None)
    return lost >= n // 2


def apply() -> bool:
    """Protect None, True and False if this PySide6 needs it; returns whether it did."""
    global _applied
    if _applied:
        return True
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    if not binding_drops_references():
        return False
    for obj in (None, True, False):
        _refcnt(obj).value += _BOOST
    _applied = True
    return True


