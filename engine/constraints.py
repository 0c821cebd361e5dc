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

Gear couplings are joint-space constraints: :func:`coupling_rows` (tree
coordinates) and :func:`coupling_twist_rows` (body twists) at the end of this
module, :func:`coupling_violations` for the ``violation.*`` columns.
"""

from typing import NamedTuple

import numpy as np
from numba import njit

from .forces import joint_acceleration, joint_rate
from .model import CYLINDRICAL, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL, Model


class ConArrays(NamedTuple):
    """The model arrays :func:`joint_constraint` reads (:class:`~linkwork.engine.model.Model`
    says what each holds)."""

    jtype: np.ndarray
    pred: np.ndarray
    succ: np.ndarray
    anchor_pred: np.ndarray
    anchor_succ: np.ndarray
    axis_pred: np.ndarray
    axis_succ: np.ndarray
    perp_pred: np.ndarray
    frame_pred: np.ndarray
    frame_succ: np.ndarray
    c_adr: np.ndarray
    nc_j: np.ndarray


def con_arrays(model: Model) -> ConArrays:
    """The model arrays :func:`joint_constraint` reads."""
    return ConArrays(
        model.jtype, model.pred, model.succ, model.anchor_pred, model.anchor_succ,
        model.axis_pred, model.axis_succ, model.perp_pred, model.frame_pred, model.frame_succ,
        model.c_adr, model.nc_j,
    )


@njit(cache=True, nogil=True, _nrt=True)
def _rotv(R, s):
    return (R[0, 0] * s[0] + R[0, 1] * s[1] + R[0, 2] * s[2],
            R[1, 0] * s[0] + R[1, 1] * s[1] + R[1, 2] * s[2],
            R[2, 0] * s[0] + R[2, 1] * s[1] + R[2, 2] * s[2])


@njit(cache=True, nogil=True, _nrt=True)
def _cr(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, nogil=True, _nrt=True)
def _dt(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, nogil=True, _nrt=True)
def _wwr(w, r):
    """w x (w x r)."""
    return _cr(w, _cr(w, r))


@njit(cache=True, nogil=True, _nrt=True)
def _zero_row(G, row):
    for c in range(6):
        G[row, c] = 0.0


@njit(cache=True, nogil=True, _nrt=True)
def _point_rows(row, xa, xb, ra, rb, wa, wb, Ga, Gb, g, phi):
    """Rows row..row+2: d = (x_b + r_b) - (x_a + r_a)."""
    qb = _wwr(wb, rb)
    qa = _wwr(wa, ra)
    for k in range(3):
        phi[row + k] = xb[k] + rb[k] - xa[k] - ra[k]
        _zero_row(Ga, row + k)
        _zero_row(Gb, row + k)
        Ga[row + k, k] = -1.0
        Gb[row + k, k] = 1.0
        g[row + k] = qb[k] - qa[k]
    # d/dt: v_b + w_b x r_b - v_a - w_a x r_a,  w x r = -~r w
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


@njit(cache=True, nogil=True, _nrt=True)
def _dot_row(row, u, w, wa, wb, Ga, Gb, g, phi):
    """Row: u . w with u carried by a and w carried by b."""
    phi[row] = _dt(u, w)
    uxw = _cr(u, w)
    _zero_row(Ga, row)
    _zero_row(Gb, row)
    for k in range(3):
        Ga[row, 3 + k] = uxw[k]
        Gb[row, 3 + k] = -uxw[k]
    # g = (wa x (wa x u)).w + 2 (wa x u).(wb x w) + u.(wb x (wb x w))
    t1 = _cr(wa, u)
    g[row] = _dt(_cr(wa, t1), w) + 2.0 * _dt(t1, _cr(wb, w)) + _dt(u, _wwr(wb, w))


@njit(cache=True, nogil=True, _nrt=True)
def _dot_d_row(row, u, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi):
    """Row: u . d with u carried by a, d = (x_b + r_b) - (x_a + r_a), dd = d_dot."""
    phi[row] = _dt(u, d)
    # d/dt = u.v_b + w_b.(r_b x u) - u.v_a + w_a.(u x (d + r_a))
    t2 = _cr(u, (d[0] + ra[0], d[1] + ra[1], d[2] + ra[2]))
    t3 = _cr(rb, u)
    for k in range(3):
        Ga[row, k] = -u[k]
        Gb[row, k] = u[k]
        Ga[row, 3 + k] = t2[k]
        Gb[row, 3 + k] = t3[k]
    # g = (wa x (wa x u)).d + 2 (wa x u).dd + u.(wb x (wb x rb) - wa x (wa x ra))
    t1 = _cr(wa, u)
    qb = _wwr(wb, rb)
    qa = _wwr(wa, ra)
    g[row] = _dt(_cr(wa, t1), d) + 2.0 * _dt(t1, dd) + _dt(u, (qb[0] - qa[0], qb[1] - qa[1], qb[2] - qa[2]))


@njit(cache=True, nogil=True, _nrt=True)
def _separation(xa, ra, Va, wa, xb, rb, Vb, wb):
    """Vector ``d`` from the pred's joint point to the succ's, and its rate ``dd``."""
    d = (xb[0] + rb[0] - xa[0] - ra[0], xb[1] + rb[1] - xa[1] - ra[1], xb[2] + rb[2] - xa[2] - ra[2])
    tb = _cr(wb, rb)
    ta = _cr(wa, ra)
    dd = (Vb[0] + tb[0] - Va[0] - ta[0], Vb[1] + tb[1] - Va[1] - ta[1], Vb[2] + tb[2] - Va[2] - ta[2])
    return d, dd


@njit(cache=True, nogil=True, _nrt=True)
def joint_constraint(ca, j, xa, Ra, Va, xb, Rb, Vb, phi, Ga, Gb, g):
    """Residual ``phi`` (nc_j), Jacobians ``Ga``, ``Gb`` (nc_j, 6) w.r.t. the twists
    ``[v_C; w]`` of pred and succ, and the quadratic term ``g`` of joint ``j``.

    Rows are written from 0; the caller offsets them.  Allocation-free.
    """
    jtype, pred, succ, anchor_pred, anchor_succ, axis_pred, axis_succ, perp_pred, frame_pred, \
        frame_succ, c_adr, nc_j = ca
    jt = jtype[j]
    ra = _rotv(Ra, anchor_pred[j])
    rb = _rotv(Rb, anchor_succ[j])
    wa = (Va[3], Va[4], Va[5])
    wb = (Vb[3], Vb[4], Vb[5])
    if jt == SPHERICAL or jt == REVOLUTE or jt == UNIVERSAL or jt == FIXED:
        _point_rows(0, xa, xb, ra, rb, wa, wb, Ga, Gb, g, phi)
    if jt == REVOLUTE or jt == CYLINDRICAL:
        u1 = _rotv(Ra, perp_pred[j, 0])
        u2 = _rotv(Ra, perp_pred[j, 1])
        h = _rotv(Rb, axis_succ[j])
        r0 = 3 if jt == REVOLUTE else 0
        _dot_row(r0, u1, h, wa, wb, Ga, Gb, g, phi)
        _dot_row(r0 + 1, u2, h, wa, wb, Ga, Gb, g, phi)
    elif jt == UNIVERSAL:
        _dot_row(np.int64(3), _rotv(Ra, axis_pred[j]), _rotv(Rb, axis_succ[j]), wa, wb, Ga, Gb, g, phi)
    elif jt == PRISMATIC or jt == FIXED:
        r0 = 0 if jt == PRISMATIC else 3
        _dot_row(r0, _rotv(Ra, frame_pred[j, 1]), _rotv(Rb, frame_succ[j, 2]), wa, wb, Ga, Gb, g, phi)
        _dot_row(r0 + 1, _rotv(Ra, frame_pred[j, 2]), _rotv(Rb, frame_succ[j, 0]), wa, wb, Ga, Gb, g, phi)
        _dot_row(r0 + 2, _rotv(Ra, frame_pred[j, 0]), _rotv(Rb, frame_succ[j, 1]), wa, wb, Ga, Gb, g, phi)
    if jt == PRISMATIC or jt == CYLINDRICAL:
        d, dd = _separation(xa, ra, Va, wa, xb, rb, Vb, wb)
        u1 = _rotv(Ra, perp_pred[j, 0])
        u2 = _rotv(Ra, perp_pred[j, 1])
        r0 = 3 if jt == PRISMATIC else 2
        _dot_d_row(r0, u1, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi)
        _dot_d_row(r0 + 1, u2, d, dd, ra, rb, wa, wb, Ga, Gb, g, phi)


@njit(cache=True, nogil=True, _nrt=True)
def _add3(W, k0, v, sgn):
    # k0 comes as an int64 (np.int64(3), not 3): a literal argument compiles a copy per value
    W[k0] += sgn * v[0]
    W[k0 + 1] += sgn * v[1]
    W[k0 + 2] += sgn * v[2]


@njit(cache=True, nogil=True, _nrt=True)
def _dot_row_rate(u, w, wa, wb, lam, Wa, Wb):
    """d/dt of the wrenches of a ``u.w`` row, G_a^T lam = [0; (u x w) lam], at fixed lam."""
    ud = _cr(wa, u)
    wd = _cr(wb, w)
    t1 = _cr(ud, w)
    t2 = _cr(u, wd)
    v = (lam * (t1[0] + t2[0]), lam * (t1[1] + t2[1]), lam * (t1[2] + t2[2]))
    _add3(Wa, np.int64(3), v, 1.0)
    _add3(Wb, np.int64(3), v, -1.0)


@njit(cache=True, nogil=True, _nrt=True)
def _dot_d_row_rate(u, d, dd, ra, rb, wa, wb, lam, Wa, Wb):
    """d/dt of the wrenches of a ``u.d`` row at fixed lam:
    G_b^T lam = [u; r_b x u] lam,  G_a^T lam = [-u; u x (d + r_a)] lam."""
    ud = _cr(wa, u)
    rbd = _cr(wb, rb)
    rad = _cr(wa, ra)
    _add3(Wb, np.int64(0), (lam * ud[0], lam * ud[1], lam * ud[2]), 1.0)
    t1 = _cr(rbd, u)
    t2 = _cr(rb, ud)
    _add3(Wb, np.int64(3), (lam * (t1[0] + t2[0]), lam * (t1[1] + t2[1]), lam * (t1[2] + t2[2])), 1.0)
    _add3(Wa, np.int64(0), (lam * ud[0], lam * ud[1], lam * ud[2]), -1.0)
    t3 = _cr(ud, (d[0] + ra[0], d[1] + ra[1], d[2] + ra[2]))
    t4 = _cr(u, (dd[0] + rad[0], dd[1] + rad[1], dd[2] + rad[2]))
    _add3(Wa, np.int64(3), (lam * (t3[0] + t4[0]), lam * (t3[1] + t4[1]), lam * (t3[2] + t4[2])), 1.0)


@njit(cache=True, nogil=True, _nrt=True)
def joint_constraint_rate(ca, j, xa, Ra, Va, xb, Rb, Vb, lam, Wa, Wb):
    """Time derivative, at fixed multipliers ``lam`` (nc_j), of the wrenches
    ``G_a^T lam`` and ``G_b^T lam`` (about each COM) of joint ``j``'s rows as laid
    out by :func:`joint_constraint`.  Adds into ``Wa``, ``Wb`` (6 each).  Used by
    the Hamiltonian formulation's momentum derivatives (docs/derivations.md, section 8)."""
    jtype, pred, succ, anchor_pred, anchor_succ, axis_pred, axis_succ, perp_pred, frame_pred, \
        frame_succ, c_adr, nc_j = ca
    jt = jtype[j]
    ra = _rotv(Ra, anchor_pred[j])
    rb = _rotv(Rb, anchor_succ[j])
    wa = (Va[3], Va[4], Va[5])
    wb = (Vb[3], Vb[4], Vb[5])
    if jt == SPHERICAL or jt == REVOLUTE or jt == UNIVERSAL or jt == FIXED:
        # G_b^T s = [s; r_b x s] -> [0; (w_b x r_b) x s];  G_a^T s = [-s; -(r_a x s)]
        s3 = (lam[0], lam[1], lam[2])
        _add3(Wb, np.int64(3), _cr(_cr(wb, rb), s3), 1.0)
        _add3(Wa, np.int64(3), _cr(_cr(wa, ra), s3), -1.0)
    if jt == REVOLUTE or jt == CYLINDRICAL:
        u1 = _rotv(Ra, perp_pred[j, 0])
        u2 = _rotv(Ra, perp_pred[j, 1])
        h = _rotv(Rb, axis_succ[j])
        r0 = 3 if jt == REVOLUTE else 0
        _dot_row_rate(u1, h, wa, wb, lam[r0], Wa, Wb)
        _dot_row_rate(u2, h, wa, wb, lam[r0 + 1], Wa, Wb)
    elif jt == UNIVERSAL:
        _dot_row_rate(_rotv(Ra, axis_pred[j]), _rotv(Rb, axis_succ[j]), wa, wb, lam[3], Wa, Wb)
    elif jt == PRISMATIC or jt == FIXED:
        r0 = 0 if jt == PRISMATIC else 3
        _dot_row_rate(_rotv(Ra, frame_pred[j, 1]), _rotv(Rb, frame_succ[j, 2]), wa, wb, lam[r0], Wa, Wb)
        _dot_row_rate(_rotv(Ra, frame_pred[j, 2]), _rotv(Rb, frame_succ[j, 0]), wa, wb, lam[r0 + 1], Wa, Wb)
        _dot_row_rate(_rotv(Ra, frame_pred[j, 0]), _rotv(Rb, frame_succ[j, 1]), wa, wb, lam[r0 + 2], Wa, Wb)
    if jt == PRISMATIC or jt == CYLINDRICAL:
        d, dd = _separation(xa, ra, Va, wa, xb, rb, Vb, wb)
        u1 = _rotv(Ra, perp_pred[j, 0])
        u2 = _rotv(Ra, perp_pred[j, 1])
        r0 = 3 if jt == PRISMATIC else 2
        _dot_d_row_rate(u1, d, dd, ra, rb, wa, wb, lam[r0], Wa, Wb)
        _dot_d_row_rate(u2, d, dd, ra, rb, wa, wb, lam[r0 + 1], Wa, Wb)


