"""The partition monitor of rcr and embedding (engine/formulations/rcr_monitor.py) at dead
points of a partition: a block singular where the mechanism is not.  The mechanisms are
the differential tests' random ones on which such a dead point had ended a run far from
dense with exit 0."""

import numpy as np
import pytest

from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation


def _positions_through(model, settings) -> tuple[np.ndarray, Simulation]:
    """The bodies' positions at every output instant of a run to its end, and the run."""
    from ..test_differential import body_positions

    sim = Simulation(model, settings)
    cols, rows = sim.run_all()
    return body_positions(model, cols, rows), sim


def _dead_point_mechanism():
    """The differential tests' mechanism(31390, 19, 5): one block of rcr's first partition
    dies at 0.8295 s (a dead point of those independent speeds, not of the mechanism:
    dense's measure stays above 0.015), while the partition's worst block reads 0.0345,
    another block's, until 0.823 s."""
    from ..test_differential import mechanism

    return build_model(mechanism(31390, 19, 5, long=False))


@pytest.mark.parametrize("formulation", ["rcr", "embedding"])
def test_an_adaptive_step_does_not_cross_a_dead_point_of_the_partition(formulation):
    """dop853 at 1e-10 stepped across the dead point between two accepted states (the
    switch came after it, at 0.83 s) and ended 1 s 3.7e-5 m from dense, with exit 0.
    The step bound (rcr_monitor.PartitionMonitor.step_bound) makes the steps close in on it, and the
    partition monitor switches before it."""
    model = _dead_point_mechanism()
    settings = Settings(integrator="dop853", rtol=1e-10, atol=1e-10, t_end=1.0)
    ref, _ = _positions_through(model, settings.replace(formulation="dense"))
    pos, sim = _positions_through(model, settings.replace(formulation=formulation))
    assert sim.stats["partition_switches"] == 1
    assert np.abs(pos - ref).max() < 1e-8


def test_an_adaptive_step_watches_every_block_not_only_the_worst():
    """The differential campaign's mechanism(44213, 17, 6) (a gear: embedding, not rcr):
    one block holds at 0.0135 while another falls from 0.80 to 0.26 in 0.4 ms and dies
    0.2 ms later.  Watching the smallest only, dop853 at 1e-10 stepped across the dead
    point unbounded and ended 1 s 9.6e-6 m from dense, with exit 0; the step bound now
    follows each block, and one falling that fast however high it reads."""
    from ..test_differential import mechanism

    model = build_model(mechanism(44213, 17, 6, long=False))
    settings = Settings(integrator="dop853", rtol=1e-10, atol=1e-10, t_end=1.0)
    ref, _ = _positions_through(model, settings.replace(formulation="dense"))
    pos, sim = _positions_through(model, settings.replace(formulation="embedding"))
    assert 0.8214 < _switch_times(sim)[0] < 0.8216
    assert np.abs(pos - ref).max() < 1e-8


def _switch_times(sim) -> list[float]:
    """The times of the run's partition switches, from its log."""
    return [float(line.split(" s:")[0].removeprefix("t = ")) for line in sim.stats.get("partition_log", [])]


def test_an_rk4_step_whose_stages_fall_towards_a_dead_point_is_taken_in_parts():
    """rk4 at dt = 0.01 crosses the dead point within the step from 0.82 to 0.83 s: its
    stages see the conditioning fall from 0.0345, so the step is taken in parts, and the
    partition monitor switches between them, before 0.83 s.  Without it the run ended 1 s
    0.23 m from a converged dense run, with exit 0; with it 6.8e-5 m, rcr's rk4 error
    (dense's at the same step: 2.4e-7 m; rcr's on the five-bar, with no dead point
    crossed, is 2400 times dense's)."""
    model = _dead_point_mechanism()
    ref, _ = _positions_through(model, Settings(formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12,
                                                 t_end=1.0))
    pos, sim = _positions_through(model, Settings(formulation="rcr", t_end=1.0))
    assert 0.82 < _switch_times(sim)[0] < 0.83
    assert np.abs(pos - ref).max() < 1e-4


