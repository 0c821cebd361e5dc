"""Joint constraints in absolute coordinates (textbook form, Haug/Nikravesh).

Every joint ``j`` between body ``a`` (pred) and body ``b`` (succ) contributes
``nc_j`` equations ``Phi_j(x_a, R_a, x_b, R_b) = 0`` (docs/derivations.md,
"Absolute-coordinate constraints"):

=============  ====================================================  ======
type           equations                                             count
=============  ====================================================  ======
spherical      d = (x_b + R_b s_b) - (x_a + R_a s_a)                 3
revolute       d;  u1.h,  u2.h    (u_k _|_ axis on a, h axis on b)   5
universal      d;  a1.a2          (a1 on a, a2 on b)                 4
prismatic      y_a.z_b, z_a.x_b, x_a.y_b;  u1.d,  u2.d               5
cylindrical    u1.h, u2.h;  u1.d, u2.d                               4
fixed          d;  y_a.z_b, z_a.x_b, x_a.y_b                         6
=============  ====================================================  ======

(``x_a, y_a, z_a`` / ``x_b, y_b, z_b``: the world axes at t = 0 carried by each
body; all dot products vanish at t = 0.)  With body twists ``V = [v_C; w]`` and
classical accelerations ``a = [a_C; alpha]``:

    Phi_dot  = G_a V_a + G_b V_b
    Phi_ddot = G_a a_a + G_b a_b + g          (g: quadratic in the velocities)

:func:`joint_constraint` returns ``Phi``, ``G_a``, ``G_b`` and ``g``; ground is a
body with x = 0, R = I and zero velocity.  These residuals are the contract's
``violation.*`` columns, the rank behind ``linkwork info``'s counts, the loop
closures of the ``dense`` formulation and the constraints of ``index3``.
"""

import numpy as np
from numba import njit

from .model import CYLINDRICAL, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL, Model


def con_arrays(model: Model):
    """The tuple of model arrays :func:`joint_constraint` reads."""
    return (
        model.jtype, model.pred, model.succ, model.anchor_pred, model.anchor_succ,
        model.axis_pred, model.axis_succ, model.perp_pred, model.frame_pred, model.frame_succ,
        model.c_adr, model.nc_j,
    )


@njit(cache=True)
def _rot(R, s, out):
    for k in range(3):
        out[k] = R[k, 0] * s[0] + R[k, 1] * s[1] + R[k, 2] * s[2]


@njit(cache=True)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _point_rows(row, ra, rb, wa, wb, Ga, Gb, g, phi, xa, xb):
    """Rows row..row+2: d = (x_b + r_b) - (x_a + r_a)."""
    t = np.empty(3)
    u = np.empty(3)
    for k in range(3):
        phi[row + k] = xb[k] + rb[k] - xa[k] - ra[k]
    # d/dt: v_b + w_b x r_b - v_a - w_a x r_a ; w x r = -~r w
    for k in range(3):
        for c in range(6):
            Ga[row + k, c] = 0.0
            Gb[row + k, c] = 0.0
        Ga[row + k, k] = -1.0
        Gb[row + k, k] = 1.0
    # -~r_b for b, +~r_a for a  (angular columns)
    Gb[row + 0, 4] = rb[2]
    Gb[row + 0, 5] = -rb[1]
    Gb[row + 1, 3] = -rb[2]
    Gb[row + 1, 5] = rb[0]
    Gb[row + 2, 3] = rb[1]
    Gb[row + 2, 4] = -rb[0]
    Ga[row + 0, 4] = -ra[2]
    Ga[row + 0, 5] = ra[1]
    Ga[row + 1, 3] = ra[2]
    Ga[row + 1, 5] = -ra[0]
    Ga[row + 2, 3] = -ra[1]
    Ga[row + 2, 4] = ra[0]
    # quadratic: w_b x (w_b x r_b) - w_a x (w_a x r_a)
    _cross(wb, rb, t)
    _cross(wb, t, u)
    for k in range(3):
        g[row + k] = u[k]
    _cross(wa, ra, t)
    _cross(wa, t, u)
    for k in range(3):
        g[row + k] -= u[k]


