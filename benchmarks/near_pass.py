"""A loop that passes near, not through, a singular configuration: which formulation is
right, and what ``dense``'s widened filter costs there (docs/derivations.md, "Singular
configurations").

The mechanism is the differential tests' random mechanism of seed 859 (8 bodies, two
loops; ``tests/engine/test_differential.mechanism``): its loops' mobility measure stays
near 2.7e-3 and dips to 2.3e-4 at t = 0.42 s.  Each formulation runs 1 s with dop853 at
each tolerance (``index3``: its trapezoidal rule at dt = 1e-4 and 5e-5, read every
0.01 s); printed: the smallest loop conditioning the run saw, and the largest
body-position difference from the reference formulation's tightest run.  A formulation whose runs converge as
the tolerance tightens, and agree with another's, is right; one whose runs do not is not.

    python benchmarks/near_pass.py
    python benchmarks/near_pass.py --dense-filter 1e-6     # dense's filter never widened

``--dense-filter`` sets ``config.DENSE_FILTER_RTOL`` (compiled into the kernels: the run
compiles them into a numba cache of its own first, minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--formulations", default="dense,dca,hdca", help="[dense,dca,hdca]")
    p.add_argument("--tolerances", default="1e-10,1e-12,1e-13", help="dop853's rtol = atol [1e-10,1e-12,1e-13]")
    p.add_argument("--reference", default="dca", help="the runs are compared with its tightest [dca]")
    p.add_argument("--dense-filter", type=float, default=None, help="config.DENSE_FILTER_RTOL for this run")
    a = p.parse_args(argv)
    if a.dense_filter is not None:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="linkwork-near-pass-")  # before numba is imported
        from linkwork.engine import config
        config.DENSE_FILTER_RTOL = a.dense_filter
    from linkwork.engine.model import build_model
    from tests.engine.test_differential import mechanism, run_positions

    model = build_model(mechanism(859, 8, 2))
    runs = {}
    for form in a.formulations.split(","):
        steps = (1e-4, 5e-5) if form == "index3" else (float(x) for x in a.tolerances.split(","))
        for tol in steps:
            runs[(form, tol)], err, sim = run_positions(model, form, dt=tol, tol=tol)
            rows = runs[(form, tol)]
            print(f"{form:9s} {'dt' if form == 'index3' else 'rtol'} {tol:.0e}: {len(rows)} rows, smallest loop conditioning "
                  f"{sim.stats.get('min_loop_conditioning', float('nan')):.3e} at t = "
                  f"{sim.stats.get('t_closest_approach', float('nan')):.2f} s{'' if err is None else ', ' + str(err)}",
                  flush=True)
    ref = min((k for k in runs if k[0] == a.reference), key=lambda k: k[1], default=None)
    if ref is None:
        return 0
    print(f"largest body-position difference from {ref[0]} at {ref[1]:.0e} [m]:")
    for key, pos in runs.items():
        n = min(len(pos), len(runs[ref]))
        label = f"{key[0]} {'dt' if key[0] == 'index3' else 'rtol'} {key[1]:.0e}"
        print(f"  {label:22s} {np.abs(pos[:n] - runs[ref][:n]).max():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
