"""engine.formulations.erk_kernel: ``rk45`` and ``dop853`` steps in compiled code are
scipy's ``RK45`` and ``DOP853`` -- the same initial step, accepted steps, rejections,
step proposals and dense output, to round-off -- and a whole run through them agrees
with scipy's run; a right-hand side that is not finite raises the formulation's error."""

import numpy as np
import pytest
import scipy.integrate

from linkwork.engine import generators as gen
from linkwork.engine.errors import SimulationError
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.formulations.erk_kernel import CompiledRK
from linkwork.engine.model import build_model, load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation

SCIPY = {"rk45": scipy.integrate.RK45, "dop853": scipy.integrate.DOP853}


def _form(name: str, example: str):
    model = load_model(examples_dir() / f"{example}.mech.json")
    form = REGISTRY[name](model, Settings(formulation=name))
    return form, form.initial_state()


@pytest.mark.parametrize("method", ["rk45", "dop853"])
@pytest.mark.parametrize("name, example", [("dca", "spatial-double-pendulum"), ("dense", "fourbar-crank-rocker"),
                                           ("hdca", "chain-8-revolute")])
def test_compiled_steps_are_scipys_steps(method, name, example):
    """Along scipy's own solution, each of 100 steps taken again by a compiled solver
    started where scipy's step started (its state, its step proposal, its cap): the
    same new time, the state to 1e-14 of its size, the same number of right-hand sides
    (so the same rejections), the same dense output and initial step, and the next
    step's proposal to 1e-5 of itself.

    The proposal is the one figure that round-off moves further: the error estimate is
    a difference of stages that agree to about rtol of each other, so the stages'
    round-off (summed in another order than scipy's BLAS) is ~1e-16 / rtol of it, and
    the proposal carries that times 1/(order+1).  From there two runs take equally good
    steps of slightly different lengths (:func:`test_a_whole_run_through_compiled_steps_agrees_with_scipys`)."""
    _steps_agree(method, *_form(name, example))


def _steps_agree(method, form, y0):
    """:func:`test_compiled_steps_are_scipys_steps` for ``form`` from ``y0``."""
    rates = form.rates_kernel()
    assert rates is not None
    for rtol, cap in ((1e-9, np.inf), (1e-5, 0.004)):
        ref = SCIPY[method](form.rhs, 0.0, y0, 3.0, rtol=rtol, atol=rtol)
        ref.max_step = cap
        first = CompiledRK(method, rates, 0.0, y0, 3.0, rtol, rtol)
        assert first.nfev == ref.nfev == 2  # f(t0) and the initial step's trial
        assert first.h_abs == pytest.approx(ref.h_abs, rel=1e-5)
        for _ in range(100):
            if ref.status != "running":
                break
            ours = CompiledRK(method, rates, ref.t, ref.y, 3.0, rtol, rtol, first_step=min(ref.h_abs, 3.0 - ref.t))
            ours.max_step = cap
            n0 = ref.nfev
            assert ref.step() is None and ours.step() is None
            scale = np.max(np.abs(ref.y)) + 1.0
            assert ours.status == ref.status
            assert ours.nfev - 1 == ref.nfev - n0  # ours evaluated f at its start once more
            # a step that was rejected first is shortened by a factor of the estimate's power
            assert ours.t == pytest.approx(ref.t, rel=0, abs=1e-6 * ref.step_size)
            np.testing.assert_allclose(ours.y, ref.y, rtol=0, atol=1e-14 * scale if ours.t == ref.t else 1e-6 * scale)
            assert ours.h_abs == pytest.approx(ref.h_abs, rel=1e-4)
            mid = 0.5 * (ref.t_old + ref.t)
            np.testing.assert_allclose(ours.dense_output()(mid), ref.dense_output()(mid), rtol=0, atol=1e-14 * scale)


@pytest.mark.parametrize("method", ["rk45", "dop853"])
@pytest.mark.parametrize("seed", [0, 20])
def test_compiled_steps_of_dense_with_a_driver_are_scipys_steps(method, seed):
    """``dense`` with a driver whose rate changes with time (a table on a tree, a harmonic
    law on two loops): the compiled steps evaluate each stage at its own time, as scipy's
    steps call ``rhs(t, y)`` (with every stage at time 0 this fails)."""
    from ..test_differential_drivers import driven_mechanism

    model = build_model(driven_mechanism(2000 + seed, 3 + seed % 4, seed % 3))
    assert model.nd == 1
    form = REGISTRY["dense"](model, Settings(formulation="dense"))
    _steps_agree(method, form, form.initial_state())


def test_a_step_that_meets_a_non_finite_right_hand_side_raises_the_formulations_error():
    """A mechanism flung so fast that its rates overflow: the compiled step stops and the
    formulation's own error is raised, as scipy's solver would have seen it from rhs."""
    form, y0 = _form("dca", "spatial-double-pendulum")
    nq = form.model.nq
    y = y0.copy()
    y[nq:] = 1e300
    with pytest.raises(SimulationError):
        CompiledRK("rk45", form.rates_kernel(), 0.0, y, 1.0, 1e-8, 1e-8).step()


