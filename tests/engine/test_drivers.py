"""Drivers (docs/file-format.md, "Drivers"): the file format; every formulation that
honours them (``dense``'s rows, ``embedding``'s rheonomic rows, ``dca``'s and ``rcr``'s
superposition) against closed forms -- a slider-crank turned at a constant rate, a rod
pendulum driven harmonically, a table, a reversed joint, a prismatic lift -- and against
``dense`` where a freedom is left; the energy balance, the columns and the refusals."""

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from linkwork.engine import generators as gen
from linkwork.engine.drivers import motion_arrays, motion_values, natural_spline
from linkwork.engine.errors import MechanismError, SettingsError, SimulationError
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.mechfile import (
    GROUND, BodySpec, DriverSpec, JointSpec, MechanismSpec, MotionSpec, ShapeSpec, loads, spec_from_dict, spec_to_dict,
)
from linkwork.engine.model import build_model
from linkwork.engine.results import WORK_POINTS
from linkwork.engine.simulation import Settings, Simulation, resolve_settings
from linkwork.engine.topology import analyze

from .conftest import example_path

G = 9.81
TIGHT = dict(integrator="dop853", rtol=1e-11, atol=1e-11)
#: the formulations that honour drivers (each acceptance check runs with all of them)
HONOURING = [n for n in REGISTRY if REGISTRY[n].honours_drivers]


def _run(spec, formulation, t_end, dt):
    sim = Simulation(build_model(spec), Settings(formulation=formulation, t_end=t_end, dt=dt, **TIGHT))
    cols, rows = sim.run_all()
    return {n: rows[:, i] for i, n in enumerate(cols)}


# ------------------------------------------------------------------ slider-crank, closed form

R_CRANK, L_ROD, THETA0, W = 0.3, 1.0, np.radians(60.0), 2.0 * np.pi  # 60 rpm


def _slider_crank_positions(theta):
    """COM positions (crank, rod, slider) and the rod angle phi at crank angle ``theta``
    (complex-safe: complex-step derivatives below).  The rod's end S stays on y = 0:
    sin(phi) = -r sin(theta) / l."""
    A = R_CRANK * np.array([np.cos(theta), np.sin(theta)])
    s_phi = -R_CRANK * np.sin(theta) / L_ROD
    c_phi = np.sqrt(1.0 - s_phi * s_phi)
    S = A + L_ROD * np.array([c_phi, s_phi])
    return A / 2, (A + S) / 2, S, s_phi, c_phi


def _slider_crank_rates(theta):
    """d/dtheta of the COM positions and of the rod angle (closed form)."""
    A, _, _, s_phi, c_phi = _slider_crank_positions(theta)
    dA = R_CRANK * np.array([-np.sin(theta), np.cos(theta)])
    dphi = -R_CRANK * np.cos(theta) / (L_ROD * c_phi)
    dS = dA + L_ROD * np.array([-s_phi, c_phi]) * dphi
    return dA / 2, (dA + dS) / 2, dS, dphi


def _complex_step(f, x, h=1e-30):
    return np.imag(f(x + 1j * h)) / h


