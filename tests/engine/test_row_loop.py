"""The compiled row loop (engine/row_loop.py) against the Python pipeline it replaces: the
same rows bit for bit, the same monitor verdicts and statistics, the same failures, on the
bundled mechanisms it runs and on random ones."""

import numpy as np
import pytest

from linkwork.engine import config
from linkwork.engine import generators as gen
from linkwork.engine.errors import SimulationError
from linkwork.engine.model import build_model, load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation, file_defaults

#: statistics that are wall times, or count work the row loop may do twice (an interval it
#: hands back to Python at a retry is evaluated again there)
TIMES = ("wall_time", "monitor_time", "rhs_evaluations", "newton_time", "projection_time", "velocity_projection_time",
         "acceleration_projection_time")


def _run(model, settings, monkeypatch, compiled: bool):
    monkeypatch.setenv("LINKWORK_COMPILED_ROWS", "1" if compiled else "0")
    sim = Simulation(model, settings)
    parts, error = [], None
    try:
        for chunk in sim.run():
            parts.append(chunk.rows)
    except SimulationError as exc:
        error = str(exc)
    assert (sim._row_loop is not None) == compiled
    rows = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
    return rows, error, {k: v for k, v in sim.stats.items() if k not in TIMES}, sim.formulation.nfev


def _same(model, settings, monkeypatch):
    fast = _run(model, settings, monkeypatch, compiled=True)
    slow = _run(model, settings, monkeypatch, compiled=False)
    assert fast[0].shape == slow[0].shape
    assert np.array_equal(fast[0], slow[0], equal_nan=True)
    assert fast[1] == slow[1]
    assert fast[2] == slow[2]
    assert fast[3] >= slow[3]
    return fast


TREES = ["chain-8-revolute", "spatial-double-pendulum", "chain-5-spherical-spatial", "chain-6-universal-spatial",
         "joint-zoo"]
#: dense's loops: singular configurations crossed (parallelogram), redundant rows, springs
#: on a cut joint, gears, a prismatic loop, two loops sharing bodies
LOOPS = ["parallelogram-fourbar", "fivebar-redundant", "sprung-parallelogram", "fourbar-geared", "slider-crank",
         "double-loop-8"]
CASES = ([(f, n) for f in ("dca", "hdca", "rcr", "embedding") for n in TREES]
         + [("dense", n) for n in LOOPS + ["spatial-double-pendulum"]]
         + [(f, n) for f in ("dca", "hdca") for n in LOOPS if n != "fourbar-geared"]
         + [(f, n) for f in ("dca", "hdca") for n in ("loop-4", "fourbar-crank-rocker")]
         + [(f, n) for f in ("rcr", "embedding") for n in LOOPS + ["ladder-4"] if (f, n) != ("rcr", "fourbar-geared")]
         + [("rcr", "fivebar"), ("embedding", "geared-arm")]  # fivebar: rcr re-chooses its partition 16 times
         + [(f, "slider-crank-driven") for f in ("dense", "dca", "rcr", "embedding")])  # the drivers' columns and work


@pytest.mark.parametrize("form, name", CASES)
@pytest.mark.parametrize("dt", [0.01, 0.2])
def test_the_row_loop_writes_the_pipelines_rows_bit_for_bit(form, name, dt, monkeypatch):
    """At the file's defaults (dt 0.01) and at a step so coarse that the monitor retries
    and refines (dt 0.2: the row loop hands those intervals to Python), and through the
    failure of a run that diverges (joint-zoo with rk4)."""
    model = load_model(examples_dir() / f"{name}.mech.json")
    s = file_defaults(model, form).replace(formulation=form, integrator="rk4", t_end=1.5, dt=dt)
    rows, error, stats, _ = _same(model, s, monkeypatch)
    assert rows.shape[0] > 2 or error  # hdca on chain-5 at dt 0.2 stops at its first interval, both ways


