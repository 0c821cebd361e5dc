"""Joint kinematics and absolute constraints against finite differences."""

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.constraints import all_constraints, con_arrays
from linkwork.engine.kinematics import (
    classical_accelerations, fk_accelerations, fk_positions, fk_velocities, kin_arrays,
    motion_subspace, qdot_from_v,
)
from linkwork.engine.model import build_model


def _state(model, rng):
    q = model.q_zero()
    # random but moderate configuration
    qd = np.zeros(model.nq)
    v = rng.normal(size=model.nv)
    qdot_from_v(kin_arrays(model), q, v, qd)
    q = q + 0.7 * qd
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _kin(model, q, v, vdot=None):
    mk = kin_arrays(model)
    nb, nj = model.nb, model.nj
    x = np.zeros((nb, 3)); R = np.zeros((nb, 3, 3)); P = np.zeros((nj, 3))
    S = np.zeros((model.nv, 6)); V = np.zeros((nb, 6)); c = np.zeros((nb, 6)); A = np.zeros((nb, 6))
    fk_positions(mk, q, x, R, P)
    motion_subspace(mk, q, R, S)
    fk_velocities(mk, x, P, S, v, V, c)
    if vdot is not None:
        fk_accelerations(mk, x, P, S, c, vdot, A)
    return x, R, P, V, A


def _flow(model, q, v, vdot, t, steps=8):
    """Integrate q' = f(q, v + s vdot) from 0 to t with RK4 (exact enough for FD)."""
    mk = kin_arrays(model)
    h = t / steps
    qd = np.zeros(model.nq)

    def f(s, qq):
        qdot_from_v(mk, qq, v + s * vdot, qd)
        return qd.copy()

    s = 0.0
    for _ in range(steps):
        k1 = f(s, q); k2 = f(s + h / 2, q + h / 2 * k1); k3 = f(s + h / 2, q + h / 2 * k2)
        k4 = f(s + h, q + h * k3)
        q = q + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        s += h
    return q, v + t * vdot


pytestmark = pytest.mark.nojit

SPECS = [gen.random_mechanism(s, 6, loops=2) for s in range(6)] + [gen.joint_zoo(), gen.ladder(2)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_velocities_and_accelerations_match_finite_differences(spec):
    model = build_model(spec)
    rng = np.random.default_rng(1)
    q, v, vdot = _state(model, rng)
    x, R, P, V, A = _kin(model, q, v, vdot)
    h = 1e-5
    qp, vp = _flow(model, q, v, vdot, h)
    qm, vm = _flow(model, q, v, vdot, -h)
    xp, Rp, _, Vp, _ = _kin(model, qp, vp)
    xm, Rm, _, Vm, _ = _kin(model, qm, vm)
    # linear velocity of the COM
    np.testing.assert_allclose(V[:, :3], (xp - xm) / (2 * h), atol=1e-8)
    # angular velocity: Rdot = ~w R
    for i in range(model.nb):
        W = ((Rp[i] - Rm[i]) / (2 * h)) @ R[i].T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        np.testing.assert_allclose(V[i, 3:], w, atol=1e-8)
    # classical accelerations
    acc = classical_accelerations(V, A)
    np.testing.assert_allclose(acc, (Vp - Vm) / (2 * h), atol=2e-7)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_constraint_derivatives_match_finite_differences(spec):
    model = build_model(spec)
    rng = np.random.default_rng(2)
    q, v, vdot = _state(model, rng)
    ca = con_arrays(model)
    nc = model.nc

    def cons(qq, vv, vd=None):
        x, R, P, V, A = _kin(model, qq, vv, vd)
        phi = np.zeros(nc); Ga = np.zeros((nc, 6)); Gb = np.zeros((nc, 6)); g = np.zeros(nc)
        all_constraints(ca, x, R, V, phi, Ga, Gb, g)
        return phi, Ga, Gb, g, V, (classical_accelerations(V, A) if vd is not None else None)

    phi, Ga, Gb, g, V, acc = cons(q, v, vdot)
    Vz = np.vstack([V, np.zeros((1, 6))])  # index -1 -> ground
    accz = np.vstack([acc, np.zeros((1, 6))])
    phidot = np.zeros(nc)
    phiddot = g.copy()
    for j in range(model.nj):
        r = slice(model.c_adr[j], model.c_adr[j] + model.nc_j[j])
        a, b = model.pred[j], model.succ[j]
        phidot[r] = Ga[r] @ Vz[a] + Gb[r] @ Vz[b]
        phiddot[r] += Ga[r] @ accz[a] + Gb[r] @ accz[b]
    h = 1e-5
    qp, vp = _flow(model, q, v, vdot, h)
    qm, vm = _flow(model, q, v, vdot, -h)
    phip, Gap, Gbp, _, Vp, _ = cons(qp, vp)
    phim, Gam, Gbm, _, Vm, _ = cons(qm, vm)
    np.testing.assert_allclose(phidot, (phip - phim) / (2 * h), atol=1e-8)
    # second derivative from the change of phidot
    def pdot(Ga_, Gb_, V_):
        Vz_ = np.vstack([V_, np.zeros((1, 6))])
        out = np.zeros(nc)
        for j in range(model.nj):
            r = slice(model.c_adr[j], model.c_adr[j] + model.nc_j[j])
            out[r] = Ga_[r] @ Vz_[model.pred[j]] + Gb_[r] @ Vz_[model.succ[j]]
        return out
    np.testing.assert_allclose(phiddot, (pdot(Gap, Gbp, Vp) - pdot(Gam, Gbm, Vm)) / (2 * h), atol=2e-7)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_constraint_wrench_rates_match_finite_differences(spec):
    """d/dt (G^T lam) at fixed lam, per joint and side, against central differences."""
    from linkwork.engine.constraints import joint_constraint, joint_constraint_rate

    model = build_model(spec)
    rng = np.random.default_rng(5)
    q, v, vdot = _state(model, rng)
    ca = con_arrays(model)

    def wrenches(qq, vv, j, lam):
        x, R, P, V, A = _kin(model, qq, vv)
        n = model.nc_j[j]
        phi = np.zeros(n); Ga = np.zeros((n, 6)); Gb = np.zeros((n, 6)); g = np.zeros(n)
        a, b = model.pred[j], model.succ[j]
        xa, Ra, Va = (np.zeros(3), np.eye(3), np.zeros(6)) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi, Ga, Gb, g)
        Wa = np.zeros(6); Wb = np.zeros(6)
        joint_constraint_rate(ca, j, xa, Ra, Va, x[b], R[b], V[b], lam, Wa, Wb)
        return Ga.T @ lam, Gb.T @ lam, Wa, Wb

    h = 1e-5
    qp, vp = _flow(model, q, v, vdot, h)
    qm, vm = _flow(model, q, v, vdot, -h)
    for j in range(model.nj):
        lam = rng.normal(size=model.nc_j[j])
        _, _, Wa, Wb = wrenches(q, v, j, lam)
        ap, bp, _, _ = wrenches(qp, vp, j, lam)
        am, bm, _, _ = wrenches(qm, vm, j, lam)
        np.testing.assert_allclose(Wa, (ap - am) / (2 * h), atol=1e-7)
        np.testing.assert_allclose(Wb, (bp - bm) / (2 * h), atol=1e-7)


