"""Agreement figures of the fast formulations against the references (``dca`` and ``hdca``).

The tests assert bounds; this prints the measured numbers behind them:

* random states of random mechanisms (the tests' CASES: 24 trees, 16 single
  loops, 16 coupled loops): ``dca``'s joint accelerations against ``dense``;
  ``hdca``'s velocities from momenta and momentum rates against the dense
  Hamiltonian reference; with the loop conditioning of each state;
* ``--trajectories``: every shipped example over 2 s (rk4, dt = 1e-3), the
  largest body-position difference against the reference (slow: ~3 min).

    python benchmarks/agreement.py [--trajectories]
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
from tests.engine.conftest import EXAMPLES  # noqa: E402
from tests.engine.formulations import test_trajectories as tt  # noqa: E402
from tests.engine.formulations.test_dca import CASES, random_case, random_state_error  # noqa: E402
from tests.engine.formulations.test_hdca import random_state_errors  # noqa: E402

WELL = 1e-2  # conditioning above which the tests use the strict 1e-9 bound


def random_states():
    rows = []
    for kind, seed, kw in CASES:
        s, e_dca, _ = random_state_error(kind, seed, kw)
        e = random_state_errors(kind, seed, kw)
        model = build_model(random_case(kind, seed, kw))
        rows.append((f"{kind}-{seed}", model.nb, model.ncut, s, e_dca, e["conditioning"], e["v"], e["pdot"]))
    print("| case | bodies | loops | conditioning (dca state) | dca accel. rel. err | conditioning (hdca state) "
          "| hdca v rel. err | hdca dp*/dt rel. err |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1e} | {r[4]:.1e} | {r[5]:.1e} | {r[6]:.1e} | {r[7]:.1e} |")
    well_d = [r[4] for r in rows if r[3] > WELL]
    well_h = [(r[6], r[7]) for r in rows if r[5] > WELL]
    print(f"\ndca: worst rel. acceleration error {max(well_d):.1e} over {len(well_d)} well-conditioned states "
          f"(conditioning > {WELL:g}); all {len(rows)}: {max(r[4] for r in rows):.1e}")
    print(f"hdca: worst rel. velocity error {max(e[0] for e in well_h):.1e}, momentum-rate error "
          f"{max(e[1] for e in well_h):.1e} over {len(well_h)} well-conditioned states")


def trajectories():
    print("\n| example | formulation | reference | max body-position difference over 2 s [m] |")
    print("|---|---|---|---|")
    for path in EXAMPLES:
        model, cols, rows = tt.reference(path)
        for form in tt.ODE_FORMULATIONS:
            _, cols2, rows2 = tt._run(path, form)
            ref, label = tt._positions(cols, rows, model), "dense"
            if form == "hdca" and model.nb <= 64:
                X = tt.hamiltonian_reference(path)
                ref = np.concatenate([X[:, model.body_internal[fb]] for fb in range(model.nb)], axis=1)
                label = "dense Hamiltonian"
            diff = np.abs(tt._positions(cols2, rows2, model) - ref).max()
            print(f"| {path.name.replace('.mech.json', '')} | {form} | {label} | {diff:.1e} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", action="store_true", help="also the shipped examples' trajectories")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    random_states()
    if args.trajectories:
        trajectories()
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