def test_the_cases_above_include_retries_refinements_and_a_failure(monkeypatch):
    """What the equality above covers: a run the monitor retries and refines, and one that
    fails, both partly made by the row loop."""
    model = load_model(examples_dir() / "chain-6-universal-spatial.mech.json")
    s = file_defaults(model, "dca").replace(formulation="dca", integrator="rk4", t_end=1.5, dt=0.2)
    rows, error, stats, _ = _run(model, s, monkeypatch, compiled=True)
    assert stats["retries"] > 0 and stats["substeps"] > 1
    model = load_model(examples_dir() / "joint-zoo.mech.json")
    s = file_defaults(model, "dca").replace(formulation="dca", integrator="rk4", t_end=1.5, dt=0.2)
    rows, error, stats, _ = _run(model, s, monkeypatch, compiled=True)
    assert error is not None and "diverged" in error and rows.shape[0] > 1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("form, monitor", [("dca", True), ("dca", False), ("hdca", True), ("rcr", True),
                                           ("embedding", True)])
def test_random_trees_give_the_same_rows(seed, form, monitor, monkeypatch):
    model = build_model(gen.random_mechanism(300 + seed, 6, loops=0))
    _same(model, Settings(formulation=form, t_end=1.0, dt=0.01, monitor=monitor), monkeypatch)


@pytest.mark.parametrize("seed", range(3))
def test_random_loops_give_the_same_rows(seed, monkeypatch):
    """dense and dca on random mechanisms with two loops: the loops' conditioning reported
    and judged, dca's projections and singularity watch made in the step."""
    model = build_model(gen.random_mechanism(400 + seed, 5, loops=2))
    for form in ("dense", "dca"):
        _, _, stats, _ = _same(model, Settings(formulation=form, t_end=1.0, dt=0.01), monkeypatch)
        assert "min_loop_conditioning" in stats


@pytest.mark.parametrize("form", ["rcr", "embedding"])
@pytest.mark.parametrize("seed, n_bodies, loops", [(31390, 19, 5), (40244, 13, 5), (40387, 13, 3)])
def test_steps_near_a_dead_point_of_the_partition_give_the_same_rows(form, seed, n_bodies, loops, monkeypatch):
    """The differential tests' mechanisms with a dead point of rcr's partition between two
    output instants: the compiled rows hand the step to Python where its stages' block
    conditioning fell (close_post's ``lowest``), and Python takes it in parts
    (PartitionMonitor._rk4_guarded) -- the same rows either way."""
    from .test_differential import mechanism

    model = build_model(mechanism(seed, n_bodies, loops, long=False))
    _same(model, Settings(formulation=form, t_end=1.0), monkeypatch)


#: test_differential_drivers' cases that run (the others' drivers are on joints their loops
#: lock: the run stops at t = 0, before any interval): tables on trees (0, 3, 6), constant
#: rates on one loop (1, 4, 7, 13), harmonic laws on two (11, 17, 20); 11 fails at t = 0.83 s
DRIVEN_SEEDS = (0, 1, 3, 4, 6, 7, 11, 13, 17, 20)


@pytest.mark.parametrize("form", ["dense", "dca", "rcr", "embedding"])
@pytest.mark.parametrize("seed", DRIVEN_SEEDS)
def test_random_driven_mechanisms_give_the_same_rows(seed, form, monkeypatch):
    """dense, dca, rcr and embedding on random mechanisms with a driver: dca's and rcr's
    efforts by superposition and embedding's driver rows at each stage's time, rcr's
    drivers held by dense's projection after each step, the drivers' columns, their
    residuals in violation.* and their work written by the compiled row loop as by the
    Python pipeline."""
    from .test_differential_drivers import driven_mechanism

    model = build_model(driven_mechanism(2000 + seed, 3 + seed % 4, seed % 3))
    rows, error, _, _ = _same(model, Settings(formulation=form, t_end=1.0, dt=0.01), monkeypatch)
    assert rows.shape[0] > 50 and np.isfinite(rows[:, -1]).all() and rows[-1, -1] != 0.0  # energy.driver_work


def test_dca_without_the_projection_gives_the_same_rows(monkeypatch):
    """projection=False: the step only renormalises and watches; the drift is the run's."""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    _same(model, Settings(formulation="dca", t_end=2.0, dt=0.01, projection=False), monkeypatch)


