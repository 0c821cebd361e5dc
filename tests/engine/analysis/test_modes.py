"""Linear modes (engine/analysis/modes.py, ``linkwork modes``) against closed forms -- a
two-mass spring chain on prismatic joints, the linearised double pendulum -- and a four-bar
with a torsion spring against the frequency of a small-amplitude simulation."""

import csv
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from linkwork.engine.analysis.cli import cmd_modes
from linkwork.engine.analysis.equilibrium import find_equilibrium, spec_at_rest
from linkwork.engine.analysis.modes import linear_modes
from linkwork.engine.generators import fourbar
from linkwork.engine.mechfile import ForceSpec, spec_from_dict
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation

G = 9.81


def two_mass_chain(m1, m2, k1, k2, c1=0.0, c2=0.0, stretch=0.0) -> dict:
    """ground -(k1)- A -(k2)- B along x, each on a prismatic joint along x; the springs'
    rest lengths are the file's distances minus ``stretch``."""
    body = lambda name, x, m: {"name": name, "mass": m, "inertia": [0.1, 0.1, 0.1], "position": [x, 0.0, 0.0]}
    spring = lambda b1, p1, b2, p2, k, c: {"type": "spring", "body1": b1, "point1": p1, "body2": b2, "point2": p2,
                                           "stiffness": k, "damping": c, "rest_length": 1.0 - stretch}
    return {
        "format": "linkwork-mechanism", "version": 1, "name": "two masses", "gravity": [0.0, -G, 0.0],
        "bodies": [body("A", 1.0, m1), body("B", 2.0, m2)],
        "joints": [{"name": "PA", "type": "prismatic", "parent": "ground", "child": "A", "anchor": [1, 0, 0],
                    "axis": [1, 0, 0]},
                   {"name": "PB", "type": "prismatic", "parent": "A", "child": "B", "anchor": [2, 0, 0],
                    "axis": [1, 0, 0]}],
        "forces": [spring("ground", [0, 0, 0], "A", [1, 0, 0], k1, c1), spring("A", [1, 0, 0], "B", [2, 0, 0], k2, c2)],
    }


def test_two_mass_chain_frequencies_shapes_and_damping():
    m1, m2, k1, k2, alpha = 1.0, 2.0, 100.0, 50.0, 0.004
    # C = alpha K (the dampers in proportion to the springs): modal ratios zeta = alpha omega / 2 exactly
    spec = spec_from_dict(two_mass_chain(m1, m2, k1, k2, alpha * k1, alpha * k2, stretch=0.05))
    md = linear_modes(build_model(spec))
    # rest: both springs carry the same tension, so each is stretched by the same 0.05... back to rest length
    eq = md.equilibrium
    assert eq.q[0] == pytest.approx(-0.05, abs=1e-12) and eq.q[1] == pytest.approx(-0.05, abs=1e-12)
    # det(K - w2 M) = 0 with K = [[k1 + k2, -k2], [-k2, k2]], M = diag(m1, m2)
    a, b, c = m1 * m2, -((k1 + k2) * m2 + k2 * m1), k1 * k2
    w2 = np.array([(-b - math.sqrt(b * b - 4 * a * c)) / (2 * a), (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)])
    np.testing.assert_allclose(md.eigenvalues, w2, rtol=1e-8)
    np.testing.assert_allclose(md.frequency_hz, np.sqrt(w2) / (2 * math.pi), rtol=1e-8)
    np.testing.assert_allclose(md.damping_ratios, alpha * np.sqrt(w2) / 2, rtol=1e-8)
    M = np.diag([m1, m2])
    for k in range(2):
        phi = md.shapes[:, k]  # tree coordinates: A's slide, B's slide relative to A
        x = np.array([phi[0], phi[0] + phi[1]])  # absolute displacements
        assert x @ M @ x == pytest.approx(1.0, rel=1e-10)  # unit modal mass
        assert x[1] / x[0] == pytest.approx((k1 + k2 - w2[k] * m1) / k2, rel=1e-8)


def double_pendulum(m1, l1, m2, l2, angle=0.0, lower=0.0) -> dict:
    """Two rods hanging from a pivot at the origin (axes z); ``angle`` tilts the first
    and ``lower`` the second from the downward vertical."""
    s, c = math.sin(angle), math.cos(angle)
    p1 = [l1 * s, -l1 * c, 0.0]
    p2 = [p1[0] + l2 * math.sin(lower), p1[1] - l2 * math.cos(lower), 0.0]
    # a rod along its body y axis: the small moment about that axis, m L^2 / 12 about z
    rod = lambda name, a, b, m, L: {"name": name, "mass": m, "inertia": [m * L * L / 12, 1e-4, m * L * L / 12],
                                    "position": [(u + v) / 2 for u, v in zip(a, b)],
                                    "shape": {"kind": "rod", "from": a, "to": b, "radius": 0.02}}
    r1 = rod("upper", [0, 0, 0], p1, m1, l1)
    r1["orientation"] = [math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)]  # its y axis along the rod
    r2 = rod("lower", p1, p2, m2, l2)
    r2["orientation"] = [math.cos(lower / 2), 0.0, 0.0, math.sin(lower / 2)]
    return {
        "format": "linkwork-mechanism", "version": 1, "name": "double pendulum", "gravity": [0.0, -G, 0.0],
        "bodies": [r1, r2],
        "joints": [{"name": "J1", "type": "revolute", "parent": "ground", "child": "upper", "anchor": [0, 0, 0],
                    "axis": [0, 0, 1]},
                   {"name": "J2", "type": "revolute", "parent": "upper", "child": "lower", "anchor": p1,
                    "axis": [0, 0, 1]}],
        "forces": [],
    }