@njit(cache=True, nogil=True, _nrt=True)
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
        xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[r:r + n], Ga[r:r + n], Gb[r:r + n],
                         g[r:r + n])


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _anchor_in_world(R, i, anchors, j):
    """``R[i] anchors[j]``; the anchor itself where ``i`` is ground (-1)."""
    if i < 0:
        return anchors[j, 0], anchors[j, 1], anchors[j, 2]
    return (R[i, 0, 0] * anchors[j, 0] + R[i, 0, 1] * anchors[j, 1] + R[i, 0, 2] * anchors[j, 2],
            R[i, 1, 0] * anchors[j, 0] + R[i, 1, 1] * anchors[j, 1] + R[i, 1, 2] * anchors[j, 2],
            R[i, 2, 0] * anchors[j, 0] + R[i, 2, 1] * anchors[j, 1] + R[i, 2, 2] * anchors[j, 2])


@njit(cache=True, nogil=True, _nrt=False)
def _point_sums(anchor_a, anchor_b, j, a, b, x, R, V, acc):
    """The sums of squares of joint ``j``'s point coincidence residuals -- ``d = (x_b + r_b)
    - (x_a + r_a)``, its rate and its second derivative, what :func:`_point_rows`' rows
    give applied to the twists and the classical accelerations -- with no rows formed.
    ``a`` may be ground (-1)."""
    rb = _anchor_in_world(R, b, anchor_b, j)
    ra = _anchor_in_world(R, a, anchor_a, j)
    sp = 0.0
    sv = 0.0
    sa = 0.0
    wb = (V[b, 3], V[b, 4], V[b, 5])
    alb = (acc[b, 3], acc[b, 4], acc[b, 5])
    vb, qb, ab = _cr(wb, rb), _wwr(wb, rb), _cr(alb, rb)
    if a >= 0:
        wa = (V[a, 3], V[a, 4], V[a, 5])
        ala = (acc[a, 3], acc[a, 4], acc[a, 5])
        va, qa, aa = _cr(wa, ra), _wwr(wa, ra), _cr(ala, ra)
    else:
        va = qa = aa = (0.0, 0.0, 0.0)
    for k in range(3):
        xa, Va, Aa = (x[a, k], V[a, k], acc[a, k]) if a >= 0 else (0.0, 0.0, 0.0)
        d = x[b, k] + rb[k] - xa - ra[k]
        dv = V[b, k] + vb[k] - Va - va[k]
        da = acc[b, k] + ab[k] + qb[k] - Aa - aa[k] - qa[k]
        sp += d * d
        sv += dv * dv
        sa += da * da
    return sp, sv, sa


