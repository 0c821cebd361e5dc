"""MP4 videos of a run: frames sampled at real time, stamped, encoded H.264 by PyAV.

Shared by ``linkwork report --video`` and the application's Export › Animation as
MP4 (no Qt here).  The frames come from the 3-D view -- any object with the
:class:`~linkwork.app.vispy.scene.MechanismScene` methods ``_draw_now()`` and
``render(size)`` -- posed through the session's playback time, or from any
iterable of RGB arrays (:func:`write_mp4`).

Timing: frame ``k`` shows the simulated instant ``t0 + speed * k / fps`` (the row at
or before it, as the 3-D view shows), so at ``speed`` 1 the video lasts the
simulated time span, to within one frame.  The file is written under a temporary
name and renamed when complete: a cancelled or failed export leaves nothing.

PyAV is the optional extra ``video`` (its wheels bring FFmpeg with libx264);
:func:`video_available` says whether it is installed and what to do if not.
"""

from __future__ import annotations

import importlib.util
import os
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

#: what the command line and the application use unless told otherwise
DEFAULT_FPS = 60.0
DEFAULT_SIZE = (1280, 720)
#: a video of more frames than this is refused (at 60 fps: 40 minutes)
MAX_FRAMES = 144_000
MISSING = "MP4 video export needs PyAV: pip install 'linkwork[video]'"
#: H.264 quality: constant rate factor (18--23 is visually lossless to good) and x264 preset
CRF = 20
PRESET = "medium"

Progress = Callable[[int, int], "bool | None"]


class ExportCancelled(Exception):
    """``progress`` returned False: the export stopped and wrote nothing."""


def video_available() -> tuple[bool, str]:
    """(True, "") when PyAV can be imported, else (False, the one-line reason with the fix)."""
    try:
        found = importlib.util.find_spec("av") is not None
    except (ImportError, ValueError):
        found = False
    return (True, "") if found else (False, MISSING)


def _import_av():
    ok, why = video_available()
    if not ok:
        raise RuntimeError(why)
    try:
        import av
    except ImportError as exc:
        raise RuntimeError(f"{MISSING} (importing it failed: {exc})") from None
    return av


def parse_size(text: str) -> tuple[int, int]:
    """``"1280x720"`` -> (1280, 720); ValueError with the expected form otherwise."""
    w, sep, h = str(text).lower().replace("×", "x").partition("x")
    try:
        size = (int(w), int(h))
    except ValueError:
        size = None
    if not sep or size is None or min(size) < 16 or max(size) > 7680:
        raise ValueError(f"size {text!r}: expected WIDTHxHEIGHT in pixels, 16 to 7680 each (e.g. 1280x720)")
    return size


def even_size(size: tuple[int, int]) -> tuple[int, int]:
    """H.264 in yuv420p halves the colour resolution: width and height must be even
    (an odd one is rounded down)."""
    w, h = int(size[0]), int(size[1])
    return max(2, w - w % 2), max(2, h - h % 2)


def check_fps(fps: float) -> float:
    fps = float(fps)
    if not (1.0 <= fps <= 240.0):
        raise ValueError(f"frame rate {fps:g}: expected 1 to 240 frames a second")
    return fps


def frame_times(t0: float, t1: float, fps: float, speed: float = 1.0) -> np.ndarray:
    """The simulated instants of the frames: ``t0 + speed * k / fps`` up to ``t1``.

    The video then lasts ``len(times) / fps`` seconds: the span ``(t1 - t0) / speed``
    and less than one frame more (the last instant shown is at most ``t1``)."""
    fps = check_fps(fps)
    if not speed > 0:
        raise ValueError("speed must be > 0")
    span = max(float(t1) - float(t0), 0.0)
    n = int(np.floor(span / speed * fps * (1 + 1e-12))) + 1
    if n > MAX_FRAMES:
        raise ValueError(f"{n} frames ({span:g} s simulated at {fps:g} fps): more than {MAX_FRAMES}; "
                         f"use a lower frame rate or a shorter run")
    return float(t0) + speed * np.arange(n) / fps


# ------------------------------------------------------------------- stamping
def _font(px: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=px)  # Pillow >= 10.1 with FreeType: a scalable font
    except TypeError:
        return ImageFont.load_default()


