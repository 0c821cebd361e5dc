"""The 3-D view of the mechanism (vispy ``SceneCanvas``).

Shaded bodies (rods, boxes, spheres, cylinders, meshes), joint markers that
show the joint type and axis, gears as links between their two joints (drawn
over the bodies), ground bases under the ground pivots, a floor grid, the world
axes, and an optional trail of a body's centre of mass or a joint.  The view subscribes to the session when created and unsubscribes in
:meth:`MechanismScene.close`:

- ``document.state_changed`` -> rebuild the geometry (editing shows t = 0);
- ``document.selection_changed`` -> highlight;
- ``history.current_changed`` / ``playback.time_changed`` -> pose the bodies
  from the current run's row at the playback time (live while running).
"""

from __future__ import annotations

import os
import time

import numpy as np
import vispy
from vispy import scene

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session.geometry import (
    BODY_FIELDS, body_primitives, characteristic_length, gear_links, gear_segments, initial_poses, joint_markers,
    poses_from_row, quats_to_rots, spec_bounds,
)

from .meshes import BodyMeshes, box, concat, cylinder, joint_marker_meshes, sphere
from .visuals import ShadedMesh

BG = (0.965, 0.968, 0.975, 1.0)
BODY_COLORS = np.array([
    (0.30, 0.47, 0.66), (0.35, 0.63, 0.61), (0.55, 0.45, 0.70), (0.40, 0.60, 0.35),
    (0.70, 0.52, 0.30), (0.45, 0.55, 0.72),
])
BODY_COLORS_2 = np.array([(0.30, 0.47, 0.66), (0.42, 0.62, 0.78)])
SELECT_COLOR = np.array((0.96, 0.52, 0.09))
JOINT_COLOR = np.array((0.20, 0.20, 0.22))
JOINT_SELECT_COLOR = np.array((0.95, 0.35, 0.05))
GROUND_COLOR = (0.38, 0.38, 0.40, 1.0)
TRAIL_COLOR = (0.85, 0.20, 0.15, 0.9)
#: most points of a trail: a longer run's trail is drawn through evenly spaced rows
TRAIL_POINTS = 4096
GEAR_COLOR = (0.85, 0.60, 0.05, 1.0)
GEAR_SELECT_COLOR = (0.95, 0.35, 0.05, 1.0)
#: radius of a gear's link, times the mechanism's characteristic length
GEAR_RADIUS = 0.022

#: camera presets (elevation, azimuth) with up = +y
VIEWS = {"iso": (20.0, 62.0), "front": (0.0, 90.0), "top": (90.0, 90.0), "side": (0.0, 180.0)}

#: at most this many redraws per second while a run streams in
LIVE_MAX_FPS = 15.0
#: and at most this fraction of the GUI thread's time spent posing and drawing
LIVE_DRAW_BUDGET = 0.015


def use_backend() -> None:
    """Select vispy's PySide6 backend (before any canvas exists)."""
    from linkwork.app import qt_compat as compat

    compat.apply()
    try:
        vispy.use("pyside6")
    except RuntimeError:
        pass  # already selected


def use_headless_backend() -> None:
    """Select vispy's EGL backend on Mesa's surfaceless platform (before any canvas exists):
    a canvas that renders with no display, no X server and no Qt window (the videos of
    ``linkwork report --video``).  Raises RuntimeError where EGL cannot be loaded."""
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")
    vispy.use(app="egl")


