"""The 48-case slider-crank sweep, before and after, alternated round by round.

    python benchmarks/sweep_before_after.py --before PYTHONPATH [--rounds 3] [--workers 2]

Each round runs ``linkwork sweep resources/sweeps/slider-crank-48.sweep.json --out DIR
--workers N --quiet`` three ways, each into a fresh directory: the checkout found on
``PYTHONPATH`` given with ``--before`` (its default), and this tree on its own cores (the
default) and on a Dask ``LocalCluster`` (``--dask``).  Every case must be ``ok`` (exit
status 0).  Prints the wall times and the ratios; each checkout keeps its own warm numba
cache (the cache directory is keyed by the engine's sources)."""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "resources" / "sweeps" / "slider-crank-48.sweep.json"


def timed(pythonpath: str | None, extra: list[str], workers: int) -> float:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "linkwork.engine.cli", "sweep", str(SWEEP), "--out", out,
               "--workers", str(workers), "--quiet"] + extra
        t = time.perf_counter()
        r = subprocess.run(cmd, env=env, cwd="/", capture_output=True, text=True)
        wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} (PYTHONPATH={pythonpath}): exit {r.returncode}\n{r.stderr}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="PYTHONPATH",
                    help="where the earlier checkout's linkwork package is imported from")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    ways = [("before (its default)", args.before, []), ("after, local workers", None, []),
            ("after, --dask", None, ["--dask"])]
    print(f"| round | {' | '.join(w[0] for w in ways)} | before / after local | before / after --dask |")
    print("|---|" + "---|" * (len(ways) + 2))
    for r in range(1, args.rounds + 1):
        walls = [timed(pp, extra, args.workers) for _, pp, extra in ways]
        print(f"| {r} | " + " | ".join(f"{w:.1f} s" for w in walls)
              + f" | {walls[0] / walls[1]:.1f} | {walls[0] / walls[2]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
