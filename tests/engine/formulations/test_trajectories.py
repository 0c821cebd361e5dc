"""Trajectories of every shipped example agree with the dense reference (issues 3, 4).

rk4 with dt = 1e-3 over 2 s; ``dense`` with projection off, so both formulations
integrate the same equations and any difference is the formulation's.
"""

import numpy as np
import pytest

from engine.formulations import REGISTRY
from engine.model import load_model
from engine.simulation import Settings, Simulation

from ..conftest import EXAMPLES

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


@pytest.mark.slow
@pytest.mark.parametrize("formulation", ODE_FORMULATIONS)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.replace(".mech.json", ""))
def test_trajectory_agrees_with_dense(path, formulation, request):
    request.node.add_marker(pytest.mark.xdist_group(path.name))
    model, cols, rows = reference(path)
    _, cols2, rows2 = _run(path, formulation)
    assert cols2 == cols and rows2.shape == rows.shape
    diff = np.abs(_positions(cols2, rows2, model) - _positions(cols, rows, model)).max()
    assert diff < 1e-6, f"max body-position difference {diff:.2e} m"
