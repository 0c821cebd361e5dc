"""Formulation ``index3`` (paper 000; docs/index3.md).

* the tree solve (assembly-disassembly, paper eqs. 24-69) against the dense KKT
  solve of the same linear systems (``linear="dense"``, the oracle);
* the absolute-coordinate Jacobian and the geometric stiffness against finite
  differences;
* initial accelerations and reactions against the ``dense`` formulation;
* trajectories of every shipped example against ``dense`` and the order of
  convergence of the trapezoidal rule;
* paper 000's four-bar through its singular configuration, and the CLI.
"""

import subprocess
import sys

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import SimulationError
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.formulations import index3_kernels as K, index3_newton as N
from linkwork.engine.formulations.index3 import Index3Formulation
from linkwork.engine.mechfile import save, spec_from_dict
from linkwork.engine.model import F_JOINT_SPRING, F_JOINT_TORQUE, F_SPRING, build_model, load_model
from linkwork.engine.results import columns, read_csv
from linkwork.engine.settings import default_penalty
from linkwork.engine.simulation import Settings, Simulation
from linkwork.engine.assembly import build_assembly_tree, merge_operations

from ..conftest import UNGEARED, example_path, run_to_end
from .test_trajectories import reference as dense_reference


def _form(model, linear="tree", **kw):
    s = Simulation(model, Settings(formulation="index3", **kw)).settings
    return Index3Formulation(model, s, linear=linear)


def _positions(cols, rows, model):
    idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    return rows[:, idx]


RANDOM = ([("tree", s, dict(n_bodies=5 + s % 4, loops=0)) for s in range(4)]
          + [("loop", s, dict(n_bodies=7, loops=1)) for s in range(4)]
          + [("coupled", s, dict(n_bodies=8, loops=2)) for s in range(3)])


def _random_model(kind, seed, kw):
    return build_model(gen.random_mechanism(1000 * (kind == "coupled") + 500 * (kind == "loop") + seed, **kw))


# ------------------------------------------------------------------ registry and settings


def test_registered_with_trapezoidal_rule():
    assert REGISTRY["index3"] is Index3Formulation
    sim = Simulation(load_model(example_path("parallelogram-fourbar")), Settings(formulation="index3"))
    assert sim.settings.integrator == "trapezoidal"
    assert Index3Formulation.kind == "stepper"
    assert set(Index3Formulation.parameters) == {"penalty", "newton_iters", "newton_tol", "tangent_hold",
                                                 "geometric_stiffness", "exact_projections"}


def test_the_default_penalty_keeps_the_default_steps_effective_penalty():
    """Unnamed, the penalty is paper 000's 1e9 at the default step 0.01 s and above, and
    below it whatever keeps alpha dt^2 / 4 (what the Newton iterations see) at its value
    there; a named penalty is the run's at any step."""
    assert Settings().index3_penalty == 1e9 and Settings(dt=0.05).index3_penalty == 1e9
    for dt in (5e-3, 1e-3, 1e-4):
        assert Settings(dt=dt).index3_penalty * dt**2 / 4 == pytest.approx(1e9 * 0.01**2 / 4, rel=1e-12)
    assert Settings(dt=1e-4, penalty=1e9).index3_penalty == 1e9
    assert Settings(dt=0.0).index3_penalty == 1e9  # a step refused elsewhere: no division by zero
    model = load_model(example_path("parallelogram-fourbar"))
    assert Simulation(model, Settings(formulation="index3", dt=1e-3)).formulation.alpha == pytest.approx(1e11)


def test_the_sub_steps_penalty_follows_the_same_rule():
    """The monitor's sub-steps of an unnamed penalty's run keep its effective penalty too;
    a named penalty stays as named, and so does the run's penalty with the penalised
    projections, which solve with the Newton's matrices and the run's penalty."""
    model = load_model(example_path("parallelogram-fourbar"))
    auto = Simulation(model, Settings(formulation="index3")).formulation
    named = Simulation(model, Settings(formulation="index3", penalty=1e9)).formulation
    penalised = Simulation(model, Settings(formulation="index3", dt=1e-3, exact_projections=False)).formulation
    for h in (0.01, 0.01 / 8, 0.01 / 32):
        assert auto.penalty_at(h) == default_penalty(h)
        assert named.penalty_at(h) == 1e9
        assert penalised.penalty_at(h / 10) == penalised.alpha == default_penalty(1e-3)
    assert auto.penalty_at(0.01 / 32) * (0.01 / 32) ** 2 / 4 == pytest.approx(2.5e4, rel=1e-12)


@pytest.mark.parametrize("name", ["fivebar-redundant", "chain-6-universal-spatial"])
def test_refined_runs_converge_their_constraints(name):
    """Where the monitor refines the step (these two to 8 and 32 sub-steps at the default
    step), the Newton iterations close the constraints to round-off: with the run's
    penalty kept at the sub-steps, whose effective penalty is then 64 to 1024 times
    weaker, they stop 1.2e-8 and 2.2e-8 off (docs/index3.md, "The default follows the step")."""
    sim = Simulation(load_model(example_path(name)), Settings(formulation="index3", t_end=10.0))
    _, err = run_to_end(sim)
    assert err is None
    assert sim.refinement.base >= 3  # the run did take sub-steps
    assert sim.formulation.max_violation < 1e-10


# ------------------------------------------------------------------ Jacobians


def _phi_of(f, q):
    nb = q.shape[0]
    z = np.zeros((nb, 7))
    f._kinematics(q, z, z)
    f._rows()
    return f.rows.phi.copy(), f.rows.G7.copy()


def _central_difference(fn, q, i, c, h=1e-6):
    """d fn(q) / d q[i, c] by central differences."""
    qp, qm = q.copy(), q.copy()
    qp[i, c] += h
    qm[i, c] -= h
    return (fn(qp) - fn(qm)) / (2 * h)


