"""Main window: menus, files, refusals, persisted layout, help."""

import json

from PySide6.QtCore import QSettings, Qt

from linkwork.engine import generators as g
from linkwork.engine.mechfile import dumps, spec_to_dict
from linkwork.engine.paths import examples_dir

from linkwork.app.qt import help as help_mod


def _menu_texts(win):
    return {a.text().replace("&", ""): a for a in win.menuBar().actions()}


def test_menus_and_shortcuts(make_window):
    win = make_window(gl=False)
    menus = _menu_texts(win)
    assert {"File", "Edit", "View", "Run", "Export", "Help"} <= set(menus)
    file_items = [a.text().replace("&", "") for a in menus["File"].menu().actions()]
    for item in ("New", "New from generator", "Open…", "Open recent", "Examples", "Save", "Save as…"):
        assert item in file_items
    assert win.actions["run"].shortcut().toString() == "F5"
    assert win.actions["undo"].shortcut().matches(Qt.CTRL | Qt.Key_Z)
    assert win.actions["open"].shortcut().matches(Qt.CTRL | Qt.Key_O)
    assert set(win.docks) == {"mechanism", "solver", "runs", "plots", "messages", "modes"}
    # nothing to run yet
    assert not win.actions["run"].isEnabled()
    assert "empty" in win.actions["run"].toolTip()


def test_examples_menu_opens_the_fourbar(make_window):
    win = make_window(gl=False)
    acts = {a.objectName(): a for a in win.examples_menu.actions()}
    assert len(acts) == len(list(examples_dir().glob("*.mech.json")))
    acts["action_example_parallelogram-fourbar"].trigger()
    doc = win.session.document
    assert doc.spec.name == "parallelogram four-bar" and doc.validation.ok
    assert "parallelogram four-bar" in win.windowTitle()
    assert win.actions["run"].isEnabled()
    assert win.status_summary.text().startswith("3 bodies · 4 joints · 1 loop · DOF 1 · 3 redundant")
    assert str(examples_dir() / "parallelogram-fourbar.mech.json") in win.recent_files()[0]


def test_broken_file_shows_the_refusal_and_changes_nothing(make_window, tmp_path):
    win = make_window(gl=False)
    win.open_file(examples_dir() / "fivebar.mech.json")
    before = win.session.document.spec
    d = spec_to_dict(g.fourbar())
    d["joints"][1]["axis"] = [0, 0, 0]
    bad = tmp_path / "broken.mech.json"
    bad.write_text(json.dumps(d))
    assert win.open_file(bad) is False
    assert win.session.document.spec is before
    assert win.session.document.path.name == "fivebar.mech.json"
    assert win.message_bar.isVisible()
    assert "joints[1].axis: must be a non-zero direction" in win.message_bar.text()
    assert any("broken.mech.json" in m for m in win.messages.messages())
    not_json = tmp_path / "nope.mech.json"
    not_json.write_text("{")
    assert win.open_file(not_json) is False
    assert "not valid JSON" in win.message_bar.text()


def test_save_as_and_recent(make_window, tmp_path, monkeypatch):
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    target = tmp_path / "saved.mech.json"
    monkeypatch.setattr("linkwork.app.qt.mainwindow.QFileDialog.getSaveFileName", lambda *a, **k: (str(target), ""))
    assert win.save()
    assert target.exists() and not win.session.document.dirty
    assert win.recent_files()[0] == str(target.resolve())
    names = [a.text() for a in win.recent_menu.actions()]
    assert "saved.mech.json" in names


def test_layout_is_restored_on_next_start(make_window, settings):
    win = make_window(gl=False)
    win.docks["messages"].hide()
    win.removeDockWidget(win.docks["runs"])
    win.addDockWidget(Qt.LeftDockWidgetArea, win.docks["runs"])
    win.docks["runs"].show()
    win.tabs.setCurrentIndex(1)
    win.save_window_state()
    win2 = make_window(gl=False)
    assert win2.dockWidgetArea(win2.docks["runs"]) == Qt.LeftDockWidgetArea
    assert win2.docks["messages"].isHidden()
    assert win2.tabs.currentIndex() == 1
    win2.reset_layout()
    assert win2.dockWidgetArea(win2.docks["runs"]) == Qt.RightDockWidgetArea


