"""An error-controlled run against the fixed-step one: 10 s of each example at its
defaults under ``rk4`` and under ``rk45`` at rtol = atol = 1e-8, the two interleaved
run by run (best of ``--rounds``), and the ratio of the walls.

``linkwork bench --whole-run --integrator rk45`` times one integrator per run of the
command; two such runs an hour apart on a shared machine differ by more than the ratio
being asked for, so this script times both in one process, round by round::

    python benchmarks/rk45_ratio.py [--examples a,b,...] [--rounds 3] [--out FILE.md]

A run's wall covers ``Simulation.run`` to the end, every output row included, after a
warm-up run of the same settings (as ``linkwork bench --whole-run``).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

from linkwork import Simulation
from linkwork.engine.model import load_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import file_defaults

EXAMPLES = ("parallelogram-fourbar,fourbar-crank-rocker,chain-8-revolute,chain-5-spherical-spatial,"
            "spatial-double-pendulum,loop-4,loop-8,double-loop-8,ladder-4,ladder-8,ladder-16")
T_END = 10.0
TOL = 1e-8


def _wall(model, settings) -> float:
    sim = Simulation(model, settings)
    sim.prepare()
    t0 = time.perf_counter()
    for _ in sim.run():
        pass
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", default=EXAMPLES, help="comma-separated file stems")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="also write the table as Markdown here")
    a = p.parse_args(argv)
    cases = []
    for name in a.examples.split(","):
        model = load_model(examples_dir() / f"{name}.mech.json")
        base = file_defaults(model, None).replace(t_end=T_END)
        pair = {"rk4": base.replace(integrator="rk4"), "rk45": base.replace(integrator="rk45", rtol=TOL, atol=TOL)}
        for s in pair.values():
            _wall(model, s)  # warm-up: compiles or loads what the run calls
        cases.append((name, model, pair, Simulation(model, pair["rk4"]).settings.formulation))
    best: dict = {}
    for _ in range(a.rounds):
        for name, model, pair, _form in cases:
            for key, s in pair.items():
                best[(name, key)] = min(best.get((name, key), float("inf")), _wall(model, s))
    head = "| example | formulation | rk4 ms per simulated s | rk45 ms per simulated s | rk45 / rk4 |"
    lines = [head, "|---|---|---|---|---|"]
    for name, _model, _pair, form in cases:
        r4, r45 = (best[(name, k)] * 1e3 / T_END for k in ("rk4", "rk45"))
        lines.append(f"| {name} | {form} | {r4:.2f} | {r45:.2f} | {r45 / r4:.2f} |")
    report(lines, a.out, "rk45 against rk4, interleaved",
           f"`python benchmarks/rk45_ratio.py --rounds {a.rounds}` on {platform.machine()}, {T_END:g} s of each "
           f"example at its defaults, rk45 at rtol = atol = {TOL:g}; best of {a.rounds} rounds, the runs "
           "interleaved.")
    return 0


def report(lines: list[str], out: str | None, title: str, how: str) -> None:
    """Print the Markdown table ``lines``; with ``out``, also write it there under
    ``title`` (dated now) and ``how`` it was measured."""
    table = "\n".join(lines)
    print(table)
    if out:
        stamp = datetime.datetime.now().isoformat(timespec="minutes")
        with open(out, "w", encoding="utf-8") as f:
            f.write(f"# {title} ({stamp})\n\n{how}\n\n{table}\n")


if __name__ == "__main__":
    raise SystemExit(main())