def test_a_block_hands_over_in_chunks_and_a_cancel_stops_it(monkeypatch):
    """The pipeline's chunks keep their size with the row loop's blocks, and a cancel
    between chunks ends the run there."""
    monkeypatch.setenv("LINKWORK_COMPILED_ROWS", "1")
    model = load_model(examples_dir() / "spatial-double-pendulum.mech.json")
    sim = Simulation(model, Settings(formulation="dca", t_end=5.0, dt=0.01))
    sizes = []
    for chunk in sim.run(chunk_rows=50):
        sizes.append(chunk.rows.shape[0])
        if len(sizes) == 3:
            sim.cancel()
    assert sizes[:3] == [50, 50, 50]
    assert sum(sizes) < 501 and sim.stats["cancelled"]


def test_what_the_row_loop_leaves_to_python():
    """Adaptive integrators but rk45 and dop853 where their steps are compiled (dense on
    loops, with drivers too, dca and hdca on loops with the projection on, dca and hdca on
    trees), scipy's others; every formulation's rk4 rows on loops, gears and drivers are
    its own."""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    for form in ("dense", "dca", "hdca", "rcr", "embedding"):
        assert Simulation(model, Settings(formulation=form, t_end=0.1)).row_loop() is not None
    for form in ("dense", "dca", "hdca"):
        loop = Simulation(model, Settings(formulation=form, integrator="rk45", t_end=0.1)).row_loop()
        assert type(loop).__name__ == "AdaptiveRowLoop"
    for form in ("dca", "hdca"):  # the projection off: no restart at each output instant, no compiled rows
        assert Simulation(model, Settings(formulation=form, integrator="rk45", projection=False,
                                          t_end=0.1)).row_loop() is None
    for form in ("rcr", "embedding"):
        assert Simulation(model, Settings(formulation=form, integrator="rk45", t_end=0.1)).row_loop() is None
    chain = load_model(examples_dir() / "chain-8-revolute.mech.json")
    assert Simulation(chain, Settings(formulation="dense", integrator="rk45", t_end=0.1)).row_loop() is None
    for form in ("dca", "hdca"):
        loop = Simulation(chain, Settings(formulation=form, integrator="dop853", t_end=0.1)).row_loop()
        assert type(loop).__name__ == "DenseRowLoop"
    assert Simulation(chain, Settings(formulation="rcr", integrator="rk45", t_end=0.1)).row_loop() is None
    assert Simulation(model, Settings(formulation="dense", integrator="lsoda", t_end=0.1)).row_loop() is None
    model = load_model(examples_dir() / "slider-crank-driven.mech.json")
    assert Simulation(model, Settings(formulation="dense", t_end=0.1)).row_loop() is not None
    assert Simulation(model, Settings(formulation="dca", t_end=0.1)).row_loop() is not None
    assert Simulation(model, Settings(formulation="embedding", t_end=0.1)).row_loop() is not None
    assert Simulation(model, Settings(formulation="rcr", t_end=0.1)).row_loop() is not None
    assert Simulation(model, Settings(formulation="dca", integrator="rk45", t_end=0.1)).row_loop() is None
    loop = Simulation(model, Settings(formulation="dense", integrator="dop853", t_end=0.1)).row_loop()
    assert type(loop).__name__ == "AdaptiveRowLoop"
    model = load_model(examples_dir() / "geared-arm.mech.json")
    assert Simulation(model, Settings(formulation="embedding", t_end=0.1)).row_loop() is not None


def test_a_method_replaced_on_the_formulation_leaves_the_rows_to_python():
    """A test double's or a study's wrapper of ``evaluate``, set after the simulation was
    built, is what the run calls: the kernels would not do what it does."""
    model = load_model(examples_dir() / "spatial-double-pendulum.mech.json")
    sim = Simulation(model, Settings(formulation="dca", t_end=0.05))
    assert sim.row_loop() is not None
    calls = []
    evaluate = sim.formulation.evaluate
    sim.formulation.evaluate = lambda t, y: calls.append(t) or evaluate(t, y)
    assert sim.row_loop() is None
    sim.run_all()
    assert len(calls) == 7  # prepare's evaluation at t = 0, then every row of 0, 0.01, ..., 0.05


