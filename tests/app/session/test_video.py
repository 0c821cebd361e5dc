"""app/session/video.py: frame timing, sizes, and H.264 MP4s read back with PyAV."""

import numpy as np
import pytest

from linkwork.app.session import video


def test_frame_times_are_real_time_and_the_duration_is_the_span_within_one_frame():
    for t1, fps in ((10.0, 60.0), (1.0, 30.0), (0.3, 24.0), (2.5, 29.97)):
        t = video.frame_times(0.0, t1, fps)
        assert t[0] == 0.0 and t[-1] <= t1 + 1e-12
        np.testing.assert_allclose(np.diff(t), 1 / fps)
        assert abs(len(t) / fps - t1) <= 1 / fps + 1e-12
    # at twice the speed the video lasts half as long
    assert len(video.frame_times(0.0, 2.0, 30.0, speed=2.0)) == 31
    with pytest.raises(ValueError, match="frame rate"):
        video.frame_times(0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="more than"):
        video.frame_times(0.0, 1e6, 60.0)


def test_sizes_are_parsed_checked_and_made_even():
    assert video.parse_size("1280x720") == (1280, 720)
    assert video.parse_size("641X481") == (641, 481)
    assert video.even_size((641, 481)) == (640, 480)
    for bad in ("1280", "axb", "10x10", "100000x720", "1280x"):
        with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
            video.parse_size(bad)


def test_a_missing_pyav_is_named_with_the_extra_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "av", None)  # import av fails, find_spec finds nothing
    ok, why = video.video_available()
    assert not ok and "pip install 'linkwork[video]'" in why
    with pytest.raises(RuntimeError, match=r"linkwork\[video\]"):
        video.write_mp4("x.mp4", [], 0, 30.0)


def _frames(n, size=(160, 96)):
    w, h = size
    for k in range(n):
        img = np.full((h, w, 3), 240, np.uint8)
        img[:, (5 * k) % (w - 20):(5 * k) % (w - 20) + 20] = (40, 90, 200)  # a bar moving right
        yield video.stamp(img, "bar", k / 25)


def test_frames_are_encoded_h264_yuv420p_at_the_asked_rate():
    av = pytest.importorskip("av")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = video.write_mp4(Path(d) / "bar.mp4", _frames(40), 40, 25.0)
        assert sorted(x.name for x in Path(d).iterdir()) == ["bar.mp4"]  # no temporary file left
        with av.open(str(p)) as c:
            s = c.streams.video[0]
            frames = [f.to_ndarray(format="rgb24") for f in c.decode(s)]
            assert s.codec_context.name == "h264" and s.codec_context.pix_fmt == "yuv420p"
            assert s.average_rate == 25 and (s.width, s.height) == (160, 96)
            assert len(frames) == 40
            assert abs(float(s.duration * s.time_base) - 40 / 25) < 1e-9
    assert np.abs(frames[0].astype(int) - frames[-1]).mean() > 5  # the bar moved


def test_a_cancelled_or_failed_encoding_leaves_no_file(tmp_path):
    pytest.importorskip("av")
    with pytest.raises(video.ExportCancelled):
        video.write_mp4(tmp_path / "c.mp4", _frames(30), 30, 25.0, progress=lambda done, total: done < 10)
    odd = (np.zeros((33, 50, 3), np.uint8) for _ in range(3))
    with pytest.raises(ValueError, match="even"):
        video.write_mp4(tmp_path / "odd.mp4", odd, 3, 25.0)
    with pytest.raises(OSError, match="does not exist"):
        video.write_mp4(tmp_path / "no" / "such.mp4", _frames(3), 3, 25.0)
    assert list(tmp_path.iterdir()) == []