def test_the_driven_slider_crank_matches_its_closed_form_kinematics_and_motor_torque():
    """Crank at 60 rpm: slider position, velocity and acceleration to 1e-9 against
    x = r cos(theta) + l cos(phi) and its theta-derivatives (theta'' = 0); the motor torque
    to 1e-8 relative against the power balance tau w = dE/dt of the closed-form energy
    E = J(theta) w^2 / 2 + V(theta): with w constant, tau = J'(theta) w^2 / 2 + V'(theta),
    both derivatives by complex step."""
    spec = gen.driven_slider_crank(rpm=60.0, crank=R_CRANK, rod=L_ROD, crank_angle_deg=60.0)
    m = {b.name: b.mass for b in spec.bodies}
    Izz = {b.name: b.inertia[2][2] for b in spec.bodies}

    def J(theta):  # the generalized inertia about the crank angle
        dc, dr, ds, dphi = _slider_crank_rates(theta)
        return (m["crank"] * (dc @ dc) + Izz["crank"] + m["rod"] * (dr @ dr) + Izz["rod"] * dphi * dphi
                + m["slider"] * (ds @ ds))

    def V(theta):  # gravity along -y
        c, r, s, _, _ = _slider_crank_positions(theta)
        return G * (m["crank"] * c[1] + m["rod"] * r[1] + m["slider"] * s[1])

    for form in HONOURING:
        c = _run(spec, form, t_end=1.0, dt=0.05)
        t = c["t"]
        theta = THETA0 + W * t
        x = np.array([_slider_crank_positions(th)[2][0] for th in theta])
        dx = np.array([_slider_crank_rates(th)[2][0] for th in theta])
        ddx = np.array([_complex_step(lambda u: _slider_crank_rates(u)[2][0], th) for th in theta])
        assert np.abs(c["slider.x"] - x).max() < 1e-9
        assert np.abs(c["slider.vx"] - W * dx).max() < 1e-9
        assert np.abs(c["slider.y"]).max() < 1e-9
        tau = np.array([0.5 * _complex_step(J, th) * W * W + _complex_step(V, th) for th in theta])
        assert np.abs(c["driver.motor.effort"] - tau).max() < 1e-8 * np.abs(tau).max()
        assert np.abs(c["driver.motor.q"] - W * t).max() < 1e-9  # constant rate: f(0) = 0
        assert np.abs(c["driver.motor.rate"] - W).max() < 1e-9
        assert np.allclose(c["driver.motor.power"], c["driver.motor.effort"] * c["driver.motor.rate"], rtol=1e-15)
        for level in ("position", "velocity"):
            assert c[f"violation.{level}"].max() < 1e-9
        # the slider's acceleration from the model's own accelerations (the recorder's
        # violation.acceleration includes the driver's residual theta'' - 0)
        assert c["violation.acceleration"].max() < 1e-8
        sim = Simulation(build_model(spec), Settings(formulation=form, t_end=0.2, dt=0.05, **TIGHT))
        form_obj = sim.formulation
        y0 = form_obj.initial_state()
        acc = form_obj.evaluate(0.0, y0).acc
        slider = build_model(spec).body_index("slider")
        assert acc[slider, 0] == pytest.approx(W * W * ddx[0], abs=1e-9)


def test_the_slider_crank_is_kinematically_driven():
    model = build_model(gen.driven_slider_crank())
    assert analyze(model).dof == 0
    assert resolve_settings(model, Settings()).formulation == "dense"  # loops: the usual default


def test_a_driven_tree_keeps_its_default():
    model = build_model(_pendulum(MotionSpec("constant-rate", rate=1.0)))
    assert resolve_settings(model, Settings()).formulation == "dca"


# ------------------------------------------------------------------ pendulum, harmonic and table

ROD_L, ROD_M, THETA_P = 0.8, 1.5, np.radians(30.0)


