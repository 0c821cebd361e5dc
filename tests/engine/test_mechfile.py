"""Mechanism files: every refusal rule of docs/file-format.md, "Refusal rules", and round trips."""

import copy
import json

import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import MechanismError
from linkwork.engine.mechfile import dumps, load, loads, save, spec_from_dict, spec_to_dict
from linkwork.engine.model import build_model

from .conftest import EXAMPLES


def _refused(d, path, rule_part):
    with pytest.raises(MechanismError) as ei:
        spec = spec_from_dict(d)
        build_model(spec)
    assert ei.value.path == path, str(ei.value)
    assert rule_part in ei.value.rule, str(ei.value)
    assert str(ei.value).startswith(f"{path}: ")


def _mut(d, fn):
    d = copy.deepcopy(d)
    fn(d)
    return d


def _gear(d, **changes):
    """Append a gear J1 -> J4 (with ``changes``) to the document's couplings; returns it."""
    g = {"type": "gear", "name": "G", "driver": "J1", "driven": "J4", "ratio": 2.0, **changes}
    d.setdefault("couplings", []).append(g)
    return g


def test_contract_example_message(fourbar_dict):
    d = _mut(fourbar_dict, lambda d: d["bodies"][2].__setitem__("mass", -1))
    with pytest.raises(MechanismError) as ei:
        spec_from_dict(d)
    assert str(ei.value) == "bodies[2].mass: must be > 0 (got -1)"