def stamp(rgb: np.ndarray, label: str, t: float) -> np.ndarray:
    """The frame with ``label`` at its top left and ``t = … s`` at its top right."""
    from PIL import Image, ImageDraw

    img = Image.fromarray(np.ascontiguousarray(rgb[:, :, :3]))
    h = img.height
    px = max(10, round(h * 0.032))
    font = _font(px)
    d = ImageDraw.Draw(img)
    pad = max(6, px // 2)
    ink = (40, 40, 45)
    if label:
        d.text((pad, pad), label, fill=ink, font=font)
    stamp_text = f"t = {t:.3f} s"
    box = d.textbbox((0, 0), stamp_text, font=font)
    d.text((img.width - pad - (box[2] - box[0]), pad), stamp_text, fill=ink, font=font)
    return np.asarray(img)


# ------------------------------------------------------------------- encoding
def write_mp4(path: str | Path, frames: Iterable[np.ndarray], n_frames: int, fps: float,
              progress: Progress | None = None) -> Path:
    """Encode ``n_frames`` RGB frames ((h, w, 3) or (h, w, 4) uint8, all one even size)
    as H.264 (yuv420p) in an MP4 at ``fps`` frames a second.

    ``progress(done, total)`` is called after each frame; returning False cancels
    (ExportCancelled is raised and no file is left).  The file appears, complete, only
    at the end: it is written under a temporary name in the same folder and renamed.
    """
    av = _import_av()
    p = Path(path)
    fps = check_fps(fps)
    rate = Fraction(fps).limit_denominator(1001)
    if not p.parent.is_dir():
        raise OSError(f"cannot write {p}: the folder {p.parent} does not exist")
    tmp = p.with_name(f".{p.name}.{os.getpid()}.part")
    container = None
    done = 0
    try:
        try:
            container = av.open(str(tmp), mode="w", format="mp4")
        except (OSError, av.FFmpegError) as exc:
            raise OSError(f"cannot write {p}: {exc}") from None
        stream = None
        for rgb in frames:
            rgb = np.ascontiguousarray(rgb[:, :, :3], dtype=np.uint8)
            h, w = rgb.shape[:2]
            if stream is None:
                if w % 2 or h % 2:
                    raise ValueError(f"frames of {w}x{h} pixels: H.264 (yuv420p) needs an even width and height")
                stream = container.add_stream("libx264", rate=rate)
                stream.width, stream.height = w, h
                stream.pix_fmt = "yuv420p"
                stream.codec_context.time_base = 1 / rate
                stream.options = {"crf": str(CRF), "preset": PRESET}
            elif (w, h) != (stream.width, stream.height):
                raise ValueError(f"frame {done} is {w}x{h} pixels, the first was {stream.width}x{stream.height}")
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = done
            frame.time_base = 1 / rate
            container.mux(stream.encode(frame))
            done += 1
            if progress is not None and progress(done, n_frames) is False:
                raise ExportCancelled(f"cancelled after {done} of {n_frames} frames")
        if stream is None:
            raise ValueError("no frames to encode")
        container.mux(stream.encode(None))  # flush the encoder's delayed frames
        container.close()
        container = None
        os.replace(tmp, p)
    except av.FFmpegError as exc:
        raise RuntimeError(f"encoding {p.name} failed: {exc}") from None
    finally:
        if container is not None:
            try:
                container.close()
            except Exception:  # the export failed already; keep that error
                pass
        if tmp.exists():
            tmp.unlink()
    return p


# ------------------------------------------------------------- the 3-D view
def scene_frames(session, scene, times: np.ndarray, size: tuple[int, int], label: str) -> Iterator[np.ndarray]:
    """The 3-D view at each of ``times`` (through the session's playback time), stamped
    with the time of the row shown (the current run's row at or before each instant).

    Playback is paused while the frames are drawn, and its time and state are put
    back afterwards (also when the consumer stops early)."""
    pb = session.playback
    run = session.history.current
    old_t, old_playing = pb.time, pb.playing
    pb.set_playing(False)
    try:
        for t in times:
            pb.set_time(float(t))
            scene._draw_now()
            yield stamp(scene.render(size), label, float(run.t[run.row_at(float(t))]))
    finally:
        pb.set_time(old_t)
        pb.set_playing(old_playing)


def export_video(session, scene, path: str | Path, fps: float = DEFAULT_FPS,
                 size: tuple[int, int] = DEFAULT_SIZE, speed: float = 1.0, label: str | None = None,
                 progress: Progress | None = None) -> Path:
    """The current run as an MP4 from the 3-D view ``scene``: ``speed`` × real time (1:
    the video lasts the simulated time span), ``size`` (w, h) pixels rounded down to
    even, each frame stamped with ``label`` (by default the mechanism's name and the run's
    label) and its time.

    Raises RuntimeError without PyAV (the message says how to install it),
    ValueError for a missing run or bad options, OSError when the file cannot be
    written, ExportCancelled when ``progress`` returned False.
    """
    _import_av()
    run = session.history.current
    if run is None or run.n_rows < 2:
        raise ValueError("there is no run to make a video of")
    t = run.t
    times = frame_times(float(t[0]), float(t[-1]), fps, speed)
    size = even_size(size)
    if label is None:
        name = getattr(run.spec, "name", "")
        label = f"{name} -- {run.label}" if name else run.label
    return write_mp4(path, scene_frames(session, scene, times, size, label), len(times), fps, progress)