@pytest.mark.parametrize("name", ["joint-zoo", "slider-crank", "fivebar-redundant"])
def test_absolute_jacobian_is_derivative_of_constraints(name):
    """Phi_q = [G_lin, 2 G_ang E(p)] equals the finite-difference derivative of Phi(q)."""
    model = load_model(example_path(name))
    f = _form(model)
    y = f.initial_state()
    rng = np.random.default_rng(1)
    q = f._split(y)[0].copy()
    q[:, :3] += rng.normal(scale=0.1, size=(model.nb, 3))
    q[:, 3:] += rng.normal(scale=0.2, size=(model.nb, 4))
    q[:, 3:] /= np.linalg.norm(q[:, 3:], axis=1)[:, None]
    phi0, G7 = _phi_of(f, q)
    for i in range(model.nb):
        for c in range(7):
            d = _central_difference(lambda qq: _phi_of(f, qq)[0], q, i, c)
            an = np.zeros_like(d)
            for j in range(model.nj):
                r, n = f.row_adr[j], f.lay.ix.rows[j]
                if model.pred[j] == i:
                    an[r:r + n] += G7[0, r:r + n, c]
                if model.succ[j] == i:
                    an[r:r + n] += G7[1, r:r + n, c]
            assert np.abs(d - an).max() < 1e-7, (i, c)


def _element_lengths(f, q):
    """Each stiffness element's length (spring) or joint coordinate at positions q."""
    from linkwork.engine.forces import point_and_velocity, joint_coordinate

    m = f.model
    z = np.zeros_like(q)
    f._kinematics(q, z, z)
    out = []
    for e in f.s_elem:
        if m.f_type[e] == F_JOINT_SPRING:
            out.append(joint_coordinate(f.fa, m.f_joint[e], f.body.x, f.body.R, 0.0))
            continue
        p = [np.empty(3), np.empty(3)]
        for w in range(2):
            point_and_velocity(f.body.x, f.body.R, f.body.V, m.f_body[e, w], m.f_point[e, w], p[w], np.empty(3))
        out.append(np.linalg.norm(p[1] - p[0]))
    return np.array(out)


@pytest.mark.parametrize("name", ["joint-zoo", "slider-crank"])
def test_stiffness_rows_are_derivatives_of_element_lengths(name):
    """The force elements' tangent rows (springs, revolute and prismatic joint springs)
    are sqrt(k_eff / alpha) times the finite-difference derivative of their length, at a
    state reached by simulation (a revolute coordinate's derivative is the axial angular
    velocity on the joint's constraint manifold only)."""
    model = load_model(example_path(name))
    f = _form(model)
    assert len(f.s_elem) == len(model.f_type[model.f_type != F_JOINT_TORQUE])
    dt = 1e-3
    q = f._split(_steps(_form(model), 50, dt)[-1])[0].copy()
    z = np.zeros_like(q)
    f._kinematics(q, z, z)
    f.lay.G[:] = 0.0
    f._stiffness_rows(dt)
    k, c = model.f_params[f.s_elem, 0], model.f_params[f.s_elem, 1]
    scale = np.sqrt((k + 2 * c / dt) / f.penalty_at(dt))  # the penalty of this step, not the run's
    for i in range(model.nb):
        for col in range(7):
            d = _central_difference(lambda qq: _element_lengths(f, qq), q, i, col) * scale
            an = np.zeros_like(d)
            for s, r in enumerate(f.s_row):
                if f.row_pred[model.nj + s] == i:
                    an[s] += f.lay.G[0, r, col]
                if f.row_succ[model.nj + s] == i:
                    an[s] += f.lay.G[1, r, col]
            assert np.abs(d - an).max() < 1e-7 * scale.max(), (i, col)


def test_spring_rows_give_the_full_translational_stiffness():
    """A stretched spring's three rows (along it, and the tension's T/L across it) sum to
    its stiffness k u u^T + T/L (1 - u u^T): against central differences of the force on
    the body when that body translates (at rest, k_eff = k with dt -> infinity)."""
    model = load_model(example_path("joint-zoo"))
    f = _form(model)
    e = int(np.flatnonzero(model.f_type == F_SPRING)[0])
    k = list(f.s_elem).index(e)
    b, r = int(model.f_body[e, 1]), int(f.s_row[k])
    assert model.f_body[e, 0] < 0  # to ground: the tree row's succ end is the body
    q = f._split(f.initial_state())[0].copy()
    z = np.zeros_like(q)

    def force(qq):
        f._kinematics(qq, z, z)
        f._forces()
        return f.body.F[b, :3].copy()

    Kfd = np.array([-_central_difference(force, q, b, c) for c in range(3)]).T
    f._kinematics(q, z, z)
    f.lay.G[:] = 0.0
    f._stiffness_rows(1e12)
    Gs = f.lay.G[1, r:r + 3, :3]
    K3 = f.alpha * Gs.T @ Gs
    assert np.abs(K3 - Kfd).max() < 1e-6 * np.abs(Kfd).max()
    # the spring is stretched, so the stiffness across it (T/L) is far above the check's
    # tolerance: the along-the-spring row alone, k u u^T, would fail the comparison above
    u = Gs[0] / np.linalg.norm(Gs[0])
    along = model.f_params[e, 0] * np.outer(u, u)
    assert np.abs(along - Kfd).max() > 1e3 * 1e-6 * np.abs(Kfd).max()


