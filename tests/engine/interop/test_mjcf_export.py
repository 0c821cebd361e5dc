"""``linkwork export --mjcf`` (engine/interop/mjcf_export.py): every bundled example
written as MJCF and read back through MuJoCo's compiler is the example again -- bodies,
joints, gears and force elements to 1e-15 -- except what docs/import.md ("Round trip")
lists (the order of bodies and joints, a spring's rest length left to the initial
distance)."""

import numpy as np
import pytest

from linkwork.engine.interop.common import RATES_KEYFRAME, InteropError
from linkwork.engine.interop.mjcf_export import export_mjcf
from linkwork.engine.mechfile import GROUND, JointSpec, load

from ..conftest import EXAMPLES

TOL = 1e-15


def _flat(x):
    return np.atleast_1d(np.asarray(x, dtype=float)).ravel()


def _diff(a, b) -> float:
    if a is None and b is None:
        return 0.0
    a = _flat(a) if a is not None else np.zeros(_flat(b).size)
    b = _flat(b) if b is not None else np.zeros(a.size)
    return float(np.max(np.abs(a - b))) if a.size == b.size else np.inf


def round_trip_differences(spec, back) -> tuple[float, list[str]]:
    """(largest numeric difference, what differs beyond TOL or in kind) between a spec and
    its round trip; the documented exceptions (module docstring) are not differences."""
    worst, bad = 0.0, []
    if {b.name for b in spec.bodies} != {b.name for b in back.bodies}:
        bad.append(f"bodies {[b.name for b in spec.bodies]} != {[b.name for b in back.bodies]}")
        return np.inf, bad
    for b in spec.bodies:
        c = back.body(b.name)
        for field in ("mass", "inertia", "position", "orientation"):
            d = _diff(getattr(b, field), getattr(c, field))
            worst = max(worst, d)
            if d > TOL:
                bad.append(f"{b.name}.{field}: {d:.3g}")
        if (b.shape is None) != (c.shape is None) or (b.shape and b.shape.kind != c.shape.kind
                                                      and b.shape.kind != "mesh"):
            bad.append(f"{b.name}.shape: {b.shape} -> {c.shape}")
        elif b.shape is not None and b.shape.kind != "mesh":
            for field in ("p_from", "p_to", "radius", "size", "length", "axis"):
                if _diff(getattr(b.shape, field), getattr(c.shape, field)) > 1e-12:
                    bad.append(f"{b.name}.shape.{field}")
    for j in spec.joints:
        try:
            k = back.joint(j.name)
        except KeyError:
            bad.append(f"joint {j.name!r} missing")
            continue
        if (j.type, j.parent, j.child, j.cut) != (k.type, k.parent, k.child, k.cut):
            bad.append(f"joint {j.name}: {(j.type, j.parent, j.child, j.cut)} -> {(k.type, k.parent, k.child, k.cut)}")
            continue
        if (j.rate is None) != (k.rate is None):
            bad.append(f"{j.name}.rate: {j.rate} -> {k.rate}")
        for field in ("anchor", "axis", "axes", "rate"):
            d = _diff(getattr(j, field), getattr(k, field))
            worst = max(worst, d)
            if d > TOL:
                bad.append(f"{j.name}.{field}: {d:.3g}")
    if len(back.joints) != len(spec.joints):
        bad.append(f"{len(spec.joints)} joints -> {len(back.joints)}")
    for c in spec.couplings:
        k = back.coupling(c.name)
        if (c.driver, c.driven, c.ratio) != (k.driver, k.driven, k.ratio):
            bad.append(f"coupling {c.name}: {c} -> {k}")
    for kind in ("joint-spring", "joint-torque", "spring"):
        ours = [_force_numbers(f) for f in spec.forces if f.type == kind]
        theirs = [_force_numbers(f) for f in back.forces if f.type == kind]
        if sorted(k for k, _ in ours) != sorted(k for k, _ in theirs):
            bad.append(f"{kind}: {ours} -> {theirs}")
            continue
        for (key, x), (_, y) in zip(sorted(ours, key=lambda e: e[0]), sorted(theirs, key=lambda e: e[0])):
            d = _diff(x, y)
            worst = max(worst, d)
            if d > TOL:
                bad.append(f"{kind} {key}: {d:.3g}")
    if _diff(spec.gravity, back.gravity) > 0:
        bad.append("gravity")
    return worst, bad


