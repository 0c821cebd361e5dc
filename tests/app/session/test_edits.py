"""Pure spec edits: points, lengths, names, deletion."""

import numpy as np
import pytest

from linkwork.engine import generators as g
from linkwork.engine.mechfile import GROUND

from linkwork.app.session import edits
from linkwork.app.session.validation import validate


def test_move_point_moves_everything_on_it_and_keeps_loops_closed():
    spec = g.fourbar()
    pa = spec.joint("J2").anchor
    new = (0.6, 0.9, 0.0)
    out, _ = edits.move_point(spec, (), pa, new)
    assert out.joint("J2").anchor == new
    assert out.body("A").shape.p_to == new and out.body("B").shape.p_from == new
    # centres of mass stay at the middle of the rods
    assert np.allclose(out.body("A").position, 0.5 * np.array(new))
    assert validate(out).ok


def test_rod_inertia_stays_derived_but_typed_inertia_stays():
    rod = g.chain(2, inertia=None)  # slender-rod inertias
    assert edits.is_rod_inertia(rod.body("L1"))
    out, _ = edits.move_point(rod, (), rod.joint("J2").anchor, (2.0, 0.0, 0.0))
    assert edits.is_rod_inertia(out.body("L1")) and edits.is_rod_inertia(out.body("L2"))
    unit = g.chain(2)  # diag(1,1,1)? the paper chains are; default chain is a rod
    typed = edits.set_body(unit, "L1", inertia=edits.diag_inertia((1, 1, 1)))
    out, _ = edits.move_point(typed, (), typed.joint("J2").anchor, (2.0, 0.0, 0.0))
    assert out.body("L1").inertia == edits.diag_inertia((1, 1, 1))


def test_mass_change_keeps_rod_inertia_derived():
    spec = g.chain(1, inertia=None)
    out = edits.set_body(spec, "L1", mass=3.0)
    assert edits.is_rod_inertia(out.body("L1"))
    assert out.body("L1").inertia[2][2] == pytest.approx(3.0 * (3 * 0.03**2 + 1.0) / 12)


def test_length_of_an_open_chain_carries_the_rest_along():
    spec = g.chain(3)
    out = edits.set_rod_length(spec, "L1", 2.0)
    assert edits.rod_length(out.body("L1")) == pytest.approx(2.0)
    # L2 and L3 are translated, not stretched
    assert edits.rod_length(out.body("L2")) == pytest.approx(1.0)
    assert out.body("L3").position[0] == pytest.approx(spec.body("L3").position[0] + 1.0)
    assert validate(out).ok


def test_length_in_a_loop_stretches_the_neighbour():
    spec = g.fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0, crank_angle_deg=60.0)
    out = edits.set_rod_length(spec, "A", 0.5)
    assert edits.rod_length(out.body("A")) == pytest.approx(0.5)
    # the rocker pivot to ground did not move: the loop stays closed by stretching B
    assert out.joint("J4").anchor == spec.joint("J4").anchor
    assert validate(out).ok


def test_rename_updates_every_reference():
    spec = g.slider_crank()
    out = edits.set_body(spec, "slider", name="block")
    assert any(j.child == "block" for j in out.joints)
    assert out.forces[0].body2 == "block"
    out = edits.set_joint(out, "guide", name="rail")
    assert out.joint("rail").type == "prismatic"


def test_delete_body_removes_its_joints_and_forces():
    spec = g.slider_crank()
    out = edits.delete_body(spec, "slider")
    assert all("slider" not in (j.parent, j.child) for j in out.joints)
    assert out.forces == ()


def test_changing_joint_type_gets_the_axes_it_needs():
    spec = g.fourbar()
    u = edits.set_joint(spec, "J2", type="universal")
    a1, a2 = u.joint("J2").axes
    assert abs(np.dot(a1, a2)) < 1e-12
    s = edits.set_joint(u, "J2", type="spherical")
    assert s.joint("J2").axis is None and s.joint("J2").axes is None
    assert validate(s).ok


def test_add_link_and_names():
    spec = g.fourbar()
    out, b, j = edits.add_link(spec, (0, 0, 0), (0, -1, 0), GROUND, "revolute", (0, 0, 1))
    assert b == "D" and j == "J5"
    assert out.joint("J5").axis == (0.0, 0.0, 1.0)
    with pytest.raises(ValueError):
        edits.add_link(spec, (0, 0, 0), (0, 0, 0), GROUND, "revolute", (0, 0, 1))


