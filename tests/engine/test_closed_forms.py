"""Every formulation against motions known in closed form, on mechanisms no example has.

Each mechanism is small and is not one of the bundled examples: a damped slider on an
incline held by a spring, a rotor on a revolute joint with a joint-spring, a damper and
a torque, a cylindrical joint under a torque and a force, a heavy symmetric top in steady
precession on a spherical joint, a conical pendulum on a universal joint, two geared rotors, and Bennett's overconstrained spatial four-bar (three
constraint rows redundant in every configuration).  The ODE formulations run with an
error-controlled integrator at tight tolerances and must reproduce the closed form (or,
for Bennett's linkage, ``dense`` at tighter tolerances) to near round-off; ``index3``'s
trapezoidal stepper is second order, so it must converge to the closed form at that order.
"""

import numpy as np
import pytest
from scipy.optimize import least_squares

from linkwork.engine.formulations import REGISTRY
from linkwork.engine.mechfile import spec_from_dict
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation
from linkwork.engine.topology import analyze

G = 9.81
ODE = [name for name in REGISTRY if name != "index3"]
TIGHT = dict(integrator="dop853", rtol=1e-11, atol=1e-11)


def _run(mech: dict, formulation: str, t_end: float, dt: float, **settings) -> dict:
    sim = Simulation(build_model(spec_from_dict(mech)),
                     Settings(formulation=formulation, t_end=t_end, dt=dt, **settings))
    cols, rows = sim.run_all()
    return {n: rows[:, i] for i, n in enumerate(cols)}