def test_a_conditioning_falling_fast_is_left_for_any_better_partition_before_its_dead_point():
    """The differential tests' mechanism(40116, 15, 2) at rk4's dt = 0.01: the partition's
    conditioning falls from 0.025 to 0.0125 in the step to 0.43 s, and a block dies inside
    the next step, whose end reads 0.024 again -- no accepted state shows the dead point.
    The search at 0.43 s found 0.017, not SWITCH_GAIN better, so the partition was kept
    and the run ended 1 s 2.5 m from a converged dense run, with exit 0.  Falling by more
    than SWITCH_FALL in one step, the partition was left for any better one at 0.43 s:
    5.3e-5 m.  Its pivot at 0.42 s would reach zero within DEAD_POINT_RANGE steps like the
    last, so it is now left there, a step earlier: 3.7e-6 m."""
    from ..test_differential import mechanism

    model = build_model(mechanism(40116, 15, 2, long=False))
    ref, _ = _positions_through(model, Settings(formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12,
                                                 t_end=1.0))
    pos, sim = _positions_through(model, Settings(formulation="rcr", t_end=1.0))
    assert 0.41 < _switch_times(sim)[0] <= 0.42
    assert np.abs(pos - ref).max() < 1e-5


def test_a_block_dying_behind_a_lower_one_is_left_before_its_dead_point():
    """The differential tests' mechanism(40013, 16, 4) (geared: embedding, not rcr) at rk4's
    dt = 0.01: one block of the partition holds at 0.0025 throughout, while the other falls
    from 0.05 at 0.60 s to a dead point at 0.6415 s and rises again -- the worst block, what
    the monitor read, never fell.  The run ended 1 s 9.0e-2 m from a converged dense run,
    with exit 0 (dense's own rk4 error: 3.9e-8 m).  Each pivot is now watched: the falling
    one, heading for zero within DEAD_POINT_RANGE steps, makes the partition worth nothing,
    and it is left for the one the search offers: 1.7e-4 m; with the steps before it taken
    in parts where a pivot fell within one (the next test), 3.5e-5 m."""
    from ..test_differential import mechanism

    model = build_model(mechanism(40013, 16, 4, long=False))
    ref, _ = _positions_through(model, Settings(formulation="dense", integrator="dop853", rtol=1e-10, atol=1e-10,
                                                 t_end=1.0))
    pos, sim = _positions_through(model, Settings(formulation="embedding", t_end=1.0))
    assert 0.63 <= _switch_times(sim)[0] <= 0.64
    assert np.abs(pos - ref).max() < 1e-4


def test_an_rk4_step_whose_stages_see_any_pivot_fall_is_taken_in_parts():
    """The differential tests' mechanism(40152, 12, 3) under rcr at rk4's dt = 0.01: a pivot
    falls towards a dead point of its block within the step to 0.82 s while the block's
    smallest pivot, what the stages' lowest conditioning read, stays put.  The step was
    taken whole, and the run ended 1 s 1.0e-3 m from a converged dense run (dense's own rk4
    error: 4.7e-6 m).  Each pivot's lowest over the stages is now kept too, and a step in
    which one fell by more than SWITCH_FALL below its start is taken in parts (the two
    steps of the prediction counted in whole steps): the switch comes inside the step, at
    0.8125 s, and the run ends 3.6e-5 m off."""
    from ..test_differential import mechanism

    model = build_model(mechanism(40152, 12, 3, long=False))
    ref, _ = _positions_through(model, Settings(formulation="dense", integrator="dop853", rtol=1e-10, atol=1e-10,
                                                 t_end=1.0))
    pos, sim = _positions_through(model, Settings(formulation="rcr", t_end=1.0))
    assert 0.81 < _switch_times(sim)[0] < 0.82
    assert np.abs(pos - ref).max() < 1e-4


@pytest.mark.parametrize("formulation", ["rcr", "embedding"])
def test_near_a_singular_configuration_a_kept_partition_is_not_searched_again(formulation, monkeypatch):
    """The parallelogram four-bar folding: its block conditioning falls at every step
    from 0.55 s with the mobility measure (their ratio 0.78 throughout), and each search
    there kept the partition.  One search is made where the tracking starts, then none
    until the run stops at the singular configuration -- at the time it stopped when
    every post-step searched (nine searches)."""
    from linkwork.engine.errors import SimulationError
    from linkwork.engine.model import load_model
    from linkwork.engine.paths import examples_dir

    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation=formulation, t_end=1.0))
    searches = []
    cls = type(sim.formulation)
    search_at = cls._search_at
    monkeypatch.setattr(cls, "_search_at", lambda self, q: searches.append(1) or search_at(self, q))
    with pytest.raises(SimulationError, match="singular configuration") as failure:
        sim.run_all()
    assert failure.value.t == pytest.approx(0.596875, abs=1e-9)
    assert len(searches) == 2  # the first under SWITCH_RTOL (not yet near), the first near
    assert sim.stats["partition_switches"] == 0
