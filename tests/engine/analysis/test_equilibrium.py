"""Static equilibrium (engine/analysis/equilibrium.py, ``linkwork equilibrium``) against
closed forms: a spring-loaded pendulum, the sprung parallelogram four-bar, the stability
of a hanging, an inverted and a weightless pendulum, and the command's file and refusals."""

import json
import math

import numpy as np
import pytest
from scipy.optimize import brentq

from linkwork.engine.analysis.cli import cmd_equilibrium
from linkwork.engine.analysis.equilibrium import (EquilibriumError, Statics, check_equilibrium, find_equilibrium,
                                                  spec_at_rest)
from linkwork.engine.generators.sprung import sprung_parallelogram
from linkwork.engine.mechfile import load, save, spec_from_dict
from linkwork.engine.model import build_model, load_model
from linkwork.engine.simulation import Settings, Simulation

from ..conftest import example_path

G = 9.81


def pendulum(theta0: float, m=1.5, L=0.8, k=0.0, rest=0.0, torque=0.0, gravity=G) -> dict:
    """A rod of mass ``m`` and length ``L`` on a ground pivot at the origin (axis z),
    ``theta0`` from the downward vertical; optional torsion spring and constant torque."""
    tip = [L * math.sin(theta0), -L * math.cos(theta0), 0.0]
    forces = []
    if k:
        forces.append({"type": "joint-spring", "joint": "J1", "stiffness": k, "damping": 0.1, "rest": rest})
    if torque:
        forces.append({"type": "joint-torque", "joint": "J1", "value": torque})
    I = m * L * L / 12.0
    return {
        "format": "linkwork-mechanism", "version": 1, "name": "pendulum", "gravity": [0.0, -gravity, 0.0],
        "bodies": [{"name": "rod", "mass": m, "inertia": [I, I, I], "position": [t / 2 for t in tip],
                    "shape": {"kind": "rod", "from": [0, 0, 0], "to": tip, "radius": 0.02}}],
        "joints": [{"name": "J1", "type": "revolute", "parent": "ground", "child": "rod", "anchor": [0, 0, 0],
                    "axis": [0, 0, 1]}],
        "forces": forces,
    }


def test_spring_loaded_pendulum_rests_where_its_closed_form_says():
    # V = -m g d cos(th) + k/2 (th - th0 - rest)^2 - tau (th - th0):  m g d sin(th) + k (th - th0 - rest) = tau
    m, L, k, rest, tau, th0 = 1.5, 0.8, 9.0, 0.3, 1.2, 1.1
    model = build_model(spec_from_dict(pendulum(th0, m, L, k, rest, tau)))
    eq = find_equilibrium(model)
    th = brentq(lambda t: m * G * L / 2 * math.sin(t) + k * (t - th0 - rest) - tau, -3.0, 3.0, xtol=1e-15)
    assert abs(eq.q[0] - (th - th0)) < 1e-10
    assert eq.verdict == "stable" and eq.converged
    assert eq.gradient_residual < 1e-10 and eq.constraint_residual == 0.0
    V = -m * G * L / 2 * math.cos(th) + 0.5 * k * (th - th0 - rest) ** 2 - tau * (th - th0)
    # the potential's zero: gravity at the world origin (the pivot), the torque's at the file's angle
    assert eq.energy == pytest.approx(V, abs=1e-10)
    assert eq.eigenvalues[0] == pytest.approx(m * G * L / 2 * math.cos(th) + k, rel=1e-9)


