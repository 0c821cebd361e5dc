"""Check a finished sweep against ``linkwork run``, case by case.

    python benchmarks/sweep_check.py SWEEP.sweep.json DIR

For every case: write its mechanism document, run ``linkwork run`` on it with the
sweep's settings (a separate process, as a user would), and compare (1) the CSV
byte for byte with DIR/runs/case-NNNNN.csv and (2) every kept quantity in
DIR/summary.parquet with the same quantity computed from linkwork run's CSV,
with ==.  Prints the counts; exit status 1 on any difference."""

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from linkwork.engine.results import read_csv
from linkwork.engine.sweep import load_sweep, prepare_cases, quantities, read_summary

OPTION = {"formulation": "--formulation", "integrator": "--integrator", "dt": "--dt", "t_end": "--t-end",
          "rtol": "--rtol", "atol": "--atol", "penalty": "--penalty", "newton_iters": "--newton-iters",
          "newton_tol": "--newton-tol"}


def main(sweep_file: str, out: str) -> int:
    spec = load_sweep(sweep_file)
    df = read_summary(Path(out) / "summary.parquet")
    same_csv = same_q = checked = 0
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for pc in prepare_cases(spec):
            if pc.refused:
                continue
            mech = Path(tmp) / f"case{pc.index}.mech.json"
            mech.write_text(json.dumps(pc.doc))
            csv = Path(tmp) / f"case{pc.index}.csv"
            opts = [x for k, v in pc.settings.items() for x in (OPTION[k], str(v))]
            subprocess.run(["linkwork", "run", str(mech), *opts, "--out", str(csv), "--quiet"], check=False)
            checked += 1
            if (Path(out) / "runs" / f"case-{pc.index:05d}.csv").read_bytes() == csv.read_bytes():
                same_csv += 1
            else:
                bad.append((pc.index, "csv"))
            cols, rows = read_csv(csv)
            row = df[df["case"] == pc.index].iloc[0]
            want = quantities(cols, rows, spec.keep)
            if all(row[k] == v or (math.isnan(v) and math.isnan(row[k])) for k, v in want.items()):
                same_q += 1
            else:
                bad.append((pc.index, "quantities"))
    print(f"{len(df)} summary rows; {checked} cases run again with linkwork run: "
          f"{same_csv} trajectories byte-identical, {same_q} with every kept quantity equal "
          f"({len(want)} quantities per case); differences: {bad or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
