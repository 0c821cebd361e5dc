"""Replay after a run: slider, play/pause, speed, plots' cursor linked to the 3-D view;
the compiling notice; the plots' crosshair readout."""

import time

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from linkwork.engine import formulations as forms
from linkwork.engine import generators as g
from linkwork.engine.formulations.dense import DenseFormulation


def test_slider_play_speed_and_linked_cursor(make_window, qtbot, run_to_end):
    win = make_window()
    win.session.document.replace(g.fourbar())
    run = run_to_end(win, t_end=2.0)
    pb = win.session.playback
    vp = win.view_panel
    assert not pb.live and pb.time == pytest.approx(2.0)
    assert vp.slider.isEnabled() and vp.play_btn.isEnabled()
    assert vp.slider.maximum() == run.n_rows - 1
    vp.slider.setValue(50)
    assert pb.time == pytest.approx(0.5)
    for cur in win.plots.cursors.values():  # the plots' cursor follows
        assert cur.value() == pytest.approx(0.5)
    if vp.scene is not None:  # and the 3-D view shows that row
        x, _ = vp.scene.current_poses()
        assert np.allclose(x[0], run.data[50, 1:4])
    # dragging a plot cursor moves the time
    cur = win.plots.cursors["energy"]
    cur.setValue(1.25)
    cur.sigDragged.emit(cur)
    assert pb.time == pytest.approx(1.25)
    assert vp.slider.value() == 125
    # play at 4x from the start: time advances
    vp.speed.setCurrentIndex(vp.speed.findData(4.0))
    vp.speed.activated.emit(vp.speed.currentIndex())
    assert pb.speed == 4.0
    pb.set_time(0.0)
    vp.play_btn.click()
    assert pb.playing
    qtbot.waitUntil(lambda: pb.time > 0.5, timeout=5000)
    vp.play_btn.click()
    assert not pb.playing
    t = pb.time
    qtbot.wait(150)
    assert pb.time == t
    # the readout reads the curves under the mouse
    text = win.plots.readout_text("energy", 1.0)
    k = int(np.searchsorted(run.t, 1.0))
    drift = run.energy_drift()[k]
    assert "t = 1 s" in text and f"{run.label}: {drift:.4g}" in text


def test_clicking_a_plot_sets_the_time(make_window, qtbot, run_to_end):
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    run_to_end(win, t_end=1.0)
    pi = win.plots.plots["quantity"]
    vb = pi.vb
    scene_pt = vb.mapViewToScene(QPointF(0.3, 0.0))

    class Ev:
        def button(self):
            from PySide6.QtCore import Qt

            return Qt.LeftButton

        def double(self):
            return False

        def scenePos(self):
            return scene_pt

    win.plots._mouse_clicked(Ev())
    assert win.session.playback.time == pytest.approx(0.3, abs=0.02)
    win.plots._mouse_moved(scene_pt)
    assert "t = 0.3" in win.plots.readout.text()
    assert all(h.isVisible() for h in win.plots.hover.values())


class SlowToPrepare(DenseFormulation):
    """Takes a while to prepare, as a first (compiling) run does."""

    name = "slowprep"
    title = "slow to prepare"

    def initial_state(self):
        time.sleep(0.8)
        return super().initial_state()


def test_compiling_notice_shows_while_preparing(make_window, qtbot, monkeypatch):
    monkeypatch.setitem(forms.REGISTRY, "slowprep", SlowToPrepare)
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    win.session.solver.update(formulation="slowprep", t_end=0.2)
    notice = win.solver_panel.compile_notice
    with qtbot.waitSignal(win.runner.run_finished, timeout=30_000):
        win.run()
        qtbot.waitUntil(notice.isVisible, timeout=5000)
        # per formulation, counting against this machine's (or the typical) figure
        assert notice.text().startswith("Compiling the slowprep kernels: 0 s of about ")
        assert "linkwork compile" in notice.text()
    assert not notice.isVisible()
    assert win.session.history.current.compile_time >= 0.8



class WarnsWhileRunning(DenseFormulation):
    """Reports a warning in its run statistics after a few evaluations, as dca's singular
    configuration watch and index3's convergence watch do."""

    name = "warns"
    title = "warns while running"

    def stats(self):
        out = super().stats()
        if self.nfev > 20:
            out["warnings"] = ["t = 0.05 s: near a singular configuration (test)"]
        return out


def test_formulation_warnings_reach_the_messages(make_window, qtbot, monkeypatch):
    monkeypatch.setitem(forms.REGISTRY, "warns", WarnsWhileRunning)
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    win.session.solver.update(formulation="warns", t_end=0.3)
    with qtbot.waitSignal(win.runner.run_finished, timeout=30_000):
        win.run()
    warned = [n for n in win.session.notifications.log if n.level == "warning" and n.source == "run"]
    assert [n.text for n in warned] == ["t = 0.05 s: near a singular configuration (test)"]  # once, not per chunk

def test_gl_view_playback_renders_frames(make_window, qtbot, run_to_end, gl_status):
    if not gl_status[0]:
        pytest.skip(gl_status[1])
    win = make_window()
    win.session.document.replace(g.closed_loop(4))
    run_to_end(win, t_end=1.0)
    disp = win.view_panel.display
    n = disp.frames
    win.session.playback.set_time(0.2)
    qtbot.waitUntil(lambda: disp.frames > n, timeout=3000)
    img0 = disp._image.copy()
    n0 = disp.frames  # a resize may have drawn t = 0.2 more than once: wait for a frame after the change
    win.session.playback.set_time(1.0)
    qtbot.waitUntil(lambda: disp.frames > n0, timeout=3000)
    assert disp._image != img0
