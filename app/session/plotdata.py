"""What the plots show, computed from the result history (no Qt).

The live plot panel and the plot exporters both call :func:`series`, so an
exported PNG/SVG shows exactly the curves of the panel: every row of a short
run, the min/max envelope of a long one (a fixed number of buckets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .runs import RunRecord

PLOTS = ("energy", "violation", "quantity")
LEVELS = ("position", "velocity", "acceleration")
PLOT_TITLES = {
    "energy": "Energy drift E(t) − E(0)",
    "violation": "Constraint violation",
    "quantity": "Quantity",
}


@dataclass(frozen=True)
class Series:
    run_id: int
    key: str  # "energy", "violation.position", ..., or a column name
    label: str
    x: np.ndarray
    y: np.ndarray


def positive_or_nan(y: np.ndarray) -> np.ndarray:
    """For log axes: values <= 0 (exact zeros of a tree mechanism) become gaps."""
    out = np.array(y, dtype=float, copy=True)
    out[~(out > 0)] = np.nan
    return out


def quantity_choices(columns) -> list[str]:
    """Columns a user can pick for the quantity plot (everything but t)."""
    return [c for c in columns if c != "t"]


def default_quantity(columns) -> str:
    cols = list(columns)
    for c in cols:
        if c.startswith("joint.") and c.endswith(".q"):
            return c
    for c in cols:
        if c.endswith(".y"):
            return c
    return cols[1] if len(cols) > 1 else "t"


def quantity_label(col: str) -> str:
    """Readable label with units for a column name."""
    parts = col.split(".")
    if col.startswith("joint.") and len(parts) >= 3:
        return f"joint {'.'.join(parts[1:-1])} {'coordinate' if parts[-1] == 'q' else 'rate'}"
    if col.startswith("reaction.") and len(parts) >= 3:
        kind = {"f": "force", "n": "moment"}.get(parts[-1][0], "")
        return f"reaction {'.'.join(parts[1:-1])} {kind} {parts[-1][1:]}"
    if col.startswith("driver.") and len(parts) >= 3:
        return f"driver {'.'.join(parts[1:-1])} {parts[-1]}"
    if col.startswith("energy.") or col.startswith("violation."):
        return col.replace(".", " ")
    return col


def quantity_unit(col: str, spec=None) -> str:
    """SI unit of a results column; joint columns need ``spec`` (revolute: rad, prismatic: m)."""
    last = col.split(".")[-1]
    if col.startswith("energy."):
        return "J"
    if col.startswith("reaction."):
        return "N" if last.startswith("f") else "N·m"
    if col.startswith("joint."):
        name = ".".join(col.split(".")[1:-1])
        jtype = None
        if spec is not None:
            jtype = next((j.type for j in spec.joints if j.name == name), None)
        base = {"revolute": "rad", "prismatic": "m"}.get(jtype, "")
        return base + ("/s" if base and last == "qd" else "")
    if col.startswith("driver."):  # docs/file-format.md, "Drivers"
        if last == "power":
            return "W"
        name = ".".join(col.split(".")[1:-1])
        joint = next((d.joint for d in spec.drivers if d.name == name), None) if spec is not None else None
        jtype = next((j.type for j in spec.joints if j.name == joint), None) if joint is not None else None
        units = {"revolute": {"q": "rad", "rate": "rad/s", "effort": "N·m"},
                 "prismatic": {"q": "m", "rate": "m/s", "effort": "N"}}
        return units.get(jtype, {}).get(last, "")
    if last in ("x", "y", "z"):
        return "m"
    if last in ("vx", "vy", "vz"):
        return "m/s"
    if last in ("wx", "wy", "wz"):
        return "rad/s"
    return ""


def series(kind: str, run: RunRecord, quantity: str | None = None, levels=LEVELS,
           log_energy: bool = False) -> list[Series]:
    """The curves of plot ``kind`` for one run, from its overview: every row while the run
    has no more rows than the overview has buckets, else each bucket's minimum and maximum
    (:meth:`~app.session.runstore.Overview.series`), so a one-row spike is always drawn."""
    if run.n_rows == 0:
        return []
    ov = run.overview
    if kind == "energy":
        k = run.energy_column  # with drivers E - W, the conserved figure
        t, e = ov.series(k)
        d = e - ov.first[k]
        y = positive_or_nan(np.abs(d)) if log_energy else d
        what = "E − W" if run.driven else "E"
        return [Series(run.id, "energy", f"|Δ({what})|" if log_energy else f"{what} − ({what})(0)", t, y)]
    if kind == "violation":
        out = []
        for lv in levels:
            t, y = ov.series(run.col_index[f"violation.{lv}"])
            out.append(Series(run.id, f"violation.{lv}", lv, t, positive_or_nan(y)))
        return out
    if kind == "quantity":
        if quantity is None or quantity not in run.col_index:
            return []
        t, y = ov.series(run.col_index[quantity])
        return [Series(run.id, quantity, quantity, t, y)]
    raise ValueError(f"unknown plot {kind!r}")


class PlotOptions:
    """What the plots show; shared by the panel and the exporters.  Event ``changed()``."""

    def __init__(self):
        from .events import Event

        self.changed = Event("plot_options_changed")
        self._quantity: str | None = None
        self._levels: tuple[str, ...] = LEVELS
        self._log_energy = False

    @property
    def quantity(self) -> str | None:
        return self._quantity

    @property
    def levels(self) -> tuple[str, ...]:
        return self._levels

    @property
    def log_energy(self) -> bool:
        return self._log_energy

    def set(self, quantity: str | None = ..., levels=..., log_energy=...) -> None:
        ch = False
        if quantity is not ... and quantity != self._quantity:
            self._quantity = quantity
            ch = True
        if levels is not ...:
            lv = tuple(x for x in LEVELS if x in levels)
            if lv != self._levels:
                self._levels = lv
                ch = True
        if log_energy is not ... and bool(log_energy) != self._log_energy:
            self._log_energy = bool(log_energy)
            ch = True
        if ch:
            self.changed.emit()
