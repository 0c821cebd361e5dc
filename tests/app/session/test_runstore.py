"""Runs streamed to disk: the file holds the appended rows bit for bit, a file cut by a
kill reads back to its last complete chunk, the plots' overview keeps every bucket's
extremes, Export › CSV from the file equals ``linkwork run``'s, and the run history
survives a restart within its size cap."""

from __future__ import annotations

import socket

import numpy as np

from linkwork.app.session import Session
from linkwork.app.session.export import cli_command, export_csv
from linkwork.app.session.runs import RunRecord
from linkwork.app.session.runstore import (
    INDEX, ROWS, Overview, RowsWriter, RunStore, folder_size, read_rows,
)
from linkwork.app.session.simulate import RunControl, simulation_items
from linkwork.app.session.solver import human_bytes
from linkwork.engine import generators as gen
from linkwork.engine.model import build_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.results import columns as result_columns
from linkwork.engine.simulation import ResultChunk, Settings

EXAMPLE = "fourbar-crank-rocker.mech.json"


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype="<f8").view(np.uint64)


def _odd_rows(rng, n, ncols):
    rows = rng.standard_normal((n, ncols)) * 10.0 ** rng.integers(-300, 300, (n, ncols))
    rows[:, 0] = np.arange(n) * 0.01
    rows[n // 3, 2] = np.nan
    rows[n // 2, 3] = -0.0
    rows[n // 4, 1] = np.inf
    return rows


def _record(store=None) -> RunRecord:
    model = build_model(gen.chain(2, "revolute"))
    return RunRecord(model.spec, model, Settings(dt=0.01, t_end=1.0), result_columns(model), store=store)


def test_rows_streamed_to_the_file_equal_the_appended_rows_bit_for_bit():
    rec = _record()
    rng = np.random.default_rng(1)
    rows = _odd_rows(rng, 300, len(rec.columns))
    cuts = [0, 1, 2, 50, 51, 180, 300]
    for a, b in zip(cuts[:-1], cuts[1:]):
        rec.append(rows[a:b])
    rec.set_status("finished")
    f = read_rows(rec.path, verify="all")
    assert (f.n_rows, f.chunks, f.intact) == (300, 6, True)
    assert np.array_equal(_bits(f.memmap()), _bits(rows))
    assert np.array_equal(_bits(rec.data), _bits(rows))
    assert np.array_equal(_bits(np.vstack(list(rec.blocks()))), _bits(rows))
    assert rec.row_at(1.005) == 100 and rec.row_at(-1.0) == 0 and rec.row_at(99.0) == 299


def _copy_prefix(src, dst, rows_bytes=None, idx_bytes=None):
    dst.mkdir()
    for name, keep in ((ROWS, rows_bytes), (INDEX, idx_bytes)):
        data = (src / name).read_bytes()
        (dst / name).write_bytes(data if keep is None else data[:keep])


def test_a_file_cut_mid_chunk_reads_back_every_complete_chunk(tmp_path):
    cols = [f"c{k}" for k in range(5)]
    rng = np.random.default_rng(2)
    rows = rng.standard_normal((40, 5))
    w = RowsWriter(tmp_path, cols)
    for k in range(0, 40, 8):  # five chunks of 8 rows
        w.append(rows[k:k + 8])
    w.close()
    head = w.header_len
    # killed while the fourth chunk's rows were being written (its record never came)
    cut = tmp_path / "cut_rows"
    _copy_prefix(tmp_path, cut, rows_bytes=head + (24 + 5) * 5 * 8 + 3, idx_bytes=3 * 16)
    f = read_rows(cut, verify="all")
    assert (f.n_rows, f.chunks, f.intact) == (24, 3, False)
    assert np.array_equal(f.memmap(), rows[:24])
    # a file copied while the rows ran ahead of the index, the index cut mid-record
    cut2 = tmp_path / "cut_index"
    _copy_prefix(tmp_path, cut2, rows_bytes=head + 30 * 5 * 8 + 17, idx_bytes=2 * 16 + 9)
    f = read_rows(cut2)
    assert (f.n_rows, f.chunks, f.intact) == (16, 2, False)
    assert np.array_equal(f.memmap(), rows[:16])
    # the last chunk's bytes damaged: its checksum drops it
    bad = tmp_path / "bad"
    _copy_prefix(tmp_path, bad)
    data = bytearray((bad / ROWS).read_bytes())
    data[head + 35 * 5 * 8 + 4] ^= 0x40
    (bad / ROWS).write_bytes(bytes(data))
    f = read_rows(bad)
    assert (f.n_rows, f.chunks, f.intact) == (32, 4, False)
    whole = read_rows(tmp_path, verify="all")
    assert (whole.n_rows, whole.chunks, whole.intact) == (40, 5, True)


def test_the_overview_keeps_every_buckets_minimum_and_maximum():
    n, ncols = 1000, 3
    t = np.arange(n) * 1e-3
    rows = np.column_stack([t, np.sin(40 * t), np.cos(7 * t)])
    rows[537, 1] = 25.0  # a one-row spike
    rows[100:140, 2] = np.nan
    ov = Overview(ncols, max_buckets=16)
    rng = np.random.default_rng(3)
    i = 0
    while i < n:
        k = int(rng.integers(1, 90))
        ov.add(rows[i:i + k])
        i += k
    assert ov.rows == n and ov.n_buckets == 16 and ov.width == 64
    for col in (1, 2):
        t0, lo, hi = ov.buckets(col)
        for b in range(len(t0)):  # bucket b: rows [64 b, 64 b + 64), the last one unfinished
            part = rows[b * 64:(b + 1) * 64, col]
            assert t0[b] == rows[b * 64, 0]
            assert lo[b] == np.nanmin(part) and hi[b] == np.nanmax(part)
        assert len(t0) == -(-n // 64)
    x, y = ov.series(1)
    assert y.max() == 25.0 and x[np.argmax(y)] == rows[512, 0]
    lo, hi = ov.column_range([1, 2])
    assert hi[0] == 25.0 and lo[1] == np.nanmin(rows[:, 2])
    # while the run has no more rows than buckets, the overview is the rows themselves
    small = Overview(ncols, max_buckets=16)
    small.add(rows[:15])
    assert np.array_equal(small.series(1)[1], rows[:15, 1])


def _run(session: Session, **overrides) -> RunRecord:
    run = session.prepare_run(overrides=overrides)
    for item in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(item, ResultChunk):
            run.append(item.rows, item.stats)
    run.set_status("finished")
    return run


def test_export_csv_from_the_file_equals_linkwork_run(tmp_path):
    from linkwork.engine.cli import main

    mech = examples_dir() / EXAMPLE
    s = Session()
    s.document.open(str(mech))
    s.solver.update(t_end=0.3, dt=0.01)
    estimate = s.solver.output_estimate()  # what the solver panel shows before the run
    run = _run(s)
    assert run.n_rows == 31
    # the estimate said the rows, the columns and the size the run's file then had
    size = human_bytes((run.path / ROWS).stat().st_size)
    assert estimate == f"Output: 31 rows × {len(run.columns)} columns, {size} on disk"
    ours = export_csv(run, tmp_path / "app.csv")
    theirs = tmp_path / "cli.csv"
    argv = cli_command(run, mech, str(theirs)).split()[1:]
    assert main(argv) == 0
    assert ours.read_bytes() == theirs.read_bytes()


def test_the_history_lists_runs_after_a_restart_and_its_cap_removes_the_oldest(tmp_path):
    mech = examples_dir() / EXAMPLE
    store = RunStore(tmp_path / "runs")
    s = Session(run_store=store)
    s.document.open(str(mech))
    first = _run(s, t_end=0.2, dt=0.01)
    second = _run(s, t_end=0.3, dt=0.01)
    killed = s.prepare_run(overrides={"t_end": 1.0, "dt": 0.01})
    rows = np.vstack([it.rows for it in simulation_items(killed.model, killed.settings, RunControl())
                      if isinstance(it, ResultChunk)])
    for k in range(0, 60, 20):
        killed.append(rows[k:k + 20])
    killed.set_status("running")
    # the process dies: its pid names no process, and the third chunk's rows are cut short
    killed._owner = {"pid": 2**22 + 4321, "host": socket.gethostname(), "boot_id": None, "started": None}
    killed._save_meta()
    with open(killed.path / ROWS, "r+b") as fh:
        fh.truncate(killed._header_len + (40 * len(killed.columns) + 7) * 8)

    again = Session(run_store=RunStore(tmp_path / "runs"))
    runs = again.history.runs
    assert [r.path for r in runs] == [first.path, second.path, killed.path]
    assert [r.status for r in runs] == ["finished", "finished", "incomplete"]
    assert [r.n_rows for r in runs] == [21, 31, 40]
    assert np.array_equal(_bits(runs[1].data), _bits(second.data))
    assert np.array_equal(_bits(runs[2].data), _bits(rows[:40]))
    assert runs[1].settings == second.settings and runs[1].spec == second.spec
    assert again.history.current is runs[2]

    # opening a mechanism lists its kept runs only; Remove takes a run off the disk too
    other = Session(run_store=RunStore(tmp_path / "runs"))
    other.document.open(str(examples_dir() / "loop-4.mech.json"))
    assert other.history.runs == []
    same = Session(run_store=RunStore(tmp_path / "runs"))
    same.document.open(str(mech))
    assert [r.path for r in same.history.runs] == [first.path, second.path, killed.path]
    extra = _run(same, t_end=0.1, dt=0.01)
    same.remove_run(extra)
    assert not extra.path.exists() and extra not in same.history.runs

    # a cap that holds the two newest runs only: the oldest goes at the next start
    cap = folder_size(second.path) + folder_size(killed.path) + 10
    third = Session(run_store=RunStore(tmp_path / "runs", cap_bytes=cap))
    assert [r.path for r in third.history.runs] == [second.path, killed.path]
    assert not first.path.exists()
    assert third.clear_run_history() == 2
    assert third.history.runs == [] and RunStore(tmp_path / "runs").folders() == []


def test_a_growing_run_keeps_the_history_under_its_cap(tmp_path, monkeypatch):
    """The cap is checked again as a run grows, not only when one starts: the older run
    goes once the growing one has written enough to push the total over the cap."""
    import linkwork.app.session.session as session_module

    mech = examples_dir() / EXAMPLE
    s = Session(run_store=RunStore(tmp_path / "runs"))
    s.document.open(str(mech))
    first = _run(s, t_end=0.5, dt=0.01)
    monkeypatch.setattr(session_module, "CAP_CHECK_BYTES", 1)
    growing = s.prepare_run(overrides={"t_end": 1.0, "dt": 0.01})
    rows = np.vstack([it.rows for it in simulation_items(growing.model, growing.settings, RunControl())
                      if isinstance(it, ResultChunk)])
    growing.set_status("running")
    growing.append(rows[:10])
    s.run_store.cap_bytes = s.run_store.total_bytes() + 100  # the next rows go past it
    assert first.path.exists() and first in s.history.runs
    growing.append(rows[10:])
    assert not first.path.exists() and first not in s.history.runs
    assert growing.path.exists()