def _force_numbers(f):
    """(what a force element acts on, its numbers): a spring's rest length, where the file
    leaves it to the distance at t = 0, is that distance."""
    if f.type == "spring":
        rest = f.rest_length if f.rest_length is not None else float(
            np.linalg.norm(np.subtract(f.point2, f.point1)))
        return (f.body1, f.body2), [*f.point1, *f.point2, f.stiffness, f.damping, rest]
    if f.type == "joint-spring":
        return f.joint, [f.stiffness, f.damping, f.rest]
    return f.joint, list(f.value)


def _loop_joints(spec) -> set[str]:
    from linkwork.engine.interop.mjcf_export import spanning_tree

    _, cuts = spanning_tree(spec)
    return {spec.joints[k].name for k in cuts}


def _round_trip(spec, tmp_path):
    from linkwork.engine.interop.mjcf_import import import_file

    out = export_mjcf(spec)
    path = tmp_path / "model.xml"
    path.write_text(out.xml)
    keyframe = RATES_KEYFRAME if f'name="{RATES_KEYFRAME}"' in out.xml else None
    return out, import_file(path, keyframe=keyframe).spec


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name.split(".")[0])
def test_every_example_round_trips(path, tmp_path):
    pytest.importorskip("mujoco")
    spec = load(path)
    out, back = _round_trip(spec, tmp_path)
    worst, bad = round_trip_differences(spec, back)
    print(f"{path.name}: largest difference {worst:.2e}; export warnings {len(out.warnings)}")
    assert not bad, bad
    assert worst <= TOL


def test_what_the_export_leaves_out_is_named(tmp_path):
    """joint-zoo's torque on its spherical joint and slider-crank's rate on its
    loop-closing joint: one warning per kind.  MuJoCo starts from the tree's rates (its
    equalities carry none), and so would the engine: its initial velocities (the tree's
    rates projected onto the loop) are the same with and without the loop's rate."""
    pytest.importorskip("mujoco")
    from linkwork import Settings, Simulation
    from linkwork.engine.mechfile import ForceSpec
    from linkwork.engine.model import build_model

    zoo = load(EXAMPLES[0].parent / "joint-zoo.mech.json")
    ball = [j.name for j in zoo.joints if j.type == "spherical"][0]
    out = export_mjcf(zoo.with_(forces=zoo.forces + (ForceSpec("joint-torque", joint=ball, value=(0.1, 0, 0)),)))
    (w,) = [w for w in out.warnings if w.startswith("joint torques on spherical")]
    assert repr(ball) in w
    spec = load(EXAMPLES[0].parent / "slider-crank.mech.json")
    out, back = _round_trip(spec, tmp_path)
    (w,) = [w for w in out.warnings if w.startswith("rates of loop-closing joints")]
    loop = [n for n in _loop_joints(spec) if spec.joint(n).rate is not None and any(spec.joint(n).rate)]
    assert loop and all(repr(n) in w for n in loop)
    assert all(back.joint(n).rate == spec.joint(n).rate for n in loop)  # kept for linkwork import
    springs = [f for f in spec.forces if f.type == "spring"]
    unrated = back.with_(joints=tuple(JointSpec(**{**j.__dict__, "rate": None}) if j.name in loop else j
                                      for j in back.joints))
    V = []
    for s in (spec.with_(forces=tuple(springs)), unrated.with_(forces=tuple(springs))):
        form = Simulation(build_model(s), Settings(formulation="dense", threads=1)).formulation
        ev = form.evaluate(0.0, form.initial_state())
        V.append({name: ev.V[i] for i, name in enumerate(form.model.body_names)})
    for name, v in V[0].items():
        assert np.max(np.abs(v - V[1][name])) <= 1e-12


def test_a_changed_number_is_caught(tmp_path):
    """The comparison can fail: a coupling ratio, a mass and an anchor changed in the
    MJCF text by one part in 1e12 show up."""
    pytest.importorskip("mujoco")
    from linkwork.engine.interop.mjcf_import import import_file

    spec = load(EXAMPLES[0].parent / "geared-arm.mech.json")
    xml = export_mjcf(spec).xml
    c = spec.couplings[0]
    for old, new in ((f'mass="{spec.bodies[0].mass!r}"', f'mass="{spec.bodies[0].mass * (1 + 1e-12)!r}"'),
                     (f'polycoef="0 {c.ratio!r}', f'polycoef="0 {c.ratio * (1 + 1e-12)!r}')):
        assert old in xml, old
        path = tmp_path / "changed.xml"
        path.write_text(xml.replace(old, new, 1))
        _, bad = round_trip_differences(spec, import_file(path).spec)
        assert bad, old


