"""Responsiveness of the desktop application during a 128-link run (issue 6).

Runs ``tests/app/qt/test_responsiveness.py`` (under ``xvfb-run`` when there is
no display) ``--repeat`` times and prints, per repeat, the longest event-loop
stall and the slowdown of the run caused by the live plots and the 3-D view
against the same simulation run headless (targets: < 100 ms, < 10 %).  Run it on
a quiet machine; the load average is printed with each line.

    python benchmarks/gui_responsiveness.py [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "perf.jsonl"
        env = dict(os.environ, LINKWORK_PERF_LOG=str(log), QT_QPA_PLATFORM="")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               str(ROOT / "tests/app/qt/test_responsiveness.py")]
        if not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
            cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24"] + cmd
        for _ in range(args.repeat):
            r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
                return r.returncode
        rows = [json.loads(line) for line in log.read_text().splitlines()]
    print("| run | formulation | threads | t_end [s] | headless [s] | with GUI [s] | slowdown | "
          "longest stall | load avg |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for k, r in enumerate(rows, 1):
        print(f"| {k} | {r['formulation']} | {r['threads']} | {r['t_end']:g} | {r['headless_s']:.3f} | "
              f"{r['gui_s']:.3f} | {r['slowdown_percent']:.1f} % | {r['stall_ms']} ms | {r['load_average']:.2f} |")
    best = min(r["slowdown_percent"] for r in rows)
    print(f"\nbest slowdown {best:.1f} % (target < 10 %); worst stall {max(r['stall_ms'] for r in rows)} ms "
          "(target < 100 ms)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