@njit(cache=True, nogil=True, _nrt=False)
def _dot_sums(u, w, wa, wb, ala, alb):
    """A ``u . w`` row (``u`` carried by the predecessor, ``w`` by the successor) at the
    three levels, as :func:`_dot_row` forms it applied to the angular velocities and
    accelerations: (residual, rate, second derivative)."""
    uxw = _cr(u, w)
    t1 = _cr(wa, u)
    g = _dt(_cr(wa, t1), w) + 2.0 * _dt(t1, _cr(wb, w)) + _dt(u, _wwr(wb, w))
    return _dt(u, w), _dt(uxw, wa) - _dt(uxw, wb), g + _dt(uxw, ala) - _dt(uxw, alb)


@njit(cache=True, nogil=True, _nrt=True)
def violations(ca, x, R, V, acc, phi, Ga, Gb, g):
    """2-norms of the stacked position, velocity and acceleration residuals.

    ``acc`` (nb, 6) holds classical accelerations ``[a_C; alpha]``; pass NaNs to
    skip the acceleration level.  A spherical joint's three rows and a revolute joint's
    five are summed as they are computed (:func:`_point_sums`, :func:`_dot_sums`: a long
    spherical chain spent most of an output row forming them); every other joint's rows
    are :func:`joint_constraint`'s, in ``phi``, ``Ga``, ``Gb``, ``g``.
    """
    jtype, pred, succ = ca.jtype, ca.pred, ca.succ
    c_adr, nc_j = ca.c_adr, ca.nc_j
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    sp = 0.0
    sv = 0.0
    sa = 0.0
    for j in range(jtype.shape[0]):
        a = pred[j]
        b = succ[j]
        if jtype[j] == SPHERICAL or jtype[j] == REVOLUTE:
            p2, v2, a2 = _point_sums(ca.anchor_pred, ca.anchor_succ, j, a, b, x, R, V, acc)
            sp += p2
            sv += v2
            sa += a2
            if jtype[j] == REVOLUTE:  # and the axis kept normal to the predecessor's two normals
                h = _anchor_in_world(R, b, ca.axis_succ, j)
                wb = (V[b, 3], V[b, 4], V[b, 5])
                alb = (acc[b, 3], acc[b, 4], acc[b, 5])
                wa = (V[a, 3], V[a, 4], V[a, 5]) if a >= 0 else (0.0, 0.0, 0.0)
                ala = (acc[a, 3], acc[a, 4], acc[a, 5]) if a >= 0 else (0.0, 0.0, 0.0)
                for c in range(2):
                    u = _anchor_in_world(R, a, ca.perp_pred[:, c], j)
                    p, v, d = _dot_sums(u, h, wa, wb, ala, alb)
                    sp += p * p
                    sv += v * v
                    sa += d * d
            continue
        r0, n = c_adr[j], nc_j[j]
        xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[r0:r0 + n], Ga[r0:r0 + n], Gb[r0:r0 + n],
                         g[r0:r0 + n])
        for r in range(r0, r0 + n):
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