def _body(name, mass, inertia, position, *, orientation=(1.0, 0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
          angular_velocity=(0.0, 0.0, 0.0)):
    return {"name": name, "mass": mass, "inertia": list(inertia), "position": list(position),
            "orientation": list(orientation), "velocity": list(velocity),
            "angular_velocity": list(angular_velocity), "shape": {"kind": "sphere", "radius": 0.05}}


def _mechanism(bodies, joints, forces=()):
    """The file's dictionary, numpy values made plain numbers and lists."""
    return _plain({"format": "linkwork-mechanism", "version": 1, "gravity": [0.0, -G, 0.0],
                   "bodies": list(bodies), "joints": list(joints), "forces": list(forces)})


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    return float(value) if isinstance(value, np.floating) else value


def _oscillator(t, x0, v0, m, c, k):
    """x(t) of m x'' + c x' + k x = 0 (underdamped) from x(0) = x0, x'(0) = v0."""
    gamma = c / (2.0 * m)
    wd = np.sqrt(k / m - gamma * gamma)
    return np.exp(-gamma * t) * (x0 * np.cos(wd * t) + (v0 + gamma * x0) / wd * np.sin(wd * t))


# ------------------------------------------------------------------ the mechanisms

SLOPE = np.radians(-30.0)  # the slider's axis, from the x axis, in the xy plane
SLIDER = dict(m=2.0, k=20.0, c=1.5, rest=0.6, s0=1.0, v0=0.3)


def _slider():
    """A slider on an incline, a damped spring from the origin to its centre of mass."""
    p = SLIDER
    a = np.array([np.cos(SLOPE), np.sin(SLOPE), 0.0])
    com = p["s0"] * a
    return _mechanism(
        [_body("S", p["m"], (0.01, 0.01, 0.01), com)],
        [{"name": "P", "type": "prismatic", "parent": "ground", "child": "S", "anchor": list(com),
          "axis": list(a), "rate": p["v0"]}],
        [{"type": "spring", "body1": "ground", "point1": [0.0, 0.0, 0.0], "body2": "S", "point2": list(com),
          "stiffness": p["k"], "damping": p["c"], "rest_length": p["rest"]}])


def _slider_exact(t):
    """The distance s(t) of the slider's centre of mass from the origin along the incline:
    m s'' + c s' + k (s - rest) = m g sin(-slope)."""
    p = SLIDER
    s_eq = p["rest"] + p["m"] * G * np.sin(-SLOPE) / p["k"]
    return s_eq + _oscillator(t, p["s0"] - s_eq, p["v0"], p["m"], p["c"], p["k"])


ROTOR = dict(J=0.2, k=3.0, c=0.4, rest=0.5, tau=0.3, w0=1.0)


def _rotor():
    """A body turning about a revolute axis through its centre of mass (gravity does no work),
    under a joint-spring with damping and a constant joint torque."""
    p = ROTOR
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    return _mechanism(
        [_body("R", 1.5, (0.3, 0.25, p["J"]), (0.2, 0.1, -0.3),
               orientation=_quaternion_turning([0.0, 0.0, 1.0], axis))],
        [{"name": "J", "type": "revolute", "parent": "ground", "child": "R", "anchor": [0.2, 0.1, -0.3],
          "axis": list(axis), "rate": p["w0"]}],
        [{"type": "joint-spring", "joint": "J", "stiffness": p["k"], "damping": p["c"], "rest": p["rest"]},
         {"type": "joint-torque", "joint": "J", "value": p["tau"]}])


def _rotor_exact(t):
    """J q'' + c q' + k (q - rest) = tau from q(0) = 0, q'(0) = w0."""
    p = ROTOR
    q_eq = p["rest"] + p["tau"] / p["k"]
    return q_eq + _oscillator(t, -q_eq, p["w0"], p["J"], p["c"], p["k"])


CYLINDER = dict(m=1.2, J=0.05, tau=0.2, force=-0.9, w0=0.5, v0=0.4)


def _cylinder():
    """A body on a horizontal cylindrical joint through its centre of mass: a constant torque
    and force along the axis, the weight carried by the joint."""
    p = CYLINDER
    return _mechanism(
        [_body("C", p["m"], (p["J"], 0.2, 0.2), (0.0, 0.5, 0.0))],
        [{"name": "J", "type": "cylindrical", "parent": "ground", "child": "C", "anchor": [0.0, 0.5, 0.0],
          "axis": [1.0, 0.0, 0.0], "rate": [p["w0"], p["v0"]]}],
        [{"type": "joint-torque", "joint": "J", "value": [p["tau"], p["force"]]}])


TOP = dict(m=1.0, I_com=0.05, I_axis=0.08, length=0.4, tilt=0.5, spin=30.0)


def _top_rates():
    """(precession rate, spin rate relative to the precessing frame) of the steady precession:
    m g l = W (I3 w3 - I1 W cos(tilt)), I1 the transverse moment about the pivot, the slow root."""
    p = TOP
    i1 = p["I_com"] + p["m"] * p["length"] ** 2
    h = p["I_axis"] * p["spin"]
    c = np.cos(p["tilt"])
    precession = (h - np.sqrt(h * h - 4.0 * i1 * c * p["m"] * G * p["length"])) / (2.0 * i1 * c)
    return precession, p["spin"] - precession * c


def _top():
    """A heavy symmetric top on a spherical joint at the origin, its axis (body y) tilted from
    the vertical (world y) by ``tilt`` in the xy plane, set in steady precession."""
    p = TOP
    axis = np.array([np.sin(p["tilt"]), np.cos(p["tilt"]), 0.0])
    precession, spin = _top_rates()
    w = precession * np.array([0.0, 1.0, 0.0]) + spin * axis
    com = p["length"] * axis
    q = [np.cos(-p["tilt"] / 2), 0.0, 0.0, np.sin(-p["tilt"] / 2)]  # body y onto the axis
    return _mechanism(
        [_body("T", p["m"], (p["I_com"], p["I_axis"], p["I_com"]), com, orientation=q,
               velocity=np.cross(w, com), angular_velocity=w)],
        [{"name": "S", "type": "spherical", "parent": "ground", "child": "T", "anchor": [0.0, 0.0, 0.0]}])


def _top_exact(t):
    """Centre of mass and angular velocity: the axis turns about the vertical at the precession rate."""
    p = TOP
    precession, spin = _top_rates()
    phi = precession * t
    s, c = np.sin(p["tilt"]), np.cos(p["tilt"])
    axis = np.stack([s * np.cos(phi), np.full_like(t, c), -s * np.sin(phi)], axis=1)
    w = spin * axis
    w[:, 1] += precession
    return p["length"] * axis, w


CONE = dict(m=0.8, I_com=0.04, I_axis=0.01, length=0.5, tilt=np.pi - 0.6)


def _cone_rate():
    """The conical pendulum's rate: with no spin about its own axis the precession condition
    becomes m g l = W^2 cos(tilt) (I3 - I1)."""
    p = CONE
    i1 = p["I_com"] + p["m"] * p["length"] ** 2
    return np.sqrt(p["m"] * G * p["length"] / (np.cos(p["tilt"]) * (p["I_axis"] - i1)))


def _cone():
    """A rod hanging from a universal joint (first axis vertical, second horizontal in the
    child), turning about the vertical as a conical pendulum: the joint's reaction carries
    the torque about the axis across the two."""
    p = CONE
    axis = np.array([np.sin(p["tilt"]), np.cos(p["tilt"]), 0.0])
    w = np.array([0.0, _cone_rate(), 0.0])
    com = p["length"] * axis
    q = [np.cos(-p["tilt"] / 2), 0.0, 0.0, np.sin(-p["tilt"] / 2)]
    return _mechanism(
        [_body("K", p["m"], (p["I_com"], p["I_axis"], p["I_com"]), com, orientation=q,
               velocity=np.cross(w, com), angular_velocity=w)],
        [{"name": "U", "type": "universal", "parent": "ground", "child": "K", "anchor": [0.0, 0.0, 0.0],
          "axes": [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}])


def _cone_error(c):
    p, t = CONE, c["t"]
    phi = _cone_rate() * t
    s, co = np.sin(p["tilt"]), np.cos(p["tilt"])
    com = p["length"] * np.stack([s * np.cos(phi), np.full_like(t, co), -s * np.sin(phi)], axis=1)
    w = np.zeros((len(t), 3))
    w[:, 1] = _cone_rate()
    return max(np.abs(_cols(c, "K", "xyz") - com).max(), np.abs(_cols(c, "K", ("wx", "wy", "wz")) - w).max())


GEARS = dict(J_driver=0.3, J_driven=0.12, ratio=-2.5, tau=0.4, k=2.0, c=0.15, w0=0.8)


def _gears():
    """Two rotors on parallel revolute axes through their centres of mass, geared
    (q_driver = ratio q_driven): a torque on the driver, a damped joint-spring on the driven."""
    p = GEARS
    return dict(_mechanism(
        [_body("D", 1.0, (0.2, 0.2, p["J_driver"]), (0.0, 0.0, 0.0)),
         _body("N", 0.5, (0.1, 0.1, p["J_driven"]), (0.7, 0.0, 0.0))],
        [{"name": "JD", "type": "revolute", "parent": "ground", "child": "D", "anchor": [0.0, 0.0, 0.0],
          "axis": [0.0, 0.0, 1.0], "rate": p["ratio"] * p["w0"]},
         {"name": "JN", "type": "revolute", "parent": "ground", "child": "N", "anchor": [0.7, 0.0, 0.0],
          "axis": [0.0, 0.0, 1.0], "rate": p["w0"]}],
        [{"type": "joint-torque", "joint": "JD", "value": p["tau"]},
         {"type": "joint-spring", "joint": "JN", "stiffness": p["k"], "damping": p["c"], "rest": 0.0}]),
        couplings=[{"type": "gear", "name": "G", "driver": "JD", "driven": "JN", "ratio": p["ratio"]}])


def _gears_error(c):
    """In the driven joint's angle: (J_d ratio^2 + J_n) q'' + c q' + k q = tau ratio, the
    driver's torque doing work through the gear; the driver's angle follows at the ratio."""
    p, t = GEARS, c["t"]
    inertia = p["J_driver"] * p["ratio"] ** 2 + p["J_driven"]
    q_eq = p["tau"] * p["ratio"] / p["k"]
    q = q_eq + _oscillator(t, -q_eq, p["w0"], inertia, p["c"], p["k"])
    return max(np.abs(c["joint.JN.q"] - q).max(), np.abs(c["joint.JD.q"] - p["ratio"] * q).max())


def _quaternion_turning(u, v):
    """The unit quaternion of the shortest rotation taking unit vector ``u`` onto ``v``."""
    u, v = np.asarray(u, float), np.asarray(v, float)
    q = np.concatenate([[1.0 + u @ v], np.cross(u, v)])
    return list(q / np.linalg.norm(q))


def _cols(c, body, names):
    return np.stack([c[f"{body}.{n}"] for n in names], axis=1)


def _slider_error(c):
    a = np.array([np.cos(SLOPE), np.sin(SLOPE), 0.0])
    s = _cols(c, "S", "xyz") @ a
    return np.abs(s - _slider_exact(c["t"])).max()


def _rotor_error(c):
    return np.abs(c["joint.J.q"] - _rotor_exact(c["t"])).max()


def _cylinder_error(c):
    p, t = CYLINDER, c["t"]
    angle = p["w0"] * t + p["tau"] / (2 * p["J"]) * t * t
    slide = p["v0"] * t + p["force"] / (2 * p["m"]) * t * t
    q = _cols(c, "C", ("q0", "q1", "q2", "q3"))
    exact_q = np.stack([np.cos(angle / 2), np.sin(angle / 2), 0 * t, 0 * t], axis=1)
    # a quaternion and its negative are the same orientation
    off = np.minimum(np.abs(q - exact_q).max(axis=1), np.abs(q + exact_q).max(axis=1))
    return max(np.abs(c["C.x"] - slide).max(), np.abs(c["C.y"] - 0.5).max(), off.max())


def _top_error(c):
    com, w = _top_exact(c["t"])
    return max(np.abs(_cols(c, "T", "xyz") - com).max(), np.abs(_cols(c, "T", ("wx", "wy", "wz")) - w).max())


CASES = {
    "slider": (_slider, _slider_error, 3.0),
    "rotor": (_rotor, _rotor_error, 3.0),
    "cylinder": (_cylinder, _cylinder_error, 2.0),
    "top": (_top, _top_error, 1.0),
    "cone": (_cone, _cone_error, 2.0),
}


@pytest.mark.parametrize("formulation", [name for name in REGISTRY if REGISTRY[name].honours_couplings])
def test_geared_rotors_reproduce_the_closed_form(formulation):
    """A gear pair with a torque on one side and a spring on the other: the formulations that
    honour couplings, dop853 at 1e-11, within 1e-8 rad of the closed form over 3 s."""
    c = _run(_gears(), formulation, 3.0, 0.01, **TIGHT)
    assert np.abs(c["joint.JD.q"]).max() > 0.5  # it turns
    assert _gears_error(c) < 1e-8


@pytest.mark.parametrize("formulation", ODE)
@pytest.mark.parametrize("case", CASES)
def test_a_tight_run_reproduces_the_closed_form(case, formulation):
    """dop853 at 1e-11: within 1e-8 of the closed form (positions in m, angles in rad,
    angular velocities in rad/s) over the whole run."""
    make, error, t_end = CASES[case]
    c = _run(make(), formulation, t_end, 0.01, **TIGHT)
    assert c["t"][-1] == pytest.approx(t_end)
    assert error(c) < 1e-8


@pytest.mark.parametrize("case", CASES)
def test_index3_converges_to_the_closed_form_at_second_order(case):
    """Halving index3's step divides its distance to the closed form by about four."""
    make, error, t_end = CASES[case]
    errors = [error(_run(make(), "index3", t_end, dt)) for dt in (4e-3, 2e-3, 1e-3)]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 3.5) & (ratios < 4.5)), (errors, ratios)


