"""Drawing geometry shared by the sketch canvas and the 3-D view (no Qt).

A body is drawn from its file ``shape`` (world coordinates at t = 0) or, when
it has none, as a rod between its joint anchors (a small sphere at the centre
of mass if it has fewer than two).  Points given at t = 0 map to the body
frame by ``p_body = R0^T (p - x0)`` and to the world at time t by
``x(t) + R(t) p_body`` (docs/file-format.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from linkwork.engine.mechfile import GROUND, MechanismSpec

from .edits import quat_to_rot

BODY_FIELDS = 13  # columns per body in a results row


@dataclass(frozen=True)
class Primitive:
    """One drawable piece of a body, in world coordinates at t = 0.

    kind "rod": ``p0``, ``p1``, ``radius``; "sphere": ``center``, ``radius``;
    "box": ``center``, ``rot`` (3x3 body axes), ``size``; "cylinder":
    ``center``, ``axis``, ``radius``, ``length``; "mesh": ``path``, ``scale``
    (drawn in the body frame at the centre of mass).
    """

    kind: str
    p0: np.ndarray | None = None
    p1: np.ndarray | None = None
    center: np.ndarray | None = None
    rot: np.ndarray | None = None
    size: np.ndarray | None = None
    axis: np.ndarray | None = None
    radius: float = 0.0
    length: float = 0.0
    path: str | None = None
    scale: float = 1.0


def characteristic_length(spec: MechanismSpec) -> float:
    """A typical link length (for marker sizes): median distance COM -> anchors."""
    pts = [np.asarray(j.anchor, float) for j in spec.joints]
    d = []
    byname = {b.name: b for b in spec.bodies}
    for j in spec.joints:
        for n in (j.parent, j.child):
            if n in byname:
                d.append(float(np.linalg.norm(np.asarray(byname[n].position) - np.asarray(j.anchor))))
    d = [x for x in d if x > 1e-9]
    if d:
        return 2.0 * float(np.median(d))
    if pts or spec.bodies:
        allp = np.array(pts + [np.asarray(b.position, float) for b in spec.bodies])
        ext = float(np.max(np.ptp(allp, axis=0))) if len(allp) > 1 else 0.0
        return ext if ext > 1e-9 else 1.0
    return 1.0


def body_anchors(spec: MechanismSpec) -> dict[str, list[np.ndarray]]:
    """Distinct joint anchors of each body, in joint order."""
    out: dict[str, list[np.ndarray]] = {b.name: [] for b in spec.bodies}
    for j in spec.joints:
        a = np.asarray(j.anchor, float)
        for n in (j.parent, j.child):
            if n in out and not any(np.allclose(a, q, atol=1e-12) for q in out[n]):
                out[n].append(a)
    return out


def body_primitives(spec: MechanismSpec) -> list[list[Primitive]]:
    """Drawable pieces of every body, in file order (world, t = 0)."""
    L = characteristic_length(spec)
    r_default = 0.03 * L
    anchors = body_anchors(spec)
    out = []
    for b in spec.bodies:
        s = b.shape
        x0 = np.asarray(b.position, float)
        R0 = quat_to_rot(b.orientation)
        prims: list[Primitive] = []
        if s is None:
            an = anchors[b.name]
            if len(an) == 2:
                prims.append(Primitive("rod", p0=an[0], p1=an[1], radius=r_default))
            elif len(an) > 2:
                for a in an:
                    if np.linalg.norm(a - x0) > 1e-9:
                        prims.append(Primitive("rod", p0=x0, p1=a, radius=0.7 * r_default))
                prims.append(Primitive("sphere", center=x0, radius=1.8 * r_default))
            else:
                for a in an:
                    if np.linalg.norm(a - x0) > 1e-9:
                        prims.append(Primitive("rod", p0=a, p1=x0, radius=0.5 * r_default))
                prims.append(Primitive("sphere", center=x0, radius=2.5 * r_default))
        elif s.kind == "rod":
            prims.append(Primitive("rod", p0=np.asarray(s.p_from, float), p1=np.asarray(s.p_to, float),
                                   radius=float(s.radius)))
        elif s.kind == "box":
            prims.append(Primitive("box", center=x0, rot=R0, size=np.asarray(s.size, float)))
        elif s.kind == "sphere":
            prims.append(Primitive("sphere", center=x0, radius=float(s.radius)))
        elif s.kind == "cylinder":
            prims.append(Primitive("cylinder", center=x0, axis=np.asarray(s.axis, float),
                                   radius=float(s.radius), length=float(s.length)))
        else:
            prims.append(Primitive("mesh", center=x0, rot=R0, path=s.path, scale=float(s.scale)))
        out.append(prims)
    return out


def initial_poses(spec: MechanismSpec) -> tuple[np.ndarray, np.ndarray]:
    """(x0 (nb,3), R0 (nb,3,3)) of the bodies in file order."""
    nb = len(spec.bodies)
    x = np.zeros((nb, 3))
    R = np.zeros((nb, 3, 3))
    for k, b in enumerate(spec.bodies):
        x[k] = b.position
        R[k] = quat_to_rot(b.orientation)
    return x, R


def quats_to_rots(q: np.ndarray) -> np.ndarray:
    """(n, 4) quaternions (w, x, y, z) -> (n, 3, 3) rotation matrices (normalised)."""
    q = np.asarray(q, float)
    n = np.linalg.norm(q, axis=1, keepdims=True)
    n[n == 0] = 1.0
    w, x, y, z = (q / n).T
    R = np.empty((q.shape[0], 3, 3))
    R[:, 0, 0] = 1 - 2 * (y * y + z * z)
    R[:, 0, 1] = 2 * (x * y - w * z)
    R[:, 0, 2] = 2 * (x * z + w * y)
    R[:, 1, 0] = 2 * (x * y + w * z)
    R[:, 1, 1] = 1 - 2 * (x * x + z * z)
    R[:, 1, 2] = 2 * (y * z - w * x)
    R[:, 2, 0] = 2 * (x * z - w * y)
    R[:, 2, 1] = 2 * (y * z + w * x)
    R[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def poses_from_row(row: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Body poses (file order) from one results row: x (nb,3), R (nb,3,3)."""
    blk = np.asarray(row[1:1 + BODY_FIELDS * nb], float).reshape(nb, BODY_FIELDS)
    return blk[:, 0:3].copy(), quats_to_rots(blk[:, 3:7])


