"""Qt widgets of the application (the only layer that imports PySide6).

Importing this package first protects the interpreter from a reference
counting bug of PySide6 6.12 on CPython 3.11 (see :mod:`app.qt_compat`).
"""

from .. import qt_compat as compat

#: whether the PySide6 reference-count work-around was needed on this interpreter
REFCOUNT_WORKAROUND = compat.apply()
