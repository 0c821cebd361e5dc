"""``rcr`` against ``dense`` on random mechanisms (the acceptance figures).

For each case both formulations run ``--t-end`` seconds with dop853 at
rtol = atol = 1e-12 (output every 0.01 s; dense projecting, its default with
loops) and the table gives the largest body-position and total-energy
differences, rcr's largest ``violation.position``, its independent speeds and
partition switches.  Cases: ``engine.generators.random_mechanism`` (every joint
type, random axes and inertias, springs, dampers, joint torques) with 0-3
loop-closing joints of spherical, universal or revolute type -- trees, single and
coupled loops, spatial joints -- and spatial ladders of 1-6 cells.

    python benchmarks/rcr_agreement.py [--seeds 200-249] [--ladders 1-6] [--t-end 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine import generators as gen  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402


def _shape(seed: int) -> tuple[int, int]:
    """(bodies, loops): 3-9 bodies, 0-3 loops, cycling so every pair occurs."""
    return 3 + seed % 7, seed % 4


def _run(model, formulation, t_end):
    sim = Simulation(model, Settings(formulation=formulation, integrator="dop853", rtol=1e-12, atol=1e-12,
                                     dt=0.01, t_end=t_end))
    cols, rows = sim.run_all()
    idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    return rows[:, idx], rows[:, cols.index("energy.total")], rows[:, cols.index("violation.position")], sim


def compare(spec, t_end: float, formulation: str = "rcr") -> dict:
    """One case: ``formulation`` and dense over ``t_end`` (also used by embedding_agreement.py)."""
    model = build_model(spec)
    out = {"name": spec.name, "nb": model.nb, "loops": model.ncut, "nv": model.nv}
    try:
        xd, ed, _, _ = _run(model, "dense", t_end)
    except Exception as exc:  # noqa: BLE001 - the table says what failed
        out["error"] = f"dense failed: {exc}"
        return out
    try:
        xr, er, viol, sim = _run(model, formulation, t_end)
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{formulation} failed: {exc}"
        return out
    n = min(len(xr), len(xd))
    out.update(dx=float(np.abs(xr[:n] - xd[:n]).max()), de=float(np.abs(er[:n] - ed[:n]).max()),
               viol=float(viol.max()), ind=len(sim.formulation.independent_speeds),
               switches=sim.stats.get("partition_switches", 0), rows=n,
               aggregated=len(getattr(sim.formulation, "aggregates", ())))
    return out


def _range(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="200-249", help="random_mechanism seeds, A-B or a comma list")
    ap.add_argument("--ladders", default="1-6", help="ladder cell counts")
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args(argv)
    specs = [gen.random_mechanism(s, *_shape(s)) for s in _range(args.seeds)]
    specs += [gen.ladder(L) for L in _range(args.ladders)]
    table(specs, args.t_end, "rcr")
    return 0


def table(specs, t_end: float, formulation: str, aggregated: bool = False) -> None:
    """Print the comparison table of ``formulation`` against dense on ``specs`` and its
    summary line (``aggregated``: a column of embedding's aggregated bodies, and the
    summary counts trees, one and several aggregated bodies)."""
    t0 = time.perf_counter()
    print(f"{formulation} against dense, dop853 rtol = atol = 1e-12, {t_end:g} s (output every 0.01 s).\n")
    agg_h, agg_s = (" aggregated bodies | independent (in them)", "---|---|") if aggregated else \
        (" independent (loops)", "---|")
    print(f"| mechanism | bodies | loops | speeds |{agg_h} | switches | max |Δx| [m] | max |ΔE| [J] "
          f"| {formulation} violation.position |")
    print("|---|---|---|---|" + agg_s + "---|---|---|---|")
    worst_x = worst_e = 0.0
    ok = failed = 0
    kinds = {"tree": 0, "one aggregated body": 0, "several aggregated bodies": 0}
    for spec in specs:
        r = compare(spec, t_end, formulation)
        if "error" in r:
            failed += 1
            print(f"| {r['name']} | {r['nb']} | {r['loops']} | {r['nv']} |{' |' if aggregated else ''} | | "
                  f"{r['error']} | | |", flush=True)
            continue
        kinds[["tree", "one aggregated body"][r["aggregated"]] if r["aggregated"] < 2
              else "several aggregated bodies"] += 1
        ok += (r["dx"] < 1e-8 and r["de"] < 1e-8)
        worst_x, worst_e = max(worst_x, r["dx"]), max(worst_e, r["de"])
        agg = f" {r['aggregated']} |" if aggregated else ""
        print(f"| {r['name']} | {r['nb']} | {r['loops']} | {r['nv']} |{agg} {r['ind']} | {r['switches']} | "
              f"{r['dx']:.1e} | {r['de']:.1e} | {r['viol']:.1e} |", flush=True)
    kind_text = "; " + ", ".join(f"{n} {k}" for k, n in kinds.items()) if aggregated else ""
    print(f"\n{ok} of {len(specs)} within 1e-8 m and 1e-8 J; {failed} failed; largest differences "
          f"{worst_x:.1e} m, {worst_e:.1e} J{kind_text} ({time.perf_counter() - t0:.0f} s)")

if __name__ == "__main__":
    raise SystemExit(main())