@njit(cache=True)
def _dot_row(row, u, w, wa, wb, Ga, Gb, g, phi):
    """Row: u . w with u carried by a and w carried by b."""
    uxw = np.empty(3)
    t1 = np.empty(3)
    t2 = np.empty(3)
    t3 = np.empty(3)
    phi[row] = _dot(u, w)
    _cross(u, w, uxw)
    for c in range(6):
        Ga[row, c] = 0.0
        Gb[row, c] = 0.0
    for k in range(3):
        Ga[row, 3 + k] = uxw[k]
        Gb[row, 3 + k] = -uxw[k]
    # g = (wa x (wa x u)).w + 2 (wa x u).(wb x w) + u.(wb x (wb x w))
    _cross(wa, u, t1)
    _cross(wa, t1, t2)
    q = _dot(t2, w)
    _cross(wb, w, t2)
    q += 2.0 * _dot(t1, t2)
    _cross(wb, t2, t3)
    q += _dot(u, t3)
    g[row] = q


@njit(cache=True)
def _dot_d_row(row, u, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi):
    """Row: u . d with u carried by a, d = (x_b + r_b) - (x_a + r_a), dd = d_dot."""
    t1 = np.empty(3)
    t2 = np.empty(3)
    t3 = np.empty(3)
    phi[row] = _dot(u, d)
    # d/dt = (w_a x u).d + u.d_dot
    #      = u.v_b + w_b.(r_b x u) - u.v_a + w_a.(u x (d + r_a))
    for c in range(6):
        Ga[row, c] = 0.0
        Gb[row, c] = 0.0
    for k in range(3):
        Ga[row, k] = -u[k]
        Gb[row, k] = u[k]
        t1[k] = d[k] + ra[k]
    _cross(u, t1, t2)
    _cross(rb, u, t3)
    for k in range(3):
        Ga[row, 3 + k] = t2[k]
        Gb[row, 3 + k] = t3[k]
    # g = (wa x (wa x u)).d + 2 (wa x u).dd + u.(wb x (wb x rb) - wa x (wa x ra))
    _cross(wa, u, t1)
    _cross(wa, t1, t2)
    q = _dot(t2, d) + 2.0 * _dot(t1, dd)
    _cross(wb, rb, t2)
    _cross(wb, t2, t3)
    q += _dot(u, t3)
    _cross(wa, ra, t2)
    _cross(wa, t2, t3)
    q -= _dot(u, t3)
    g[row] = q


@njit(cache=True)
def _orientation_rows(row, Fa, Fb, wa, wb, Ga, Gb, g, phi):
    """Rows: y_a.z_b, z_a.x_b, x_a.y_b (Fa, Fb rows = carried world axes)."""
    _dot_row(row, Fa[1], Fb[2], wa, wb, Ga, Gb, g, phi)
    _dot_row(row + 1, Fa[2], Fb[0], wa, wb, Ga, Gb, g, phi)
    _dot_row(row + 2, Fa[0], Fb[1], wa, wb, Ga, Gb, g, phi)


@njit(cache=True)
def joint_constraint(ca, j, xa, Ra, Va, xb, Rb, Vb, phi, Ga, Gb, g):
    """Residual ``phi`` (nc_j), Jacobians ``Ga``, ``Gb`` (nc_j, 6) w.r.t. the twists
    ``[v_C; w]`` of pred and succ, and the quadratic term ``g`` of joint ``j``.

    Rows are written from 0; the caller offsets them.
    """
    jtype, pred, succ, anchor_pred, anchor_succ, axis_pred, axis_succ, perp_pred, frame_pred, \
        frame_succ, c_adr, nc_j = ca
    jt = jtype[j]
    ra = np.empty(3)
    rb = np.empty(3)
    _rot(Ra, anchor_pred[j], ra)
    _rot(Rb, anchor_succ[j], rb)
    wa = Va[3:]
    wb = Vb[3:]
    d = np.empty(3)
    dd = np.empty(3)
    t = np.empty(3)
    for k in range(3):
        d[k] = xb[k] + rb[k] - xa[k] - ra[k]
    _cross(wb, rb, t)
    for k in range(3):
        dd[k] = Vb[k] + t[k] - Va[k]
    _cross(wa, ra, t)
    for k in range(3):
        dd[k] -= t[k]
    u1 = np.empty(3)
    u2 = np.empty(3)
    h = np.empty(3)
    if jt == SPHERICAL or jt == REVOLUTE or jt == UNIVERSAL or jt == FIXED:
        _point_rows(0, ra, rb, wa, wb, Ga, Gb, g, phi, xa, xb)
    if jt == REVOLUTE or jt == CYLINDRICAL:
        _rot(Ra, perp_pred[j, 0], u1)
        _rot(Ra, perp_pred[j, 1], u2)
        _rot(Rb, axis_succ[j], h)
        r0 = 3 if jt == REVOLUTE else 0
        _dot_row(r0, u1, h, wa, wb, Ga, Gb, g, phi)
        _dot_row(r0 + 1, u2, h, wa, wb, Ga, Gb, g, phi)
        if jt == CYLINDRICAL:
            _dot_d_row(2, u1, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi)
            _dot_d_row(3, u2, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi)
    elif jt == UNIVERSAL:
        _rot(Ra, axis_pred[j], u1)
        _rot(Rb, axis_succ[j], h)
        _dot_row(3, u1, h, wa, wb, Ga, Gb, g, phi)
    elif jt == PRISMATIC or jt == FIXED:
        Fa = np.empty((3, 3))
        Fb = np.empty((3, 3))
        for r in range(3):
            _rot(Ra, frame_pred[j, r], Fa[r])
            _rot(Rb, frame_succ[j, r], Fb[r])
        r0 = 0 if jt == PRISMATIC else 3
        _orientation_rows(r0, Fa, Fb, wa, wb, Ga, Gb, g, phi)
        if jt == PRISMATIC:
            _rot(Ra, perp_pred[j, 0], u1)
            _rot(Ra, perp_pred[j, 1], u2)
            _dot_d_row(3, u1, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi)
            _dot_d_row(4, u2, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi)