def test_the_potential_gradient_is_minus_the_generalized_force():
    """The exact gradient Newton uses against central differences of the potential, on the
    sprung four-bar away from rest (joint spring, gravity, three tree coordinates)."""
    model = build_model(sprung_parallelogram())
    st = Statics(model)
    q = model.q_zero() + np.array([0.1, -0.2, 0.05])
    rng = np.random.default_rng(3)
    for _ in range(3):
        d = rng.normal(size=model.nv)
        h = 1e-5
        fd = (st.potential(st.retract(q, h * d)) - st.potential(st.retract(q, -h * d))) / (2 * h)
        assert fd == pytest.approx(-st.generalized_force(q) @ d, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("name", ["joint-zoo", "chain-5-spherical-spatial"])
def test_the_generalized_force_of_every_joint_type(name):
    """The backward pass against ``sum_i J_i^T F_i`` from the bodies' twist Jacobians (with
    velocities: the dampers), and against central differences of the potential along
    random increments (spherical joints retract by the rotation, the rest by addition)."""
    model = load_model(example_path(name))
    st = Statics(model)
    rng = np.random.default_rng(5)
    q = st.retract(model.q_zero(), 0.3 * rng.normal(size=model.nv))
    v = rng.normal(size=model.nv)
    for vel in (None, v):
        ref = st.jq_ref.copy()
        Q = st.generalized_force(q, vel)
        st.jq_ref[:] = ref
        st.pose(q)
        J = st.jacobian()
        V = np.zeros((model.nb, 6)) if vel is None else np.ascontiguousarray(np.einsum("bik,k->bi", J, vel))
        Q_ref = np.einsum("bik,bi->k", J, st._wrenches(q, V))
        assert np.abs(Q - Q_ref).max() <= 1e-12 * max(1.0, np.abs(Q_ref).max())
    for _ in range(2):
        d = rng.normal(size=model.nv)
        h = 1e-5
        fd = (st.potential(st.retract(q, h * d)) - st.potential(st.retract(q, -h * d))) / (2 * h)
        assert fd == pytest.approx(-st.generalized_force(q) @ d, rel=1e-6, abs=1e-8)


def test_sprung_parallelogram_rests_where_the_spring_holds_the_weight(tmp_path):
    # parallelogram: crank and rocker turn by the same angle, the coupler translates;
    # V = g sin(th) crank (mA/2 + mB + mC/2) + k/2 (th - th0)^2
    crank, k, th0 = 0.4, 12.0, math.radians(60.0)
    mA, mB, mC = 0.5, 0.75, 0.5
    w = G * crank * (mA / 2 + mB + mC / 2)
    th = brentq(lambda t: w * math.cos(t) + k * (t - th0), -1.5, 1.5, xtol=1e-15)
    model = build_model(sprung_parallelogram())
    eq = find_equilibrium(model)
    j1 = model.q_adr[model.joint_index("J1")]
    assert abs(eq.q[j1] - (th - th0)) < 1e-10
    assert eq.constraint_residual <= 1e-12
    assert eq.verdict == "stable"
    # one freedom: the reduced Hessian along the unit vector of (J1, J2, J4) = (1, -1, 1) / sqrt(3)
    assert eq.eigenvalues[0] * 3 == pytest.approx(k - w * math.sin(th), rel=1e-9)
    # the file at rest loads, is an equilibrium itself, and stays put when run
    out = tmp_path / "rest.mech.json"
    save(spec_at_rest(model, eq.q), out)
    rest = build_model(load(out))
    again = check_equilibrium(rest)
    assert again.gradient_residual < 1e-9 * again.force_scale
    cols, rows = Simulation(rest, Settings(t_end=0.5, dt=0.05)).run_all()
    speeds = rows[:, [i for i, c in enumerate(cols) if c.endswith((".vx", ".vy", ".wz"))]]
    assert np.max(np.abs(speeds)) < 1e-9


def test_stability_of_a_hanging_an_inverted_and_a_weightless_pendulum():
    m, L = 1.5, 0.8
    hanging = find_equilibrium(build_model(spec_from_dict(pendulum(0.0, m, L))))
    assert hanging.verdict == "stable" and hanging.eigenvalues[0] == pytest.approx(m * G * L / 2, rel=1e-9)
    inverted = find_equilibrium(build_model(spec_from_dict(pendulum(math.pi, m, L))))
    assert inverted.iterations == 0  # already at rest: Newton has nothing to descend
    assert inverted.verdict == "unstable" and inverted.eigenvalues[0] == pytest.approx(-m * G * L / 2, rel=1e-9)
    assert inverted.direction_text(0) == "J1 +1"
    weightless = find_equilibrium(build_model(spec_from_dict(pendulum(0.7, m, L, gravity=0.0))))
    assert weightless.verdict == "neutral" and weightless.direction_text(0) == "J1 +1"


def test_command_writes_the_rest_and_refuses_what_it_cannot_do(tmp_path, capsys):
    src = tmp_path / "p.mech.json"
    src.write_text(json.dumps(pendulum(1.1, k=9.0)))
    out = tmp_path / "rest.mech.json"
    assert cmd_equilibrium([str(src), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verdict               stable" in text and f"wrote {out}" in text
    rest = load(out)
    assert rest.joints[0].rate is None and rest.bodies[0].velocity == (0.0, 0.0, 0.0)
    # a held joint keeps its coordinate; an unknown one is refused
    assert cmd_equilibrium([str(src), "--hold", "J1"]) == 0
    assert "no freedom" in capsys.readouterr().out
    assert cmd_equilibrium([str(src), "--hold", "J9"]) == 2
    assert "no joint named 'J9'" in capsys.readouterr().err
    # Newton stopped early: exit 2, saying how far it got
    assert cmd_equilibrium([str(src), "--max-iterations", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("linkwork: ") and "no rest found: after 1 Newton iterations" in err
    # a torque with no potential is refused, naming the force
    d = pendulum(1.1)
    d["joints"][0]["type"] = "spherical"
    del d["joints"][0]["axis"]
    d["forces"] = [{"type": "joint-torque", "joint": "J1", "value": [0.0, 0.0, 1.0]}]
    src.write_text(json.dumps(d))
    assert cmd_equilibrium([str(src)]) == 2
    assert "forces[0]: a constant torque on a spherical joint 'J1' has no potential" in capsys.readouterr().err
    with pytest.raises(EquilibriumError):
        check_equilibrium(build_model(spec_from_dict(pendulum(1.1))))
