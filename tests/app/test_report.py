"""``linkwork report``: a run without a screen writes the CSV, the plots and pictures
of the mechanism (what ``make run`` does where there is no display)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from linkwork.engine.paths import examples_dir
from linkwork.engine.results import read_csv


def example_path(name):
    return examples_dir() / f"{name}.mech.json"


def _headless_env():
    return {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}


@pytest.mark.parametrize("example", ["parallelogram-fourbar", "chain-5-spherical-spatial"])
def test_report_writes_csv_plots_and_pictures_without_a_display(tmp_path, example):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(example_path(example)),
                        "--t-end", "0.3", "--out", str(out)], capture_output=True, text=True,
                       env=_headless_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    listed = r.stdout.split()
    for name in ("results.csv", "plots.png", "mechanism.png", "mechanism.gif"):
        assert str(out / name) in listed
    cols, data = read_csv(out / "results.csv")
    assert data.shape[0] == 31 and cols[0] == "t"
    # the same bytes as linkwork run at the same settings
    ref = tmp_path / "ref.csv"
    r2 = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(example_path(example)),
                         "--t-end", "0.3", "--out", str(ref)], capture_output=True, text=True, timeout=600)
    assert r2.returncode == 0, r2.stderr
    assert ref.read_bytes() == (out / "results.csv").read_bytes()
    png = np.asarray(Image.open(out / "mechanism.png").convert("RGB")).astype(int)
    background = png[0, 0]
    assert (np.abs(png - background).sum(axis=2) > 60).mean() > 0.01  # the mechanism is drawn
    gif = Image.open(out / "mechanism.gif")
    assert gif.n_frames >= 20
    plots = np.asarray(Image.open(out / "plots.png").convert("RGB")).astype(int)
    assert plots.shape[1] > 1000


def test_report_refuses_a_bad_file(tmp_path):
    bad = tmp_path / "bad.mech.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=_headless_env(), timeout=300)
    assert r.returncode == 2 and "bad.mech.json" in r.stderr


def test_report_video_is_real_time_h264_of_the_3d_view(tmp_path):
    """--video: the frame count, rate and duration asked for (duration = the simulated time
    span within one frame), H.264 yuv420p at the even size asked, frames that show the
    mechanism moving."""
    av = pytest.importorskip("av")
    mp4 = tmp_path / "fourbar.mp4"
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(example_path("parallelogram-fourbar")),
                        "--t-end", "1.2", "--out", str(tmp_path / "out"), "--video", str(mp4), "--fps", "25",
                        "--size", "321x240"], capture_output=True, text=True, env=_headless_env(), timeout=600)
    assert r.returncode == 0, r.stderr
    assert str(mp4) in r.stdout.split() and "31 / 31 frames" in r.stderr
    assert "3-D view" in r.stderr  # rendered by vispy on EGL, not the 2-D fallback
    with av.open(str(mp4)) as c:
        s = c.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
        assert s.codec_context.name == "h264" and s.codec_context.pix_fmt == "yuv420p"
        assert (s.width, s.height) == (320, 240) and s.average_rate == 25
        duration = float(s.duration * s.time_base)
    assert len(frames) == 31  # t = 0, 0.04, ..., 1.2 s
    assert abs(duration - 1.2) <= 1 / 25 + 1e-9  # 31 frames of 1/25 s: the last shows t = 1.2 s
    # not blank below the stamps (the text alone has a pixel deviation of ~15 at this size):
    # the mechanism and the floor grid, with the mechanism moving
    mid = frames[len(frames) // 2][40:].astype(float)
    assert mid.std() > 10
    background = np.median(mid.reshape(-1, 3), axis=0)
    assert (np.abs(mid - background).sum(axis=2) > 60).mean() > 0.01
    assert np.abs(frames[0][40:].astype(float) - frames[-1][40:]).mean() > 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fourbar.mp4", "out"]  # no temporary file left


def test_report_video_refuses_without_pyav_naming_the_extra(tmp_path):
    code = ("import sys; sys.modules['av'] = None\n"
            "from linkwork.cli import main\n"
            f"sys.exit(main(['report', {str(example_path('parallelogram-fourbar'))!r}, '--out', "
            f"{str(tmp_path / 'o')!r}, '--video', {str(tmp_path / 'v.mp4')!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_headless_env(),
                       timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["linkwork: MP4 video export needs PyAV: pip install 'linkwork[video]'"]
    assert not (tmp_path / "v.mp4").exists()


@pytest.mark.parametrize("extra, says", [(["--size", "big"], "WIDTHxHEIGHT"), (["--fps", "0"], "frame rate"),
                                         (["--video", "x.avi"], ".mp4")])
def test_report_video_refuses_bad_options(tmp_path, extra, says):
    pytest.importorskip("av")
    args = ["--video", str(tmp_path / "v.mp4")] + extra
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(example_path("parallelogram-fourbar")),
                        "--out", str(tmp_path / "o")] + args, capture_output=True, text=True,
                       env=_headless_env(), timeout=300)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_report_video_falls_back_to_the_2d_drawing_where_egl_cannot_render(tmp_path):
    av = pytest.importorskip("av")
    mp4 = tmp_path / "flat.mp4"
    env = dict(_headless_env(), EGL_PLATFORM="no-such-platform")  # libEGL cannot initialise
    r = subprocess.run([sys.executable, "-m", "linkwork", "report", str(example_path("parallelogram-fourbar")),
                        "--t-end", "0.5", "--out", str(tmp_path / "out"), "--video", str(mp4), "--fps", "20",
                        "--size", "400x300"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "the video shows the 2-D drawing" in r.stderr
    with av.open(str(mp4)) as c:
        s = c.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
        assert (s.width, s.height) == (400, 300) and s.average_rate == 20
    assert len(frames) == 11
    assert frames[5][40:].astype(float).std() > 10