def test_geometric_stiffness_is_derivative_of_constraint_forces():
    """H_i = d(Phi_qi^T lam + Psi_qi^T mu)/dq_i, the body-diagonal blocks (paper 000, sect. 4.4)."""
    model = load_model(example_path("joint-zoo"))
    f = _form(model, geometric_stiffness=True)
    y = f.initial_state()
    q, _, _, lam, mu = (a.copy() for a in f._split(y))
    rng = np.random.default_rng(2)
    lam = rng.normal(size=lam.shape)
    mu = rng.normal(size=mu.shape)
    H = np.zeros((model.nb, 7, 7))
    K.geometric_stiffness(f.lay.ix, f.ca, f.row_adr, q, lam, mu, 1e-6, H)
    nb = model.nb

    def force(qq, i):
        _, G7 = _phi_of(f, qq)
        out = qq[i, :].copy() * 0.0
        out[3:] = mu[i] * qq[i, 3:]
        for j in range(model.nj):
            r, n = f.row_adr[j], f.lay.ix.rows[j]
            for side, b in ((0, model.pred[j]), (1, model.succ[j])):
                if b == i:
                    out += G7[side, r:r + n].T @ lam[r:r + n]
        return out

    h = 1e-6
    for i in range(nb):
        D = np.zeros((7, 7))
        for c in range(7):
            qp, qm = q.copy(), q.copy()
            qp[i, c] += h
            qm[i, c] -= h
            D[:, c] = (force(qp, i) - force(qm, i)) / (2 * h)
        D = 0.5 * (D + D.T)
        assert np.abs(D - H[i]).max() < 1e-6 * max(1.0, np.abs(D).max())


# ------------------------------------------------------------------ tree solve against the dense oracle


def _steps(f, n, dt):
    y = f.initial_state()
    out = [y]
    for k in range(n):
        y = f.step(k * dt, y, dt)
        out.append(y)
    return np.array(out)


def _linear_pair(model, y, dt, alpha, seed):
    """The same random linear system (leaf blocks at state y) through the tree and densely."""
    rng = np.random.default_rng(seed)
    fs = [_form(model, "tree", penalty=alpha), _form(model, "dense", penalty=alpha)]
    base = rng.normal(size=(model.nb, 7))
    rhs = rng.normal(size=(model.nb, 7))
    g0 = rng.normal(scale=1e-6, size=fs[0].nr)
    for f in fs:
        q, qd, qdd, lam, mu = f._split(y)
        f._kinematics(q, qd, qdd)
        f._forces()
        K.body_mass_forces(model.mass, model.inertia, q, qd, f.body.R, f.body.F, f.body.Mb, f.body.Qb)
        f._rows()
    return fs, base, rhs, g0, q


@pytest.mark.nojit
@pytest.mark.parametrize("seed", range(3))
def test_closed_form_leaf_blocks_equal_the_cholesky_inverse(seed):
    """Without geometric stiffness the leaf blocks D_i = scale (M_i + k p p^T)^-1 come in
    closed form (docs/index3.md, "The leaf blocks in closed form").  Against the
    Cholesky inverse of the same M_cc (the path geometric stiffness takes; H_geo = 0 here),
    at Euler parameters off the unit sphere as Newton iterates are, for the Newton
    iterations' k = dt^2/4 alpha and the exact projections' k, and against M_cc D = scale 1."""
    rng = np.random.default_rng(seed)
    model = _random_model("coupled", seed, dict(n_bodies=8, loops=2))
    f = _form(model)
    nb = model.nb
    q = np.zeros((nb, 7))
    q[:, :3] = rng.normal(size=(nb, 3))
    p = rng.normal(size=(nb, 4))
    q[:, 3:] = p / np.linalg.norm(p, axis=1)[:, None] * rng.uniform(0.7, 1.4, size=(nb, 1))
    qd = rng.normal(size=(nb, 7))
    K.body_mass_forces(model.mass, model.inertia, q, qd, f.body.R, f.body.F, f.body.Mb, f.body.Qb)
    hgeo = np.zeros((nb, 7, 7))
    for c4, kpsi, scale in ((0.25e-6, 1e9, -0.25e-6), (1.0, f.k_exact, 1.0), (0.25e-4, 1e3, -0.25e-4)):
        blocks = []
        for geo in (False, True):
            N.leaf_matrices(f.lay.ix, f.model_arrays, f.body.Mb, hgeo, q, c4, geo, kpsi, scale, f.leaf, f.lay.Phi)
            assert f.leaf.ok.all()
            blocks.append(f.leaf.D.copy())
        closed, chol = blocks
        assert np.abs(closed - chol).max() <= 1e-12 * np.abs(chol).max()
        for i in range(nb):
            mcc = f.body.Mb[i].copy()
            mcc[3:, 3:] += c4 * kpsi * np.outer(q[i, 3:], q[i, 3:])
            prod = mcc @ closed[i] / scale
            assert np.abs(prod - np.eye(7)).max() <= 1e-9, (i, np.abs(prod - np.eye(7)).max())


@pytest.mark.nojit
@pytest.mark.parametrize("kind,seed,kw", RANDOM, ids=[f"{c[0]}-{c[1]}" for c in RANDOM])
def test_tree_solve_equals_dense_solve_random(kind, seed, kw):
    """One assembly-disassembly (paper eqs. 24-39 / 43-54 / 58-69) against the dense KKT
    solve of the same linear system, at a state of a random mechanism: penalised
    (Newton and projections: Phi = delta < 0, eps = 1/alpha) and exact (eps = 0, the
    initial accelerations; redundant rows give non-unique multipliers, so only x)."""
    model = _random_model(kind, seed, kw)
    y = _steps(_form(model), 2, 1e-3)[-1]
    dt = 1e-3
    c4 = dt * dt / 4
    for alpha in (1e6, 1e9):
        fs, base, rhs, g0, q = _linear_pair(model, y, dt, alpha, seed)
        res = []
        for f in fs:
            f._matrices(q, c4, alpha, -c4)
            f._stiffness_rows(dt)  # the springs' and dampers' rows (random mechanisms have both)
            f.leaf.base[:] = base
            f.leaf.rhs[:] = rhs
            f._solve(g0, 1.0 / alpha, -1.0, True)
            res.append((f.leaf.out.copy(), f._lam_solve.copy()))
        (xa, la), (xb, lb) = res
        assert np.abs(xa - xb).max() <= 1e-9 * np.abs(xb).max()
        assert np.abs(la - lb).max() <= 1e-7 * np.abs(lb).max()
        # the projections reuse the matrix pass: bias pass only
        rhs2 = rhs[::-1].copy()
        res = []
        for f in fs:
            f.leaf.rhs[:] = rhs2
            f._solve(2.0 * g0, 1.0 / alpha, -1.0, False)
            res.append(f.leaf.out.copy())
        assert np.abs(res[0] - res[1]).max() <= 1e-9 * np.abs(res[1]).max()
    # exact: g0 consistent with the (possibly redundant) rows, g0 = -G x0
    x0 = np.random.default_rng(seed + 1).normal(size=(model.nb, 7))
    f = fs[0]
    g0 = np.zeros(f.nr)
    for j in range(model.nj):
        r, n = f.row_adr[j], f.lay.ix.rows[j]
        g0[r:r + n] -= f.rows.G7[1, r:r + n] @ x0[model.succ[j]]
        if model.pred[j] >= 0:
            g0[r:r + n] -= f.rows.G7[0, r:r + n] @ x0[model.pred[j]]
    res = []
    for f in fs:
        f._matrices(q, 1.0, 10.0, 1.0)
        f.leaf.base[:] = base
        f.leaf.rhs[:] = rhs
        f._solve(g0, 0.0, 1.0, True)
        res.append(f.leaf.out.copy())
    assert np.abs(res[0] - res[1]).max() <= 1e-8 * np.abs(res[1]).max()


