"""Shared 3-D and 6-D algebra.

Conventions used throughout the engine (docs/conventions.md):

- Spatial vectors are ``[linear; angular]`` (the ordering of papers 000/001):
  a twist ``V = [v; w]`` where ``v`` is the velocity of the body point that is
  at the reference point, and a wrench ``F = [f; n]`` with ``n`` the moment
  about the reference point.  Everything is in world-frame components; the
  reference point is stated wherever a spatial vector is stored.
- Spatial accelerations are Featherstone's (the derivative of the twist about
  a *fixed* world point), so that they shift between points like twists.
- Quaternions are ``[w, x, y, z]`` (Euler parameters e0..e3) and rotate
  body-frame vectors into the world: ``x_world = R(q) x_body``.

Every function is a numba kernel helper; none allocates unless it returns a
new array (the ``*_out`` variants write into a given array).
"""

import numpy as np
from numba import njit


# --------------------------------------------------------------------------- 3-D


@njit(cache=True, nogil=True, _nrt=True)
def cross3(a, b, out):
    """out = a x b."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True, nogil=True, _nrt=True)
def skew(a):
    """The 3x3 matrix ``~a`` with ``~a @ b == a x b``."""
    m = np.zeros((3, 3))
    m[0, 1] = -a[2]
    m[0, 2] = a[1]
    m[1, 0] = a[2]
    m[1, 2] = -a[0]
    m[2, 0] = -a[1]
    m[2, 1] = a[0]
    return m


@njit(cache=True, nogil=True, _nrt=True)
def quat_to_rot(q, R):
    """Rotation matrix of the quaternion ``q`` ([w, x, y, z]) into ``R``: the rotation of
    ``q / |q|`` (exact for unit quaternions; drifted ones are normalised on the fly)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    R[0, 0] = 1.0 - s * (y * y + z * z)
    R[0, 1] = s * (x * y - w * z)
    R[0, 2] = s * (x * z + w * y)
    R[1, 0] = s * (x * y + w * z)
    R[1, 1] = 1.0 - s * (x * x + z * z)
    R[1, 2] = s * (y * z - w * x)
    R[2, 0] = s * (x * z - w * y)
    R[2, 1] = s * (y * z + w * x)
    R[2, 2] = 1.0 - s * (x * x + y * y)


@njit(cache=True, nogil=True, _nrt=True)
def rot_to_quat(R, q):
    """Unit quaternion (w >= 0) of the rotation matrix ``R`` (Shepperd's method)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > R[0, 0] and tr > R[1, 1] and tr > R[2, 2]:
        s = np.sqrt(1.0 + tr) * 2.0
        q[0] = 0.25 * s
        q[1] = (R[2, 1] - R[1, 2]) / s
        q[2] = (R[0, 2] - R[2, 0]) / s
        q[3] = (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2.0
        q[0] = (R[2, 1] - R[1, 2]) / s
        q[1] = 0.25 * s
        q[2] = (R[0, 1] + R[1, 0]) / s
        q[3] = (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2.0
        q[0] = (R[0, 2] - R[2, 0]) / s
        q[1] = (R[0, 1] + R[1, 0]) / s
        q[2] = 0.25 * s
        q[3] = (R[1, 2] + R[2, 1]) / s
    else:
        s = np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2.0
        q[0] = (R[1, 0] - R[0, 1]) / s
        q[1] = (R[0, 2] + R[2, 0]) / s
        q[2] = (R[1, 2] + R[2, 1]) / s
        q[3] = 0.25 * s
    if q[0] < 0.0:
        for k in range(4):
            q[k] = -q[k]
    n = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for k in range(4):
        q[k] /= n


@njit(cache=True, nogil=True, _nrt=True)
def quat_mul(a, b, out):
    """Hamilton product out = a (x) b."""
    w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3]
    x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2]
    y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1]
    z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]
    out[0] = w
    out[1] = x
    out[2] = y
    out[3] = z


@njit(cache=True, nogil=True, _nrt=True)
def axis_angle_rot(a, angle, R):
    """Rotation by ``angle`` about the unit axis ``a`` (Rodrigues) into ``R``."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x, y, z = a[0], a[1], a[2]
    R[0, 0] = c + x * x * t
    R[0, 1] = x * y * t - z * s
    R[0, 2] = x * z * t + y * s
    R[1, 0] = y * x * t + z * s
    R[1, 1] = c + y * y * t
    R[1, 2] = y * z * t - x * s
    R[2, 0] = z * x * t - y * s
    R[2, 1] = z * y * t + x * s
    R[2, 2] = c + z * z * t


