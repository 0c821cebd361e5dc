"""Triangle meshes of the drawing primitives (numpy only).

Each builder returns ``(vertices (n,3), faces (m,3))`` in world coordinates
at t = 0; :class:`BodyMeshes` concatenates them per body so the 3-D view can
move every body with one ``einsum`` per frame: ``x[b] + R[b] @ v_body``.
"""

from __future__ import annotations

import numpy as np

from linkwork.app.session.geometry import JointMarkers, Primitive, initial_poses


def _frame(axis) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.asarray(axis, float)
    n = np.linalg.norm(a)
    a = a / n if n > 0 else np.array([0.0, 0.0, 1.0])
    t = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(a, t)
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    return a, u, v


def cylinder(p0, p1, radius: float, segments: int = 16, caps: bool = True):
    """Closed cylinder from p0 to p1 (separate cap vertices for crisp shading)."""
    p0 = np.asarray(p0, float)
    p1 = np.asarray(p1, float)
    d = p1 - p0
    if np.linalg.norm(d) < 1e-12:
        return sphere(p0, radius, 1)
    a, u, v = _frame(d)
    th = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    ring = np.cos(th)[:, None] * u + np.sin(th)[:, None] * v  # (s, 3)
    verts = [p0 + radius * ring, p1 + radius * ring]
    faces = []
    s = segments
    for i in range(s):
        j = (i + 1) % s
        faces.append((i, j, s + j))
        faces.append((i, s + j, s + i))
    if caps:
        base = 2 * s
        verts += [p0 + radius * ring, p1 + radius * ring, p0[None], p1[None]]
        c0, c1 = base + 2 * s, base + 2 * s + 1
        for i in range(s):
            j = (i + 1) % s
            faces.append((c0, base + j, base + i))
            faces.append((c1, base + s + i, base + s + j))
    return np.vstack(verts), np.array(faces, dtype=np.uint32)