# (mutation, expected path, part of the rule) -- one line per rule of the format
RULES = [
    # document
    (lambda d: d.pop("format"), "format", "is required"),
    (lambda d: d.__setitem__("format", "other"), "format", "must be"),
    (lambda d: d.pop("version"), "version", "is required"),
    (lambda d: d.__setitem__("version", 2), "version", "reads version 1"),
    (lambda d: d.__setitem__("name", 3), "name", "must be a string"),
    (lambda d: d.__setitem__("gravity", [0, -9.81]), "gravity", "list of 3 numbers"),
    (lambda d: d.__setitem__("gravity", [0, "x", 0]), "gravity[1]", "must be a number"),
    (lambda d: d.pop("bodies"), "bodies", "is required"),
    (lambda d: d.__setitem__("bodies", {}), "bodies", "must be a list"),
    (lambda d: d.__setitem__("bodies", []), "bodies", "at least one body"),
    (lambda d: d.pop("joints"), "joints", "is required"),
    # bodies
    (lambda d: d["bodies"].__setitem__(0, 5), "bodies[0]", "JSON object"),
    (lambda d: d["bodies"][1].pop("name"), "bodies[1].name", "is required"),
    (lambda d: d["bodies"][1].__setitem__("name", ""), "bodies[1].name", "must not be empty"),
    (lambda d: d["bodies"][1].__setitem__("name", "ground"), "bodies[1].name", "reserved"),
    (lambda d: d["bodies"][1].__setitem__("name", "A"), "bodies[1].name", "duplicate body name"),
    (lambda d: d["bodies"][0].pop("mass"), "bodies[0].mass", "is required"),
    (lambda d: d["bodies"][0].__setitem__("mass", 0), "bodies[0].mass", "must be > 0"),
    (lambda d: d["bodies"][0].__setitem__("mass", True), "bodies[0].mass", "must be a number"),
    (lambda d: d["bodies"][0].__setitem__("mass", float("inf")), "bodies[0].mass", "finite"),
    (lambda d: d["bodies"][0].__setitem__("mass", 1e300), "bodies[0].mass", "magnitude"),
    (lambda d: d["bodies"][0].pop("inertia"), "bodies[0].inertia", "is required"),
    (lambda d: d["bodies"][0].__setitem__("inertia", [1, 1]), "bodies[0].inertia", "3 principal moments"),
    (lambda d: d["bodies"][0].__setitem__("inertia", [1, -1, 1]), "bodies[0].inertia", "positive definite"),
    (lambda d: d["bodies"][0].__setitem__("inertia", [[1, 0, 0], [0, 1, 0], [0, 0, -1]]),
     "bodies[0].inertia", "positive definite"),
    (lambda d: d["bodies"][0].__setitem__("inertia", [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]),
     "bodies[0].inertia", "symmetric"),
    (lambda d: d["bodies"][0].__setitem__("inertia", [[1, 0, 0], [0, 1], [0, 0, 1]]),
     "bodies[0].inertia[1]", "list of 3 numbers"),
    (lambda d: d["bodies"][0].pop("position"), "bodies[0].position", "is required"),
    (lambda d: d["bodies"][0].__setitem__("position", [0, 0]), "bodies[0].position", "list of 3"),
    (lambda d: d["bodies"][0].__setitem__("orientation", [1, 0, 0]), "bodies[0].orientation", "list of 4"),
    (lambda d: d["bodies"][0].__setitem__("orientation", [1, 0.1, 0, 0]), "bodies[0].orientation",
     "unit quaternion"),
    (lambda d: d["bodies"][0].__setitem__("velocity", "fast"), "bodies[0].velocity", "must be a list"),
    (lambda d: d["bodies"][0].__setitem__("angular_velocity", [0, 0, None]),
     "bodies[0].angular_velocity[2]", "must be a number"),
    (lambda d: d["bodies"][0].__setitem__("shape", 1), "bodies[0].shape", "JSON object"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"radius": 1}), "bodies[0].shape.kind", "is required"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"kind": "cone"}), "bodies[0].shape.kind", "one of"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"kind": "rod", "to": [0, 0, 0]}),
     "bodies[0].shape.from", "is required"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"kind": "box", "size": [1, 0, 1]}),
     "bodies[0].shape.size[1]", "must be > 0"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"kind": "sphere", "radius": -1}),
     "bodies[0].shape.radius", "must be > 0"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"kind": "cylinder", "radius": 1}),
     "bodies[0].shape.length", "is required"),
    (lambda d: d["bodies"][0].__setitem__("shape", {"kind": "mesh"}), "bodies[0].shape.path", "is required"),
    # joints
    (lambda d: d.__setitem__("joints", {}), "joints", "must be a list"),
    (lambda d: d["joints"].__setitem__(1, []), "joints[1]", "JSON object"),
    (lambda d: d["joints"][1].pop("type"), "joints[1].type", "is required"),
    (lambda d: d["joints"][1].__setitem__("type", "hinge"), "joints[1].type", "one of"),
    (lambda d: d["joints"][1].pop("parent"), "joints[1].parent", "is required"),
    (lambda d: d["joints"][1].pop("child"), "joints[1].child", "is required"),
    (lambda d: d["joints"][1].__setitem__("parent", "Z"), "joints[1].parent", "unknown body 'Z'"),
    (lambda d: d["joints"][1].__setitem__("child", "Z"), "joints[1].child", "unknown body 'Z'"),
    (lambda d: d["joints"][1].__setitem__("child", "A"), "joints[1].child", "to itself"),
    (lambda d: d["joints"][1].pop("anchor"), "joints[1].anchor", "is required"),
    (lambda d: d["joints"][1].__setitem__("anchor", [0, 1]), "joints[1].anchor", "list of 3"),
    (lambda d: d["joints"][1].pop("axis"), "joints[1].axis", "is required"),
    (lambda d: d["joints"][1].__setitem__("axis", [0, 0, 0]), "joints[1].axis", "non-zero direction"),
    (lambda d: d["joints"][1].update(type="universal", axes=[[0, 0, 1]]), "joints[1].axes", "two axes"),
    (lambda d: d["joints"][1].update(type="universal", axes=[[0, 0, 1], [0, 1, 1]]), "joints[1].axes",
     "orthogonal"),
    (lambda d: d["joints"][1].update(type="universal"), "joints[1].axes", "is required"),
    (lambda d: d["joints"][1].update(type="universal", axes=[[0, 0, 1], [0, 0, 0]]), "joints[1].axes[1]",
     "non-zero direction"),
    (lambda d: d["joints"][1].__setitem__("rate", [1, 2]), "joints[1].rate", "must have 1 value"),
    (lambda d: d["joints"][1].__setitem__("rate", "x"), "joints[1].rate", "must be a number"),
    (lambda d: d["joints"][1].update(type="spherical", rate=1.0), "joints[1].rate", "list of 3 values"),
    (lambda d: d["joints"][1].update(type="fixed", rate=1.0), "joints[1].rate", "fixed joint"),
    (lambda d: d["joints"][1].__setitem__("cut", "yes"), "joints[1].cut", "true or false"),
    (lambda d: d["joints"][1].__setitem__("name", "J1"), "joints[1].name", "duplicate joint name"),
    # forces
    (lambda d: d.__setitem__("forces", {}), "forces", "must be a list"),
    (lambda d: d["forces"].append({}), "forces[0].type", "is required"),
    (lambda d: d["forces"].append({"type": "gravity"}), "forces[0].type", "one of"),
    (lambda d: d["forces"].append({"type": "spring", "body1": "A", "point1": [0, 0, 0], "body2": "Q",
                                   "point2": [0, 0, 0], "stiffness": 1}), "forces[0].body2", "unknown body"),
    (lambda d: d["forces"].append({"type": "spring", "body1": "A", "point1": [0, 0, 0], "body2": "A",
                                   "point2": [0, 0, 0], "stiffness": 1}), "forces[0].body2", "two different"),
    (lambda d: d["forces"].append({"type": "spring", "body1": "A", "body2": "B", "point2": [0, 0, 0],
                                   "stiffness": 1}), "forces[0].point1", "is required"),
    (lambda d: d["forces"].append({"type": "spring", "body1": "A", "point1": [0, 0, 0], "body2": "B",
                                   "point2": [0, 0, 0], "stiffness": -1}), "forces[0].stiffness", "must be >= 0"),
    (lambda d: d["forces"].append({"type": "spring", "body1": "A", "point1": [0, 0, 0], "body2": "B",
                                   "point2": [0, 0, 0], "stiffness": 1, "damping": -2}),
     "forces[0].damping", "must be >= 0"),
    (lambda d: d["forces"].append({"type": "spring", "body1": "A", "point1": [0, 0, 0], "body2": "B",
                                   "point2": [0, 0, 0], "stiffness": 1, "rest_length": -1}),
     "forces[0].rest_length", "must be >= 0"),
    (lambda d: d["forces"].append({"type": "joint-spring", "joint": "J9", "stiffness": 1}),
     "forces[0].joint", "unknown joint"),
    (lambda d: (d["joints"][1].update(type="spherical"), d["joints"][1].pop("axis"),
                d["forces"].append({"type": "joint-spring", "joint": "J2", "stiffness": 1})),
     "forces[0].joint", "one-freedom joint"),
    (lambda d: d["forces"].append({"type": "joint-spring", "joint": "J2"}), "forces[0].stiffness", "is required"),
    (lambda d: d["forces"].append({"type": "joint-torque", "joint": "J2", "value": [1, 2]}),
     "forces[0].value", "must have 1 value"),
    (lambda d: (d["joints"][1].update(type="fixed"), d["joints"][1].pop("axis"),
                d["forces"].append({"type": "joint-torque", "joint": "J2", "value": 1})),
     "forces[0].joint", "fixed joint"),
    # run settings the file recommends (docs/file-format.md, "Additions")
    (lambda d: d.__setitem__("settings", []), "settings", "JSON object"),
    (lambda d: d.__setitem__("settings", {"dt": 0}), "settings.dt", "must be > 0"),
    (lambda d: d.__setitem__("settings", {"t_end": "long"}), "settings.t_end", "must be a number"),
    (lambda d: d.__setitem__("settings", {"integrator": "euler"}), "settings.integrator", "unknown integrator"),
    (lambda d: d.__setitem__("settings", {"dt": 2, "t_end": 1}), "settings.dt", "must not exceed"),
    (lambda d: d.__setitem__("settings", {"rtol": -1e-8}), "settings.rtol", "must be > 0"),
    # couplings (docs/file-format.md, "Couplings")
    (lambda d: d.__setitem__("couplings", {}), "couplings", "must be a list"),
    (lambda d: d.__setitem__("couplings", [3]), "couplings[0]", "JSON object"),
    (lambda d: _gear(d).pop("type"), "couplings[0].type", "is required"),
    (lambda d: _gear(d, type="belt"), "couplings[0].type", "must be one of gear"),
    (lambda d: _gear(d).pop("driver"), "couplings[0].driver", "is required"),
    (lambda d: _gear(d).pop("driven"), "couplings[0].driven", "is required"),
    (lambda d: _gear(d).pop("ratio"), "couplings[0].ratio", "is required"),
    (lambda d: _gear(d, driver="J9"), "couplings[0].driver", "unknown joint 'J9'"),
    (lambda d: _gear(d, driven=2), "couplings[0].driven", "must be a string"),
    (lambda d: (d["joints"][1].update(type="spherical"), d["joints"][1].pop("axis"), _gear(d, driven="J2")),
     "couplings[0].driven", "one-freedom joint"),
    (lambda d: (d["joints"][1].update(type="cylindrical"), _gear(d, driver="J2")),
     "couplings[0].driver", "one-freedom joint"),
    (lambda d: (d["joints"][1].update(type="fixed"), d["joints"][1].pop("axis"), _gear(d, driven="J2")),
     "couplings[0].driven", "one-freedom joint"),
    (lambda d: _gear(d, driven="J1"), "couplings[0].driven", "to itself"),
    (lambda d: _gear(d, ratio=0), "couplings[0].ratio", "must be non-zero"),
    (lambda d: _gear(d, ratio=-0.0), "couplings[0].ratio", "must be non-zero"),
    (lambda d: _gear(d, ratio=float("inf")), "couplings[0].ratio", "finite"),
    (lambda d: _gear(d, ratio=float("nan")), "couplings[0].ratio", "finite"),
    (lambda d: _gear(d, ratio="10"), "couplings[0].ratio", "must be a number"),
    (lambda d: _gear(d, ratio=1e13), "couplings[0].ratio", "must not exceed 1e12"),
    (lambda d: (_gear(d), _gear(d, name="G2", driver="J2", driven="J1")),
     "couplings[1].driven", "already geared by couplings[0]"),
    (lambda d: (_gear(d), _gear(d, name="G2", driver="J4", driven="J3")),
     "couplings[1].driver", "already geared by couplings[0]"),
    (lambda d: (_gear(d), _gear(d, driver="J2", driven="J3")), "couplings[1].name", "duplicate coupling name"),
    (lambda d: (d["joints"][3].__setitem__("cut", True), _gear(d)), "couplings[0].driven", 'marked "cut"'),
    (lambda d: (_gear(d, driver="J1", driven="J2"), _gear(d, name="G2", driver="J3", driven="J4")),
     "couplings[1].driven", "closes a loop of geared joints"),
    # topology
    (lambda d: d["bodies"].append({"name": "D", "mass": 1, "inertia": [1, 1, 1], "position": [5, 5, 0]}),
     "bodies[3]", "not connected to ground"),
    (lambda d: d["joints"][0].__setitem__("cut", True) or d["joints"][1].__setitem__("cut", True),
     "joints[0].cut", "cannot be cut"),
]