def test_a_prismatic_loop_closure_is_refused():
    """MJCF has no equality for a prismatic joint: when the only joints of a loop that
    could be cut are prismatic (marked cut), the export refuses in one line."""
    spec = load(EXAMPLES[0].parent / "slider-crank.mech.json")
    slider = [j for j in spec.joints if j.type == "prismatic"][0]
    marked = spec.with_(joints=tuple(JointSpec(**{**j.__dict__, "cut": j is slider}) for j in spec.joints))
    with pytest.raises(InteropError, match=f"joint '{slider.name}' \\(prismatic\\) closes a loop"):
        export_mjcf(marked)


def test_a_body_named_world_is_refused():
    spec = load(EXAMPLES[0].parent / "parallelogram-fourbar.mech.json")
    b = spec.bodies[0]
    renamed = spec.with_(
        bodies=(b.__class__(**{**b.__dict__, "name": "world"}),) + spec.bodies[1:],
        joints=tuple(JointSpec(**{**j.__dict__, "parent": "world" if j.parent == b.name else j.parent,
                                  "child": "world" if j.child == b.name else j.child}) for j in spec.joints))
    assert GROUND != "world"
    with pytest.raises(InteropError, match="named 'world'"):
        export_mjcf(renamed)


def test_joints_written_against_the_tree_keep_their_meaning(tmp_path):
    """joint-zoo with every joint between two bodies written child -> parent (its rates,
    springs and torques kept): MJCF nests the bodies the other way, so the export turns
    those joints round (axes negated, a universal's axes, rates and torques swapped, a
    spherical rate negated).  The mechanism that comes back starts with the same body
    velocities and accelerations."""
    pytest.importorskip("mujoco")
    from linkwork import Settings, Simulation
    from linkwork.engine.model import build_model

    spec = load(EXAMPLES[0].parent / "joint-zoo.mech.json")
    flipped = tuple(j if GROUND in (j.parent, j.child) else JointSpec(**{**j.__dict__, "parent": j.child,
                                                                         "child": j.parent})
                    for j in spec.joints)
    assert sum(j.parent != k.parent for j, k in zip(flipped, spec.joints)) >= 3
    spec = spec.with_(joints=flipped)
    _, back = _round_trip(spec, tmp_path)
    turned = {j.name for j in back.joints} & {j.name for j in flipped if GROUND not in (j.parent, j.child)}
    assert turned and all(back.joint(n).parent == spec.joint(n).child for n in turned)
    states = []
    for s in (spec, back):
        form = Simulation(build_model(s), Settings(formulation="dense", threads=1)).formulation
        ev = form.evaluate(0.0, form.initial_state())
        states.append({name: np.concatenate([ev.x[i], ev.V[i], ev.acc[i]])
                       for i, name in enumerate(form.model.body_names)})
    scale = max(float(np.max(np.abs(v))) for v in states[0].values())
    worst = max(float(np.max(np.abs(v - states[1][n]))) for n, v in states[0].items()) / scale
    print(f"joint-zoo turned round: largest relative difference in x, V, acc at t = 0: {worst:.2e}")
    assert worst <= 1e-12


@pytest.mark.parametrize("stem", ["chain-5-spherical-spatial", "chain-6-universal-spatial", "chain-8-revolute",
                                  "joint-zoo"])
def test_exported_trees_accelerate_in_mujoco_as_in_linkwork(stem, tmp_path):
    """The export alone, without the importer: MuJoCo's mj_forward on the written MJCF
    gives the joint accelerations Linkwork computes from the original file, at 20 random
    states (ball joints at any orientation; joint-zoo's joint springs, point spring as a
    tendon and joint torques as actuators included)."""
    mujoco = pytest.importorskip("mujoco")
    from linkwork import Settings, Simulation
    from linkwork.engine.model import build_model

    from .conftest import CoordinateMap, random_state

    spec = load(EXAMPLES[0].parent / f"{stem}.mech.json")
    path = tmp_path / "model.xml"
    path.write_text(export_mjcf(spec).xml)
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    model = build_model(spec)
    form = Simulation(model, Settings(formulation="dense", threads=1)).formulation
    form.initial_state()
    cmap = CoordinateMap(m, model, m.qpos0)
    assert sum(len(ids) for _, ids in cmap.parts) == m.njnt
    d = mujoco.MjData(m)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(20):
        qpos, qvel = random_state(m, m.qpos0, rng)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, d)
        ours = cmap.qacc(qpos, form.evaluate(0.0, cmap.state(qpos, qvel)).extra["vdot"])
        worst = max(worst, float(np.max(np.abs(ours - d.qacc)) / np.max(np.abs(d.qacc))))
    print(f"{stem}: exported MJCF, largest relative difference in qacc {worst:.2e}")
    assert worst <= 1e-9
