"""One formulation's time per right-hand side on bundled examples, for before/after
comparisons of a kernel change: each example's file defaults run 0.2 s (compiling what
the run calls), then the right-hand side is timed at its initial state, the calls
alternating between it and the same with its coordinates moved by 1e-12
(:func:`engine.studies.timing.rhs_call`; best of five batches).  Prints which engine
it imported and one JSON object of microseconds per example::

    python benchmarks/percall.py --formulation dense --examples loop-8,ladder-4
    PYTHONPATH=<another checkout's package> python benchmarks/percall.py ...

Run the two checkouts alternately, each with its own ``NUMBA_CACHE_DIR``.
"""

from __future__ import annotations

import argparse
import json

import linkwork.engine as engine
from linkwork.engine.model import load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation
from linkwork.engine.studies.timing import rhs_call, time_call

EXAMPLES = "fourbar-crank-rocker,loop-8,ladder-4,ladder-16,chain-8-revolute,fivebar-redundant"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--formulation", default="dense")
    p.add_argument("--examples", default=EXAMPLES, help=f"comma-separated [{EXAMPLES}]")
    a = p.parse_args(argv)
    out = {}
    for name in a.examples.split(","):
        model = load_model(examples_dir() / f"{name}.mech.json")
        sim = Simulation(model, Settings(formulation=a.formulation, t_end=0.2))
        sim.run_all()
        form = sim.formulation
        out[name] = round(time_call(rhs_call(form, 0.0, form.initial_state())) * 1e6, 3)
    print(engine.__file__, json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
