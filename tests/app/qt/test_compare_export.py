"""Compare runs (overlaid drift curves) and export plots, the 3-D view and animations."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QImage

from linkwork.engine import generators as g

from linkwork.app.qt import exporting


def _compare_action(win, name):
    win._fill_compare_menu()
    return next(a for a in win.compare_menu.actions() if a.objectName() == name)


def test_compare_with_another_integrator_overlays_the_drift_curves(make_window, qtbot, run_to_end):
    win = make_window(gl=False)
    win.session.document.replace(g.closed_loop(4))
    first = run_to_end(win, t_end=0.5)
    assert len(win.plots.curve_data("energy")) == 1
    act = _compare_action(win, "compare_integrator_rk45")     # click 1: the menu, click 2: the entry
    with qtbot.waitSignal(win.runner.run_finished, timeout=60_000):
        act.trigger()
    second = win.session.history.current
    assert second is not first and second.settings.integrator == "rk45"
    assert second.settings.t_end == first.settings.t_end and second.settings.dt == first.settings.dt
    energy = win.plots.curve_data("energy")
    assert len(energy) == 2
    # violations of 1e-14 are labelled as such, not rescaled to "femto"; radians not to "mrad"
    assert win.plots.plots["violation"].getAxis("left").autoSIPrefixScale == 1.0
    assert win.plots.plots["quantity"].getAxis("left").autoSIPrefixScale == 1.0
    assert len(win.plots.curve_data("violation")) == 6  # 3 levels × 2 runs
    # the two runs differ, so the comparison shows something
    (x1, y1), (x2, y2) = energy
    assert len(x1) == len(x2) == 51 and np.max(np.abs(y1 - y2)) > 1e-12
    # hiding one in the runs panel removes its curves
    win.session.history.set_visible(first, False)
    assert len(win.plots.curve_data("energy")) == 1
    labels = [win.runs_panel.tree.topLevelItem(i).text(0) for i in range(win.runs_panel.tree.topLevelItemCount())]
    assert any("rk45" in t for t in labels) and any("rk4 " in t for t in labels)


def test_compare_with_every_registered_formulation_is_offered(make_window, run_to_end):
    from linkwork.engine.formulations import REGISTRY

    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    run_to_end(win, t_end=0.2)
    win._fill_compare_menu()
    names = {a.objectName() for a in win.compare_menu.actions()}
    for f in REGISTRY:
        assert f"compare_formulation_{f}" in names


@pytest.mark.parametrize("kind", ["energy", "violation", "quantity", "all"])
def test_plot_exports_png_and_svg_from_the_history(make_window, tmp_path, run_to_end, kind):
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    run_to_end(win, t_end=0.3)
    png = exporting.export_plot(win.session, kind, tmp_path / f"{kind}.png", width=900, height=500)
    img = QImage(str(png))
    assert not img.isNull() and img.width() >= 900
    # not a blank picture: several colours in it
    ptr = img.convertToFormat(QImage.Format_RGB888)
    arr = np.frombuffer(ptr.constBits(), np.uint8)[: ptr.sizeInBytes()]
    assert len(np.unique(arr)) > 20
    svg = exporting.export_plot(win.session, kind, tmp_path / f"{kind}.svg")
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    paths = [e for e in root.iter() if e.tag.endswith("path") or e.tag.endswith("polyline")]
    assert paths


def test_plot_export_needs_a_run(make_window, tmp_path):
    win = make_window(gl=False)
    with pytest.raises(ValueError):
        exporting.export_plot(win.session, "energy", tmp_path / "x.png")


@pytest.mark.gl
def test_view_png_and_animation_gif(make_window, tmp_path, run_to_end):
    from PIL import Image

    win = make_window()
    win.session.document.replace(g.fourbar())
    run_to_end(win, t_end=0.5)
    scene = win.view_panel.scene
    png = exporting.export_view_png(scene, tmp_path / "view.png", size=(640, 400))
    img = QImage(str(png))
    assert (img.width(), img.height()) == (640, 400)
    gif = exporting.export_animation(win.session, scene, tmp_path / "anim.gif", fps=10, speed=1.0,
                                     size=(320, 200))
    with Image.open(gif) as im:
        assert im.n_frames >= 5
        frames = []
        for k in (0, im.n_frames - 1):
            im.seek(k)
            frames.append(np.asarray(im.convert("RGB"), dtype=float))
    assert np.abs(frames[0] - frames[1]).mean() > 0.1  # the mechanism moved


def test_compare_with_a_formulation_that_has_its_own_integrators(make_window, qtbot, run_to_end, monkeypatch):
    from linkwork.engine import formulations as forms
    from linkwork.engine.formulations.dense import DenseFormulation

    class OwnIntegrators(DenseFormulation):
        name = "ownint"
        title = "accepts only RK45"
        integrators = ("rk45",)
        default_integrator = "rk45"

    monkeypatch.setitem(forms.REGISTRY, "ownint", OwnIntegrators)
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    first = run_to_end(win, t_end=0.2)
    assert first.settings.integrator == "rk4"
    act = _compare_action(win, "compare_formulation_ownint")
    with qtbot.waitSignal(win.runner.run_finished, timeout=60_000):
        act.trigger()
    second = win.session.history.current
    assert second.settings.formulation == "ownint" and second.settings.integrator == "rk45"
    assert second.status == "finished" and len(win.plots.curve_data("energy")) == 2
