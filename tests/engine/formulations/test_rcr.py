"""RCR (paper 002) against the dense reference.

Random states of the random mechanisms of the DCA test (trees, single and coupled
loops), the shipped examples' trajectories with dop853 at 1e-12, the partition
machinery and the parallelogram's mobility change.
"""

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import SimulationError
from linkwork.engine.kinematics import kin_arrays, normalize_quaternions
from linkwork.engine.model import build_model, load_model
from linkwork.engine.simulation import Settings, Simulation

from ..conftest import DRIVEN, EXAMPLES, GEARED, example_path
from .test_dca import CASES, _conditioning, _random_tree_state, conditioned_bound, random_case


def _pair(model):
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    rcr = Simulation(model, Settings(formulation="rcr")).formulation
    return dense, rcr


def _random_closed_state(model, rcr, rng):
    """A random configuration on the closure manifold: every coordinate perturbed by
    0.05, the dependent ones restored by rcr's Newton.  Near a singular configuration
    (coupled-14) the perturbed independent coordinates may admit no closed configuration
    nearby; the case then keeps its closed start (as the DCA test does for every loop)."""
    y0 = rcr.initial_state()
    y = y0.copy()
    q = y[: model.nq]
    q += rng.normal(scale=0.05, size=model.nq)
    normalize_quaternions(kin_arrays(model), q)
    try:
        return rcr._close(0.0, y)
    except SimulationError:
        return y0


def random_state_error(kind, seed, kw):
    """(loop conditioning, relative joint-acceleration error of rcr against dense, closure
    rows) at a random consistent state of the case; speeds random in the null space of
    dense's loop Jacobian (independent of rcr's partition)."""
    model = build_model(random_case(kind, seed, kw))
    dense, rcr = _pair(model)
    rng = np.random.default_rng(seed)
    if kind == "tree":
        y = _random_tree_state(model, rng)
    else:
        y = _random_closed_state(model, rcr, rng)
        q = y[: model.nq]
        dense._cut_phi_K(q, y[model.nq:])
        K = dense.K
        if K.shape[0]:
            _, s, Vt = np.linalg.svd(K)
            Nul = Vt[int((s > 1e-10 * s[0]).sum()):].T
            y[model.nq:] = Nul @ rng.normal(size=Nul.shape[1])
    s = _conditioning(dense, y)
    a_ref = dense.rhs(0.0, y)[model.nq:]
    a = rcr.rhs(0.0, y)[model.nq:]
    return s, np.abs(a - a_ref).max() / max(1.0, np.abs(a_ref).max()), dense.ncr


