"""A shaded triangle mesh of rigid bodies, posed on the GPU.

Each vertex carries its position and normal *in its body's frame* and the
index of that body; a small float texture holds every body's pose (the three
columns of R and the position x).  The vertex shader computes
``x_b + R_b p`` -- so a new frame uploads ``nb x 12`` floats, not the whole
mesh, and the GUI thread does no per-vertex work while a run streams in.
(vispy's ``MeshVisual`` re-indexes and re-uploads every vertex and rebuilds its
colour program on each ``set_data``: fine for static meshes, far too slow for a
128-body mechanism animated live on a software OpenGL.)

Shading: ambient + diffuse + specular from a head light, two-sided.
"""

from __future__ import annotations

import numpy as np
from vispy import gloo
from vispy.scene.visuals import create_visual_node
from vispy.visuals import Visual

VERT = """
varying vec3 v_normal;
varying vec4 v_color;
vec3 pose_column(float body, float k) {
    // texel (body, k) of the pose texture: k = 0, 1, 2 rotation columns, 3 position
    return texture2D($poses, vec2((body + 0.5) / $n_cols, (k + 0.5) / 4.0)).rgb;
}
void main() {
    float b = $body;
    vec3 c0 = pose_column(b, 0.0);
    vec3 c1 = pose_column(b, 1.0);
    vec3 c2 = pose_column(b, 2.0);
    vec3 x = pose_column(b, 3.0);
    vec3 p = $local;
    vec3 n = $normal;
    vec3 world = x + c0 * p.x + c1 * p.y + c2 * p.z;
    v_normal = c0 * n.x + c1 * n.y + c2 * n.z;
    v_color = $color;
    gl_Position = $transform(vec4(world, 1.0));
}
"""

FRAG = """
varying vec3 v_normal;
varying vec4 v_color;
void main() {
    vec3 n = normalize(v_normal);
    vec3 l = normalize($light_dir);
    float ndl = dot(n, -l);
    if (ndl < 0.0) { n = -n; ndl = -ndl; }   // two-sided
    vec3 r = reflect(l, n);
    float spec = pow(max(dot(r, -l), 0.0), $shininess);
    vec3 c = v_color.rgb * ($ambient + $diffuse * ndl) + vec3($specular * spec);
    gl_FragColor = vec4(c, v_color.a);
}
"""


class ShadedMeshVisual(Visual):
    def __init__(self, ambient: float = 0.42, diffuse: float = 0.68, specular: float = 0.22,
                 shininess: float = 30.0):
        super().__init__(vcode=VERT, fcode=FRAG)
        z3 = np.zeros((3, 3), np.float32)
        self._local = gloo.VertexBuffer(z3)
        self._nrm = gloo.VertexBuffer(z3)
        self._body = gloo.VertexBuffer(np.zeros(3, np.float32))
        self._col = gloo.VertexBuffer(np.ones((3, 4), np.float32))
        self._ib = gloo.IndexBuffer(np.array([0, 1, 2], np.uint32))
        self._n_cols = 1
        self._poses_data = np.zeros((4, 1, 3), np.float32)
        self._poses = gloo.Texture2D(self._poses_data, internalformat="rgb32f", interpolation="nearest",
                                     wrapping="clamp_to_edge")
        self._bounds = None
        self._light = None
        self._radius = np.zeros(0)
        self._static = np.zeros(0, bool)
        self._static_pts = np.zeros((0, 3))
        p = self.shared_program
        p.vert["local"] = self._local
        p.vert["normal"] = self._nrm
        p.vert["body"] = self._body
        p.vert["color"] = self._col
        p.vert["poses"] = self._poses
        p.vert["n_cols"] = 1.0
        p.frag["light_dir"] = (0.3, -0.5, -1.0)
        p.frag["ambient"] = float(ambient)
        p.frag["diffuse"] = float(diffuse)
        p.frag["specular"] = float(specular)
        p.frag["shininess"] = float(shininess)
        self._draw_mode = "triangles"
        self._index_buffer = self._ib
        self.set_gl_state("opaque", depth_test=True, cull_face=False)
        self.uploads = 0
        self.freeze()

    # --------------------------------------------------------------- geometry
    def set_geometry(self, local: np.ndarray, normals: np.ndarray, body: np.ndarray, faces: np.ndarray,
                     colors: np.ndarray, n_bodies: int) -> None:
        """Vertices and normals in body frames, each vertex's body (-1: fixed, world
        coordinates), triangles, colours (n, 4)."""
        local = np.ascontiguousarray(local, np.float32)
        if len(local) == 0:
            local = np.zeros((3, 3), np.float32)
            normals = local
            body = np.full(3, -1)
            faces = np.array([[0, 0, 0]], np.uint32)
            colors = np.ones((3, 4), np.float32)
        self._n_cols = int(n_bodies) + 1  # the last column: identity, for fixed vertices
        b = np.asarray(body, np.int64).copy()
        b[b < 0] = self._n_cols - 1
        self._local.set_data(local)
        self._nrm.set_data(np.ascontiguousarray(normals, np.float32))
        self._body.set_data(b.astype(np.float32))
        self._ib.set_data(np.ascontiguousarray(faces, np.uint32))
        self.shared_program.vert["n_cols"] = float(self._n_cols)
        self._poses_data = np.zeros((4, self._n_cols, 3), np.float32)
        self._poses_data[0, :, 0] = self._poses_data[1, :, 1] = self._poses_data[2, :, 2] = 1.0
        self._poses.set_data(self._poses_data)
        # how far each body's vertices reach from its origin (for the bounds)
        self._radius = np.zeros(self._n_cols)
        np.maximum.at(self._radius, b, np.linalg.norm(local, axis=1))
        self._static = b == self._n_cols - 1
        self._static_pts = local[self._static]
        self.set_colors(colors)
        self.update()

    def set_colors(self, colors: np.ndarray) -> None:
        c = np.ascontiguousarray(colors, dtype=np.float32)
        if len(c) == 0:
            c = np.ones((3, 4), np.float32)
        self._col.set_data(c)
        self.update()

    def set_pose(self, x: np.ndarray, R: np.ndarray) -> None:
        """Body poses (nb, 3) and (nb, 3, 3): one small texture upload."""
        nb = self._n_cols - 1
        d = self._poses_data
        d[0, :nb] = R[:, :, 0]
        d[1, :nb] = R[:, :, 1]
        d[2, :nb] = R[:, :, 2]
        d[3, :nb] = x
        self._poses.set_data(d)
        r = self._radius[:nb, None]
        lo = (x - r).min(axis=0) if nb else np.zeros(3)
        hi = (x + r).max(axis=0) if nb else np.zeros(3)
        if len(self._static_pts):
            lo = np.minimum(lo, self._static_pts.min(axis=0))
            hi = np.maximum(hi, self._static_pts.max(axis=0))
        self._bounds = (lo, hi)
        self.uploads += 1
        self.update()

    def set_light(self, direction) -> None:
        d = tuple(float(v) for v in direction)
        if d != self._light:
            self._light = d
            self.shared_program.frag["light_dir"] = d
            self.update()

    # ------------------------------------------------------------- vispy hooks
    @staticmethod
    def _prepare_transforms(view):
        view.view_program.vert["transform"] = view.get_transform()

    def _prepare_draw(self, view):
        return True

    def _compute_bounds(self, axis, view):
        if self._bounds is None:
            return None
        return float(self._bounds[0][axis]), float(self._bounds[1][axis])


ShadedMesh = create_visual_node(ShadedMeshVisual)