@pytest.mark.parametrize("mutation,path,rule", RULES, ids=[f"{r[1]}:{r[2]}" for r in RULES])
def test_refusal_rules(fourbar_dict, mutation, path, rule):
    fourbar_dict.setdefault("forces", [])
    _refused(_mut(fourbar_dict, mutation), path, rule)


def test_invalid_json_is_refused():
    with pytest.raises(MechanismError) as ei:
        loads('{"format": "linkwork-mechanism", ')
    assert ei.value.path == "(file)" and "not valid JSON" in ei.value.rule


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(MechanismError) as ei:
        load(tmp_path / "nope.mech.json")
    assert "no such file" in str(ei.value)


def test_unknown_keys_are_warnings_not_refusals(fourbar_dict):
    fourbar_dict["bodies"][0]["colour"] = "red"
    spec = spec_from_dict(fourbar_dict)
    assert any("bodies[0].colour: unknown key" in w for w in spec.warnings)


def test_universal_axes_orthogonality_tolerance(fourbar_dict):
    j = fourbar_dict["joints"][1]
    j.pop("axis")
    j.update(type="universal", axes=[[0, 0, 1], [1, 0, 1e-9]])
    spec_from_dict(fourbar_dict)  # within 1e-6: accepted


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip(path, tmp_path):
    spec = load(path)
    assert spec.name and spec.description
    out = tmp_path / "x.mech.json"
    save(spec, out)
    again = load(out)
    assert again == spec
    assert json.loads(dumps(again)) == spec_to_dict(spec)