@pytest.mark.parametrize("kind,seed,kw", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_accelerations_agree_with_dense_at_random_states(kind, seed, kw):
    """Joint accelerations agree to 1e-9 relative (or the DCA test's conditioned bound
    near singular loops: rcr's block solves are least squares on the loop Jacobian,
    dense's on K M^-1 K^T, the larger of the two round-off amplifications bounds both)."""
    s, rel, n_rows = random_state_error(kind, seed, kw)
    assert rel < conditioned_bound(s, n_rows), f"rel {rel:.2e}, conditioning {s:.1e}, {n_rows} closure rows"


def test_velocity_closure_reproduces_the_independent_speeds():
    """Eq. (34): dependent speeds from independent ones; K v = 0 to round-off, and the
    independent speeds of the state are kept."""
    model = build_model(gen.ladder(5))
    dense, rcr = _pair(model)
    y = rcr.initial_state()
    rng = np.random.default_rng(1)
    ind = rcr.independent_speeds
    assert ind.size == 2  # paper 002 section 4.3: two degrees of freedom whatever L
    y[model.nq:] = rng.normal(size=model.nv)
    rcr.rhs(0.0, y)
    dense._cut_phi_K(y[: model.nq], rcr.v)
    assert np.abs(dense.K @ rcr.v).max() < 1e-12 * max(1.0, np.abs(rcr.v).max())
    np.testing.assert_array_equal(rcr.v[ind], y[model.nq:][ind])


def test_position_closure_restores_the_loops():
    """Position closure: after a perturbation of every coordinate, Newton on the loop equations
    brings the cut-joint residuals back to round-off, changing only dependent coordinates
    (for joints with one coordinate per speed)."""
    model = build_model(gen.ladder(4))
    dense, rcr = _pair(model)
    y0 = rcr.initial_state()
    y = y0.copy()
    y[: model.nq] += np.random.default_rng(2).normal(scale=1e-3, size=model.nq)
    z = rcr._close(0.0, y)
    dense._cut_phi_K(z[: model.nq], z[model.nq:])
    assert np.abs(dense.phi).max() < 1e-12
    ind = rcr.independent_speeds  # ladders: revolute and universal joints, q index == v index
    np.testing.assert_array_equal(z[ind], y[ind])


@pytest.mark.parametrize("spec", [gen.ladder(3), gen.double_loop(), gen.fivebar(3), gen.joint_zoo(),
                                  gen.random_mechanism(7, 6, loops=0)], ids=lambda s: s.name)
def test_reactions_agree_with_dense(spec):
    """Joint wrenches from the multipliers rcr recovers at output instants; where closure
    rows are redundant only their resultant on each body is unique, so there only the
    accelerations are compared."""
    model = build_model(spec)
    assert_reactions_agree(model, *_pair(model))


@pytest.mark.parametrize("spec", [gen.ladder(4), gen.double_loop(), gen.slider_crank(), gen.ladder(2)],
                         ids=lambda s: s.name)
def test_the_blocks_multipliers_are_the_least_squares_ones(spec):
    """The multipliers from the partition's block factors against the dense minimum-norm
    least-squares solve of the same equations, at a random state on the loops: the spatial
    ladders' blocks have a redundant row each (five rows, three dependent speeds)."""
    from linkwork.engine.formulations.base import StateKernel
    from linkwork.engine.formulations.rcr_rows import loop_multipliers

    model = build_model(spec)
    dense, rcr = _pair(model)
    rng = np.random.default_rng(7)
    y = _random_closed_state(model, rcr, rng)
    rcr.evaluate(0.0, y)
    fast = rcr._multipliers()
    work = list(fast.workspace)
    work[-4] = False  # blocks_only (before Qf, qr_tau, colscale): the dense solve
    slow = StateKernel(loop_multipliers, tuple(work))
    lam_fast, lam_slow = np.zeros(rcr.ncr), np.zeros(rcr.ncr)
    fast(lam_fast, lam_fast)
    slow(lam_slow, lam_slow)
    np.testing.assert_allclose(lam_fast, lam_slow, rtol=0, atol=1e-9 * max(1.0, np.abs(lam_slow).max()))


def assert_reactions_agree(model, dense, form):
    """Accelerations and, where no closure row is redundant, joint wrenches of ``form``
    equal dense's to 1e-9 of their largest at the initial state."""
    from linkwork.engine.topology import analyze

    y = dense.initial_state()
    ed, ef = dense.evaluate(0.0, y), form.evaluate(0.0, y)
    np.testing.assert_allclose(ef.acc, ed.acc, atol=1e-9 * max(1.0, np.abs(ed.acc).max()))
    if analyze(model).redundant == 0:
        np.testing.assert_allclose(ef.reactions, ed.reactions, atol=1e-9 * max(1.0, np.abs(ed.reactions).max()))


def _positions_energy(path_or_model, formulation, t_end=2.0, **kw):
    model = load_model(path_or_model) if not hasattr(path_or_model, "nb") else path_or_model
    sim = Simulation(model, Settings(formulation=formulation, integrator="dop853", rtol=1e-12, atol=1e-12,
                                     dt=0.01, t_end=t_end, **kw))
    cols, rows = sim.run_all()
    idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    return rows[:, idx], rows[:, cols.index("energy.total")], rows[:, cols.index("violation.position")]


def assert_agrees_with_dense(path, formulation, t_end=2.0):
    """Body positions within 1e-8 m and total energy within 1e-8 J of dense (dop853 at
    1e-12, dense projecting), and violation.position below 1e-10."""
    x, e, viol = _positions_energy(path, formulation, t_end=t_end)
    xd, ed, _ = _positions_energy(path, "dense", t_end=t_end)
    assert np.abs(x - xd).max() < 1e-8
    assert np.abs(e - ed).max() < 1e-8
    assert viol.max() < 1e-10


AGREEMENT_EXAMPLES = [p for p in EXAMPLES if "parallelogram" not in p.name and "chain-128" not in p.name]


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in AGREEMENT_EXAMPLES if p not in GEARED + DRIVEN],
                         ids=lambda p: p.name.split(".")[0])
