"""Where the bundled resources live: a checkout, an installed wheel or a desktop bundle.

- a checkout (or an editable install): ``resources/`` and ``docs/`` at the top of the
  repository, next to ``pyproject.toml``;
- an installed wheel: ``engine/resources/`` (``setup.py`` copies ``resources/`` and the
  help pages of ``docs/`` there when it builds the wheel);
- a PyInstaller bundle: ``resources/`` and ``docs/`` in ``sys._MEIPASS``
  (``packaging/linkwork.spec``).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _checkout() -> Path | None:
    """The repository this engine is imported from, if it is one."""
    top = _HERE.parent
    return top if (top / "pyproject.toml").is_file() and (top / "resources").is_dir() else None


def resources_dir() -> Path:
    """The ``resources/`` folder (examples, style, icons)."""
    base = getattr(sys, "_MEIPASS", None)
    if base:
        return Path(base) / "resources"
    top = _checkout()
    return top / "resources" if top is not None else _HERE / "resources"


def docs_dir() -> Path:
    """The folder of the help pages (``formulations.md``, ``user-guide.md``, ``images/``)."""
    base = getattr(sys, "_MEIPASS", None)
    if base:
        return Path(base) / "docs"
    top = _checkout()
    return top / "docs" if top is not None else _HERE / "resources" / "docs"


def examples_dir() -> Path:
    return resources_dir() / "examples"
