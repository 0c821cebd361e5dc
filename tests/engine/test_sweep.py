"""Parameter sweeps (engine/sweep.py, docs/sweeps.md): the sweep file's parser, the
per-case validation, resume from a partial results directory, and a small real
LocalCluster sweep checked against ``linkwork run`` digit for digit."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from linkwork.engine import sweep
from linkwork.engine.cli import main as cli_main
from linkwork.engine.paths import examples_dir
from linkwork.engine.results import read_csv
from linkwork.engine.sweep import SweepError, load_sweep, prepare_cases, sweep_from_dict

SLIDER = str(examples_dir() / "slider-crank.mech.json")
BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "sweeps" / "slider-crank-spring.sweep.json"


def doc(**more):
    d = {"format": "linkwork-sweep", "version": 1, "mechanism": SLIDER, "settings": {"t_end": 0.2, "dt": 0.01}}
    d.update(more)
    return d


# ---------------------------------------------------------------- the parser


def test_grid_is_the_product_of_its_axes_in_order():
    s = sweep_from_dict(doc(grid={"joints[0].rate": {"start": 2, "stop": 4, "num": 3},
                                  "forces[0].stiffness": [100, 300]}))
    assert s.parameters == ("joints[0].rate", "forces[0].stiffness")
    assert [c.params for c in s.cases] == [
        (("joints[0].rate", a), ("forces[0].stiffness", k)) for a in (2.0, 3.0, 4.0) for k in (100, 300)]
    assert [c.index for c in s.cases] == list(range(6))


def test_cases_and_random_follow_the_grid_and_random_is_seeded():
    d = doc(grid={"bodies[2].mass": [1.0, 2.0]}, cases=[{"dt": 0.02}],
            random={"n": 4, "seed": 7, "parameters": {"forces[0].stiffness": {"uniform": [100, 200]},
                                                      "formulation": {"choice": ["dca", "index3"]}}})
    a, b = sweep_from_dict(d), sweep_from_dict(d)
    assert [c.origin for c in a.cases] == ["grid", "grid", "cases"] + ["random"] * 4
    assert a.cases == b.cases  # same seed, same samples
    ks = [dict(c.params)["forces[0].stiffness"] for c in a.cases[3:]]
    assert all(100 <= k <= 200 for k in ks) and len(set(ks)) == 4
    other = sweep_from_dict({**d, "random": {**d["random"], "seed": 8}})
    assert [dict(c.params)["forces[0].stiffness"] for c in other.cases[3:]] != ks


def test_bad_path_in_a_grid_refuses_the_file_naming_it():
    with pytest.raises(SweepError) as e:
        sweep_from_dict(doc(grid={"bodies[99].mass": [1, 2]}))
    assert str(e.value) == ("grid.bodies[99].mass: bad parameter path bodies[99].mass: bodies[99] does not exist "
                            "(bodies has 3 elements, indices 0..2)")


@pytest.mark.parametrize("bad, message", [
    ({"format": "x", "cases": [{}]}, 'format: is required and must be "linkwork-sweep"'),
    ({"settings": {"dtt": 1}, "cases": [{}]}, "settings.dtt: unknown run setting"),
    ({"grid": {"dt": {"start": 1, "stop": 2}}}, "grid.dt.num: is required"),
    ({"keep": ["max:slider.x", "peak"], "cases": [{}]}, "keep[1]: unknown quantity 'peak'"),
    ({"random": {"n": 3, "parameters": {"dt": {"uniform": [0.01, 0.02]}}}}, "random.seed: is required"),
    ({"mechanism": "nowhere.mech.json", "cases": [{}]}, "mechanism: no such file"),
    ({}, "(file): no cases"),
])
def test_refused_sweep_files_name_the_path(bad, message):
    with pytest.raises(SweepError) as e:
        sweep_from_dict(doc(**bad))
    assert str(e.value).startswith(message)


def test_each_refused_case_is_reported_with_its_index_and_the_loaders_message_others_kept():
    s = sweep_from_dict(doc(cases=[{"bodies[2].mass": 2.5}, {"bodies[99].mass": 1.0},
                                   {"bodies[2].mass": "heavy"}, {"bodies[2].mass": -1.0},
                                   {"bodies[2].mas": 3.0}, {"formulation": "nope"}, {"dt": 0.02}]))
    got = [pc.refused for pc in prepare_cases(s)]
    assert got == [
        None,
        "case 1 (bodies[99].mass = 1.0): bad parameter path bodies[99].mass: bodies[99] does not exist "
        "(bodies has 3 elements, indices 0..2)",
        'case 2 (bodies[2].mass = "heavy"): bodies[2].mass: must be a number (got a string)',
        "case 3 (bodies[2].mass = -1.0): bodies[2].mass: must be > 0 (got -1)",
        "case 4 (bodies[2].mas = 3.0): bad parameter path bodies[2].mas: not a field of the mechanism format "
        "(bodies[2].mas: unknown key, ignored)",
        "case 5 (formulation = \"nope\"): unknown formulation 'nope' "
        "(available: dense, dca, hdca, index3, rcr, embedding)",
        None,
    ]


def test_the_bundled_sweep_has_fifty_valid_cases():
    s = load_sweep(BUNDLED)
    assert len(s.cases) == 50 and not [pc for pc in prepare_cases(s) if pc.refused]


def test_case_values_reach_the_mechanism_and_settings():
    s = sweep_from_dict(doc(cases=[{"forces[0].stiffness": 321.0, "dt": 0.02, "joints[0].rate": 4.5}]))
    pc = prepare_cases(s)[0]
    assert pc.doc["forces"][0]["stiffness"] == 321.0 and pc.doc["joints"][0]["rate"] == 4.5
    assert pc.settings == {"t_end": 0.2, "dt": 0.02}
    assert s.base["forces"][0]["stiffness"] == 200.0  # the base document is not modified


# ---------------------------------------------------------------- resume


def test_resume_keeps_only_complete_unchanged_cases_with_their_trajectory(tmp_path):
    s = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 200.0, 300.0, 400.0, 500.0]}))
    prepared = prepare_cases(s)
    records = {}
    for pc in prepared[:4]:  # a partial DIR: cases 0-3 finished, 4 never did
        res = sweep.run_case(pc.doc, pc.settings, s.keep)
        sweep.write_trajectory(sweep.trajectory_path(tmp_path, pc.index, "csv"), res["columns"], res["data"], "csv")
        records[pc.index] = {**{k: v for k, v in res.items() if k not in ("columns", "data")},
                             "case": pc.index, "params": dict(pc.case.params), "session": "old",
                             "finished_at": 0.0, "case_key": pc.key}
    keep_cols = [k for k in records[0] if k.startswith(("final.", "reaction_peak.")) or k in
                 ("max_position_violation", "energy_drift")]
    records[1]["status"], records[1]["exit_status"] = "error", 1  # a task that failed twice: computed again
    records[2]["case_key"] = "stale"  # the case's definition changed since
    (tmp_path / "runs" / "case-00003.csv").unlink()  # its trajectory is gone
    sweep.write_summary(tmp_path / "summary.parquet", sweep.summary_frame(records, s.parameters, keep_cols))
    (tmp_path / ".summary.parquet.123.abcd.tmp").write_bytes(b"PAR1 torn")  # a killed writer's leftover

    previous = sweep.read_summary(tmp_path / "summary.parquet")
    assert len(previous) == 4
    kept = sweep.complete_records(prepared, previous, tmp_path, "csv", s.parameters)
    assert sorted(kept) == [0]
    assert kept[0]["final.slider.x"] == records[0]["final.slider.x"]
    # a failed simulation is a result: kept like ok
    previous.loc[previous["case"] == 3, "status"] = "failed"
    (tmp_path / "runs" / "case-00003.csv").write_text("t\n0.0\n")
    assert sorted(sweep.complete_records(prepared, previous, tmp_path, "csv", s.parameters)) == [0, 3]


def test_an_unreadable_summary_means_start_afresh(tmp_path):
    (tmp_path / "summary.parquet").write_bytes(b"not parquet")
    assert sweep.read_summary(tmp_path / "summary.parquet") is None
    assert sweep.read_summary(tmp_path / "missing.parquet") is None


def test_atomic_write_leaves_the_old_file_when_the_writer_fails(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("old")

    def broken(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        sweep.atomic_write(p, broken)
    assert p.read_text() == "old" and list(tmp_path.iterdir()) == [p]


def test_a_failed_simulation_is_a_result_not_an_error():
    s = sweep_from_dict(doc(cases=[{"formulation": "dca", "dt": 0.05, "t_end": 2.0,
                                    "forces[0].stiffness": 1e9}]))
    pc = prepare_cases(s)[0]
    assert pc.refused is None
    res = sweep.run_case(pc.doc, pc.settings, s.keep)
    assert res["status"] == "failed" and res["exit_status"] == 3
    assert res["message"].startswith("simulation failed at t = ")
    assert 0 < res["rows"] == res["data"].shape[0] and res["t_final"] < 2.0


# ---------------------------------------------------------------- a real LocalCluster


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    cluster = sweep.local_cluster(workers=2, threads_per_worker=1)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.mark.xdist_group("dask")
def test_local_cluster_sweep_equals_linkwork_run_and_resumes(client, tmp_path):
    d = doc(grid={"joints[0].rate": [3.0, 8.0], "forces[0].stiffness": [100.0, 400.0]},
            settings={"t_end": 0.5, "dt": 0.01})
    spec = sweep_from_dict(d)
    out = tmp_path / "out"
    df = sweep.run_sweep(spec, client=client, out=out)
    assert list(df["case"]) == [0, 1, 2, 3] and set(df["status"]) == {"ok"}
    assert df["worker"].str.startswith("tcp://127.0.0.1:").all()
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
    df2 = sweep.run_sweep(spec, client=client, out=out)
    first = df.set_index("case")["session"]
    again = df2.set_index("case")["session"]
    assert list(again == first) == [True, False, False, True]
    log = [json.loads(x) for x in (out / "sweep.log").read_text().splitlines()]
    assert sorted(r["case"] for r in log) == [0, 1, 1, 2, 2, 3]
    cols = [c for c in df.columns if c not in ("session", "finished_at", "wall_time", "worker")]
    assert df2[cols].equals(df[cols])


# ---------------------------------------------------------------- the command


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
def test_a_case_whose_worker_dies_twice_is_recorded_as_error_and_the_others_complete(tmp_path):
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
    assert list(df["status"]) == ["ok", "error", "ok"]
    row = df.iloc[1]
    assert row["exit_status"] == 1 and row["message"].startswith("KilledWorker: ")
    assert "linkwork-case-1-" in row["message"] and not (tmp_path / "runs" / "case-00001.csv").exists()
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


def test_unreadable_sweep_and_mechanism_files_are_refused_with_the_path(tmp_path):
    """The sweep file and the base mechanism it names are read the same way: a file that is
    not JSON is refused naming where it was met and the file."""
    bad = tmp_path / "bad.sweep.json"
    bad.write_text("{not json")
    with pytest.raises(SweepError, match=r"\(file\).*bad\.sweep\.json is not valid JSON \(line 1"):
        load_sweep(bad)
    (tmp_path / "m.mech.json").write_text("[1, 2")
    s = tmp_path / "s.sweep.json"
    s.write_text(json.dumps({"format": "linkwork-sweep", "version": 1, "mechanism": "m.mech.json", "cases": [{}]}))
    with pytest.raises(SweepError, match=r"mechanism.*m\.mech\.json is not valid JSON"):
        load_sweep(s)


def test_worker_environment_threads():
    """N workers x T threads: numba, OpenMP and OpenBLAS get T threads (OpenBLAS 1); the
    passive OpenMP wait policy only where a worker has one thread -- with two it made a
    dca evaluation slower than one thread (docs/performance.md, "Speed")."""
    from linkwork.engine.sweep import worker_environment

    one = worker_environment(1)
    assert one == {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                   "OMP_WAIT_POLICY": "PASSIVE"}
    two = worker_environment(2)
    assert two["NUMBA_NUM_THREADS"] == two["OMP_NUM_THREADS"] == "2" and "OMP_WAIT_POLICY" not in two
    assert worker_environment(0)["NUMBA_NUM_THREADS"] == "1"
