"""Styling and curve building shared by the live plot panel and the plot exporters."""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QSizePolicy

from linkwork.app.session.plotdata import LEVELS, PLOT_TITLES, quantity_label, quantity_unit, series
from linkwork.app.session.runs import RunRecord

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


def readout_name(kind: str, key: str, run: RunRecord, multi: bool, label: str | None = None) -> str:
    label = label or run.label
    if kind == "violation":
        level = LEVEL_SHORT[key.split(".", 1)[1]]
        return f"{level} · {label}" if multi else level
    return label


VIOLATION_STYLES_NOTE = "solid: position · dashed: velocity · dotted: acceleration"


@dataclass(frozen=True)
class PlotStyle:
    """Text sizes and colours of the plots: pyqtgraph's default grey (150, 150, 150) on
    white read pale, and the screen's 8 pt ticks were small in a 1600-pixel export."""

    tick_pt: float = 8.0
    title_pt: float = 10.0
    label_pt: float = 9.0
    legend_pt: float = 9.0
    text: str = "#262a30"
    axis: str = "#6b7280"


SCREEN = PlotStyle()
EXPORT = PlotStyle(tick_pt=11.0, title_pt=13.0, label_pt=11.0, legend_pt=12.0, text="#15181c", axis="#4b5059")


def style_axes(plot: pg.PlotItem, style: PlotStyle) -> None:
    """Dark text, readable sizes (before the labels are set: they take the axis' text pen)."""
    font = QFont()
    font.setPointSizeF(style.tick_pt)
    for name in ("left", "bottom"):
        ax = plot.getAxis(name)
        ax.setPen(pg.mkPen(style.axis))
        ax.setTextPen(pg.mkPen(style.text))
        ax.setStyle(tickFont=font)
        ax.labelStyle = {"color": style.text, "font-size": f"{style.label_pt:g}pt"}
    plot.titleLabel.opts["color"] = style.text


def _label(plot: pg.PlotItem, side: str, text: str, units: str | None = None) -> None:
    ax = plot.getAxis(side)
    plot.setLabel(side, text, units=units, **getattr(ax, "labelStyle", {}))


def si_prefix(axis: pg.AxisItem, on: bool) -> None:
    """Switch automatic SI prefixes (mm, kN, ...) of an axis on or off.

    pyqtgraph 0.14 ignores ``enableAutoSIPrefix(False)`` for unit-less labels and scales
    a log axis of 1e-15 values to "femto"; an empty enable-range switches it off.
    """
    if hasattr(axis, "setSIPrefixEnableRanges"):
        axis.setSIPrefixEnableRanges(None if on else ())
    axis.enableAutoSIPrefix(on)  # recomputes the scale with the ranges above


def configure_plot(plot: pg.PlotItem, kind: str, quantity: str | None, log_energy: bool, spec=None,
                   style: PlotStyle = SCREEN) -> None:
    """Axes, titles and log modes of one of the three plots."""
    style_axes(plot, style)
    plot.showGrid(x=True, y=True, alpha=0.25)
    _label(plot, "bottom", "t", units="s")
    size = f"{style.title_pt:g}pt"
    if kind == "energy":
        # driven: the drivers' work W subtracted, the figure the mechanism conserves
        title = "Energy drift (E − W)(t) − (E − W)(0)" if getattr(spec, "drivers", ()) else PLOT_TITLES["energy"]
        plot.setTitle(title + (" (log |ΔE|)" if log_energy else ""), size=size, color=style.text)
        plot.setLogMode(x=False, y=log_energy)
        _label(plot, "left", "|ΔE|" if log_energy else "ΔE", units="J")
        si_prefix(plot.getAxis("left"), not log_energy)
    elif kind == "violation":
        plot.setTitle(PLOT_TITLES["violation"] + " (log)", size=size, color=style.text)
        plot.setLogMode(x=False, y=True)
        _label(plot, "left", "‖Φ‖")
        si_prefix(plot.getAxis("left"), False)
    else:
        title = quantity_label(quantity) if quantity else PLOT_TITLES["quantity"]
        plot.setTitle(title, size=size, color=style.text)
        plot.setLogMode(x=False, y=False)
        unit = quantity_unit(quantity or "", spec)
        # the title names the quantity; the axis says the unit
        _label(plot, "left", "value" if not unit else "", units=unit or None)
        # metres and newtons read well with prefixes (mm, kN); radians and bare numbers do not
        si_prefix(plot.getAxis("left"), unit in ("m", "m/s", "N", "N·m", "J"))


