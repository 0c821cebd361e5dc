"""The 2-D sketch canvas: draw and edit the mechanism in a plane.

Tools (keys in brackets):

- **Select** [S]: click a joint, body or pivot to select it (repeated clicks on
  a point with several joints cycle through them); drag a point to move it
  (rod ends, joints and centres of mass on it follow); drop a free rod end on
  another point to connect them with a joint; Delete removes the selection.
- **Link** [L]: click (or press and drag) from point to point to draw links.
  A chain started in empty space hangs from a new ground pivot; each click in
  empty space adds a link jointed to the previous one; clicking an existing
  point ends the chain there and closes the loop (to ground on a pivot).
  Esc or a right click ends the chain.
- **Ground pivot** [G]: click to place ground pivots to start links from or
  close loops on.

Middle (or right) drag pans, the wheel zooms about the cursor, F fits the view.
New points snap to the grid unless Shift is held.  The canvas only maps the
mouse and paints; every edit is made by :class:`app.session.sketch.SketchModel`.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSignalBlocker, QSize, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QLabel, QSizePolicy, QToolBar, QVBoxLayout, QWidget,
)

from linkwork.engine.mechfile import JOINT_TYPES

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session import edits
from linkwork.app.session.document import Selection
from linkwork.app.session.geometry import body_primitives
from linkwork.app.session.sketch import PLANES, hit_body, hit_point, sketch_points

from .widgets import NumberEdit

BODY_PALETTE = ("#4c78a8", "#59a3a0", "#8c6bb1", "#66994c", "#b3854d", "#6f8cc0")
SELECT = QColor("#f58518")
ERROR = QColor("#d62728")
PICK_PX = 9.0


class SketchCanvas(QWidget):
    """Paints the projected mechanism and turns mouse input into sketch-model calls."""

    statusMessage = Signal(str)

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("SketchCanvas")
        self.session = session
        self.doc = session.document
        self.model = session.sketch
        self._subs = Subscriptions()
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setMinimumSize(200, 160)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self.scale = 150.0  # pixels per metre
        self.origin = QPointF(200.0, 200.0)  # widget position of plane point (0, 0)
        self.show_labels = True
        self.labels_drawn: list[tuple[str, QRectF]] = []
        self._fitted = False
        self._cursor: QPointF | None = None
        self._press: QPointF | None = None
        self._drag_point: int | None = None
        self._drag_preview = None  # (spec, pivots) while dragging a point
        self._pan_from: QPointF | None = None
        self._points = []
        self._cycle: dict[int, int] = {}
        self._subs.connect(self.doc.state_changed, lambda s: self._changed())
        self._subs.connect(self.doc.selection_changed, lambda s: self.update())
        self._subs.connect(self.doc.validation_changed, lambda v: self.update())
        self._subs.connect(self.doc.replaced, lambda: self.fit())
        self._subs.connect(self.model.changed, self._model_changed)
        self._changed()

    def close_panel(self) -> None:
        self._subs.disconnect_all()

    # ---------------------------------------------------------------- transforms
    def plane_to_widget(self, a: float, b: float) -> QPointF:
        return QPointF(self.origin.x() + a * self.scale, self.origin.y() - b * self.scale)

    def widget_to_plane(self, p: QPointF) -> tuple[float, float]:
        return (p.x() - self.origin.x()) / self.scale, (self.origin.y() - p.y()) / self.scale

    def world_to_widget(self, p) -> QPointF:
        a, b = self.model.plane.project(p)
        return self.plane_to_widget(a, b)

    def fit(self) -> None:
        """Show every point with a margin."""
        spec = self.doc.spec
        plane = self.model.plane
        pts = [sp.pos for sp in sketch_points(spec, self.doc.pivots)]
        for prims in body_primitives(spec):
            for pr in prims:
                for q in (pr.p0, pr.p1, pr.center):
                    if q is not None:
                        pts.append(q)
        w, h = max(self.width(), 50), max(self.height(), 50)
        if not pts:
            self.scale = min(w, h) / 3.0
            self.origin = QPointF(w / 2, h / 2)
            self.update()
            return
        P = plane.project_many(np.array(pts))
        lo, hi = P.min(axis=0), P.max(axis=0)
        ext = np.maximum(hi - lo, 1e-3)
        margin = 40.0
        self.scale = float(min((w - 2 * margin) / ext[0], (h - 2 * margin) / ext[1], 2000.0))
        if not np.isfinite(self.scale) or self.scale <= 0:
            self.scale = 100.0
        c = 0.5 * (lo + hi)
        self.origin = QPointF(w / 2 - c[0] * self.scale, h / 2 + c[1] * self.scale)
        self._fitted = True
        self.update()

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        if not self._fitted or ev.oldSize().width() <= 0:
            self.fit()

    # ------------------------------------------------------------------- model
    def _changed(self) -> None:
        self._points = sketch_points(self.doc.spec, self.doc.pivots)
        self._drag_preview = None
        self.update()

    def _model_changed(self) -> None:
        self._points = sketch_points(self.doc.spec, self.doc.pivots)
        self.update()
        self.statusMessage.emit(self.hint())

    def hint(self) -> str:
        t = self.model.tool
        if t == "link":
            if self.model.chain_start is None:
                return ("Link: click a point or empty space to start a chain (empty space = new ground pivot); "
                        "then click to add links, click an existing point to close the loop, Esc to end.")
            return "Link: click to add the next link; click an existing point to close the loop; Esc ends the chain."
        if t == "pivot":
            return "Ground pivot: click to place a ground pivot."
        return ("Select: click to select, drag a point to move it, drop a free rod end on a point to connect; "
                "Del deletes; wheel zooms, middle-drag pans, F fits.")

    # -------------------------------------------------------------------- input
    def _pick_radius(self) -> float:
        return PICK_PX / self.scale

    def _hit(self, pos: QPointF, exclude: int | None = None) -> int | None:
        a, b = self.widget_to_plane(pos)
        return hit_point(self._points, self.model.plane, a, b, self._pick_radius(), exclude=exclude)

    def _snapped(self, pos: QPointF, modifiers) -> tuple[float, float]:
        a, b = self.widget_to_plane(pos)
        if modifiers & Qt.ShiftModifier:
            return a, b
        return self.model.snap(a, b)

    def mousePressEvent(self, ev):  # noqa: N802
        pos = ev.position()
        self.setFocus()
        if ev.button() in (Qt.MiddleButton,) or (ev.button() == Qt.RightButton and self.model.tool != "link"):
            self._pan_from = pos
            return
        if ev.button() == Qt.RightButton:
            self.model.cancel_chain()
            return
        if ev.button() != Qt.LeftButton:
            return
        self._press = pos
        tool = self.model.tool
        hit = self._hit(pos)
        if tool == "select":
            if hit is not None:
                self._select_point(hit)
                self._drag_point = hit
            else:
                a, b = self.widget_to_plane(pos)
                body = hit_body(self.doc.spec, self.model.plane, a, b, self._pick_radius())
                self.doc.select(Selection("body", body) if body else None)
        elif tool == "link":
            a, b = self._snapped(pos, ev.modifiers())
            self.model.link_click(a, b, hit)
        elif tool == "pivot":
            if hit is not None:
                self._select_point(hit)
            else:
                a, b = self._snapped(pos, ev.modifiers())
                self.model.place_pivot(a, b)
        self.update()

    def mouseMoveEvent(self, ev):  # noqa: N802
        pos = ev.position()
        self._cursor = pos
        if self._pan_from is not None:
            d = pos - self._pan_from
            self.origin += d
            self._pan_from = pos
            self.update()
            return
        if self._drag_point is not None and self._press is not None and \
                (pos - self._press).manhattanLength() > 3:
            sp = self._points[self._drag_point]
            target = self._hit(pos, exclude=self._drag_point)
            if target is not None:
                new = self._points[target].pos
            else:
                a, b = self._snapped(pos, ev.modifiers())
                new = self.model.plane.move(sp.pos, a, b)
            self._drag_preview = edits.move_point(self.doc.spec, self.doc.pivots, sp.pos, new)
        self.update()

    def mouseReleaseEvent(self, ev):  # noqa: N802
        pos = ev.position()
        if self._pan_from is not None and ev.button() in (Qt.MiddleButton, Qt.RightButton):
            self._pan_from = None
            return
        if ev.button() != Qt.LeftButton:
            return
        press, self._press = self._press, None
        moved = press is not None and (pos - press).manhattanLength() > 6
        if self._drag_point is not None:
            k, self._drag_point = self._drag_point, None
            self._drag_preview = None
            if moved:
                target = self._hit(pos, exclude=k)
                a, b = self._snapped(pos, ev.modifiers())
                self.model.move_point(k, a, b, target)
        elif self.model.tool == "link" and moved and self.model.chain_start is not None:
            # press-drag-release draws a link too
            a, b = self._snapped(pos, ev.modifiers())
            self.model.link_click(a, b, self._hit(pos))
        self.update()

    def wheelEvent(self, ev):  # noqa: N802
        f = 1.15 ** (ev.angleDelta().y() / 120.0)
        pos = ev.position()
        a, b = self.widget_to_plane(pos)
        self.scale = float(min(max(self.scale * f, 1e-3), 1e6))
        p = self.plane_to_widget(a, b)
        self.origin += pos - p
        self.update()

    def keyPressEvent(self, ev):  # noqa: N802
        k = ev.key()
        if k == Qt.Key_Escape:
            self.model.cancel_chain()
        elif k in (Qt.Key_Delete, Qt.Key_Backspace):
            self.model.delete_selection()
        elif k == Qt.Key_F:
            self.fit()
        elif k == Qt.Key_S:
            self.model.set_tool("select")
        elif k == Qt.Key_L:
            self.model.set_tool("link")
        elif k == Qt.Key_G:
            self.model.set_tool("pivot")
        else:
            super().keyPressEvent(ev)

    def leaveEvent(self, ev):  # noqa: N802
        self._cursor = None
        self.update()
        super().leaveEvent(ev)

    def _select_point(self, k: int) -> None:
        sp = self._points[k]
        options = [Selection("joint", j) for j in sp.joints]
        if sp.pivot is not None:
            options.append(Selection("pivot", str(sp.pivot)))
        if not options:
            options = [Selection("body", b) for b in sp.bodies]
        if not options:
            return
        cur = self.doc.selection
        if cur in options:
            i = (options.index(cur) + 1) % len(options)
        else:
            i = 0
        self.doc.select(options[i])

    # -------------------------------------------------------------------- paint
    def paintEvent(self, ev):  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        p.fillRect(self.rect(), QColor("#ffffff"))
        self._paint_grid(p)
        spec, pivots = (self._drag_preview if self._drag_preview is not None
                        else (self.doc.spec, self.doc.pivots))
        self.paint_mechanism(p, spec, pivots)
        self._paint_chain(p)
        self._paint_hover(p)
        p.end()

    def _paint_grid(self, p: QPainter) -> None:
        w, h = self.width(), self.height()
        plane = self.model.plane
        a0, b1 = self.widget_to_plane(QPointF(0, 0))
        a1, b0 = self.widget_to_plane(QPointF(w, h))
        step = _nice(60.0 / self.scale)
        minor = QPen(QColor("#eef0f4"), 1)
        major = QPen(QColor("#dde1e8"), 1)
        for k in range(int(math.floor(a0 / step)), int(math.ceil(a1 / step)) + 1):
            x = self.plane_to_widget(k * step, 0).x()
            p.setPen(major if k % 5 == 0 else minor)
            p.drawLine(QPointF(x, 0), QPointF(x, h))
        for k in range(int(math.floor(b0 / step)), int(math.ceil(b1 / step)) + 1):
            y = self.plane_to_widget(0, k * step).y()
            p.setPen(major if k % 5 == 0 else minor)
            p.drawLine(QPointF(0, y), QPointF(w, y))
        o = self.plane_to_widget(0, 0)
        p.setPen(QPen(QColor("#b7bcc6"), 1.2))
        p.drawLine(QPointF(0, o.y()), QPointF(w, o.y()))
        p.drawLine(QPointF(o.x(), 0), QPointF(o.x(), h))
        names = {(1.0, 0.0, 0.0): "x", (0.0, 1.0, 0.0): "y", (0.0, 0.0, 1.0): "z",
                 (0.0, 0.0, -1.0): "−z", (-1.0, 0.0, 0.0): "−x"}
        p.setPen(QColor("#7a808c"))
        f = p.font()
        f.setPointSizeF(8)
        p.setFont(f)
        p.drawText(QPointF(w - 16, o.y() - 4), names.get(plane.u, "u"))
        p.drawText(QPointF(o.x() + 4, 12), names.get(plane.v, "v"))
        corner = f"{plane.label} · grid {step:g} m"
        if self._cursor is not None:
            a, b = self.widget_to_plane(self._cursor)
            corner += f" · cursor ({a:.4g}, {b:.4g}) m"
        p.drawText(QPointF(6, h - 6), corner)

    def paint_mechanism(self, p: QPainter, spec, pivots, selection=None, error_target=None,
                        labels: bool | None = None) -> None:
        """Draw ``spec`` projected on the current plane (also used for previews)."""
        plane = self.model.plane
        sel = self.doc.selection if selection is None else selection
        v = self.doc.validation
        err = error_target if error_target is not None else (v.target if not v.ok else None)
        labels = self.show_labels and len(spec.bodies) <= 40 if labels is None else labels
        #: the labels of the last paint, [(text, rectangle)] (what a test checks for overlaps)
        self.labels_drawn = paint_mechanism(p, spec, pivots, plane, self.plane_to_widget, sel, err, labels)

    def _paint_chain(self, p: QPainter) -> None:
        cs = self.model.chain_start
        if cs is None or self.model.tool != "link":
            return
        a, b = self.model.plane.project(cs[0])
        start = self.plane_to_widget(a, b)
        p.setPen(QPen(QColor("#f58518"), 2))
        p.setBrush(QColor("#ffffff"))
        p.drawEllipse(start, 6, 6)
        if self._cursor is not None:
            p.setPen(QPen(QColor("#f58518"), 2, Qt.DashLine))
            p.drawLine(start, self._cursor)

    def _paint_hover(self, p: QPainter) -> None:
        if self._cursor is None or self._pan_from is not None:
            return
        k = self._hit(self._cursor, exclude=self._drag_point)
        if k is not None:
            q = self.world_to_widget(self._points[k].pos)
            p.setPen(QPen(QColor("#f58518"), 1.5))
            p.setBrush(Qt.NoBrush)
            p.drawEllipse(q, 10, 10)


def _nice(x: float) -> float:
    if x <= 0 or not math.isfinite(x):
        return 1.0
    e = 10 ** math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * e >= x:
            return m * e
    return 10 * e


def paint_mechanism(p: QPainter, spec, pivots, plane, to_widget, selection=None, error_target=None,
                    labels: bool = True) -> list[tuple[str, QRectF]]:
    """Paint ``spec`` projected on ``plane`` with ``to_widget(a, b) -> QPointF``.

    Returns the labels drawn, as (text, rectangle) pairs: joints that meet at one point
    share one label ("J2, J6"), and every label is placed where it covers no other
    label, joint, ground symbol or (where it can) link -- see :func:`place_labels`.
    """
    prims = body_primitives(spec)
    sel = selection

    def W(q):
        a, b = plane.project(q)
        return to_widget(a, b)

    font = QFont(p.font())
    font.setPointSizeF(8)
    p.setFont(font)
    segments: list[tuple[QPointF, QPointF]] = []
    body_anchor: list[tuple[str, QPointF, QPointF | None]] = []  # (name, anchor, rod direction)
    for k, (body, parts) in enumerate(zip(spec.bodies, prims)):
        color = QColor(BODY_PALETTE[k % len(BODY_PALETTE)])
        if sel is not None and sel.kind == "body" and sel.name == body.name:
            color = SELECT
        if error_target is not None and error_target.kind == "body" and error_target.name == body.name:
            color = ERROR
        pen = QPen(color, 7, Qt.SolidLine, Qt.RoundCap, Qt.RoundJoin)
        for pr in parts:
            if pr.kind == "rod":
                p.setPen(pen)
                p.drawLine(W(pr.p0), W(pr.p1))
                segments.append((W(pr.p0), W(pr.p1)))
            elif pr.kind == "cylinder":
                h = 0.5 * pr.length * pr.axis
                p.setPen(QPen(color, 9, Qt.SolidLine, Qt.FlatCap))
                p.drawLine(W(pr.center - h), W(pr.center + h))
                segments.append((W(pr.center - h), W(pr.center + h)))
            elif pr.kind == "box":
                hs = 0.5 * pr.size
                corners = []
                for sx in (-1, 1):
                    for sy in (-1, 1):
                        for sz in (-1, 1):
                            corners.append(pr.center + pr.rot @ (hs * np.array([sx, sy, sz])))
                P = np.array([[W(c).x(), W(c).y()] for c in corners])
                hull = _hull(P)
                p.setPen(QPen(color.darker(140), 1.5))
                p.setBrush(QBrush(color.lighter(130)))
                p.drawPolygon(QPolygonF([QPointF(x, y) for x, y in hull]))
            else:
                c = W(pr.center)
                r = max(5.0, abs(W(pr.center + np.array([pr.radius or 0.05, 0, 0])).x() - c.x())) \
                    if pr.kind == "sphere" else 6.0
                p.setPen(QPen(color.darker(140), 1.5))
                p.setBrush(QBrush(color.lighter(120)))
                p.drawEllipse(c, r, r)
        if parts:
            pr = parts[0]
            if pr.kind == "rod":
                body_anchor.append((body.name, W(0.5 * (pr.p0 + pr.p1)), W(pr.p1) - W(pr.p0)))
            else:
                body_anchor.append((body.name, W(pr.center), None))
    # joints
    obstacles: list[QRectF] = []
    pts = sketch_points(spec, pivots)
    for sp in pts:
        c = W(sp.pos)
        if sp.grounded:
            _ground_symbol(p, c)
            obstacles.append(ground_symbol_rect(c))
    joint_at: dict[tuple[int, int], tuple[QPointF, list[str]]] = {}
    for j in spec.joints:
        c = W(j.anchor)
        selected = sel is not None and sel.kind == "joint" and sel.name == j.name
        bad = error_target is not None and error_target.kind == "joint" and error_target.name == j.name
        edge = ERROR if bad else (SELECT if selected else QColor("#222"))
        _joint_glyph(p, c, j.type, edge, selected or bad)
        obstacles.append(QRectF(c.x() - 7.5, c.y() - 7.5, 15, 15))
        # joints that project onto one spot of this plane share a label
        key = (round(c.x()), round(c.y()))
        joint_at.setdefault(key, (c, []))[1].append(j.name)
    for k, q in enumerate(pivots):
        c = W(q)
        selected = sel is not None and sel.kind == "pivot" and sel.name == str(k)
        p.setPen(QPen(SELECT if selected else QColor("#444"), 1.5, Qt.DashLine))
        p.setBrush(QColor("#ffffff"))
        p.drawEllipse(c, 5, 5)
    # free rod ends: small dots
    for sp in pts:
        if not sp.joints and sp.pivot is None and sp.ends:
            p.setPen(QPen(QColor("#333"), 1))
            p.setBrush(QColor("#ffffff"))
            p.drawEllipse(W(sp.pos), 3, 3)
    if not labels:
        return []
    fm = QFontMetricsF(font)
    wanted = [(", ".join(names), c, JOINT_LABEL_OFFSETS, QColor("#3a3f47")) for c, names in joint_at.values()]
    for name, c, d in body_anchor:
        wanted.append((name, c, _body_offsets(d), QColor("#2b2f36")))
    placed = place_labels([(t, c, offs) for t, c, offs, _ in wanted], fm, obstacles, segments)
    for (text, rect), (_, _, _, color) in zip(placed, wanted):
        p.setPen(color)
        p.drawText(rect, Qt.AlignLeft | Qt.AlignVCenter, text)
    return placed


#: where a joint's label may go, in order of preference: (dx, dy) of the label's corner
#: nearest the joint, as multiples of (1, 1) away from it -- right below first, as before
JOINT_LABEL_OFFSETS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, -1), (0, 1))


def _body_offsets(d: QPointF | None):
    """A link's label goes beside the link: the two sides of its midpoint first."""
    if d is None:
        return ((1, -1), (1, 1), (-1, -1), (-1, 1))
    # the side of the rod whose normal points up (screen y down) first
    nx, ny = -d.y(), d.x()
    if ny > 0:
        nx, ny = -nx, -ny
    sx = 1 if nx >= 0 else -1
    sy = 1 if ny >= 0 else -1
    return ((sx, sy), (-sx, -sy), (sx, -sy), (-sx, sy))


