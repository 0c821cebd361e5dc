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