@dataclass(frozen=True)
class JointMarkers:
    """Where each joint is drawn: carried by one body (file index, body-frame point) or fixed."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    body: np.ndarray  # (nj,) file body index carrying the marker, -1 = ground (fixed)
    local: np.ndarray  # (nj, 3) body-frame point (world point if body == -1)
    grounded: np.ndarray  # (nj,) bool: the joint connects to ground

    def world(self, x: np.ndarray, R: np.ndarray) -> np.ndarray:
        out = self.local.copy()
        m = self.body >= 0
        if np.any(m):
            b = self.body[m]
            out[m] = x[b] + np.einsum("nij,nj->ni", R[b], self.local[m])
        return out


def joint_markers(spec: MechanismSpec) -> JointMarkers:
    index = {b.name: k for k, b in enumerate(spec.bodies)}
    x0, R0 = initial_poses(spec)
    nj = len(spec.joints)
    body = np.full(nj, -1, dtype=np.int64)
    local = np.zeros((nj, 3))
    grounded = np.zeros(nj, dtype=bool)
    for k, j in enumerate(spec.joints):
        a = np.asarray(j.anchor, float)
        grounded[k] = GROUND in (j.parent, j.child)
        carrier = j.child if j.child in index else (j.parent if j.parent in index else None)
        if carrier is None:
            local[k] = a
        else:
            i = index[carrier]
            body[k] = i
            local[k] = R0[i].T @ (a - x0[i])
    return JointMarkers(tuple(j.name for j in spec.joints), tuple(j.type for j in spec.joints),
                        body, local, grounded)


def gear_links(spec: MechanismSpec, markers: JointMarkers) -> np.ndarray:
    """(ng, 2) marker indices (driver, driven) of every gear whose joints both exist: the
    3-D view draws each gear as a link between its two joints' markers."""
    index = {n: k for k, n in enumerate(markers.names)}
    pairs = [(index[c.driver], index[c.driven]) for c in spec.couplings
             if c.driver in index and c.driven in index]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def gear_segments(markers: JointMarkers, links: np.ndarray, x: np.ndarray, R: np.ndarray) -> np.ndarray:
    """(2 ng, 3) segment end points (driver, driven, driver, ...) at the poses ``x``, ``R``."""
    if not len(links):
        return np.zeros((0, 3))
    P = markers.world(x, R)
    return P[links.reshape(-1)]


def spec_bounds(spec: MechanismSpec) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned bounds (lo, hi) of every anchor, centre of mass and rod end at t = 0."""
    pts = [np.asarray(j.anchor, float) for j in spec.joints]
    for b in spec.bodies:
        pts.append(np.asarray(b.position, float))
        if b.shape is not None and b.shape.kind == "rod":
            pts += [np.asarray(b.shape.p_from, float), np.asarray(b.shape.p_to, float)]
    if not pts:
        return np.array([-1.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0])
    P = np.array(pts)
    return P.min(axis=0), P.max(axis=0)


