"""A formulation's cost per right-hand side against the chain's size, one thread: the
whole ``rhs`` and its kernel alone (through the compiled entry point, no Python around
it), µs per call and per body, and each size's per-body cost against the median of the
sizes from 64 bodies on (whether the cost per body is flat, within ±15 %).  Small sizes show
the fixed cost per call, ``rhs`` minus kernel the Python around it.

    python benchmarks/fixed_cost.py [--formulation dca] [--sizes 1 16 64 128 256 512 1024] [--kinds spherical revolute]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402
import numpy as np  # noqa: E402

from linkwork.engine.studies.bench import chain_formulation  # noqa: E402
from linkwork.engine.studies.timing import time_call as _time_call  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formulation", default="dca", choices=["dca", "hdca"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64, 128, 256, 512, 1024])
    ap.add_argument("--kinds", nargs="+", default=["spherical", "revolute"])
    ap.add_argument("--rounds", type=int, default=3, help="best of this many timings of each")
    a = ap.parse_args(argv)
    numba.set_num_threads(1)
    print(f"`{a.formulation}`, one thread, us per right-hand side (best of {a.rounds})\n")
    print("| chain | n | rhs | kernel alone | rhs per body | from the median |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in a.kinds:
        rows = []
        for n in a.sizes:
            f, y = chain_formulation(a.formulation, n, kind, 1)
            out = np.empty_like(y)
            k = f._kernel
            f.rhs(0.0, y)  # binds the entry point
            t_rhs = min(_time_call(lambda: f.rhs(0.0, y)) for _ in range(a.rounds)) * 1e6
            t_k = min(_time_call(lambda: k.entry(k.desc, k.proto, y, out)) for _ in range(a.rounds)) * 1e6
            rows.append((n, t_rhs, t_k))
        flat = [t / n for n, t, _ in rows if n >= 64]
        med = float(np.median(flat)) if flat else float("nan")
        for n, t_rhs, t_k in rows:
            dev = f"{(t_rhs / n / med - 1) * 100:+.1f} %" if n >= 64 else "-"
            print(f"| {kind} | {n} | {t_rhs:.2f} | {t_k:.2f} | {t_rhs / n:.3f} | {dev} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
