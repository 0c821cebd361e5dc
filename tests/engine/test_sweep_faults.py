"""Sweeps under faults (engine/sweep/runner.py, docs/sweeps.md "Faults"): a case that
stalls inside a compiled kernel is stopped at the per-case time limit, a case that kills
its process or its Dask worker is retried and then recorded, every other case completes;
and the summary stays readable when the client is killed with SIGKILL."""

import json
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from linkwork.engine import sweep
from linkwork.engine.sweep import prepare_cases, run_case, sweep_from_dict

from .sweep.conftest import doc

FAULTY = {1: "stall", 3: "kill", 4: "kill-worker"}
#: the per-case time limit: above a normal case's time with its runner's kernels to load on
#: a loaded 2-core machine (seconds there), so only the stalling case meets it
LIMIT = 20.0
GUARD_SECONDS = 180


@pytest.mark.xdist_group("dask")
def test_a_stalling_case_and_killed_processes_are_recorded_and_every_other_case_completes(tmp_path):
    """Six cases on two workers: case 1 stalls in a compiled loop that holds the GIL and
    never returns, case 3 kills its runner process, case 4 kills its Dask worker (each
    halfway through, t = 0.1 s of 0.2 s).  Every other case is ok and equal to the same
    case run in this process; the three are failed, each with its message and cause."""
    from distributed import Client

    spec = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 150.0, 200.0, 250.0, 300.0, 350.0]},
                               case_timeout=LIMIT))
    out = tmp_path / "out"
    cluster = sweep.local_cluster(workers=2, threads_per_worker=1)
    give_up = threading.Event()  # a stall that is not stopped fails the test, it does not hang it
    guard = threading.Timer(GUARD_SECONDS, give_up.set)
    guard.start()
    t0 = time.perf_counter()
    try:
        with Client(cluster) as c:
            df = sweep.run_sweep(spec, client=c, out=out, inject=FAULTY, cancel=give_up)
    finally:
        guard.cancel()
        cluster.close()
    wall = time.perf_counter() - t0
    assert not give_up.is_set(), f"the sweep did not end in {GUARD_SECONDS} s"
    print(df[["case", "status", "exit_status", "fault", "t_final", "rows", "wall_time", "message"]]
          .to_string(max_colwidth=400))
    assert list(df["status"]) == ["ok", "failed", "ok", "failed", "failed", "ok"]
    assert [None if isinstance(x, float) else x for x in df["fault"]] == [  # NaN: no fault
        None, "time limit", None, "killed", "worker died", None]
    assert (df["case_timeout"] == LIMIT).all()
    assert sweep.read_summary(out / "summary.parquet").equals(df)

    stalled, killed, lost = df.iloc[1], df.iloc[3], df.iloc[4]
    assert stalled["exit_status"] == killed["exit_status"] == lost["exit_status"] == 3
    assert stalled["message"] == (f"exceeded the per-case time limit of {LIMIT:g} s at t = 0.1 s of the "
                                  "simulation; its process was stopped and the rows up to then are kept")
    assert LIMIT <= stalled["wall_time"] < LIMIT + 40  # stopped at the limit (plus its runner's start)
    assert killed["message"] == ("the process running the case was killed by signal 9 (SIGKILL) at t = 0.1 s of "
                                 "the simulation, on each of its 2 attempts -- SIGKILL is what the operating "
                                 "system's out-of-memory killer sends; the rows up to then are kept")
    assert lost["message"].startswith("the Dask worker process running the case died 2 times (killed by the "
                                      "operating system -- the out-of-memory killer sends SIGKILL -- or crashed)")
    # the stopped and killed cases keep their rows up to t = 0.1 s
    runs = out / "runs"
    for row in (stalled, killed):
        assert row["rows"] == 11 and row["t_final"] == pytest.approx(0.1)
        lines = (runs / f"case-{row['case']:05d}.csv").read_text().splitlines()
        assert len(lines) == 12 and float(lines[-1].split(",")[0]) == pytest.approx(0.1)
    assert not (runs / "case-00004.csv").exists()

    # every other case complete, and the same as run on its own
    for pc in prepare_cases(spec):
        if pc.index in FAULTY:
            continue
        row = df.iloc[pc.index]
        want = run_case(pc.doc, pc.settings, spec.keep, "csv")
        assert row["rows"] == 21 and row["message"] == ""
        assert (runs / f"case-{pc.index:05d}.csv").read_text() == want["csv"]
        assert np.isclose(row["final.slider.x"], want["final.slider.x"], rtol=0, atol=0)

    # a resumed sweep keeps the results -- the time-limited case too, under the same limit --
    # and computes again the cases that were killed (their cause may have gone)
    kept = sweep.complete_records(prepare_cases(spec), df, out, "csv", spec.parameters, LIMIT)
    assert sorted(kept) == [0, 1, 2, 5]
    assert sorted(sweep.complete_records(prepare_cases(spec), df, out, "csv", spec.parameters, 2 * LIMIT)) == [
        0, 2, 5]
    assert sorted(sweep.complete_records(prepare_cases(spec), df, out, "csv", spec.parameters, None)) == [0, 2, 5]


