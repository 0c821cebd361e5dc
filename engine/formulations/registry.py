"""``REGISTRY``: the contract's ``--formulation`` names and their classes, each module
(and numba) imported when its class is first looked up, not when the registry is: ``linkwork
run --help`` lists the names without loading any kernel.  A module of its own, below every
formulation, so that :mod:`.base` can name the formulations in a refusal without climbing
into the package."""

from __future__ import annotations

import importlib
from collections.abc import MutableMapping
#: the package whose modules the entries name
PACKAGE = __name__.rsplit(".", 1)[0]


class _Registry(MutableMapping):
    """``name -> Formulation subclass``, importing each module on first use.  A class
    may also be registered directly (``REGISTRY["mine"] = MyFormulation``): the GUI
    then lists it like the built-in ones."""

    def __init__(self, entries: dict[str, str]):
        self._entries = entries  # name -> "module:Class"
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        if name not in self._classes:
            module, cls = self._entries[name].split(":")
            self._classes[name] = getattr(importlib.import_module(f"{PACKAGE}.{module}"), cls)
        return self._classes[name]

    def __setitem__(self, name: str, cls: type) -> None:
        self._entries[name] = ""
        self._classes[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self._classes.pop(name, None)

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


REGISTRY: MutableMapping[str, type] = _Registry({
    "dense": "dense:DenseFormulation",
    "dca": "dca:DCAFormulation",
    "hdca": "hdca:HDCAFormulation",
    "index3": "index3:Index3Formulation",
    "rcr": "rcr:RCRFormulation",
    "embedding": "embedding:EmbeddingFormulation",
})
