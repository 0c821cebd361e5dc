"""Constraint embedding (paper 003) against the dense reference.

Random consistent states of the random mechanisms of the DCA test (trees, single and
coupled loops), the embedding map's defining properties, the aggregation, the shipped
examples' trajectories with dop853 at 1e-12, the partition switch of the crank-rocker
and the parallelogram's change of mobility, and a gear pair embedded with constant X.
"""

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.model import build_model, load_model
from linkwork.engine.simulation import Settings, Simulation

from ..conftest import EXAMPLES, example_path
from .test_dca import CASES, _conditioning, _random_tree_state, random_case
from .test_rcr import _random_closed_state as rcr_random_closed_state
from .test_rcr import AGREEMENT_EXAMPLES, assert_agrees_with_dense, assert_reactions_agree, parallelogram_outcome

#: random consistent states per random mechanism (56 mechanisms: 224 states)
STATES_PER_CASE = 4
#: dense's filter width for the reference solve (see :func:`random_state_errors`)
REFERENCE_FILTER_RTOL = 1e-13


def _pair(model):
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    emb = Simulation(model, Settings(formulation="embedding")).formulation
    return dense, emb


def _random_closed_state(model, emb, dense, rng):
    """A random configuration on the closure manifold (every coordinate perturbed by 0.05,
    the dependent ones restored by embedding's Newton; where the perturbed independent
    coordinates admit no closed configuration nearby the case keeps its closed start),
    with speeds random in the null space of dense's loop Jacobian (independent of
    embedding's partition)."""
    y = rcr_random_closed_state(model, emb, rng)
    dense._cut_phi_K(y[: model.nq], y[model.nq:])
    K = dense.K
    if K.shape[0]:
        _, s, Vt = np.linalg.svd(K)
        Nul = Vt[int((s > 1e-10 * s[0]).sum()):].T
        y[model.nq:] = Nul @ rng.normal(size=Nul.shape[1])
    return y


def random_state_errors(kind, seed, kw, n_states=STATES_PER_CASE):
    """[(loop conditioning, relative joint-acceleration error against dense)] at
    ``n_states`` random consistent states of the case (also run by
    benchmarks/embedding_agreement.py)."""
    model = build_model(random_case(kind, seed, kw))
    dense, emb = _pair(model)
    # dense's least squares filters singular values below mu = 1e-6 s_max on purpose
    # (relative error (mu/s)^8, dense_linalg.filter_factors): at coupled-14's loop conditioning
    # s = 1.3e-5 that is 1.1e-9 of the accelerations, ten times the bound.  The
    # reference here is dense's exact pseudo-inverse (mu = 1e-13); against it
    # embedding agrees to 7.0e-12 there (against the filtered dense: 1.1e-9).
    dense.mu_rel = REFERENCE_FILTER_RTOL
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_states):
        if kind == "tree":
            y = _random_tree_state(model, rng)
        else:
            y = _random_closed_state(model, emb, dense, rng)
        s = _conditioning(dense, y)
        a_ref = dense.rhs(0.0, y)[model.nq:]
        a = emb.rhs(0.0, y)[model.nq:]
        out.append((s, float(np.abs(a - a_ref).max() / max(1.0, np.abs(a_ref).max()))))
    return out


