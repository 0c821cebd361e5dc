"""Whole runs with the compiled row loop against the Python pipeline's rows, interleaved.

    python benchmarks/row_loop.py [--t-end 10] [--rounds 5] [--examples a,b] [--formulation NAME] [--out FILE.md]

Each bundled example at its defaults (or the listed ones; with ``--formulation``, that
formulation at the file's settings for it, where it accepts the example), 10 s
simulated: per round, one
run with ``LINKWORK_COMPILED_ROWS=1`` and one with ``0``, in alternating order, kernels
loaded by an untimed short run first; the best wall of each over the rounds, per
simulated second, and whether the two runs' rows were identical.  Examples whose runs
do not use the row loop (adaptive integrators, drivers, formulations without row
kernels) are listed with a dash.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import datetime

import numpy as np

from linkwork.engine.errors import SettingsError, SimulationError
from linkwork.engine.model import load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Simulation, file_defaults, resolve_settings


def _run(model, settings, compiled: bool):
    os.environ["LINKWORK_COMPILED_ROWS"] = "1" if compiled else "0"
    sim = Simulation(model, settings)
    sim.prepare()
    t0 = time.perf_counter()
    parts = []
    try:
        for chunk in sim.run():
            parts.append(chunk.rows)
    except SimulationError:
        pass
    wall = time.perf_counter() - t0
    return wall, np.vstack(parts), sim._row_loop is not None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--examples", default="")
    ap.add_argument("--formulation", default="", help="this formulation instead of each file's default")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    names = a.examples.split(",") if a.examples else sorted(p.name[:-len(".mech.json")]
                                                          for p in examples_dir().glob("*.mech.json"))
    lines = ["| example | formulation | integrator | rows | compiled ms/sim-s | Python ms/sim-s | Python / compiled "
             "| rows identical |", "|---|---|---|---|---|---|---|---|"]
    for name in names:
        model = load_model(examples_dir() / f"{name}.mech.json")
        s = file_defaults(model, a.formulation or None)
        if a.formulation:
            try:
                s = resolve_settings(model, s.replace(formulation=a.formulation))
            except SettingsError as exc:
                print(f"{name}: {exc}", flush=True)
                continue
        short, whole = s.replace(t_end=min(0.05, a.t_end)), s.replace(t_end=a.t_end)
        _run(model, short, True)
        _run(model, short, False)
        best = {True: np.inf, False: np.inf}
        rows = {}
        used = False
        for r in range(a.rounds):
            for compiled in ((True, False) if r % 2 == 0 else (False, True)):
                wall, out, loop = _run(model, whole, compiled)
                best[compiled] = min(best[compiled], wall)
                rows[compiled] = out
                used |= loop and compiled
        sim = Simulation(model, whole)
        same = rows[True].shape == rows[False].shape and np.array_equal(rows[True], rows[False], equal_nan=True)
        c, p = 1e3 * best[True] / a.t_end, 1e3 * best[False] / a.t_end
        line = (f"| {name} | {sim.settings.formulation} | {sim.settings.integrator} | {rows[True].shape[0]} | "
                + (f"{c:.2f} | {p:.2f} | {p / c:.2f} | {'yes' if same else 'NO'} |" if used
                   else f"– | {p:.2f} | – | – |"))
        print(line, flush=True)
        lines.append(line)
    head = (f"# Whole runs: the compiled row loop against Python's rows ({datetime.now():%Y-%m-%dT%H:%M})\n\n"
            f"`python benchmarks/row_loop.py --t-end {a.t_end:g} --rounds {a.rounds}"
            f"{' --examples ' + a.examples if a.examples else ''}"
            f"{' --formulation ' + a.formulation if a.formulation else ''}` on {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} logical CPUs; best of {a.rounds} interleaved rounds each, every example at its "
            "file's defaults.\n\n")
    text = head + "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
