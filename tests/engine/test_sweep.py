"""Parameter sweeps run (engine/sweep/driver.py, docs/sweeps.md): a small real
LocalCluster sweep checked against ``linkwork run`` digit for digit, resumed; a worker
that dies; Parquet trajectories; and the ``linkwork sweep`` command.  The parser, the
cases, the results directory and the task have their tests in tests/engine/sweep/."""

import json
import math

import numpy as np
import pytest

from linkwork.engine import sweep
from linkwork.engine.cli import main as cli_main
from linkwork.engine.results import read_csv
from linkwork.engine.sweep import prepare_cases, sweep_from_dict

from .sweep.conftest import doc


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    cluster = sweep.local_cluster(workers=2, threads_per_worker=1)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.mark.xdist_group("dask")
@pytest.mark.parametrize("where", ["dask", "local"])
def test_a_sweep_equals_linkwork_run_and_resumes(where, request, tmp_path):
    """On a Dask LocalCluster's workers and on the sweep's own worker threads (no Dask)."""
    client = request.getfixturevalue("client") if where == "dask" else None
    d = doc(grid={"joints[0].rate": [3.0, 8.0], "forces[0].stiffness": [100.0, 400.0]},
            settings={"t_end": 0.5, "dt": 0.01})
    spec = sweep_from_dict(d)
    out = tmp_path / "out"
    df = sweep.run_sweep(spec, client=client, out=out, workers=2)
    assert list(df["case"]) == [0, 1, 2, 3] and set(df["status"]) == {"ok"}
    assert df["worker"].str.startswith("tcp://127.0.0.1:" if where == "dask" else "local-").all()
    back = sweep.read_summary(out / "summary.parquet")
    assert back.equals(df)
    for pc in prepare_cases(spec):
        mech = tmp_path / f"case{pc.index}.mech.json"
        mech.write_text(json.dumps(pc.doc))
        csv = tmp_path / f"run{pc.index}.csv"
        assert cli_main(["run", str(mech), "--t-end", "0.5", "--dt", "0.01", "--out", str(csv), "--quiet"]) == 0
        # the trajectory is linkwork run's file, byte for byte
        assert (out / "runs" / f"case-{pc.index:05d}.csv").read_bytes() == csv.read_bytes()
        cols, rows = read_csv(csv)
        want = sweep.quantities(cols, rows, spec.keep)
        row = back[back["case"] == pc.index].iloc[0]
        for k, v in want.items():
            assert row[k] == v or (math.isnan(v) and math.isnan(row[k])), k
        assert row["param.joints[0].rate"] == dict(pc.case.params)["joints[0].rate"]

    # resume: two cases lose their trajectory; only they are computed again
    (out / "runs" / "case-00001.csv").unlink()
    (out / "runs" / "case-00002.csv").unlink()
    df2 = sweep.run_sweep(spec, client=client, out=out, workers=2)
    first = df.set_index("case")["session"]
    again = df2.set_index("case")["session"]
    assert list(again == first) == [True, False, False, True]
    log = [json.loads(x) for x in (out / "sweep.log").read_text().splitlines()]
    assert sorted(r["case"] for r in log) == [0, 1, 1, 2, 2, 3]
    cols = [c for c in df.columns if c not in ("session", "finished_at", "wall_time", "worker")]
    assert df2[cols].equals(df[cols])


def test_sweep_help_and_refused_options_do_not_load_dask_or_the_engine():
    import subprocess
    import sys

    code = ("import sys; from engine.cli import main; rc = main(sys.argv[1:]); "
            "heavy = sorted(m for m in ('numba', 'numpy', 'dask', 'distributed', 'pandas', 'pyarrow') "
            "if m in sys.modules); print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)")
    for args, rc in ((["sweep", "--help"], 0), (["sweep", "x.sweep.json"], 2),
                     (["sweep", "x.sweep.json", "--out", "d", "--workers", "two"], 2)):
        r = subprocess.run([sys.executable, "-c", code] + args, capture_output=True, text=True)
        assert r.returncode == rc, r.stderr
        assert "HEAVY []" in r.stderr, (args, r.stderr)


