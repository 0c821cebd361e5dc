"""The cases of a sweep file one after another in this process (no Dask): the
reference wall time for docs/sweeps.md's LocalCluster figure.

    python benchmarks/sweep_serial.py resources/sweeps/slider-crank-48.sweep.json

One case is run first and not timed (numba loads the cached kernels), then every
case in turn through the same engine.sweep.run_case as a sweep's task, each
trajectory written as CSV (a temporary directory), as the sweep writes them."""

import sys
import tempfile
import time
from pathlib import Path

from linkwork.engine.sweep import load_sweep, prepare_cases, run_case


def main(path: str) -> None:
    spec = load_sweep(path)
    cases = [pc for pc in prepare_cases(spec) if pc.refused is None]
    t = time.perf_counter()
    run_case(cases[0].doc, cases[0].settings, spec.keep)
    warm = time.perf_counter() - t
    status = []
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        for pc in cases:
            res = run_case(pc.doc, pc.settings, spec.keep, "csv")
            (Path(tmp) / f"case-{pc.index:05d}.csv").write_text(res["csv"], encoding="utf-8")
            status.append(res["status"])
        wall = time.perf_counter() - t
    print(f"{len(cases)} cases one after another in one process: {wall:.1f} s wall "
          f"({wall / len(cases):.2f} s per case; warm-up case {warm:.1f} s not counted); "
          f"{status.count('ok')} ok")


if __name__ == "__main__":
    main(sys.argv[1])