def test_generators_round_trip_random():
    for seed in range(20):
        spec = gen.random_mechanism(seed, 5, loops=2)
        assert spec_from_dict(spec_to_dict(spec)) == spec


def test_committed_examples_equal_the_generators(tmp_path):
    from linkwork.engine.generators import write_examples

    fresh = {p.name: p.read_text() for p in write_examples(tmp_path)}
    committed = {p.name: p.read_text() for p in EXAMPLES}
    assert fresh == committed


def test_gear_is_read_into_the_model(fourbar_dict):
    """A gear's joints are kept in the spanning tree even where BFS would cut one, and the
    model holds its flat arrays: driver, driven, ratio, reference coordinates."""
    plain = build_model(spec_from_dict(fourbar_dict))
    cut = plain.joint_names[plain.nb]  # the joint BFS cuts without a gear
    other = "J1" if cut != "J1" else "J2"
    _gear(fourbar_dict, driver=cut, driven=other, ratio=-3.0)
    spec = spec_from_dict(fourbar_dict)
    assert spec.couplings[0].driver == cut and spec.couplings[0].ratio == -3.0
    m = build_model(spec)
    assert m.ng == 1 and m.g_names == ("G",)
    assert m.joint_names[m.g_driver[0]] == cut and m.joint_names[m.g_driven[0]] == other
    assert not m.is_cut[m.g_driver[0]] and not m.is_cut[m.g_driven[0]]
    assert m.ncut == 1 and m.joint_names[m.nb] != cut
    assert m.g_ratio[0] == -3.0 and m.g_q0.tolist() == [[0.0, 0.0]]
    assert spec_from_dict(spec_to_dict(spec)) == spec
    # without couplings the spanning tree is the one it always was
    assert build_model(spec.with_(couplings=())).joint_names == plain.joint_names