def test_example_trajectories_agree_with_dense(path):
    """Acceptance: dop853 at rtol = atol = 1e-12 over 2 s, body positions within
    1e-8 m and energy within 1e-8 J of dense (dense projecting, its default with loops).
    The parallelogram four-bar folds flat at t ~ 0.9 s (its own test below); the 128-link
    chain has no loop, so rcr is the articulated-body algorithm there (test_chain_128)."""
    assert_agrees_with_dense(path, "rcr")


@pytest.mark.slow
def test_chain_128_agrees_with_dense_over_0_2_s():
    path = example_path("chain-128-spherical")
    assert_agrees_with_dense(path, "rcr", t_end=0.2)


def parallelogram_outcome(formulation, **kw):
    """(largest rotation of the parallelogram's coupler from its start [rad], the
    SimulationError that stopped the run or None) over 10 s of ``formulation``."""
    model = load_model(example_path("parallelogram-fourbar"))
    sim = Simulation(model, Settings(formulation=formulation, t_end=10.0, **kw))
    cols, rows, stop = None, [], None
    try:
        for chunk in sim.run():
            cols = chunk.columns
            rows.append(chunk.rows)
    except SimulationError as exc:
        stop = exc
    rows = np.vstack(rows)
    coupler = [b.name for b in model.spec.bodies][1]
    quat = rows[:, [cols.index(f"{coupler}.q{k}") for k in range(4)]]
    return float((2 * np.arccos(np.clip(np.abs(quat[:, 0]), 0, 1))).max()), stop


def test_parallelogram_never_continues_on_another_branch():
    """Partition switching: the parallelogram four-bar folds flat (a genuine change of mobility):
    either the coupler keeps translating or the run stops with a SimulationError naming
    the time -- never a silent branch switch."""
    for kw in ({}, {"integrator": "dop853", "rtol": 1e-10, "atol": 1e-10}):
        angle, stop = parallelogram_outcome("rcr", **kw)
        if stop is not None:
            assert "singular configuration" in str(stop) and stop.t > 0.0
        assert angle < 1e-6