@pytest.mark.parametrize("flag", ["0", "1"])
def test_an_error_estimate_that_underflows_accepts_the_step(flag, monkeypatch):
    """A locked mechanism (DOF 0, 3 redundant closure rows) under ``dense``: its
    velocities, round-off after the initial projection, decay to 1e-157, and dop853's
    sum of squared fifth-order error terms underflows to 0 while the third-order one
    does not.  The compiled step divided 0 by 0 there (a ZeroDivisionError, the run
    stopped at t = 0.09 s); the estimate is at most |h| sqrt(e5 / n), so the step is
    accepted, as scipy's (whose BLAS norm does not underflow) accepts its tiny estimate."""
    from ..test_differential import mechanism

    monkeypatch.setenv("LINKWORK_COMPILED_STEPS", flag)
    model = build_model(mechanism(94525, 4, 1, long=False))
    settings = Settings(formulation="dense", integrator="dop853", rtol=1e-10, atol=1e-10, t_end=0.5)
    rows = Simulation(model, settings).run_all()[1]
    assert rows[-1, 0] == pytest.approx(0.5)
    assert np.all(np.isfinite(rows))


@pytest.mark.parametrize("name, example, integrator", [
    ("dense", "fourbar-crank-rocker", "rk45"), ("dca", "loop-4", "dop853"), ("dca", "spatial-double-pendulum", "rk45"),
    ("hdca", "chain-5-spherical-spatial", "dop853"), ("dense", "ladder-2", "rk45")])
def test_a_whole_run_through_compiled_steps_agrees_with_scipys(name, example, integrator, monkeypatch):
    """The same 2 s run with scipy's solver and with the compiled steps (``rk45``
    through loops' projections, ``dop853`` continuous with dense output): every column
    within 1e-10 of its scale, or, where the run itself is that sensitive, within ten
    times what scipy's own run moves when its rtol moves by 1e-12 of itself -- the two
    differ by round-off in a stage, which such a run amplifies as it amplifies any.

    (Reactions at a singular configuration are not unique -- the parallelogram's on its
    folds -- and scipy's run reads them from the last right-hand side's solve, made
    before the filter width was updated for the next step, where the compiled steps
    solve again at the output instant; they are not compared here.)"""
    _whole_runs_agree(load_model(examples_dir() / f"{example}.mech.json"), name, integrator, monkeypatch)


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
@pytest.mark.parametrize("seed", [0, 20])
def test_a_driven_run_through_compiled_steps_agrees_with_scipys(seed, integrator, monkeypatch):
    """The same for ``dense`` with a driver: a table on a tree, a harmonic law on two loops."""
    from ..test_differential_drivers import driven_mechanism

    _whole_runs_agree(build_model(driven_mechanism(2000 + seed, 3 + seed % 4, seed % 3)), "dense", integrator,
                      monkeypatch)


def _whole_runs_agree(model, name, integrator, monkeypatch):
    """:func:`test_a_whole_run_through_compiled_steps_agrees_with_scipys` on ``model``."""

    def run(flag, rtol=1e-9):
        monkeypatch.setenv("LINKWORK_COMPILED_STEPS", flag)
        settings = Settings(formulation=name, integrator=integrator, rtol=rtol, atol=1e-9, t_end=2.0)
        return Simulation(model, settings).run_all()[1]

    scipy_rows, ours = run("0"), run("1")
    assert scipy_rows.shape == ours.shape
    scale = np.maximum(np.max(np.abs(scipy_rows), axis=0), 1.0)

    def differ(a):
        return np.max(np.abs(a - scipy_rows) / scale)

    sensitivity = max(differ(run("0", 1e-9 * (1 + 1e-12))), differ(run("0", 1e-9 * (1 - 1e-12))))
    assert differ(ours) <= max(1e-10, 10 * sensitivity), (differ(ours), sensitivity)


def test_formulations_without_a_compiled_right_hand_side_keep_scipys_solver():
    """A tree formulation's drivers (their efforts by superposition at the time Python's
    ``rhs`` sets), ``rcr`` (its right-hand side is Python between two kernels): no rates
    kernel, and the run is scipy's.  ``dense``'s drivers are rows of its operations kernel,
    at the time each compiled stage sets: it has one."""
    driven = load_model(examples_dir() / "slider-crank-driven.mech.json")
    assert REGISTRY["dca"](driven, Settings(formulation="dca")).rates_kernel() is None
    assert REGISTRY["dense"](driven, Settings(formulation="dense")).rates_kernel() is not None
    chain = build_model(gen.chain(4))
    assert REGISTRY["rcr"](chain, Settings(formulation="rcr")).rates_kernel() is None