def _assert_steps_agree(ya, yb, nb):
    """Tree steps ``ya`` against dense steps ``yb``: positions to 1e-11, velocities to 1e-8."""
    n7 = 7 * nb
    a, b = ya[:, :n7], yb[:, :n7]
    assert np.abs(a - b).max() <= 1e-11 * max(1.0, np.abs(b).max())
    a, b = ya[:, n7:2 * n7], yb[:, n7:2 * n7]
    assert np.abs(a - b).max() <= 1e-8 * max(1.0, np.abs(b).max())


@pytest.mark.parametrize("name", ["parallelogram-fourbar", "fivebar-redundant", "double-loop-8", "joint-zoo",
                                  "ladder-2", "spatial-double-pendulum"])
@pytest.mark.parametrize("geo,exact", [(False, True), (True, True), (False, False)])
def test_tree_steps_equal_dense_steps_examples(name, geo, exact):
    """Whole steps, including redundant constraints (four-bar, five-bar, ladder), the
    geometric stiffness and both kinds of projection: positions and velocities.
    (Accelerations come from qdd = 4/dt^2 q + ..., which multiplies round-off in q by 4e6
    at dt = 1e-3; the single solves above compare them.)  ``newton_tol`` = 1e-30: both
    take every iteration."""
    model = load_model(example_path(name))
    kw = dict(geometric_stiffness=geo, tangent_hold=2, newton_tol=1e-30, exact_projections=exact)
    ya = _steps(_form(model, "tree", **kw), 6, 1e-3)
    yb = _steps(_form(model, "dense", **kw), 6, 1e-3)
    _assert_steps_agree(ya, yb, model.nb)


OPEN = [("spherical-chain", gen.chain(12, "spherical", planar=False)),
        ("revolute-chain", gen.chain(9, "revolute", planar=False)),
        ("universal-chain", gen.chain(7, "universal", planar=False))] + \
       [(f"tree-{s}", gen.random_mechanism(s, n_bodies=9, forces=False)) for s in range(3)]


@pytest.mark.parametrize("name,spec", OPEN, ids=[c[0] for c in OPEN])
def test_one_thread_open_mechanisms_assemble_tips_first(name, spec):
    """On one thread an open mechanism is assembled over the cheaper of the balanced and
    the tips-first tree (a chain: tips first, one handle per merge), and its steps equal
    the dense solve's as the balanced tree's do (test above)."""
    model = build_model(spec)
    kw = dict(threads=1, tangent_hold=1, newton_tol=1e-30)
    f = _form(model, "tree", **kw)
    balanced = build_assembly_tree(model)
    assert merge_operations(f.tree, model.nc_j, 7) <= merge_operations(balanced, model.nc_j, 7)
    if name.endswith("chain"):
        assert (f.tree.node_nh[f.tree.nb:] <= 1).all()
    ya = _steps(f, 6, 1e-3)
    yb = _steps(_form(model, "dense", **kw), 6, 1e-3)
    _assert_steps_agree(ya, yb, model.nb)


@pytest.mark.parametrize("name", ["parallelogram-fourbar", "double-loop-8", "joint-zoo", "slider-crank"])
def test_exact_velocity_projection_is_mass_orthogonal(name):
    """After a step, q_dot is the M-orthogonal projection of the trapezoidal velocity
    q_dot* = 2/dt (q - q_prev) - q_dot_prev onto {Phi_q x = 0, p^T x_p = 0}: solved here
    independently as one dense KKT system (lstsq for redundant rows)."""
    model = load_model(example_path(name))
    f = _form(model)
    dt = 1e-3
    y0 = f.initial_state()
    y0 = f.step(0.0, y0, dt)
    y1 = f.step(dt, y0, dt)
    n7 = 7 * model.nb
    q0, qd0 = y0[:n7], y0[n7:2 * n7]
    q1, qd1 = y1[:n7], y1[n7:2 * n7]
    qs = 2.0 / dt * (q1 - q0) - qd0
    f._kinematics(q1.reshape(-1, 7), qd1.reshape(-1, 7), f.body.zero7)
    f._rows()
    G = f.absolute_jacobian(f.rows.G7)
    P = np.zeros((model.nb, n7))
    M = np.zeros((n7, n7))
    K.body_mass_forces(model.mass, model.inertia, q1.reshape(-1, 7), qd1.reshape(-1, 7), f.body.R, f.body.F,
                       f.body.Mb, f.body.Qb)
    for i in range(model.nb):
        p = q1[7 * i + 3:7 * i + 7]
        P[i, 7 * i + 3:7 * i + 7] = p
        M[7 * i:7 * i + 7, 7 * i:7 * i + 7] = f.body.Mb[i]
        M[7 * i + 3:7 * i + 7, 7 * i + 3:7 * i + 7] += np.outer(p, p)  # M p = 0: fixes only p^T x
    A = np.vstack([G, P])
    kkt = np.block([[M, A.T], [A, np.zeros((A.shape[0], A.shape[0]))]])
    x = np.linalg.lstsq(kkt, np.concatenate([M @ qs, np.zeros(A.shape[0])]), rcond=1e-12)[0][:n7]
    assert np.abs(G @ qd1).max() < 1e-11 * max(1.0, np.abs(qd1).max())
    assert np.abs(qd1 - x).max() <= 1e-9 * max(1.0, np.abs(x).max())
    assert np.abs(qs - x).max() > 1e3 * np.abs(qd1 - x).max()  # the projection did something


