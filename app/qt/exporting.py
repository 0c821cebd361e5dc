"""Exporters: results CSV, plot images (PNG/SVG), the 3-D view (PNG) and animations (GIF).

Plots are re-drawn from the result history at full resolution (conventions
12): the exported picture holds every row, not the downsampled screen curve.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (registers the exporters)
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication

from linkwork.app.session import Session
from linkwork.app.session.export import export_csv  # noqa: F401  (re-exported for the window)
from linkwork.app.session.plotdata import LEVELS, PLOTS

from .plotting import build_static_plots, plot_runs


def gif_available() -> tuple[bool, str]:
    if importlib.util.find_spec("PIL") is None:
        return False, "animated GIF export needs the Pillow package (pip install Pillow)"
    return True, ""


def _plot_widget(session: Session, kinds, width: int, height: int):
    runs = plot_runs(session.history, session.history.current)
    o = session.plot_options
    w = pg.GraphicsLayoutWidget()
    w.setBackground("w")
    w.setAttribute(Qt.WA_DontShowOnScreen)
    w.resize(width, height)
    w.ci.setContentsMargins(8, 8, 8, 8)
    w.ci.layout.setHorizontalSpacing(14)
    items = build_static_plots(w.ci, kinds, runs, o.quantity, o.levels or LEVELS, o.log_energy, width=2.0)
    for pi in items[1:]:
        pi.setXLink(items[0])
    w.show()  # laid out, never on screen
    QApplication.processEvents()
    return w, items


def _dispose(w, items) -> None:
    menus = []
    for pi in items:
        menus += [getattr(pi, "ctrlMenu", None), getattr(pi.vb, "menu", None)]
    w.close()
    w.deleteLater()
    for m in menus:
        if m is not None:
            m.deleteLater()


def _write_svg(w, path: Path, width: int, height: int) -> None:
    """The plot scene through Qt's SVG generator (vector output, any Qt version)."""
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(QSize(width, height))
    gen.setViewBox(QRectF(0, 0, width, height))
    gen.setTitle("Linkwork plot")
    gen.setDescription("Exported by Linkwork from the result history")
    p = QPainter(gen)
    try:
        w.scene().render(p, QRectF(0, 0, width, height), w.ci.sceneBoundingRect())
    finally:
        p.end()


def export_plot(session: Session, kind: str, path: str | Path, width: int = 1400, height: int = 800) -> Path:
    """Write plot ``kind`` ("energy", "violation", "quantity" or "all") as PNG or SVG (by suffix)."""
    p = Path(path)
    kinds = PLOTS if kind == "all" else (kind,)
    if kind != "all" and kind not in PLOTS:
        raise ValueError(f"unknown plot {kind!r}")
    if session.history.current is None:
        raise ValueError("there is no run to plot")
    suffix = p.suffix.lower()
    if suffix not in (".svg", ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff"):
        raise ValueError(f"unsupported plot format {p.suffix!r} (use .png or .svg)")
    full_w = width if kind != "all" else int(width * 1.6)
    w, items = _plot_widget(session, kinds, full_w, height)
    try:
        if suffix == ".svg":
            _write_svg(w, p, full_w, height)
        else:
            ex = pg.exporters.ImageExporter(w.ci if kind == "all" else items[0])
            ex.parameters()["width"] = full_w
            ex.parameters()["antialias"] = True
            ex.export(str(p))
    finally:
        _dispose(w, items)
    if not p.exists():
        raise OSError(f"cannot write {p}")
    return p


def rgba_to_qimage(img: np.ndarray) -> QImage:
    img = np.ascontiguousarray(img)
    h, w = img.shape[:2]
    return QImage(img.data, w, h, 4 * w, QImage.Format_RGBA8888).copy()


def export_view_png(scene, path: str | Path, size: tuple[int, int] | None = None) -> Path:
    """The 3-D view as a PNG (rendered off the canvas; ``size`` in pixels)."""
    p = Path(path)
    img = scene.render(size)
    if not rgba_to_qimage(img).save(str(p)):
        raise OSError(f"cannot write {p}")
    return p


def export_animation(session: Session, scene, path: str | Path, fps: float = 20.0, speed: float | None = None,
                     size: tuple[int, int] | None = None,
                     progress: Callable[[int, int], bool] | None = None) -> Path:
    """The current run animated as a GIF (Pillow), at ``speed`` × real time (playback speed by default).

    ``progress(done, total)`` may return False to cancel (nothing is written then).
    """
    ok, why = gif_available()
    if not ok:
        raise RuntimeError(why)
    from PIL import Image

    run = session.history.current
    if run is None or run.n_rows < 2:
        raise ValueError("there is no run to animate")
    p = Path(path)
    pb = session.playback
    speed = pb.speed if speed is None else speed
    t_end = run.t_last
    n = max(2, int(np.ceil(t_end / speed * fps)) + 1)
    n = min(n, 2000)
    times = np.linspace(0.0, t_end, n)
    old_t, old_playing = pb.time, pb.playing
    pb.set_playing(False)
    frames = []
    try:
        for k, t in enumerate(times):
            pb.set_time(float(t))
            scene._draw_now()
            img = scene.render(size)
            frames.append(Image.fromarray(np.ascontiguousarray(img[:, :, :3])))
            if progress is not None and progress(k + 1, n) is False:
                return p
        pal = frames[0].quantize(colors=255, method=Image.Quantize.MEDIANCUT)
        q = [f.quantize(palette=pal, dither=Image.Dither.NONE) for f in frames]
        q[0].save(str(p), save_all=True, append_images=q[1:], duration=int(round(1000 / fps)), loop=0,
                  optimize=False, disposal=1)
    finally:
        pb.set_time(old_t)
        pb.set_playing(old_playing)
    return p
