"""The pipeline's branch and health monitor (engine/monitor.py).

Singular passages on several mechanisms, every formulation: the run stays on the right
assembly branch, or it stops with a SimulationError (exit 3) that names the time and the
loop -- never a wrong trajectory that ends normally.  "Right branch" is judged on the
result rows, independently of the monitor: the parallelogram's coupler must not rotate
(its orientation is the identity on the branch), the other mechanisms must follow the
dense reference, which crosses by its own filtered projections.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from linkwork.engine import config
from linkwork.engine import generators as gen
from linkwork.engine.integrators import StepCollapse
from linkwork.engine.model import build_model, load_model
from linkwork.engine.monitor import Monitor, conservative, passive, summary
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation

from .conftest import run_to_end

FORMULATIONS = ("dense", "dca", "hdca", "index3")


_run = run_to_end


def _angle(cols, rows, body):
    q = rows[:, [cols.index(f"{body}.q{i}") for i in range(4)]]
    return 2.0 * np.arctan2(np.linalg.norm(q[:, 1:], axis=1), np.abs(q[:, 0]))


def _positions(cols, rows, model):
    return rows[:, [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]]


@pytest.mark.parametrize("form", FORMULATIONS)
def test_parallelogram_right_branch_or_exit_3(form):
    """Four crossings of the flat configuration in 3.6 s (t = 0.6, 1.43, 2.63, 3.45 s).
    Before the monitor, dca left the branch at 2.63 s and ended normally with the coupler
    turned by 2.8 rad over 10 s (energy +5.4 J, loop open by 0.072 m)."""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation=form, t_end=3.6))
    rows, err = _run(sim)
    ang = _angle(sim.columns, rows, "B")
    assert ang.max() <= 1e-6  # every row handed over is on the branch, failed run or not
    if err is None:
        assert rows[-1, 0] == pytest.approx(3.6)
    else:
        assert form == "dca", err  # dense, hdca and index3 cross at their defaults
        assert "loop closed at joint J3" in err.reason and err.t > 2.0
        assert rows[-1, 0] < err.t  # the rejected row is not handed over
    st = sim.stats
    assert st["min_loop_conditioning"] < 0.01 and 0.0 <= st["t_closest_approach"] <= 3.6
    assert st["max_position_violation"] <= 1e-6 and st["conservative"]


@pytest.mark.parametrize("form", ["dca", "hdca"])
def test_parallelogram_with_an_error_controlled_integrator_right_branch_or_exit_3(form):
    """dop853 at 1e-10 across the parallelogram's folds: on the branch to the end, or a
    stop whose rows are all on it."""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation=form, integrator="dop853", rtol=1e-10, atol=1e-10, t_end=5.0))
    rows, err = _run(sim)
    assert _angle(sim.columns, rows, "B").max() <= 1e-6
    if err is None:
        assert rows[-1, 0] == pytest.approx(5.0)
    else:
        assert "loop closed at joint J3" in err.reason and rows[-1, 0] < err.t
    if err is not None:
        assert "--integrator dop853" not in err.reason  # the remedy does not offer what was used


def test_unstabilised_dca_leaving_the_branch_is_stopped_where_the_steps_collapse():
    """dca without its projection (``projection=False``) and dop853 at 1e-10 on the
    parallelogram: it left the branch at 1.43 s with every residual continuous and an
    energy step of 1.2e-5 of the peak kinetic energy (the joint rates reversed inside one
    output interval: J1 -2.86 -> +3.34 rad/s) and ended with exit 0 and the coupler turned
    by pi; the stall guard stops it where the steps collapse, before dop853 grinds through
    millions of right-hand sides.  (Projected, dca crosses the folds on the branch.)"""
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation="dca", integrator="dop853", rtol=1e-10, atol=1e-10, t_end=5.0,
                                     projection=False))
    rows, err = _run(sim)
    assert _angle(sim.columns, rows, "B").max() <= 1e-6
    assert err is not None and "steps collapsed" in err.reason and "singular configuration" in err.reason
    assert "loop closed at joint J3" in err.reason and rows[-1, 0] < err.t
    assert sim.stats["rhs_evaluations"] < 100_000


@pytest.mark.parametrize("form", FORMULATIONS)
@pytest.mark.parametrize("name", ["kite", "fivebar", "ladder"])
def test_folding_passages_follow_the_reference_or_exit_3(name, form):
    """A kite four-bar (crank = ground = 1, coupler = rocker = 2: it folds flat, loop
    conditioning down to 1.9e-3 within 1 s), a folding five-bar (both legs on one ground
    pivot: the rhombus collapses, 2.9e-3 at 1.5 s) and a ladder of two equal cells started with its
    legs 5 degrees from the rungs (conditioning 0.04 at 1.5 s): the trajectory agrees with
    the dense reference to 1e-5 m, or the run stops with exit 3 (and the rows it handed
    over agree).  index3's trapezoidal rule is second order: at dt = 0.01 it is 9.1e-4 m
    from the reference on the kite over 2 s (measured) -- its accuracy, not a branch;
    a branch switch moves the links by a good part of their 1-2 m length, so index3 is
    held to 1e-2 m, the fourth-order rk4 runs to 1e-5 m."""
    spec = {"kite": lambda: gen.fourbar(crank=1.0, coupler=2.0, rocker=2.0, ground=1.0, crank_angle_deg=60.0),
            "fivebar": lambda: gen.fivebar(legs=2, base_half=0.0, length=1.0, tip=(0.3, 1.2)),
            "ladder": lambda: gen.ladder(2, tilt_x_deg=0.0, tilt_z_deg=85.0)}[name]()
    model = build_model(spec)
    t_end = 2.0
    ref = Simulation(model, Settings(formulation="dense", integrator="dop853", rtol=1e-11, atol=1e-11,
                                     t_end=t_end))
    ref_rows, ref_err = _run(ref)
    assert ref_err is None
    sim = Simulation(model, Settings(formulation=form, t_end=t_end))
    rows, err = _run(sim)
    n = rows.shape[0]
    diff = np.abs(_positions(sim.columns, rows, model) - _positions(ref.columns, ref_rows[:n], model)).max()
    assert diff < (1e-2 if form == "index3" else 1e-5), (form, diff, err)
    assert err is None or "smaller steps" in err.reason


def test_a_collapse_away_from_any_loop_suggests_an_implicit_integrator():
    """A stall on an open chain is no branch switch: the message says stiff, and names the
    implicit integrators."""
    sim = Simulation(load_model(examples_dir() / "chain-5-spherical-spatial.mech.json"),
                     Settings(formulation="dca", integrator="rk45"))
    sim.prepare()
    err = sim.monitor.collapsed(StepCollapse(0.5, "rk45", 1e-9, 1000, 0.01), sim.recorder)
    assert err.t == 0.5 and "rk45's steps collapsed to 1e-09 s" in err.reason
    assert "stiff" in err.reason and "radau" in err.reason and "loop" not in err.reason


def test_a_collapse_under_an_implicit_integrator_suggests_the_other_one():
    """A bdf run whose steps collapsed is pointed at radau, not at bdf again (and the
    other way round); an explicit one at both."""
    sim = Simulation(load_model(examples_dir() / "chain-5-spherical-spatial.mech.json"),
                     Settings(formulation="dca", integrator="bdf"))
    sim.prepare()
    for method, named in (("bdf", "--integrator radau)"), ("radau", "--integrator bdf)"),
                          ("rk45", "--integrator radau or bdf)")):
        err = sim.monitor.collapsed(StepCollapse(0.5, method, 1e-9, 1000, 0.01), sim.recorder)
        assert named in err.reason, (method, err.reason)


def test_a_collapse_of_hdca_away_from_any_singular_configuration_names_its_rough_rows():
    """hdca's momentum rates are rough where a subassembly of its assembly tree is nearly
    singular: its message names that, and what runs such a mechanism, besides an implicit
    integrator."""
    sim = Simulation(load_model(examples_dir() / "loop-4.mech.json"), Settings(formulation="hdca", integrator="rk45"))
    sim.prepare()
    err = sim.monitor.collapsed(StepCollapse(0.5, "rk45", 1e-9, 1000, 0.01), sim.recorder)
    assert "nearly singular" in err.reason and "dca or dense" in err.reason and "radau" in err.reason


def test_observe_mode_keeps_the_old_behaviour_and_flags(monkeypatch, tmp_path):
    """LINKWORK_MONITOR=observe judges without acting (the count before the monitor):
    dca without its projection leaves the parallelogram's branch, ends normally, and the
    flags say so; the log file gets one line for the run."""
    log = tmp_path / "monitor.log"
    monkeypatch.setenv("LINKWORK_MONITOR", "observe")
    monkeypatch.setenv("LINKWORK_MONITOR_LOG", str(log))
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    sim = Simulation(model, Settings(formulation="dca", t_end=4.0, projection=False))
    rows, err = _run(sim)
    assert err is None and rows[-1, 0] == pytest.approx(4.0)
    assert sim.stats["monitor_flags"] and sim.stats["retries"] == 0
    assert sim.stats["max_position_violation"] > 1e-6
    line = log.read_text().strip().splitlines()
    assert len(line) == 1 and '"status": "finished"' in line[0] and '"limit_exceeded": true' in line[0]


def test_conservative_mechanisms():
    """Dampers and joint torques make a mechanism non-conservative; stiff undamped springs do not."""
    assert conservative(load_model(examples_dir() / "parallelogram-fourbar.mech.json"))
    from linkwork.engine.mechfile import spec_from_dict, spec_to_dict

    d = spec_to_dict(gen.fourbar())
    d["forces"] = [{"type": "joint-spring", "joint": d["joints"][0]["name"], "stiffness": 10.0, "damping": 0.0,
                    "rest": 0.0}]
    assert conservative(build_model(spec_from_dict(d)))
    d["forces"][0]["damping"] = 0.1
    assert not conservative(build_model(spec_from_dict(d)))
    d["forces"] = [{"type": "joint-torque", "joint": d["joints"][0]["name"], "value": 1.0}]
    assert not conservative(build_model(spec_from_dict(d)))


def test_passive_mechanisms():
    """Dampers keep a mechanism passive (its energy can only fall); joint torques and
    drivers do not; a conservative mechanism is passive too."""
    from linkwork.engine.mechfile import spec_from_dict, spec_to_dict

    d = spec_to_dict(gen.fourbar())
    j0 = d["joints"][0]["name"]
    d["forces"] = [{"type": "joint-spring", "joint": j0, "stiffness": 10.0, "damping": 0.1, "rest": 0.0}]
    assert passive(build_model(spec_from_dict(d)))
    d["forces"].append({"type": "joint-torque", "joint": j0, "value": 1.0})
    assert not passive(build_model(spec_from_dict(d)))
    assert passive(load_model(examples_dir() / "parallelogram-fourbar.mech.json"))
    assert not passive(load_model(examples_dir() / "slider-crank-driven.mech.json"))


def _stiff_damped_pendulum():
    """A double pendulum whose links a stiff spring with a light damper joins: about
    120 rad/s, which rk4 at dt = 0.01 integrates stably but with an energy error that
    the damper does not remove."""
    from linkwork.engine.mechfile import spec_from_dict

    inertia = [[0.02, 0, 0], [0, 0.02, 0], [0, 0, 0.02]]
    return build_model(spec_from_dict({
        "format": "linkwork-mechanism", "version": 1, "name": "stiff damped pendulum", "gravity": [0, -9.81, 0],
        "bodies": [{"name": "a", "mass": 1.0, "inertia": inertia, "position": [0.5, 0, 0], "orientation": [1, 0, 0, 0]},
                   {"name": "b", "mass": 1.0, "inertia": inertia, "position": [1.5, 0, 0], "orientation": [1, 0, 0, 0]}],
        "joints": [{"name": "j0", "type": "revolute", "parent": "ground", "child": "a", "anchor": [0, 0, 0],
                    "axis": [0, 0, 1]},
                   {"name": "j1", "type": "revolute", "parent": "a", "child": "b", "anchor": [1, 0, 0],
                    "axis": [0, 0, 1]}],
        "forces": [{"type": "spring", "body1": "a", "point1": [0.5, 0, 0], "body2": "b", "point2": [1.5, 0.2, 0],
                    "stiffness": 1e5, "damping": 1.0, "rest_length": 0.9}]}))


@pytest.mark.parametrize("form", ["dense", "dca", "hdca", "rcr"])
def test_a_passive_mechanism_gaining_energy_is_refined(form, monkeypatch):
    """A damper cannot give energy back: at rk4's defaults the stiff damped pendulum gained
    four times its initial energy (observe mode: the monitor judges without acting) and
    ended 2.9 m from the converged motion with exit 0.  The monitor redoes the interval
    where the energy rose: the energy then never rises above its start by the limit, nor
    above its lowest by a tenth of the energy."""
    model = _stiff_damped_pendulum()
    assert passive(model) and not conservative(model)

    def energy(**env):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        sim = Simulation(model, Settings(formulation=form, t_end=2.0))
        rows, err = _run(sim)
        e = rows[:, sim.columns.index("energy.total")]
        return err, sim.stats, float(np.max(e - np.minimum.accumulate(e))), float(np.max(np.abs(e))), e

    err, stats, rise, size, e = energy()
    assert err is None and stats["retries"] >= 1
    assert np.max(e - e[0]) < config.MONITOR_ENERGY_DRIFT * size and rise < 0.1 * size
    err, stats, rise, _, _ = energy(LINKWORK_MONITOR="observe")
    assert rise > size  # without the monitor's retries: what it catches


def test_summary_line_names_the_figures():
    st = {"max_position_violation": 3e-14, "energy_drift": 1e-7, "energy_drift_relative": 3e-9,
          "conservative": True, "min_loop_conditioning": 3.3e-4, "t_closest_approach": 7.51, "retries": 2}
    line = summary(st)
    assert "worst position violation 3e-14 m" in line and "energy drift 1e-07 J" in line
    assert "loop conditioning >= 0.00033 (closest at t = 7.51 s)" in line and "2 retries" in line


def test_monitor_switch():
    model = load_model(examples_dir() / "parallelogram-fourbar.mech.json")
    assert isinstance(Simulation(model, Settings(formulation="dense")).monitor, Monitor)
    assert Simulation(model, Settings(formulation="dense", monitor=False)).monitor is None


def test_cli_exit_3_with_the_health_line(tmp_path):
    """`linkwork run` on the parallelogram with dca unprojected: exit 3, the message names time and loop,
    the CSV keeps the rows before the failure, and the health line is printed although
    stderr is not a terminal."""
    out = tmp_path / "p.csv"
    r = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "run",
                        str(examples_dir() / "parallelogram-fourbar.mech.json"), "--formulation", "dca",
                        "--projection", "off", "--t-end", "4", "--out", str(out)], capture_output=True, text=True,
                       env={**os.environ, "LINKWORK_MONITOR": "on"})
    assert r.returncode == 3, r.stderr
    assert "simulation failed at t = " in r.stderr and "loop closed at joint J3" in r.stderr
    assert "linkwork: health: worst position violation" in r.stderr
    from linkwork.engine.results import read_csv

    cols, rows = read_csv(out)
    assert rows.shape[0] > 200 and _angle(cols, rows, "B").max() <= 1e-6


class _Recorder:
    """What the monitor reads of a recorder for its continuity checks."""

    def __init__(self, x, V, A):
        self.last_positions, self.last_twists = x, (V, A)


def test_the_leap_check_passes_smooth_motion_and_catches_a_millimetre():
    """Bodies in free flight and in circular motion, sampled at dt = 0.01: the positions'
    Hermite residual against the velocities and accelerations is tiny; a 1 mm jump of one
    body, with the velocities and accelerations as they were, is three times the limit."""
    model = build_model(gen.fourbar())
    mon = Monitor(model, None, ["violation.position", "violation.velocity", "energy.kinetic", "energy.total"], 1.0,
                  mode="on")
    w, r = 3.0, 0.7

    def state(t):
        x = np.array([[0.1 + 2.0 * t, 1.0 - 4.905 * t * t, 0.3],
                      [r * np.cos(w * t), r * np.sin(w * t), 0.0],
                      [0.5, 0.5 + 0.2 * t, -1.0]])
        V = np.zeros((3, 6))
        A = np.zeros((3, 6))
        V[0, :3] = (2.0, -9.81 * t, 0.0)
        A[0, :3] = (0.0, -9.81, 0.0)
        V[1, :3] = (-r * w * np.sin(w * t), r * w * np.cos(w * t), 0.0)
        A[1, :3] = (-r * w * w * np.cos(w * t), -r * w * w * np.sin(w * t), 0.0)
        V[2, :3] = (0.0, 0.2, 0.0)
        return x, V, A

    for t in (0.0, 0.01):
        mon._remember_motion(t, _Recorder(*state(t)))
    x, V, A = state(0.02)
    smooth = mon._leap(0.02, _Recorder(x, V, A))
    jumped = x.copy()
    jumped[1, 0] += 1e-3
    leap = mon._leap(0.02, _Recorder(jumped, V, A))
    assert smooth < 0.1
    assert leap > 2 * config.MONITOR_CONTINUITY_FACTOR  # 91 here: dt^2 max|a| / 90 is 1.1e-5 m


def _rotated_about_ground_hinge(ev, model, jump):
    """``ev`` with every body turned by ``jump`` metres at the farthest centre of mass about
    the ground hinge of a chain (positions and orientations only): a configuration the
    joints allow, reached in no time while the velocities stay as they were."""
    from linkwork.engine.formulations.base import Evaluation

    axis = model.axis_pred[0] / np.linalg.norm(model.axis_pred[0])
    o = ev.P[0]
    far = np.linalg.norm(ev.x - o, axis=1).max()
    a = jump / far
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    Q = np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * K @ K
    return Evaluation(t=ev.t, x=o + (ev.x - o) @ Q.T, R=np.einsum("ij,bjk->bik", Q, ev.R), V=ev.V, acc=ev.acc,
                      P=o + (ev.P - o) @ Q.T, reactions=ev.reactions, jq=ev.jq, extra=ev.extra)


@pytest.mark.parametrize("form", ["dense", "dca", "hdca", "index3", "rcr", "embedding"])
def test_a_planted_jump_is_caught_for_every_formulation(form, monkeypatch):
    """A test double moves every body of chain-8-revolute by up to 1 mm once, at t = 0.5 s
    (a configuration its joints allow, the velocities unchanged).  With the monitor on,
    the interval is redone and the row handed over does not carry the jump; switched off,
    the jump reaches the output -- the double works."""
    model = load_model(examples_dir() / "chain-8-revolute.mech.json")

    def run(mode, plant):
        monkeypatch.setenv("LINKWORK_MONITOR", mode)
        sim = Simulation(model, Settings(formulation=form, t_end=1.0))
        if plant:
            form_ = sim.formulation
            evaluate = form_.evaluate
            planted = []

            def jumped(t, y):
                ev = evaluate(t, y)
                if t >= 0.5 and not planted:
                    planted.append(t)
                    return _rotated_about_ground_hinge(ev, model, 1e-3)
                return ev

            form_.evaluate = jumped
        rows, err = _run(sim)
        assert err is None
        return _positions(sim.columns, rows, model), sim.stats

    clean, _ = run("on", False)
    caught, stats = run("on", True)
    k = 50  # the row of t = 0.5 s
    assert stats["retries"] >= 1
    # the row the jump was planted in is the redone interval's (later rows differ by the
    # finer sub-steps the pipeline keeps after a retry: rk4's or the trapezoidal rule's error)
    assert np.abs(caught[: k + 1] - clean[: k + 1]).max() < 1e-5  # index3: 4.5e-6, one interval at dt / 2
    passed, _ = run("off", True)
    assert np.abs(passed[k] - clean[k]).max() > 5e-4
