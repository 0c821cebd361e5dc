"""Where a sweep's cases run: on this machine without Dask (:class:`LocalExecutor`, the
default), or on a Dask client (:class:`DaskExecutor`: a scheduler given by address, or
a ``LocalCluster`` asked for).  Both hand :func:`.driver.run_sweep` the same few
operations: submit a case, wait for the first to finish, cancel, count those running.

Without Dask each of ``workers`` threads of the sweep's process takes a case, hands it
to a runner process of its own (:mod:`.runner`: the same isolation, time limit and
retries as on a Dask worker) and waits for its rows.  What it saves is fixed cost: no
scheduler and worker processes to start (a ``LocalCluster`` takes seconds), no task
serialisation, and the runners, started at once, import the engine and load the
kernels while the cases are prepared."""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

from .cluster import default_workers, worker_environment
from .runner import PoolClosed, RunnerPool, run_isolated


class LocalFuture:
    """One submitted case, as the driver reads it: ``status`` is ``"pending"``,
    ``"finished"``, ``"error"`` or ``"cancelled"``, as a Dask future's."""

    def __init__(self, future, key: str):
        self._future = future
        self.key = key

    @property
    def status(self) -> str:
        f = self._future
        if f.cancelled():
            return "cancelled"
        if not f.done():
            return "pending"
        return "error" if f.exception() is not None else "finished"

    def result(self) -> Any:
        return self._future.result()

    def exception(self) -> BaseException | None:
        return self._future.exception()

    def release(self) -> None:
        pass


class LocalExecutor:
    """``workers`` cases at a time, each in a runner process started for this sweep with
    ``threads_per_worker`` numba threads (:func:`.cluster.worker_environment`)."""

    kind = "local"

    def __init__(self, workers: int | None = None, threads_per_worker: int = 1):
        self.workers = workers or default_workers(threads_per_worker)
        self.pool = RunnerPool(worker_environment(threads_per_worker))
        self.pool.start(self.workers)  # importing the engine while the driver gets ready
        self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="linkwork-sweep-worker")
        self._running = 0
        self._lock = threading.Lock()
        self._names = threading.local()
        self._count = 0

    def _worker(self) -> str:
        """This thread's worker name, ``local-1`` ... ``local-N``."""
        name = getattr(self._names, "name", None)
        if name is None:
            with self._lock:
                self._count += 1
                name = self._names.name = f"local-{self._count}"
        return name

    def submit(self, *args, key: str, retries: int = 0, **kwargs) -> LocalFuture:
        """:func:`.runner.run_isolated` (``args``, ``kwargs``) on a free thread; an
        exception in it is retried ``retries`` times, as Dask retries a task."""

        def task():
            with self._lock:
                self._running += 1
            try:
                for attempt in range(retries + 1):
                    try:
                        return run_isolated(*args, pool=self.pool, worker=self._worker(), **kwargs)
                    except PoolClosed:
                        raise
                    except Exception:
                        if attempt == retries:
                            raise
            finally:
                with self._lock:
                    self._running -= 1

        return LocalFuture(self._threads.submit(task), key)

    def wait_first(self, futures: list[LocalFuture], timeout: float) -> set[LocalFuture]:
        """Those of ``futures`` finished within ``timeout`` seconds of the first finishing."""
        by_inner = {f._future: f for f in futures}
        done, _ = wait_futures(list(by_inner), timeout=timeout, return_when=FIRST_COMPLETED)
        return {by_inner[f] for f in done}

    def cancel(self, futures: list[LocalFuture]) -> None:
        """Drop the cases not started and kill the runners of those running."""
        for f in futures:
            f._future.cancel()
        self.pool.close(busy=True)

    def running(self, futures: list[LocalFuture]) -> int:
        with self._lock:
            return self._running

    def describe(self) -> str:
        return f"{self.workers} local worker{'s' if self.workers != 1 else ''} (no Dask)"

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)
        self.pool.close(busy=True)


class DaskExecutor:
    """A Dask client's workers; ``own``: a ``LocalCluster`` this sweep started (closed
    with it)."""

    kind = "dask"

    def __init__(self, client, own_cluster=None):
        self.client = client
        self._own = own_cluster

    def submit(self, *args, key: str, retries: int = 0, **kwargs):
        return self.client.submit(run_isolated, *args, pure=False, retries=retries, key=key, **kwargs)

    def wait_first(self, futures: list, timeout: float) -> set:
        from distributed import wait

        try:
            return set(wait(futures, timeout=timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:
            return set()

    def cancel(self, futures: list) -> None:
        self.client.cancel(futures)

    def running(self, futures: list) -> int:
        # the scheduler's "processing" includes tasks queued on a busy worker
        proc = self.client.processing()
        live = {f.key for f in futures}
        return min(sum(1 for ks in proc.values() for k in ks if k in live), sum(self.client.nthreads().values()))

    def describe(self) -> str:
        return (f"Dask scheduler {self.client.scheduler.address}, {len(self.client.nthreads())} workers; "
                f"dashboard {self.client.dashboard_link}")

    def close(self) -> None:
        if self._own is not None:
            self.client.close()
            self._own.close()


def executor_for(client, cluster: str, workers: int | None, threads_per_worker: int):
    """The executor of a sweep: ``client`` when given, else a ``LocalCluster``
    (``cluster="dask"``) or the local threads (``cluster="local"``)."""
    if client is not None:
        return DaskExecutor(client)
    if cluster == "dask":
        from distributed import Client

        from .cluster import local_cluster

        own = local_cluster(workers, threads_per_worker)
        return DaskExecutor(Client(own), own)
    if cluster != "local":
        raise ValueError(f"cluster must be 'local' or 'dask' (got {cluster!r})")
    return LocalExecutor(workers, threads_per_worker)
