"""Where ``dense`` stops being the cheaper default for closed loops, and ``hdca`` starts.

Runs single loops of 4 to 48 bodies, spatial ladders of 1 to 12 cells and the double
loop (``engine.generators``) with ``dense`` and ``hdca`` at rk4 (the defaults' dt), the
two interleaved round by round, best of ``--rounds``; the ladders also under ``rk45``
(rtol = atol = 1e-8).  Prints wall per simulated second, the size measures the default's
cost model takes (``nv``, bodies, loop rows) and that model's estimates, and fits the
model's coefficients to the rk4 figures by least squares.  ``--accuracy`` adds, for the
bundled ladders (10 s) and for the first ``--random`` random spatial mechanisms with
loops that the default gives to ``hdca`` (3 s), both formulations' largest body-position
error at rk4 against a converged ``dense`` run (dop853, rtol = atol = 1e-11), and
their wall::

    python benchmarks/default_crossover.py [--t-end 3] [--rounds 3] [--accuracy] [--out FILE.md]

The coefficients in ``engine.formulations.DENSE_COST`` and ``HDCA_COST`` are this script's fit
(docs/formulations.md, "Default").
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from linkwork import Settings, Simulation
from linkwork.engine import generators as g
from linkwork.engine.formulations import default_costs, default_formulation, loop_rows
from linkwork.engine.model import build_model, load_model
from linkwork.engine.paths import examples_dir


def cases():
    for n in (4, 8, 12, 16, 24, 32, 48):
        yield f"loop-{n}", g.closed_loop(n), False
    for cells in (1, 2, 3, 4, 6, 8, 12):
        yield f"ladder-{cells}", g.ladder(cells), True
    yield "double-loop-8", g.double_loop(), False


def wall_per_second(model, formulation: str, integrator: str, t_end: float) -> float:
    tol = {"rtol": 1e-8, "atol": 1e-8} if integrator == "rk45" else {}
    sim = Simulation(model, Settings(formulation=formulation, integrator=integrator, t_end=t_end, **tol))
    t0 = time.perf_counter()
    for _ in sim.run():
        pass
    return (time.perf_counter() - t0) / t_end * 1e3


def positions(model, t_end: float, **settings) -> tuple[np.ndarray, float]:
    """Every body's position at every output instant, and the run's wall [s]."""
    sim = Simulation(model, Settings(t_end=t_end, **settings))
    t0 = time.perf_counter()
    chunks = list(sim.run())
    wall = time.perf_counter() - t0
    rows, cols = np.concatenate([c.rows for c in chunks]), chunks[0].columns
    return rows[:, [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]], wall


def accuracy_cases(count: int):
    for cells in (4, 8, 16):
        yield f"ladder-{cells}", load_model(examples_dir() / f"ladder-{cells}.mech.json"), 10.0
    found = 0
    for seed in range(1000):
        if found == count:
            return
        spec = g.random_mechanism(seed, n_bodies=10 + seed % 15, loops=2 + seed % 5)
        model = build_model(spec)
        if default_formulation(model) == "hdca":
            found += 1
            yield f"random_mechanism({seed}, n_bodies={10 + seed % 15}, loops={2 + seed % 5})", model, 3.0


def accuracy(count: int) -> list[str]:
    head = "| mechanism | nv | loops | simulated s | dense error m | hdca error m | dense wall s | hdca wall s |"
    lines = [head, "|" + "---|" * 8]
    print(head, flush=True)
    for name, model, t_end in accuracy_cases(count):
        ref, _ = positions(model, t_end, formulation="dense", integrator="dop853", rtol=1e-11, atol=1e-11)
        cells = []
        for f in ("dense", "hdca"):
            x, wall = positions(model, t_end, formulation=f)
            n = min(len(x), len(ref))
            cells.append((np.abs(x[:n] - ref[:n]).max(), wall, n == len(ref)))
        line = (f"| {name} | {model.nv} | {model.ncut} | {t_end:g} | "
                + " | ".join(f"{e:.2e}" + ("" if whole else " (stopped)") for e, _, whole in cells) + " | "
                + " | ".join(f"{w:.3f}" for _, w, _ in cells) + " |")
        lines.append(line)
        print(line, flush=True)
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-end", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--accuracy", action="store_true", help="also the two formulations' errors at rk4")
    p.add_argument("--random", type=int, default=12, help="random mechanisms for --accuracy [%(default)s]")
    p.add_argument("--out", help="also write the table as Markdown here")
    a = p.parse_args(argv)
    rows = []
    head = ("| mechanism | nv | bodies | loop rows | dense rk4 | hdca rk4 | dense rk45 | hdca rk45 "
            "| model dense | model hdca | default |")
    lines = [head, "|" + "---|" * 11]
    print(head, flush=True)
    for name, spec, adaptive in cases():
        model = build_model(spec)
        runs = [("dense", "rk4"), ("hdca", "rk4")] + ([("dense", "rk45"), ("hdca", "rk45")] if adaptive else [])
        best = {}
        for _ in range(a.rounds):
            for f, integ in runs:
                best[f, integ] = min(best.get((f, integ), np.inf), wall_per_second(model, f, integ, a.t_end))
        dense, hdca = default_costs(model)
        r = loop_rows(model)
        cells = [name, model.nv, model.nb, r] + [best.get(k) for k in
                                                 (("dense", "rk4"), ("hdca", "rk4"), ("dense", "rk45"), ("hdca", "rk45"))]
        rows.append((model.nv, model.nb, r, best["dense", "rk4"], best["hdca", "rk4"]))
        line = "| " + " | ".join(c if isinstance(c, str) else "–" if c is None else
                                 f"{c:.2f}" if isinstance(c, float) else str(c) for c in cells) \
            + f" | {dense:.1f} | {hdca:.1f} | {default_formulation(model)} |"
        lines.append(line)
        print(line, flush=True)
    nv, nb, r, d, h = (np.array(c, float) for c in zip(*rows))
    k = nv + r
    cd = np.linalg.lstsq(np.stack([np.ones_like(k), k ** 2, k ** 3], 1), d, rcond=None)[0]
    ch = np.linalg.lstsq(np.stack([np.ones_like(k), nb, r], 1), h, rcond=None)[0]
    fit = (f"least squares on the rk4 columns: dense = {cd[0]:.3g} + {cd[1]:.3g} k^2 + {cd[2]:.3g} k^3 "
           f"(k = nv + loop rows); hdca = {ch[0]:.3g} + {ch[1]:.3g} bodies + {ch[2]:.3g} loop rows")
    print(fit)
    errors = accuracy(a.random) if a.accuracy else []
    if a.out:
        with open(a.out, "w") as fh:
            fh.write("# The closed-loop default: dense against hdca\n\n"
                     f"`python benchmarks/default_crossover.py --t-end {a.t_end:g} --rounds {a.rounds}` on "
                     f"{platform.processor() or platform.machine()}, best of {a.rounds} rounds, the runs "
                     "interleaved; wall per simulated second [ms], rk4 at dt = 0.01, rk45 at rtol = atol = "
                     "1e-8.  `model`: `engine.formulations.default_costs`; `default`: what "
                     "`default_formulation` picks.\n\n" + "\n".join(lines) + f"\n\n{fit}.\n")
            if errors:
                fh.write("\n## Accuracy at rk4, dt = 0.01\n\nThe largest body-position error over the "
                         "output instants against `dense` integrated by dop853 at rtol = atol = 1e-11; "
                         "the wall of each run (one run, not interleaved).\n\n" + "\n".join(errors) + "\n")


if __name__ == "__main__":
    main()