def test_a_run_takes_the_row_loop_prepare_built():
    """:meth:`Simulation.prepare` builds and warms the row loop; the run that follows uses
    that one rather than building it again, and a second run of the object builds its own."""
    model = load_model(examples_dir() / "loop-4.mech.json")
    sim = Simulation(model, Settings(formulation="hdca", t_end=0.05))
    sim.prepare()
    warm = sim._warm_loop[0]
    assert warm is not None
    first = sim.run_all()
    assert sim._row_loop is warm
    again = sim.run_all()
    assert sim._row_loop is not None and sim._row_loop is not warm
    assert np.array_equal(first[1], again[1])


@pytest.mark.parametrize("where", ["object", "class"])
def test_a_method_replaced_after_prepare_leaves_the_rows_to_python(where, monkeypatch):
    """An ``evaluate`` replaced on the formulation object, or patched onto its class, after
    :meth:`Simulation.prepare` built the row loop: the run does not take that loop, and
    every row is the replacement's."""
    from linkwork.engine.formulations.dca import DCAFormulation

    model = load_model(examples_dir() / "spatial-double-pendulum.mech.json")
    sim = Simulation(model, Settings(formulation="dca", t_end=0.05))
    sim.prepare()
    assert sim._warm_loop[0] is not None
    calls = []
    evaluate = DCAFormulation.evaluate
    if where == "object":
        sim.formulation.evaluate = lambda t, y: calls.append(t) or evaluate(sim.formulation, t, y)
    else:
        monkeypatch.setattr(DCAFormulation, "evaluate", lambda self, t, y: calls.append(t) or evaluate(self, t, y))
    sim.run_all()
    assert sim._row_loop is None
    assert len(calls) == 6  # every row of 0, 0.01, ..., 0.05 (prepare's evaluation came before)


def test_an_evaluation_patched_onto_the_class_leaves_the_rows_to_python(monkeypatch):
    """As the differential tests plant a wrong evaluation on DCAFormulation itself."""
    from linkwork.engine.formulations.dca import DCAFormulation

    model = load_model(examples_dir() / "spatial-double-pendulum.mech.json")
    evaluate = DCAFormulation.evaluate
    calls = []
    monkeypatch.setattr(DCAFormulation, "evaluate", lambda self, t, y: calls.append(t) or evaluate(self, t, y))
    sim = Simulation(model, Settings(formulation="dca", t_end=0.05))
    assert sim.row_loop() is None
    sim.run_all()
    assert len(calls) == 7


ADAPTIVE = ["parallelogram-fourbar", "fourbar-crank-rocker", "fivebar-redundant", "sprung-parallelogram",
            "fourbar-geared", "double-loop-8", "ladder-2"]


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
@pytest.mark.parametrize("name", ADAPTIVE + ["slider-crank-driven"])
def test_dense_adaptive_rows_are_the_pipelines_bit_for_bit(integrator, name, monkeypatch):
    """dense's rk45 and dop853 rows on loops (:class:`engine.row_loop.AdaptiveRowLoop`):
    the solver started again at each output instant, the singularity watch before each
    step, the projection, evaluation, row and monitor verdict in compiled code, the
    same rows as Python's compiled steps make -- through the parallelogram's folds, where
    the watch hands the intervals near them to Python (its step bound and projections),
    and on the driven slider-crank, its driver's rows at each stage's time."""
    model = load_model(examples_dir() / f"{name}.mech.json")
    s = file_defaults(model, "dense").replace(formulation="dense", integrator=integrator, rtol=1e-8, atol=1e-8,
                                              t_end=2.0)
    rows, error, stats, _ = _same(model, s, monkeypatch)
    assert error is None and rows.shape[0] == 201


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
@pytest.mark.parametrize("seed", DRIVEN_SEEDS)
def test_dense_adaptive_rows_with_a_driver_are_the_pipelines_bit_for_bit(integrator, seed, monkeypatch):
    """dense's rk45 and dop853 rows with a driver (random mechanisms: tables on trees,
    constant rates on one loop, harmonic laws on two; one fails at t = 0.83 s): each stage, the
    projection and the evaluation at its own time, the drivers' columns, residuals and
    work -- the same rows and failures as Python's compiled steps make."""
    from .test_differential_drivers import driven_mechanism

    model = build_model(driven_mechanism(2000 + seed, 3 + seed % 4, seed % 3))
    s = Settings(formulation="dense", integrator=integrator, rtol=1e-8, atol=1e-8, t_end=1.0, dt=0.01)
    rows, error, _, _ = _same(model, s, monkeypatch)
    assert rows.shape[0] > 50 and np.isfinite(rows[:, -1]).all() and rows[-1, -1] != 0.0  # energy.driver_work