def _distance_to_constraints(f, y):
    """The least (Euclidean) correction of the positions of state ``y`` onto the joint
    rows, from the dense Jacobian (lstsq: the dependent rows drop out)."""
    n7 = 7 * f.model.nb
    q = y[:n7].reshape(-1, 7)
    f._kinematics(q, y[n7:2 * n7].reshape(-1, 7), f.body.zero7)
    f._rows()
    nj = f.n_joint_rows
    G = f.absolute_jacobian(f.rows.G7)[:nj]
    return np.abs(np.linalg.lstsq(G, f.rows.phi[:nj], rcond=1e-10)[0]).max()


@pytest.mark.parametrize("projected", [False, True], ids=["not projected", "projected"])
def test_a_nearly_dependent_loop_stays_on_its_constraints(projected, monkeypatch):
    """A loop whose rows are nearly dependent (smallest nonzero singular value ~4e-4) at
    dt = 1e-4 and a penalty of 1e9, where alpha dt^2/4 = 2.5: the Newton corrections fall
    below the tolerance while the positions are still off the constraints along that
    direction.  Started from the Newton's own multipliers each step, the positions drifted
    off by more with each step (9.5e-7 after 1000 steps without the position projection:
    the dense oracle, its tolerance set to infinity), and the position projection held
    them within POSITION_TOL.  Started from the multipliers of the projected accelerations
    (docs/index3.md, "Reactions"), they stay within 1.1e-9 of the constraints with or
    without it."""
    model = build_model(gen.random_mechanism(15, n_bodies=7, loops=3))
    if projected:
        f = _form(model, penalty=1e9)
    else:
        monkeypatch.setattr(N, "POSITION_TOL", np.inf)
        f = _form(model, linear="dense", penalty=1e9)
    y = f.initial_state()
    for k in range(1000):
        y = f.step(k * 1e-4, y, 1e-4)
    assert _distance_to_constraints(f, y) < N.POSITION_TOL / 30


#: random mechanisms (seed, bodies, loops) whose loops the paper's penalised projections
#: hold poorly at alpha = 1e9, dt = 1e-3 (effective penalty alpha dt^2/4 s^2 ~ 0.2 along
#: their weakest direction): with the paper's three Newton iterations the step failed
#: within 0.1 s on all three; the extra rounds where the correction stays above 1e-8 hold
#: 313 and 328 (1.6e-6 and 1.3e-6 m from dense at 0.3 s), 314 still stops
WEAK_LOOPS = [(313, 8, 2), (314, 9, 2), (328, 9, 1)]


@pytest.mark.parametrize("seed,nb,loops", WEAK_LOOPS, ids=[str(c[0]) for c in WEAK_LOOPS])
def test_exact_projections_hold_weakly_penalised_loops(seed, nb, loops):
    model = build_model(gen.random_mechanism(seed, n_bodies=nb, loops=loops))
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", dt=1e-3, t_end=1.0, rtol=1e-12,
                                     atol=1e-12))
    ref_cols, ref_rows = ref.run_all()
    # penalised: right, or a stop -- never a wrong answer
    pen = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=0.3, exact_projections=False))
    try:
        cols, rows = pen.run_all()
    except SimulationError:
        pass
    else:
        n = rows.shape[0]
        assert np.abs(_positions(cols, rows, model) - _positions(ref_cols, ref_rows[:n], model)).max() < 1e-5
    sim = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=1.0))
    cols, rows = sim.run_all()
    assert "unconverged_steps" not in sim.stats
    assert rows[:, cols.index("violation.velocity")].max() < 1e-10
    assert np.abs(_positions(cols, rows, model) - _positions(ref_cols, ref_rows, model)).max() < 1e-4


# ------------------------------------------------------------------ against the dense formulation


@pytest.mark.parametrize("path", UNGEARED, ids=[p.name[:-10] for p in UNGEARED])
def test_initial_accelerations_match_dense(path):
    """The exact solve at t = 0 (tree, eps = 0) gives dense's accelerations."""
    model = load_model(path)
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    a_ref = dense.evaluate(0.0, dense.initial_state()).acc
    f = _form(model)
    a = f.evaluate(0.0, f.initial_state()).acc
    assert np.abs(a - a_ref).max() <= 1e-9 * max(1.0, np.abs(a_ref).max())


@pytest.mark.parametrize("name", ["spatial-double-pendulum", "chain-8-revolute", "slider-crank",
                                  "chain-6-universal-spatial", "fourbar-crank-rocker", "joint-zoo"])
def test_reactions_match_dense(name):
    """Non-redundant mechanisms: the wrench pred exerts on succ about P[j], from lambda."""
    model = load_model(example_path(name))
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    ev_ref = dense.evaluate(0.0, dense.initial_state())
    f = _form(model)
    ev = f.evaluate(0.0, f.initial_state())
    assert np.abs(ev.P - ev_ref.P).max() < 1e-12
    scale = max(1.0, np.abs(ev_ref.reactions).max())
    assert np.abs(ev.reactions - ev_ref.reactions).max() <= 1e-9 * scale


