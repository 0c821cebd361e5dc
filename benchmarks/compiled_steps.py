"""Error-controlled runs with their steps and rows in compiled code against scipy's
solver and the Python pipeline's rows (``LINKWORK_COMPILED_STEPS=0``), interleaved run by
run (best of ``--rounds``), with each run's count of right-hand sides::

    python benchmarks/compiled_steps.py [--runs example:formulation,...] [--integrators rk45,dop853]
                                        [--rounds 3] [--out FILE.md]

Each run is 10 s of the example at its own step and settings, under the integrator at
rtol = atol = 1e-8. A run's wall covers ``Simulation.run`` to the end, every output row
included, after a warm-up run of the same settings (as ``linkwork bench --whole-run``).
"""

from __future__ import annotations

import argparse
import os
import platform

from linkwork import Simulation
from linkwork.engine.model import load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import file_defaults

from rk45_ratio import T_END, TOL, _wall, report

RUNS = "slider-crank-driven:dense"
#: the two ways a run is made, by ``LINKWORK_COMPILED_STEPS``
WAYS = {"scipy": "0", "compiled": "1"}


def _count(model, settings) -> tuple[int, str]:
    sim = Simulation(model, settings)
    sim.run_all()
    return int(sim.stats.get("rhs_evaluations", 0)), type(sim._row_loop).__name__


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default=RUNS, help="comma-separated example:formulation")
    p.add_argument("--integrators", default="rk45,dop853")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="also write the table as Markdown here")
    a = p.parse_args(argv)
    cases = []
    for run in a.runs.split(","):
        name, form = run.split(":")
        model = load_model(examples_dir() / f"{name}.mech.json")
        for integrator in a.integrators.split(","):
            s = file_defaults(model, form).replace(formulation=form, integrator=integrator, rtol=TOL, atol=TOL,
                                                   t_end=T_END)
            counts = {}
            for way, flag in WAYS.items():
                os.environ["LINKWORK_COMPILED_STEPS"] = flag
                counts[way] = _count(model, s)  # also the warm-up: compiles or loads what the run calls
            cases.append((name, form, integrator, model, s, counts))
    best: dict = {}
    for _ in range(a.rounds):
        for name, form, integrator, model, s, _counts in cases:
            for way, flag in WAYS.items():
                os.environ["LINKWORK_COMPILED_STEPS"] = flag
                key = (name, form, integrator, way)
                best[key] = min(best.get(key, float("inf")), _wall(model, s))
    os.environ.pop("LINKWORK_COMPILED_STEPS")
    lines = ["| example | formulation | integrator | right-hand sides (scipy / compiled) | rows made by "
             "| scipy ms per simulated s | compiled | scipy / compiled |", "|---|---|---|---|---|---|---|---|"]
    for name, form, integrator, _model, _s, counts in cases:
        sc, co = (best[(name, form, integrator, w)] * 1e3 / T_END for w in WAYS)
        lines.append(f"| {name} | {form} | {integrator} | {counts['scipy'][0]} / {counts['compiled'][0]} "
                     f"| {counts['compiled'][1]} | {sc:.2f} | {co:.2f} | {sc / co:.1f} |")
    report(lines, a.out, "Compiled steps and rows against scipy's solver",
           f"`python benchmarks/compiled_steps.py --runs {a.runs} --integrators {a.integrators} --rounds {a.rounds}` "
           f"on {platform.machine()}, {T_END:g} s of each example at rtol = atol = {TOL:g}; best of {a.rounds} "
           "rounds, the two ways interleaved run by run.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
