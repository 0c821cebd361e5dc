"""The cost of the pipeline's branch and health monitor (engine/monitor.py): whole runs
with and without it, interleaved (``linkwork bench --monitor``)."""

from __future__ import annotations

import time


def monitor_cost(forms, example: str = "chain-128-spherical", t_end: float = 0.5, repeats: int = 7) -> list[dict]:
    """The pipeline monitor's cost (engine/monitor.py): whole runs of ``example`` with and
    without it, interleaved (so machine load hits both alike), medians of wall and CPU
    time, and the monitor's own clock (judging, health, the recorder's saved state)."""
    import statistics

    from ..model import load_model
    from ..paths import examples_dir
    from ..simulation import Settings, Simulation

    model = load_model(examples_dir() / f"{example}.mech.json")
    out = []
    print(f"\nmonitor cost: {example}, {t_end:g} s at the defaults, {repeats} interleaved repeats (medians; "
          "'judge %': the monitor's own clock over the run's wall time, the figure load does not blur)")
    print(f"{'formulation':12s} {'wall on':>9s} {'wall off':>9s} {'cpu on':>9s} {'cpu off':>9s} "
          f"{'wall +%':>8s} {'cpu +%':>8s} {'judge %':>8s}")
    for f in forms:
        walls, cpus, own = {True: [], False: []}, {True: [], False: []}, []
        for r in range(repeats):
            for on in ((True, False) if r % 2 else (False, True)):  # alternate which goes first
                sim = Simulation(model, Settings(formulation=f, t_end=t_end, monitor=on))
                sim.prepare()
                c0, w0 = time.process_time(), time.perf_counter()
                for _chunk in sim.run():
                    pass
                walls[on].append(time.perf_counter() - w0)
                cpus[on].append(time.process_time() - c0)
                if on:
                    own.append(sim.stats["monitor_time"] / walls[on][-1])
        w1, w0_, c1, c0_ = (statistics.median(walls[True]), statistics.median(walls[False]),
                            statistics.median(cpus[True]), statistics.median(cpus[False]))
        row = {"formulation": f, "example": example, "t_end": t_end, "wall_on": w1, "wall_off": w0_,
               "cpu_on": c1, "cpu_off": c0_, "wall_overhead": w1 / w0_ - 1, "cpu_overhead": c1 / c0_ - 1,
               "cpu_min_overhead": min(cpus[True]) / min(cpus[False]) - 1,
               "judge_share": statistics.median(own)}
        out.append(row)
        print(f"{f:12s} {w1:9.3f} {w0_:9.3f} {c1:9.3f} {c0_:9.3f} {100 * row['wall_overhead']:8.2f} "
              f"{100 * row['cpu_overhead']:8.2f} {100 * row['judge_share']:8.2f}   (best-of CPU +"
              f"{100 * row['cpu_min_overhead']:.2f} %)", flush=True)
    return out
