"""The results directory (engine/sweep/storage.py): resume from a partial directory, an
unreadable summary, and files that are never torn."""

import pytest

from linkwork.engine.sweep.cases import prepare_cases
from linkwork.engine.sweep.spec import sweep_from_dict
from linkwork.engine.sweep.storage import (atomic_write, complete_records, read_summary, summary_frame,
                                           trajectory_path, write_summary, write_trajectory)
from linkwork.engine.sweep.task import run_case

from .conftest import doc


def test_resume_keeps_only_complete_unchanged_cases_with_their_trajectory(tmp_path):
    s = sweep_from_dict(doc(grid={"forces[0].stiffness": [100.0, 200.0, 300.0, 400.0, 500.0]}))
    prepared = prepare_cases(s)
    records = {}
    for pc in prepared[:4]:  # a partial DIR: cases 0-3 finished, 4 never did
        res = run_case(pc.doc, pc.settings, s.keep)
        write_trajectory(trajectory_path(tmp_path, pc.index, "csv"), res["columns"], res["data"], "csv")
        records[pc.index] = {**{k: v for k, v in res.items() if k not in ("columns", "data")},
                             "case": pc.index, "params": dict(pc.case.params), "session": "old",
                             "finished_at": 0.0, "case_key": pc.key}
    keep_cols = [k for k in records[0] if k.startswith(("final.", "reaction_peak.")) or k in
                 ("max_position_violation", "energy_drift")]
    records[1]["status"], records[1]["exit_status"] = "error", 1  # a task that failed twice: computed again
    records[2]["case_key"] = "stale"  # the case's definition changed since
    (tmp_path / "runs" / "case-00003.csv").unlink()  # its trajectory is gone
    write_summary(tmp_path / "summary.parquet", summary_frame(records, s.parameters, keep_cols))
    (tmp_path / ".summary.parquet.123.abcd.tmp").write_bytes(b"PAR1 torn")  # a killed writer's leftover

    previous = read_summary(tmp_path / "summary.parquet")
    assert len(previous) == 4
    kept = complete_records(prepared, previous, tmp_path, "csv", s.parameters)
    assert sorted(kept) == [0]
    assert kept[0]["final.slider.x"] == records[0]["final.slider.x"]
    # a failed simulation is a result: kept like ok
    previous.loc[previous["case"] == 3, "status"] = "failed"
    (tmp_path / "runs" / "case-00003.csv").write_text("t\n0.0\n")
    assert sorted(complete_records(prepared, previous, tmp_path, "csv", s.parameters)) == [0, 3]


def test_an_unreadable_summary_means_start_afresh(tmp_path):
    (tmp_path / "summary.parquet").write_bytes(b"not parquet")
    assert read_summary(tmp_path / "summary.parquet") is None
    assert read_summary(tmp_path / "missing.parquet") is None


def test_atomic_write_leaves_the_old_file_when_the_writer_fails(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("old")

    def broken(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(p, broken)
    assert p.read_text() == "old" and list(tmp_path.iterdir()) == [p]
