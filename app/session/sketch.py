"""The sketch's geometry and drawing logic (no Qt).

The sketch shows the mechanism projected on a plane and lets the user draw
in it.  A *point* is everything at one world location: joint anchors, rod
ends, centres of mass of non-rod bodies and ground pivots not used yet.
:class:`SketchModel` turns clicks (in plane coordinates) into document edits;
the Qt canvas only maps mouse positions and paints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from linkwork.engine.mechfile import GROUND, JOINT_TYPES, MechanismSpec

from .edits import (INERTIA_MODES, add_joint, add_link, delete_body, delete_driver, delete_force, delete_gear,
                    delete_joint, move_point, same_point, vec)
from .document import MechanismDocument, Selection
from .events import Event
from .geometry import body_primitives


@dataclass(frozen=True)
class Plane:
    key: str
    label: str
    u: tuple[float, float, float]
    v: tuple[float, float, float]
    n: tuple[float, float, float]

    def project(self, p) -> tuple[float, float]:
        p = np.asarray(p, float)
        return float(p @ np.asarray(self.u)), float(p @ np.asarray(self.v))

    def project_many(self, P: np.ndarray) -> np.ndarray:
        P = np.asarray(P, float).reshape(-1, 3)
        return np.stack([P @ np.asarray(self.u), P @ np.asarray(self.v)], axis=1)

    def lift(self, a: float, b: float, depth: float = 0.0) -> tuple[float, float, float]:
        """World point with plane coordinates (a, b) at ``depth`` along the normal."""
        p = a * np.asarray(self.u) + b * np.asarray(self.v) + depth * np.asarray(self.n)
        return vec(p + 0.0)

    def depth(self, p) -> float:
        return float(np.asarray(p, float) @ np.asarray(self.n))

    def move(self, p, a: float, b: float) -> tuple[float, float, float]:
        """``p`` moved within the plane to coordinates (a, b), keeping its depth."""
        return self.lift(a, b, self.depth(p))


PLANES = {
    "xy": Plane("xy", "XY (front)", (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "xz": Plane("xz", "XZ (top)", (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 1.0, 0.0)),
    "zy": Plane("zy", "ZY (side)", (0.0, 0.0, -1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
}


@dataclass
class SketchPoint:
    pos: np.ndarray  # (3,) world
    joints: list[str] = field(default_factory=list)
    ends: list[tuple[str, str]] = field(default_factory=list)  # (body, "from" | "to")
    coms: list[str] = field(default_factory=list)
    pivot: int | None = None
    grounded: bool = False

    @property
    def bodies(self) -> list[str]:
        out: list[str] = []
        for b, _ in self.ends:
            if b not in out:
                out.append(b)
        for b in self.coms:
            if b not in out:
                out.append(b)
        return out


def sketch_points(spec: MechanismSpec, pivots=()) -> list[SketchPoint]:
    """Every distinct point of the sketch (joint anchors, rod ends, COMs, pivots)."""
    pts: list[SketchPoint] = []

    def at(p) -> SketchPoint:
        for sp in pts:
            if same_point(sp.pos, p):
                return sp
        sp = SketchPoint(np.asarray(p, float))
        pts.append(sp)
        return sp

    for j in spec.joints:
        sp = at(j.anchor)
        sp.joints.append(j.name)
        if GROUND in (j.parent, j.child):
            sp.grounded = True
    for b in spec.bodies:
        s = b.shape
        if s is not None and s.kind == "rod":
            at(s.p_from).ends.append((b.name, "from"))
            at(s.p_to).ends.append((b.name, "to"))
        else:
            at(b.position).coms.append(b.name)
    for k, p in enumerate(pivots):
        sp = at(p)
        sp.pivot = k
        sp.grounded = True
    return pts


def attach_target(spec: MechanismSpec, point: SketchPoint, exclude=()) -> str | None:
    """What a new link starting (or ending) at ``point`` is jointed to.

    Ground if the point is a ground pivot; otherwise the body whose rod ends
    there (the tip of the latest link first), else any body on the point.
    """
    if point.grounded:
        return GROUND
    order = {b.name: k for k, b in enumerate(spec.bodies)}
    cands = [b for b, end in point.ends if end == "to" and b not in exclude]
    cands += [b for b in point.bodies if b not in exclude]
    for j in point.joints:
        jj = spec.joint(j)
        cands += [n for n in (jj.child, jj.parent) if n != GROUND and n not in exclude]
    if not cands:
        return None
    to_ends = [b for b, end in point.ends if end == "to" and b not in exclude]
    if to_ends:
        return max(to_ends, key=lambda n: order.get(n, -1))
    return max(cands, key=lambda n: order.get(n, -1))


def _seg_dist(p, a, b) -> float:
    ab = b - a
    L2 = float(ab @ ab)
    t = 0.0 if L2 == 0.0 else min(1.0, max(0.0, float((p - a) @ ab) / L2))
    return float(np.linalg.norm(p - (a + t * ab)))


def hit_point(points: list[SketchPoint], plane: Plane, a: float, b: float, radius: float,
              exclude: int | None = None) -> int | None:
    """Index of the point nearest to (a, b) within ``radius`` (plane units)."""
    best, best_d = None, radius
    q = np.array([a, b])
    for k, sp in enumerate(points):
        if k == exclude:
            continue
        d = float(np.linalg.norm(np.array(plane.project(sp.pos)) - q))
        if d <= best_d:
            best, best_d = k, d
    return best


def hit_body(spec: MechanismSpec, plane: Plane, a: float, b: float, radius: float) -> str | None:
    """Name of the body drawn nearest to (a, b) within ``radius`` (plane units)."""
    q = np.array([a, b])
    best, best_d = None, radius
    for body, prims in zip(spec.bodies, body_primitives(spec)):
        for pr in prims:
            if pr.kind == "rod":
                d = _seg_dist(q, np.array(plane.project(pr.p0)), np.array(plane.project(pr.p1)))
                d = max(0.0, d - pr.radius)
            elif pr.kind == "cylinder":
                h = 0.5 * pr.length * pr.axis
                d = _seg_dist(q, np.array(plane.project(pr.center - h)), np.array(plane.project(pr.center + h)))
                d = max(0.0, d - pr.radius)
            elif pr.kind == "box":
                half = 0.5 * float(np.max(pr.size))
                d = max(0.0, float(np.linalg.norm(np.array(plane.project(pr.center)) - q)) - half)
            else:
                r = pr.radius if pr.kind == "sphere" else 0.05
                d = max(0.0, float(np.linalg.norm(np.array(plane.project(pr.center)) - q)) - r)
            if d <= best_d:
                best, best_d = body.name, d
    return best


@dataclass
class SketchDefaults:
    """What new links and joints drawn in the sketch get."""

    joint_type: str = "revolute"
    mass: float = 1.0
    inertia_mode: str = "rod"  # "rod": slender rod; "unit": diag(1, 1, 1) as in the papers
    radius: float = 0.03
    grid: float = 0.05  # snap step in metres (0: no snapping)
    snap: bool = True


class SketchModel:
    """Drawing state (tool, plane, chain in progress) turned into document 

    Tools: ``"select"`` (select, move points, drop a free rod end on another
    point to connect), ``"link"`` (click/drag to draw links; a click on an
    existing point ends the chain and closes the loop), ``"pivot"`` (place
    ground pivots).  Events: ``changed`` (tool, plane, defaults or the chain
    in progress changed).
    """

    TOOLS = ("select", "link", "pivot")

    def __init__(self, doc: MechanismDocument):
        self.doc = doc
        self.changed = Event("sketch_changed")
        self._tool = "select"
        self._plane = PLANES["xy"]
        self.defaults = SketchDefaults()
        #: chain in progress: (world point, what it attaches to: body/"ground"/None)
        self.chain_start: tuple[tuple[float, float, float], str | None] | None = None
        self.chain_body: str | None = None  # the body drawn last in this chain
        doc.replaced.connect(self.cancel_chain)

    # ------------------------------------------------------------------ settings
    @property
    def tool(self) -> str:
        return self._tool

    def set_tool(self, tool: str) -> None:
        if tool not in self.TOOLS:
            raise ValueError(f"unknown tool {tool!r}")
        if tool != self._tool:
            self._tool = tool
            self.chain_start = None
            self.chain_body = None
            self.changed.emit()

    @property
    def plane(self) -> Plane:
        return self._plane

    def set_plane(self, key: str) -> None:
        if PLANES[key] is not self._plane:
            self._plane = PLANES[key]
            self.cancel_chain()
            self.changed.emit()

    def set_default(self, **kw) -> None:
        changed = False
        for k, v in kw.items():
            if k == "joint_type" and v not in JOINT_TYPES:
                raise ValueError(f"unknown joint type {v!r}")
            if k == "inertia_mode" and v not in INERTIA_MODES:
                raise ValueError(f"unknown inertia mode {v!r}")
            if getattr(self.defaults, k) != v:
                setattr(self.defaults, k, v)
                changed = True
        if changed:
            self.changed.emit()

    def snap(self, a: float, b: float) -> tuple[float, float]:
        g = self.defaults.grid
        if self.defaults.snap and g > 0:
            return round(a / g) * g + 0.0, round(b / g) * g + 0.0
        return a, b

    def cancel_chain(self, *_):
        if self.chain_start is not None or self.chain_body is not None:
            self.chain_start = None
            self.chain_body = None
            self.changed.emit()

    # ------------------------------------------------------------------ queries
    def points(self) -> list[SketchPoint]:
        return sketch_points(self.doc.spec, self.doc.pivots)

    # ------------------------------------------------------------------ editing
    def place_pivot(self, a: float, b: float) -> bool:
        """Ground-pivot tool: a ground pivot at plane point (a, b)."""
        p = self._plane.lift(a, b)
        if any(same_point(q.pos, p) for q in self.points()):
            return False
        return self.doc.edit("Add ground pivot", pivots=self.doc.pivots + (p,),
                             select=Selection("pivot", str(len(self.doc.pivots))))

    def link_click(self, a: float, b: float, point: int | None) -> str:
        """Link tool: a click at plane point (a, b), on sketch point ``point`` if not None.

        Returns what happened: "start", "link", "close" or "none".
        """
        spec = self.doc.spec
        pts = self.points()
        sp = pts[point] if point is not None else None
        if self.chain_start is None:
            if sp is not None:
                self.chain_start = (vec(sp.pos), attach_target(spec, sp))
            else:
                # a chain started in empty space hangs from a new ground pivot there
                self.chain_start = (self._plane.lift(a, b), GROUND)
            self.chain_body = None
            self.changed.emit()
            return "start"
        p0, attach0 = self.chain_start
        p1 = vec(sp.pos) if sp is not None else self._plane.lift(a, b, self._plane.depth(p0))
        if same_point(p0, p1):
            return "none"
        d = self.defaults
        pivots = tuple(q for q in self.doc.pivots if not same_point(q, p0))
        new, body, _ = add_link(spec, p0, p1, attach0, d.joint_type, self._plane.n,
                                      d.mass, d.inertia_mode, d.radius)
        closing = None
        if sp is not None:
            closing = attach_target(spec, sp, exclude={body})
        if closing is not None:
            pivots = tuple(q for q in pivots if not same_point(q, p1))
            new, _ = add_joint(new, body, closing, p1, d.joint_type, self._plane.n,
                                     np.asarray(p1) - np.asarray(p0))
            self.doc.edit(f"Draw link {body} and close the loop", new, pivots,
                          select=Selection("body", body))
            self.chain_start = None
            self.chain_body = None
            self.changed.emit()
            return "close"
        self.doc.edit(f"Draw link {body}", new, pivots, select=Selection("body", body))
        self.chain_start = (p1, body)
        self.chain_body = body
        self.changed.emit()
        return "link"

    def move_point(self, point: int, a: float, b: float, target: int | None = None) -> bool:
        """Select tool: drag ``point`` to plane point (a, b), or onto point ``target``.

        Dropping a point onto another joins them: if one of them carries only a
        free rod end, a joint of the default type connects that body to what the
        other point holds (ground for a pivot).
        """
        pts = self.points()
        sp = pts[point]
        spec = self.doc.spec
        if target is not None:
            tp = pts[target]
            new_pos = vec(tp.pos)
        else:
            tp = None
            new_pos = self._plane.move(sp.pos, a, b)
        if same_point(new_pos, sp.pos):
            return False
        new, pivots = move_point(spec, self.doc.pivots, sp.pos, new_pos)
        text = "Move point"
        select = None
        if tp is not None:
            a_target = attach_target(spec, tp)
            movers = [b for b in sp.bodies if b != a_target]
            if not sp.joints and movers and a_target is not None:
                mover = movers[-1]
                new, jname = add_joint(new, a_target, mover, new_pos, self.defaults.joint_type,
                                             self._plane.n)
                text = f"Connect {mover} to {a_target}"
                select = Selection("joint", jname)
            elif sp.pivot is not None and not tp.grounded and tp.bodies:
                # a pivot dropped on a body's point grounds that body there
                body = attach_target(spec, tp)
                new, jname = add_joint(new, GROUND, body, new_pos, self.defaults.joint_type,
                                             self._plane.n)
                pivots = tuple(q for k, q in enumerate(pivots) if k != sp.pivot)
                text = f"Pin {body} to ground"
                select = Selection("joint", jname)
            # two pivots on one place are one pivot
            uniq = []
            for q in pivots:
                if not any(same_point(q, u) for u in uniq):
                    uniq.append(q)
            pivots = tuple(uniq)
        return self.doc.edit(text, new, pivots, select=select)

    def delete_selection(self) -> bool:
        """Delete the selected body, joint, force, gear, driver or pivot."""
        s = self.doc.selection
        if s is None:
            return False
        spec = self.doc.spec
        if s.kind == "body":
            return self.doc.edit(f"Delete body {s.name}", delete_body(spec, s.name))
        if s.kind == "joint":
            return self.doc.edit(f"Delete joint {s.name}", delete_joint(spec, s.name))
        if s.kind == "force":
            return self.doc.edit(f"Delete force {int(s.name) + 1}", delete_force(spec, int(s.name)))
        if s.kind == "gear":
            return self.doc.edit(f"Delete gear {s.name}", delete_gear(spec, s.name))
        if s.kind == "driver":
            return self.doc.edit(f"Delete driver {s.name}", delete_driver(spec, s.name))
        if s.kind == "pivot":
            k = int(s.name)
            return self.doc.edit("Delete ground pivot",
                                 pivots=tuple(q for i, q in enumerate(self.doc.pivots) if i != k))
        return False