def _pendulum(motion: MotionSpec) -> MechanismSpec:
    """A uniform rod (length l, mass m) hanging from a revolute pivot at the origin (axis z),
    THETA_P from the downward vertical, its centre at l/2."""
    u = np.array([np.sin(THETA_P), -np.cos(THETA_P), 0.0])
    centre = tuple(float(v) for v in 0.5 * ROD_L * u)
    tip = tuple(float(v) for v in ROD_L * u)
    I = ROD_M * ROD_L**2 / 12.0  # about the centre, across the rod
    rod = BodySpec("rod", ROD_M, ((I, 0, 0), (0, I, 0), (0, 0, I)), centre,
                   shape=ShapeSpec("rod", p_from=(0.0, 0.0, 0.0), p_to=tip, radius=0.02))
    pivot = JointSpec("pivot", "revolute", GROUND, "rod", (0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    return MechanismSpec(bodies=(rod,), joints=(pivot,), gravity=(0.0, -G, 0.0), name="driven pendulum",
                         drivers=(DriverSpec("swing", "pivot", motion),))


def _check_pendulum_effort(c, f, fdd, inertia_axis):
    """effort = I_pivot theta'' + m g (l/2) sin(theta), theta = THETA_P + f(t) - f(0)
    (I_pivot = I_centre + m (l/2)^2 = m l^2 / 3: the rod's centre at l/2)."""
    t = c["t"]
    I_pivot = inertia_axis + ROD_M * (ROD_L / 2) ** 2
    assert I_pivot == pytest.approx(ROD_M * ROD_L**2 / 3.0, rel=1e-15)
    theta = THETA_P + f(t) - f(0.0)
    effort = I_pivot * fdd(t) + ROD_M * G * (ROD_L / 2) * np.sin(theta)
    assert np.abs(c["driver.swing.effort"] - effort).max() < 1e-9
    assert np.abs(c["joint.pivot.q"] - (f(t) - f(0.0))).max() < 1e-9


def test_a_harmonically_driven_pendulum_needs_the_closed_form_torque():
    A, nu, p, off = 0.7, 0.8, 0.4, 0.25
    spec = _pendulum(MotionSpec("harmonic", amplitude=A, frequency=nu, phase=p, offset=off))
    w = 2 * np.pi * nu
    f = lambda t: off + A * np.sin(w * t + p)  # noqa: E731
    fdd = lambda t: -A * w * w * np.sin(w * t + p)  # noqa: E731
    for form in HONOURING:
        c = _run(spec, form, t_end=1.5, dt=0.05)
        _check_pendulum_effort(c, f, fdd, spec.bodies[0].inertia[2][2])
        # the driver's coordinate: f itself (the file's pose is the driver's at t = 0)
        assert np.abs(c["driver.swing.q"] - f(c["t"])).max() < 1e-9
        assert np.abs(c["driver.swing.rate"] - A * w * np.cos(w * c["t"] + p)).max() < 1e-9


def test_a_table_driven_joint_reproduces_its_table_at_the_knots():
    tk = [0.0, 0.2, 0.5, 0.7, 1.0]
    qk = [0.1, 0.3, -0.2, 0.0, 0.4]
    spec = _pendulum(MotionSpec("table", t=tuple(tk), q=tuple(qk)))
    ref = CubicSpline(tk, qk, bc_type="natural")  # the independent reference spline
    for form in HONOURING:
        c = _run(spec, form, t_end=1.2, dt=0.1)
        at = [int(np.argmin(np.abs(c["t"] - x))) for x in tk]
        assert np.abs(c["driver.swing.q"][at] - np.array(qk)).max() < 1e-9
        inside = c["t"] <= 1.0
        _check_pendulum_effort({k: v[inside] for k, v in c.items()}, ref, lambda t: ref(t, 2),
                               spec.bodies[0].inertia[2][2])
        # beyond the last knot the law continues along its end tangent
        after = c["t"] > 1.0
        assert np.abs(c["driver.swing.q"][after] - (qk[-1] + ref(1.0, 1) * (c["t"][after] - 1.0))).max() < 1e-9


def test_the_natural_spline_is_scipys_and_twice_continuous():
    rng = np.random.default_rng(5)
    tk = np.cumsum(rng.uniform(0.1, 0.5, 7))
    qk = rng.normal(size=7)
    ref = CubicSpline(tk, qk, bc_type="natural")
    spec = DriverSpec("d", "j", MotionSpec("table", t=tuple(tk), q=tuple(qk)))
    ma = motion_arrays([spec])
    for t in np.r_[np.linspace(tk[0], tk[-1], 41), tk]:
        f, fd, fdd = motion_values(ma, 0, t)
        assert (f, fd, fdd) == pytest.approx((float(ref(t)), float(ref(t, 1)), float(ref(t, 2))), abs=1e-11)
    for edge in (tk[0], tk[-1]):  # C2 across the ends of the table
        lo, hi = motion_values(ma, 0, edge - 1e-9), motion_values(ma, 0, edge + 1e-9)
        assert np.allclose(lo, hi, atol=1e-7)
    assert natural_spline([0.0, 1.0], [2.0, 4.0])[0].tolist() == [2.0, 2.0, 0.0, 0.0]


# ------------------------------------------------------------------ energy

def _simpson(t, y):
    """Composite Simpson over evenly spaced rows (an even number of intervals)."""
    h = t[1] - t[0]
    return h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())


def test_the_energy_change_is_the_drivers_work():
    """energy.total(T) - energy.total(0) = integral of the drivers' power (Simpson over the
    rows of a dop853 run), and = energy.driver_work, to 1e-8 of the peak kinetic energy."""
    spec = gen.driven_slider_crank()
    for form in HONOURING:
        c = _run(spec, form, t_end=0.8, dt=0.002)
        t, E, P = c["t"], c["energy.total"], c["driver.motor.power"]
        scale = c["energy.kinetic"].max()
        for k in (100, 250, 400):
            assert abs((E[k] - E[0]) - _simpson(t[:k + 1], P[:k + 1])) < 1e-8 * scale
        # energy.driver_work: once WORK_POINTS rows interpolate the power (the first rows'
        # values are the lower-degree rules of docs/file-format.md, "Drivers")
        assert np.abs((E - E[0]) - c["energy.driver_work"])[WORK_POINTS - 1:].max() < 1e-8 * scale
        assert np.ptp(E) > 1.0  # the motor does work


# ------------------------------------------------------------------ file format

def _driver_doc(**motion):
    d = json.loads(example_path("slider-crank-driven").read_text())
    if motion:
        d["drivers"][0]["motion"] = motion
    return d


def test_the_file_round_trips_and_old_files_read_unchanged():
    d = _driver_doc()
    spec = spec_from_dict(d)
    assert spec.drivers[0].motion.kind == "constant-rate"
    assert spec_to_dict(spec) == d
    for motion in ({"kind": "harmonic", "amplitude": 0.5, "frequency": 2.0, "phase": 0.1, "offset": 0.2},
                   {"kind": "table", "t": [0.0, 1.0, 2.0], "q": [0.0, 1.0, 0.5]}):
        d2 = _driver_doc(**motion)
        assert spec_to_dict(spec_from_dict(d2)) == d2
    old = json.loads(example_path("slider-crank").read_text())
    assert "drivers" not in spec_to_dict(spec_from_dict(old)) and spec_from_dict(old).drivers == ()


@pytest.mark.parametrize("edit, path, words", [
    (lambda d: d["drivers"][0].update(joint="nowhere"), "drivers[0].joint", "unknown joint"),
    (lambda d: d["drivers"].append(dict(d["drivers"][0], name="second")), "drivers[1].joint", "already driven"),
    (lambda d: d["drivers"][0].update(type="motor"), "drivers[0].type", 'must be "driver"'),
    (lambda d: d["drivers"][0]["motion"].update(kind="ramp"), "drivers[0].motion.kind", "must be one of"),
    (lambda d: d["drivers"][0]["motion"].pop("rate"), "drivers[0].motion.rate", "is required"),
    (lambda d: d["drivers"][0].update(motion={"kind": "table", "t": [0, 1, 1], "q": [0, 1, 2]}),
     "drivers[0].motion.t[2]", "must increase"),
    (lambda d: d["drivers"][0].update(motion={"kind": "table", "t": [0, 1], "q": [0]}),
     "drivers[0].motion.q", "one value per instant"),
    (lambda d: d["drivers"][0].update(motion={"kind": "harmonic", "amplitude": 1, "frequency": -1}),
     "drivers[0].motion.frequency", ">= 0"),
    (lambda d: d["joints"][3].update(cut=True) or d["drivers"][0].update(joint="guide"), "drivers[0].joint",
     'marked "cut"'),
])
def test_broken_drivers_are_refused_with_their_path(edit, path, words):
    d = _driver_doc()
    edit(d)
    with pytest.raises(MechanismError) as ei:
        spec_from_dict(d)
    assert str(ei.value).startswith(f"{path}: ") and words in str(ei.value)


def test_a_driver_on_a_geared_or_multi_freedom_joint_is_refused():
    d = json.loads(example_path("geared-arm").read_text())
    d["drivers"] = [{"type": "driver", "name": "m", "joint": d["couplings"][0]["driven"],
                     "motion": {"kind": "constant-rate", "rate": 1.0}}]
    with pytest.raises(MechanismError, match=r"^drivers\[0\]\.joint: .*geared by couplings\[0\]"):
        spec_from_dict(d)
    z = json.loads(example_path("joint-zoo").read_text())
    z["drivers"] = [{"type": "driver", "joint": "socket", "motion": {"kind": "constant-rate", "rate": 1.0}}]
    with pytest.raises(MechanismError, match=r"^drivers\[0\]\.joint: a driver needs a one-freedom joint"):
        spec_from_dict(z)


# ------------------------------------------------------------------ refusals

@pytest.mark.parametrize("name", [n for n in REGISTRY if n not in HONOURING])
def test_formulations_without_drivers_refuse_naming_the_driver(name):
    with pytest.raises(SettingsError) as ei:
        resolve_settings(build_model(gen.driven_slider_crank()), Settings(formulation=name))
    msg = str(ei.value)
    assert "'motor'" in msg and "drivers[0]" in msg and f"formulations that can: {', '.join(HONOURING)}" in msg


def test_cli_refuses_a_driven_run_with_exit_2():
    refusing = next(n for n in REGISTRY if n not in HONOURING)
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run", str(example_path("slider-crank-driven")),
                        "--formulation", refusing, "--t-end", "0.1"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith(f"linkwork: formulation '{refusing}' cannot simulate this mechanism") and "'motor'" in r.stderr
    assert f"formulations that can: {', '.join(HONOURING)}" in r.stderr


def test_a_driven_loop_with_a_freedom_left_agrees_between_formulations():
    """The five-bar (2 freedoms) with one base pivot driven harmonically keeps one freedom
    inside the driven loop: embedding's aggregated body then holds an independent velocity
    and a rheonomic row together.  Every honouring formulation agrees with dense to 1e-8
    (positions, effort) over 1 s of dop853."""
    d = json.loads(example_path("fivebar").read_text())
    d["drivers"] = [{"type": "driver", "name": "m", "joint": "B1",
                     "motion": {"kind": "harmonic", "amplitude": 0.3, "frequency": 1.0}}]
    spec = spec_from_dict(d)
    assert analyze(build_model(spec)).dof == 1
    ref = _run(spec, "dense", t_end=1.0, dt=0.05)
    assert np.abs(ref["joint.B1.q"] - 0.3 * np.sin(2 * np.pi * ref["t"])).max() < 1e-9
    assert np.ptp(ref["joint.B2.q"]) > 0.05  # the free side moves
    for form in HONOURING:
        c = _run(spec, form, t_end=1.0, dt=0.05)
        for col in ("P2.x", "P2.y", "D1.x", "D2.y", "driver.m.effort"):
            assert np.abs(c[col] - ref[col]).max() < 1e-8, (form, col)


def test_the_effort_keeps_the_file_sense_of_a_reversed_joint():
    """The pivot written rod -> ground measures ground's angle relative to the rod: the
    rod turns by -(f(t) - f(0)), and the effort acts on ground relative to the rod, so
    effort = -(I_pivot theta'' + m g (l/2) sin theta) with theta = THETA_P - (f - f(0))."""
    A, nu = 0.5, 0.6
    spec = _pendulum(MotionSpec("harmonic", amplitude=A, frequency=nu))
    (pivot,) = spec.joints
    spec = spec.with_(joints=(JointSpec("pivot", "revolute", "rod", GROUND, pivot.anchor, axis=pivot.axis),))
    w = 2 * np.pi * nu
    I_pivot = spec.bodies[0].inertia[2][2] + ROD_M * (ROD_L / 2) ** 2
    for form in HONOURING:
        c = _run(spec, form, t_end=1.0, dt=0.05)
        t = c["t"]
        f = A * np.sin(w * t)
        theta = THETA_P - f
        effort = -(I_pivot * (A * w * w * np.sin(w * t)) + ROD_M * G * (ROD_L / 2) * np.sin(theta))
        assert np.abs(c["driver.swing.q"] - f).max() < 1e-9
        assert np.abs(c["rod.wz"] - (-A * w * np.cos(w * t))).max() < 1e-9
        assert np.abs(c["driver.swing.effort"] - effort).max() < 1e-9


def test_a_prismatic_driver_applies_a_force():
    """A block on a vertical prismatic guide (axis +y) lifted harmonically: the effort is
    the force m (y'' + g) along the axis."""
    m_block, A, nu = 3.0, 0.2, 1.5
    block = BodySpec("block", m_block, ((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01)), (0.0, 0.5, 0.0))
    guide = JointSpec("guide", "prismatic", GROUND, "block", (0.0, 0.5, 0.0), axis=(0.0, 1.0, 0.0))
    spec = MechanismSpec(bodies=(block,), joints=(guide,), gravity=(0.0, -G, 0.0), name="lift",
                         drivers=(DriverSpec("lift", "guide", MotionSpec("harmonic", amplitude=A, frequency=nu)),))
    w = 2 * np.pi * nu
    for form in HONOURING:
        c = _run(spec, form, t_end=1.0, dt=0.05)
        t = c["t"]
        assert np.abs(c["block.y"] - (0.5 + A * np.sin(w * t))).max() < 1e-9
        assert np.abs(c["driver.lift.effort"] - m_block * (-A * w * w * np.sin(w * t) + G)).max() < 1e-9
        assert np.abs(c["reaction.guide.fy"]).max() < 1e-9  # the driver's force is applied, not a reaction


def test_info_counts_each_driver_as_one_equation():
    model = build_model(gen.driven_slider_crank())
    d = analyze(model).as_dict(model)
    assert (d["driver_equations"], d["dof"], d["redundant_constraints"]) == (1, 0, 3)
    assert d["drivers"] == [{"name": "motor", "joint": "crank_pin", "motion": "constant-rate"}]
    assert d["constraint_equations"] == d["joint_equations"] + d["driver_equations"] + d["normalisation_equations"]


def test_two_drivers_with_a_free_joint_between_agree_between_formulations():
    """A three-link chain, its first joint driven harmonically and its last by a table, the
    middle one free: every honouring formulation's efforts and motion equal dense's."""
    base = gen.chain(3, "revolute", planar=True, angle_deg=20.0)
    spec = base.with_(drivers=(
        DriverSpec("a", "J1", MotionSpec("harmonic", amplitude=0.4, frequency=0.7)),
        DriverSpec("b", "J3", MotionSpec("table", t=(0.0, 0.5, 1.0, 1.5), q=(0.0, 0.3, -0.1, 0.2)))))
    ref = _run(spec, "dense", t_end=1.5, dt=0.05)
    assert np.ptp(ref["joint.J2.q"]) > 0.05
    for form in HONOURING:
        c = _run(spec, form, t_end=1.5, dt=0.05)
        for col in ("driver.a.effort", "driver.b.effort", "L2.x", "L3.y", "joint.J2.q"):
            assert np.abs(c[col] - ref[col]).max() < 1e-9, (form, col)


@pytest.mark.parametrize("form", HONOURING)
def test_drivers_whose_rates_the_loop_cannot_follow_are_refused_at_the_start(form):
    """The driven slider-crank (one freedom) with a second motor on the wrist, at a rate
    the crank's motor contradicts: no velocity closes the loop and meets both, and the
    run stops at t = 0 naming the drivers -- not at the first step with an opened loop."""
    d = json.loads(example_path("slider-crank-driven").read_text())
    d["drivers"].append({"type": "driver", "name": "second", "joint": "wrist",
                         "motion": {"kind": "constant-rate", "rate": 1.0}})
    sim = Simulation(build_model(spec_from_dict(d)), Settings(formulation=form, t_end=0.1))
    with pytest.raises(SimulationError, match=r"the drivers' rates at t = 0 cannot be met") as info:
        sim.run_all()
    assert info.value.t == 0.0
    assert "'motor' on joint 'crank_pin'" in str(info.value) and "'second' on joint 'wrist'" in str(info.value)