def test_joint_axes_for_a_drawn_prismatic_follow_the_link():
    d = edits.joint_axes_for("prismatic", (0, 0, 1), (3.0, 4.0, 0.0))
    assert np.allclose(d["axis"], (0.6, 0.8, 0.0))


# ------------------------------------------------------------------------ gears


def test_add_gear_takes_the_first_free_one_freedom_joint_and_validates_like_a_file():
    from linkwork.engine.mechfile import CouplingSpec

    from linkwork.app.session.validation import validate

    spec = g.fourbar()
    s1 = edits.add_gear(spec, "J1", ratio=-1.0)
    assert s1.couplings == (CouplingSpec("G1", "J1", "J2", -1.0),)
    assert validate(s1).ok
    s2 = edits.add_gear(s1, "J3", name=edits.next_gear_name(s1))
    assert s2.couplings[1] == CouplingSpec("G2", "J3", "J4", 1.0)
    # the loader's rules, with the refusal pointing at the gear
    bad = edits.set_gear(s1, "G1", ratio=0.0)
    v = validate(bad)
    assert not v.ok and v.path == "couplings[0].ratio" and v.target.kind == "gear" and v.target.name == "G1"
    twice = edits.add_gear(s1, "J1", driven="J3")
    v = validate(twice)
    assert not v.ok and "already geared" in v.message and v.target.name == "G2"
    with pytest.raises(ValueError):
        edits.add_gear(s2, "J1")  # every one-freedom joint is geared already


def test_renaming_and_deleting_joints_and_bodies_keep_gears_consistent():
    spec = edits.add_gear(g.fourbar(), "J1", driven="J4", ratio=-1.0)
    r = edits.rename_joint(spec, "J4", "rocker_pin")
    assert (r.couplings[0].driver, r.couplings[0].driven) == ("J1", "rocker_pin")
    assert edits.set_joint(spec, "J1", name="crank_pin").couplings[0].driver == "crank_pin"
    assert edits.delete_joint(spec, "J4").couplings == ()
    assert edits.delete_body(spec, "A").couplings == ()  # A carries J1
    assert edits.delete_gear(spec, "G1").couplings == ()
    assert edits.set_gear(spec, "G1", name="mesh").couplings[0].name == "mesh"


# ---------------------------------------------------------------------- drivers


def test_add_driver_starts_a_motor_at_one_turn_a_second_and_validates_like_a_file():
    from linkwork.engine.mechfile import DriverSpec, MotionSpec

    from linkwork.app.session.validation import validate

    spec = g.fourbar()
    s1 = edits.add_driver(spec, "J1")
    assert s1.drivers == (DriverSpec("M1", "J1", MotionSpec("constant-rate", rate=2 * np.pi)),)
    assert validate(s1).ok
    assert "J1" not in edits.free_joints(s1) and "J2" in edits.free_joints(s1)
    assert edits.add_gear(s1, "J2").couplings[0].driven == "J3"  # the driven J1 is not offered
    h = edits.set_driver(s1, "M1", kind="harmonic", amplitude=0.5, frequency=2, phase=0.1, offset=0)
    assert h.drivers[0].motion == MotionSpec("harmonic", amplitude=0.5, frequency=2.0, phase=0.1)
    assert validate(h).ok
    # the loader's rules, with the refusal pointing at the driver
    bad = edits.set_driver(s1, "M1", kind="table", t=[0, 2, 1], q=[0, 1, 2])
    v = validate(bad)
    assert not v.ok and v.path.startswith("drivers[0]") and v.target.kind == "driver" and v.target.name == "M1"
    twice = edits.add_driver(s1, "J1", name="M2")
    v = validate(twice)
    assert not v.ok and v.target == type(v.target)("driver", "M2")
    with pytest.raises(KeyError):
        edits.add_driver(spec, "no such joint")


def test_renaming_and_deleting_joints_and_bodies_keep_drivers_consistent():
    spec = edits.add_driver(g.fourbar(), "J1")
    assert edits.rename_joint(spec, "J1", "crank_pin").drivers[0].joint == "crank_pin"
    assert edits.set_joint(spec, "J1", name="crank_pin").drivers[0].joint == "crank_pin"
    assert edits.delete_joint(spec, "J1").drivers == ()
    assert edits.delete_joint(spec, "J2").drivers == spec.drivers
    assert edits.delete_body(spec, "A").drivers == ()  # A carries J1
    assert edits.delete_driver(spec, "M1").drivers == ()
    assert edits.set_driver(spec, "M1", name="motor").drivers[0].name == "motor"
    with pytest.raises(KeyError):
        edits.set_driver(spec, "nobody", rate=1.0)
