"""Formulations, one module each, behind one interface (:mod:`.base`).

``REGISTRY`` maps the contract's ``--formulation`` names to classes; the GUI
lists whatever is registered here, so a new formulation needs no GUI change.
A formulation's module (and numba) is imported when its class is first looked
up, not when the registry is: ``linkwork run --help`` lists the names without
loading any kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .registry import REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Model

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