def set_violation_title(plot: pg.PlotItem, multi: bool, style: PlotStyle = SCREEN) -> None:
    """The violation plot's title says what its curves are, outside the curves: the line
    styles of the levels when runs are overlaid (colours are the runs'), the levels'
    colours for one run."""
    title = PLOT_TITLES["violation"] + " (log)"
    small = f"font-size:{style.title_pt - 2:g}pt"
    if multi:
        title += f"<br><span style='{small}'>{VIOLATION_STYLES_NOTE}</span>"
    else:
        words = " · ".join(f"<span style='color:{LEVEL_COLORS[lv]}'>{lv}</span>" for lv in LEVEL_COLORS)
        title += f"<br><span style='{small}'>{words}</span>"
    plot.setTitle(title, size=f"{style.title_pt:g}pt", color=style.text)


def make_legend(layout: pg.GraphicsLayout, ncols: int, style: PlotStyle = SCREEN) -> pg.LegendItem:
    """The runs' legend: a row of its own above the plots (row 0 of ``layout``, across
    ``ncols`` columns), so no entry covers a curve -- inside a plot it hid where two
    compared runs separate."""
    legend = pg.LegendItem(colCount=8, labelTextSize=f"{style.legend_pt:g}pt", labelTextColor=style.text,
                           horSpacing=18)
    legend.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Fixed)
    legend.layout.setContentsMargins(2, 0, 2, 0)
    layout.addItem(legend, row=0, col=0, colspan=ncols)
    layout.layout.setAlignment(legend, Qt.AlignHCenter | Qt.AlignVCenter)
    return legend


def fill_legend(legend: pg.LegendItem, runs: list[RunRecord], names: dict[int, str] | None = None,
                width: float = 1.6) -> None:
    """One entry per run: its colour and the line style of its energy and quantity curves."""
    legend.clear()
    names = names or short_labels(runs)
    multi = len(runs) > 1
    for rank, run in enumerate(runs):
        sample = pg.PlotDataItem(pen=curve_pen("energy", "energy", run, multi, rank, width))
        legend.addItem(sample, names.get(run.id, run.label))
    legend.updateGeometry()


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


def build_static_plots(layout: pg.GraphicsLayout, kinds, runs: list[RunRecord], quantity: str | None,
                       levels=LEVELS, log_energy: bool = False, width: float = 1.6,
                       style: PlotStyle = EXPORT) -> list[pg.PlotItem]:
    """The legend row and the plots ``kinds`` side by side with the full-resolution curves
    of ``runs`` (for export); returns the plots."""
    legend = make_legend(layout, len(kinds), style)
    fill_legend(legend, runs, width=width)
    multi = len(runs) > 1
    items = []
    for col, kind in enumerate(kinds):
        plot = layout.addPlot(row=1, col=col)
        configure_plot(plot, kind, quantity, log_energy, runs[0].spec if runs else None, style)
        if kind == "violation":
            set_violation_title(plot, multi, style)
        for rank, run in enumerate(runs):
            for s in series(kind, run, quantity, levels, log_energy):
                plot.plot(s.x, s.y, pen=curve_pen(kind, s.key, run, multi, rank, width), connect="finite")
        items.append(plot)
    align_titles(items)
    return items


def align_titles(plots) -> None:
    """Titles of one height, so that plots side by side start at the same height (the
    violation plot's title has a second line)."""
    plots = list(plots)
    h = max((pi.titleLabel.item.boundingRect().height() for pi in plots), default=0.0)
    for pi in plots:
        pi.titleLabel.setMinimumHeight(h)
        pi.titleLabel.setMaximumHeight(h)