class MechanismScene:
    """Owns the ``SceneCanvas``; ``canvas.native`` is the Qt widget to embed."""

    def __init__(self, session: Session, parent=None, size=(640, 480), offscreen: bool = False,
                 headless: bool = False):
        """``offscreen``: the canvas is never put on screen; :meth:`render_frame` draws into a
        framebuffer and ``on_update`` (set by the owner) is called whenever the view needs
        a new frame.  A window that holds an on-screen OpenGL widget is composed through
        OpenGL on every repaint of any widget, which on a software renderer costs ~10 ms
        per plot update; rendering off screen keeps the rest of the window raster-painted.

        ``headless``: no Qt at all -- the canvas is vispy's EGL one (:func:`use_headless_backend`),
        drawn only by :meth:`render`; for rendering videos without a display.
        """
        if headless and offscreen:
            raise ValueError("a headless scene has no Qt widget to keep off screen")
        if headless:
            use_headless_backend()
        else:
            use_backend()
        self.session = session
        self.offscreen = offscreen
        self.on_update = None
        #: (x (nb, 3), R (nb, 3, 3)), file order, drawn instead of the run's or the file's
        #: poses while set (a vibration mode animated: :meth:`show_poses`)
        self.pose_override = None
        self.canvas = scene.SceneCanvas(keys=None, bgcolor=BG, size=size, parent=None if offscreen else parent,
                                        show=False, config={"samples": 0 if offscreen else 4})
        self.canvas.unfreeze()
        if offscreen:
            from PySide6.QtCore import Qt

            nat = self.canvas.native
            nat.setAttribute(Qt.WA_DontShowOnScreen)
            nat.resize(*size)
            nat.show()  # "shown" off screen: the OpenGL context exists, nothing is composed
            backend = self.canvas._backend
            backend._vispy_update = self._request_update
        self._fbos: dict = {}
        self._shown_size = None
        self._quiet = False
        self.view = self.canvas.central_widget.add_view()
        self.camera = scene.cameras.TurntableCamera(fov=30.0, up="+y", elevation=VIEWS["iso"][0],
                                                     azimuth=VIEWS["iso"][1])
        self.view.camera = self.camera
        self.grid = scene.visuals.Line(connect="segments", color=(0.55, 0.57, 0.62, 0.45), width=1,
                                       parent=self.view.scene, antialias=False)
        tri = np.array([[0, 0, 0], [1e-6, 0, 0], [0, 1e-6, 0]], dtype=np.float32)
        face = np.array([[0, 1, 2]], dtype=np.uint32)
        self.ground = scene.visuals.Mesh(tri, face, shading="flat", parent=self.view.scene)
        self.bodies = ShadedMesh(parent=self.view.scene)
        self.trail = scene.visuals.Line(color=TRAIL_COLOR, width=2, parent=self.view.scene)
        self.trail.visible = False
        # gears: a thin shaded bar per gear between its joints' markers, re-made at each pose
        # (a few dozen vertices; wide GL lines are not available on every OpenGL)
        self.gears = scene.visuals.Mesh(tri, face, shading="smooth", parent=self.view.scene)
        self.gears.visible = False
        self._gear_links = np.zeros((0, 2), dtype=np.int64)
        self._gear_radius = 0.01
        self.axes = scene.visuals.XYZAxis(parent=self.view.scene, width=2)
        for m in (self.ground, self.gears):
            sf = m.shading_filter
            sf.ambient_light = (1, 1, 1, 0.45)
            sf.diffuse_light = (1, 1, 1, 0.75)
            sf.specular_light = (1, 1, 1, 0.25)
            sf.shininess = 40
        self._light = None
        self.view.scene.transform.changed.connect(self._update_light)
        self.trail_target: tuple[str, str] | None = None  # ("body"|"joint", name)
        self.frames = 0
        self._last_draw = 0.0
        self._pending = False
        self._draw_cost = 0.0
        self.frames_rendered = 0
        self._pose_cost = 0.0
        self._draw_t0 = None
        self.canvas.events.draw.connect(self._draw_started, position="first")
        self.canvas.events.draw.connect(self._draw_done, position="last")
        self._meshes: BodyMeshes | None = None
        self._geometry_id = None
        self._auto_camera = True
        self._last_view = "iso"
        self.canvas.events.mouse_move.connect(self._mouse_used)
        self.canvas.events.mouse_wheel.connect(self._mouse_used)
        self._markers = None
        self._spec = None
        self._run = None
        self._row = None
        self._subs = Subscriptions()
        s = session
        self._subs.connect(s.document.state_changed, lambda st: self.rebuild())
        self._subs.connect(s.document.selection_changed, lambda sel: self._recolor())
        self._subs.connect(s.history.current_changed, lambda run: self.rebuild())
        self._subs.connect(s.playback.time_changed, self._on_time)
        self._subs.connect(s.playback.live_changed, lambda live: self._flush() if not live else None)
        self.rebuild(fit=True)

    # ------------------------------------------------------------------ lifecycle
    @property
    def native(self):
        return self.canvas.native

    def set_size(self, w: int, h: int) -> None:
        """The size (logical pixels) the view is shown at; the camera's aspect follows."""
        size = (max(1, int(w)), max(1, int(h)))
        c = self.canvas
        if size == self._shown_size:
            return
        self._shown_size = size
        if self.offscreen:
            c.native.resize(*size)
            c._backend._vispy_set_physical_size(*size)
        c.events.resize(size=size, physical_size=size)  # the view box and camera follow
        self.canvas.update()

    def _request_update(self) -> None:
        if self.on_update is not None and not self._quiet:
            self.on_update()

    def render_frame(self, size: tuple[int, int]) -> np.ndarray:
        """Draw the view into a framebuffer of ``size`` (w, h) pixels, the canvas' size
        times its pixel ratio; (h, w, 4) uint8.  (For another size see :meth:`render`.)"""
        from vispy import gloo

        size = (max(1, int(size[0])), max(1, int(size[1])))
        c = self.canvas
        fbo = self._fbos.get(size)
        if fbo is None:
            if len(self._fbos) > 4:
                self._fbos.clear()
            fbo = self._fbos[size] = gloo.FrameBuffer(color=gloo.RenderBuffer(size[::-1]),
                                                      depth=gloo.RenderBuffer(size[::-1]))
        c.set_current()
        t0 = time.perf_counter()
        # Switching to and from the framebuffer changes the canvas transforms, which asks
        # for another frame; hold update requests until the frame is read back, then
        # accept them again (what the canvas' own draw handler does).
        c._update_pending = True
        try:
            c.push_fbo(fbo, (0, 0), c.size)
            try:
                c._draw_scene()
                img = fbo.read()
            finally:
                c.pop_fbo()
        finally:
            c._update_pending = False
        dt = time.perf_counter() - t0 + self._pose_cost
        self._draw_cost = 0.7 * self._draw_cost + 0.3 * dt
        self.frames_rendered += 1
        return img

    def close(self) -> None:
        """Unsubscribe from the session and close the canvas."""
        self._subs.disconnect_all()
        try:
            self.view.scene.transform.changed.disconnect(self._update_light)
        except Exception:
            pass
        native = self.canvas.native
        self.canvas.close()
        if self.offscreen:
            native.deleteLater()

    @property
    def subscriptions(self) -> int:
        return len(self._subs)

    # ------------------------------------------------------------------ geometry
    def source_spec(self):
        """The mechanism drawn: the current run's if it is the document's, else the document's."""
        doc = self.session.document
        run = self.session.history.current
        if run is not None and (run.spec is doc.spec or run.spec == doc.spec) and run.n_rows > 0:
            return doc.spec, run
        if run is not None and run.active:
            return run.spec, run
        return doc.spec, None

    def rebuild(self, fit: bool = False) -> None:
        spec, run = self.source_spec()
        same = self._spec is not None and (spec is self._spec or spec == self._spec) and spec.bodies
        if same and not fit and self._meshes is not None:
            # the same mechanism (a new run of it, or a run made current): just re-pose
            self._run = run
            self._pose()
            self.update_trail()
            self.canvas.update()
            return
        new_mech = self._spec is None or len(spec.bodies) != len(self._spec.bodies) or \
            [b.name for b in spec.bodies] != [b.name for b in self._spec.bodies]
        self._spec = spec
        self._run = run
        if not spec.bodies:
            self._meshes = None
            self.bodies.visible = False
            self.gears.visible = False
            self.ground.visible = False
            self.grid.visible = False
            self.trail.visible = False
            self.canvas.update()
            return
        L = characteristic_length(spec)
        lo, hi = spec_bounds(spec)
        extent = float(np.max(hi - lo))
        self._size = L
        prims = body_primitives(spec)
        markers = joint_markers(spec)
        self._markers = markers
        self._gear_links = gear_links(spec, markers)
        self._gear_radius = GEAR_RADIUS * L
        min_r = 0.0025 * extent
        jsize = max(0.06 * L, 2.0 * min_r)
        n_items = len(spec.bodies) + len(spec.joints)
        big = n_items > 64
        extra = joint_marker_meshes(spec, markers, jsize, detail=0 if n_items > 160 else (1 if big else 2))
        self._joint_vertex_ranges = []
        self._meshes = BodyMeshes(spec, prims, segments=8 if big else 16, extra=extra, min_radius=min_r)
        # vertex ranges of each joint's marker (for highlighting)
        n = sum(e - s for s, e in self._meshes.body_vertex_range)
        k = 0
        rng = []
        for body, (v, f) in extra:
            rng.append((n, n + len(v)))
            n += len(v)
            k += 1
        # map marker pieces to joints: universal has 3 pieces, others 1
        per_joint = []
        i = 0
        for j in spec.joints:
            cnt = 3 if j.type == "universal" else 1
            per_joint.append((rng[i][0], rng[i + cnt - 1][1]))
            i += cnt
        self._joint_vertex_ranges = per_joint
        self._build_ground(spec, markers, jsize)
        self.bodies.visible = True
        self._recolor(update=False)
        self._pose()
        if fit or new_mech:
            self.reset_camera()
        self.update_trail()
        self.canvas.update()

    def _build_ground(self, spec, markers, size) -> None:
        lo, hi = spec_bounds(spec)
        pieces = []
        for k, j in enumerate(spec.joints):
            if markers.grounded[k]:
                a = np.asarray(j.anchor, float)
                pieces.append(box(a + np.array([0, -1.6 * size, 0]), np.eye(3), (3.2 * size, 1.2 * size,
                                                                               2.0 * size)))
        if pieces:
            v, f = concat(pieces)
            self.ground.set_data(vertices=v, faces=f, color=GROUND_COLOR)
            self.ground.visible = True
        else:
            self.ground.visible = False
        # floor grid under the mechanism: below the lowest point any body can swing to
        # (every point at most its distance from the nearest ground pivot below that pivot)
        L = self._size
        pts = [np.asarray(j.anchor, float) for j in spec.joints]
        for b in spec.bodies:
            pts.append(np.asarray(b.position, float))
            if b.shape is not None and b.shape.kind == "rod":
                pts += [np.asarray(b.shape.p_from, float), np.asarray(b.shape.p_to, float)]
        P = np.array(pts) if pts else np.zeros((1, 3))
        pivots = np.array([np.asarray(j.anchor, float) for k, j in enumerate(spec.joints) if markers.grounded[k]])
        lowest = lo[1]
        if len(pivots):
            d = np.linalg.norm(P[:, None, :] - pivots[None, :, :], axis=-1).min(axis=1)
            lowest = min(lowest, float(pivots[:, 1].min() - d.max()))
        ext = max(float(np.max(hi - lo)), 2 * L, 2 * (lo[1] - lowest))
        step = _nice_step(ext / 6)
        cx, cz = 0.5 * (lo[0] + hi[0]), 0.5 * (lo[2] + hi[2])
        half = ext
        y = lowest - 0.25 * L
        xs = np.arange(np.floor((cx - half) / step), np.ceil((cx + half) / step) + 1) * step
        zs = np.arange(np.floor((cz - half) / step), np.ceil((cz + half) / step) + 1) * step
        segs = []
        for x in xs:
            segs += [(x, y, zs[0]), (x, y, zs[-1])]
        for z in zs:
            segs += [(xs[0], y, z), (xs[-1], y, z)]
        self.grid.set_data(pos=np.array(segs, dtype=np.float32))
        self.grid.visible = True
        self._floor_y = y
        self.axes.transform = scene.transforms.STTransform(scale=(0.5 * L, 0.5 * L, 0.5 * L))

    def _recolor(self, update: bool = True) -> None:
        m = self._meshes
        if m is None:
            return
        spec = self._spec
        nb = len(spec.bodies)
        pal = BODY_COLORS if nb <= 12 else BODY_COLORS_2
        cols = np.empty((m.n_vertices, 4), dtype=np.float32)
        cols[:, 3] = 1.0
        sel = self.session.document.selection
        for k, (s, e) in enumerate(m.body_vertex_range):
            c = pal[k % len(pal)]
            if sel is not None and sel.kind == "body" and sel.name == spec.bodies[k].name:
                c = SELECT_COLOR
            cols[s:e, :3] = c
        for k, (s, e) in enumerate(self._joint_vertex_ranges):
            c = JOINT_COLOR
            if sel is not None and sel.kind == "joint" and sel.name == spec.joints[k].name:
                c = JOINT_SELECT_COLOR
            cols[s:e, :3] = c
        self._colors = cols
        self._pose_gears(*self.current_poses())
        if self._geometry_id != id(m):
            x, R = self.current_poses()
            self.bodies.set_geometry(m.local, m.local_normals, m.body, m.faces, cols, len(spec.bodies))
            self.bodies.set_pose(x, R)
            self._geometry_id = id(m)
        else:
            self.bodies.set_colors(cols)
        if update:
            self.canvas.update()

    # -------------------------------------------------------------------- poses
    def current_poses(self) -> tuple[np.ndarray, np.ndarray]:
        if self.pose_override is not None and self._spec is not None \
                and len(self.pose_override[0]) == len(self._spec.bodies):
            self._row = None
            return self.pose_override
        spec = self._spec
        run = self._run
        if run is not None and run.n_rows > 0:
            i = run.row_at(self.session.playback.time)
            row = run.data[i]
            self._row = i
            return poses_from_row(row, len(spec.bodies))
        self._row = None
        return initial_poses(spec)

    def show_poses(self, poses) -> None:
        """Draw the bodies at ``poses`` (``(x, R)``, file order) until called with None."""
        self.pose_override = poses
        self._draw_now()

    def _pose(self) -> None:
        m = self._meshes
        if m is None:
            return
        x, R = self.current_poses()
        self.bodies.set_pose(x, R)  # the GPU moves the vertices
        self._pose_gears(x, R)
        self.frames += 1

    def gear_segment_points(self) -> np.ndarray:
        """(2 ng, 3) end points of the gear links as drawn now (driver, driven, ...)."""
        if self._markers is None or not len(self._gear_links):
            return np.zeros((0, 3))
        return gear_segments(self._markers, self._gear_links, *self.current_poses())

    def _pose_gears(self, x, R) -> None:
        if self._markers is None or not len(self._gear_links):
            self.gears.visible = False
            return
        pts = gear_segments(self._markers, self._gear_links, x, R)
        sel = self.session.document.selection
        names = [c.name for c in self._spec.couplings
                 if c.driver in self._markers.names and c.driven in self._markers.names]
        r = self._gear_radius
        pieces, colors = [], []
        for k in range(len(self._gear_links)):
            p0, p1 = pts[2 * k], pts[2 * k + 1]
            chosen = sel is not None and sel.kind == "gear" and sel.name == names[k]
            for v, f in (cylinder(p0, p1, r, segments=10), sphere(p0, 1.6 * r, 1), sphere(p1, 1.6 * r, 1)):
                pieces.append((v, f))
                colors.append(np.tile(GEAR_SELECT_COLOR if chosen else GEAR_COLOR, (len(v), 1)))
        v, f = concat(pieces)
        self.gears.set_data(vertices=v.astype(np.float32), faces=f,
                            vertex_colors=np.vstack(colors).astype(np.float32))
        self.gears.visible = True

    def _on_time(self, t: float) -> None:
        if self._run is None:
            spec, run = self.source_spec()
            if run is not None:
                self.rebuild()
                return
        now = time.perf_counter()
        if self.session.playback.live and now - self._last_draw < self.live_interval():
            self._pending = True  # drawn on a later tick of the window's frame clock
            return
        self._draw_now()

    def live_interval(self) -> float:
        """Seconds between live redraws: at most LIVE_MAX_FPS, and at most ~15 % of the
        GUI thread's time spent drawing (software OpenGL on a small machine is slow)."""
        return max(1.0 / LIVE_MAX_FPS, self._draw_cost / LIVE_DRAW_BUDGET)

    def _draw_started(self, ev=None):
        self._draw_t0 = time.perf_counter()

    def _draw_done(self, ev=None):
        if self._draw_t0 is not None:
            dt = time.perf_counter() - self._draw_t0 + self._pose_cost
            self._draw_cost = 0.7 * self._draw_cost + 0.3 * dt
            self._draw_t0 = None

    def _flush(self, *_):
        if self._pending:
            self._draw_now()

    def _draw_now(self) -> None:
        self._pending = False
        t0 = self._last_draw = time.perf_counter()
        self._pose()
        self.update_trail()
        self._pose_cost = time.perf_counter() - t0
        self.canvas.update()

    # -------------------------------------------------------------------- trail
    def set_trail(self, target: tuple[str, str] | None) -> None:
        """Trail of a body's centre of mass (("body", name)) or a joint (("joint", name))."""
        self.trail_target = target
        self.update_trail()
        self.canvas.update()

    def trail_points(self) -> np.ndarray | None:
        run, spec, tgt = self._run, self._spec, self.trail_target
        if tgt is None or run is None or run.n_rows == 0:
            return None
        i = run.row_at(self.session.playback.time)
        if i + 1 <= TRAIL_POINTS:
            rows = run.data[:i + 1]
        else:  # a long run: evenly spaced rows and the shown one, read from its file
            rows = run.data[np.unique(np.append(np.linspace(0, i, TRAIL_POINTS).astype(np.int64), i))]
        names = [b.name for b in spec.bodies]
        if tgt[0] == "body" and tgt[1] in names:
            k = names.index(tgt[1])
            c = 1 + BODY_FIELDS * k
            return np.asarray(rows[:, c:c + 3], float)
        if tgt[0] == "joint" and self._markers is not None and tgt[1] in self._markers.names:
            k = self._markers.names.index(tgt[1])
            b = int(self._markers.body[k])
            if b < 0:
                return np.repeat(self._markers.local[k][None], len(rows), axis=0)
            c = 1 + BODY_FIELDS * b
            x = rows[:, c:c + 3]
            R = quats_to_rots(rows[:, c + 3:c + 7])
            return x + np.einsum("nij,j->ni", R, self._markers.local[k])
        return None

    def update_trail(self) -> None:
        pts = self.trail_points()
        if pts is None or len(pts) < 2:
            self.trail.visible = False
            return
        self.trail.set_data(pos=pts.astype(np.float32), color=TRAIL_COLOR)
        self.trail.visible = True

    # ------------------------------------------------------------------- camera
    def reset_camera(self, view: str = "iso") -> None:
        """Fit the camera to the mechanism; ``view``: "iso", "front", "top" or "side"."""
        lo, hi = self.fit_bounds()
        c = 0.5 * (lo + hi)
        ext = float(np.max(hi - lo))
        ext = ext if ext > 1e-6 else 1.0
        cam = self.camera
        elev, azim = VIEWS[view]
        self._last_view = view
        cam.elevation = elev
        cam.azimuth = azim
        cam.center = tuple(float(v) for v in c)
        cam.scale_factor = 1.2 * ext
        # near/far = distance / and * sqrt(depth_value): 400 keeps a 16-bit depth buffer exact enough
        cam.depth_value = 400.0
        self._update_light()
        self._auto_camera = True
        self.canvas.update()

    def run_finished(self) -> None:
        """Frame the whole motion, unless the user has moved the camera since the last fit."""
        if self._auto_camera:
            self.reset_camera(self._last_view)

    def _mouse_used(self, ev=None) -> None:
        if getattr(ev, "is_dragging", False) or getattr(ev, "type", "") == "mouse_wheel":
            self._auto_camera = False

    def fit_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """What the camera frames: the mechanism at t = 0 and, when the current run has
        ended, everything it swept through."""
        spec = self._spec
        if spec is None or not spec.bodies:
            return np.array([-1.0, -1, -1]), np.array([1.0, 1, 1])
        m = self._meshes
        x0, R0 = initial_poses(spec)
        pts = [m.world(x0, R0) if m is not None and m.n_vertices else x0]
        run = self._run
        if run is not None and run.n_rows > 0 and not run.active and len(run.spec.bodies) == len(spec.bodies):
            # centres of mass over the whole run, widened by how far each body's drawing
            # reaches from its centre of mass
            # (from the run's min/max overview: no row is read from its file)
            nb = len(spec.bodies)
            cols = (1 + BODY_FIELDS * np.arange(nb)[:, None] + np.arange(3)[None, :]).ravel()
            clo, chi = run.overview.column_range(cols)
            reach = np.zeros(nb)
            if m is not None and m.n_vertices:
                moving = m.body >= 0
                np.maximum.at(reach, m.body[moving], np.linalg.norm(m.local[moving], axis=1))
            lo = (clo.reshape(nb, 3) - reach[:, None]).min(axis=0)
            hi = (chi.reshape(nb, 3) + reach[:, None]).max(axis=0)
            pts += [lo[None], hi[None]]
        allp = np.vstack(pts)
        return allp.min(axis=0), allp.max(axis=0)

    def _update_light(self, *_):
        """Head light: the light comes from the camera."""
        cam = self.camera
        el = np.radians(cam.elevation)
        az = np.radians(cam.azimuth)
        # direction from the eye to the centre in world coordinates (up = +y; azimuth 0
        # puts the eye on -x, azimuth 90 on +z), tilted to come from the upper left
        d = np.array([np.cos(az) * np.cos(el), -np.sin(el), -np.sin(az) * np.cos(el)])
        right = np.array([np.sin(az), 0.0, np.cos(az)])
        d = d + 0.35 * right - 0.35 * np.array([0.0, 1.0, 0.0])
        light = tuple(round(float(v), 6) for v in d)
        if light == self._light:
            return  # the transform changed (zoom, pan, a framebuffer) but not the view direction
        self._light = light
        self.ground.shading_filter.light_dir = light
        self.bodies.set_light(light)

    # ------------------------------------------------------------------- export
    def render(self, size=None) -> np.ndarray:
        """An RGBA image of the view (numpy uint8, (h, w, 4)), ``size`` (w, h) pixels.

        The camera keeps its framing; a size of another aspect ratio than the
        on-screen view widens or heightens the field of view instead of cropping.
        """
        self._flush()
        if not size:
            return self.canvas.render()
        return self._render_resized((int(size[0]), int(size[1])))

    def _render_resized(self, size: tuple[int, int]) -> np.ndarray:
        """Render with the canvas briefly at ``size`` (vispy draws wrongly into a framebuffer
        of another size than the canvas), then put it back."""
        c = self.canvas
        old = tuple(c.size)
        if old == size:
            return self.render_frame(size)
        self._quiet = True  # the resizes below must not ask for yet another frame
        try:
            c.native.resize(*size)
            c.events.resize(size=size, physical_size=size)
            try:
                return self.render_frame(size)
            finally:
                c.native.resize(*old)
                c.events.resize(size=old, physical_size=old)
        finally:
            self._quiet = False
            c._update_pending = False


def _nice_step(x: float) -> float:
    if x <= 0:
        return 1.0
    e = 10 ** np.floor(np.log10(x))
    for m in (1, 2, 5, 10):
        if m * e >= x:
            return float(m * e)
    return float(10 * e)