@pytest.mark.parametrize("angle", [0.0, 0.4])
def test_double_pendulum_small_oscillations(angle):
    m1, l1, m2, l2 = 1.2, 0.7, 0.8, 0.5
    # absolute angles: M = [[I1 + m2 l1^2, m2 l1 d2], [m2 l1 d2, I2]], K = diag((m1 d1 + m2 l1) g, m2 d2 g)
    d1, d2 = l1 / 2, l2 / 2
    I1 = m1 * l1 * l1 / 3
    I2 = m2 * l2 * l2 / 3
    M = np.array([[I1 + m2 * l1 * l1, m2 * l1 * d2], [m2 * l1 * d2, I2]])
    K = np.diag([(m1 * d1 + m2 * l1) * G, m2 * d2 * G])
    a = M[0, 0] * M[1, 1] - M[0, 1] ** 2
    b = -(K[0, 0] * M[1, 1] + K[1, 1] * M[0, 0])
    c = K[0, 0] * K[1, 1]
    w2 = np.array([(-b - math.sqrt(b * b - 4 * a * c)) / (2 * a), (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)])
    # released tilted, the rest is found first (the lower rod then hangs tilted relative to the upper)
    md = linear_modes(build_model(spec_from_dict(double_pendulum(m1, l1, m2, l2, angle))))
    np.testing.assert_allclose(md.omega, np.sqrt(w2), rtol=1e-8)
    assert md.equilibrium.verdict == "stable"
    assert np.all(np.isnan(md.damping_ratios) | (md.damping_ratios == 0.0))


def crank_rocker_with_spring(k=3.0):
    spec = fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0, crank_angle_deg=60.0, inertia=None)
    return spec.with_(forces=(ForceSpec(type="joint-spring", joint="J1", stiffness=k, damping=0.0, rest=0.3),))


def test_fourbar_with_torsion_spring_against_a_small_amplitude_simulation():
    model = build_model(crank_rocker_with_spring())
    md = linear_modes(model)
    assert md.equilibrium.verdict == "stable" and md.eigenvalues.shape == (1,)
    # released from rest with the crank turning at 2e-3 rad/s: a 20 s run, tight dop853
    rest = spec_at_rest(model, md.equilibrium.q)
    joints = tuple(replace(j, rate=(2e-3,) if j.name == "J1" else None) for j in rest.joints)
    sim = Simulation(build_model(rest.with_(joints=joints)),
                     Settings(integrator="dop853", rtol=1e-11, atol=1e-12, dt=0.005, t_end=20.0))
    cols, rows = sim.run_all()
    t, w = rows[:, 0], rows[:, cols.index("A.wz")]
    i = np.flatnonzero(np.sign(w[:-1]) * np.sign(w[1:]) < 0)
    tz = t[i] - w[i] * (t[i + 1] - t[i]) / (w[i + 1] - w[i])  # zero crossings, linear interpolation
    f_sim = (len(tz) - 1) / (2.0 * (tz[-1] - tz[0]))
    assert len(tz) > 10
    assert f_sim == pytest.approx(md.frequency_hz[0], rel=1e-3)


def test_command_prints_the_table_and_writes_both_files(tmp_path, capsys):
    src = tmp_path / "chain.mech.json"
    src.write_text(json.dumps(two_mass_chain(1.0, 2.0, 100.0, 50.0, 0.4, 0.2)))
    out = tmp_path / "modes"
    assert cmd_modes([str(src), "--out", str(out), "--count", "1"]) == 0
    text = capsys.readouterr().out
    assert "frequency [Hz]" in text and text.count("\n") == 4  # title, header, one mode, wrote
    rows = list(csv.DictReader(open(out / "modes.csv")))
    assert len(rows) == 1 and set(rows[0]) == {"mode", "frequency_hz", "omega_rad_s", "damping_ratio", "eigenvalue"}
    assert float(rows[0]["omega_rad_s"]) == pytest.approx(2 * math.pi * float(rows[0]["frequency_hz"]), rel=1e-15)
    shapes = list(csv.DictReader(open(out / "shapes.csv")))
    assert [(r["mode"], r["coordinate"]) for r in shapes] == [("1", "PA"), ("1", "PB")]
    # --at-file refuses a configuration that is not at rest (the springs are stretched)
    d = two_mass_chain(1.0, 2.0, 100.0, 50.0, stretch=0.05)
    src.write_text(json.dumps(d))
    assert cmd_modes([str(src), "--at-file"]) == 2
    assert "not an equilibrium" in capsys.readouterr().err