def ground_symbol_rect(c: QPointF) -> QRectF:
    """Where :func:`_ground_symbol` paints below point ``c`` (triangle, base and hatch)."""
    return QRectF(c.x() - 14, c.y() - 1, 28, 21)


def _segment_hits_rect(a: QPointF, b: QPointF, r: QRectF, pad: float = 3.5) -> bool:
    """Whether segment a-b (drawn ``2 pad`` wide) crosses rectangle ``r``."""
    r = r.adjusted(-pad, -pad, pad, pad)
    x0, y0, x1, y1 = a.x(), a.y(), b.x(), b.y()
    # Liang-Barsky clipping of the segment to the rectangle
    t0, t1 = 0.0, 1.0
    dx, dy = x1 - x0, y1 - y0
    for pk, qk in ((-dx, x0 - r.left()), (dx, r.right() - x0), (-dy, y0 - r.top()), (dy, r.bottom() - y0)):
        if pk == 0:
            if qk < 0:
                return False
            continue
        t = qk / pk
        if pk < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def place_labels(labels, fm: QFontMetricsF, obstacles: list[QRectF], segments, gap: float = 8.0):
    """Greedy label placement: each label (text, anchor, candidate offsets) takes the first
    candidate position that overlaps no label placed before it and no obstacle (joints,
    ground symbols), preferring positions off the links; where every candidate collides,
    the least-bad one.  Returns [(text, rect)] in the order given."""
    out: list[tuple[str, QRectF]] = []
    taken: list[QRectF] = []
    for text, c, offsets in labels:
        w, h = fm.horizontalAdvance(text) + 2.0, fm.height()
        best, best_cost = None, None
        for rank, (sx, sy) in enumerate(offsets):
            x = c.x() + (gap if sx > 0 else -gap - w if sx < 0 else -w / 2)
            y = c.y() + (gap - 4 if sy > 0 else -gap + 4 - h if sy < 0 else -h / 2)
            r = QRectF(x, y, w, h)
            cost = 0.0
            for o in taken:
                if r.intersects(o):
                    cost += 1000.0
            for o in obstacles:
                if r.intersects(o):
                    cost += 200.0
            for a, b in segments:
                if _segment_hits_rect(a, b, r, pad=3.0):
                    cost += 10.0
            cost += rank  # the preferred positions first
            if best_cost is None or cost < best_cost:
                best, best_cost = r, cost
        taken.append(best)
        out.append((text, best))
    return out


