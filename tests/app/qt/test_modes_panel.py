"""The Modes dock (app/qt/modes.py): Analysis > Equilibrium and > Modes on the sprung
parallelogram, the table against the engine's numbers, the animation's poses, saving the
rest, and the results forgotten when the mechanism changes."""

import numpy as np
import pytest

from linkwork.engine.analysis.modes import linear_modes
from linkwork.engine.mechfile import load
from linkwork.engine.model import build_model, load_model
from linkwork.engine.paths import examples_dir

SPRUNG = examples_dir() / "sprung-parallelogram.mech.json"


def test_analysis_menu_finds_the_rest_and_lists_the_modes(make_window, tmp_path):
    win = make_window(gl=False)
    assert win.open_file(SPRUNG)
    menus = {a.text().replace("&", ""): a for a in win.menuBar().actions()}
    items = [a.text().replace("&", "") for a in menus["Analysis"].menu().actions()]
    assert items == ["Equilibrium", "Modes"]
    assert win.docks["modes"].isHidden()
    panel = win.modes_panel
    shown = []
    panel.poses.connect(shown.append)
    win.actions["equilibrium"].trigger()
    assert panel.wait()
    assert not win.docks["modes"].isHidden()
    assert "verdict               stable" in panel.report.text()
    assert shown and shown[-1] is not None  # the view draws the rest
    win.actions["modes"].trigger()
    assert panel.wait()
    ref = linear_modes(load_model(SPRUNG))
    assert panel.table.rowCount() == 1
    assert float(panel.table.item(0, 1).text()) == pytest.approx(ref.frequency_hz[0], rel=1e-5)
    # animated: the chosen mode moves the crank by up to the amplitude about the rest
    panel.amplitude.setValue(0.1)
    panel.animate_button.setChecked(True)
    assert panel.timer.isActive()
    x_rest, R_rest = shown[-1]
    x_peak, R_peak = panel.mode_poses(np.pi / 2)
    crank = [b.name for b in load(SPRUNG).bodies].index("A")
    turn = np.arccos(np.clip((np.trace(R_rest[crank].T @ R_peak[crank]) - 1) / 2, -1, 1))
    assert turn == pytest.approx(0.1, rel=1e-9)  # J1's component is the largest (all equal)
    n = len(shown)
    panel._tick()
    assert len(shown) == n + 1 and shown[-1] is not None
    panel.animate_button.setChecked(False)
    assert not panel.timer.isActive()
    # the rest saved is a file at rest
    out = tmp_path / "rest.mech.json"
    panel.save_rest(out)
    assert build_model(load(out)).nb == 3
    # an edit forgets the results and gives the view back its usual poses
    doc = win.session.document
    assert doc.edit("rename", spec=doc.spec.with_(name="changed"))
    assert panel.table.rowCount() == 0 and panel.equilibrium is None and shown[-1] is None


def test_a_mechanism_without_a_rest_is_reported_not_raised(make_window, tmp_path):
    win = make_window(gl=False)
    assert win.open_file(examples_dir() / "joint-zoo.mech.json")  # a torque spins a joint for ever
    assert win.analyse("equilibrium")
    assert win.modes_panel.wait() is False
    assert "No equilibrium: no rest found" in win.modes_panel.report.text()
    assert win.session.notifications.log[-1].level == "warning"


def test_an_analysis_computes_while_the_window_stays_live_and_an_edit_drops_its_result(make_window, monkeypatch):
    """The analysis runs in a thread of its own: the window's timers fire and the report
    counts while it computes, the buttons wait for it, and a result for a mechanism edited
    meanwhile is not shown."""
    import threading
    import time

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from linkwork.engine.analysis import equilibrium

    release = threading.Event()
    real = equilibrium.find_equilibrium

    def held(*args, **kw):  # the engine's own search, once the test lets it go
        assert release.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(equilibrium, "find_equilibrium", held)
    win = make_window(gl=False)
    assert win.open_file(SPRUNG)
    panel = win.modes_panel
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(10)
    ended = []
    panel.finished.connect(ended.append)
    assert win.analyse("equilibrium")
    assert panel.busy and not panel.eq_button.isEnabled() and not panel.modes_button.isEnabled()
    assert win.analyse("modes") is False  # one at a time
    assert panel.wait(1.5) is False  # still held: the window went on meanwhile
    assert len(ticks) > 20 and "Finding the rest of 3 bodies" in panel.report.text()
    release.set()
    assert panel.wait()
    assert ended == [True] and panel.equilibrium is not None and panel.eq_button.isEnabled()
    t_end = time.perf_counter() + 0.7  # longer than the report's clock ticks
    while time.perf_counter() < t_end:
        QApplication.processEvents()
    assert "verdict               stable" in panel.report.text()  # the result, not the clock
    # edited while computing: the result is dropped
    release.clear()
    assert win.analyse("equilibrium")
    doc = win.session.document
    assert doc.edit("rename", spec=doc.spec.with_(name="changed"))
    release.set()
    assert panel.wait() is False
    assert panel.equilibrium is None and panel.modes is None and panel.table.rowCount() == 0
    assert "changed while it was analysed" in panel.report.text()
    timer.stop()


@pytest.mark.gl
def test_the_3d_view_draws_the_animated_mode(make_window):
    win = make_window()
    assert win.open_file(SPRUNG)
    scene = win.view_panel.scene
    assert win.analyse("modes") and win.modes_panel.wait()
    x_rest, _ = scene.current_poses()
    win.modes_panel.animate_button.setChecked(True)
    win.modes_panel._tick()
    x_now, _ = scene.current_poses()
    assert scene.pose_override is not None and not np.allclose(x_now, x_rest)
    win.modes_panel.clear()
    assert scene.pose_override is None