def test_the_time_limit_comes_from_the_sweep_file_and_is_checked():
    assert sweep_from_dict(doc(cases=[{}])).case_timeout is None
    assert sweep_from_dict(doc(cases=[{}], case_timeout=30)).case_timeout == 30.0
    for bad in (0, -1, "10", True, float("inf")):
        with pytest.raises(sweep.SweepError, match=r"^case_timeout: must be a number of seconds > 0"):
            sweep_from_dict(doc(cases=[{}], case_timeout=bad))


def test_the_command_line_refuses_bad_limits_and_faults(tmp_path, capsys):
    from linkwork.engine.cli import main as cli_main

    f = tmp_path / "s.sweep.json"
    f.write_text(json.dumps(doc(cases=[{}, {}])))
    for args, message in ((["--case-timeout", "-3"], "must be > 0 seconds"),
                          (["--case-timeout", "soon"], "not a number of seconds"),
                          (["--inject-fault", "1:explode"], "unknown fault 'explode'"),
                          (["--inject-fault", "7:stall"], "--inject-fault: no case 7 (the sweep has cases 0..1)"),
                          (["--inject-fault", "1:kill-worker"], "kills a Dask worker: add --dask (or --scheduler)"),
                          (["--dask", "--scheduler", "tcp://127.0.0.1:1"], "give one of them")):
        try:
            rc = cli_main(["sweep", str(f), "--out", str(tmp_path / "o")] + args)
        except SystemExit as exc:  # argparse's refusal
            rc = exc.code
        assert rc == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.xdist_group("dask")
def test_without_dask_a_stalling_case_and_a_killed_process_are_recorded_the_same_way(tmp_path):
    """The sweep's own worker threads (no Dask) meet the same faults the same way: the
    stalling case stopped at the limit, the killed one retried and recorded, the others
    equal to the same case run in this process; and ``kill-worker`` is refused (there
    is no worker process to kill)."""
    spec = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 150.0, 200.0, 250.0]}, case_timeout=LIMIT))
    with pytest.raises(sweep.SweepError, match="'kill-worker' kills a Dask worker"):
        sweep.run_sweep(spec, out=tmp_path / "no", inject={1: "kill-worker"})
    assert not (tmp_path / "no").exists()
    give_up = threading.Event()
    guard = threading.Timer(GUARD_SECONDS, give_up.set)
    guard.start()
    try:
        df = sweep.run_sweep(spec, out=tmp_path / "out", workers=2, inject={1: "stall", 2: "kill"}, cancel=give_up)
    finally:
        guard.cancel()
    assert not give_up.is_set(), f"the sweep did not end in {GUARD_SECONDS} s"
    assert list(df["status"]) == ["ok", "failed", "failed", "ok"]
    assert [None if isinstance(x, float) else x for x in df["fault"]] == [None, "time limit", "killed", None]
    assert set(df["worker"]) <= {"local-1", "local-2"}
    assert df.iloc[1]["message"].startswith(f"exceeded the per-case time limit of {LIMIT:g} s at t = 0.1 s")
    assert df.iloc[2]["message"].startswith("the process running the case was killed by signal 9 (SIGKILL) at "
                                            "t = 0.1 s of the simulation, on each of its 2 attempts")
    for i in (0, 3):
        pc = prepare_cases(spec)[i]
        want = run_case(pc.doc, pc.settings, spec.keep, "csv")
        assert (tmp_path / "out" / "runs" / f"case-{i:05d}.csv").read_text() == want["csv"]


@pytest.mark.xdist_group("dask")
def test_cancelling_a_sweep_without_dask_stops_its_running_cases_at_once(tmp_path):
    """Cancel while both workers' cases stall in compiled code: the sweep returns within
    seconds, its runner processes are gone, and the summary holds no unfinished case."""
    import psutil

    spec = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 150.0, 200.0, 250.0]}))
    cancel = threading.Event()
    seen = {}

    def is_runner(proc):
        try:
            return "serve(" in " ".join(proc.cmdline())
        except psutil.NoSuchProcess:  # another child of this process, ended since
            return False

    def progress(p):
        if p.running == 2 and "t" not in seen:
            seen["t"] = time.perf_counter()
            seen["runners"] = [c for c in psutil.Process().children() if is_runner(c)]
            threading.Timer(3.0, cancel.set).start()  # both are in their stall by then

    t0 = time.perf_counter()
    df = sweep.run_sweep(spec, out=tmp_path / "out", workers=2, inject={0: "stall", 1: "stall"}, cancel=cancel,
                         progress=progress)
    assert "t" in seen, "the two cases were never seen running"
    assert time.perf_counter() - seen["t"] < 3.0 + 10.0, time.perf_counter() - t0
    assert len(df) == 0 or set(df["status"]) <= {"ok"}
    runners = seen["runners"]
    assert len(runners) == 2
    _, alive = psutil.wait_procs(runners, timeout=10)
    assert not alive, "a runner outlived the cancelled sweep"