def _ground_symbol(p: QPainter, c: QPointF) -> None:
    p.setPen(QPen(QColor("#444"), 1.5))
    p.setBrush(QColor("#d8dbe0"))
    tri = QPolygonF([c, c + QPointF(-9, 13), c + QPointF(9, 13)])
    p.drawPolygon(tri)
    p.drawLine(c + QPointF(-13, 13), c + QPointF(13, 13))
    for k in range(-12, 13, 5):
        p.drawLine(c + QPointF(k, 13), c + QPointF(k - 4, 18))


def _joint_glyph(p: QPainter, c: QPointF, jtype: str, edge: QColor, emphasis: bool) -> None:
    r = 6.5 if emphasis else 5.5
    p.setPen(QPen(edge, 2.2 if emphasis else 1.6))
    if jtype in ("prismatic", "fixed"):
        p.setBrush(QColor("#222") if jtype == "fixed" else QColor("#ffffff"))
        p.drawRect(QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r))
        return
    p.setBrush(QColor("#222") if jtype == "spherical" else QColor("#ffffff"))
    p.drawEllipse(c, r, r)
    if jtype == "revolute":
        p.setBrush(QColor("#222"))
        p.drawEllipse(c, 1.6, 1.6)
    elif jtype == "cylindrical":
        p.setBrush(Qt.NoBrush)
        p.drawEllipse(c, r - 2.5, r - 2.5)
    elif jtype == "universal":
        p.drawLine(c + QPointF(-r, 0), c + QPointF(r, 0))
        p.drawLine(c + QPointF(0, -r), c + QPointF(0, r))


