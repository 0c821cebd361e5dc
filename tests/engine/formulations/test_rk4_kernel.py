"""The compiled rk4 intervals (engine/formulations/rk4_kernel.py: dca and hdca's, rcr and
embedding's) against the generic loop they replace: the same rows bit for bit, the same
right-hand-side count, the same failure."""

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import SingularSystemError
from linkwork.engine.formulations.base import Formulation
from linkwork.engine.model import build_model, load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation, file_defaults

TREES = ["chain-8-revolute", "spatial-double-pendulum", "chain-5-spherical-spatial", "chain-6-universal-spatial"]


def _generic(form):
    """Make ``form`` step with the generic Python loop of Formulation.rk4_steps."""
    form.rk4_steps = lambda t0, t1, y, n: Formulation.rk4_steps(form, t0, t1, y, n)


def _rows(model, settings, generic, monkeypatch):
    monkeypatch.setenv("LINKWORK_COMPILED_ROWS", "0")  # the interval under test, not the row loop (test_row_loop.py)
    sim = Simulation(model, settings)
    form = sim.formulation
    if generic:
        _generic(form)
    elif settings.formulation in ("dca", "hdca"):
        assert form._rk4 is not None  # the compiled interval is the one under test
    cols, rows = sim.run_all()
    if not generic and settings.formulation in ("rcr", "embedding"):
        assert "_rk4_interval" in vars(form)  # it ran
    return rows, form.nfev


def _cases():
    for name in TREES:
        for form in ("dca", "hdca", "rcr", "embedding"):
            yield pytest.param(name, form, id=f"{name}-{form}")
    for seed in range(4):
        for form in ("dca", "hdca", "rcr", "embedding"):
            yield pytest.param(seed, form, id=f"random-{seed}-{form}")


@pytest.mark.parametrize("case, form", list(_cases()))
def test_the_compiled_interval_gives_the_generic_loops_rows_bit_for_bit(case, form, monkeypatch):
    if isinstance(case, str):
        model = load_model(examples_dir() / f"{case}.mech.json")
    else:
        model = build_model(gen.random_mechanism(300 + case, 6, loops=0))
    s = file_defaults(model, form).replace(formulation=form, integrator="rk4", t_end=0.5)
    fast, n_fast = _rows(model, s, False, monkeypatch)
    slow, n_slow = _rows(model, s, True, monkeypatch)
    assert fast.shape == slow.shape
    assert np.array_equal(fast, slow, equal_nan=True)
    assert n_fast == n_slow


def test_loops_step_in_python_where_the_step_projects_or_watches():
    """Where a step projects onto the loops or watches their conditioning, there is no
    compiled interval (the projection is Python)."""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation="dca", t_end=0.02))
    assert sim.formulation._rk4 is None


@pytest.mark.parametrize("formulation", ["dca", "rcr"])
def test_a_non_finite_right_hand_side_stops_the_interval_where_the_loop_stops(formulation):
    """A right-hand side that is not finite raises the same SingularSystemError, at the same
    time, after the same count, on both paths."""
    model = load_model(examples_dir() / "chain-8-revolute.mech.json")
    s = Settings(formulation=formulation, t_end=0.1, dt=0.01, monitor=False)
    outcomes = []
    for generic in (False, True):
        sim = Simulation(model, s)
        form = sim.formulation
        if generic:
            _generic(form)
        y = form.initial_state()
        y[model.nq] = np.inf  # a speed that is not finite: the first stage's rates are not
        with pytest.raises(SingularSystemError) as err:
            form.rk4_steps(0.0, 0.01, y, 2)
        outcomes.append((err.value.t, form.nfev))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1] == 1
