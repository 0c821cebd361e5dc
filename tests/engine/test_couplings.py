"""Gear couplings (docs/file-format.md, "Couplings"): physics of the
``dense`` rows, the violation columns, the initial projection, ``info`` and the
refusals of the formulations that do not honour gears."""

import json
import subprocess
import sys

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import SettingsError
from linkwork.engine.forces import force_arrays, joint_acceleration, joint_rate
from linkwork.engine.formulations import default_formulation
from linkwork.engine.formulations.dense import DenseFormulation
from linkwork.engine.initial import initial_state
from linkwork.engine.mechfile import BodySpec, CouplingSpec, MechanismSpec, ShapeSpec, spec_from_dict, spec_to_dict
from linkwork.engine.model import build_model
from linkwork.engine.results import Recorder, columns
from linkwork.engine.simulation import Settings, Simulation, resolve_settings
from linkwork.engine.topology import absolute_counts, analyze

from .conftest import example_path

G = 9.81


def _state(model, coords: dict, rates: dict):
    """Tree state y = [q, v] with the named one-freedom joints set."""
    q, v = model.q_zero(), np.zeros(model.nv)
    for name, val in coords.items():
        q[model.q_adr[model.joint_index(name)]] = val
    for name, val in rates.items():
        v[model.v_adr[model.joint_index(name)]] = val
    return np.concatenate([q, v])


@pytest.mark.parametrize("mu", [10.0, -4.0, 0.5])
def test_geared_pendulum_effective_inertia(mu):
    """(J_l + mu^2 J_r) theta'' = -m g d sin(theta) at consistent states (any theta').

    The link (rod from the pivot, COM at d = L/2) and the rotor (disc on the same axis,
    COM on the axis) both turn about ground-fixed z axes, so their angular velocities
    are theta' and mu theta' and T = (J_l + mu^2 J_r) theta'^2 / 2 with J_l the link's
    inertia about the pivot (central + m d^2) and J_r the rotor's axial inertia; only the
    link's COM height -d cos(theta) changes the potential."""
    theta0 = np.radians(40.0)
    spec = gen.geared_pendulum(ratio=mu, theta0_deg=40.0)
    model = build_model(spec)
    link, rotor = spec.body("link"), spec.body("rotor")
    d = 0.5
    J_l = link.inertia[2][2] + link.mass * d * d
    J_r = rotor.inertia[2][2]
    f = DenseFormulation(model, Settings(formulation="dense"))
    f.initial_state()
    rng = np.random.default_rng(3)
    for _ in range(5):
        q_p, rate = rng.uniform(-2.0, 2.0), rng.uniform(-3.0, 3.0)
        y = _state(model, {"pivot": q_p, "motor": mu * q_p}, {"pivot": rate, "motor": mu * rate})
        vdot = f.rhs(0.0, y)[model.nq:]
        theta = theta0 + q_p
        expected = -link.mass * G * d * np.sin(theta) / (J_l + mu * mu * J_r)
        assert vdot[model.v_adr[model.joint_index("pivot")]] == pytest.approx(expected, rel=1e-10, abs=1e-12)
        assert vdot[model.v_adr[model.joint_index("motor")]] == pytest.approx(mu * expected, rel=1e-10, abs=1e-12)


def _rack_and_pinion(mu: float) -> MechanismSpec:
    """A pinion (revolute about z at the origin) driving a rack (prismatic along x) with
    q_pinion = mu q_rack; gravity along -x: (m + mu^2 J) x'' = -m g."""
    d = {
        "format": "linkwork-mechanism", "version": 1, "name": "rack and pinion", "gravity": [-G, 0.0, 0.0],
        "bodies": [
            {"name": "pinion", "mass": 0.7, "inertia": [0.01, 0.01, 0.02], "position": [0, 0, 0]},
            {"name": "rack", "mass": 1.5, "inertia": [0.01, 0.1, 0.1], "position": [0.2, -0.1, 0]},
        ],
        "joints": [
            {"name": "spin", "type": "revolute", "parent": "ground", "child": "pinion", "anchor": [0, 0, 0],
             "axis": [0, 0, 1]},
            {"name": "slide", "type": "prismatic", "parent": "ground", "child": "rack", "anchor": [0.2, -0.1, 0],
             "axis": [1, 0, 0]},
        ],
        "couplings": [{"type": "gear", "name": "mesh", "driver": "spin", "driven": "slide", "ratio": mu}],
    }
    return spec_from_dict(d)


