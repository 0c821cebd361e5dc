"""``linkwork report FILE``: a run without a screen -- the results CSV, the plots and
pictures of the mechanism, written to a folder.

What the application shows, for a machine with no display (``make run`` falls back
to it there): the mechanism is simulated at its defaults (or the options given),
and the folder receives

- ``results.csv``: the contract's results CSV (the same bytes as ``linkwork run``);
- ``plots.png``: energy, constraint drift and the default quantity, drawn by the
  application's own plot exporter (Qt's ``offscreen`` platform: no display needed);
- ``mechanism.png``: the mechanism at the end of the run over a faint picture of
  it at t = 0, with the paths of the centres of mass;
- ``mechanism.gif``: the motion, animated;
- with ``--video FILE.mp4``: the motion in real time as an H.264 MP4, rendered by the
  application's 3-D view (vispy on EGL's surfaceless platform: no display needed),
  each frame stamped with the run's label and its time (app/session/video.py).

The pictures are a 2-D projection drawn with QPainter (the 3-D view needs OpenGL,
which a machine without a display may not have): planar mechanisms are seen
square-on to their plane, spatial ones from an oblique viewpoint, gravity down.
Where EGL cannot render, the video falls back to those 2-D pictures (and says so).
Exit status as ``linkwork run``: 0, 2 refused (also: ``--video`` without PyAV), 3 the
simulation failed (the rows computed before the failure are still written and drawn),
130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

EXIT_OK, EXIT_REFUSED, EXIT_FAILED, EXIT_INTERRUPTED = 0, 2, 3, 130

#: frames of the animation at most, and its size in pixels
GIF_FRAMES = 120
PICTURE_SIZE = (960, 720)


def _parser() -> argparse.ArgumentParser:
    from linkwork.engine.cli import float_arg, Parser

    p = Parser(prog="linkwork report",
                description="Simulate a mechanism without a screen and write the results CSV, the plots "
                            "(PNG) and pictures of the mechanism (PNG, GIF) to a folder.")
    p.add_argument("file", help="mechanism file (*.mech.json)")
    p.add_argument("--out", metavar="DIR", help="output folder [linkwork-report/NAME in the current folder]")
    p.add_argument("--formulation", metavar="NAME", help="[default per mechanism]")
    p.add_argument("--integrator", metavar="NAME", help="[the formulation's default]")
    p.add_argument("--dt", type=float_arg, metavar="S", help="[the mechanism's default]")
    p.add_argument("--t-end", type=float_arg, metavar="S", help="[the mechanism's default]")
    p.add_argument("--video", metavar="FILE.mp4",
                   help="also write the motion in real time as an H.264 MP4 (needs pip install 'linkwork[video]')")
    p.add_argument("--fps", type=float_arg, metavar="N", help="the video's frames a second [60]")
    p.add_argument("--size", metavar="WxH", help="the video's size in pixels, even [1280x720]")
    return p


def _video_options(args) -> tuple[Path, float, tuple[int, int]] | str:
    """(path, fps, size) of ``--video``, or the reason it is refused."""
    from .session import video

    if args.video is None:
        return "--fps and --size go with --video FILE.mp4" if args.fps is not None or args.size is not None else ""
    ok, why = video.video_available()
    if not ok:
        return why
    path = Path(args.video)
    if path.suffix.lower() != ".mp4":
        return f"--video {args.video}: the file name must end in .mp4"
    if not path.resolve().parent.is_dir():
        return f"--video {args.video}: the folder {path.parent} does not exist"
    try:
        fps = video.check_fps(args.fps if args.fps is not None else video.DEFAULT_FPS)
        size = video.parse_size(args.size) if args.size is not None else video.DEFAULT_SIZE
    except ValueError as exc:
        return f"--{'fps' if 'frame rate' in str(exc) else 'size'}: {exc}"
    return path, fps, video.even_size(size)


def _stderr_progress(what: str):
    """progress(done, total) for long jobs: a live line on a terminal, quarters in a log."""
    tty = sys.stderr.isatty()
    last = [-1]

    def progress(done: int, total: int) -> None:
        if tty:
            if done == total or done % 10 == 0:
                print(f"\r  {what}: {done} / {total} frames {100 * done / total:5.1f} %", end="",
                      file=sys.stderr, flush=True)
            if done == total:
                print("", file=sys.stderr)
        else:
            q = 4 * done // total
            if q > last[0]:
                last[0] = q
                print(f"  {what}: {done} / {total} frames", file=sys.stderr, flush=True)
    return progress


def write_video(session, spec, path: Path, fps: float, size: tuple[int, int], label: str) -> Path:
    """The current run as an MP4 from the 3-D view rendered headless (EGL); where that
    cannot render, from the 2-D pictures of :class:`Painter2D`."""
    from .session import video

    run = session.history.current
    t0 = time.perf_counter()
    try:
        from .vispy.scene import MechanismScene

        scene = MechanismScene(session, size=size, headless=True)
    except Exception as exc:  # no EGL here (no libEGL, no Mesa driver): say so, draw in 2-D
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        print(f"linkwork: the 3-D view cannot render without a display here ({reason}); "
              f"the video shows the 2-D drawing", file=sys.stderr)
        scene = None
    times = video.frame_times(float(run.t[0]), run.t_last, fps)
    print(f"linkwork: video: {len(times)} frames, {fps:g} fps, {size[0]}x{size[1]}, "
          f"{'3-D view' if scene is not None else '2-D drawing'}", file=sys.stderr)
    progress = _stderr_progress("video")
    if scene is not None:
        try:
            out = video.export_video(session, scene, path, fps=fps, size=size, label=label, progress=progress)
        finally:
            scene.close()
    else:
        rows = run.data
        painter = Painter2D(spec, rows, size=size)
        frames = (np.asarray(_to_pil(painter.image(rows, run.row_at(float(t)), label))) for t in times)
        out = video.write_mp4(path, frames, len(times), fps, progress)
    print(f"linkwork: video written in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


# ------------------------------------------------------------------ projection
def view_axes(points: np.ndarray, gravity) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Screen right, screen up and the viewing direction (into the screen), unit vectors.

    A mechanism that moves in a plane is seen square-on (the plane is found from the
    points' smallest principal direction); anything else from an oblique viewpoint.
    "Up" is against gravity where gravity is not along the line of sight.
    """
    pts = np.asarray(points, float).reshape(-1, 3)
    g = np.asarray(gravity, float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    centred = pts - pts.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False) if len(pts) >= 3 else (None, np.zeros(3), np.eye(3))
    extent = s[0] if s.size and s[0] > 0 else 1.0
    planar = s.size == 3 and s[2] <= 1e-6 * extent
    if planar:
        view = vt[2]
    else:  # oblique: 35 degrees below "up", 30 degrees round from the nearest axis
        side = np.cross(up, [1.0, 0.0, 0.0])
        if np.linalg.norm(side) < 1e-6:
            side = np.cross(up, [0.0, 1.0, 0.0])
        side /= np.linalg.norm(side)
        fwd = np.cross(side, up)
        a, e = np.radians(30.0), np.radians(35.0)
        horizontal = np.cos(a) * fwd + np.sin(a) * side
        view = np.cos(e) * horizontal - np.sin(e) * up
    view = view / np.linalg.norm(view)
    up_s = up - (up @ view) * view
    if np.linalg.norm(up_s) < 1e-6:  # gravity along the line of sight: the largest extent is "up"
        up_s = vt[0] - (vt[0] @ view) * view if planar else np.cross(view, [1.0, 0.0, 0.0])
    up_s /= np.linalg.norm(up_s)
    right = np.cross(up_s, view)
    if planar and right @ np.array([1.0, 1.0, 1.0]) < 0:  # keep +x / +y pointing right where we can
        view, right = -view, -right
    return right, up_s, view