def sphere(center, radius: float, subdivisions: int = 2):
    """Icosphere."""
    t = (1.0 + 5 ** 0.5) / 2.0
    V = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t),
         (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    F = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2),
         (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11),
         (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [np.array(v, float) / np.linalg.norm(v) for v in V]
    faces = F
    for _ in range(subdivisions):
        cache = {}
        nf = []

        def mid(i, j):
            key = (min(i, j), max(i, j))
            if key not in cache:
                m = verts[i] + verts[j]
                verts.append(m / np.linalg.norm(m))
                cache[key] = len(verts) - 1
            return cache[key]

        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = nf
    return np.asarray(center, float) + radius * np.array(verts), np.array(faces, dtype=np.uint32)


def box(center, rot, size):
    """Box with separate vertices per face (flat faces shade correctly)."""
    c = np.asarray(center, float)
    R = np.asarray(rot, float)
    h = 0.5 * np.asarray(size, float)
    verts, faces = [], []
    for axis in range(3):
        for sign in (-1, 1):
            n = np.zeros(3)
            n[axis] = sign
            u = np.zeros(3)
            u[(axis + 1) % 3] = 1
            v = np.zeros(3)
            v[(axis + 2) % 3] = 1
            k = len(verts)
            for du, dv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = n * h + du * u * h + dv * v * h
                verts.append(c + R @ p)
            if sign > 0:
                faces += [(k, k + 1, k + 2), (k, k + 2, k + 3)]
            else:
                faces += [(k, k + 2, k + 1), (k, k + 3, k + 2)]
    return np.array(verts), np.array(faces, dtype=np.uint32)


def primitive_mesh(p: Primitive, segments: int = 16, min_radius: float = 0.0):
    """Mesh of one primitive; rods and spheres are drawn at least ``min_radius`` thick
    (so a 128 m chain of 3 cm rods stays visible)."""
    if p.kind == "rod":
        return cylinder(p.p0, p.p1, max(p.radius, min_radius), segments)
    if p.kind == "sphere":
        return sphere(p.center, max(p.radius, min_radius), 2)
    if p.kind == "box":
        return box(p.center, p.rot, p.size)
    if p.kind == "cylinder":
        h = 0.5 * p.length * np.asarray(p.axis, float)
        return cylinder(p.center - h, p.center + h, p.radius, max(segments, 20))
    if p.kind == "mesh":
        return load_mesh(p)
    raise ValueError(p.kind)


_mesh_cache: dict = {}


def load_mesh(p: Primitive):
    """A mesh file (OBJ and the formats vispy reads), scaled and placed at t = 0."""
    from vispy.io import read_mesh

    key = p.path
    if key not in _mesh_cache:
        verts, faces, _normals, _tex = read_mesh(p.path)
        _mesh_cache[key] = (np.asarray(verts, float), np.asarray(faces, dtype=np.uint32))
    verts, faces = _mesh_cache[key]
    R = np.asarray(p.rot, float) if p.rot is not None else np.eye(3)
    return np.asarray(p.center, float) + (p.scale * verts) @ R.T, faces


class BodyMeshes:
    """All bodies' triangles, stored in body frames, and a per-vertex body index.

    ``world(x, R)`` gives the vertices for body poses x (nb,3), R (nb,3,3).
    Bodies with index -1 are fixed (ground).
    """

    def __init__(self, spec, prims_per_body, segments: int = 16, extra=(), min_radius: float = 0.0):
        x0, R0 = initial_poses(spec)
        V, F, B = [], [], []
        n = 0
        self.body_vertex_range: list[tuple[int, int]] = []
        for k, prims in enumerate(prims_per_body):
            start = n
            for p in prims:
                try:
                    v, f = primitive_mesh(p, segments, min_radius)
                except Exception:  # an unreadable mesh file: a marker sphere instead
                    v, f = sphere(p.center if p.center is not None else x0[k], 0.05, 1)
                V.append((v - x0[k]) @ R0[k])  # rows of R0^T (v - x0)
                F.append(f + n)
                B.append(np.full(len(v), k, dtype=np.int64))
                n += len(v)
            self.body_vertex_range.append((start, n))
        for body, (v, f) in extra:
            if body >= 0:
                V.append((v - x0[body]) @ R0[body])
            else:
                V.append(v)
            F.append(f + n)
            B.append(np.full(len(v), body, dtype=np.int64))
            n += len(v)
        self.local = np.vstack(V) if V else np.zeros((0, 3))
        self.faces = np.vstack(F).astype(np.uint32) if F else np.zeros((0, 3), dtype=np.uint32)
        self.body = np.concatenate(B) if B else np.zeros(0, dtype=np.int64)
        self._moving = self.body >= 0
        self.local_normals = vertex_normals(self.local, self.faces)

    @property
    def n_vertices(self) -> int:
        return len(self.local)

    def world(self, x: np.ndarray, R: np.ndarray) -> np.ndarray:
        out = self.local.copy()
        m = self._moving
        if np.any(m):
            b = self.body[m]
            out[m] = x[b] + np.einsum("nij,nj->ni", R[b], self.local[m])
        return out

def vertex_normals(verts: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals (vertices of different pieces are never shared)."""
    n = np.zeros_like(verts, dtype=float)
    if len(faces) == 0:
        return n
    v = verts[faces]
    fn = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    for k in range(3):
        np.add.at(n, faces[:, k], fn)
    L = np.linalg.norm(n, axis=1, keepdims=True)
    L[L == 0] = 1.0
    return n / L


def joint_marker_meshes(spec, markers: JointMarkers, size: float, detail: int = 2):
    """Meshes of the joint markers in world t = 0, tagged with the carrying body.

    Revolute: a pin along the axis; cylindrical: a longer pin; prismatic: a
    slim box along the axis; universal: a sphere with two crossed pins;
    spherical: a ball; fixed: a cube.
    """
    out = []
    joints = spec.joints
    x0, R0 = initial_poses(spec)
    for k, j in enumerate(joints):
        a = np.asarray(j.anchor, float)
        body = int(markers.body[k])
        if j.type in ("revolute", "cylindrical"):
            ax = np.asarray(j.axis, float)
            ax = ax / np.linalg.norm(ax)
            h = (1.0 if j.type == "revolute" else 2.0) * size * ax
            out.append((body, cylinder(a - h, a + h, 0.55 * size, 18 if detail >= 2 else 10)))
        elif j.type == "prismatic":
            ax, u, v = _frame(j.axis)
            R = np.stack([ax, u, v], axis=1)
            out.append((body, box(a, R, (3.0 * size, 0.8 * size, 0.8 * size))))
        elif j.type == "universal":
            out.append((body, sphere(a, 0.6 * size, 1)))
            for axv in j.axes:
                axv = np.asarray(axv, float)
                h = 1.1 * size * axv / np.linalg.norm(axv)
                out.append((body, cylinder(a - h, a + h, 0.25 * size, 10)))
        elif j.type == "spherical":
            out.append((body, sphere(a, 0.75 * size, detail)))
        else:
            out.append((body, box(a, np.eye(3), (1.2 * size,) * 3)))
    return out


def concat(meshes):
    V, F = [], []
    n = 0
    for v, f in meshes:
        V.append(v)
        F.append(f + n)
        n += len(v)
    if not V:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.uint32)
    return np.vstack(V), np.vstack(F).astype(np.uint32)