TREE_ADAPTIVE = [n for n in ADAPTIVE if n != "fourbar-geared"] + ["loop-4"]


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
@pytest.mark.parametrize("name", TREE_ADAPTIVE)
@pytest.mark.parametrize("form", ["dca", "hdca"])
def test_tree_adaptive_rows_on_loops_are_the_pipelines_bit_for_bit(form, integrator, name, monkeypatch):
    """dca's and hdca's rk45 and dop853 rows on loops (:func:`.tree_formulation.tree_operation`
    in :class:`engine.row_loop.AdaptiveRowLoop`): the watch before each step, the
    projection (hdca: and the impulse reset) at each output instant, the evaluation, row
    and monitor verdict in compiled code -- the same rows, warnings and counts as Python's
    compiled steps make.  The parallelogram's folds are new crossings, whose warnings
    Python records; on the crank-rocker with dop853 a velocity residual lands within the
    rounding of its sum of the projection's tolerance, and Python decides that interval."""
    model = load_model(examples_dir() / f"{name}.mech.json")
    s = file_defaults(model, form).replace(formulation=form, integrator=integrator, rtol=1e-8, atol=1e-8, t_end=2.0)
    rows, error, stats, _ = _same(model, s, monkeypatch)
    assert error is None and rows.shape[0] == 201


def test_the_adaptive_post_step_leaves_the_watch_to_the_next_step():
    """The rk4 rows' post-step ends with the singularity watch (Python watches after each
    rk4 step); the adaptive rows' does not (Python's adaptive steps watch before each
    step, the next interval's first included): called on a state, the operation
    POST_STEP leaves the watch's state as it was, while the rk4 post-step takes its first
    conditioning."""
    from linkwork.engine.formulations import dense_solve
    from linkwork.engine.formulations.base import TICK_I, TICK_N, TICK_T0, TICK_T1
    from linkwork.engine.formulations.tree_formulation import WATCH_COND0

    model = load_model(examples_dir() / "loop-4.mech.json")
    for form_name in ("dca", "hdca"):
        sim = Simulation(model, Settings(formulation=form_name, integrator="rk45", t_end=0.1))
        form = sim.formulation
        y = form.initial_state()
        form.rhs(0.0, y)
        kernels, rates = form.adaptive_row_kernels()
        watch = kernels.own[0]
        watch[:] = 0.0
        watch[WATCH_COND0] = np.nan
        kernels.entry_clock[0], kernels.entry_clock[3] = 0.0, dense_solve.POST_STEP
        assert kernels.step(y.copy(), np.empty(0)) == 0.0
        assert np.isnan(watch[WATCH_COND0])
        rk4 = form.row_kernels()
        rk4.own[0][:] = 0.0
        rk4.own[0][WATCH_COND0] = np.nan
        rk4.tick[TICK_T0], rk4.tick[TICK_T1], rk4.tick[TICK_N], rk4.tick[TICK_I] = 0.0, 0.01, 1.0, 0.0
        assert rk4.post(y.copy(), np.empty(0))
        assert rk4.own[0][WATCH_COND0] > 0.0


