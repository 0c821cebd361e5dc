"""The dense reference against closed forms and physical laws (its acceptance figures)."""

import numpy as np
import pytest
import scipy.special as sp

from linkwork.engine import generators as gen
from linkwork.engine.initial import joint_subspace
from linkwork.engine.mechfile import GROUND, BodySpec, JointSpec, MechanismSpec, ShapeSpec, load, spec_from_dict, spec_to_dict
from linkwork.engine.formulations.base import Formulation
from linkwork.engine.formulations.dense import DenseFormulation
from linkwork.engine.model import build_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation

from ..conftest import example_path


def _run(spec_or_path, **kw):
    spec = load(spec_or_path) if not isinstance(spec_or_path, MechanismSpec) else spec_or_path
    sim = Simulation(build_model(spec), Settings(formulation="dense", **kw))
    cols, rows = sim.run_all()
    return sim, {n: rows[:, i] for i, n in enumerate(cols)}


def test_parallelogram_fourbar_matches_closed_form():
    """Crank angle within 1e-6 rad of the pendulum solution over 5 s, energy drift < 1e-8 J.

    The coupler translates, so the crank obeys I_eff theta'' = -g cos(theta) (m L + m_B L) with
    I_eff = J_A + J_C + 2 m (L/2)^2 + m_B L^2 = 3.5; with phi = theta + pi/2 this is a pendulum of
    amplitude 135 deg released at rest: sin(phi/2) = k sn(K(k) - w0 t, k), k = sin(67.5 deg).
    The motion passes the folded (singular) configuration every half swing.
    """
    _, c = _run(example_path("parallelogram-fourbar"), integrator="dop853", rtol=1e-10, atol=1e-10,
                t_end=5.0, dt=0.01)
    t = c["t"]
    theta = np.pi / 4 + c["joint.J1.q"]
    w0 = np.sqrt(2 * 9.81 / 3.5)
    k = np.sin(3 * np.pi / 8)
    exact = 2 * np.arcsin(k * sp.ellipj(sp.ellipk(k * k) - w0 * t, k * k)[0]) - np.pi / 2
    assert np.abs(theta - exact).max() < 1e-6
    E = c["energy.total"]
    assert np.abs(E - E[0]).max() < 1e-8
    # it really passes the singular configurations (crank horizontal both ways)
    assert theta.max() > 0.7 and theta.min() < -3.9
    # the coupler never rotates
    assert np.abs(c["B.q3"]).max() < 1e-7


def test_spatial_double_pendulum_energy_and_violation():
    """Energy drift < 1e-6 J over 10 s (dop853, 1e-10), position violation < 1e-9."""
    _, c = _run(example_path("spatial-double-pendulum"), integrator="dop853", rtol=1e-10, atol=1e-10,
                t_end=10.0, dt=0.01)
    E = c["energy.total"]
    assert np.abs(E - E[0]).max() < 1e-6
    assert c["violation.position"].max() < 1e-9
    assert c["violation.velocity"].max() < 1e-9
    assert c["violation.acceleration"].max() < 1e-8
    assert np.abs(c["A.x"] - 0.5).max() > 0.1  # it moves