def _hull(P: np.ndarray) -> list[tuple[float, float]]:
    pts = sorted(set((round(float(x), 3), round(float(y), 3)) for x, y in P))
    if len(pts) <= 2:
        return pts

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for q in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    for q in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return lower[:-1] + upper[:-1]


class SketchPanel(QWidget):
    """Toolbar (tools, plane, defaults for new links) above the canvas."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("SketchPanel")
        self.session = session
        self.model = session.sketch
        self._subs = Subscriptions()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        bar = QToolBar()
        bar.setObjectName("sketchToolbar")
        bar.setIconSize(QSize(16, 16))
        bar.setToolButtonStyle(Qt.ToolButtonTextOnly)
        self.toolbar = bar
        self.tool_actions: dict[str, QAction] = {}
        group = QActionGroup(self)
        for key, text, tip in (("select", "Select", "Select, move points, connect (S)"),
                               ("link", "Link", "Draw links from point to point (L)"),
                               ("pivot", "Ground pivot", "Place ground pivots (G)")):
            act = QAction(text, self)
            act.setCheckable(True)
            act.setToolTip(tip)
            act.setObjectName(f"tool_{key}")
            act.triggered.connect(lambda _=False, k=key: self.model.set_tool(k))
            group.addAction(act)
            bar.addAction(act)
            self.tool_actions[key] = act
        bar.addSeparator()
        self.plane = QComboBox()
        self.plane.setObjectName("planeCombo")
        self.plane.setToolTip("Plane the sketch shows and draws in")
        for key, pl in PLANES.items():
            self.plane.addItem(pl.label, key)
        self.plane.activated.connect(lambda i: self.model.set_plane(self.plane.itemData(i)))
        bar.addWidget(self.plane)
        bar.addSeparator()
        self.labels = QCheckBox("Labels")
        self.labels.setChecked(True)
        self.labels.setToolTip("Names of links and joints in the sketch")
        bar.addWidget(self.labels)
        fit = QAction("Fit", self)
        fit.setToolTip("Fit the view to the mechanism (F)")
        bar.addAction(fit)
        lay.addWidget(bar)
        # what new links get, and the grid: a second row (in one row the toolbar overflowed
        # into its "››" menu at the default window width of 1280 pixels)
        bar = QToolBar()
        bar.setObjectName("newLinkToolbar")
        bar.setIconSize(QSize(16, 16))
        self.defaults_toolbar = bar
        new_links = QLabel(" New links: ")
        new_links.setToolTip("What the Link tool gives the links it draws")
        bar.addWidget(new_links)
        self.jtype = QComboBox()
        self.jtype.setObjectName("newJointType")
        self.jtype.setToolTip("Type of the joints new links get")
        for t in JOINT_TYPES:
            self.jtype.addItem(t, t)
        self.jtype.activated.connect(lambda i: self.model.set_default(joint_type=self.jtype.itemData(i)))
        bar.addWidget(self.jtype)
        self.mass = NumberEdit(self.model.defaults.mass, minimum=0.0)
        self.mass.setObjectName("newMass")
        self.mass.setMinimumWidth(36)
        self.mass.setMaximumWidth(48)
        self.mass.setToolTip("Mass of new links [kg]")
        self.mass.valueEdited.connect(lambda v: self.model.set_default(mass=float(v)))
        bar.addWidget(self.mass)
        bar.addWidget(QLabel(" kg "))
        self.inertia = QComboBox()
        self.inertia.setObjectName("newInertia")
        self.inertia.addItem("slender rod", "rod")
        self.inertia.addItem("diag(1,1,1)", "unit")
        self.inertia.setToolTip("Inertia of new links: a uniform slender rod, or unit moments as in the "
                                "papers' test cases")
        self.inertia.activated.connect(lambda i: self.model.set_default(inertia_mode=self.inertia.itemData(i)))
        bar.addWidget(self.inertia)
        bar.addSeparator()
        self.snap = QCheckBox("Snap")
        self.snap.setToolTip("Snap new and moved points to the grid (hold Shift to place freely)")
        self.snap.toggled.connect(lambda on: self.model.set_default(snap=bool(on)))
        bar.addWidget(self.snap)
        self.grid = NumberEdit(self.model.defaults.grid, minimum=0.0)
        self.grid.setMinimumWidth(36)
        self.grid.setMaximumWidth(48)
        self.grid.setToolTip("Snap step [m]")
        self.grid.valueEdited.connect(lambda v: self.model.set_default(grid=float(v)))
        bar.addWidget(self.grid)
        bar.addWidget(QLabel(" m"))
        lay.addWidget(bar)
        self.canvas = SketchCanvas(session)
        self.labels.toggled.connect(self._labels)
        fit.triggered.connect(self.canvas.fit)
        lay.addWidget(self.canvas, 1)
        # the hint wraps rather than being cut; the cursor's coordinates are painted in the
        # canvas' corner, so the hint does not change (and re-wrap) as the mouse moves
        self.status = QLabel()
        self.status.setObjectName("sketchHint")
        self.status.setWordWrap(True)
        self.status.setStyleSheet("color: #555; font-size: 8pt; padding: 2px 6px;")
        self.status.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Minimum)
        self.canvas.statusMessage.connect(self.status.setText)
        lay.addWidget(self.status)
        self._subs.connect(self.model.changed, self.sync)
        self.sync()

    def _labels(self, on: bool) -> None:
        self.canvas.show_labels = on
        self.canvas.update()

    def close_panel(self) -> None:
        self._subs.disconnect_all()
        self.canvas.close_panel()

    def sync(self) -> None:
        m = self.model
        self.tool_actions[m.tool].setChecked(True)
        with QSignalBlocker(self.plane):
            self.plane.setCurrentIndex(self.plane.findData(m.plane.key))
        with QSignalBlocker(self.jtype):
            self.jtype.setCurrentIndex(self.jtype.findData(m.defaults.joint_type))
        with QSignalBlocker(self.inertia):
            self.inertia.setCurrentIndex(self.inertia.findData(m.defaults.inertia_mode))
        with QSignalBlocker(self.snap):
            self.snap.setChecked(m.defaults.snap)
        self.mass.setValue(m.defaults.mass)
        self.grid.setValue(m.defaults.grid)
        self.status.setText(self.canvas.hint())