# ---------------------------------------------------------------------- couplings
#
# A gear pair (docs/file-format.md, "Couplings") between one-freedom tree joints d
# (driver) and n (driven):  Phi_g = (q_d - q_d0) - mu (q_n - q_n0) = 0.  In tree
# coordinates (revolute and prismatic joints have qdot = v) its velocity row is
# constant, +1 at v_adr[d] and -mu at v_adr[n], so Phi_g_ddot = K_g vdot and
# gamma_g = 0.  Every formulation that honours gears takes its rows from here.


def coupling_rows(model: Model, q: np.ndarray):
    """Gear rows in tree coordinates: ``(phi, K, gamma)``.

    ``q`` (nq,) tree coordinates.  ``phi`` (ng,) the residuals
    ``(q_d - q_d0) - mu (q_n - q_n0)``; ``K`` (ng, nv) the velocity Jacobian (``+1`` at
    the driver's velocity index, ``-mu`` at the driven's; constant); ``gamma`` (ng,)
    the right-hand side of ``K vdot = gamma`` (zero: K does not depend on q).
    The rows are in ``model.spec.couplings`` order.
    """
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,):
        raise ValueError(f"coupling_rows: q must have shape ({model.nq},), got {q.shape}")
    ng = model.ng
    phi = np.zeros(ng)
    K = np.zeros((ng, model.nv))
    for i in range(ng):
        d, n, mu = model.g_driver[i], model.g_driven[i], model.g_ratio[i]
        phi[i] = (q[model.q_adr[d]] - model.g_q0[i, 0]) - mu * (q[model.q_adr[n]] - model.g_q0[i, 1])
        K[i, model.v_adr[d]] += 1.0
        K[i, model.v_adr[n]] -= mu
    return phi, K, np.zeros(ng)


