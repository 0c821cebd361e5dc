"""The Dask cluster a sweep starts when it is given none: worker processes on this
machine's loopback interface, each running one case at a time with the numba threads
it is given."""

from __future__ import annotations

import os

def default_workers(threads_per_worker: int = 1) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, threads_per_worker))


def worker_environment(threads_per_worker: int) -> dict:
    """The worker processes' environment: numba (and OpenMP, OpenBLAS) get
    ``threads_per_worker`` threads, so N workers use N x threads cores, not N x cores.
    OpenMP's threads keep their default wait policy (spin, then sleep) when a worker has
    more than one: with ``OMP_WAIT_POLICY=PASSIVE`` every parallel region wakes sleeping
    threads, and two threads made a dca evaluation slower than one (1024 bodies: 627 us
    on one thread, 661-672 us on two passive ones, 368-370 us on two default ones;
    docs/performance.md, "OpenMP's wait policy").  With one thread there is no team to wake."""
    n = max(1, threads_per_worker)
    env = {"NUMBA_NUM_THREADS": str(n), "OMP_NUM_THREADS": str(n), "OPENBLAS_NUM_THREADS": "1"}
    if n == 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def local_cluster(workers: int | None = None, threads_per_worker: int = 1):
    """A ``LocalCluster`` of worker processes on this machine's loopback interface (every
    listening socket, the workers' HTTP endpoints included, on 127.0.0.1): one
    case at a time per worker, ``threads_per_worker`` numba threads for it.  A task whose
    worker dies twice is given up (``allowed-failures`` 1: Dask retries it once).  A
    worker's death counts against every task the scheduler had handed to it, running or
    waiting; ``worker-saturation`` 1.0 (Dask's default is 1.1, which gives a one-thread
    worker a second, waiting case) hands a worker only the case it runs, so a case that
    kills its worker does not put a count on a case waiting behind it.  (Dask queues
    tasks this way only in groups of more than twice as many tasks as worker threads; a
    smaller sweep is handed out whole at the start.  Measured, 3 rounds of 8 cases on 2
    workers, one case killing its worker twice: no other case failed with 1.1 or 1.0 --
    a waiting case would need a count from each of two deaths.)"""
    import dask
    from distributed import LocalCluster

    n = workers or default_workers(threads_per_worker)
    env = worker_environment(threads_per_worker)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.scheduler.worker-saturation": 1.0,
                          "distributed.nanny.pre-spawn-environ": env}):
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                            # the scheduler's HTTP server runs in any case (health, metrics; the
                            # dashboard's pages when bokeh is installed): on loopback, a free port
                            dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0", env=env,
                            silence_logs=40)