def test_a_refused_sweep_file_is_exit_2_naming_file_and_path(tmp_path, capsys):
    f = tmp_path / "bad.sweep.json"
    f.write_text(json.dumps(doc(grid={"bodies[99].mass": [1, 2]})))
    assert cli_main(["sweep", str(f), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"linkwork: {f}: grid.bodies[99].mass: bad parameter path bodies[99].mass: bodies[99] does not exist" in err
    assert not (tmp_path / "out").exists()


class _KillCase:
    """A worker plugin that kills its worker process whenever case 1 starts executing
    there (as a segfault or the OOM killer would)."""

    name = "linkwork-test-kill-case-1"

    def setup(self, worker):
        pass

    def teardown(self, worker):
        pass

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith("linkwork-case-1-"):
            import os

            os._exit(1)


@pytest.mark.xdist_group("dask")
def test_a_case_whose_worker_dies_twice_is_recorded_as_failed_and_the_others_complete(tmp_path):
    from distributed import Client
    from distributed.diagnostics.plugin import WorkerPlugin

    plugin = type("KillCase", (_KillCase, WorkerPlugin), {})()
    spec = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 200.0, 300.0]}))
    cluster = sweep.local_cluster(workers=2, threads_per_worker=1)
    try:
        with Client(cluster) as c:
            c.register_plugin(plugin)
            df = sweep.run_sweep(spec, client=c, out=tmp_path)
    finally:
        cluster.close()
    assert list(df["status"]) == ["ok", "failed", "ok"]
    row = df.iloc[1]
    assert row["exit_status"] == 3 and row["fault"] == "worker died"
    assert row["message"].startswith("the Dask worker process running the case died 2 times (killed by the "
                                     "operating system")
    assert "KilledWorker; the last worker was tcp://127.0.0.1:" in row["message"]
    assert not (tmp_path / "runs" / "case-00001.csv").exists()
    # not a result: a resumed sweep computes it again
    assert sorted(sweep.complete_records(prepare_cases(spec), df, tmp_path, "csv", spec.parameters)) == [0, 2]


@pytest.mark.xdist_group("dask")
def test_parquet_trajectories_hold_the_csv_rows(client, tmp_path):
    import pyarrow.parquet as pq

    spec = sweep_from_dict(doc(cases=[{"forces[0].stiffness": 150.0}], trajectories="parquet"))
    df = sweep.run_sweep(spec, client=client, out=tmp_path / "pq")
    assert list(df["status"]) == ["ok"]
    table = pq.read_table(tmp_path / "pq" / "runs" / "case-00000.parquet")
    pc = prepare_cases(spec)[0]
    res = sweep.run_case(pc.doc, pc.settings, spec.keep, "csv")
    csv = tmp_path / "case.csv"
    csv.write_text(res["csv"])
    cols, rows = read_csv(csv)
    assert table.column_names == cols
    assert np.array_equal(np.column_stack([table.column(c).to_numpy() for c in cols]), rows)


@pytest.mark.xdist_group("dask")
def test_a_trajectory_that_cannot_be_written_fails_its_case_and_the_sweep_goes_on(client, tmp_path,
                                                                                     monkeypatch):
    """A disk that refuses one case's trajectory: that case is recorded ``failed`` (exit
    status 3, the file and the error named), the others complete and are written."""
    import errno

    from linkwork.engine.sweep import driver

    real = driver.atomic_write

    def atomic_write(path, write):
        if path.name == "case-00001.csv":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, write)

    monkeypatch.setattr(driver, "atomic_write", atomic_write)
    spec = sweep_from_dict(doc(cases=[{"forces[0].stiffness": s} for s in (100.0, 200.0, 300.0)],
                               settings={"t_end": 0.2, "dt": 0.01}))
    df = sweep.run_sweep(spec, client=client, out=tmp_path / "out")
    assert list(df["status"]) == ["ok", "failed", "ok"]
    failed = df.iloc[1]
    assert failed["exit_status"] == 3
    assert "case-00001.csv failed: No space left on device" in failed["message"]
    runs = tmp_path / "out" / "runs"
    assert (runs / "case-00000.csv").exists() and (runs / "case-00002.csv").exists()
    assert not (runs / "case-00001.csv").exists()


@pytest.mark.xdist_group("dask")
def test_the_summary_is_rewritten_at_most_once_per_interval_and_whole_at_the_end(tmp_path, monkeypatch):
    """Rewriting the summary costs tens of ms: while cases finish it is written at most
    once per ``SWEEP_SUMMARY_INTERVAL`` (here never in between), before the first case
    and at the end, which has every case."""
    from linkwork.engine import config
    from linkwork.engine.sweep import driver

    writes = []
    real = driver.write_summary
    monkeypatch.setattr(driver, "write_summary", lambda path, df: (writes.append(len(df)), real(path, df)))
    monkeypatch.setattr(config, "SWEEP_SUMMARY_INTERVAL", 1e9)
    spec = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 200.0, 300.0, 400.0]},
                               settings={"t_end": 0.2, "dt": 0.01}))
    df = sweep.run_sweep(spec, out=tmp_path / "a", workers=2)
    assert writes == [0, 4] and list(df["status"]) == ["ok"] * 4
    writes.clear()
    monkeypatch.setattr(config, "SWEEP_SUMMARY_INTERVAL", 0.0)
    df = sweep.run_sweep(spec, out=tmp_path / "b", workers=2)
    assert writes[0] == 0 and writes[-1] == 4 and len(writes) >= 3  # as cases finish, then the end
    assert sweep.read_summary(tmp_path / "b" / "summary.parquet").equals(df)
