"""One case of a sweep: the engine's :class:`~engine.simulation.Simulation`, exactly as
``linkwork run`` drives it, and the result a sweep keeps from it (the kept quantities,
the rows).  A simulation failure (exit 3 of ``linkwork run``) is a result
(``status = "failed"``), not a task error.

:func:`simulate` is the run itself, as a stream of events, so a case can run in another
process and hand its rows over as they come (:mod:`.runner`); :func:`case_result` makes
the result from them; :func:`run_case` does both in this process."""

from __future__ import annotations

import math
import os
import time
from typing import Any, Iterator

from .cases import build_settings
from .quantities import quantities


def simulate(doc: dict, settings: dict, chunk_rows: int | None = None,
             max_interval: float | None = None) -> Iterator[tuple]:
    """Run one case, yielding events: ``("refused", message)`` (the loader or the settings
    check refused it: exit 2 of ``linkwork run``, nothing else follows), or
    ``("columns", columns, t_end)``, then ``("rows", array)`` per result chunk (``chunk_rows``
    rows, or fewer after ``max_interval`` seconds of wall time), then ``("end", status,
    exit_status, message)``: ``"ok", 0, ""`` or, when the simulation failed, ``"failed",
    3`` and ``linkwork run``'s message."""
    from .. import config
    from ..errors import MechanismError, SettingsError, SimulationError
    from ..mechfile import spec_from_dict
    from ..model import build_model
    from ..simulation import Simulation

    try:
        model = build_model(spec_from_dict(doc))
        sim = Simulation(model, build_settings(model, settings))
    except (MechanismError, SettingsError) as exc:
        yield ("refused", str(exc))
        return
    yield ("columns", list(sim.columns), float(sim.settings.t_end))
    try:
        for chunk in sim.run(chunk_rows or config.CHUNK_ROWS, max_interval):
            yield ("rows", chunk.rows)
    except SimulationError as exc:
        yield ("end", "failed", 3, str(exc))
        return
    yield ("end", "ok", 0, "")


def worker_name() -> str:
    """The Dask worker's address, or this process when not on a worker."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def case_result(columns: list[str], data, status: str, exit_status: int, message: str, keep: tuple[str, ...],
                trajectory: str, *, worker: str, wall_time: float, refused: bool = False) -> dict:
    """The result a sweep keeps from one case: ``status`` (ok / failed / refused),
    ``exit_status`` (0 / 3 / 2), ``message``, the kept quantities, ``t_final``, ``rows``
    (count), ``wall_time``, ``worker``, ``columns``, and the rows as ``trajectory`` asks:
    ``"array"`` or ``"parquet"``: ``data`` (an array); ``"csv"``: ``csv``, the text of
    ``linkwork run``'s CSV (formatted where the case ran, so a sweep's client only
    writes it); ``"none"``: neither."""
    import numpy as np

    out: dict[str, Any] = {"worker": worker, "status": status, "exit_status": exit_status, "message": message,
                           "wall_time": wall_time}
    if refused or not columns:  # refused, or stopped before its first row
        out.update(columns=[], data=None, t_final=math.nan, rows=0)
        return out
    data = np.asarray(data) if data is not None else np.zeros((0, len(columns)))
    out.update(rows=int(data.shape[0]), t_final=float(data[-1, 0]) if data.shape[0] else math.nan)
    out.update(quantities(columns, data, keep))
    out["columns"] = list(columns)
    out["data"] = data if trajectory in ("array", "parquet") else None
    if trajectory == "csv":
        import io

        from ..results import CsvWriter

        buf = io.StringIO()
        CsvWriter(buf, columns).write_rows(data)
        out["csv"] = buf.getvalue()
    return out


def stack_rows(parts: list, ncols: int):
    import numpy as np

    return np.vstack(parts) if parts else np.zeros((0, ncols))


def run_case(doc: dict, settings: dict, keep: tuple[str, ...], trajectory: str = "array") -> dict:
    """One case, run in this process through the engine's :class:`Simulation` exactly as
    ``linkwork run`` does; the result as :func:`case_result` describes it.  A simulation
    failure is a result, not an exception.  (A sweep runs its cases through
    :func:`.runner.run_isolated`, which runs this same code in a process of its own.)"""
    t0 = time.perf_counter()
    worker = worker_name()
    columns: list[str] = []
    parts: list = []
    for event in simulate(doc, settings):
        if event[0] == "refused":
            return case_result([], None, "refused", 2, event[1], keep, trajectory, worker=worker,
                               wall_time=time.perf_counter() - t0, refused=True)
        if event[0] == "columns":
            columns = event[1]
        elif event[0] == "rows":
            parts.append(event[1])
        else:
            _, status, code, message = event
    return case_result(columns, stack_rows(parts, len(columns)), status, code, message, keep, trajectory,
                       worker=worker, wall_time=time.perf_counter() - t0)
