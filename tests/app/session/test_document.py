"""The Qt-free document: edits, undo/redo, selection, files, validation."""

import json

import pytest

from linkwork.engine import generators as g
from linkwork.engine.errors import MechanismError
from linkwork.engine.mechfile import dumps, load, spec_to_dict

from linkwork.app.session import edits
from linkwork.app.session.document import MechanismDocument, Selection


def test_events_fire_only_on_real_changes():
    doc = MechanismDocument()
    seen = []
    doc.state_changed.connect(lambda st: seen.append("state"))
    doc.selection_changed.connect(lambda s: seen.append("sel"))
    doc.replace(g.fourbar())
    seen.clear()
    assert doc.edit("nothing", doc.spec) is False
    doc.select(Selection("body", "A"))
    doc.select(Selection("body", "A"))
    assert seen == ["sel"]


def test_undo_redo_round_trips_an_edit():
    doc = MechanismDocument()
    doc.replace(g.fourbar())
    original = doc.spec
    assert not doc.dirty
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=2.5))
    edited = doc.spec
    assert doc.spec.body("A").mass == 2.5 and doc.dirty
    doc.undo_stack.undo()
    assert doc.spec == original and doc.spec is original
    assert not doc.dirty  # back at the saved state
    doc.undo_stack.redo()
    assert doc.spec is edited and doc.dirty


def test_selection_dropped_when_its_item_disappears():
    doc = MechanismDocument()
    doc.replace(g.fourbar())
    doc.select(Selection("joint", "J3"))
    doc.edit("delete", edits.delete_joint(doc.spec, "J3"))
    assert doc.selection is None


def test_validation_points_at_the_culprit():
    doc = MechanismDocument()
    doc.replace(g.fourbar())
    doc.edit("bad mass", edits.set_body(doc.spec, "B", mass=-1.0))
    v = doc.validation
    assert not v.ok
    assert v.message == "bodies[1].mass: must be > 0 (got -1)"
    assert v.target.kind == "body" and v.target.name == "B"
    doc.undo_stack.undo()
    assert doc.validation.ok and doc.validation.summary.dof == 1 and doc.validation.summary.redundant == 3


def test_disconnected_body_is_refused_with_its_path():
    doc = MechanismDocument()
    doc.replace(g.chain(3))
    doc.edit("cut", edits.delete_joint(doc.spec, "J2"))
    v = doc.validation
    assert not v.ok and v.target.kind == "body" and v.target.name in ("L2", "L3")
    assert "not connected to ground" in v.message


def test_open_save_round_trip(tmp_path):
    doc = MechanismDocument()
    p = tmp_path / "fb.mech.json"
    p.write_text(dumps(g.fourbar()))
    doc.open(p)
    assert doc.path == p.resolve() and not doc.dirty
    doc.edit("rename", edits.set_mechanism(doc.spec, name="my four-bar"))
    out = tmp_path / "out.mech.json"
    doc.save(out)
    assert not doc.dirty and doc.path == out.resolve()
    assert load(out).name == "my four-bar"
    # the document now holds what the file says
    assert doc.spec == load(out)


def test_refused_file_changes_nothing(tmp_path):
    doc = MechanismDocument()
    doc.replace(g.fourbar())
    before = doc.spec
    d = spec_to_dict(g.fourbar())
    d["bodies"][2]["mass"] = -1
    bad = tmp_path / "bad.mech.json"
    bad.write_text(json.dumps(d))
    with pytest.raises(MechanismError) as exc:
        doc.open(bad)
    assert str(exc.value) == "bodies[2].mass: must be > 0 (got -1)"
    assert doc.spec is before and doc.path is None


def test_saving_a_refused_mechanism_is_refused(tmp_path):
    doc = MechanismDocument()
    doc.replace(g.fourbar())
    doc.edit("bad", edits.set_body(doc.spec, "A", mass=0.0))
    with pytest.raises(MechanismError):
        doc.save(tmp_path / "x.mech.json")
    assert not (tmp_path / "x.mech.json").exists()


def test_topology_summary_counts_in_words():
    from linkwork.app.session.validation import TopologySummary

    assert TopologySummary(1, 1, 1, 1, 0).text() == "1 body · 1 joint · 1 loop · DOF 1 · 0 redundant"
    assert TopologySummary(3, 4, 2, 1, 3).text() == "3 bodies · 4 joints · 2 loops · DOF 1 · 3 redundant"
    assert TopologySummary(3, 4).text() == "3 bodies · 4 joints · – loops · DOF – · – redundant"
