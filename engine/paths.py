"""Where the bundled resources live (repository checkout or installed copy)."""

from __future__ import annotations

from pathlib import Path


def resources_dir() -> Path:
    """The ``resources/`` folder: next to the packages in a checkout or editable install,
    or inside a PyInstaller bundle (``sys._MEIPASS/resources``)."""
    import sys

    base = getattr(sys, "_MEIPASS", None)
    if base:
        return Path(base) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def examples_dir() -> Path:
    return resources_dir() / "examples"
