"""The 3-D view panel: the vispy canvas, camera buttons, trail choice and playback bar.

Playback: a time slider over the current run's rows, play/pause and speed.
While a run is live the view follows its newest row and the slider is
disabled; afterwards the slider, the plots' cursor and the view share the
session's playback time.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QColor, QGuiApplication, QPainter
from PySide6.QtWidgets import (
    QComboBox, QHBoxLayout, QLabel, QSizePolicy, QSlider, QStyle, QToolButton, QVBoxLayout, QWidget,
)

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session.playback import SPEEDS

PLAY_FPS = 30


def gl_available() -> tuple[bool, str]:
    """Whether an embedded OpenGL canvas can work on this Qt platform (and why not)."""
    plat = QGuiApplication.platformName()
    if plat in ("offscreen", "minimal", "vnc"):
        return False, f"the Qt platform {plat!r} has no OpenGL windows"
    return True, ""


def _trail_target(data) -> tuple[str, str] | None:
    if not data:
        return None
    kind, _, name = str(data).partition(":")
    return kind, name


class SceneDisplay(QWidget):
    """Shows frames of an off-screen :class:`~app.vispy.scene.MechanismScene` and hands it
    the mouse and keyboard (orbit, pan, zoom).  Frames are rendered once per event-loop
    pass however many changes asked for one."""

    def __init__(self, scene, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("SceneDisplay")
        self.scene = scene
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setAttribute(Qt.WA_OpaquePaintEvent)
        self._image = None
        self._pending = False
        scene.on_update = self.schedule
        self.frames = 0

    def schedule(self) -> None:
        if not self._pending:
            self._pending = True
            QTimer.singleShot(0, self.render_now)

    def render_now(self) -> None:
        self._pending = False
        if self.scene is None or not self.isVisible() or self.width() < 2 or self.height() < 2:
            return
        dpr = self.devicePixelRatioF()
        size = (max(2, int(self.width() * dpr)), max(2, int(self.height() * dpr)))
        img = self.scene.render_frame(size)
        from .exporting import rgba_to_qimage

        q = rgba_to_qimage(img)
        q.setDevicePixelRatio(dpr)
        self._image = q
        self.frames += 1
        self.update()

    def paintEvent(self, ev):  # noqa: N802
        p = QPainter(self)
        if self._image is not None:
            p.drawImage(0, 0, self._image)
        else:
            p.fillRect(self.rect(), QColor(246, 247, 249))
        p.end()

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        if self.scene is not None:
            self.scene.set_size(self.width(), self.height())
        self.schedule()

    def showEvent(self, ev):  # noqa: N802
        super().showEvent(ev)
        self.schedule()

    # input goes to the canvas backend, which turns it into vispy events (camera)
    def _native(self):
        return self.scene.canvas.native if self.scene is not None else None

    def mousePressEvent(self, ev):  # noqa: N802
        self.setFocus()
        if self._native() is not None:
            self._native().mousePressEvent(ev)

    def mouseReleaseEvent(self, ev):  # noqa: N802
        if self._native() is not None:
            self._native().mouseReleaseEvent(ev)

    def mouseMoveEvent(self, ev):  # noqa: N802
        if self._native() is not None:
            self._native().mouseMoveEvent(ev)

    def mouseDoubleClickEvent(self, ev):  # noqa: N802
        if self._native() is not None:
            self._native().mouseDoubleClickEvent(ev)

    def wheelEvent(self, ev):  # noqa: N802
        if self._native() is not None:
            self._native().wheelEvent(ev)

    def keyPressEvent(self, ev):  # noqa: N802
        if self._native() is not None:
            self._native().keyPressEvent(ev)
        super().keyPressEvent(ev)

    def close_display(self) -> None:
        if self.scene is not None:
            self.scene.on_update = None
        self.scene = None


class ViewPanel(QWidget):
    def __init__(self, session: Session, parent: QWidget | None = None, enable_gl: bool | None = None):
        super().__init__(parent)
        self.setObjectName("ViewPanel")
        self.session = session
        self._subs = Subscriptions()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)

        bar = QHBoxLayout()
        bar.setContentsMargins(4, 3, 4, 3)
        bar.setSpacing(3)
        self.view_buttons = {}
        for key, text, tip in (("iso", "3D", "Oblique view"), ("front", "Front", "Look along −z (XY plane)"),
                               ("top", "Top", "Look down along −y (XZ plane)"),
                               ("side", "Side", "Look along −x (ZY plane)")):
            b = QToolButton()
            b.setText(text)
            b.setToolTip(tip)
            b.clicked.connect(lambda _=False, k=key: self.reset_camera(k))
            bar.addWidget(b)
            self.view_buttons[key] = b
        self.reset_btn = QToolButton()
        self.reset_btn.setText("Reset view")
        self.reset_btn.setToolTip("Fit the camera to the mechanism (R)")
        self.reset_btn.clicked.connect(lambda: self.reset_camera(self._last_view))
        bar.addWidget(self.reset_btn)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Trail:"))
        self.trail_combo = QComboBox()
        self.trail_combo.setObjectName("trailCombo")
        self.trail_combo.setToolTip("Draw the path of a body's centre of mass or of a joint")
        self.trail_combo.setMinimumContentsLength(10)
        self.trail_combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.trail_combo.activated.connect(self._trail_picked)
        bar.addWidget(self.trail_combo)
        bar.addStretch(1)
        lay.addLayout(bar)

        ok, why = gl_available()
        if enable_gl is False:
            ok, why = False, "the 3-D view is switched off"
        self.scene = None
        self.display = None
        if ok:
            from linkwork.app.vispy.scene import MechanismScene

            self.scene = MechanismScene(session, offscreen=True)
            self.display = SceneDisplay(self.scene)
            self.display.setMinimumSize(200, 150)
            self.display.setToolTip("Drag: orbit · Shift+drag: pan · wheel or right-drag: zoom · "
                                    "the buttons above reset the camera")
            self.display.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
            lay.addWidget(self.display, 1)
        else:
            lab = QLabel(f"3-D view unavailable: {why}.\nRun Linkwork on a desktop or under Xvfb to see it.")
            lab.setAlignment(Qt.AlignCenter)
            lab.setStyleSheet("color: #666;")
            lay.addWidget(lab, 1)
            for b in list(self.view_buttons.values()) + [self.reset_btn]:
                b.setEnabled(False)
            self.trail_combo.setEnabled(False)
        self.empty_hint = QLabel("Empty mechanism — open an example (File ▸ Examples), generate one "
                                 "(File ▸ New from generator) or draw it in the Sketch tab.", self)
        self.empty_hint.setWordWrap(True)
        self.empty_hint.setAlignment(Qt.AlignCenter)
        self.empty_hint.setStyleSheet("background: rgba(255,255,255,220); color: #444; padding: 10px;"
                                      " border: 1px solid #ccc; border-radius: 6px;")
        self.empty_hint.hide()

        pb = QHBoxLayout()
        pb.setContentsMargins(4, 3, 4, 3)
        pb.setSpacing(6)
        self.play_btn = QToolButton()
        self.play_btn.setObjectName("playButton")
        self.play_btn.setText("Play")
        self.play_btn.setIcon(self.style().standardIcon(QStyle.SP_MediaPlay))
        self.play_btn.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.play_btn.setToolTip("Play / pause the animation (Space)")
        self.play_btn.clicked.connect(self.toggle_play)
        pb.addWidget(self.play_btn)
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName("timeSlider")
        self.slider.setRange(0, 0)
        self.slider.valueChanged.connect(self._slider_moved)
        pb.addWidget(self.slider, 1)
        self.time_label = QLabel("t = 0 s")
        self.time_label.setMinimumWidth(80)
        pb.addWidget(self.time_label)
        pb.addWidget(QLabel("Speed"))
        self.speed = QComboBox()
        self.speed.setObjectName("speedCombo")
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.speed.activated.connect(lambda i: session.playback.set_speed(self.speed.itemData(i)))
        pb.addWidget(self.speed)
        lay.addLayout(pb)

        self.timer = QTimer(self)
        self.timer.setInterval(int(1000 / PLAY_FPS))
        self.timer.timeout.connect(self._tick)
        self._last_tick = None
        self._last_view = "iso"

        p = session.playback
        self._subs.connect(p.time_changed, self._on_time)
        self._subs.connect(p.playing_changed, self._on_playing)
        self._subs.connect(p.live_changed, lambda live: self._sync_slider())
        self._subs.connect(session.history.current_changed, lambda run: self._sync_slider())
        self._subs.connect(session.document.state_changed, lambda st: self._on_doc())
        self._on_doc()
        self._sync_slider()

    # ----------------------------------------------------------------- lifecycle
    def close_panel(self) -> None:
        self.timer.stop()
        self._subs.disconnect_all()
        if self.display is not None:
            self.display.close_display()
        if self.scene is not None:
            self.scene.close()
            self.scene = None

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        w = min(420, self.width() - 40)
        self.empty_hint.setFixedWidth(max(100, w))
        self.empty_hint.adjustSize()
        self.empty_hint.move((self.width() - self.empty_hint.width()) // 2,
                             (self.height() - self.empty_hint.height()) // 2)

    # ------------------------------------------------------------------- camera
    def reset_camera(self, view: str = "iso") -> None:
        self._last_view = view
        if self.scene is not None:
            self.scene.reset_camera(view)

    # -------------------------------------------------------------------- trail
    def _on_doc(self) -> None:
        spec = self.session.document.spec
        self.empty_hint.setVisible(not spec.bodies)
        self.empty_hint.raise_()
        with QSignalBlocker(self.trail_combo):
            cur = self.trail_combo.currentData()
            self.trail_combo.clear()
            self.trail_combo.addItem("none", "")
            for b in spec.bodies:
                self.trail_combo.addItem(f"body {b.name} (COM)", f"body:{b.name}")
            for j in spec.joints:
                self.trail_combo.addItem(f"joint {j.name}", f"joint:{j.name}")
            i = self.trail_combo.findData(cur) if cur else 0
            self.trail_combo.setCurrentIndex(max(0, i))
        target = _trail_target(self.trail_combo.currentData())
        if self.scene is not None and target != self.scene.trail_target:
            self.scene.set_trail(target)

    def _trail_picked(self, i: int) -> None:
        if self.scene is not None:
            self.scene.set_trail(_trail_target(self.trail_combo.itemData(i)))

    def set_trail(self, target) -> None:
        """Show the trail of ("body", name) or ("joint", name), or none (None)."""
        i = self.trail_combo.findData(f"{target[0]}:{target[1]}" if target else "")
        if i >= 0:
            self.trail_combo.setCurrentIndex(i)
            self._trail_picked(i)

    # ----------------------------------------------------------------- playback
    def _run(self):
        return self.session.history.current

    def _sync_slider(self) -> None:
        run = self._run()
        live = self.session.playback.live
        n = run.n_rows if run is not None else 0
        with QSignalBlocker(self.slider):
            self.slider.setRange(0, max(0, n - 1))
            if run is not None and n:
                self.slider.setValue(run.row_at(self.session.playback.time))
        can_play = run is not None and n > 1 and not live
        self.slider.setEnabled(can_play)
        self.play_btn.setEnabled(can_play)
        if not can_play and self.session.playback.playing:
            self.session.playback.set_playing(False)

    def _slider_moved(self, i: int) -> None:
        run = self._run()
        if run is None or run.n_rows == 0 or self.session.playback.live:
            return
        self.session.playback.set_time(float(run.data[min(i, run.n_rows - 1), 0]))

    def _on_time(self, t: float) -> None:
        self.time_label.setText(f"t = {t:.3f} s")
        run = self._run()
        if run is None:
            return
        if self.session.playback.live:
            with QSignalBlocker(self.slider):
                self.slider.setRange(0, max(0, run.n_rows - 1))
                self.slider.setValue(run.n_rows - 1)
            return
        with QSignalBlocker(self.slider):
            if self.slider.maximum() != run.n_rows - 1:
                self.slider.setRange(0, max(0, run.n_rows - 1))
            self.slider.setValue(run.row_at(t))

    def toggle_play(self) -> None:
        p = self.session.playback
        run = self._run()
        if run is None or run.n_rows < 2 or p.live:
            return
        if not p.playing and p.time >= run.t_last:
            p.set_time(0.0)
        p.set_playing(not p.playing)

    def _on_playing(self, playing: bool) -> None:
        self.play_btn.setText("Pause" if playing else "Play")
        self.play_btn.setIcon(self.style().standardIcon(QStyle.SP_MediaPause if playing else QStyle.SP_MediaPlay))
        if playing:
            self._last_tick = time.perf_counter()
            self.timer.start()
        else:
            self.timer.stop()

    def _tick(self) -> None:
        run = self._run()
        p = self.session.playback
        if run is None or run.n_rows == 0:
            p.set_playing(False)
            return
        now = time.perf_counter()
        dt = now - (self._last_tick or now)
        self._last_tick = now
        p.advance(dt, run.t_last)