def test_the_adaptive_rows_hold_the_kernels_their_tables_point_into(monkeypatch):
    """hdca's post-step is called by its table, which holds the addresses of its arrays
    (its zero velocities, the momenta it writes), not the arrays: the row kernels keep
    the post-step's kernel, and with it those arrays, while the loop runs -- dropped,
    the post-step would write into freed memory (a crash, or another array's values)."""
    import gc
    import weakref

    from linkwork.engine.formulations import base
    from linkwork.engine.formulations.tree_formulation import momentum_post

    made = []
    init = base.StateKernel.__init__

    def recording(self, kernel, workspace):
        init(self, kernel, workspace)
        if kernel is momentum_post:
            made.append(weakref.ref(self))

    monkeypatch.setattr(base.StateKernel, "__init__", recording)
    model = load_model(examples_dir() / "loop-4.mech.json")
    s = file_defaults(model, "hdca").replace(formulation="hdca", integrator="rk45", rtol=1e-8, atol=1e-8, t_end=0.5)
    slow = _run(model, s, monkeypatch, compiled=False)
    monkeypatch.setenv("LINKWORK_COMPILED_ROWS", "1")
    made.clear()
    sim = Simulation(model, s)
    sim.prepare()
    gc.collect()
    assert type(sim._warm_loop[0]).__name__ == "AdaptiveRowLoop"
    assert len(made) == 1 and made[0]() is not None
    assert np.array_equal(np.vstack([c.rows for c in sim.run()]), slow[0])
    assert sim.formulation.nfev == slow[3]  # every interval in compiled code, none handed back


def test_a_projection_is_decided_on_the_same_sum_by_both_paths(monkeypatch):
    """dca's crank-rocker at dop853: at t = 0.36 s the largest velocity residual is
    9.9999e-14 by numpy's ``K @ v`` and 1.0036e-13 by a sum from the first column on,
    either side of the projection's tolerance 1e-13.  Python's decision and the compiled
    post-step's take the same sum (``dense_linalg.velocity_residual``): the same
    projections, the same rows, every interval in compiled code (the same right-hand
    sides)."""
    from linkwork.engine.formulations.dca import DCAFormulation
    from linkwork.engine.formulations.dense_linalg import velocity_residual

    model = load_model(examples_dir() / "fourbar-crank-rocker.mech.json")
    s = file_defaults(model, "dca").replace(formulation="dca", integrator="dop853", rtol=1e-8, atol=1e-8, t_end=0.5)
    seen = []
    from linkwork.engine.formulations.stabilise import LoopProjection

    project = LoopProjection._project_velocity_state

    def recording(self, t, y):
        if abs(t - 0.36) < 1e-9:
            q, v = y[:self.model.nq], y[self.model.nq:].copy()
            proj = self.projector
            proj.closure_residuals(q, v, t)
            seen.append((float(np.abs(proj.K @ v - proj.work.nu).max()), velocity_residual(proj.K, v, proj.work.nu)))
        return project(self, t, y)

    fast = _run(model, s, monkeypatch, compiled=True)
    monkeypatch.setattr(LoopProjection, "_project_velocity_state", recording)
    monkeypatch.setattr(DCAFormulation, "_stabilise", recording)
    slow = _run(model, s, monkeypatch, compiled=False)
    assert seen and seen[0][0] < config.PROJECTION_TOL < seen[0][1]
    assert np.array_equal(fast[0], slow[0]) and fast[2] == slow[2] and fast[3] == slow[3]
    assert fast[2]["projections"] > 0


def test_the_adaptive_row_loop_hands_intervals_back_and_keeps_the_stall_guard(monkeypatch):
    """Near the parallelogram's folds the row loop hands intervals to Python (more
    right-hand sides than Python alone: those intervals are integrated twice); a guard
    whose limit is one short step stops both paths at the same place with the same
    message."""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    s = Settings(formulation="dense", integrator="rk45", rtol=1e-8, atol=1e-8, t_end=2.0)
    fast = _run(model, s, monkeypatch, compiled=True)
    slow = _run(model, s, monkeypatch, compiled=False)
    assert fast[3] > slow[3]
    _collapse_alike(model, s, monkeypatch)


