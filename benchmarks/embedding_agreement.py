"""``embedding`` against ``dense`` on random mechanisms (the acceptance figures).

For each case both formulations run ``--t-end`` seconds with dop853 at
rtol = atol = 1e-12 (output every 0.01 s; dense projecting, its default with
loops); the table gives the largest body-position and total-energy differences,
embedding's largest ``violation.position``, its aggregated bodies, independent
velocities and partition switches.  Cases (the comparison is
``rcr_agreement.compare``): ``engine.generators.random_mechanism`` (every joint
type, random axes and inertias, springs, dampers, joint torques) with 0-3
loop-closing joints of spherical, universal or revolute type -- trees, single,
coupled and disjoint loops (two or more aggregated bodies), spatial joints -- and
spatial ladders of 1-6 cells (one aggregated body of up to 13 bodies).

With ``--examples`` it also compares every shipped example the same way, runs the
crank-rocker for 10 s from the rocker's angle as independent coordinate (switches
and difference to dense) and the parallelogram four-bar for 10 s (defaults, and
dop853 at 1e-10): the coupler's largest rotation and how the run ended.

    python benchmarks/embedding_agreement.py [--seeds 200-259] [--ladders 1-6] [--t-end 2] [--examples]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from linkwork.engine import generators as gen  # noqa: E402
from rcr_agreement import _range, _shape, compare, table  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="200-259", help="random_mechanism seeds, A-B or a comma list")
    ap.add_argument("--ladders", default="1-6", help="ladder cell counts")
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--examples", action="store_true", help="the shipped examples, crank-rocker and parallelogram")
    args = ap.parse_args(argv)
    if args.examples:
        examples(args.t_end)
    specs = [gen.random_mechanism(s, *_shape(s)) for s in _range(args.seeds)]
    specs += [gen.ladder(L) for L in _range(args.ladders)]
    table(specs, args.t_end, "embedding", aggregated=True)
    return 0


def examples(t_end: float) -> None:
    import numpy as np

    from linkwork.engine.errors import SimulationError
    from linkwork.engine.model import load_model
    from linkwork.engine.paths import examples_dir
    from linkwork.engine.simulation import Settings, Simulation

    print(f"Shipped examples, dop853 rtol = atol = 1e-12, {t_end:g} s (128-link chain: 0.2 s).\n")
    print("| example | aggregated bodies | independent | switches | max |Δx| [m] | max |ΔE| [J] "
          "| embedding violation.position |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted(examples_dir().glob("*.mech.json")):
        if "parallelogram" in path.name:
            continue
        spec = load_model(path).spec
        r = compare(spec, 0.2 if "chain-128" in path.name else t_end, "embedding")
        if "error" in r:
            print(f"| {path.name} | | | | {r['error']} | | |", flush=True)
            continue
        print(f"| {path.name} | {r['aggregated']} | {r['ind']} | {r['switches']} | {r['dx']:.1e} | {r['de']:.1e} "
              f"| {r['viol']:.1e} |", flush=True)
    # crank-rocker from the rocker's angle
    model = load_model(examples_dir() / "fourbar-crank-rocker.mech.json")
    kw = dict(integrator="dop853", rtol=1e-12, atol=1e-12, dt=0.01, t_end=10.0)
    sim = Simulation(model, Settings(formulation="embedding", **kw))
    (agg,) = sim.formulation.aggregates
    rocker = int(model.v_adr[[i for i in agg.bodies if model.parent[i] < 0 and i != 0][0]])
    sim.formulation.use_independent([[rocker]])
    cols, out = sim.run_all()
    _, ref = Simulation(model, Settings(formulation="dense", **kw)).run_all()
    idx = [cols.index(f"{b}.{c}") for b in model.body_names for c in "xyz"]
    print(f"\nCrank-rocker, 10 s, dop853 1e-12, rocker's angle independent at t = 0: "
          f"{sim.stats['partition_switches']} switches, max |Δx| to dense {np.abs(out[:, idx] - ref[:, idx]).max():.1e} m, "
          f"largest violation.position {out[:, cols.index('violation.position')].max():.1e} m.")
    for line in sim.stats.get("partition_log", [])[:4]:
        print(f"  {line}")
    # parallelogram
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    coupler = model.spec.bodies[1].name  # file order (body_names is tree order)
    for label, kw in (("defaults (rk4, dt = 0.01)", {}),
                      ("dop853 1e-10", {"integrator": "dop853", "rtol": 1e-10, "atol": 1e-10})):
        sim = Simulation(model, Settings(formulation="embedding", t_end=10.0, **kw))
        rows, cols, ended = [], None, "ran to 10 s"
        try:
            for chunk in sim.run():
                cols = chunk.columns
                rows.append(chunk.rows)
        except SimulationError as exc:
            ended = f"exit 3: {exc}"
        rows = np.vstack(rows)
        quat = rows[:, [cols.index(f"{coupler}.q{k}") for k in range(4)]]
        angle = float((2 * np.arccos(np.clip(np.abs(quat[:, 0]), 0, 1))).max())
        print(f"\nParallelogram four-bar, {label}: coupler's largest rotation {angle:.1e} rad over "
              f"{rows[-1, 0]:.4g} s; {ended}")
    print()


if __name__ == "__main__":
    raise SystemExit(main())
