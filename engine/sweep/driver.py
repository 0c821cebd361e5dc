"""Running a sweep: :func:`run_sweep` hands the cases to this machine's cores (or to a
Dask client, :mod:`.local`), each to run in a process of its own under the per-case
time limit (:mod:`.runner`), writes every finished case's
trajectory to ``DIR/runs/`` and rewrites ``DIR/summary.parquet`` as cases finish.  Run
again on the same ``DIR`` it skips the cases whose rows are complete."""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import config
from .cases import PreparedCase, prepare_cases
from .cluster import default_workers
from .local import executor_for
from .spec import SweepSpec, load_sweep, sweep_from_dict
from .runner import INJECTIONS
from .spec import SweepError
from .storage import (HEAD_COLUMNS, TAIL_COLUMNS, WORKER_DIED, atomic_write, complete_records, read_summary,
                      remove_stale_temporaries, summary_frame, trajectory_path, write_summary, write_trajectory)

@dataclass
class Progress:
    """What a progress display needs; handed to the ``progress`` callback."""

    total: int
    done: int = 0  # finished this session (ok or failed)
    failed: int = 0  # of which failed (simulation failure or task error)
    running: int = 0  # cases executing on a worker now
    skipped: int = 0  # complete from an earlier session (resume)
    refused: int = 0
    started: float = field(default_factory=time.perf_counter)
    to_compute: int = 0

    @property
    def eta(self) -> float | None:
        """Seconds left, from the mean rate so far (None before the first case)."""
        if self.done == 0:
            return None
        rate = self.done / max(time.perf_counter() - self.started, 1e-9)
        return (self.to_compute - self.done) / rate


