"""Each case of a sweep in a process of its own: a case can be stopped wherever it is, and a
case that kills its process costs only that process.

A sweep's task, :func:`run_isolated`, runs on a Dask worker but does not simulate there:
it hands the case to a *runner*, a child process of the worker that imports the engine
once and then runs the worker's cases one after another (:func:`serve`), and it reads
the case's rows back as they are computed (:func:`.task.simulate`'s events, at least
every ``config.SWEEP_CHUNK_INTERVAL`` seconds).  So the worker

* stops a case that exceeds the per-case time limit wherever it is -- in the middle of
  one long compiled kernel call too, which no cooperative check between chunks reaches:
  the runner is killed (SIGKILL), the rows it had handed over are kept, and the
  worker's next case starts a new runner;
* sees a case kill its process (the out-of-memory killer's SIGKILL, a crash in native
  code) and runs it again in a new runner, ``attempts`` times in all, then records it
  as failed, naming the signal, with the rows of the last attempt.

The time limit counts the case's wall time in its runner, except while numba compiles a
kernel (``numba:compile`` events stop the clock: a cold cache compiles for minutes, once,
and a limit meant for the simulation would otherwise stop every first case); loading
compiled kernels from the cache counts.  A new runner's start (importing the engine)
does not count.  A runner asks to be the out-of-memory killer's first choice
(``oom_score_adj``), so a case that exhausts the memory takes down its runner rather
than its Dask worker, and it dies with the worker that started it (Linux's
``PR_SET_PDEATHSIG``; elsewhere when it next reads or writes its pipes).

:func:`inject` makes a case stall or kill its process on purpose (``linkwork sweep
--inject-fault``, docs/sweeps.md "Faults"), to check that a deployment handles these
faults as described.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from .. import config
from .storage import KILLED, TIME_LIMIT
from .task import case_result, simulate, stack_rows, worker_name

#: injected faults (``--inject-fault CASE:KIND``): what the case does halfway through its run
INJECTIONS = {
    "stall": "its runner spins in a compiled loop that does not return, as a kernel that never finishes",
    "kill": "its runner sends itself SIGKILL, as the out-of-memory killer would",
    "kill-worker": "its runner sends SIGKILL to the Dask worker process running the case",
}


@dataclass
class Outcome:
    """What one attempt of a case in a runner came to."""

    kind: str = ""  # "result", "refused", "error" (an exception in the runner), "timeout", "died"
    columns: list = field(default_factory=list)
    parts: list = field(default_factory=list)  # result rows handed over so far
    result: dict | None = None  # kind "result": the runner's case_result (without data)
    text: str = ""  # kind "refused": the message; "error": the traceback
    returncode: int | None = None  # kind "died": the runner's exit status (-N: signal N)

    @property
    def t_reached(self) -> float | None:
        """Simulated time of the last row handed over (None before the first)."""
        rows = [p for p in self.parts if len(p)]
        return float(rows[-1][-1, 0]) if rows else None


class Runner:
    """One runner process and the pipes to it, seen from the worker."""

    def __init__(self, env: dict | None = None):
        """``env``: variables set in the runner's environment over this process's."""
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        code = f"from {__name__} import serve; serve({req_r}, {rep_w}, {os.getpid()})"
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(req_r, rep_w),
                                         stdin=subprocess.DEVNULL, env={**os.environ, **env} if env else None)
        except BaseException:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            raise
        os.close(req_r)
        os.close(rep_w)
        self.inbox = Connection(rep_r, writable=False)
        self.outbox = Connection(req_w, readable=False)
        self.ready = False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _wait_ready(self) -> None:
        deadline = time.perf_counter() + config.SWEEP_RUNNER_START_TIMEOUT
        while not self.ready:
            left = deadline - time.perf_counter()
            try:
                got = self.inbox.poll(max(0.0, min(left, 1.0)))
                msg = self.inbox.recv() if got else None
            except (EOFError, OSError):
                msg = None
                got = True
            if msg is not None and msg[0] == "ready":
                self.ready = True
            elif got or left <= 0:
                self.kill()
                why = (f"exit status {self.proc.returncode}" if got else
                       f"no answer in {config.SWEEP_RUNNER_START_TIMEOUT:g} s")
                raise RuntimeError(f"the sweep's runner process could not start ({why}; its errors are in the "
                                   "Dask worker's log)")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        for conn in (self.inbox, self.outbox):
            try:
                conn.close()
            except OSError:
                pass

    def run(self, case: dict, limit: float | None) -> Outcome:
        """Hand ``case`` to the runner and follow it to its end, its death or ``limit``
        seconds (compiling excluded), whichever comes first."""
        self._wait_ready()
        out = Outcome()
        try:
            self.outbox.send(case)
        except OSError:
            return self._died(out)
        spent, since, compiling = 0.0, time.perf_counter(), False
        while True:
            wait = 1.0
            if limit is not None and not compiling:
                left = limit - spent - (time.perf_counter() - since)
                if left <= 0:
                    self.kill()
                    self._drain(out)
                    out.kind = "timeout"
                    return out
                wait = min(left, 1.0)
            try:
                if not self.inbox.poll(wait):
                    continue
                msg = self.inbox.recv()
            except (EOFError, OSError):
                return self._died(out)
            if msg[0] == "compiling":
                now = time.perf_counter()
                if msg[1] and not compiling:
                    spent += now - since
                elif not msg[1] and compiling:
                    since = now
                compiling = msg[1]
            elif self._take(msg, out):
                return out

    @staticmethod
    def _take(msg: tuple, out: Outcome) -> bool:
        """Record one message from the runner; True when it ends the case."""
        kind = msg[0]
        if kind == "columns":
            out.columns = list(msg[1])
        elif kind == "rows":
            out.parts.append(msg[1])
        elif kind in ("result", "refused", "error"):
            out.kind = kind
            if kind == "result":
                out.result = msg[1]
            else:
                out.text = msg[1]
            return True
        return False

    def _drain(self, out: Outcome) -> None:
        """Read what the (dead) runner had sent: the rows before its end are kept."""
        try:
            while self.inbox.poll(0):
                msg = self.inbox.recv()
                if msg[0] in ("columns", "rows"):
                    self._take(msg, out)
        except (EOFError, OSError):
            pass

    def _died(self, out: Outcome) -> Outcome:
        self._drain(out)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # its pipe closed but it lives on: it is of no use now
            self.kill()
        out.kind = "died"
        out.returncode = self.proc.returncode
        return out


class PoolClosed(RuntimeError):
    """A runner was asked of a pool that was closed (the sweep is being stopped)."""


class RunnerPool:
    """A worker's runners, started as its cases ask for them and reused.  New runners are
    started from one long-lived thread: Linux sends the parent-death signal when the
    *thread* that started a child ends, and a Dask worker's task threads can end while the
    worker lives on.  ``env``: set in every runner's environment (a sweep without Dask
    gives its runners the thread counts a Dask worker's environment would)."""

    def __init__(self, env: dict | None = None):
        self._env = dict(env or {})
        self._idle: list[Runner] = []
        self._busy: set[Runner] = set()
        self._closed = False
        self._starting = 0  # runners asked for by start, not yet idle
        self._lock = threading.Condition()
        self._requests: queue.Queue = queue.Queue()
        self._starter: threading.Thread | None = None

    def acquire(self) -> Runner:
        with self._lock:
            while True:
                if self._closed:
                    raise PoolClosed("the sweep is stopping")
                while self._idle:
                    r = self._idle.pop()
                    if r.alive:
                        self._busy.add(r)
                        return r
                    r.close()
                if not self._starting:
                    break
                self._lock.wait()  # one started ahead is on its way
            self._ensure_starter()
        box: dict[str, Any] = {}
        done = threading.Event()
        self._requests.put((box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        runner = box["runner"]
        with self._lock:
            if self._closed:
                runner.close()
                raise PoolClosed("the sweep is stopping")
            self._busy.add(runner)
        return runner

    def start(self, n: int) -> None:
        """Start ``n`` runners now, without waiting for them: they join the idle ones."""
        with self._lock:
            self._ensure_starter()
            self._starting += n
        for _ in range(n):
            self._requests.put((None, None))

    def _ensure_starter(self) -> None:
        if self._starter is None or not self._starter.is_alive():
            self._starter = threading.Thread(target=self._start_runners, name="linkwork-sweep-runners",
                                             daemon=True)
            self._starter.start()

    def release(self, runner: Runner) -> None:
        """Take back a runner that finished its case (alive)."""
        with self._lock:
            self._busy.discard(runner)
            if not self._closed:
                self._idle.append(runner)
                return
        runner.close()

    def discard(self, runner: Runner) -> None:
        """Close a runner that died or was killed."""
        with self._lock:
            self._busy.discard(runner)
        runner.close()

    def _start_runners(self) -> None:
        while True:
            box, done = self._requests.get()
            if box is None:  # started ahead of a case (start)
                try:
                    runner = Runner(self._env)
                except Exception:  # noqa: BLE001 -- the case that asks for a runner sees it again
                    runner = None
                with self._lock:
                    self._starting -= 1
                    closed = self._closed
                    if runner is not None and not closed:
                        self._idle.append(runner)
                    self._lock.notify_all()
                if runner is not None and closed:
                    runner.close()
                continue
            try:
                box["runner"] = Runner(self._env)
            except BaseException as exc:  # noqa: BLE001 -- handed to the task that asked
                box["error"] = exc
            done.set()

    def close(self, *, busy: bool = False) -> None:
        """Close the idle runners; with ``busy`` also kill those running a case and refuse
        runners from now on (a sweep stopped: the cases they ran end as died)."""
        with self._lock:
            idle, self._idle = self._idle, []
            running = list(self._busy) if busy else []
            if busy:
                self._closed = True
                self._lock.notify_all()
        for r in idle + running:
            r.kill()
        for r in idle:
            r.close()


_POOL = RunnerPool()


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "lost"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with status {returncode}"


def _at(t: float | None) -> str:
    return f"at t = {t:.6g} s of the simulation" if t is not None else "before its first output row"


def _kept(t: float | None) -> str:
    return "; the rows up to then are kept" if t is not None else ""


def run_isolated(doc: dict, settings: dict, keep: tuple[str, ...], trajectory: str = "array", *,
                 case_timeout: float | None = None, attempts: int = 2, fault: str | None = None,
                 pool: RunnerPool | None = None, worker: str | None = None) -> dict:
    """One case of a sweep, run in a runner process (the module's docstring): the result
    of :func:`.task.run_case`, plus ``fault`` and ``case_timeout``.

    ``case_timeout``: seconds the case may take (compiling excluded; None: no limit); a
    case that exceeds it is ``failed`` with ``fault = "time limit"`` and the message
    ``exceeded the per-case time limit of N s at t = T s of the simulation``.  A case
    whose runner dies (a signal, a crash) is run again in a new runner, ``attempts``
    times in all, then ``failed`` with ``fault = "killed"`` and a message naming how it
    died.  Both keep the rows handed over before.  ``fault``: a kind of
    :data:`INJECTIONS` to inject.  ``pool``: the runners to use (default: this process's);
    ``worker``: the name the result gives (default: the Dask worker's address)."""
    if fault is not None and fault not in INJECTIONS:
        raise ValueError(f"unknown fault {fault!r} (one of: {', '.join(INJECTIONS)})")
    t0 = time.perf_counter()
    pool = _POOL if pool is None else pool
    worker = worker_name() if worker is None else worker
    case = {"doc": doc, "settings": settings, "keep": tuple(keep), "trajectory": trajectory, "fault": fault}
    deaths: list[int | None] = []
    attempts = max(1, int(attempts))

    def failed(out: Outcome, kind: str, message: str) -> dict:
        res = case_result(out.columns, stack_rows(out.parts, len(out.columns)), "failed", 3, message, keep,
                          trajectory, worker=worker, wall_time=time.perf_counter() - t0)
        return {**res, "fault": kind, "case_timeout": case_timeout}

    for _ in range(attempts):
        runner = pool.acquire()
        out = runner.run(case, case_timeout)
        if out.kind in ("result", "refused", "error"):
            pool.release(runner)
        else:
            pool.discard(runner)
        if out.kind == "error":
            raise RuntimeError(f"the case raised an exception in its runner process:\n{out.text}")
        if out.kind == "refused":
            res = case_result([], None, "refused", 2, out.text, keep, trajectory, worker=worker,
                              wall_time=time.perf_counter() - t0, refused=True)
            return {**res, "fault": None, "case_timeout": case_timeout}
        if out.kind == "result":
            res = dict(out.result)
            if trajectory in ("array", "parquet"):
                res["data"] = stack_rows(out.parts, len(out.columns))
            res.update(worker=worker, wall_time=time.perf_counter() - t0, fault=None, case_timeout=case_timeout)
            return res
        if out.kind == "timeout":
            return failed(out, TIME_LIMIT, f"exceeded the per-case time limit of {case_timeout:g} s "
                                           f"{_at(out.t_reached)}; its process was stopped"
                                           + (" and the rows up to then are kept" if out.t_reached is not None
                                              else ""))
        deaths.append(out.returncode)
    how = sorted({_describe_exit(rc) for rc in deaths})
    message = (f"the process running the case was {how[0]} {_at(out.t_reached)}, "
               f"{'on its only attempt' if attempts == 1 else f'on each of its {attempts} attempts'}"
               if len(how) == 1 else
               f"the process running the case died on each of its {attempts} attempts ({'; '.join(how)}), "
               f"the last {_at(out.t_reached)}")
    if -signal.SIGKILL in deaths:
        message += " -- SIGKILL is what the operating system's out-of-memory killer sends"
    return failed(out, KILLED, message + _kept(out.t_reached))


# -- the runner process ------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    """Be killed when the process that started this one ends (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the closed pipes end it instead
        pass
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(1)


def _volunteer_for_oom() -> None:
    """Make this process the out-of-memory killer's first choice (Linux; raising one's own
    score needs no privilege)."""
    try:
        with open("/proc/self/oom_score_adj", "r+") as fh:
            now = int(fh.read().strip() or 0)
            fh.seek(0)
            fh.write(str(min(1000, now + config.SWEEP_RUNNER_OOM_SCORE_ADJ)))
    except (OSError, ValueError):
        pass


def _report_compiling(outbox: Connection) -> None:
    """Tell the worker when numba starts and ends compiling (its clock stops meanwhile)."""
    from numba.core import event

    class Compiling(event.Listener):
        depth = 0

        def on_start(self, ev):
            self.depth += 1
            if self.depth == 1:
                outbox.send(("compiling", True))

        def on_end(self, ev):
            self.depth -= 1
            if self.depth == 0:
                outbox.send(("compiling", False))

    event.register("numba:compile", Compiling())


_SPIN = None


def inject(kind: str) -> None:
    """Do what fault ``kind`` of :data:`INJECTIONS` says, in the runner process."""
    global _SPIN
    if kind == "stall":
        if _SPIN is None:
            from numba import njit

            @njit(_nrt=False)  # not cached: compiled only where a fault is injected
            def spin(n):  # holds the GIL and never looks up: only a kill stops it
                x = 0.0
                for _ in range(n):
                    x = 0.5 * x + 1.0
                return x

            _SPIN = spin
        _SPIN(1 << 62)
    elif kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "kill-worker":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # the parent-death signal ends this process meanwhile
    else:
        raise ValueError(f"unknown fault {kind!r} (one of: {', '.join(INJECTIONS)})")


def _run(case: dict, outbox: Connection) -> None:
    """One case in the runner: hand over :func:`.task.simulate`'s events, then the result
    (without its rows: the worker has them)."""
    t0 = time.perf_counter()
    fault = case.get("fault")
    columns: list[str] = []
    parts: list = []
    t_end = None
    # an injected fault strikes halfway: every row is its own chunk until then
    for event in simulate(case["doc"], case["settings"], chunk_rows=1 if fault else None,
                          max_interval=config.SWEEP_CHUNK_INTERVAL):
        if event[0] == "refused":
            outbox.send(event)
            return
        if event[0] == "end":
            _, status, code, message = event
            res = case_result(columns, stack_rows(parts, len(columns)), status, code, message, case["keep"],
                              case["trajectory"], worker="", wall_time=time.perf_counter() - t0)
            res.pop("data", None)
            outbox.send(("result", res))
            return
        outbox.send(event)
        if event[0] == "columns":
            columns, t_end = event[1], event[2]
        elif event[0] == "rows":
            parts.append(event[1])
            if fault and len(event[1]) and event[1][-1, 0] >= 0.5 * t_end:
                inject(fault)
                fault = None


def serve(fd_in: int, fd_out: int, parent: int) -> None:
    """The runner process: read cases from ``fd_in``, run them, write their events to
    ``fd_out``; end when the worker closes the pipe or dies."""
    _die_with_parent(parent)
    _volunteer_for_oom()
    inbox = Connection(fd_in, writable=False)
    outbox = Connection(fd_out, readable=False)
    from .. import simulation  # noqa: F401 -- the engine, imported before the first case's clock starts

    _report_compiling(outbox)
    outbox.send(("ready", os.getpid()))
    while True:
        try:
            case = inbox.recv()
        except (EOFError, OSError):
            return
        try:
            _run(case, outbox)
        except (BrokenPipeError, ConnectionResetError):  # the worker is gone
            return
        except BaseException:  # noqa: BLE001 -- reported to the worker, which raises it there
            try:
                outbox.send(("error", traceback.format_exc()))
            except OSError:
                return
