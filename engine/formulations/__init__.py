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
from .index3 import Index3Formulation

REGISTRY: dict[str, type[Formulation]] = {
    "dense": DenseFormulation,
    "dca": DCAFormulation,
    "hdca": HDCAFormulation,
    "index3": Index3Formulation,
}

#: names the contract reserves for formulations this version does not have yet
PLANNED = ("rcr", "embedding")


#: with closed loops, ``dense`` is the default up to this many joint velocities
DENSE_DEFAULT_MAX_NV = 300


def default_formulation(model: Model) -> str:
    """The formulation ``linkwork run`` uses when none is given (docs/formulations.md, "Default").

    Open chains and trees: ``dca`` (O(n), exact, nothing to drift).  Closed loops:
    ``dense`` while it is affordable -- it projects onto the constraints and crosses
    singular configurations -- and ``hdca`` beyond (velocity-level closure, O(n)).
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


__all__ = ["REGISTRY", "PLANNED", "Evaluation", "Formulation", "default_formulation"]
