"""Export › Animation as MP4…: the menu item, its progress dialog, cancelling, and a missing PyAV."""

import numpy as np
import pytest
from PySide6.QtWidgets import QFileDialog, QProgressDialog

from linkwork.engine.paths import examples_dir

from linkwork.app.session import video

FOURBAR = examples_dir() / "parallelogram-fourbar.mech.json"


def _export_menu_items(win):
    menu = next(a.menu() for a in win.menuBar().actions() if a.menu() and a.menu().objectName() == "exportMenu")
    return [a for a in menu.actions() if not a.isSeparator()]


@pytest.mark.gl
def test_export_mp4_from_the_menu_writes_a_real_time_video(make_window, run_to_end, tmp_path, monkeypatch):
    av = pytest.importorskip("av")
    win = make_window()
    assert win.open_file(FOURBAR)
    run = run_to_end(win, t_end=0.5)
    win.session.playback.set_time(0.2)
    action = win.actions["export_mp4"]
    items = _export_menu_items(win)
    assert items.index(action) == items.index(win.actions["export_gif"]) + 1  # beside the GIF export
    assert action.isEnabled()
    (tmp_path / "videos").mkdir()
    out = tmp_path / "videos" / "fourbar.mp4"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), "MP4 video (*.mp4)"))
    seen = []
    set_value = QProgressDialog.setValue
    monkeypatch.setattr(QProgressDialog, "setValue", lambda dlg, v: (seen.append((v, dlg.maximum())),
                                                                     set_value(dlg, v))[1])
    action.trigger()
    assert win.message_bar.text() == "", win.message_bar.text()
    assert out.exists() and sorted(p.name for p in out.parent.iterdir()) == ["fourbar.mp4"]
    n = len(video.frame_times(0.0, run.t_last, video.DEFAULT_FPS))
    assert n == 31 and seen[-1] == (n, n)  # the progress dialog counted every frame
    with av.open(str(out)) as c:
        s = c.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
        assert (s.width, s.height) == video.DEFAULT_SIZE and s.average_rate == video.DEFAULT_FPS
        assert abs(float(s.duration * s.time_base) - 0.5) <= 1 / video.DEFAULT_FPS + 1e-9
    assert len(frames) == n
    body = frames[n // 2][80:].astype(float)  # below the stamps
    assert body.std() > 10
    assert np.abs(frames[0][80:].astype(float) - frames[-1][80:]).mean() > 0.5  # it moves
    assert win.session.playback.time == 0.2  # the view is left where it was
    assert win.session.notifications.log[-1].text == "Wrote fourbar.mp4"


@pytest.mark.gl
def test_a_cancelled_mp4_export_leaves_no_file(make_window, run_to_end, tmp_path, monkeypatch):
    pytest.importorskip("av")
    win = make_window()
    assert win.open_file(FOURBAR)
    run_to_end(win, t_end=0.5)
    (tmp_path / "videos").mkdir()
    out = tmp_path / "videos" / "cancelled.mp4"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), "MP4 video (*.mp4)"))
    values = []
    monkeypatch.setattr(QProgressDialog, "wasCanceled", lambda dlg: (values.append(dlg.value()), len(values) > 5)[1])
    win.actions["export_mp4"].trigger()
    assert len(values) == 6  # the sixth frame saw the cancel and the export stopped
    assert list(out.parent.iterdir()) == []
    assert win.session.notifications.log[-1].text == "Video export cancelled: nothing was written."
    assert win.message_bar.text() == ""


def test_without_pyav_the_item_is_disabled_and_the_export_says_what_to_install(make_window, monkeypatch):
    monkeypatch.setattr(video, "video_available", lambda: (False, video.MISSING))
    win = make_window(gl=False)
    action = win.actions["export_mp4"]
    assert not action.isEnabled() and "pip install 'linkwork[video]'" in action.toolTip()
    win.export_mp4_dialog()
    assert win.message_bar.isVisible()
    assert win.message_bar.text() == video.MISSING
    assert win.session.notifications.log[-1].level == "error"
