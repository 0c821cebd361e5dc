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


#: whole-run cost models of the two closed-loop defaults, wall per simulated second (ms)
#: at rk4 and dt = 0.01, least squares over loops of 4-48 bodies and ladders of 1-12
#: cells (benchmarks/default_crossover.py, benchmarks/results/default-crossover.md):
#: ``dense`` solves one system of the joint velocities and the loop rows,
#: ``c0 + c2 k^2 + c3 k^3`` with ``k = nv + loop rows``; ``hdca``'s passes are linear,
#: ``c0 + c_b bodies + c_r loop rows``.  Only their ratio decides.
DENSE_COST = (3.30, 7.29e-3, 3.22e-5)
HDCA_COST = (3.08, 0.735, 0.241)
#: ``hdca`` takes over where it is estimated at most this fraction of ``dense``'s cost.
#: Both make their rk4, rk45 and dop853 rows in compiled code, so the lead is not about
#: speed (ladder-6: 20 against 33 ms at rk4): ``dense`` is the reference, whose projection
#: keeps the branch through singular configurations by construction, and keeps a
#: mechanism where the two are within a fifth of each other (ladders of up to 5 cells,
#: single loops of up to about 80 bodies, most random spatial mechanisms with up to three
#: loops)
HDCA_LEAD = 0.8


def loop_rows(model: "Model") -> int:
    """The constraint rows ``dense`` adds to the joint velocities: the cut joints'
    equations, one per gear pair, one per driver."""
    return int(model.nc_j[model.is_cut].sum()) + model.ng + model.nd


def default_costs(model: "Model") -> tuple[float, float]:
    """``dense``'s and ``hdca``'s estimated wall per simulated second (:data:`DENSE_COST`,
    :data:`HDCA_COST`)."""
    r = loop_rows(model)
    k = model.nv + r
    c0, c2, c3 = DENSE_COST
    h0, hb, hr = HDCA_COST
    return c0 + k * k * (c2 + c3 * k), h0 + hb * model.nb + hr * r


def default_formulation(model: "Model") -> str:
    """The formulation ``linkwork run`` uses when none is given (docs/formulations.md, "Default").

    Open chains and trees: ``dca`` (O(n), exact, nothing to drift).  Closed loops:
    ``dense`` -- it projects onto the constraints and crosses singular configurations --
    until ``hdca`` (velocity-level closure with the positions projected after each step,
    O(n), crosses them too) is estimated to take at most :data:`HDCA_LEAD` of its time
    (:func:`default_costs`: from six cells of a ladder, or a single loop of about 84
    bodies).  A formulation that refuses the model (e.g. one that cannot honour
    its gear couplings) gives way to ``dense``, which honours them at any size.
    """
    if model.ncut == 0:
        choice = "dca"
    else:
        dense, hdca = default_costs(model)
        choice = "hdca" if hdca <= HDCA_LEAD * dense else "dense"
    if choice != "dense" and not REGISTRY[choice].supports(model)[0]:
        choice = "dense"
    return choice


def __getattr__(name: str):
    if name in ("Evaluation", "Formulation"):
        from . import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["REGISTRY", "PLANNED", "Evaluation", "Formulation", "default_costs", "default_formulation", "loop_rows"]
