"""Timing on a shared machine (engine/studies/timing.py)."""


def test_interleaved_timing_takes_turns_and_keeps_each_entrys_best_round():
    """The peers bench times a row's entries in turns (engine.studies.timing.time_interleaved)."""
    import time

    from linkwork.engine.studies.timing import time_interleaved

    log = []

    def entry(name, pause):
        def call():
            log.append(name)
            if pause:
                time.sleep(pause)
        return call

    best = time_interleaved({"quick": entry("quick", 0.0), "slow": entry("slow", 0.002)},
                            min_batch=0.01, rounds=3)
    assert list(best) == ["quick", "slow"]
    assert best["slow"] >= 0.002 > best["quick"] > 0
    # after each entry's calibration, the rounds alternate: quick's batch, then slow's, twice
    runs = [name for i, name in enumerate(log) if i == 0 or log[i - 1] != name]
    assert runs[-4:] == ["quick", "slow", "quick", "slow"]


def test_a_right_hand_side_is_timed_at_new_coordinates_on_every_call():
    """dense takes its geometry again at the same coordinates, bit for bit; the timed calls
    (engine.studies.timing.rhs_call) alternate between two states, so each call forms it,
    as an integrator's stages do."""
    from pathlib import Path

    import numpy as np

    from linkwork.engine.model import load_model
    from linkwork.engine.simulation import Settings, Simulation
    from linkwork.engine.studies.timing import rhs_call

    root = Path(__file__).resolve().parents[3]
    model = load_model(root / "resources" / "examples" / "ladder-4.mech.json")
    form = Simulation(model, Settings(formulation="dense", threads=1)).formulation
    y = form.initial_state()
    y[model.nq:] = 0.1
    seen = []
    rhs = form.rhs
    form.rhs = lambda t, state: (seen.append((t, state.copy())), rhs(t, state))[1]
    call = rhs_call(form, 0.5, y)
    for _ in range(4):
        call()
    assert [t for t, _ in seen] == [0.5] * 4
    first, second = seen[0][1], seen[1][1]
    assert np.array_equal(seen[2][1], first) and np.array_equal(seen[3][1], second)
    np.testing.assert_allclose(second[:model.nq] - first[:model.nq], 1e-12, rtol=1e-3)
    assert np.array_equal(second[model.nq:], first[model.nq:])
    # each call forms the geometry: the workspace is marked with the last call's coordinates
    assert np.array_equal(form.work.geometry[1:], second[:model.nq])
    call()
    assert np.array_equal(form.work.geometry[1:], first[:model.nq])
