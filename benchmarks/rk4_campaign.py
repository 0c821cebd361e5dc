"""Every ODE formulation at rk4's defaults on random mechanisms with loops, against a
converged ``dense`` run: the gross errors a fixed step leaves.

Each seed's mechanism is the differential tests' ``mechanism(seed, 4 + seed % 13,
1 + seed % 5)``; every formulation that accepts it runs 1 s at rk4, dt = 0.01 (its
defaults), and is compared with ``dense`` under dop853 at rtol = atol = 1e-10 (body
positions at every output instant).  A mechanism is printed where a formulation ends
more than ``--flag`` metres from that run and more than 100 times further than
``dense``'s own rk4 run: rk4's error is the integrator's, but not a hundred times
another formulation's at the same step.

    python benchmarks/rk4_campaign.py --seeds 40000-40598 [--flag 1e-4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine.formulations import REGISTRY  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402
from tests.engine import test_differential as diff  # noqa: E402

FORMS = ("dense", "dca", "hdca", "rcr", "embedding")


def positions(model, **settings) -> tuple[np.ndarray, object]:
    """(body positions at every output instant of a 1 s run, its error or None)."""
    sim = Simulation(model, Settings(t_end=1.0, **settings))
    rows, err = diff.run_to_end(sim)
    return diff.body_positions(model, sim.columns, rows), err


def deviations(model) -> dict | None:
    """Each formulation's largest deviation from the converged run (or "exit 3"); None
    where that run stops."""
    ref, err = positions(model, formulation="dense", integrator="dop853", rtol=1e-10, atol=1e-10)
    if err is not None:
        return None
    out = {}
    for form in FORMS:
        if not REGISTRY[form].supports(model)[0]:
            continue
        pos, err = positions(model, formulation=form)
        if err is not None:
            out[form] = "exit 3"
            continue
        n = min(len(pos), len(ref))
        out[form] = float(np.abs(pos[:n] - ref[:n]).max())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="40000-40598", help="first-last")
    ap.add_argument("--flag", type=float, default=1e-4, help="metres from the converged run [1e-4]")
    a = ap.parse_args(argv)
    s0, s1 = (int(x) for x in a.seeds.split("-"))
    n = flagged = 0
    worst: dict[str, tuple[float, int]] = {}
    t0 = time.perf_counter()
    for seed in range(s0, s1 + 1):
        n_bodies, loops = 4 + seed % 13, 1 + seed % 5
        devs = deviations(build_model(diff.mechanism(seed, n_bodies, loops)))
        if devs is None:
            continue
        n += 1
        base = devs.get("dense") if isinstance(devs.get("dense"), float) else None
        bad = {f: d for f, d in devs.items()
               if isinstance(d, float) and d > a.flag and (base is None or d > 100 * base)}
        for f, d in bad.items():
            if d > worst.get(f, (0.0, 0))[0]:
                worst[f] = (d, seed)
        if bad:
            flagged += 1
            print(f"seed {seed} ({n_bodies} bodies, {loops} loops): "
                  + ", ".join(f"{f} {d:.2e}" if isinstance(d, float) else f"{f} {d}" for f, d in devs.items()),
                  flush=True)
    print(f"{n} mechanisms, {flagged} flagged, {time.perf_counter() - t0:.0f} s; largest: "
          + (", ".join(f"{f} {d:.2e} (seed {s})" for f, (d, s) in sorted(worst.items())) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
