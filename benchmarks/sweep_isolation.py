"""What running each sweep case in a runner process costs, against the alternatives
(docs/sweeps.md, "Faults"; engine/sweep/runner.py).

    python benchmarks/sweep_isolation.py [ROUNDS]

On one case of resources/sweeps/slider-crank-48.sweep.json (5 s, 501 rows, CSV), in
rounds that interleave the ways (the machine is shared: compare within a round):

* ``in process``: ``run_case`` in this process (a task on a Dask worker before the
  runner): no way to stop a case stuck in a kernel but killing the whole worker;
* ``runner, warm``: ``run_isolated`` with the runner already started (every case of a
  sweep but a worker's first and the first after a stopped one);
* ``new process per case``: a new runner for every case (start, import, kernel load,
  the case), what running each case in a fresh subprocess costs;
* once: a Dask worker restart (``Client.restart_workers``), the other way to stop a
  stuck case, and the memory (RSS) of a worker and of its runner.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(rounds: int = 5) -> None:
    from linkwork.engine.sweep import load_sweep, prepare_cases, run_case, run_isolated
    from linkwork.engine.sweep import runner as runner_mod

    spec = load_sweep(ROOT / "resources" / "sweeps" / "slider-crank-48.sweep.json")
    pc = prepare_cases(spec)[0]
    args = (pc.doc, pc.settings, spec.keep, "csv")
    run_case(*args)  # kernels loaded in this process
    run_isolated(*args)  # a warm runner in the pool
    times = {"in process": [], "runner, warm": [], "new process per case": []}
    for r in range(rounds):
        t = time.perf_counter()
        a = run_case(*args)
        times["in process"].append(time.perf_counter() - t)
        t = time.perf_counter()
        b = run_isolated(*args)
        times["runner, warm"].append(time.perf_counter() - t)
        runner_mod._POOL.close()
        t = time.perf_counter()
        c = run_isolated(*args)
        times["new process per case"].append(time.perf_counter() - t)
        assert a["csv"] == b["csv"] == c["csv"]
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items()), flush=True)
    for k, v in times.items():
        print(f"{k}: median {statistics.median(v):.3f} s (min {min(v):.3f}, max {max(v):.3f})")

    import psutil
    from distributed import Client

    from linkwork.engine.sweep import local_cluster

    cluster = local_cluster(workers=1)
    with Client(cluster) as client:
        client.submit(run_isolated, *args, pure=False).result()
        (addr, pid), = client.run(lambda: __import__("os").getpid()).items()
        worker = psutil.Process(pid)
        runner = [p for p in worker.children() if "runner import serve" in " ".join(p.cmdline())]
        print(f"RSS: Dask worker {worker.memory_info().rss / 2**20:.0f} MiB, its runner "
              f"{sum(p.memory_info().rss for p in runner) / 2**20:.0f} MiB")
        t = time.perf_counter()
        client.restart_workers([addr])
        client.wait_for_workers(1)
        restart = time.perf_counter() - t
        t = time.perf_counter()
        client.submit(run_isolated, *args, pure=False).result()
        print(f"Dask worker restart: {restart:.2f} s, then its first case {time.perf_counter() - t:.2f} s")
    cluster.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