# ------------------------------------------------------------------ Bennett's linkage

def _dh(theta, length, twist):
    """Denavit-Hartenberg step: turn by theta about z, move ``length`` along x, twist about x."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(twist), np.sin(twist)
    return np.array([[ct, -st * ca, st * sa, length * ct], [st, ct * ca, -ct * sa, length * st],
                     [0.0, sa, ca, 0.0], [0.0, 0.0, 0.0, 1.0]])


def _bennett(theta1=0.7, rate=2.0):
    """Bennett's 4R linkage: opposite links equal, a / sin(alpha) = b / sin(beta); the three
    joint angles after the first found by closing the loop (the closure holds to 1e-15)."""
    a, alpha, beta = 1.0, np.radians(60.0), np.radians(35.0)
    links = [(a, alpha), (a * np.sin(beta) / np.sin(alpha), beta)] * 2

    def frames(angles):
        out = [np.eye(4)]
        for theta, (length, twist) in zip(angles, links):
            out.append(out[-1] @ _dh(theta, length, twist))
        return out

    closing = least_squares(lambda x: (frames([theta1, *x])[4] - np.eye(4))[:3].ravel(), [1.0, 1.0, 1.0],
                            xtol=1e-15, ftol=1e-15, gtol=1e-15)
    f = frames([theta1, *closing.x])
    assert np.abs(f[4] - np.eye(4)).max() < 1e-13
    origin = [fr[:3, 3] for fr in f]
    bodies = [_body(f"L{i + 1}", 1.0 + 0.2 * i, (0.02, 0.08, 0.07), (origin[i] + origin[i + 1]) / 2)
              for i in range(3)]
    names = ["ground", "L1", "L2", "L3", "ground"]
    joints = [{"name": f"J{i + 1}", "type": "revolute", "parent": names[i], "child": names[i + 1],
               "anchor": list(origin[i]), "axis": list(f[i][:3, 2])} for i in range(4)]
    joints[0]["rate"] = rate
    return _mechanism(bodies, joints)


def _state(c):
    return np.concatenate([_cols(c, f"L{i}", "xyz") for i in (1, 2, 3)]
                          + [_cols(c, f"L{i}", ("vx", "vy", "vz")) for i in (1, 2, 3)], axis=1)


@pytest.fixture(scope="module")
def bennett_reference():
    return _run(_bennett(), "dense", 2.0, 0.01, integrator="dop853", rtol=1e-13, atol=1e-13)


def test_bennett_linkage_moves_and_keeps_its_energy(bennett_reference):
    """One freedom where Gruebler-Kutzbach counts -2: three of the cut joint's five rows are
    redundant; the reference turns through a large angle keeping its energy and closure."""
    topology = analyze(build_model(spec_from_dict(_bennett())))
    assert (topology.dof, topology.redundant) == (1, 3)
    c = bennett_reference
    assert np.abs(c["joint.J1.q"]).max() > 1.0  # it moves through a large angle
    assert np.abs(c["energy.total"] - c["energy.total"][0]).max() < 1e-9
    assert c["violation.position"].max() < 1e-10


@pytest.mark.parametrize("formulation", ODE)
def test_bennett_linkage_every_formulation_agrees(formulation, bennett_reference):
    """Three redundant rows in every configuration: each formulation at 1e-11 within 1e-8 of
    ``dense`` at 1e-13 (positions in m, velocities in m/s), its loop closed to 1e-9."""
    c = _run(_bennett(), formulation, 2.0, 0.01, **TIGHT)
    assert np.abs(_state(c) - _state(bennett_reference)).max() < 1e-8
    assert c["violation.position"].max() < 1e-9