def coupling_twist_rows(model: Model, x: np.ndarray, R: np.ndarray, P: np.ndarray) -> np.ndarray:
    """(ng, 6 nb) gear rows in the body twists ``[v_C; w]``: ``qdot_d - mu qdot_n`` with
    each joint rate written ``S_j^T (V_succ(P_j) - V_pred(P_j))`` (equal to
    :func:`~engine.forces.joint_rate` on the joint constraints).  For the initial
    velocity projection and the absolute-coordinate counts."""
    A = np.zeros((model.ng, 6 * model.nb))
    for i in range(model.ng):
        _add_rate_row(model, model.g_driver[i], x, R, P, 1.0, A[i])
        _add_rate_row(model, model.g_driven[i], x, R, P, -model.g_ratio[i], A[i])
    return A


def driver_twist_rows(model: Model, x: np.ndarray, R: np.ndarray, P: np.ndarray) -> np.ndarray:
    """(nd, 6 nb) driver rows in the body twists: each driven joint's rate ``qdot_J``
    (a gear row of the joint alone, :func:`coupling_twist_rows`).  For the counts."""
    A = np.zeros((model.nd, 6 * model.nb))
    for i in range(model.nd):
        _add_rate_row(model, model.d_joint[i], x, R, P, 1.0, A[i])
    return A


