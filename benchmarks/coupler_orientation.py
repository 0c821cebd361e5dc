"""Orientation error of a body that must only translate (the parallelogram's coupler).

The parallelogram four-bar (``resources/examples/parallelogram-fourbar.mech.json``,
paper 000 section 4.3) keeps its coupler ``B`` parallel to the ground on its assembly
branch: its orientation must stay the identity.  A formulation that switches branch at
one of the singular (flat) configurations turns it.  For a results CSV this prints the
largest rotation angle of the body over the run, ``2 atan2(|q_vec|, |q0|)`` from the
contract's quaternion columns, with the run's worst position violation and energy drift:

    python benchmarks/coupler_orientation.py RUN.csv [--body B]
    python benchmarks/coupler_orientation.py --acceptance [--t-end 10]

``--acceptance`` runs ``linkwork run`` on the four-bar for every formulation at its
defaults and ``dca``/``hdca`` with dop853 at 1e-10, and prints exit status, the time
reached and the largest angle (the pipeline monitor's acceptance: exit 3, or within
1e-6 rad over the run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine.results import read_csv  # noqa: E402

FOURBAR = ROOT / "resources" / "examples" / "parallelogram-fourbar.mech.json"
DOP853 = ["--integrator", "dop853", "--rtol", "1e-10", "--atol", "1e-10"]
#: the acceptance runs: every formulation at its defaults, and the ODE formulations that
#: must also be judged with an error-controlled integrator
RUNS = (("dense", []), ("dca", []), ("hdca", []), ("index3", []), ("rcr", []), ("embedding", []),
        ("dca", DOP853), ("hdca", DOP853), ("rcr", DOP853), ("embedding", DOP853))


def orientation_error(path, body: str = "B") -> dict:
    """Largest rotation angle [rad] of ``body`` from the identity over the rows of ``path``,
    the time it occurs, the time reached, worst position violation and energy drift."""
    cols, rows = read_csv(path)
    if rows.shape[0] == 0:
        return {"rows": 0}
    q = rows[:, [cols.index(f"{body}.q{i}") for i in range(4)]]
    ang = 2.0 * np.arctan2(np.linalg.norm(q[:, 1:], axis=1), np.abs(q[:, 0]))
    e = rows[:, cols.index("energy.total")]
    k = int(np.argmax(ang))
    return {"rows": rows.shape[0], "t_last": float(rows[-1, 0]), "max_angle": float(ang[k]),
            "t_max_angle": float(rows[k, 0]),
            "max_position_violation": float(rows[:, cols.index("violation.position")].max()),
            "energy_drift": float(np.abs(e - e[0]).max())}


def _acceptance(t_end: float, only: list[str] | None = None) -> int:
    from linkwork.engine.formulations import REGISTRY

    print(f"Parallelogram four-bar, {t_end:g} s: `linkwork run` per formulation.\n")
    print("| formulation | options | exit | t reached [s] | max coupler angle [rad] | worst position violation [m] "
          "| energy drift [J] | wall [s] |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for form, opts in RUNS:
            if form not in REGISTRY or (only and form not in only):
                continue
            out = Path(tmp) / f"{form}.csv"
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(FOURBAR), "--formulation", form,
                                "--t-end", str(t_end), "--out", str(out), *opts], capture_output=True, text=True,
                               cwd=ROOT)
            wall = time.perf_counter() - t0
            e = orientation_error(out)
            good = r.returncode == 3 or (r.returncode == 0 and e["max_angle"] <= 1e-6)
            ok &= good
            print(f"| {form} | {' '.join(opts) or 'defaults'} | {r.returncode} | {e.get('t_last', 0):.2f} | "
                  f"{e.get('max_angle', float('nan')):.2e} | {e.get('max_position_violation', float('nan')):.1e} | "
                  f"{e.get('energy_drift', float('nan')):.1e} | {wall:.1f} |", flush=True)
            for line in r.stderr.splitlines():
                if "simulation failed" in line or "health:" in line:
                    print(f"|  | {line.strip()[:400]} |||||||")
    print("\nacceptance (exit 3, or exit 0 within 1e-6 rad):", "met" if ok else "NOT met")
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", help="results CSV")
    ap.add_argument("--body", default="B", help="the body that must not rotate [B, the coupler]")
    ap.add_argument("--acceptance", action="store_true", help="run every formulation on the four-bar")
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--only", help="with --acceptance: comma-separated formulations [every registered one]")
    args = ap.parse_args(argv)
    if args.acceptance:
        return _acceptance(args.t_end, args.only.split(",") if args.only else None)
    if not args.csv:
        ap.error("give a CSV or --acceptance")
    e = orientation_error(args.csv, args.body)
    print(f"{args.csv}: {e['rows']} rows to t = {e.get('t_last', 0):.4g} s; largest rotation of {args.body} "
          f"{e.get('max_angle', float('nan')):.3e} rad (at t = {e.get('t_max_angle', float('nan')):.4g} s); "
          f"worst position violation {e.get('max_position_violation', float('nan')):.2e} m; energy drift "
          f"{e.get('energy_drift', float('nan')):.2e} J")
    return 0


if __name__ == "__main__":
    sys.exit(main())