def test_reactions_follow_the_motion_at_second_order():
    """After each step the multipliers are those of the projected accelerations (docs/
    index3.md, "Reactions"), so the reactions along a run are as accurate as the motion: on
    a spatial loop over 0.5 s, against dense's converged run, about 2.5e-5 of the largest
    at dt = 1e-3 and a quarter of that at dt / 2.  The Newton's own multipliers were 2.0e-3
    off at dt = 1e-3, and half that at dt / 2."""
    from ..test_differential import mechanism

    model = build_model(mechanism(90045, 4, 1, long=False))
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12, t_end=0.5))
    cols, rows = ref.run_all()
    react = [i for i, c in enumerate(cols) if c.startswith("reaction.")]
    scale = np.abs(rows[:, react]).max()
    devs = []
    for dt in (1e-3, 5e-4):
        c, r = Simulation(model, Settings(formulation="index3", dt=dt, t_end=0.5)).run_all()
        assert c == cols
        devs.append(np.abs(r[::int(round(0.01 / dt))][:, react] - rows[:, react]).max() / scale)
    assert devs[0] < 1e-4, devs
    assert 3.0 < devs[0] / devs[1] < 5.0, devs


def _dense_reference(model, T, dt=1e-3):
    return Simulation(model, Settings(formulation="dense", projection=False, integrator="rk4", dt=dt,
                                      t_end=T)).run_all()


#: dt = 1e-3 over 2 s against dense (rk4, same dt), at the default settings (alpha = 1e9, exact
#: projections; with the paper's penalised projections the 128-link chain fails at 0.07 s
#: and needs alpha = 1e11, docs/index3.md).
#: measured trapezoidal truncation error exceeds 1e-4 at dt = 1e-3 over 2 s (chaotic chains and
#: the joint zoo's 160 rad/s spin exchange through its Hooke joint); see test_order_of_convergence.
TRUNCATION_LIMITED = {"chain-6-universal-spatial", "chain-8-revolute", "chain-5-spherical-spatial",
                      "joint-zoo"}


_TRAJ = [pytest.param(p, marks=pytest.mark.xfail(
    strict=True, reason="trapezoidal truncation error above 1e-4 at dt = 1e-3 (measured, docs/index3.md)"))
    if p.name[:-10] in TRUNCATION_LIMITED else p for p in UNGEARED]


@pytest.mark.slow
@pytest.mark.parametrize("path", _TRAJ, ids=[p.name[:-10] for p in UNGEARED])
def test_trajectories_agree_with_dense(path):
    """Every shipped example, 2 s at dt = 1e-3: body positions within 1e-4 of dense."""
    name = path.name[:-10]
    model = load_model(path)
    c1, r1 = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=2.0)).run_all()
    _, c2, r2 = dense_reference(path)  # shared with test_trajectories (same settings)
    assert r1.shape == r2.shape
    d = np.abs(_positions(c1, r1, model) - _positions(c2, r2, model)).max()
    assert d < 1e-4, d


#: where dt = 1e-3 is truncation-limited, the step at which the trapezoidal error is below 1e-4
#: (from the measured second-order constants); the penalty keeps alpha dt^2 / 4 = 2.5e4
SMALL_DT = {"chain-8-revolute": 5e-4, "chain-5-spherical-spatial": 5e-4, "chain-6-universal-spatial": 1.25e-4,
            "joint-zoo": 5e-5}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL_DT))
def test_truncation_limited_examples_agree_at_smaller_steps(name):
    """The examples above that miss 1e-4 at dt = 1e-3 meet it at a step where the trapezoidal
    rule's error allows, against a converged reference (dense, dop853 at 1e-12 -- on the joint
    zoo dense's own rk4 at 1e-3 is 6e-4 off): what fails at 1e-3 is the integrator, not the solve."""
    model = load_model(example_path(name))
    dt = SMALL_DT[name]
    c2, r2 = Simulation(model, Settings(formulation="dense", projection=False, integrator="dop853", rtol=1e-12,
                                        atol=1e-12, dt=1e-3, t_end=2.0)).run_all()
    c1, r1 = Simulation(model, Settings(formulation="index3", dt=dt, t_end=2.0, penalty=1e5 / dt**2)).run_all()
    k = int(round(1e-3 / dt))
    d = np.abs(_positions(c1, r1, model)[::k] - _positions(c2, r2, model)).max()
    assert d < 1e-4, d


ORDER_CASES = ["spatial-double-pendulum", "parallelogram-fourbar", "slider-crank", "chain-8-revolute",
               "fivebar-redundant", "chain-6-universal-spatial", "chain-5-spherical-spatial", "double-loop-8"]
#: the joint zoo spins at up to ~160 rad/s: omega dt = 1.6 at dt = 1e-2 is outside the asymptotic
#: range (measured orders 1.66, 1.78 from dt = 1e-2); it is checked from dt = 4e-3 on
DTS = {"joint-zoo": (4e-3, 2e-3, 1e-3)}


@pytest.mark.parametrize("name", ORDER_CASES + ["joint-zoo"])
def test_order_of_convergence(name, monkeypatch):
    """Errors at t = 1 s for dt = 1e-2, 5e-3, 2.5e-3 against dense (rk4, 1e-3): order ~ 2.

    The trapezoidal rule's own order at the given steps: the pipeline's monitor only
    observes here.  Acting, it redoes intervals whose energy drift passes 1e-3 of the
    peak kinetic energy with smaller steps (slider-crank at dt = 1e-2: 29 retries, drift
    8.2e-3 -> 6.1e-4), so the errors would no longer be those of dt (tests/engine/
    test_monitor.py tests that behaviour)."""
    monkeypatch.setenv("LINKWORK_MONITOR", "observe")
    model = load_model(example_path(name))
    T = 1.0
    c2, r2 = _dense_reference(model, T, 2.5e-4 if name in DTS else 1e-3)
    ref = _positions(c2, r2, model)[-1]
    errs = []
    for dt in DTS.get(name, (1e-2, 5e-3, 2.5e-3)):
        c1, r1 = Simulation(model, Settings(formulation="index3", dt=dt, t_end=T)).run_all()
        assert abs(r1[-1, 0] - T) < 1e-12
        errs.append(np.abs(_positions(c1, r1, model)[-1] - ref).max())
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all((orders > 1.8) & (orders < 2.3)), (errs, orders)