@njit(cache=True)
def all_constraints(ca, x, R, V, phi, Ga, Gb, g):
    """Stacked constraints of every joint (rows ``c_adr[j]``), ``Ga``/``Gb`` (nc, 6)."""
    jtype, pred, succ, anchor_pred, anchor_succ, axis_pred, axis_succ, perp_pred, frame_pred, \
        frame_succ, c_adr, nc_j = ca
    nj = jtype.shape[0]
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    for j in range(nj):
        a = pred[j]
        b = succ[j]
        r = c_adr[j]
        n = nc_j[j]
        if a < 0:
            joint_constraint(ca, j, x0, R0, V0, x[b], R[b], V[b], phi[r:r + n], Ga[r:r + n],
                             Gb[r:r + n], g[r:r + n])
        else:
            joint_constraint(ca, j, x[a], R[a], V[a], x[b], R[b], V[b], phi[r:r + n],
                             Ga[r:r + n], Gb[r:r + n], g[r:r + n])


@njit(cache=True)
def violations(ca, x, R, V, acc, phi, Ga, Gb, g):
    """2-norms of the stacked position, velocity and acceleration residuals.

    ``acc`` (nb, 6) holds classical accelerations ``[a_C; alpha]``; pass NaNs to
    skip the acceleration level.
    """
    all_constraints(ca, x, R, V, phi, Ga, Gb, g)
    jtype, pred, succ = ca[0], ca[1], ca[2]
    c_adr, nc_j = ca[10], ca[11]
    sp = 0.0
    sv = 0.0
    sa = 0.0
    for j in range(jtype.shape[0]):
        a = pred[j]
        b = succ[j]
        for r in range(c_adr[j], c_adr[j] + nc_j[j]):
            sp += phi[r] * phi[r]
            vr = 0.0
            ar = g[r]
            for k in range(6):
                vr += Gb[r, k] * V[b, k]
                ar += Gb[r, k] * acc[b, k]
                if a >= 0:
                    vr += Ga[r, k] * V[a, k]
                    ar += Ga[r, k] * acc[a, k]
            sv += vr * vr
            sa += ar * ar
    return np.sqrt(sp), np.sqrt(sv), np.sqrt(sa)


def constraint_jacobian(model: Model, x, R, V=None):
    """Dense (nc, 6 nb) velocity-constraint Jacobian and the residuals.

    For analysis (rank, projections); O(nc * nb) memory.
    """
    nc, nb = model.nc, model.nb
    phi = np.zeros(nc)
    Ga = np.zeros((nc, 6))
    Gb = np.zeros((nc, 6))
    g = np.zeros(nc)
    if V is None:
        V = np.zeros((nb, 6))
    all_constraints(con_arrays(model), x, R, V, phi, Ga, Gb, g)
    Jac = np.zeros((nc, 6 * nb))
    for j in range(model.nj):
        r, n = model.c_adr[j], model.nc_j[j]
        a, b = model.pred[j], model.succ[j]
        Jac[r:r + n, 6 * b:6 * b + 6] += Gb[r:r + n]
        if a >= 0:
            Jac[r:r + n, 6 * a:6 * a + 6] += Ga[r:r + n]
    return Jac, phi, g