def test_crank_rocker_switches_partition_and_agrees_with_dense():
    """Partition switching (paper 002 section 4.4): with the rocker's angle as the independent
    coordinate, the partition turns ill-conditioned near the rocker's dead points; rcr
    re-chooses it (the automatic choice takes the crank, which never needs a switch)
    and still follows dense."""
    from linkwork.engine.formulations.rcr_partition import numeric_loop_jacobian, partition_from_choice

    model = load_model(example_path("fourbar-crank-rocker"))
    settings = dict(integrator="dop853", rtol=1e-12, atol=1e-12, dt=0.01, t_end=2.0)
    sim = Simulation(model, Settings(formulation="rcr", **settings))
    form = sim.formulation
    lca, paths, clusters = form.structure
    rocker = model.v_adr[[i for i in paths[0] if model.parent[i] < 0 and i != 0][0]]
    cols = [int(c) for i in paths[0] for c in range(model.v_adr[i], model.v_adr[i] + model.nv_j[i])]
    Kmat, M = numeric_loop_jacobian(model, model.q_zero(), form.structure)
    scale = 1.0 / np.sqrt(np.diag(M))
    rows = list(range(int(model.nc_j[model.nb])))
    choice = [([(rows, cols, [c for c in cols if c != rocker])], [int(rocker)])]
    form._use(partition_from_choice(model, form.structure, choice, Kmat * scale, scale))
    cols_out, out = sim.run_all()
    ref_cols, ref = Simulation(model, Settings(formulation="dense", **settings)).run_all()
    idx = [cols_out.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    assert np.abs(out[:, idx] - ref[:, idx]).max() < 1e-8
    assert sim.stats["partition_switches"] >= 1
    assert form.part.independent.tolist() != [rocker]


def _samples(f, t1, dt=0.01, n=3):
    return [(t1 - k * dt, f(t1 - k * dt)) for k in range(n - 1, -1, -1)]


def test_a_fold_is_a_crossing_and_a_near_pass_is_not():
    """The mobility measure near a fold at t* = 0.6 falls linearly to zero (the
    parallelogram: 0.047, 0.032, 0.016 ...); near a pass that turns at a = 0.04 it is a
    hyperbola, s^2 = a^2 + b^2 (t - t*)^2 (the five-bar).  Far from either minimum the two
    look alike and nothing is decided; one sample before the fold the crossing is called;
    the pass is never called one."""
    from linkwork.engine.formulations.rcr_partition import singular_crossing

    def fold(t):
        return abs(1.55 * (t - 0.6))

    def near(t):
        return float(np.sqrt(0.04 ** 2 + (1.55 * (t - 0.6)) ** 2))

    assert not singular_crossing(_samples(fold, 0.57), 0.57)[0]  # s = 0.047: too early to say
    assert singular_crossing(_samples(fold, 0.59), 0.59)[0]  # s = 0.016: the fold comes before the next sample
    for t in np.arange(0.50, 0.70, 0.005):
        crossing, low, _ = singular_crossing(_samples(near, t), t)
        assert not crossing, (t, low)
    # within DENSE_FILTER_RTOL of it, always
    assert singular_crossing([(0.6, 5e-5)], 0.6)[0]


def test_the_loop_jacobian_kept_by_a_formulation_is_a_new_ones_at_every_state():
    """LoopJacobian keeps its workspace between calls (every partition search and mobility
    sample): called at one state after others, it gives what a new one gives there."""
    from linkwork.engine.formulations.rcr_partition import LoopJacobian, loop_structure

    rng = np.random.default_rng(5)
    for spec in (gen.fivebar(), gen.ladder(3), gen.random_mechanism(3, n_bodies=9, loops=3)):
        model = build_model(spec)
        structure = loop_structure(model)
        kept = LoopJacobian(model, structure)
        states = [model.q_zero() + 0.2 * rng.standard_normal(model.nq) for _ in range(3)]
        for q in states + states[::-1]:
            K, M = kept(q)
            K0, M0 = LoopJacobian(model, structure)(q)
            assert np.array_equal(K, K0) and np.array_equal(M, M0), spec.name
            assert K.any() and np.allclose(M, M.T) and (np.diag(M) > 0).all()


@pytest.mark.parametrize("formulation", ["rcr", "embedding"])
def test_a_partition_used_again_gives_the_rows_of_a_new_one(formulation):
    """A switch back to a partition used before takes the arrays and kernels kept for it
    (KeptPartitions) instead of binding new ones: the rows are the same, bit for bit.
    The five-bars' rk4 paths switch back 4 to 9 times in 10 s (how many is the path's,
    which the partition monitor's rules decide); three or more exercise the kept ones."""
    from linkwork.engine.formulations.rcr_partition import PARTITIONS_KEPT

    for name in ("fivebar", "fivebar-redundant"):
        model = load_model(example_path(name))
        runs = []
        for size in (PARTITIONS_KEPT, 0):
            sim = Simulation(model, Settings(formulation=formulation, t_end=10.0))
            sim.formulation._kept.size = size
            cols, rows = sim.run_all()
            runs.append((rows, sim.formulation._kept.taken, sim.stats["partition_switches"]))
        (kept, taken, switches), (fresh, none, switches_fresh) = runs
        assert taken >= 3 and none == 0, name
        assert switches == switches_fresh and np.array_equal(kept, fresh, equal_nan=True), name


def test_five_bars_pass_near_singular_configurations_without_stopping():
    """The five-bar and the redundant five-bar pass near singular configurations (their
    mobility measure dips to 0.044-0.073 and 0.009 on rk4 paths) with no branch to choose:
    rcr re-chooses its independent coordinates and runs the 10 s."""
    for name in ("fivebar", "fivebar-redundant"):
        sim = Simulation(load_model(example_path(name)), Settings(formulation="rcr", t_end=10.0))
        cols, rows = sim.run_all()
        assert rows[-1, 0] == pytest.approx(10.0)