class Painter2D:
    """Draws result rows of one mechanism into QImages (orthographic projection)."""

    def __init__(self, spec, rows: np.ndarray, size=PICTURE_SIZE):
        from .session.geometry import body_primitives, initial_poses, joint_markers, poses_from_row

        self.spec = spec
        self.nb = len(spec.bodies)
        self.prims = body_primitives(spec)
        self.x0, self.R0 = initial_poses(spec)
        self.markers = joint_markers(spec)
        self.poses = poses_from_row
        self.size = size
        step = max(1, rows.shape[0] // 200)
        sample = [self._points(rows[k]) for k in range(0, rows.shape[0], step)] + [self._points(rows[-1])]
        allp = np.vstack(sample)
        self.right, self.up, self.view = view_axes(allp, spec.gravity)
        uv = np.column_stack([allp @ self.right, allp @ self.up])
        lo, hi = uv.min(axis=0), uv.max(axis=0)
        span = max(float((hi - lo).max()), 1e-9)
        w, h = size
        self.scale = 0.82 * min(w / max(hi[0] - lo[0], 0.3 * span), (h - 60) / max(hi[1] - lo[1], 0.3 * span))
        self.centre = 0.5 * (lo + hi)

    def _points(self, row) -> np.ndarray:
        x, R = self.poses(row, self.nb)
        pts = [x, self.markers.world(x, R)]
        for i, prims in enumerate(self.prims):
            for p in prims:
                for q in (p.p0, p.p1):
                    if q is not None:
                        pts.append((x[i] + R[i] @ (self.R0[i].T @ (q - self.x0[i])))[None])
        return np.vstack(pts)

    def _xy(self, p) -> tuple[float, float]:
        u = p @ self.right - self.centre[0]
        v = p @ self.up - self.centre[1]
        return self.size[0] / 2 + self.scale * u, (self.size[1] + 40) / 2 - self.scale * v

    def _world(self, i, x, R, p):
        return x[i] + R[i] @ (self.R0[i].T @ (np.asarray(p, float) - self.x0[i]))

    def draw(self, painter, row, alpha: int = 255) -> None:
        """The mechanism at one row: bodies back to front, then the joints."""
        from PySide6.QtCore import QPointF, Qt
        from PySide6.QtGui import QBrush, QColor, QPen, QPolygonF

        from .vispy.scene import BODY_COLORS, JOINT_COLOR

        x, R = self.poses(row, self.nb)
        items = []
        for i, prims in enumerate(self.prims):
            col = BODY_COLORS[i % len(BODY_COLORS)]
            for p in prims:
                items.append((float(self._world(i, x, R, p.center if p.center is not None else p.p0) @ self.view),
                              i, p, col))
        items.sort(key=lambda it: -it[0])  # farthest first
        for _, i, p, col in items:
            c = QColor.fromRgbF(*col)
            c.setAlpha(alpha)
            if p.kind in ("rod", "cylinder"):
                if p.kind == "rod":
                    a, b = self._world(i, x, R, p.p0), self._world(i, x, R, p.p1)
                else:
                    ax = R[i] @ (self.R0[i].T @ p.axis)
                    ax = ax / max(np.linalg.norm(ax), 1e-12)
                    cw = self._world(i, x, R, p.center)
                    a, b = cw - 0.5 * p.length * ax, cw + 0.5 * p.length * ax
                pen = QPen(c, max(3.0, 2.0 * p.radius * self.scale))
                pen.setCapStyle(Qt.RoundCap)
                painter.setPen(pen)
                painter.drawLine(QPointF(*self._xy(a)), QPointF(*self._xy(b)))
            elif p.kind == "box":
                Rb = R[i] @ (self.R0[i].T @ p.rot)
                cw = self._world(i, x, R, p.center)
                corners = [cw + Rb @ (0.5 * p.size * np.array(s)) for s in
                           [(sx, sy, sz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]]
                pts = np.array([self._xy(q) for q in corners])
                hull = _convex_hull(pts)
                painter.setPen(QPen(c.darker(130), 1.5))
                painter.setBrush(QBrush(c))
                painter.drawPolygon(QPolygonF([QPointF(*q) for q in hull]))
            else:  # sphere, mesh: a disc at the centre
                r = max(4.0, (p.radius if p.kind == "sphere" else 0.05) * self.scale)
                painter.setPen(QPen(c.darker(130), 1.5))
                painter.setBrush(QBrush(c))
                painter.drawEllipse(QPointF(*self._xy(self._world(i, x, R, p.center))), r, r)
        jc = QColor.fromRgbF(*JOINT_COLOR)
        jc.setAlpha(alpha)
        painter.setPen(QPen(jc, 1.5))
        painter.setBrush(QBrush(QColor(255, 255, 255, alpha)))
        for k, p in enumerate(self.markers.world(x, R)):
            cx, cy = self._xy(p)
            if self.markers.grounded[k]:
                tri = QPolygonF([QPointF(cx, cy), QPointF(cx - 8, cy + 12), QPointF(cx + 8, cy + 12)])
                painter.drawPolygon(tri)
            painter.drawEllipse(QPointF(cx, cy), 4.5, 4.5)

    def trails(self, painter, rows) -> None:
        from PySide6.QtCore import QPointF
        from PySide6.QtGui import QColor, QPen, QPolygonF

        from .vispy.scene import BODY_COLORS

        step = max(1, rows.shape[0] // 600)
        sub = rows[::step]
        for i in range(self.nb):
            blk = sub[:, 1 + 13 * i: 4 + 13 * i]
            col = QColor.fromRgbF(*BODY_COLORS[i % len(BODY_COLORS)])
            col.setAlpha(110)
            painter.setPen(QPen(col, 1.2))
            painter.drawPolyline(QPolygonF([QPointF(*self._xy(p)) for p in blk]))

    def image(self, rows, k: int, title: str, with_start: bool = False):
        from PySide6.QtCore import QRectF, Qt
        from PySide6.QtGui import QColor, QFont, QImage, QPainter

        w, h = self.size
        img = QImage(w, h, QImage.Format_RGB888)
        img.fill(QColor(247, 247, 249))
        painter = QPainter(img)
        try:
            painter.setRenderHint(QPainter.Antialiasing)
            if with_start:
                self.draw(painter, rows[0], alpha=60)
                self.trails(painter, rows[: k + 1])
            self.draw(painter, rows[k])
            f = QFont()
            f.setPointSizeF(13)
            painter.setFont(f)
            painter.setPen(QColor(40, 40, 45))
            painter.drawText(QRectF(16, 10, w - 32, 30), Qt.AlignLeft | Qt.AlignVCenter, title)
            painter.drawText(QRectF(16, 10, w - 32, 30), Qt.AlignRight | Qt.AlignVCenter,
                             f"t = {rows[k, 0]:.3f} s")
        finally:
            painter.end()
        return img


def _convex_hull(pts: np.ndarray) -> np.ndarray:
    """Monotone-chain hull of 2-D points (a projected box)."""
    p = sorted(map(tuple, np.round(pts, 6)))
    if len(p) < 3:
        return np.array(p)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for q in p:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    for q in reversed(p):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1])


def _to_pil(img):
    from PIL import Image

    w, h, bpl = img.width(), img.height(), img.bytesPerLine()
    arr = np.frombuffer(img.constBits(), np.uint8, count=h * bpl).reshape(h, bpl)[:, : 3 * w]
    return Image.fromarray(arr.reshape(h, w, 3).copy())


def write_pictures(spec, rows: np.ndarray, out: Path, title: str) -> tuple[Path, Path]:
    """``mechanism.png`` (last row over the first, with paths) and ``mechanism.gif``."""
    painter = Painter2D(spec, rows)
    png = out / "mechanism.png"
    if not painter.image(rows, rows.shape[0] - 1, title, with_start=True).save(str(png)):
        raise OSError(f"cannot write {png}")
    n = min(GIF_FRAMES, rows.shape[0])
    idx = np.unique(np.linspace(0, rows.shape[0] - 1, n).round().astype(int))
    frames = [_to_pil(painter.image(rows, int(k), title)) for k in idx]
    t_span = float(rows[-1, 0] - rows[0, 0])
    duration = int(np.clip(1000 * t_span / max(len(idx) - 1, 1), 20, 200))  # real time where it can
    pal = frames[0].quantize(colors=255)
    q = [f.quantize(palette=pal) for f in frames]
    gif = out / "mechanism.gif"
    q[0].save(str(gif), save_all=True, append_images=q[1:], duration=duration, loop=0)
    return png, gif


# ------------------------------------------------------------------------ run
def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from .threads import configure_environment

    configure_environment()
    from . import qt  # noqa: F401 -- first Qt import (PySide6 work-around)
    from PySide6.QtWidgets import QApplication

    from linkwork.engine.errors import MechanismError, SimulationError
    from linkwork.engine.simulation import Simulation

    from .main import configure_application
    from .qt.exporting import export_plot
    from .session import Session
    from .session.export import export_csv
    from .session.session import RunRefused

    app = QApplication.instance() or QApplication([sys.argv[0]])
    configure_application(app)
    session = Session()
    try:
        spec = session.document.open(args.file)
    except MechanismError as exc:
        print(f"linkwork: {args.file}: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as exc:
        print(f"linkwork: cannot open {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_REFUSED
    video_opts = _video_options(args)
    if isinstance(video_opts, str) and video_opts:
        print(f"linkwork: {video_opts}", file=sys.stderr)
        return EXIT_REFUSED
    overrides = {k: getattr(args, k) for k in ("formulation", "integrator", "dt", "t_end")
                 if getattr(args, k) is not None}
    try:
        run = session.prepare_run(overrides)
    except RunRefused as exc:
        print(f"linkwork: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    stem = Path(args.file).name.removesuffix(".json").removesuffix(".mech")
    out = Path(args.out) if args.out else Path("linkwork-report") / stem
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"linkwork: cannot create {out}: {exc.strerror}", file=sys.stderr)
        return EXIT_REFUSED
    s = run.settings
    print(f"linkwork: {spec.name or stem}: {s.formulation}/{s.integrator}, dt {s.dt:g} s, "
          f"{s.t_end:g} s simulated", file=sys.stderr)
    status, t0 = EXIT_OK, time.perf_counter()
    tty = sys.stderr.isatty()
    try:
        sim = Simulation(run.model, s)
        run.set_status("compiling")
        sim.prepare()
        run.set_status("running")
        for chunk in sim.run(max_interval=0.25):
            run.append(chunk.rows, chunk.stats)
            if tty:
                t = chunk.stats["t"]
                print(f"\r  t = {t:8.3f} / {s.t_end:g} s  {100 * t / s.t_end:5.1f} %  "
                      f"wall {time.perf_counter() - t0:6.1f} s", end="", file=sys.stderr, flush=True)
        run.set_status("finished")
    except SimulationError as exc:
        run.set_status("failed", str(exc), exc.t)
        print(("\n" if tty else "") + f"linkwork: {exc}", file=sys.stderr)
        status = EXIT_FAILED
    except KeyboardInterrupt:
        run.set_status("stopped")
        print("\nlinkwork: interrupted; writing what was computed", file=sys.stderr)
        status = EXIT_INTERRUPTED
    if tty:
        print("", file=sys.stderr)
    if run.n_rows == 0:
        return status
    from .session.plotdata import default_quantity

    session.plot_options.set(quantity=default_quantity(run.columns))  # as the application's plot panel
    written = [export_csv(run, out / "results.csv"), export_plot(session, "all", out / "plots.png")]
    title = f"{spec.name or stem} -- {s.formulation}/{s.integrator}"
    if run.n_rows >= 2:
        written += list(write_pictures(spec, run.data, out, title))
    if video_opts and run.n_rows >= 2:
        path, fps, size = video_opts
        try:
            written.append(write_video(session, spec, path, fps, size, f"{spec.name or stem} -- {run.label}"))
        except (OSError, ValueError, RuntimeError) as exc:
            print(f"linkwork: the video was not written: {exc}", file=sys.stderr)
            status = status or EXIT_REFUSED
        except KeyboardInterrupt:
            print("\nlinkwork: interrupted; the video was not written", file=sys.stderr)
            status = EXIT_INTERRUPTED
    print(f"linkwork: {run.summary()}", file=sys.stderr)
    for p in written:
        print(p)
    return status
