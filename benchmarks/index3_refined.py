"""index3 at its default settings where the monitor refines the step: every bundled example
(and a few of the differential tests' random mechanisms) for 10 s at dt = 0.01, against a
converged reference (``dca``, or ``dense`` where there is a gear; dop853 at rtol = atol =
1e-12).

Printed per mechanism: the sub-step level the run ended at (``2**level`` sub-steps per
output interval), the Newton iterations and the extra rounds beyond the fixed count, the
largest position residual a step left (``max_violation``), the largest drift of the total
energy, the largest body-position difference from the reference over the first 2 s and
over the run, and the wall time.  With ``--json FILE`` the figures also go to FILE.

    python benchmarks/index3_refined.py
    python benchmarks/index3_refined.py --t-end 2 --json /tmp/index3-refined.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork import Settings, Simulation  # noqa: E402
from linkwork.engine.errors import SettingsError  # noqa: E402
from linkwork.engine.model import build_model, load_model  # noqa: E402
from tests.engine import test_differential as diff  # noqa: E402

RANDOM = [(80566, 11, 2), (859, 8, 2), (90045, 4, 1), (80527, 8, 3)]


def _reference(model, t_end):
    form = "dense" if model.ng else "dca"
    sim = Simulation(model, Settings(formulation=form, integrator="dop853", rtol=1e-12, atol=1e-12, t_end=t_end))
    rows, _ = diff.run_to_end(sim)
    return diff.body_positions(model, sim.columns, rows)


def _one(model, label, t_end, dt):
    try:
        sim = Simulation(model, Settings(formulation="index3", dt=dt, t_end=t_end))
    except SettingsError:
        print(f"{label:28s} index3 cannot simulate it")
        return None
    sim.prepare()  # compiling is not the run's time
    t0 = time.perf_counter()
    rows, err = diff.run_to_end(sim)
    wall = time.perf_counter() - t0
    rows = np.array(rows)
    energy = rows[:, sim.columns.index("energy.total")]
    pos = diff.body_positions(model, sim.columns, rows)
    ref = _reference(model, t_end)
    n = min(len(pos), len(ref))
    n2 = min(n, int(round(2.0 / dt)) + 1)
    f = sim.formulation
    out = dict(level=sim.refinement.base, error=None if err is None else str(err),
               newton=f.newton_total, extra_rounds=f.extra_newton_rounds, max_violation=f.max_violation,
               drift=float(np.abs(energy - energy[0]).max()), dev_2s=float(np.abs(pos[:n2] - ref[:n2]).max()),
               dev=float(np.abs(pos[:n] - ref[:n]).max()), wall=wall)
    print(f"{label:28s} level {out['level']}  Newton {out['newton']:7d} (+{out['extra_rounds']:5d} rounds)  "
          f"residual {out['max_violation']:.1e}  drift {out['drift']:.3e}  off {out['dev_2s']:.2e} m (2 s), "
          f"{out['dev']:.2e} m  {wall:.2f} s" + ("" if err is None else f"  stopped: {err}"), flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-end", type=float, default=10.0, help="simulated seconds [10]")
    p.add_argument("--dt", type=float, default=0.01, help="index3's step [0.01]")
    p.add_argument("--json", help="also write the figures to this file")
    a = p.parse_args(argv)
    found = {}
    for path in sorted((ROOT / "resources" / "examples").glob("*.mech.json")):
        label = path.name.removesuffix(".mech.json")
        found[label] = _one(load_model(path), label, a.t_end, a.dt)
    for seed, n_bodies, loops in RANDOM:
        label = f"mechanism({seed}, {n_bodies}, {loops})"
        found[label] = _one(build_model(diff.mechanism(seed, n_bodies, loops, long=False)), label, a.t_end, a.dt)
    if a.json:
        Path(a.json).write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