# -- the summary when the client is killed ----------------------------------------------

_REWRITER = r"""
import sys
from pathlib import Path
from linkwork.engine.sweep.storage import summary_frame, write_summary
import pyarrow as pa, pyarrow.parquet as pq

path, how = Path(sys.argv[1]), sys.argv[2]
records = {i: {"case": i, "status": "ok", "exit_status": 0, "message": "", "params": {"k": float(i)},
               "t_final": 5.0, "rows": 501, "wall_time": 0.5, "worker": "w", "session": "s",
               "finished_at": 0.0, "case_key": "x" * 20, "fault": None, "case_timeout": None,
               **{f"q{j}": float(i * j) for j in range(40)}} for i in range(300)}
df = summary_frame(records, ("k",), [f"q{j}" for j in range(40)])
table = pa.Table.from_pandas(df, preserve_index=False)
write_summary(path, df)
print("first", flush=True)
while True:  # rewritten as fast as it can be: a kill lands in a write
    if how == "atomic":
        write_summary(path, df)
    else:  # the control: written in place, as a naive writer would
        pq.write_table(table, path)
"""


def _kill_while_rewriting(tmp_path, how: str, kills: int) -> list:
    """Start a process that rewrites a summary of 300 rows over and over, SIGKILL it at a
    random moment, read the file; ``kills`` times.  Returns the rows each read found
    (None: unreadable)."""
    rng = np.random.default_rng(7)
    path = tmp_path / f"{how}.parquet"
    seen = []
    for _ in range(kills):
        p = subprocess.Popen([sys.executable, "-c", _REWRITER, str(path), how], stdout=subprocess.PIPE)
        assert p.stdout.readline() == b"first\n"
        time.sleep(float(rng.uniform(0.05, 0.5)))
        p.send_signal(signal.SIGKILL)
        p.wait()
        back = sweep.read_summary(path)
        seen.append(None if back is None else len(back))
    return seen


def test_the_summary_is_whole_whenever_its_writer_is_killed(tmp_path):
    """The summary is written to a temporary file and renamed: a writer killed at any
    moment leaves the previous whole file, and the temporary files of killed writers are
    removed when the next sweep starts.  The control, the same rewriting in place, leaves
    torn files -- so this test does see torn files when there are any."""
    assert _kill_while_rewriting(tmp_path, "atomic", 8) == [300] * 8
    sweep.remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atomic.parquet"]
    in_place = _kill_while_rewriting(tmp_path, "in-place", 3)
    assert None in in_place, in_place


@pytest.mark.xdist_group("dask")
def test_the_summary_stays_readable_when_the_sweep_client_is_killed(tmp_path):
    """``linkwork sweep`` killed with SIGKILL while cases finish: the summary holds the
    cases finished so far, the worker and runner processes end with it, and the same
    command then completes the sweep, computing only the rest."""
    import psutil

    f = tmp_path / "s.sweep.json"
    # cases long enough (0.2-0.5 s each) that the summary, rewritten at most once a second,
    # has some of them while others run
    f.write_text(json.dumps(doc(grid={"forces[0].stiffness": [100.0 + 10 * i for i in range(24)]},
                                settings={"t_end": 20.0, "dt": 0.01})))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "linkwork.engine.cli", "sweep", str(f), "--out", str(out), "--workers", "2",
           "--quiet"]
    client = subprocess.Popen(cmd)
    summary = out / "summary.parquet"
    deadline = time.monotonic() + 180
    rows = 0
    while rows < 4:
        assert client.poll() is None, "the sweep ended before it could be killed"
        assert time.monotonic() < deadline, "no 4 cases finished in 180 s"
        back = sweep.read_summary(summary) if summary.exists() else None
        rows = 0 if back is None else int((back["status"] == "ok").sum())
        time.sleep(0.05)
    family = psutil.Process(client.pid).children(recursive=True)
    assert [p for p in family if "runner import serve" in " ".join(p.cmdline())]  # the cases' runners
    client.send_signal(signal.SIGKILL)
    client.wait()

    back = sweep.read_summary(summary)
    assert back is not None and set(back["status"]) == {"ok"}
    n = len(back)
    assert 4 <= n < 24
    for case in back["case"]:
        assert (out / "runs" / f"case-{case:05d}.csv").exists()
    gone, alive = psutil.wait_procs(family, timeout=30)
    assert not alive, [p.cmdline() for p in alive]

    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    final = sweep.read_summary(summary)
    assert list(final["case"]) == list(range(24)) and set(final["status"]) == {"ok"}
    sessions = final.set_index("case")["session"]
    assert (sessions[back["case"]] == back.set_index("case")["session"]).all()  # kept, not computed again
    assert final["session"].nunique() == 2
