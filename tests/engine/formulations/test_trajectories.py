"""Trajectories of every shipped example agree with the dense reference.

rk4 with dt = 1e-3 over 2 s, each formulation against a reference that integrates
the same equations, so any difference is the formulation's:

* ``dca`` -- state (q, v): ``dense`` with projection off;
* ``hdca`` -- state (q, p*): :class:`.hamiltonian.DenseHamiltonian`, the same
  Hamiltonian equations from dense's M and K.  Against ``dense``'s (q, v) the rk4
  truncation errors differ: (q, p*) recovers a light axial spin as a small
  difference of large momenta, so on the thin-rod spatial chains its error
  constant is 30-300x larger (docs/formulations.md, "HDCA"); both converge to the
  same solution (test_hdca.py).  The 128-link chain's Hamiltonian reference
  would take ~90 s; there both charts' rk4 errors are below 2e-9 m (measured
  against dop853 at 1e-13), so ``dense`` stands in.
"""

import numpy as np
import pytest

from linkwork.engine.formulations import REGISTRY
from linkwork.engine.model import load_model
from linkwork.engine.simulation import Settings, Simulation

from ..conftest import UNGEARED
from .hamiltonian import DenseHamiltonian

_REFERENCE: dict[str, tuple] = {}
ODE_FORMULATIONS = [f for f in ("dca", "hdca") if f in REGISTRY]


def _positions(cols, rows, model):
    idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    return rows[:, idx]


def _run(path, formulation, **kw):
    model = load_model(path)
    sim = Simulation(model, Settings(formulation=formulation, integrator="rk4", dt=1e-3, t_end=2.0, **kw))
    cols, rows = sim.run_all()
    return model, cols, rows


def reference(path):
    key = str(path)
    if key not in _REFERENCE:
        _REFERENCE[key] = _run(path, "dense", projection=False)
    return _REFERENCE[key]


def hamiltonian_reference(path):
    """Body COM positions, internal order, of the Hamiltonian reference."""
    key = "hamiltonian:" + str(path)
    if key not in _REFERENCE:
        model = load_model(path)
        y0 = Simulation(model, Settings(formulation="hdca")).formulation.initial_state()
        _REFERENCE[key] = DenseHamiltonian(model).rk4_positions(y0, 1e-3, 2.0)
    return _REFERENCE[key]


@pytest.mark.slow
@pytest.mark.parametrize("formulation", ODE_FORMULATIONS)
@pytest.mark.parametrize("path", UNGEARED, ids=lambda p: p.name.replace(".mech.json", ""))
def test_trajectory_agrees_with_dense(path, formulation, request):
    request.node.add_marker(pytest.mark.xdist_group(path.name))
    model, cols, rows = reference(path)
    _, cols2, rows2 = _run(path, formulation)
    assert cols2 == cols and rows2.shape == rows.shape
    ref = _positions(cols, rows, model)
    if formulation == "hdca" and model.nb <= 64:
        X = hamiltonian_reference(path)
        ref = np.concatenate([X[:, model.body_internal[fb]] for fb in range(model.nb)], axis=1)
    diff = np.abs(_positions(cols2, rows2, model) - ref).max()
    assert diff < 1e-6, f"max body-position difference {diff:.2e} m"