def _collapse_alike(model, settings, monkeypatch):
    """A stall guard whose limit is one short step (every step shorter than 0.9 dt is
    short) stops the compiled rows and Python's at the same place with the same message."""
    monkeypatch.setattr(config, "STALL_STEPS", 1)
    monkeypatch.setattr(config, "STALL_RATIO", 0.9)
    _, error, _, _ = _same(model, settings, monkeypatch)
    assert error is not None and "steps collapsed" in error


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("form", ["dense", "dca", "hdca"])
def test_random_loops_give_the_same_adaptive_rows(form, seed, monkeypatch):
    """Spatial loops closed by spherical, universal and revolute joints, springs, dampers
    and torques: dense's, dca's and hdca's compiled dop853 rows are Python's."""
    model = build_model(gen.random_mechanism(500 + seed, 5, loops=2))
    _same(model, Settings(formulation=form, integrator="dop853", rtol=1e-9, atol=1e-9, t_end=1.0, dt=0.01),
          monkeypatch)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("form", ["dca", "hdca"])
def test_loops_closed_by_sliding_joints_give_the_same_adaptive_rows(form, seed, monkeypatch):
    """Loops closed by prismatic, cylindrical and fixed joints (the generator's default
    closes them by rotating joints only): the same rk45 rows."""
    model = build_model(gen.random_mechanism(520 + seed, 6, loops=2,
                                             loop_joint_types=("prismatic", "cylindrical", "fixed")))
    assert model.ncut == 2
    _same(model, Settings(formulation=form, integrator="rk45", rtol=1e-9, atol=1e-9, t_end=1.0, dt=0.01),
          monkeypatch)


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
@pytest.mark.parametrize("form, name", [(f, n) for f in ("dca", "hdca") for n in TREES])
def test_tree_adaptive_rows_are_the_pipelines_bit_for_bit(integrator, form, name, monkeypatch):
    """rk45 and dop853 on trees (:class:`engine.row_loop.DenseRowLoop`): one continuous
    integration in the Python solver's arrays, read at the output instants by its
    interpolant, the evaluation, row and verdict in compiled code -- the rows Python's
    compiled steps make, with the same right-hand side count."""
    model = load_model(examples_dir() / f"{name}.mech.json")
    s = file_defaults(model, form).replace(formulation=form, integrator=integrator, rtol=1e-8, atol=1e-8,
                                           t_end=2.0)
    rows, error, stats, nfev = _same(model, s, monkeypatch)
    assert error is None and rows.shape[0] == 201
    assert nfev == _run(model, s, monkeypatch, compiled=False)[3]


def test_tree_adaptive_rows_hand_retried_intervals_to_python_and_back(monkeypatch):
    """At loose tolerances the monitor retries many intervals of chain-8: each goes to
    Python (the solver, its interpolant and the stall count put back as they were), and
    the next block takes the solver and its interpolant from there -- the same rows and
    retries as Python alone; a stall guard whose limit is one short step stops both at
    the same place with the same message."""
    from linkwork.engine import row_loop

    blocks = []  # rows made by each block
    block = row_loop.DenseRowLoop.block

    def spy(self, *a):
        out = block(self, *a)
        blocks.append(out[0])
        return out

    monkeypatch.setattr(row_loop.DenseRowLoop, "block", spy)
    model = load_model(examples_dir() / "chain-8-revolute.mech.json")
    s = Settings(formulation="dca", integrator="rk45", rtol=1e-3, atol=1e-3, t_end=3.0)
    rows, error, stats, _ = _same(model, s, monkeypatch)
    assert error is None and stats["retries"] > 10
    assert blocks.count(0) > 10 and sum(blocks) > 100  # handed over, and taken back
    _collapse_alike(model, s.replace(rtol=1e-8, atol=1e-8), monkeypatch)


@pytest.mark.parametrize("seed", range(3))
def test_random_trees_give_the_same_adaptive_rows(seed, monkeypatch):
    model = build_model(gen.random_mechanism(700 + seed, 6, loops=0))
    _same(model, Settings(formulation="dca", integrator="dop853", rtol=1e-9, atol=1e-9, t_end=1.0, dt=0.01),
          monkeypatch)


