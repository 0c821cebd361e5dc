"""Every bundled example under every formulation, 10 s at the defaults, as a user runs it.

    python benchmarks/every_example.py [--t-end 10] [--jobs 2] [--markdown FILE]

Each cell is one ``linkwork run FILE --formulation F --t-end 10`` (a process of its own,
the file's recommended settings as the command line takes them): exit 0, exit 2 (a gear
the formulation cannot honour) or exit 3 with the time of the failure; below the table,
the worst position violation and the largest energy drift (conservative mechanisms) of
the exit-0 runs, from each run's health line.  The test suite asserts the same cells in
process (tests/engine/test_every_example.py); the 128-body chain is left out as there.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORMS = ("dense", "dca", "hdca", "index3", "rcr", "embedding")
HEALTH = re.compile(r"worst position violation ([0-9.e+-]+) m, (?:energy drift|energy change) [0-9.e+-]+ J"
                    r"(?: \(([0-9.e+-]+) of peak kinetic\))?")


def run(example: Path, form: str, t_end: float, out_dir: Path) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(example), "--formulation", form,
                        "--t-end", str(t_end), "--out", str(out_dir / f"{example.stem}.{form}.csv")],
                       capture_output=True, text=True, cwd=ROOT)
    cell = {"example": example.name.removesuffix(".mech.json"), "form": form, "exit": r.returncode,
            "wall": time.perf_counter() - t0, "stderr": r.stderr}
    m = re.search(r"failed at t = ([0-9.]+)", r.stderr)
    cell["t_fail"] = float(m.group(1)) if m else None
    m = HEALTH.search(r.stderr)
    if m:
        cell["violation"] = float(m.group(1))
        cell["drift"] = float(m.group(2)) if m.group(2) else None
    return cell


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    examples = [p for p in sorted((ROOT / "resources" / "examples").glob("*.mech.json"))
                if p.name != "chain-128-spherical.mech.json"]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        cells = list(pool.map(lambda a: run(a[0], a[1], args.t_end, Path(tmp)),
                              [(e, f) for e in examples for f in FORMS]))
    by = {(c["example"], c["form"]): c for c in cells}
    lines = [f"Every example x every formulation, {args.t_end:g} s at the defaults (`linkwork run`)", "",
             "| example | " + " | ".join(FORMS) + " |", "|---|" + "---|" * len(FORMS)]
    for e in sorted({c["example"] for c in cells}):
        row = []
        for f in FORMS:
            c = by[(e, f)]
            row.append({0: "0", 2: "2 (refused)"}.get(c["exit"], f"{c['exit']} at {c['t_fail']} s"
                                                      if c["t_fail"] is not None else str(c["exit"])))
        lines.append(f"| {e} | " + " | ".join(row) + " |")
    ok = [c for c in cells if c["exit"] == 0 and "violation" in c]
    drifts = [c["drift"] for c in ok if c.get("drift") is not None]
    lines += ["", f"exit 0: {len(ok)} of {len(cells)} runs; worst position violation among them "
                  f"{max(c['violation'] for c in ok):.2g} m; largest energy drift of a conservative one "
                  f"{max(drifts):.2g} of the peak kinetic energy; wall {sum(c['wall'] for c in cells):.0f} s "
                  f"in all ({args.jobs} at a time)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