def _rotation(rng):
    Q, Rr = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q * np.sign(np.diag(Rr))


@pytest.mark.parametrize("spec", SPECS + [gen.chain(5, joint="spherical")], ids=lambda s: s.name)
def test_the_violation_norms_are_the_stacked_rows_norms(spec):
    """constraints.violations sums a spherical or revolute joint's residuals as it forms
    them: the norms must be those of every joint's rows from joint_constraint applied to
    the twists and accelerations, on states that satisfy no joint (random poses, twists,
    accelerations: residuals of order one), to round-off."""
    from linkwork.engine.constraints import violations

    model = build_model(spec)
    rng = np.random.default_rng(7)
    nb, nc = model.nb, model.nc
    ca = con_arrays(model)
    for _ in range(5):
        x = rng.normal(size=(nb, 3))
        R = np.array([_rotation(rng) for _ in range(nb)])
        V, acc = rng.normal(size=(nb, 6)), rng.normal(size=(nb, 6))
        phi, Ga, Gb, g = np.zeros(nc), np.zeros((nc, 6)), np.zeros((nc, 6)), np.zeros(nc)
        all_constraints(ca, x, R, V, phi, Ga, Gb, g)
        vel, accel = np.zeros(nc), g.copy()
        for j in range(model.nj):
            rows = slice(model.c_adr[j], model.c_adr[j] + model.nc_j[j])
            a, b = model.pred[j], model.succ[j]
            vel[rows] += Gb[rows] @ V[b]
            accel[rows] += Gb[rows] @ acc[b]
            if a >= 0:
                vel[rows] += Ga[rows] @ V[a]
                accel[rows] += Ga[rows] @ acc[a]
        want = np.array([np.linalg.norm(phi), np.linalg.norm(vel), np.linalg.norm(accel)])
        got = np.array(violations(ca, x, R, V, acc, np.zeros(nc), np.zeros((nc, 6)), np.zeros((nc, 6)),
                                  np.zeros(nc)))
        assert want.min() > 0.1
        assert np.abs(got - want).max() <= 1e-13 * want.max()
