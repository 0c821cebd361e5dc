"""One case of a sweep, the task a Dask worker runs: the engine's
:class:`~engine.simulation.Simulation`, exactly as ``linkwork run`` drives it, returning
its rows and the kept quantities.  A simulation failure (exit 3 of ``linkwork run``) is a
result (``status = "failed"``), not a task error."""

from __future__ import annotations

import math
import os
import time
from typing import Any

from .cases import build_settings
from .quantities import quantities

def run_case(doc: dict, settings: dict, keep: tuple[str, ...], trajectory: str = "array") -> dict:
    """One case, run through the engine's :class:`Simulation` exactly as ``linkwork run``
    does.  Returns a dict: ``status`` (ok / failed / refused), ``exit_status``
    (0 / 3 / 2), ``message``, the kept quantities, ``t_final``, ``rows`` (count),
    ``wall_time``, ``worker``, ``columns``, and the result rows as ``trajectory`` asks:
    ``"array"`` or ``"parquet"``: ``data`` (an array); ``"csv"``: ``csv``, the text of
    ``linkwork run``'s CSV (formatted here, on the worker, so a sweep's client only
    writes it); ``"none"``: neither.  A simulation failure is a result, not an exception."""
    import numpy as np

    from ..errors import MechanismError, SettingsError, SimulationError
    from ..mechfile import spec_from_dict
    from ..model import build_model
    from ..simulation import Simulation

    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = f"pid {os.getpid()}"
    t0 = time.perf_counter()
    out: dict[str, Any] = {"worker": worker, "message": ""}
    try:
        model = build_model(spec_from_dict(doc))
        sim = Simulation(model, build_settings(model, settings))
    except (MechanismError, SettingsError) as exc:
        out.update(status="refused", exit_status=2, message=str(exc), columns=[], data=None, t_final=math.nan,
                   rows=0, wall_time=time.perf_counter() - t0)
        return out
    parts = []
    status, code = "ok", 0
    try:
        for chunk in sim.run():
            parts.append(chunk.rows)
    except SimulationError as exc:
        status, code, out["message"] = "failed", 3, str(exc)
    data = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
    out.update(status=status, exit_status=code, wall_time=time.perf_counter() - t0, rows=int(data.shape[0]),
               t_final=float(data[-1, 0]) if data.shape[0] else math.nan)
    out.update(quantities(sim.columns, data, keep))
    out["columns"] = list(sim.columns)
    out["data"] = data if trajectory in ("array", "parquet") else None
    if trajectory == "csv":
        import io

        from ..results import CsvWriter

        buf = io.StringIO()
        CsvWriter(buf, sim.columns).write_rows(data)
        out["csv"] = buf.getvalue()
    return out
