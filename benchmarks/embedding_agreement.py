"""``embedding`` against ``dense`` on random mechanisms (issue 19 acceptance, first line).

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

    python benchmarks/embedding_agreement.py [--seeds 200-259] [--ladders 1-6] [--t-end 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from engine import generators as gen  # noqa: E402
from rcr_agreement import _range, _shape, compare  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="200-259", help="random_mechanism seeds, A-B or a comma list")
    ap.add_argument("--ladders", default="1-6", help="ladder cell counts")
    ap.add_argument("--t-end", type=float, default=2.0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    specs = [gen.random_mechanism(s, *_shape(s)) for s in _range(args.seeds)]
    specs += [gen.ladder(L) for L in _range(args.ladders)]
    print(f"embedding against dense, dop853 rtol = atol = 1e-12, {args.t_end:g} s (output every 0.01 s).\n")
    print("| mechanism | bodies | loops | speeds | aggregated bodies | independent (in them) | switches "
          "| max |Δx| [m] | max |ΔE| [J] | embedding violation.position |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst_x = worst_e = 0.0
    ok = failed = 0
    kinds = {"tree": 0, "one aggregated body": 0, "several aggregated bodies": 0}
    for spec in specs:
        r = compare(spec, args.t_end, "embedding")
        if "error" in r:
            failed += 1
            print(f"| {r['name']} | {r['nb']} | {r['loops']} | {r['nv']} | | | | {r['error']} | | |", flush=True)
            continue
        kinds["tree" if r["aggregated"] == 0 else "one aggregated body" if r["aggregated"] == 1
              else "several aggregated bodies"] += 1
        ok += (r["dx"] < 1e-8 and r["de"] < 1e-8)
        worst_x, worst_e = max(worst_x, r["dx"]), max(worst_e, r["de"])
        print(f"| {r['name']} | {r['nb']} | {r['loops']} | {r['nv']} | {r['aggregated']} | {r['ind']} | "
              f"{r['switches']} | {r['dx']:.1e} | {r['de']:.1e} | {r['viol']:.1e} |", flush=True)
    print(f"\n{ok} of {len(specs)} within 1e-8 m and 1e-8 J; {failed} failed; largest differences "
          f"{worst_x:.1e} m, {worst_e:.1e} J; " + ", ".join(f"{n} {k}" for k, n in kinds.items())
          + f" ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