# ------------------------------------------------------------------ paper 000 cases


@pytest.mark.parametrize("exact", [False, True], ids=["penalised", "exact"])
def test_fourbar_through_singular_configuration(exact):
    """Paper 000, 4.3: 30 s, dt = 0.01, alpha = 1e6, 4 iterations; redundant and singular.
    The exact projections cross the folded configuration too (pivoted rows), and leave
    the velocity and acceleration residuals at round-off."""
    model = build_model(gen.fourbar())
    cols, rows = Simulation(model, Settings(formulation="index3", dt=0.01, t_end=30.0, penalty=1e6,
                                            newton_iters=4, newton_tol=1e-12,
                                            exact_projections=exact)).run_all()
    assert abs(rows[-1, 0] - 30.0) < 1e-9
    assert rows[:, cols.index("violation.position")].max() < 1e-8
    if exact:
        assert rows[:, cols.index("violation.velocity")].max() < 1e-12
        assert rows[:, cols.index("violation.acceleration")].max() < 1e-12
    E = rows[:, cols.index("energy.total")]
    assert E.max() - E.min() < 0.05 * abs(E[0])
    # it does pass through the singular (folded) configuration: crank angle through 90 deg
    a = np.arctan2(rows[:, cols.index("A.y")], rows[:, cols.index("A.x")])
    assert a.max() > np.pi / 2


def test_chain_fails_cleanly_with_small_penalty():
    """Paper 000, 4.4: alpha = 1e6 does not converge on the 128-link chain with the
    paper's penalised projections -> SimulationError with the rows computed so far."""
    model = build_model(gen.paper000_chain(128))
    sim = Simulation(model, Settings(formulation="index3", dt=0.01, t_end=2.0, penalty=1e6,
                                     exact_projections=False))
    rows = []
    with pytest.raises(SimulationError):
        for ch in sim.run():
            rows.append(ch.rows)
    assert rows and np.isfinite(np.vstack(rows)).all()


def test_unconverged_steps_warn_and_a_larger_penalty_converges():
    """Random mechanism 14 has a loop near a singular configuration (smallest singular
    value of the mass-whitened loop Jacobian 0.03).  At alpha = 1e9, dt = 1e-3 the penalty
    along that direction (alpha dt^2/4 s^2 ~ 0.2) is too weak for the paper's penalised
    projections: the position residual grows from 1e-10 to 1e-3 within 0.06 s and the
    motion goes wrong by metres, while no step exceeds index3's own failure threshold.
    The pipeline's monitor stops that run (exit 3) once the residual passes 1e-6 and
    smaller steps do not help, rather than let it end normally with warnings, and its
    message says what to change.  alpha = 1e11 converges (the default at this step,
    default_penalty), and so do the exact projections at alpha = 1e9."""
    model = build_model(gen.random_mechanism(14, n_bodies=8, loops=1))
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", dt=1e-3, t_end=0.1, rtol=1e-12,
                                     atol=1e-12))
    ref_pos = _positions(*ref.run_all(), model)
    exact = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=0.1, penalty=1e9))
    exact_pos = _positions(*exact.run_all(), model)
    assert "unconverged_steps" not in exact.stats
    assert np.abs(exact_pos - ref_pos).max() < 1e-5
    weak = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=0.1, penalty=1e9, exact_projections=False))
    with pytest.raises(SimulationError) as failed:
        weak.run_all()
    assert failed.value.t < 0.06
    assert "position residual" in failed.value.reason and "--penalty" in failed.value.reason
    assert "--projections exact" in failed.value.reason
    st = weak.formulation.stats()
    assert st["unconverged_steps"] >= 1
    assert len(st["warnings"]) >= 1
    first = st["warnings"][0]
    assert "not converged" in first and "--penalty" in first and "--projections exact" in first
    assert float(first.split()[2]) < 0.06  # "t = 0.0xx s: ..."
    strong = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=0.1, exact_projections=False))
    assert strong.formulation.alpha == 1e11
    strong_pos = _positions(*strong.run_all(), model)
    assert "warnings" not in strong.stats and "unconverged_steps" not in strong.stats
    assert np.abs(strong_pos - ref_pos).max() < 1e-5


STIFF_SPRINGS = {
    "format": "linkwork-mechanism", "version": 1, "name": "stiff springs", "gravity": [0.0, -9.81, 0.0],
    "bodies": [{"name": "A", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": [0.5, 0.0, 0.0]},
               {"name": "B", "mass": 1.0, "inertia": [0.01, 0.01, 0.01], "position": [1.5, 0.0, 0.0]}],
    "joints": [{"name": "J1", "type": "revolute", "parent": "ground", "child": "A", "anchor": [0, 0, 0],
                "axis": [0, 0, 1]},
               {"name": "J2", "type": "revolute", "parent": "A", "child": "B", "anchor": [1, 0, 0],
                "axis": [0, 0, 1]}],
    "forces": [{"type": "joint-spring", "joint": "J2", "stiffness": 1e4, "damping": 1.0, "rest": 0.0},
               {"type": "spring", "body1": "ground", "point1": [1, 1, 0], "body2": "B", "point2": [1.5, 0, 0],
                "stiffness": 1e5, "damping": 5.0, "rest_length": 1.25 ** 0.5}],
}


def test_stiff_force_elements_converge_at_the_default_step():
    """A joint spring (1e4 N m/rad) and a spring from ground (1e5 N/m) on thin bodies
    (J = 0.01 kg m^2): dt^2/4 k / J is 2.5 and 25 at dt = 0.01.  Without the elements'
    rows in the tangent the Newton iterations diverge in the first step (measured:
    "position residual 0.0931" at t = 0.01 s); with them, 3 iterations converge in
    every step at dt = 0.01 and 5e-3, and the motion stays within the stiff vibration's
    amplitude (~ m g / k) of a converged dense run (measured 2.9e-4 and 2.7e-4 m over
    0.5 s).  At resolved steps the order is 2 (4.4e-5, 1.1e-5 m at dt = 1e-3, 5e-4)."""
    model = build_model(spec_from_dict(STIFF_SPRINGS))
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", dt=1e-3, t_end=0.5, rtol=1e-12,
                                     atol=1e-12))
    ref_pos = _positions(*ref.run_all(), model)
    for dt in (1e-2, 5e-3):
        sim = Simulation(model, Settings(formulation="index3", dt=dt, t_end=0.5))
        cols, rows = sim.run_all()
        assert "unconverged_steps" not in sim.stats
        assert rows[:, cols.index("violation.position")].max() < 1e-10
        pos = _positions(cols, rows, model)[::int(round(1e-2 / dt))]
        assert np.abs(pos - ref_pos[::10]).max() < 1e-3
    errs = []
    for dt in (1e-3, 5e-4):
        sim = Simulation(model, Settings(formulation="index3", dt=dt, t_end=0.3))
        pos = _positions(*sim.run_all(), model)[::int(round(1e-3 / dt))]
        errs.append(np.abs(pos - ref_pos[:len(pos)]).max())
    assert errs[0] < 1e-4 and errs[0] / errs[1] > 3.5



