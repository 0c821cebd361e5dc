"""index3's convergence with the step on one of the differential tests' random mechanisms:
its trapezoidal rule halved step by step, at the step's default penalty and at penalties
fixed whatever the step (docs/index3.md, "Choosing alpha").

Each run is 1 s, read every 0.01 s, against a converged reference (``dca``, or ``dense``
where the mechanism has a gear; dop853 at rtol = atol = 1e-13).  Printed per step: the
penalty, the largest body-position difference from the reference, its ratio to the
coarser step's (4 for a second-order method), the Richardson extrapolation of the two
``(4 q(dt/2) - q(dt)) / 3`` against the reference, the Newton rounds beyond the fixed
count, the wall time, or the run's error.

    python benchmarks/index3_order.py --mechanism 80566,11,2
    python benchmarks/index3_order.py --mechanism 859,8,2 --penalties default,1e9 --steps 2e-4,1e-4,5e-5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine.model import build_model  # noqa: E402
from tests.engine import test_differential as diff  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mechanism", default="80566,11,2", help="seed,bodies,loops of the tests' mechanism() [80566,11,2]")
    p.add_argument("--steps", default="1e-4,5e-5,2.5e-5,1.25e-5", help="index3's steps [1e-4,5e-5,2.5e-5,1.25e-5]")
    p.add_argument("--penalties", default="default,1e9", help="'default' (the step's) or numbers [default,1e9]")
    a = p.parse_args(argv)
    seed, n_bodies, loops = (int(x) for x in a.mechanism.split(","))
    model = build_model(diff.mechanism(seed, n_bodies, loops))
    ref_form = "dense" if model.ng else "dca"
    ref, err, _ = diff.run_positions(model, ref_form, tol=1e-13)  # diff.INTEGRATOR: dop853
    print(f"mechanism({seed}, {n_bodies}, {loops}): reference {ref_form} dop853 1e-13"
          + ("" if err is None else f" (stopped: {err})"))
    for pen in a.penalties.split(","):
        prev = None
        for dt in (float(x) for x in a.steps.split(",")):
            t0 = time.perf_counter()
            pos, err, sim = diff.run_positions(model, "index3", dt, penalty=None if pen == "default" else float(pen))
            wall = time.perf_counter() - t0
            line = f"  penalty {pen:>7} ({sim.formulation.alpha:.1e})  dt {dt:<8.3g}"
            if err is not None or len(pos) != len(ref):
                print(f"{line} stopped: {err}", flush=True)
                break
            dev = float(np.abs(pos - ref).max())
            line += f" {dev:.2e} m"
            if prev is not None:
                rich = float(np.abs((4.0 * pos - prev[0]) / 3.0 - ref).max())
                line += f"  ratio {prev[1] / dev:4.2f}  Richardson {rich:.1e} m"
            print(f"{line}  extra Newton rounds {sim.stats.get('extra_newton_rounds', 0)}  {wall:.1f} s", flush=True)
            prev = (pos, dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
