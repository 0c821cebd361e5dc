"""Linkwork: dynamics of mechanisms -- the Python API and the ``linkwork`` command.

The common path::

    from linkwork import Settings, Simulation, examples_dir, load_model

    model = load_model(examples_dir() / "loop-4.mech.json")   # or any *.mech.json
    for chunk in Simulation(model, Settings(formulation="dense", t_end=2.0)).run():
        print(chunk.t[-1], chunk.stats["rhs_evaluations"])

The headless engine is :mod:`linkwork.engine` (mechanism files, models, formulations,
simulation, studies, sweeps); the desktop application is :mod:`linkwork.app`, imported
only by the front ends that need it (:mod:`linkwork.cli`).  The names above are loaded
on first use, so ``import linkwork`` and ``linkwork --help`` stay instant.
"""

from __future__ import annotations

from importlib import import_module

#: the names ``from linkwork import ...`` offers, and the engine module of each
_API = {
    "load_model": "linkwork.engine.model",
    "Model": "linkwork.engine.model",
    "Simulation": "linkwork.engine.simulation",
    "Settings": "linkwork.engine.simulation",
    "file_defaults": "linkwork.engine.simulation",
    "LinkworkError": "linkwork.engine.errors",
    "examples_dir": "linkwork.engine.paths",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name == "__version__":
        return import_module("linkwork.engine").__version__
    if name in _API:
        value = getattr(import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'linkwork' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