def _pendulum(k=0.0, damping=0.0, theta0=0.3):
    """One revolute pendulum: rod of length 1 from the origin, COM at 0.5, J = 0.1."""
    c, s = np.cos(theta0), np.sin(theta0)
    tip = (c, s, 0.0)
    body = BodySpec("P", 2.0, ((0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)), (0.5 * c, 0.5 * s, 0.0),
                    shape=ShapeSpec("rod", p_from=(0.0, 0.0, 0.0), p_to=tip, radius=0.02))
    joint = JointSpec("J", "revolute", GROUND, "P", (0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    return spec_from_dict(spec_to_dict(MechanismSpec(bodies=(body,), joints=(joint,))))


def test_pendulum_reaction_is_m_times_a_minus_g():
    """The pivot force on the body equals m (a_C - g); its moment about the pivot has no z part."""
    sim, c = _run(_pendulum(), integrator="rk4", dt=0.001, t_end=0.5)
    m = 2.0
    for i in (0, 100, 499):
        a = np.array([np.gradient(c["P.vx"], c["t"])[i], np.gradient(c["P.vy"], c["t"])[i]])
        f = np.array([c["reaction.J.fx"][i], c["reaction.J.fy"][i]])
        assert np.allclose(f, m * (a - np.array([0.0, -9.81])), atol=2e-3)
        assert abs(c["reaction.J.nz"][i]) < 1e-9  # a revolute joint transmits no torque about its axis


@pytest.mark.nojit
def test_pendulum_reaction_at_rest_is_the_weight():
    spec = _pendulum(theta0=-np.pi / 2)
    _, c = _run(spec, integrator="rk4", dt=0.01, t_end=0.05)
    assert np.allclose(c["reaction.J.fy"], 2.0 * 9.81, atol=1e-9)
    assert np.allclose(c["reaction.J.fx"], 0.0, atol=1e-9)


@pytest.mark.nojit
@pytest.mark.parametrize("spec", [gen.joint_zoo(), gen.fourbar(), gen.slider_crank(),
                                  gen.random_mechanism(3, 6, loops=2)], ids=lambda s: s.name)
def test_reactions_do_no_work_on_joint_freedoms(spec):
    """Reactions are constraint wrenches: S_j^T f_j = 0 along every freedom (springs are applied forces)."""
    model = build_model(spec)
    sim = Simulation(model, Settings(formulation="dense", t_end=0.2, dt=0.01))
    form = sim.formulation
    y = form.initial_state()
    for _ in range(5):
        y = y + 0.01 * form.rhs(0.0, y)
    ev = form.evaluate(0.0, form.post_step(0.0, y))
    for j in range(model.nj):
        Sj = joint_subspace(model, j, ev.R)
        w = ev.reactions[j]
        scale = max(1.0, np.abs(w).max())
        assert np.abs(Sj @ w).max(initial=0.0) < 1e-9 * scale, model.joint_names[j]


def test_redundant_fivebar_conserves_energy():
    _, c = _run(example_path("fivebar-redundant"), integrator="dop853", rtol=1e-10, atol=1e-10, t_end=2.0)
    E = c["energy.total"]
    assert np.abs(E - E[0]).max() < 1e-7
    assert c["violation.position"].max() < 1e-10
    assert c["violation.velocity"].max() < 1e-10


@pytest.mark.parametrize("seed", [7, 35])
def test_a_loop_joint_redundant_with_the_tree_exerts_nothing(seed):
    """Random mechanisms whose loop joint c0 is redundant with the tree (seed 35: a hinge
    beside a fixed joint; seed 7: a ball joint whose rows the tree already holds): every
    row of K cancels to round-off, 1e-16.  A filter relative to K's own largest singular
    value kept that round-off as a constraint: accelerations off by 7.2 and 13 from
    every other formulation (3.4 and 13 without the applied forces), and the run stopped
    at t = 0.01 s on an energy jump.  The accelerations are those of the tree without c0."""
    import dataclasses

    spec = gen.random_mechanism(seed, 8, 1)
    tree = dataclasses.replace(spec, joints=tuple(j for j in spec.joints if j.name != "c0"))
    acc, form = {}, {}
    for label, s in (("loop", spec), ("tree", tree)):
        f = form[label] = Simulation(build_model(s), Settings(formulation="dense")).formulation
        acc[label] = f.evaluate(0.0, f.initial_state()).acc
    assert np.abs(acc["tree"]).max() > 1.0
    assert np.abs(acc["loop"] - acc["tree"]).max() < 1e-10 * np.abs(acc["tree"]).max()
    loop = form["loop"]
    assert loop.singularity(loop.initial_state()) == 1.0  # no live loop direction: nothing singular
    sim, c = _run(spec, integrator="dop853", rtol=1e-10, atol=1e-10, t_end=0.2)
    _, ct = _run(tree, integrator="dop853", rtol=1e-10, atol=1e-10, t_end=0.2)
    assert c["t"][-1] == pytest.approx(0.2)
    for n in ("energy.total",) + tuple(k for k in ct if k.endswith((".x", ".y", ".z"))):
        assert np.abs(c[n] - ct[n]).max() < 1e-8, n


def test_projection_can_be_switched_off():
    sim, c = _run(example_path("loop-4"), integrator="rk4", dt=0.01, t_end=1.0, projection=False)
    assert not sim.formulation.projects
    sim2, c2 = _run(example_path("loop-4"), integrator="rk4", dt=0.01, t_end=1.0)
    assert sim2.formulation.projects
    assert c["violation.position"][-1] > c2["violation.position"][-1]


def test_implicit_integrators_on_redundant_closures_take_ordinary_steps():
    """radau's finite-difference Jacobian moves the state off ladder-1's closure, which
    lifts its two redundant directions' singular values from 1e-17 to ~the offset; an
    exact pseudo-inverse then made the right-hand side's Jacobian ~1e9 and radau took
    1e5 evaluations for 0.1 s (config.DENSE_BASE_FILTER_RTOL)."""
    model = build_model(load(example_path("ladder-1")))
    runs = {}
    for integ in ("radau", "rk45"):
        sim = Simulation(model, Settings(formulation="dense", integrator=integ, dt=0.01, t_end=0.2))
        count = [0]
        rhs = sim.formulation.rhs

        def counted(t, y, rhs=rhs, count=count):
            count[0] += 1
            return rhs(t, y)

        sim.formulation.rhs = counted
        _, rows = sim.run_all()
        runs[integ] = (count[0], rows)
    n_radau, rows = runs["radau"]
    assert n_radau < 2000
    assert np.abs(rows[:, 1:] - runs["rk45"][1][:, 1:]).max() < 1e-6


def test_a_long_chain_is_solved_to_round_off_not_to_the_mass_matrix_condition():
    """256 spherical bodies: the mass matrix's condition is 3.5e8, and the Cholesky solve
    alone was 1.7e-10 relative from ``dca``'s recursion.  With one step of iterative
    refinement (the residual by Newton-Euler) the two agree to round-off, ~1e-13."""
    from linkwork.engine.studies.peers import chain_spec

    model = build_model(chain_spec(256, "spherical"))
    acc = {}
    for f in ("dense", "dca"):
        form = Simulation(model, Settings(formulation=f, threads=1)).formulation
        acc[f] = form.evaluate(0.0, form.initial_state()).acc
    assert np.abs(acc["dense"] - acc["dca"]).max() < 1e-12 * np.abs(acc["dca"]).max()


def _stepping_pair(model):
    """Two dense formulations of ``model`` at the same initial state."""
    a = DenseFormulation(model, Settings(formulation="dense"))
    b = DenseFormulation(model, Settings(formulation="dense"))
    return a, b, a.initial_state(), b.initial_state()


COMPILED_STEP_CASES = sorted(p.name[: -len(".mech.json")] for p in examples_dir().glob("*.mech.json"))


@pytest.mark.parametrize("case", COMPILED_STEP_CASES + [f"random-{s}" for s in range(8)])
def test_compiled_rk4_steps_repeat_the_generic_loop(case):
    """dense's rk4 intervals in one kernel call (dense_solve.rk4_steps) against the
    integrator's generic loop over the same formulation's rhs, post_step and
    watch_singular (Formulation.rk4_steps): the same states to 1e-12 relative over 40
    output intervals of 2 steps each, on every bundled example and eight random
    mechanisms (0-3 loops), through the singularity watch's filter changes (the
    parallelogram four-bar folds) and spherical joints' quaternions."""
    if case.startswith("random-"):
        seed = int(case.split("-")[1])
        model = build_model(gen.random_mechanism(seed=seed, loops=seed % 4))
    else:
        model = build_model(load(example_path(case)))
    fast, slow, y_fast, y_slow = _stepping_pair(model)
    assert np.array_equal(y_fast, y_slow)
    y_start = y_fast.copy()
    dt = 0.01
    for k in range(40):
        t0, t1 = k * dt, (k + 1) * dt
        y_fast = fast.rk4_steps(t0, t1, y_fast, 2)
        y_slow = Formulation.rk4_steps(slow, t0, t1, y_slow, 2)
        scale = np.maximum(np.abs(y_slow), 1.0)
        assert np.abs(y_fast - y_slow).max() <= 1e-12 * scale.max(), f"interval {k}"
        assert fast.mu_rel == slow.mu_rel
    assert fast.nfev == slow.nfev == 40 * 2 * 4
    assert np.abs(y_fast - y_start).max() > 1e-6  # it moved


@pytest.mark.parametrize("case", ["parallelogram-fourbar", "fivebar-redundant", "slider-crank-driven",
                                  "fourbar-geared", "double-loop-8", "random-3"])
def test_the_step_after_a_projection_takes_its_geometry_bit_for_bit(case):
    """After an rk4 step, the projection of the velocities has formed the positions, the
    mass matrix, its factor and the decomposition of the whitened closure rows at the new
    state: the singularity watch and the next evaluation take them (dense_solve._fresh)
    instead of forming them again.  What they give is what a formulation that forms them
    anew gives at the same state, bit for bit: the measure, the accelerations, the
    multipliers and the reactions."""
    if case.startswith("random-"):
        model = build_model(gen.random_mechanism(seed=3, loops=2))
    else:
        model = build_model(load(example_path(case)))
    kept, anew, y, _ = _stepping_pair(model)
    dt = 0.01
    for k in range(20):
        t = (k + 1) * dt
        y = kept.rk4_steps(k * dt, t, y, 1)
        geometry = kept.work.geometry
        assert geometry[0] == 1.0 and np.array_equal(geometry[1:], y[: model.nq])  # the step's own
        assert kept.health()["loop_conditioning"] == anew.singularity(y)
        anew.mu_rel = kept.mu_rel
        a = kept.evaluate(t, y)
        b = anew.evaluate(t, y)
        assert np.array_equal(a.extra["vdot"], b.extra["vdot"])
        assert np.array_equal(kept.lam, anew.lam)
        assert np.array_equal(a.reactions, b.reactions) and np.array_equal(a.acc, b.acc)


def test_a_projector_projects_as_dense_does_and_refuses_to_integrate():
    """``projector=True`` (what ``dca``, ``hdca`` and ``rcr`` project with) runs the same
    projection code as the whole formulation, bit for bit, and refuses what it lacks."""
    model = build_model(load(example_path("slider-crank-driven")))
    full = DenseFormulation(model, Settings(formulation="dense"))
    proj = DenseFormulation(model, Settings(formulation="dense"), projector=True)
    y = full.initial_state()
    assert np.array_equal(proj.initial_state(), y)  # which also scales the driver rows alike
    q, v = y[: model.nq] + 1e-3, y[model.nq:] + 1e-2  # off the loop and off the driver's rate
    for t in (0.0, 0.3):
        assert full.closure_residuals(q, v, t) == proj.closure_residuals(q, v, t)
        assert max(full.closure_residuals(q, v, t)) > 1e-4
        qa, va = full.project_state(q, v, t=t)
        qb, vb = proj.project_state(q, v, t=t)
        assert np.array_equal(qa, qb) and np.array_equal(va, vb)
        assert max(proj.closure_residuals(qb, vb, t)) < 1e-10
    assert full.singularity(y) == proj.singularity(y)
    with pytest.raises(TypeError, match="does not integrate"):
        proj.rhs(0.0, y)