def test_settings_are_isolated_from_the_user(qapp, settings):
    assert QSettings().organizationName() == "LinkworkTests"
    assert "LinkworkTests" in QSettings().fileName() or "settings" in QSettings().fileName()


def test_formulation_guide_renders_markdown_or_says_it_is_missing(make_window, tmp_path, monkeypatch):
    win = make_window(gl=False)
    guide = tmp_path / "formulations.md"
    guide.write_text("# Formulations\n\n**dense**: the reference.\n")
    monkeypatch.setattr(help_mod, "docs_dir", lambda: tmp_path)
    dlg = win.show_guide()
    assert "Formulations" in dlg.browser.toPlainText() and "the reference" in dlg.browser.toPlainText()
    dlg.close()
    guide.unlink()
    dlg = win.show_guide()
    text = dlg.browser.toPlainText()
    assert "formulation guide was not found" in text and "dense" in text
    dlg.close()
    about = win.show_about()
    assert "Linkwork" in about.browser.toPlainText()
    about.close()


def test_about_names_the_engines_compiler_and_its_version(make_window):
    """About lists numba (and llvmlite, its code generator) beside the other libraries:
    the compiler is what a slow first run or a crash in a kernel depends on."""
    import llvmlite
    import numba
    import numpy

    win = make_window(gl=False)
    about = win.show_about()
    text = about.browser.toPlainText()
    assert f"numba {numba.__version__}" in text
    assert f"llvmlite {llvmlite.__version__}" in text
    assert f"numpy {numpy.__version__}" in text
    about.close()


def test_main_opens_a_refused_file_and_shows_the_refusal(qapp, monkeypatch, tmp_path, settings):
    import linkwork.app.main as main_mod
    from linkwork.app.qt.mainwindow import MainWindow

    d = spec_to_dict(g.fourbar())
    d["bodies"][0]["mass"] = -3
    bad = tmp_path / "bad.mech.json"
    bad.write_text(json.dumps(d))
    made = []

    def create(path=None, enable_gl=None):
        win = MainWindow(settings=settings, enable_gl=False)
        made.append(win)
        if path:
            win.open_file(path)
        return win

    monkeypatch.setattr(main_mod, "create_window", create)
    monkeypatch.setattr(type(qapp), "exec", lambda self: 0)
    assert main_mod.main([str(bad)]) == 0
    win = made[0]
    try:
        assert "bodies[0].mass: must be > 0 (got -3)" in win.message_bar.text()
        assert win.session.document.is_empty
    finally:
        win.close()
        win.deleteLater()
    assert main_mod.main(["a", "b"]) == 2


def test_main_opens_a_good_file(qapp, monkeypatch, tmp_path, settings):
    import linkwork.app.main as main_mod
    from linkwork.app.qt.mainwindow import MainWindow

    p = tmp_path / "ok.mech.json"
    p.write_text(dumps(g.fivebar(2)))
    made = []

    def create(path=None, enable_gl=None):
        win = MainWindow(settings=settings, enable_gl=False)
        made.append(win)
        win.open_file(path)
        return win

    monkeypatch.setattr(main_mod, "create_window", create)
    monkeypatch.setattr(type(qapp), "exec", lambda self: 0)
    assert main_mod.main([str(p)]) == 0
    try:
        assert made[0].session.document.path == p.resolve()
    finally:
        made[0].close()
        made[0].deleteLater()


def test_user_guide_opens_with_its_pictures(make_window):
    from linkwork.app.qt.help import docs_dir

    win = make_window(gl=False)
    dlg = win.show_user_guide()
    text = dlg.browser.toPlainText()
    if (docs_dir() / "user-guide.md").exists():
        assert "Keyboard shortcuts" in text
        doc = dlg.browser.document()
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QTextDocument

        img = doc.resource(QTextDocument.ImageResource, QUrl("images/fourbar-run.png"))
        assert img is not None and not img.isNull()
    else:
        assert "not found" in text
    dlg.close()
