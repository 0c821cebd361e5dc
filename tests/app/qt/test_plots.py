"""The plots' legend and text, on screen and exported: the runs'
legend is a row of its own above the plots -- inside a plot it covered the curves where
two compared runs separate -- and exported text is dark and large enough to read."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QImage

from linkwork.engine import generators as g

from linkwork.app.qt import exporting
from linkwork.app.qt.plotting import run_color
from linkwork.app.session.plotdata import PLOTS


def _two_runs(win, qtbot, run_to_end):
    win.session.document.replace(g.fourbar())
    first = run_to_end(win, t_end=0.3)
    with qtbot.waitSignal(win.runner.run_finished, timeout=60_000):
        second = win.compare({"integrator": "rk45"}, first.settings)
    return first, second


def _legend_entries(legend: pg.LegendItem) -> list[str]:
    return [label.text for _sample, label in legend.items]


def _assert_legend_off_the_plots(legend, plots):
    box = legend.sceneBoundingRect()
    assert box.height() > 0 and box.width() > 0
    for pi in plots:
        assert pi.legend is None  # no legend anchored inside a plot
        assert not box.intersects(pi.vb.sceneBoundingRect())
        assert box.bottom() <= pi.vb.sceneBoundingRect().top()


def test_legend_of_compared_runs_is_above_the_plots(make_window, qtbot, qapp, run_to_end):
    win = make_window(gl=False)
    first, second = _two_runs(win, qtbot, run_to_end)
    qapp.processEvents()
    panel = win.plots
    assert len(panel.curve_data("energy")) == 2
    names = _legend_entries(panel.legend)
    assert names == ["rk45", "rk4"]  # the current (newest) run first, each by what differs
    _assert_legend_off_the_plots(panel.legend, panel.plots.values())
    # each entry's sample is drawn with its run's colour
    for (sample, _), run in zip(panel.legend.items, (second, first)):
        assert sample.item.opts["pen"].color().name() == run_color(run)
    # text is dark, not pyqtgraph's default grey (150, 150, 150)
    for pi in panel.plots.values():
        for name in ("left", "bottom"):
            assert pi.getAxis(name).textPen().color().lightness() < 80


def test_exported_plots_have_the_legend_above_and_dark_large_text(make_window, qtbot, qapp, run_to_end,
                                                                   tmp_path):
    win = make_window(gl=False)
    first, second = _two_runs(win, qtbot, run_to_end)
    w, items = exporting._plot_widget(win.session, PLOTS, 1600, 420)
    try:
        legend = next(it for it in w.ci.items if isinstance(it, pg.LegendItem))
        assert _legend_entries(legend) == ["rk45", "rk4"]
        _assert_legend_off_the_plots(legend, items)
        legend_box = legend.sceneBoundingRect()
        for pi in items:
            for name in ("left", "bottom"):
                ax = pi.getAxis(name)
                assert ax.textPen().color().lightness() < 60
                assert ax.style["tickFont"].pointSizeF() >= 10
            assert QColor(pi.titleLabel.opts["color"]).lightness() < 60
    finally:
        exporting._dispose(w, items)
    # the file: the legend's band above the plots holds both runs' colours
    out = exporting.export_plot(win.session, "all", tmp_path / "plots.png", width=1000, height=420)
    img = QImage(str(out))
    assert img.width() == 1600 and img.height() == 420
    top = int(np.ceil(legend_box.bottom()))
    band = {QColor(img.pixel(x, y)).name() for x in range(img.width()) for y in range(0, top)}

    def has(color: str) -> bool:
        want = QColor(color)
        return any(abs(QColor(c).red() - want.red()) + abs(QColor(c).green() - want.green())
                   + abs(QColor(c).blue() - want.blue()) < 40 for c in band)

    assert has(run_color(first)) and has(run_color(second))
