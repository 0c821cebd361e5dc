"""Styling and curve building shared by the live plot panel and the plot exporters."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.session.plotdata import LEVELS, PLOT_TITLES, quantity_label, quantity_unit, series
from app.session.runs import RunRecord

RUN_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
LEVEL_COLORS = {"position": "#1f77b4", "velocity": "#ff7f0e", "acceleration": "#2ca02c"}
LEVEL_STYLES = {"position": Qt.SolidLine, "velocity": Qt.DashLine, "acceleration": Qt.DotLine}
RUN_STYLES = (Qt.SolidLine, Qt.DashLine, Qt.DashDotLine, Qt.DotLine)
LEVEL_SHORT = {"position": "pos", "velocity": "vel", "acceleration": "acc"}


def run_color(run: RunRecord) -> str:
    return RUN_COLORS[run.color_index % len(RUN_COLORS)]


def curve_pen(kind: str, key: str, run: RunRecord, multi: bool, rank: int, width: float = 1.6):
    """Pen of one curve: per-run colours when runs are overlaid, per-level colours otherwise."""
    if kind == "violation":
        level = key.split(".", 1)[1]
        if multi:
            return pg.mkPen(run_color(run), width=width, style=LEVEL_STYLES[level])
        return pg.mkPen(LEVEL_COLORS[level], width=width)
    if multi:
        return pg.mkPen(run_color(run), width=width, style=RUN_STYLES[0] if rank == 0 else RUN_STYLES[
            1 + (rank - 1) % (len(RUN_STYLES) - 1)])
    return pg.mkPen(run_color(run), width=width)


def curve_name(kind: str, key: str, run: RunRecord, multi: bool, label: str | None = None) -> str | None:
    """Legend entry of a curve (None: not listed).  With several runs the violation plot
    lists each run once; the line style tells the level (see the title)."""
    label = label or run.label
    if kind == "violation":
        level = key.split(".", 1)[1]
        if multi:
            return label if level == "position" else None
        return level
    return label


def readout_name(kind: str, key: str, run: RunRecord, multi: bool, label: str | None = None) -> str:
    label = label or run.label
    if kind == "violation":
        level = LEVEL_SHORT[key.split(".", 1)[1]]
        return f"{level} · {label}" if multi else level
    return label


VIOLATION_STYLES_NOTE = "solid: position · dashed: velocity · dotted: acceleration"


def si_prefix(axis: pg.AxisItem, on: bool) -> None:
    """Switch automatic SI prefixes (mm, kN, ...) of an axis on or off.

    pyqtgraph 0.14 ignores ``enableAutoSIPrefix(False)`` for unit-less labels and scales
    a log axis of 1e-15 values to "femto"; an empty enable-range switches it off.
    """
    if hasattr(axis, "setSIPrefixEnableRanges"):
        axis.setSIPrefixEnableRanges(None if on else ())
    axis.enableAutoSIPrefix(on)  # recomputes the scale with the ranges above


def configure_plot(plot: pg.PlotItem, kind: str, quantity: str | None, log_energy: bool, spec=None) -> None:
    """Axes, titles and log modes of one of the three plots."""
    plot.showGrid(x=True, y=True, alpha=0.25)
    plot.setLabel("bottom", "t", units="s")
    if kind == "energy":
        plot.setTitle(PLOT_TITLES["energy"] + (" (log |ΔE|)" if log_energy else ""), size="10pt")
        plot.setLogMode(x=False, y=log_energy)
        plot.setLabel("left", "|ΔE|" if log_energy else "ΔE", units="J")
        si_prefix(plot.getAxis("left"), not log_energy)
    elif kind == "violation":
        plot.setTitle(PLOT_TITLES["violation"] + " (log)", size="10pt")
        plot.setLogMode(x=False, y=True)
        plot.setLabel("left", "‖Φ‖")
        si_prefix(plot.getAxis("left"), False)
    else:
        title = quantity_label(quantity) if quantity else PLOT_TITLES["quantity"]
        plot.setTitle(title, size="10pt")
        plot.setLogMode(x=False, y=False)
        unit = quantity_unit(quantity or "", spec)
        # the title names the quantity; the axis says the unit
        plot.setLabel("left", "value" if not unit else "", units=unit or None)
        # metres and newtons read well with prefixes (mm, kN); radians and bare numbers do not
        si_prefix(plot.getAxis("left"), unit in ("m", "m/s", "N", "N·m", "J"))


def set_violation_title(plot: pg.PlotItem, multi: bool) -> None:
    title = PLOT_TITLES["violation"] + " (log)"
    if multi:
        title += f"<br><span style='font-size:8pt'>{VIOLATION_STYLES_NOTE}</span>"
    plot.setTitle(title, size="10pt")


def plot_runs(history, current) -> list[RunRecord]:
    """Runs overlaid in the plots: the current one first, then the visible others."""
    runs = [r for r in history.visible_runs() if r is not current]
    return ([current] if current is not None else []) + runs


def short_labels(runs: list[RunRecord]) -> dict[int, str]:
    """Run labels without the words all runs share ("dense/rk4 dt=0.01" vs "dense/rk45
    dt=0.01" -> "rk4" and "rk45")."""
    if len(runs) < 2:
        return {r.id: r.label for r in runs}
    split = {r.id: r.label.replace("/", " ").split() for r in runs}
    common = set.intersection(*(set(t) for t in split.values()))
    out = {}
    for r in runs:
        words = [w for w in split[r.id] if w not in common]
        out[r.id] = " ".join(words) if words else f"run {r.id}"
    return out


def wants_legend(kind: str, runs: list[RunRecord]) -> bool:
    """A legend only says something for several runs, or for the violation levels."""
    return len(runs) > 1 or kind == "violation"


def build_static_plot(plot: pg.PlotItem, kind: str, runs: list[RunRecord], quantity: str | None,
                      levels=LEVELS, log_energy: bool = False, width: float = 1.6) -> int:
    """Fill ``plot`` with the full-resolution curves of ``runs`` (for export); returns #curves."""
    configure_plot(plot, kind, quantity, log_energy, runs[0].spec if runs else None)
    multi = len(runs) > 1
    if kind == "violation":
        set_violation_title(plot, multi)
    if wants_legend(kind, runs):
        legend = plot.addLegend(offset=(-10, 10), labelTextSize="9pt")
        legend.setBrush(pg.mkBrush(255, 255, 255, 210))
    names = short_labels(runs)
    n = 0
    for rank, run in enumerate(runs):
        for s in series(kind, run, quantity, levels, log_energy):
            plot.plot(s.x, s.y, pen=curve_pen(kind, s.key, run, multi, rank, width),
                      name=curve_name(kind, s.key, run, multi, names.get(run.id)), connect="finite")
            n += 1
    return n