@njit(cache=True, nogil=True, _nrt=True)
def matmul3(A, B, out):
    """out = A @ B for 3x3 (out must not alias A or B)."""
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += A[i, k] * B[k, j]
            out[i, j] = s


@njit(cache=True, nogil=True, _nrt=True)
def matvec3(A, x, out):
    """out = A @ x for 3x3 (out must not alias x)."""
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]


@njit(cache=True, nogil=True, _nrt=True)
def matTvec3(A, x, out):
    """out = A.T @ x for 3x3 (out must not alias x)."""
    for i in range(3):
        out[i] = A[0, i] * x[0] + A[1, i] * x[1] + A[2, i] * x[2]


# --------------------------------------------------------------------------- 6-D


@njit(cache=True, nogil=True, _nrt=True)
def crm(V, M, out):
    """Motion cross product out = V x_m M, ``[w x m + v x mw; w x mw]``."""
    v0, v1, v2, w0, w1, w2 = V[0], V[1], V[2], V[3], V[4], V[5]
    m0, m1, m2, n0, n1, n2 = M[0], M[1], M[2], M[3], M[4], M[5]
    out[0] = w1 * m2 - w2 * m1 + v1 * n2 - v2 * n1
    out[1] = w2 * m0 - w0 * m2 + v2 * n0 - v0 * n2
    out[2] = w0 * m1 - w1 * m0 + v0 * n1 - v1 * n0
    out[3] = w1 * n2 - w2 * n1
    out[4] = w2 * n0 - w0 * n2
    out[5] = w0 * n1 - w1 * n0


@njit(cache=True, nogil=True, _nrt=True)
def crf(V, F, out):
    """Force cross product out = V x* F, ``[w x f; v x f + w x n]``."""
    v0, v1, v2, w0, w1, w2 = V[0], V[1], V[2], V[3], V[4], V[5]
    f0, f1, f2, n0, n1, n2 = F[0], F[1], F[2], F[3], F[4], F[5]
    out[0] = w1 * f2 - w2 * f1
    out[1] = w2 * f0 - w0 * f2
    out[2] = w0 * f1 - w1 * f0
    out[3] = v1 * f2 - v2 * f1 + w1 * n2 - w2 * n1
    out[4] = v2 * f0 - v0 * f2 + w2 * n0 - w0 * n2
    out[5] = v0 * f1 - v1 * f0 + w0 * n1 - w1 * n0


@njit(cache=True, nogil=True, inline='always')
def shift_force_by(F, l0, l1, l2, out):
    """:func:`shift_force` with ``l`` = (l0, l1, l2) given as scalars (kernels that
    compute it in place, with no array to hold it).  ``out`` may be ``F``."""
    f0, f1, f2 = F[0], F[1], F[2]
    out[0] = f0
    out[1] = f1
    out[2] = f2
    out[3] = F[3] + l1 * f2 - l2 * f1
    out[4] = F[4] + l2 * f0 - l0 * f2
    out[5] = F[5] + l0 * f1 - l1 * f0


@njit(cache=True, nogil=True, _nrt=True)
def shift_force(F, l, out):
    """Wrench ``F`` about point B re-expressed about point A, with l = B - A.

    ``[f; n + l x f]`` -- the transform called S_12 in paper 001 eq. (14).
    """
    shift_force_by(F, l[0], l[1], l[2], out)