@pytest.mark.parametrize("kind,seed,kw", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_accelerations_agree_with_dense_at_random_states(kind, seed, kw):
    """Acceptance: joint accelerations equal dense's to 1e-10 relative at
    4 random consistent states of each of the 56 random mechanisms (224 states)."""
    for s, rel in random_state_errors(kind, seed, kw):
        assert rel <= 1e-10, f"rel {rel:.2e}, loop conditioning {s:.1e}"


def test_embedding_map_spans_the_null_space_of_the_rows():
    """Eqs. 25, 58-61: Y X = 0, X is the identity on the independent velocities, and the
    rate term completes the hinge accelerations: Y (X thetaddot_R + Xdot thetadot_R) =
    gamma, i.e. dense's acceleration-level closure holds for any independent
    accelerations."""
    model = build_model(gen.double_loop())
    dense, emb = _pair(model)
    y = emb.initial_state()
    y[model.nq:] = np.random.default_rng(3).normal(size=model.nv)
    emb.rhs(0.0, y)  # closes the speeds from the independent ones
    v = emb.v.copy()
    X, rate = emb.embedding_map(0)
    agg, ind = emb.aggregates[0], list(emb.emb.independent[0])
    cols = list(agg.cols)
    assert X.shape == (len(cols), len(ind))
    np.testing.assert_allclose(X[[cols.index(c) for c in ind]], np.eye(len(ind)), atol=1e-15)
    dense.rhs(0.0, np.concatenate([y[: model.nq], v]))
    Kc = dense.K[:, cols]
    assert np.abs(Kc @ X).max() < 1e-12 * np.abs(Kc).max()
    for vdR in (np.zeros(len(ind)), np.random.default_rng(4).normal(size=len(ind))):
        vdot = np.zeros(model.nv)
        vdot[cols] = X @ vdR + rate
        assert np.abs(dense.K @ vdot - dense.gamma).max() < 1e-11 * max(1.0, np.abs(dense.gamma).max())


@pytest.mark.parametrize("case", EXAMPLES + [c for c in CASES if c[0] != "tree"],
                         ids=lambda c: c.name.split(".")[0] if hasattr(c, "name") else f"{c[0]}-{c[1]}")
def test_independent_coordinates_count_the_freedoms(case):
    """Paper 003 section 4.3: the independent velocities of the aggregated bodies plus the
    freedoms of the bodies outside them are the mechanism's DOF (topology.analyze), on
    every shipped example and every random mechanism with loops."""
    from linkwork.engine.topology import analyze

    model = load_model(case) if hasattr(case, "name") else build_model(random_case(*case))
    emb = Simulation(model, Settings(formulation="embedding")).formulation
    outside = sum(int(model.nv_j[i]) for i in range(model.nb)
                  if not any(i in a.bodies for a in emb.aggregates))
    assert outside + sum(len(ind) for ind in emb.emb.independent) == analyze(model).dof


def test_aggregation_merges_coupled_loops_and_keeps_disjoint_ones_apart():
    """Fig. 4: the double loop shares bodies (one aggregated body); two four-bars hung on
    one pendulum are separate aggregated bodies with the pendulum's body as their parent."""
    from linkwork.engine.formulations.embedding import aggregated_bodies

    model = build_model(gen.double_loop())
    (agg,) = aggregated_bodies(model)
    assert len(agg.loops) == 2 and agg.parent == -1
    model = build_model(gen.random_mechanism(1000 + 3, n_bodies=8, loops=3))
    aggs = aggregated_bodies(model)
    seen = [i for a in aggs for i in a.bodies]
    assert len(seen) == len(set(seen))  # every body in at most one aggregated body
    for a in aggs:
        assert all(model.parent[i] in a.bodies or model.parent[i] == a.parent for i in a.bodies)


def test_position_closure_restores_the_loops():
    """Position closure: after a perturbation of every coordinate, Newton on each aggregated body's
    equations brings the cut-joint residuals back to round-off, changing only the
    dependent coordinates (one coordinate per speed here)."""
    model = build_model(gen.ladder(4))
    dense, emb = _pair(model)
    y = emb.initial_state()
    y[: model.nq] += np.random.default_rng(2).normal(scale=1e-3, size=model.nq)
    z = emb._close(0.0, y)
    dense._cut_phi_K(z[: model.nq], z[model.nq:])
    assert np.abs(dense.phi).max() < 1e-12
    ind = [c for ind in emb.emb.independent for c in ind]
    np.testing.assert_array_equal(z[ind], y[ind])


@pytest.mark.parametrize("spec", [gen.ladder(3), gen.double_loop(), gen.fivebar(3), gen.joint_zoo(),
                                  gen.random_mechanism(7, 6, loops=0)], ids=lambda s: s.name)
def test_reactions_agree_with_dense(spec):
    """Joint wrenches recovered at output instants only; where closure rows are redundant
    only their resultant on each body is unique, so there only accelerations compare."""
    model = build_model(spec)
    assert_reactions_agree(model, *_pair(model))


@pytest.mark.slow
@pytest.mark.parametrize("path", AGREEMENT_EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_example_trajectories_agree_with_dense(path):
    """Acceptance: dop853 at rtol = atol = 1e-12 over 2 s, body positions within
    1e-8 m and energy within 1e-8 J of dense (projecting, its default with loops), and
    violation.position at round-off.  The parallelogram changes mobility (its own test);
    the 128-link chain has no loop (0.2 s below: dense is O(n^3))."""
    assert_agrees_with_dense(path, "embedding")


@pytest.mark.slow
def test_chain_128_agrees_with_dense_over_0_2_s():
    path = example_path("chain-128-spherical")
    assert_agrees_with_dense(path, "embedding", t_end=0.2)


def test_parallelogram_never_continues_on_another_branch():
    """Rank monitoring: the parallelogram four-bar folds flat (the loop changes mobility): either
    the coupler keeps translating (orientation within 1e-6 rad of its start) or the run
    stops with a SimulationError naming the time and the configuration -- never a silent
    branch switch (defaults, and dop853 at 1e-10)."""
    for kw in ({}, {"integrator": "dop853", "rtol": 1e-10, "atol": 1e-10}):
        angle, stop = parallelogram_outcome("embedding", **kw)
        if stop is not None:
            assert "singular configuration" in str(stop) and "configuration: J" in str(stop)
            assert stop.t > 0.0
        assert angle < 1e-6


def rocker_velocity(model, form) -> int:
    """The crank-rocker's rocker: the aggregated body's other base body (the crank is body 0)."""
    (agg,) = form.aggregates
    return int(model.v_adr[[i for i in agg.bodies if model.parent[i] < 0 and i != 0][0]])


@pytest.mark.slow
def test_crank_rocker_switches_partition_and_agrees_with_dense():
    """Rank monitoring (paper 003 section 9): with the rocker's angle independent, the dependent block Y1
    loses rank near the rocker's dead points while the loop keeps its rank; the
    independent coordinate is re-chosen (at least one switch over 10 s) and the
    trajectory still matches dense within 1e-8 m (dop853, 1e-12)."""
    model = load_model(example_path("fourbar-crank-rocker"))
    settings = dict(integrator="dop853", rtol=1e-12, atol=1e-12, dt=0.01, t_end=10.0)
    sim = Simulation(model, Settings(formulation="embedding", **settings))
    rocker = rocker_velocity(model, sim.formulation)
    sim.formulation.use_independent([[rocker]])
    assert sim.formulation.part.independent.tolist() == [rocker]
    cols_out, out = sim.run_all()
    ref_cols, ref = Simulation(model, Settings(formulation="dense", **settings)).run_all()
    idx = [cols_out.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    assert np.abs(out[:, idx] - ref[:, idx]).max() < 1e-8
    assert sim.stats["partition_switches"] >= 1


def test_supports_honours_couplings_and_others_name_it():
    """Embedding honours the file's gear couplings (docs/file-format.md, "Couplings"); a
    formulation that cannot (rcr) refuses with the coupling named and embedding among
    those that can."""
    from linkwork.engine.formulations.embedding import EmbeddingFormulation
    from linkwork.engine.formulations.rcr import RCRFormulation

    model = load_model(example_path("geared-arm"))
    assert EmbeddingFormulation.supports(model) == (True, "")
    ok, why = RCRFormulation.supports(model)
    assert not ok and "couplings[0]" in why and "formulations that can: dense, embedding" in why


def _geared_pair_spec():
    """A rotor (on the axis, no gravity torque) and a link hanging from the same ground
    pivot, both revolute about z: siblings under ground, as the motor and its driven link
    under their carrier in paper 003's Fig. 6."""
    from linkwork.engine.generators import finish, joint_spec, rod_body
    from linkwork.engine.mechfile import MechanismSpec

    rotor = rod_body("rotor", (0.0, 0.0, -0.05), (0.0, 0.0, 0.05), mass=0.5, radius=0.05)
    link = rod_body("link", (0.0, 0.0, 0.0), (0.8, -0.6, 0.0), mass=1.5)
    joints = (joint_spec("Jr", "revolute", "ground", "rotor", (0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0)),
              joint_spec("Jl", "revolute", "ground", "link", (0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0)))
    return finish(MechanismSpec(bodies=(rotor, link), joints=joints, gravity=(0.0, -9.81, 0.0),
                                name="geared pair"))


def test_gear_pair_embeds_with_constant_map():
    """Section 5.1, eq. 37: a gear q_r = mu q_l between two one-freedom joints is one
    aggregated body with constant X = [mu; 1] and zero rate term; the link then moves as
    a pendulum of inertia J_l + mu^2 J_r: (J_l + mu^2 J_r) qddot_l = torque of gravity."""
    from linkwork.engine.formulations.embedding import EmbeddingFormulation, Gear

    mu = -7.5
    model = build_model(_geared_pair_spec())
    rotor, link = model.body_names.index("rotor"), model.body_names.index("link")

    class Geared(EmbeddingFormulation):
        gears = (Gear(driver=rotor, driven=link, ratio=mu),)

    form = Geared(model, Settings(formulation="embedding"))
    (agg,) = form.aggregates
    assert set(agg.bodies) == {rotor, link} and agg.parent == -1
    y = form.initial_state()
    y[model.nq + model.v_adr[link]] = 0.7
    out = form.rhs(0.0, y)
    X, rate = form.embedding_map(0)
    vr, vl = model.v_adr[rotor], model.v_adr[link]
    cols = list(agg.cols)
    np.testing.assert_allclose(X[[cols.index(vr), cols.index(vl)], 0] / X[cols.index(vl), 0], [mu, 1.0], rtol=1e-14)
    assert np.abs(rate).max() == 0.0
    assert form.v[vr] == pytest.approx(mu * form.v[vl], rel=1e-14)
    # the equivalent pendulum, from the specification's inertias
    spec = model.spec
    r_b, l_b = spec.bodies[0], spec.bodies[1]
    Jr = r_b.inertia[2][2]  # rod along z: its axial moment
    c = np.array(l_b.position)
    Jl = l_b.inertia[2][2] + l_b.mass * (c[0] ** 2 + c[1] ** 2)
    torque = l_b.mass * (-9.81) * c[0]  # z-moment of gravity about the pivot: x * F_y
    expected = torque / (Jl + mu ** 2 * Jr)
    assert out[model.nq + vl] == pytest.approx(expected, rel=1e-12)
    assert out[model.nq + vr] == pytest.approx(mu * expected, rel=1e-12)


def test_info_reports_the_aggregated_bodies(capsys):
    """``linkwork info --json`` gives, per aggregated body, its bodies, independent
    velocities and the smallest singular value of the dependent block at t = 0 (additive
    key ``embedding``); the crank-rocker's automatic choice is the crank, well away from a
    partition singularity."""
    import json

    from linkwork.engine.cli import main

    assert main(["info", str(example_path("fourbar-crank-rocker")), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    (agg,) = d["embedding"]["aggregated_bodies"]
    assert sorted(agg["bodies"]) == ["A", "B", "C"] and agg["parent"] == "ground"
    assert agg["independent"] == ["J1"] and agg["cut_joints"] == ["J3"]
    assert 0.1 < agg["sigma_min_dependent"] <= 1.0
    assert main(["info", str(example_path("chain-8-revolute")), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedding"] == {"aggregated_bodies": []}


def test_health_reports_the_dependent_block_conditioning():
    """The pipeline monitor reads ``loop_conditioning``: the conditioning of the whitened
    dependent blocks Y1 at the last evaluation (1.0 without loops)."""
    model = load_model(example_path("fourbar-crank-rocker"))
    _, emb = _pair(model)
    emb.evaluate(0.0, emb.initial_state())
    assert 0.1 < emb.health()["loop_conditioning"] <= 1.0
    tree = Simulation(build_model(gen.chain(4, "revolute", planar=True)), Settings(formulation="embedding")).formulation
    tree.evaluate(0.0, tree.initial_state())
    assert tree.health() == {"loop_conditioning": 1.0}


@pytest.mark.parametrize("name", ["kite", "fivebar", "ladder"])
def test_folding_passages_follow_the_reference_or_exit_3(name):
    """test_monitor's folding mechanisms (a kite four-bar and a five-bar that fold flat, a
    ladder passing near a fold): embedding follows dense's dop853 reference to 1e-5 m on
    every row it hands over, and stops only with the change-of-mobility error (measured:
    the kite stops at 0.64 s, the five-bar at 0.57 s, 1.4e-9 and 1.6e-9 m from the
    reference; the ladder runs the 2 s, 5.2e-9 m)."""
    from ..test_monitor import _positions, _run

    spec = {"kite": lambda: gen.fourbar(crank=1.0, coupler=2.0, rocker=2.0, ground=1.0, crank_angle_deg=60.0),
            "fivebar": lambda: gen.fivebar(legs=2, base_half=0.0, length=1.0, tip=(0.3, 1.2)),
            "ladder": lambda: gen.ladder(2, tilt_x_deg=0.0, tilt_z_deg=85.0)}[name]()
    model = build_model(spec)
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", rtol=1e-11, atol=1e-11, t_end=2.0))
    ref_rows, ref_err = _run(ref)
    assert ref_err is None
    sim = Simulation(model, Settings(formulation="embedding", t_end=2.0))
    rows, err = _run(sim)
    n = rows.shape[0]
    assert np.abs(_positions(sim.columns, rows, model) - _positions(ref.columns, ref_rows[:n], model)).max() < 1e-5
    assert err is None or ("singular configuration" in err.reason and "configuration: " in err.reason)


def test_random_cases_cover_disjoint_and_coupled_loops():
    """The random-state agreement above covers every shape of aggregation (measured: 24
    trees, 16 single loops, 10 aggregated bodies of 2-3 coupled loops, 6 mechanisms with
    2-3 disjoint aggregated bodies)."""
    from linkwork.engine.formulations.embedding import aggregated_bodies

    shapes = []
    for kind, seed, kw in CASES:
        aggs = aggregated_bodies(build_model(random_case(kind, seed, kw)))
        shapes.append((len(aggs), max((len(a.loops) for a in aggs), default=0)))
    assert sum(n >= 2 for n, _ in shapes) >= 4  # disjoint loops: several aggregated bodies
    assert sum(n == 1 and k >= 2 for n, k in shapes) >= 4  # coupled loops merged into one
    assert sum(n == 0 for n, _ in shapes) == 24


@pytest.mark.parametrize("name", ["geared-arm", "fourbar-geared"])
def test_file_gears_embed_and_reactions_agree_with_dense(name):
    """The file's gear couplings are aggregated bodies with constant X
    (no refusal); accelerations, and where no closure row is redundant (the geared arm)
    the joint wrenches with the gear's constraint torque counted as dense counts it, equal
    dense's at the initial state."""
    model = load_model(example_path(name))
    assert model.ng == 1
    dense, emb = _pair(model)
    assert len(emb.gears) == 1 and any(a.gears for a in emb.aggregates)
    assert_reactions_agree(model, dense, emb)