def run_sweep(spec: SweepSpec | str | Path | dict, client=None, out: str | Path | None = None, *,
              cluster: str = "local", workers: int | None = None, threads_per_worker: int = 1, resume: bool = True,
              progress: Callable[[Progress], None] | None = None, cancel=None,
              on_start: Callable[[Any, list[PreparedCase], int], None] | None = None,
              retries: int = 1, poll: float = 0.25, case_timeout: float | None | str = "spec",
              inject: dict[int, str] | None = None):
    """Run a sweep and return its summary (a pandas DataFrame, one row per case).

    ``spec``: a :class:`SweepSpec`, a sweep file's path, or a parsed sweep document.
    ``client``: a ``distributed.Client`` whose workers run the cases; without one,
    ``cluster="local"`` runs ``workers`` cases at a time on this machine without Dask
    (default: the cores / ``threads_per_worker``), ``cluster="dask"`` starts a
    ``LocalCluster`` of ``workers`` processes for this call (its dashboard).
    ``out``: the results directory (``summary.parquet``, ``runs/``); with it the sweep
    resumes (unless ``resume`` is false): complete cases of an earlier run with the same
    case definition are read back, not computed again.  ``progress(Progress)`` is called
    as cases start and finish; ``cancel`` (a ``threading.Event``) stops the sweep (the
    summary then holds the cases finished so far).  ``on_start(executor, cases,
    to_compute)`` is called once the workers are up (:mod:`.local`; the CLI prints
    ``executor.describe()``: the scheduler and its dashboard on Dask).

    Faults (docs/sweeps.md, "Faults"): every case runs in a runner process of its
    worker.  ``case_timeout``: seconds a case may take (numba's compiling excluded) before
    it is stopped and recorded ``failed`` (``fault = "time limit"``); the default is the
    sweep file's ``case_timeout`` (none there: no limit), None lifts it.  A case whose
    process is killed is run again, ``1 + retries`` times in all, then recorded
    ``failed`` (``fault = "killed"``); so is a case whose Dask worker died each time
    Dask ran it (``fault = "worker died"``; the scheduler's ``allowed-failures``).  An
    exception in a task is retried ``retries`` times.  ``inject``: case index -> a fault
    of :data:`.runner.INJECTIONS` that case provokes, to check a deployment
    (``kill-worker`` only where a Dask worker runs the case)."""
    if isinstance(spec, (str, Path)):
        spec = load_sweep(spec)
    elif isinstance(spec, dict):
        spec = sweep_from_dict(spec)
    if case_timeout == "spec":
        case_timeout = spec.case_timeout
    if case_timeout is not None and not (isinstance(case_timeout, (int, float)) and case_timeout > 0
                                         and math.isfinite(case_timeout)):
        raise SweepError("case_timeout", f"must be a number of seconds > 0 (got {case_timeout!r})")
    inject = dict(inject or {})
    for i, kind in inject.items():
        if kind not in INJECTIONS:
            raise SweepError("inject", f"case {i}: unknown fault {kind!r} (one of: {', '.join(INJECTIONS)})")
        if not (isinstance(i, int) and 0 <= i < len(spec.cases)):
            raise SweepError("inject", f"no case {i} (the sweep has cases 0..{len(spec.cases) - 1})")
        if kind == "kill-worker" and client is None and cluster != "dask":
            raise SweepError("inject", f"case {i}: 'kill-worker' kills a Dask worker; without Dask the sweep's "
                                       "own process runs the cases (start a LocalCluster or give a scheduler)")
    # the local runners start now: they import the engine while the cases are prepared
    if client is None and cluster == "local" and spec.cases:
        executor = executor_for(None, cluster, min(workers or default_workers(threads_per_worker), len(spec.cases)),
                                threads_per_worker)
    else:
        executor = None
    unwritten = False  # cases finished since the summary was last written
    try:
        prepared = prepare_cases(spec)
        session = uuid.uuid4().hex[:12]
        out_dir = Path(out) if out is not None else None
        fmt = spec.trajectories
        summary_path = out_dir / "summary.parquet" if out_dir else None
        if out_dir is not None:
            (out_dir / "runs").mkdir(parents=True, exist_ok=True)
            for d in (out_dir, out_dir / "runs"):  # left by a sweep killed while writing
                remove_stale_temporaries(d)

        records: dict[int, dict] = {}
        keep_columns: list[str] = []

        def note_columns(res: dict):
            for k in res:
                if k not in keep_columns and k not in HEAD_COLUMNS and k not in TAIL_COLUMNS and k not in (
                        "columns", "data", "csv", "params"):
                    keep_columns.append(k)

        # resume: complete rows of an earlier session whose case is unchanged
        previous = read_summary(summary_path) if (out_dir is not None and resume) else None
        if previous is not None:
            records.update(complete_records(prepared, previous, out_dir, fmt, spec.parameters, case_timeout))
            keep_columns += [k for k in previous.columns
                             if not k.startswith("param.") and k not in HEAD_COLUMNS and k not in TAIL_COLUMNS]

        state = Progress(total=len(prepared), skipped=len(records))
        for pc in prepared:
            if pc.refused is not None:
                records[pc.index] = {"case": pc.index, "status": "refused", "exit_status": 2, "message": pc.refused,
                                     "params": dict(pc.case.params), "t_final": math.nan, "rows": 0,
                                     "wall_time": math.nan, "worker": None, "session": session,
                                     "finished_at": time.time(), "case_key": pc.key}
                state.refused += 1
        todo = [pc for pc in prepared if pc.index not in records]
        state.to_compute = len(todo)

        def flush():
            if summary_path is not None:
                write_summary(summary_path, summary_frame(records, spec.parameters, keep_columns))

        if not todo and executor is not None:
            executor.close()
            executor = None
        elif todo and executor is None:
            executor = executor_for(client, cluster, workers, threads_per_worker)
        if on_start is not None:
            on_start(executor, prepared, len(todo))
        flush()
        if not todo:
            return summary_frame(records, spec.parameters, keep_columns)
        futures = {}
        for pc in todo:
            f = executor.submit(pc.doc, pc.settings, spec.keep, fmt, case_timeout=case_timeout, attempts=1 + retries,
                                fault=inject.get(pc.index), retries=retries,
                                key=f"linkwork-case-{pc.index}-{pc.key}-{session}")
            futures[f] = pc
        pending = set(futures)
        last_running = 0.0
        last_flush = time.perf_counter()
        if progress:
            progress(state)
        while pending:
            if cancel is not None and cancel.is_set():
                executor.cancel(list(pending))
                break
            finished = executor.wait_first(list(pending), poll)
            for f in list(finished):
                if f.status not in ("finished", "error", "cancelled"):
                    # its result was lost with its worker (a case that killed it) just after it
                    # finished: Dask computes it again
                    finished.discard(f)
                    continue
                pending.discard(f)
                pc = futures[f]
                rec = {"case": pc.index, "params": dict(pc.case.params), "session": session, "case_key": pc.key}
                if f.status == "finished":
                    try:
                        res = f.result()
                    except Exception as exc:  # the result could not be fetched
                        res = {"status": "error", "exit_status": 1, "message": f"{type(exc).__name__}: {exc}"}
                else:
                    exc = f.exception()
                    res = {"status": "error", "exit_status": 1,
                           "message": f"{type(exc).__name__}: {exc}" if exc is not None else f.status,
                           "rows": 0, "t_final": math.nan, "wall_time": math.nan, "worker": None,
                           "case_timeout": case_timeout}
                    if type(exc).__name__ == "KilledWorker":
                        res.update(status="failed", exit_status=3, fault=WORKER_DIED,
                                   message=_worker_died(exc))
                f.release()
                try:  # a trajectory that cannot be written fails its case; the sweep goes on
                    if out_dir is not None and res.get("csv") is not None:
                        text = res["csv"]
                        atomic_write(trajectory_path(out_dir, pc.index, fmt),
                                     lambda tmp: tmp.write_text(text, encoding="utf-8", newline="\n"))
                    elif out_dir is not None and res.get("data") is not None:
                        write_trajectory(trajectory_path(out_dir, pc.index, fmt), res["columns"], res["data"], fmt)
                except OSError as exc:
                    res = {**res, "status": "failed", "exit_status": 3,
                           "message": f"writing {trajectory_path(out_dir, pc.index, fmt)} failed: "
                                      f"{exc.strerror or exc}"}
                note_columns({k: v for k, v in res.items() if k not in ("status", "exit_status", "message")})
                rec.update({k: v for k, v in res.items() if k not in ("columns", "data", "csv")})
                rec["finished_at"] = time.time()
                records[pc.index] = rec
                state.done += 1
                if rec["status"] != "ok":
                    state.failed += 1
            if finished:
                unwritten = True
                if out_dir is not None:
                    with open(out_dir / "sweep.log", "a", encoding="utf-8") as log:
                        for f in finished:
                            r = records[futures[f].index]
                            log.write(json.dumps({"session": session, "case": r["case"], "status": r["status"],
                                                  "worker": r.get("worker"), "wall_time": r.get("wall_time")})
                                      + "\n")
            now = time.perf_counter()
            if unwritten and now - last_flush >= config.SWEEP_SUMMARY_INTERVAL:
                flush()
                unwritten, last_flush = False, now
            if progress and (finished or now - last_running > 1.0):
                if now - last_running > 0.5:
                    last_running = now
                    try:
                        state.running = executor.running(list(pending))
                    except Exception:  # pragma: no cover - scheduler unreachable for a moment
                        pass
                progress(state)
        unwritten = False
        flush()
        return summary_frame(records, spec.parameters, keep_columns)
    finally:
        try:
            if unwritten:  # interrupted (Ctrl-C, an exception): the cases finished are kept
                flush()
        finally:
            if executor is not None:
                executor.close()


def _worker_died(exc) -> str:
    """The message of a case whose Dask worker died each time it ran it (Dask's
    ``KilledWorker``: the scheduler gave up after ``allowed-failures`` + 1 deaths)."""
    n = getattr(exc, "allowed_failures", None)
    last = getattr(getattr(exc, "last_worker", None), "address", None)
    times = f"{n + 1} times" if isinstance(n, int) else "each time it ran it"
    return (f"the Dask worker process running the case died {times} (killed by the operating system -- the "
            "out-of-memory killer sends SIGKILL -- or crashed), and Dask gave up on it (KilledWorker"
            + (f"; the last worker was {last}" if last else "") + ")")