def test_rack_and_pinion_effective_mass():
    mu = -1.0 / 0.05  # pinion of radius 5 cm, rack moving +x when the pinion turns clockwise
    model = build_model(_rack_and_pinion(mu))
    f = DenseFormulation(model, Settings(formulation="dense"))
    f.initial_state()
    y = _state(model, {"slide": 0.3, "spin": mu * 0.3}, {"slide": -0.7, "spin": -0.7 * mu})
    vdot = f.rhs(0.0, y)[model.nq:]
    expected = -1.5 * G / (1.5 + mu * mu * 0.02)
    assert vdot[model.v_adr[model.joint_index("slide")]] == pytest.approx(expected, rel=1e-10)


def test_geared_pendulum_conserves_energy_with_dop853():
    """A 3 s run of the geared pendulum (ratio 10, released at 40 deg with a pivot rate):
    energy constant, gear and joint residuals at round-off."""
    model = build_model(gen.geared_pendulum(ratio=10.0, rate=1.0))
    sim = Simulation(model, Settings(formulation="dense", integrator="dop853", rtol=1e-10, atol=1e-10,
                                     t_end=3.0, dt=0.01))
    cols, rows = sim.run_all()
    c = {n: rows[:, i] for i, n in enumerate(cols)}
    E = c["energy.total"]
    assert np.abs(E - E[0]).max() < 1e-9
    assert np.ptp(c["energy.kinetic"]) > 1.0  # it swings
    for level in ("position", "velocity", "acceleration"):
        assert c[f"violation.{level}"].max() < 1e-10
    assert np.abs(c["joint.motor.q"] - 10.0 * c["joint.pivot.q"]).max() < 1e-10
    assert np.abs(c["joint.motor.qd"] - 10.0 * c["joint.pivot.qd"]).max() < 1e-10
    # the gear torque is applied, not a reaction: no reaction moment about either axis, and
    # each joint's reaction force balances its body (the rotor's COM never moves)
    assert np.abs(c["reaction.pivot.nz"]).max() < 1e-10 and np.abs(c["reaction.motor.nz"]).max() < 1e-10
    assert np.abs(c["reaction.motor.fy"] - 0.5 * G).max() < 1e-10


def test_joint_acceleration_is_the_tree_acceleration():
    """joint_acceleration (used by the gear residual's acceleration level) equals the tree
    joint acceleration of every revolute and prismatic joint, on moving predecessors too."""
    model = build_model(gen.joint_zoo())
    f = DenseFormulation(model, Settings(formulation="dense"))
    y0 = f.initial_state()
    rng = np.random.default_rng(5)
    fa = force_arrays(model)
    one = [j for j in range(model.nb) if model.jtype[j] in (0, 1)]  # REVOLUTE, PRISMATIC
    assert {model.jtype[j] for j in one} == {0, 1} and any(model.pred[j] >= 0 for j in one)
    for _ in range(3):
        y = y0.copy()
        y[:model.nq] = f._apply_increment(model.q_zero(), rng.normal(0, 0.4, model.nv))
        y[model.nq:] = rng.normal(0, 1.0, model.nv)
        ev = f.evaluate(0.0, y)
        vdot, v = ev.extra["vdot"], y[model.nq:]
        for j in one:
            assert joint_rate(fa, j, ev.x, ev.R, ev.V) == pytest.approx(v[model.v_adr[j]], rel=1e-12, abs=1e-12)
            assert joint_acceleration(fa, j, ev.x, ev.R, ev.V, ev.acc) == pytest.approx(
                vdot[model.v_adr[j]], rel=1e-10, abs=1e-10)


def test_violation_columns_include_the_gear_residual():
    """A state that keeps every joint but breaks the gear: violation.* equal the gear
    residual |q_d - mu q_n| and its two derivatives."""
    mu = 10.0
    geared = gen.geared_pendulum(ratio=mu)
    free = build_model(geared.with_(couplings=()))
    model = build_model(geared)
    assert free.joint_names == model.joint_names and free.body_names == model.body_names
    f = DenseFormulation(free, Settings(formulation="dense"))
    f.initial_state()
    y = _state(free, {"pivot": 0.2, "motor": 1.5}, {"pivot": -0.4, "motor": 2.0})
    ev = f.evaluate(0.0, y)
    row = Recorder(model).row(ev)
    cols = columns(model)
    vdot = ev.extra["vdot"]
    ip, im = free.v_adr[free.joint_index("pivot")], free.v_adr[free.joint_index("motor")]
    assert row[cols.index("violation.position")] == pytest.approx(abs(1.5 - mu * 0.2), rel=1e-12)
    assert row[cols.index("violation.velocity")] == pytest.approx(abs(2.0 - mu * -0.4), rel=1e-12)
    assert row[cols.index("violation.acceleration")] == pytest.approx(abs(vdot[im] - mu * vdot[ip]), rel=1e-9)
    # the same state through the ungeared model's recorder: joints only, all at round-off
    free_row = Recorder(free).row(ev)
    assert free_row[cols.index("violation.position")] < 1e-12


