"""A sweep's results directory: ``runs/`` (each case's trajectory) and
``summary.parquet`` (one row per case), every file written to a temporary name and
renamed, so a killed sweep never leaves a torn file; and the rows of an earlier
summary that a resumed sweep keeps."""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path
from typing import Callable

from .cases import PreparedCase

#: summary columns always present, in this order (parameters and quantities follow)
HEAD_COLUMNS = ("case", "status", "exit_status", "message")
TAIL_COLUMNS = ("t_final", "rows", "wall_time", "worker", "session", "finished_at", "case_key", "fault",
                "case_timeout")
#: case status -> meaning; ``ok`` and ``failed`` rows are complete results (a resumed
#: sweep skips them, but see :func:`complete_records` for the failures of a fault);
#: ``refused`` and ``error`` cases are tried again
STATUSES = {"ok": "the run reached t_end",
            "failed": "the simulation failed (exit 3 of linkwork run), or the case exceeded the per-case time "
                      "limit, or its process was killed on every attempt (column fault): rows up to then are kept",
            "refused": "the loader or the settings check refused the case (exit 2 of linkwork run)",
            "error": "the task raised an unexpected exception twice"}
COMPLETE = ("ok", "failed")
#: ``fault`` of a failed case -> meaning (None: the simulation itself failed)
TIME_LIMIT, KILLED, WORKER_DIED = "time limit", "killed", "worker died"
FAULTS = {TIME_LIMIT: "exceeded the per-case time limit (case_timeout, seconds): its process was stopped",
          KILLED: "the process running the case died (a signal, as the out-of-memory killer's SIGKILL, or a "
                    "crash) on every attempt",
          WORKER_DIED: "the Dask worker process running the case died on every attempt"}


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` then rename onto ``path``: a reader (or a killed writer) sees the old
    file or the new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Remove the temporary files that writers killed in the middle of
    :func:`atomic_write` left in ``directory`` (those of a live process are left alone)."""
    removed = []
    for p in Path(directory).glob(".*.tmp"):
        parts = p.name.split(".")
        try:
            pid = int(parts[-3])
        except (IndexError, ValueError):
            continue
        try:
            os.kill(pid, 0)
            continue  # its writer is alive
        except ProcessLookupError:
            pass
        except PermissionError:  # another user's live process
            continue
        try:
            p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def trajectory_path(out_dir: Path, index: int, fmt: str) -> Path:
    return Path(out_dir) / "runs" / f"case-{index:05d}.{fmt}"


def write_trajectory(path: Path, columns: list[str], data, fmt: str) -> None:
    """The case's rows as the contract's CSV (``repr`` digits, as ``linkwork run``), or Parquet."""
    if fmt == "csv":
        from ..results import CsvWriter

        def write(tmp):
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                CsvWriter(fh, columns).write_rows(data)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        def write(tmp):
            table = pa.table({c: data[:, i] for i, c in enumerate(columns)})
            pq.write_table(table, tmp)
    atomic_write(path, write)


def _column_values(values: list) -> list:
    """Parameter values of one column: numbers as floats, or (any non-number present) JSON text."""
    if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
        return [math.nan if v is None else float(v) for v in values]
    return [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values]


def summary_frame(records: dict[int, dict], parameters: tuple[str, ...], keep_columns: list[str]):
    """The summary table (pandas), one row per case in case order."""
    import pandas as pd

    idx = sorted(records)
    cols: dict[str, list] = {c: [records[i].get(c) for i in idx] for c in HEAD_COLUMNS}
    for p in parameters:
        cols[f"param.{p}"] = _column_values([records[i].get("params", {}).get(p) for i in idx])
    for q in keep_columns:
        cols[q] = [float(records[i].get(q, math.nan)) for i in idx]
    for c in TAIL_COLUMNS:
        cols[c] = [records[i].get(c) for i in idx]
    df = pd.DataFrame(cols)
    df["case"] = df["case"].astype("int64")
    df["exit_status"] = df["exit_status"].astype("int64")
    df["rows"] = df["rows"].fillna(0).astype("int64")
    for c in ("t_final", "wall_time", "case_timeout"):
        df[c] = df[c].astype("float64")
    return df


def write_summary(path: Path, df) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def read_summary(path: Path):
    """A previous summary (pandas), or None when there is none or it cannot be read."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pandas()
    except Exception:  # noqa: BLE001 -- missing, torn by an older writer, or not Parquet: start afresh
        return None


def _record_from_row(row, parameters) -> dict:
    rec = {k: (None if isinstance(v, float) and math.isnan(v) and k in ("message", "worker", "fault") else v)
           for k, v in row.items()}
    rec["params"] = {}
    for p in parameters:
        if f"param.{p}" in row:
            rec["params"][p] = row[f"param.{p}"]
    return rec


def _is_result(row, case_timeout: float | None) -> bool:
    """Whether a ``failed`` row is a result a resumed sweep keeps: a simulation failure
    is; a case stopped by the time limit is while the limit is no longer than the one
    it had; a case whose process or worker died (perhaps of other programs' memory use)
    is not."""
    fault = row.get("fault")
    if fault is None or (isinstance(fault, float) and math.isnan(fault)):
        return True
    if fault == TIME_LIMIT:
        had = row.get("case_timeout")
        return (case_timeout is not None and had is not None and not math.isnan(float(had))
                and case_timeout <= float(had))
    return False


def complete_records(prepared: list[PreparedCase], previous, out_dir: Path | None, fmt: str,
                     parameters: tuple[str, ...], case_timeout: float | None = None) -> dict[int, dict]:
    """The rows of an earlier summary that a resumed sweep keeps: status ``ok``, or
    ``failed`` as a result (:func:`_is_result`, given this session's ``case_timeout``),
    the same case definition (``case_key``: mechanism, settings, kept quantities), and
    its trajectory file present.  Every other case is computed."""
    by_case = {int(r["case"]): r for r in previous.to_dict("records")}
    out: dict[int, dict] = {}
    for pc in prepared:
        row = by_case.get(pc.index)
        if (row is not None and pc.refused is None and row.get("status") in COMPLETE
                and (row.get("status") == "ok" or _is_result(row, case_timeout))
                and row.get("case_key") == pc.key
                and (fmt == "none" or out_dir is None or trajectory_path(out_dir, pc.index, fmt).is_file())):
            rec = _record_from_row(row, parameters)
            rec["params"] = dict(pc.case.params)
            out[pc.index] = rec
    return out
