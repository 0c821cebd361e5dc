"""MJCF and URDF models read through MuJoCo's compiler (engine/interop/mjcf_import.py,
docs/import.md): the imported mechanism moves as MuJoCo's model does.

Expected values come from MuJoCo (``mj_forward``'s ``qacc``, its mass matrix and bias
forces, its compiled equality anchors), never from the importer."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from linkwork import Settings, Simulation  # noqa: E402
from linkwork.engine.interop.common import InteropError  # noqa: E402
from linkwork.engine.interop.mjcf_import import import_file  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402

from .conftest import MODELS, CoordinateMap, random_state  # noqa: E402

#: what Linkwork does not model, switched off in MuJoCo for the comparison
OFF = ("mjDSBL_CONTACT", "mjDSBL_LIMIT", "mjDSBL_EQUALITY", "mjDSBL_FRICTIONLOSS")
RTOL = 1e-9
STATES = 20


def _mujoco(path, keyframe=None):
    m = mujoco.MjModel.from_xml_path(str(path))
    for flag in OFF:
        m.opt.disableflags |= int(getattr(mujoco.mjtDisableBit, flag))
    d = mujoco.MjData(m)
    if keyframe:
        mujoco.mj_resetDataKeyframe(m, d, m.key(keyframe).id)
    return m, d.qpos.copy()


def _dense(spec):
    model = build_model(spec)
    form = Simulation(model, Settings(formulation="dense", threads=1)).formulation
    form.initial_state()
    return model, form


def _worst_relative_difference(path, keyframe=None, spec_change=None):
    """Largest ``|qacc_linkwork - qacc_mujoco| / |qacc_mujoco|`` over random states."""
    m, qpos_init = _mujoco(path, keyframe)
    spec = import_file(path, keyframe=keyframe).spec
    if spec_change:
        spec = spec_change(spec)
    model, form = _dense(spec)
    cmap = CoordinateMap(m, model, qpos_init)
    assert sum(len(ids) for _, ids in cmap.parts) == m.njnt  # every MuJoCo joint is in a Linkwork joint
    rng = np.random.default_rng(20)
    d = mujoco.MjData(m)
    worst = 0.0
    for _ in range(STATES):
        qpos, qvel = random_state(m, qpos_init, rng)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, d)
        ev = form.evaluate(0.0, cmap.state(qpos, qvel))
        ours = cmap.qacc(qpos, ev.extra["vdot"])
        worst = max(worst, float(np.max(np.abs(ours - d.qacc)) / np.max(np.abs(d.qacc))))
    return worst


@pytest.mark.parametrize("name, keyframe", [("arm7.xml", None), ("defaults_include.xml", "bent"),
                                            ("arm6.urdf", None)])
def test_open_trees_accelerate_as_in_mujoco(name, keyframe):
    """Seven turned hinges with full inertias, a tendon spring and a constant actuator;
    default classes, an included ball joint and universal pair, joint springs about a rest
    away from the keyframe, a constant actuator on the universal's second hinge; a URDF
    arm: Linkwork's joint accelerations are mj_forward's qacc at 20 random states."""
    spec = import_file(MODELS / name, keyframe=keyframe).spec
    if name != "arm6.urdf":
        assert {f.type for f in spec.forces} >= {"joint-spring", "joint-torque"}
    worst = _worst_relative_difference(MODELS / name, keyframe)
    print(f"{name}: largest relative difference in qacc over {STATES} states {worst:.2e}")
    assert worst <= RTOL


def test_a_wrong_import_is_caught():
    """The comparison can fail: the arm with one link twice as heavy disagrees."""
    def heavier(spec):
        b = spec.bodies[3]
        return spec.with_(bodies=spec.bodies[:3] + (b.__class__(**{**b.__dict__, "mass": 2 * b.mass}),)
                          + spec.bodies[4:])

    assert _worst_relative_difference(MODELS / "arm7.xml", spec_change=heavier) > 1e-3


def test_joint_equality_is_a_gear_that_moves_as_the_constrained_pendulums():
    """coupled.xml: the joint equality becomes gear 'mesh' (ratio -2), and Linkwork's
    accelerations solve MuJoCo's equations of motion with that constraint held exactly:
    [M G'; G 0] [qacc; lambda] = [passive - bias; 0], G = [1, 2], from mj_fullM and
    qfrc_bias."""
    path = MODELS / "coupled.xml"
    spec = import_file(path).spec
    (gear,) = spec.couplings
    assert (gear.name, gear.driver, gear.driven, gear.ratio) == ("mesh", "left", "right", -2.0)
    m, qpos_init = _mujoco(path)
    model, form = _dense(spec)
    cmap = CoordinateMap(m, model, qpos_init)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    G = np.array([[1.0, 2.0]])  # q_left + 2 q_right = 0 (MuJoCo's joint order: left, right)
    worst = 0.0
    for _ in range(STATES):
        r, w = rng.uniform(-0.5, 0.5), rng.normal()
        qpos, qvel = qpos_init + np.array([-2 * r, r]), np.array([-2 * w, w])
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        try:
            mujoco.mj_fullM(m, d, M)  # MuJoCo 4
        except TypeError:
            mujoco.mj_fullM(m, M, d.qM)  # MuJoCo 3
        K = np.block([[M, G.T], [G, np.zeros((1, 1))]])
        want = np.linalg.solve(K, np.concatenate([d.qfrc_passive - d.qfrc_bias, [0.0]]))[:2]
        ours = cmap.qacc(qpos, form.evaluate(0.0, cmap.state(qpos, qvel)).extra["vdot"])
        worst = max(worst, float(np.max(np.abs(ours - want)) / np.max(np.abs(want))))
    print(f"coupled.xml: largest relative difference {worst:.2e}")
    assert worst <= RTOL


def _closure(path, steps=0):
    """Largest distance between the two points of each connect equality, both placed by
    MuJoCo's compiled anchors (eq_data) on the bodies as Linkwork has them -- at t = 0,
    or after ``steps`` rk4 steps of 0.01 s."""
    m = mujoco.MjModel.from_xml_path(str(path))
    model = build_model(import_file(path).spec)
    sim = Simulation(model, Settings(formulation="dense", t_end=max(steps, 1) * 0.01, threads=1))
    form = sim.formulation
    y = form.initial_state()
    if steps:
        y = form.rk4_steps(0.0, steps * 0.01, y, steps)
    ev = form.evaluate(0.0, y)

    def origin_and_frame(b):
        i = model.body_index(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b))
        return ev.x[i] - ev.R[i] @ m.body_ipos[b], ev.R[i]  # the body frame is MuJoCo's; x its centre of mass

    worst = 0.0
    for e in range(m.neq):
        (o1, R1), (o2, R2) = origin_and_frame(m.eq_obj1id[e]), origin_and_frame(m.eq_obj2id[e])
        gap = (o1 + R1 @ m.eq_data[e, 0:3]) - (o2 + R2 @ m.eq_data[e, 3:6])
        worst = max(worst, float(np.linalg.norm(gap)))
    return model, worst


@pytest.mark.parametrize("name, loops, revolute", [("fourbar.xml", 1, 1), ("ladder4.xml", 4, 2)])
def test_loops_are_closed_at_the_start(name, loops, revolute):
    """The four-bar's two connects on one axis make one revolute closure; the ladder's
    single connects spherical ones, its pairs revolute ones; every connect's two points
    coincide at t = 0 (<= 1e-12 m) and still after half a second."""
    model, at_start = _closure(MODELS / name)
    cuts = [j for j in model.spec.joints if j.cut]
    assert len(cuts) == loops and sum(j.type == "revolute" for j in cuts) == revolute
    assert {j.type for j in cuts} <= {"revolute", "spherical"}
    _, later = _closure(MODELS / name, steps=50)
    print(f"{name}: closure {at_start:.2e} m at t = 0, {later:.2e} m at t = 0.5 s")
    assert at_start <= 1e-12
    assert later <= 1e-9


def test_what_linkwork_lacks_is_named_once_per_kind():
    """unsupported.xml: the pendulum stays; the free body, the tendon, the motor, the
    sensor, the range and the contacts are each one warning naming the elements."""
    result = import_file(MODELS / "unsupported.xml")
    assert [b.name for b in result.spec.bodies] == ["pendulum"]
    text = "\n".join(result.warnings)
    for kind, names in (("free joints", ["crate_free"]), ("tendons", ["swing_tendon"]),
                        ("actuators", ["swing_motor"]), ("sensors", ["swing_angle"]),
                        ("joint ranges", ["swing"]), ("contacts", ["floor", "bob"]),
                        ("bodies no joint connects", ["crate"])):
        (line,) = [w for w in result.warnings if w.startswith(kind)]
        assert all(repr(n) in line or n in line for n in names), (kind, line)
    assert len(result.warnings) == 7, text


def test_a_model_with_no_mechanism_left_is_refused_in_one_line():
    with pytest.raises(InteropError) as exc:
        import_file(MODELS / "only_free.xml")
    assert "nothing left to simulate" in str(exc.value) and "\n" not in str(exc.value)


def test_an_equality_that_does_not_hold_is_refused(tmp_path):
    """A joint equality with an offset: at qpos0 it does not hold, so the file's initial
    pose is no assembled mechanism; a keyframe where it holds is accepted."""
    text = (MODELS / "coupled.xml").read_text().replace('polycoef="0 -2 0 0 0"', 'polycoef="0.2 -2 0 0 0"')
    text = text.replace("</mujoco>", '<keyframe><key name="held" qpos="0.2 0"/></keyframe></mujoco>')
    path = tmp_path / "offset.xml"
    path.write_text(text)
    with pytest.raises(InteropError, match="does not hold"):
        import_file(path)
    spec = import_file(path, keyframe="held").spec
    assert spec.couplings[0].ratio == -2.0
    with pytest.raises(InteropError, match="no keyframe 'nope'"):
        import_file(path, keyframe="nope")


def test_a_free_body_tied_by_a_connect_is_a_spherical_pendulum():
    """tethered.xml: the free joint is named in a warning, but the body stays: the
    connect is its (tree) spherical joint at the tether point, not a loop closure."""
    result = import_file(MODELS / "tethered.xml")
    (joint,) = result.spec.joints
    assert (joint.name, joint.type, joint.parent, joint.child, joint.cut) == (
        "tether", "spherical", "ground", "bob", False)
    assert joint.anchor == (0.0, 0.0, 1.0)
    assert any(w.startswith("free joints") and "loose" in w for w in result.warnings)
    assert not any("left out" in w for w in result.warnings)
    build_model(result.spec)
