"""The wall time of whole runs, one example and formulation at a time, repeated: for a
before/after comparison of one change, run once per checkout and alternate the two.

Each case runs 10 s (the file's settings otherwise) twice to warm, then nine times;
printed: the best and the median wall of ``Simulation.run`` (construction and
``prepare`` not timed), and the right-hand sides the last run evaluated.  A run that
stops with a ``SimulationError`` (a refusal) is timed to its stop.

    python benchmarks/run_walls.py parallelogram-fourbar:rcr,fivebar:rcr
    PYTHONPATH=<another checkout's package> python benchmarks/run_walls.py ...   # the other side

Unlike ``linkwork bench --whole-run``, which interleaves every example and formulation,
each case here runs back to back: its caches stay warm, so its walls are lower and
steadier, and two checkouts' compare closely.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def walls(example: str, formulation: str, rounds: int) -> tuple[float, float, int]:
    """(best, median wall in seconds, right-hand sides) of ``rounds`` runs of 10 s."""
    from linkwork.engine.errors import SimulationError
    from linkwork.engine.model import load_model
    from linkwork.engine.simulation import Simulation, file_defaults, resolve_settings

    model = load_model(ROOT / "resources" / "examples" / f"{example}.mech.json")
    settings = resolve_settings(model, file_defaults(model, formulation).replace(t_end=10.0,
                                                                               formulation=formulation))

    def one() -> tuple[float, int]:
        sim = Simulation(model, settings)
        sim.prepare()
        t0 = time.perf_counter()
        try:
            for _ in sim.run():
                pass
        except SimulationError:
            pass
        return time.perf_counter() - t0, int(sim.stats.get("rhs_evaluations", 0))

    one(), one()
    runs = sorted(one() for _ in range(rounds))
    return runs[0][0], runs[len(runs) // 2][0], runs[-1][1]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", help="example:formulation,... (example names as in resources/examples)")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    for case in args.cases.split(","):
        example, formulation = case.split(":")
        best, median, count = walls(example, formulation, args.rounds)
        print(f"{case:40s} best {best * 1e3:9.3f} ms  median {median * 1e3:9.3f} ms  rhs {count}")


if __name__ == "__main__":
    main()