TAUT_SPRING = {
    "format": "linkwork-mechanism", "version": 1, "name": "taut spring across a slider",
    "gravity": [0.0, -9.81, 0.0],
    "bodies": [{"name": "S", "mass": 0.01, "inertia": [1e-5, 1e-5, 1e-5], "position": [0.0, 0.0, 0.0]}],
    "joints": [{"name": "P", "type": "prismatic", "parent": "ground", "child": "S", "anchor": [0, 0, 0],
                "axis": [0, 1, 0]}],
    "forces": [{"type": "spring", "body1": "ground", "point1": [2, 0, 0], "body2": "S", "point2": [0, 0, 0],
                "stiffness": 1e4, "damping": 0.0, "rest_length": 1.0}],
}


def test_taut_spring_across_a_slider_converges():
    """A 10 g slider on a vertical rail, held by a horizontal spring stretched to twice its
    rest length: the slider moves across the spring, where only the tension's stiffness
    T/L = 5e3 N/m acts (dt^2/4 (T/L)/m = 12.5 at dt = 0.01).  With the along-the-spring row
    alone, 19 of 50 steps at dt = 0.01 ended unconverged and the slider ended 7.3 m from
    dense (measured); with the two rows across the spring every step converges and the
    error stays within the unresolved vibration's amplitude (3.9e-5 m)."""
    model = build_model(spec_from_dict(TAUT_SPRING))
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", dt=1e-2, t_end=0.5, rtol=1e-12,
                                     atol=1e-12))
    cols, rows = ref.run_all()
    y_ref = rows[:, cols.index("S.y")]
    amplitude = np.abs(y_ref).max()
    for dt in (1e-2, 5e-3):
        sim = Simulation(model, Settings(formulation="index3", dt=dt, t_end=0.5))
        cols, rows = sim.run_all()
        assert "unconverged_steps" not in sim.stats
        y = rows[::int(round(1e-2 / dt)), cols.index("S.y")]
        assert np.abs(y - y_ref).max() < 1.5 * amplitude


# ------------------------------------------------------------------ command line


def test_cli_run_writes_contract_columns(tmp_path):
    out = tmp_path / "x.csv"
    path = example_path("parallelogram-fourbar")
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(path), "--formulation", "index3",
                        "--t-end", "0.1", "--dt", "0.01", "--penalty", "1e8", "--newton-iters", "4",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cols, rows = read_csv(out)
    assert cols == columns(load_model(path))
    assert rows.shape[0] == 11
    assert rows[:, cols.index("violation.position")].max() < 1e-8
    assert "warning" not in r.stderr


def test_cli_warns_of_unconverged_steps(tmp_path):
    """A penalty too weak for the step (1e9 at dt = 1e-3; the step's default is 1e11):
    test_unconverged_steps_warn_and_a_larger_penalty_converges, from the command line."""
    path = tmp_path / "near-singular.mech.json"
    save(gen.random_mechanism(14, n_bodies=8, loops=1), path)
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(path), "--formulation", "index3",
                        "--t-end", "0.1", "--dt", "0.001", "--projections", "penalised", "--penalty", "1e9",
                        "--out", str(tmp_path / "x.csv")],
                       capture_output=True, text=True)
    # the pipeline's monitor stops the run once the unconverged residual passes 1e-6
    assert r.returncode == 3, r.stderr
    assert "the constraints are not converged" in r.stderr
    assert "simulation failed at t = " in r.stderr and "--penalty" in r.stderr


def test_a_formulation_pickled_into_another_process_makes_its_own_tree_calls(tmp_path):
    """The step's kernels call the tree solve by the address of its machine code
    (index3_newton.TreeCalls), which holds in the process that made it only: a pickled
    formulation leaves it behind, and steps as the original does in another process."""
    import pickle

    model = build_model(gen.ladder(2))
    f = Simulation(model, Settings(formulation="index3")).formulation
    y = f.initial_state()
    y1 = f.step(0.0, y.copy(), 1e-3)
    assert "_tree_calls" in vars(f)
    (tmp_path / "f.pkl").write_bytes(pickle.dumps((f, y)))
    code = ("import pickle, sys, numpy as np\n"
            "f, y = pickle.loads(open(sys.argv[1], 'rb').read())\n"
            "assert '_tree_calls' not in vars(f)\n"
            "np.save(sys.argv[2], f.step(0.0, y.copy(), 1e-3))\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "f.pkl"), str(tmp_path / "y1.npy")], check=True)
    assert np.array_equal(np.load(tmp_path / "y1.npy"), y1)
