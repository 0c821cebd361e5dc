"""Formulations, one module each (conventions 4), behind one interface (:mod:`.base`).

``REGISTRY`` maps the contract's ``--formulation`` names to classes; the GUI
lists whatever is registered here, so a new formulation needs no GUI change.
A formulation's module (and numba) is imported when its class is first looked
up, not when the registry is: ``linkwork run --help`` lists the names without
loading any kernel.
"""

from __future__ import annotations

import importlib
from collections.abc import MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Model
    from .base import Formulation


class _Registry(MutableMapping):
    """``name -> Formulation subclass``, importing each module on first use.  A class
    may also be registered directly (``REGISTRY["mine"] = MyFormulation``): the GUI
    then lists it like the built-in ones."""

    def __init__(self, entries: dict[str, str]):
        self._entries = entries  # name -> "module:Class"
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> "type[Formulation]":
        if name not in self._classes:
            module, cls = self._entries[name].split(":")
            self._classes[name] = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
        return self._classes[name]

    def __setitem__(self, name: str, cls: "type[Formulation]") -> None:
        self._entries[name] = ""
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self._classes.pop(name, None)

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


REGISTRY: MutableMapping[str, "type[Formulation]"] = _Registry({
    "dense": "dense:DenseFormulation",
    "dca": "dca:DCAFormulation",
    "hdca": "hdca:HDCAFormulation",
    "index3": "index3:Index3Formulation",
    "rcr": "rcr:RCRFormulation",
    "embedding": "embedding:EmbeddingFormulation",
})

#: names the contract reserves for formulations this version does not have yet
PLANNED: tuple[str, ...] = ()


#: with closed loops, ``dense`` is the default up to this many joint velocities
DENSE_DEFAULT_MAX_NV = 300


def default_formulation(model: "Model") -> str:
    """The formulation ``linkwork run`` uses when none is given (docs/formulations.md, "Default").

    Open chains and trees: ``dca`` (O(n), exact, nothing to drift).  Closed loops:
    ``dense`` while it is affordable -- it projects onto the constraints and crosses
    singular configurations -- and ``hdca`` beyond (velocity-level closure, O(n)).
    A formulation that refuses the model (e.g. one that cannot honour its gear
    couplings) gives way to ``dense``, which honours them at any size.
    """
    if model.ncut == 0:
        choice = "dca"
    elif model.nv <= DENSE_DEFAULT_MAX_NV:
        choice = "dense"
    else:
        choice = "hdca"
    if choice != "dense" and not REGISTRY[choice].supports(model)[0]:
        choice = "dense"
    return choice


def __getattr__(name: str):
    if name in ("Evaluation", "Formulation"):
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["REGISTRY", "PLANNED", "Evaluation", "Formulation", "default_formulation"]
