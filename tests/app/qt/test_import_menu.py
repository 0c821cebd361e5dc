"""File › Import… (MJCF, URDF) and Export › Mechanism as MJCF… (app/session/interop.py,
app/qt/interop_dialogs.py): the import replaces the document with an unsaved mechanism
and posts the importer's warnings; the export writes MJCF that MuJoCo compiles."""

from pathlib import Path

import pytest

mujoco = pytest.importorskip("mujoco")

from linkwork.app.qt import interop_dialogs  # noqa: E402
from linkwork.app.session.interop import ImportRefused, export_mjcf, import_into  # noqa: E402
from linkwork.engine.paths import examples_dir  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "engine" / "interop" / "models"


def test_import_through_the_session_replaces_the_document(make_window):
    win = make_window(gl=False, show=False)
    session = win.session
    spec = import_into(session, MODELS / "fourbar.xml")
    doc = session.document
    assert doc.spec is spec and doc.validation.ok
    assert {b.name for b in doc.spec.bodies} == {"crank", "coupler", "rocker"}
    assert doc.path is None and doc.dirty  # in no file yet: Save asks where
    texts = [n.text for n in session.notifications.log if n.source == "import"]
    assert any("contacts" in t and n.level == "warning" for t, n in
               zip(texts, [n for n in session.notifications.log if n.source == "import"]))
    assert texts[-1].startswith("Imported fourbar.xml")
    with pytest.raises(ImportRefused, match="nothing left to simulate"):
        import_into(session, MODELS / "only_free.xml")
    assert session.document.spec is spec  # a refused import changes nothing


def test_file_import_menu_asks_for_the_file_and_the_keyframe(make_window, monkeypatch):
    win = make_window(gl=False, show=False)
    file_menu = win.menuBar().actions()[0].menu()
    assert win.actions["import_model"] in file_menu.actions()
    asked = {}
    monkeypatch.setattr(interop_dialogs.QFileDialog, "getOpenFileName",
                        lambda *a, **k: (str(MODELS / "defaults_include.xml"), ""))

    def get_item(parent, title, label, items, *rest):
        asked["items"] = list(items)
        return "bent", True

    monkeypatch.setattr(interop_dialogs.QInputDialog, "getItem", get_item)
    win.actions["import_model"].trigger()
    assert asked["items"] == [interop_dialogs.REFERENCE_POSE, "bent"]
    spec = win.session.document.spec
    assert {j.type for j in spec.joints} == {"revolute", "spherical", "universal"}
    assert "keyframe 'bent'" in win.session.notifications.log[-1].text


def test_export_mjcf_from_the_menu(make_window, monkeypatch, tmp_path):
    win = make_window(gl=False, show=False)
    assert win.open_file(examples_dir() / "fourbar-geared.mech.json")
    out = tmp_path / "geared.xml"
    monkeypatch.setattr(interop_dialogs.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    win.actions["mjcf_export"].trigger()
    m = mujoco.MjModel.from_xml_path(str(out))
    assert m.nbody == 5 and m.neq >= 1  # world + four bodies; the gear (and the loop) as equalities
    assert m.nu == 1  # the motor's constant torque, as an actuator of zero gain and constant bias
    assert export_mjcf(win.session, tmp_path / "again.xml").read_text() == out.read_text()