@njit(cache=True, nogil=True, inline='always')
def shift_motion_by(V, l0, l1, l2, out):
    """:func:`shift_motion` with ``l`` = (l0, l1, l2) given as scalars.  ``out`` may be ``V``."""
    w0, w1, w2 = V[3], V[4], V[5]
    out[0] = V[0] + w1 * l2 - w2 * l1
    out[1] = V[1] + w2 * l0 - w0 * l2
    out[2] = V[2] + w0 * l1 - w1 * l0
    out[3] = w0
    out[4] = w1
    out[5] = w2


@njit(cache=True, nogil=True, _nrt=True)
def shift_motion(V, l, out):
    """Twist ``V`` about point A re-expressed about point B, with l = B - A.

    ``[v + w x l; w]`` -- the transpose of :func:`shift_force`.
    """
    shift_motion_by(V, l[0], l[1], l[2], out)


@njit(cache=True, nogil=True, _nrt=True)
def shift_matrix(l, X):
    """X = [[I, 0], [~l, I]]: the wrench shift of :func:`shift_force` as a matrix."""
    for i in range(6):
        for j in range(6):
            X[i, j] = 0.0
    for i in range(6):
        X[i, i] = 1.0
    X[3, 1] = -l[2]
    X[3, 2] = l[1]
    X[4, 0] = l[2]
    X[4, 2] = -l[0]
    X[5, 0] = -l[1]
    X[5, 1] = l[0]


@njit(cache=True, nogil=True, _nrt=True)
def inertia_inverse_about(m, Jinv, c, out):
    """Inverse spatial inertia ``Phi = X(c)^T I_C^{-1} X(c)`` about point O.

    ``I_C = diag(m 1, J)`` is the inertia at the centre of mass (world frame),
    ``c = C - O``.  Then a wrench F about O gives the spatial acceleration
    about O as ``Phi @ F`` (for a free body).  Written out:
    ``Phi = [[1/m - ~c Jinv ~c, -~c Jinv]... ]`` in block form computed below.
    """
    # X = [[I,0],[~l,I]] with l = O - C shifts wrenches from O to C; the
    # twist shift C -> O is X^T.  Phi_O = X^T diag(1/m, Jinv) X with l = -c.
    l0, l1, l2 = -c[0], -c[1], -c[2]
    # K = ~l ; rows of Jinv @ K
    # A = Jinv @ ~l
    A = np.empty((3, 3))
    for i in range(3):
        a0, a1, a2 = Jinv[i, 0], Jinv[i, 1], Jinv[i, 2]
        # (Jinv ~l)[i, j] = sum_k Jinv[i,k] ~l[k,j]
        A[i, 0] = a1 * l2 - a2 * l1
        A[i, 1] = -a0 * l2 + a2 * l0
        A[i, 2] = a0 * l1 - a1 * l0
    inv_m = 1.0 / m
    # top-left: I/m + ~l^T Jinv ~l = I/m - ~l Jinv ~l
    for i in range(3):
        for j in range(3):
            # (~l^T A)[i,j] = -(~l A)[i,j]
            if i == 0:
                s = l1 * A[2, j] - l2 * A[1, j]
            elif i == 1:
                s = l2 * A[0, j] - l0 * A[2, j]
            else:
                s = l0 * A[1, j] - l1 * A[0, j]
            out[i, j] = -s
        out[i, i] += inv_m
    # top-right: ~l^T Jinv = -(~l Jinv) = (Jinv ~l)^T = A^T   (Jinv symmetric)
    # bottom-left: Jinv ~l = A
    for i in range(3):
        for j in range(3):
            out[i, 3 + j] = A[j, i]
            out[3 + i, j] = A[i, j]
            out[3 + i, 3 + j] = Jinv[i, j]
