"""Formulations, one module each (conventions 4), behind one interface (:mod:`.base`).

``REGISTRY`` maps the contract's ``--formulation`` names to classes; the GUI
lists whatever is registered here, so a new formulation needs no GUI change.
"""

from __future__ import annotations

from ..model import Model
from .base import Evaluation, Formulation
from .dca import DCAFormulation
from .dense import DenseFormulation
from .hdca import HDCAFormulation

REGISTRY: dict[str, type[Formulation]] = {
    "dense": DenseFormulation,
    "dca": DCAFormulation,
    "hdca": HDCAFormulation,
}

#: names the contract reserves for formulations this version does not have yet
PLANNED = ("dca", "hdca", "index3", "rcr", "embedding")


def default_formulation(model: Model) -> str:
    """The formulation ``linkwork run`` uses when none is given (docs/formulations.md)."""
    return "dense"


__all__ = ["REGISTRY", "PLANNED", "Evaluation", "Formulation", "default_formulation"]
