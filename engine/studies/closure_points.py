"""The closure error of a run, measured alike in every engine: the largest distance
between two points that a loop-closing joint holds together.

Each cut joint (a joint outside the spanning tree, :mod:`engine.model`) gets pairs of
points, one fixed in each of its two bodies, that coincide at t = 0 and for as long as the
joint holds:

* spherical: the anchor;
* revolute: two points on the axis, ``span`` either side of the anchor (they fix the axis
  as well as the point);
* fixed: the anchor and two points ``span`` from it along two perpendicular directions.

``span`` is half the median distance from a body's centre of mass to its joints' anchors:
the mechanism's own length scale, so that an axis that tilts by an angle ``e`` shows as
about ``e`` times a link length.  The same world points at t = 0 are handed to every
engine (Linkwork's result rows, MuJoCo's sites, Exudyn's sensors), so their closure
errors compare in metres.  Prismatic, cylindrical and universal cut joints have no pairs
(:func:`unsupported_cuts`): no bundled example has one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import FIXED, REVOLUTE, SPHERICAL, TYPE_NAME, Model


@dataclass(frozen=True)
class ClosurePoints:
    """Point pairs of the cut joints (``k`` pairs), world coordinates at t = 0."""

    joint: np.ndarray  # (k,) internal index of the cut joint the pair belongs to
    body: np.ndarray  # (k, 2) internal bodies carrying the two points: pred, succ (-1 = ground)
    point: np.ndarray  # (k, 2, 3) the two points, world, t = 0 (equal up to the file's rounding)
    span: float  # distance of a revolute's points from its anchor [m]

    @property
    def count(self) -> int:
        return int(self.joint.shape[0])

    def body_frame(self, model: Model) -> np.ndarray:
        """(k, 2, 3) each point in its body's frame (centre of mass, file orientation);
        ground's points stay in world coordinates."""
        out = np.empty_like(self.point)
        for k in range(self.count):
            for s in range(2):
                b = int(self.body[k, s])
                out[k, s] = self.point[k, s] if b < 0 else model.R0_body[b].T @ (self.point[k, s] - model.x0[b])
        return out


def unsupported_cuts(model: Model) -> list[str]:
    """The cut joints whose closure has no point pairs here (their type and name)."""
    return [f"{TYPE_NAME[int(model.jtype[j])]} cut joint {model.joint_names[j]!r}"
            for j in range(model.nb, model.nj) if int(model.jtype[j]) not in (REVOLUTE, SPHERICAL, FIXED)]


def length_scale(model: Model) -> float:
    """Half the median distance from a body's centre of mass to its joints' anchors."""
    d = [float(np.linalg.norm(model.anchor_succ[j])) for j in range(model.nj)]
    d += [float(np.linalg.norm(model.anchor_pred[j])) for j in range(model.nj) if model.pred[j] >= 0]
    d = [x for x in d if x > 1e-9]
    return 0.5 * float(np.median(d)) if d else 0.1


def _world(model: Model, b: int, p: np.ndarray) -> np.ndarray:
    return p.copy() if b < 0 else model.x0[b] + model.R0_body[b] @ p


def closure_points(model: Model) -> ClosurePoints:
    """The point pairs of every cut joint of ``model`` (module docstring)."""
    from ..model import perpendicular_pair

    span = length_scale(model)
    joint, body, point = [], [], []
    for j in range(model.nb, model.nj):
        a, b = int(model.pred[j]), int(model.succ[j])
        pa = _world(model, a, model.anchor_pred[j])
        pb = _world(model, b, model.anchor_succ[j])
        jt = int(model.jtype[j])
        if jt == SPHERICAL:
            offsets = [np.zeros(3)]
        elif jt == REVOLUTE:
            axis = model.axis_pred[j] if a < 0 else model.R0_body[a] @ model.axis_pred[j]
            offsets = [span * axis, -span * axis]
        elif jt == FIXED:
            u1, u2 = perpendicular_pair(np.array([0.0, 0.0, 1.0]))
            offsets = [np.zeros(3), span * u1, span * u2]
        else:
            continue
        for o in offsets:
            joint.append(j)
            body.append((a, b))
            point.append((pa + o, pb + o))
    return ClosurePoints(np.array(joint, dtype=np.int64), np.array(body, dtype=np.int64).reshape(-1, 2),
                         np.array(point, dtype=float).reshape(-1, 2, 3), span)


def quaternions_to_rotations(q: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices of unit quaternions (..., 4) ``[w, x, y, z]``."""
    w, x, y, z = (q[..., i] for i in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def closure_error_rows(model: Model, pts: ClosurePoints, columns, rows: np.ndarray) -> np.ndarray:
    """(n,) the largest pair distance at each of Linkwork's result ``rows`` (the contract's
    ``<body>.x`` ... ``<body>.q3`` columns); zeros without pairs."""
    if pts.count == 0 or rows.shape[0] == 0:
        return np.zeros(rows.shape[0])
    col = {c: i for i, c in enumerate(columns)}
    local = pts.body_frame(model)
    ends = []
    for s in range(2):
        P = np.empty((rows.shape[0], pts.count, 3))
        for k in range(pts.count):
            b = int(pts.body[k, s])
            if b < 0:
                P[:, k] = local[k, s]
                continue
            name = model.body_names[b]
            x = rows[:, [col[f"{name}.{f}"] for f in ("x", "y", "z")]]
            q = rows[:, [col[f"{name}.q{i}"] for i in range(4)]]
            P[:, k] = x + np.einsum("nij,j->ni", quaternions_to_rotations(q), local[k, s])
        ends.append(P)
    return np.linalg.norm(ends[1] - ends[0], axis=2).max(axis=1)