def test_a_driven_joint_is_held_where_the_file_has_it():
    """The upper rod driven (its joint held at the file's tilt): the lower rod, drawn at
    another tilt, comes to hang straight down; one mode is left, the lower rod's swing
    about a fixed pivot.  Without the driver the upper rod would hang down too."""
    m1, l1, m2, l2, angle, lower = 1.2, 0.7, 0.8, 0.5, 0.4, -0.3
    d = double_pendulum(m1, l1, m2, l2, angle, lower)
    d["drivers"] = [{"type": "driver", "name": "motor", "joint": "J1",
                     "motion": {"kind": "harmonic", "amplitude": 0.3, "frequency": 1.0}}]
    md = linear_modes(build_model(spec_from_dict(d)))
    q = md.equilibrium.q
    assert q[0] == 0.0 and abs(q[1] - (0.0 - lower)) < 1e-10  # J2 turns the lower rod to hanging
    assert md.eigenvalues.shape == (1,)
    assert md.omega[0] == pytest.approx(math.sqrt(m2 * G * l2 / 2 / (m2 * l2 * l2 / 3)), rel=1e-8)
    free = find_equilibrium(build_model(spec_from_dict(double_pendulum(m1, l1, m2, l2, angle, lower))))
    assert abs(free.q[0] + angle) < 1e-10 and abs(free.q[1] - (angle - lower)) < 1e-10


def test_linearisation_matches_finite_differences_of_the_engines_own_dynamics():
    """The slow, independent reference: ``dca``'s accelerations at rest (v = 0) at points
    ``q* + eps N e_k`` moved back onto the loop, differenced centrally, give the reduced
    ``-M_r^-1 K_r``; its eigenvalues are the modes' omega^2.  A loop of four links hanging
    between two pivots, two freedoms, a point spring across it: the geometric terms of the
    loop's constraint forces are in K."""
    from linkwork.engine.analysis.equilibrium import Statics
    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.generators import closed_loop
    from linkwork.engine.simulation import resolve_settings

    spec = closed_loop(4, inertia=None)
    b = spec.bodies
    spring = ForceSpec(type="spring", body1=b[0].name, point1=b[0].position, body2=b[2].name,
                       point2=b[2].position, stiffness=40.0, damping=0.0, rest_length=0.5)
    model = build_model(spec.with_(forces=(spring,)))
    md = linear_modes(model)
    assert md.eigenvalues.shape == (2,) and md.equilibrium.verdict == "stable"
    st = Statics(model)
    dca = REGISTRY["dca"](model, resolve_settings(model, Settings(formulation="dca")))
    N, eps = md.N, 1e-4
    cols = []
    for k in range(N.shape[1]):
        acc = []
        for e in (eps, -eps):
            q, res = st.project(st.retract(md.equilibrium.q, e * N[:, k]))
            assert res <= 1e-12
            acc.append(dca.rhs(0.0, np.concatenate([q, np.zeros(model.nv)]))[model.nq:])
        cols.append(N.T @ (acc[0] - acc[1]) / (2 * eps))
    w2 = np.sort(np.linalg.eigvals(-np.array(cols).T).real)
    np.testing.assert_allclose(w2, md.eigenvalues, rtol=1e-6)


def test_free_spins_are_neutral_modes_of_zero_frequency():
    """A rod hanging from a spherical joint: its spin about its own (vertical) axis is free
    -- a neutral mode of frequency 0, not an unstable one -- and it swings in two planes
    at sqrt(m g d / I_pivot)."""
    m, L = 1.5, 0.8
    d = {"format": "linkwork-mechanism", "version": 1, "name": "ball pendulum", "gravity": [0.0, -G, 0.0],
         "bodies": [{"name": "rod", "mass": m, "inertia": [m * L * L / 12, 1e-3, m * L * L / 12],
                     "position": [0.0, -L / 2, 0.0]}],
         "joints": [{"name": "ball", "type": "spherical", "parent": "ground", "child": "rod", "anchor": [0, 0, 0]}],
         "forces": []}
    md = linear_modes(build_model(spec_from_dict(d)))
    assert md.equilibrium.verdict == "neutral"
    assert list(md.neutral) == [True, False, False] and md.omega[0] == 0.0
    np.testing.assert_allclose(md.omega[1:], math.sqrt(m * G * L / 2 / (m * L * L / 3)), rtol=1e-8)