def test_initial_rates_are_made_consistent_with_the_gear():
    model = build_model(gen.geared_pendulum(ratio=10.0, rate=1.5))
    ini = initial_state(model)
    assert ini.V[model.body_index("rotor"), 5] == pytest.approx(15.0, rel=1e-12)
    assert ini.V[model.body_index("link"), 5] == pytest.approx(1.5, rel=1e-12)
    assert ini.rate_residual < 1e-12 and "kept exactly" in ini.report()
    # rates on both geared joints that contradict the gear: the gear wins, the report says so
    d = spec_to_dict(gen.geared_pendulum(ratio=10.0, rate=1.5))
    d["joints"][1]["rate"] = 3.0
    ini = initial_state(build_model(spec_from_dict(d)))
    w_rotor, w_link = ini.V[model.body_index("rotor"), 5], ini.V[model.body_index("link"), 5]
    assert w_rotor == pytest.approx(10.0 * w_link, rel=1e-12)
    assert ini.rate_residual > 0.1 and "not all kept" in ini.report()


def test_info_counts_each_gear_as_one_constraint():
    arm = build_model(gen.geared_arm())
    topo = analyze(arm)
    assert (arm.nv, topo.dof, topo.redundant, topo.couplings) == (3, 2, 0, 1)
    assert topo.equations == arm.nc + 1 + arm.nb
    coords, eqs, dof, red = absolute_counts(arm)
    assert (eqs, dof, red) == (topo.equations, topo.dof, topo.redundant)
    fb = build_model(gen.geared_fourbar())
    topo = analyze(fb)
    assert (topo.dof, topo.couplings) == (1, 1)
    assert absolute_counts(fb)[2:] == (topo.dof, topo.redundant)
    # the parallelogram's crank J1 (ground -> A) and rocker J4 (C -> ground: the file measures
    # ground's rotation relative to C) have q_J1 = -q_J4: geared -1 they keep the one freedom,
    # geared +1 or 2 they lock it
    for ratio, dof in ((-1.0, 1), (1.0, 0), (2.0, 0)):
        m = build_model(gen.fourbar().with_(couplings=(CouplingSpec("G", "J1", "J4", ratio),)))
        assert analyze(m).dof == dof == absolute_counts(m)[2]


def test_info_cli_lists_couplings():
    path = str(example_path("geared-arm"))
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "info", path, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["couplings"] == [{"name": "reduction", "type": "gear", "driver": "motor", "driven": "elbow",
                               "ratio": 10.0}]
    assert (d["coupling_equations"], d["dof"], d["joint_equations"]) == (1, 2, 15)
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "info", path], capture_output=True, text=True)
    assert "gear reduction" in r.stdout and "1 gear" in r.stdout


@pytest.mark.parametrize("name", ["dca", "hdca", "index3", "rcr"])
def test_formulations_without_gears_refuse_naming_the_coupling(name):
    model = build_model(gen.geared_arm())
    with pytest.raises(SettingsError) as ei:
        resolve_settings(model, Settings(formulation=name))
    msg = str(ei.value)
    assert "'reduction'" in msg and "couplings[0]" in msg and "formulations that can: dense" in msg


def test_default_formulation_of_a_geared_model_is_dense():
    assert default_formulation(build_model(gen.geared_arm())) == "dense"  # an open chain: dca otherwise
    assert default_formulation(build_model(gen.geared_arm().with_(couplings=()))) == "dca"
    assert resolve_settings(build_model(gen.geared_fourbar()), Settings()).formulation == "dense"


def test_cli_refuses_a_geared_run_with_exit_2():
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(example_path("geared-arm")),
                        "--formulation", "rcr", "--t-end", "0.1"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "reduction" in r.stderr and "dense" in r.stderr


def test_dense_projection_restores_the_gear():
    """post_step's mass-orthogonal projections bring a state that breaks the gear (at the
    position and velocity levels) back onto it, on a loop mechanism (cut rows + gear row)."""
    from linkwork.engine.constraints import coupling_rows

    model = build_model(gen.geared_fourbar())
    f = DenseFormulation(model, Settings(formulation="dense"))
    y = f.initial_state()
    assert f.projects
    i_m = model.joint_index("motor")
    y[model.q_adr[i_m]] += 0.05  # the motor turned without the crank
    y[model.nq + model.v_adr[i_m]] += 2.0
    phi, K, _ = coupling_rows(model, y[:model.nq])
    assert abs(phi[0]) == pytest.approx(0.05) and abs(K @ y[model.nq:])[0] == pytest.approx(2.0)
    y2 = f.post_step(0.0, y)
    phi, K, _ = coupling_rows(model, y2[:model.nq])
    assert abs(phi[0]) < 1e-12 and abs(K @ y2[model.nq:])[0] < 1e-12
    assert np.abs(f.phi[:f.ncut_rows]).max() < 1e-10  # the loop still closed