#: index3's steps: loops (singular crossings, redundant rows, springs, a prismatic joint, two
#: loops sharing bodies), trees, quaternions
INDEX3 = ["parallelogram-fourbar", "fourbar-crank-rocker", "fivebar-redundant", "sprung-parallelogram", "slider-crank",
          "double-loop-8", "ladder-4", "chain-8-revolute", "chain-6-universal-spatial", "spatial-double-pendulum"]


@pytest.mark.parametrize("name", INDEX3)
@pytest.mark.parametrize("dt", [0.01, 0.25])
def test_index3_rows_are_the_pipelines_bit_for_bit(name, dt, monkeypatch):
    """index3's steps, evaluation and health in compiled code (engine/formulations/index3_rows.py):
    the same rows, statistics and failures as its Python steps, at the file's defaults and
    at a step so coarse that the monitor retries, refines and stops runs."""
    model = load_model(examples_dir() / f"{name}.mech.json")
    s = file_defaults(model, "index3").replace(formulation="index3", t_end=1.5, dt=dt)
    rows, error, stats, _ = _same(model, s, monkeypatch)
    assert (rows.shape[0] > 1 and stats["steps"] >= rows.shape[0] - 1) or error  # the crank-rocker at 0.25 stops first


@pytest.mark.parametrize("name, settings", [
    ("chain-6-universal-spatial", dict(newton_iters=1, penalty=1e3, monitor=False)),
    ("fivebar-redundant", dict(newton_iters=1, penalty=1e4, exact_projections=False, monitor=False)),
    # with exact projections, which bound the merges' ranks by the redundant rows, ladder-4
    # converges at one iteration: the penalised ones leave its steps unconverged, then diverge
    ("ladder-4", dict(newton_iters=1, penalty=1e2, exact_projections=False, monitor=False)),
    ("slider-crank", dict(tangent_hold=2, geometric_stiffness=True))])
def test_index3_hands_unconverged_and_diverged_steps_to_python(name, settings, monkeypatch):
    """A step whose residual is left above the warning level, or that diverges, is Python's
    (its warnings and failure); the compiled rows before and after it are the same."""
    model = load_model(examples_dir() / f"{name}.mech.json")
    s = file_defaults(model, "index3").replace(formulation="index3", t_end=3.0, **settings)
    rows, error, stats, _ = _same(model, s, monkeypatch)
    if settings.get("newton_iters") == 1:
        assert stats["unconverged_steps"] > 0 and stats["warnings"] and rows.shape[0] > 20


@pytest.mark.parametrize("seed", range(4))
def test_random_mechanisms_give_the_same_index3_rows(seed, monkeypatch):
    model = build_model(gen.random_mechanism(500 + seed, 5, loops=seed % 3))
    _same(model, Settings(formulation="index3", t_end=1.0, dt=0.01), monkeypatch)


def test_index3_keeps_a_spinning_joint_springs_angle(monkeypatch):
    """A joint spring's angle is unwrapped from the last step's (the step keeps it): an arm
    turning five times under a weak spring, compiled and Python the same."""
    import json

    from linkwork.engine.mechfile import spec_from_dict

    d = json.loads((examples_dir() / "chain-8-revolute.mech.json").read_text())
    d["bodies"], d["joints"] = d["bodies"][:1], d["joints"][:1]
    arm = d["bodies"][0]
    w = 20.0
    arm["angular_velocity"] = [0.0, 0.0, w]
    arm["velocity"] = [-w * arm["position"][1], w * arm["position"][0], 0.0]
    d["forces"] = [{"type": "joint-spring", "joint": "J1", "stiffness": 0.05, "damping": 0.0, "rest": 0.0}]
    model = build_model(spec_from_dict(d))
    rows, _, _, _ = _same(model, Settings(formulation="index3", t_end=1.5, dt=0.01), monkeypatch)
    assert rows.shape[0] == 151


def test_index3_with_its_step_replaced_leaves_the_rows_to_python():
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation="index3", t_end=0.05))
    assert type(sim.row_loop()).__name__ == "RowLoop"
    calls = []
    step = sim.formulation.step
    sim.formulation.step = lambda t, y, dt: calls.append(t) or step(t, y, dt)
    assert sim.row_loop() is None
    sim.run_all()
    assert len(calls) == 5
