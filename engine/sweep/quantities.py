"""The quantities a sweep keeps from every run (docs/sweeps.md, "Kept quantities"),
computed from the run's result rows."""

from __future__ import annotations

import math

def quantities(columns: list[str], rows, keep: tuple[str, ...]) -> dict:
    """The kept quantities of one run, computed from its result rows (the same numbers
    as the rows of ``linkwork run``'s CSV, so a reader can recompute them from it)."""
    import numpy as np

    from ..results import BODY_FIELDS

    rows = np.asarray(rows, dtype=float)
    col = {c: i for i, c in enumerate(columns)}
    empty = rows.shape[0] == 0
    out: dict[str, float] = {}
    for q in keep:
        if q == "final_state":
            for c in columns:
                name, _, fld = c.rpartition(".")
                if fld in BODY_FIELDS and not c.startswith(("joint.", "reaction.")):
                    out[f"final.{c}"] = math.nan if empty else float(rows[-1, col[c]])
        elif q == "max_position_violation":
            out[q] = math.nan if empty else float(np.max(rows[:, col["violation.position"]]))
        elif q == "energy_drift":
            e = rows[:, col["energy.total"]]
            out[q] = math.nan if empty else float(np.max(np.abs(e - e[0])))
        elif q == "reaction_peaks":
            for c in columns:
                if c.startswith("reaction.") and c.endswith(".fx"):
                    j = c[len("reaction."):-len(".fx")]
                    for part, fields_ in (("force", "fxyz"), ("moment", "nxyz")):
                        idx = [col[f"reaction.{j}.{fields_[0]}{a}"] for a in "xyz"]
                        v = math.nan if empty else float(np.max(np.sqrt(np.sum(rows[:, idx] ** 2, axis=1))))
                        out[f"reaction_peak.{j}.{part}"] = v
        else:
            stat, _, c = q.partition(":")
            if c not in col:
                out[f"{stat}.{c}"] = math.nan
                continue
            x = rows[:, col[c]]
            out[f"{stat}.{c}"] = (math.nan if empty else
                                  float({"final": lambda a: a[-1], "max": np.max, "min": np.min,
                                         "mean": np.mean}[stat](x)))
    return out