def _add_rate_row(model: Model, j: int, x, R, P, scale: float, row: np.ndarray) -> None:
    """Add ``scale`` times one-freedom joint ``j``'s rate ``qdot_j`` in the body twists
    ``[v_C; w]`` to ``row`` (6 nb): ``S^T [v + w x l; w]`` of the child less the parent's,
    ``l = P_j - x``, i.e. ``v.S_lin + w.(S_ang + l x S_lin)``."""
    a, b = model.pred[j], model.succ[j]
    ax = (np.eye(3) if a < 0 else R[a]) @ model.axis_pred[j]
    S = np.r_[np.zeros(3), ax] if model.jtype[j] == REVOLUTE else np.r_[ax, np.zeros(3)]
    for body, sgn in ((b, 1.0), (a, -1.0)):
        if body < 0:
            continue
        l = P[j] - x[body]
        row[6 * body:6 * body + 3] += sgn * scale * S[:3]
        row[6 * body + 3:6 * body + 6] += sgn * scale * (S[3:] + np.cross(l, S[:3]))


@njit(cache=True, nogil=True, _nrt=True)
def coupling_violations(fa, g_driver, g_driven, g_ratio, g_q0, jq, x, R, V, acc):
    """Sums of squares of the gear residuals at the position, velocity and acceleration
    levels, from the body states (``jq``: every one-freedom joint's coordinate from
    the poses, unwrapped; ``acc`` classical accelerations, NaN to skip)."""
    sp = 0.0
    sv = 0.0
    sa = 0.0
    for i in range(g_driver.shape[0]):
        d = g_driver[i]
        n = g_driven[i]
        mu = g_ratio[i]
        p = (jq[d] - g_q0[i, 0]) - mu * (jq[n] - g_q0[i, 1])
        v = joint_rate(fa, d, x, R, V) - mu * joint_rate(fa, n, x, R, V)
        a = joint_acceleration(fa, d, x, R, V, acc) - mu * joint_acceleration(fa, n, x, R, V, acc)
        sp += p * p
        sv += v * v
        sa += a * a
    return sp, sv, sa
