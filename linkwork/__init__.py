"""The ``linkwork`` launcher: one entry point above the engine and the application.

It is the console script (``pyproject.toml``) and the desktop bundle's entry
(``packaging/linkwork_main.py``).  The command line itself is the engine's
(:mod:`engine.cli`: every headless sub-command); this package adds the front ends
that need the desktop application -- the window, ``report`` and ``--selftest`` --
and imports :mod:`app` only when one of them runs.  So the engine, a headless
library, never reaches up into the GUI (conventions 14, tests/engine/test_import_contract.py).
"""

from engine import __version__

__all__ = ["__version__"]
