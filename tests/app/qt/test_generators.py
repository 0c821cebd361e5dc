"""Generator dialogs: every generator builds, previews live, refuses impossible parameters."""

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from linkwork.app.qt.generators import GeneratorDialog, preview_plane
from linkwork.app.session.generators import GENERATORS


@pytest.mark.parametrize("key", list(GENERATORS))
def test_every_generator_previews_its_defaults(qtbot, key):
    dlg = GeneratorDialog(initial=key)
    qtbot.addWidget(dlg)
    assert dlg.key == key
    assert dlg.spec is not None and dlg.spec.bodies
    assert dlg.buttons.button(QDialogButtonBox.Ok).isEnabled()
    assert "bodies" in dlg.info.text()
    assert dlg.preview.spec is dlg.spec


def test_live_preview_follows_the_form_and_refuses_impossible_lengths(qtbot):
    dlg = GeneratorDialog(initial="fourbar")
    qtbot.addWidget(dlg)
    form = dlg.form()
    crank = form.widgets["crank"]
    crank.setText("5")
    crank.textEdited.emit("5")  # typing
    qtbot.waitUntil(lambda: dlg.spec is None, timeout=2000)
    assert "cannot be assembled" in dlg.info.text()
    assert not dlg.buttons.button(QDialogButtonBox.Ok).isEnabled()
    crank.setText("0.4")
    crank.textEdited.emit("0.4")
    qtbot.waitUntil(lambda: dlg.spec is not None, timeout=2000)
    assert dlg.spec.body("A").shape.p_to[0] == pytest.approx(0.4 * 0.7071067811865476)
    assert dlg.buttons.button(QDialogButtonBox.Ok).isEnabled()


def test_ranges_are_checked(qtbot):
    dlg = GeneratorDialog(initial="chain")
    qtbot.addWidget(dlg)
    n = dlg.form().widgets["n"]
    n.setText("0")
    n.textEdited.emit("0")
    dlg.update_preview()
    assert dlg.spec is None and "Links must be at least 1" in dlg.info.text()


def test_papers_test_cases_and_preview_planes(qtbot):
    dlg = GeneratorDialog(initial="case")
    qtbot.addWidget(dlg)
    combo = dlg.form().widgets["case"]
    combo.setCurrentIndex(combo.findData("ladder-2"))
    dlg.update_preview()
    assert dlg.spec.name.startswith("spatial ladder, 2 cells")
    assert preview_plane(dlg.spec).key == "oblique"
    combo.setCurrentIndex(combo.findData("loop-4"))
    dlg.update_preview()
    assert preview_plane(dlg.spec).key == "xy"
    assert dlg.spec.name == "single loop of 4 bodies (paper 001 case 1)"


def test_window_menu_has_one_entry_per_generator(make_window):
    win = make_window(gl=False)
    names = [a.objectName() for a in win.gen_menu.actions()]
    assert names == [f"action_gen_{k}" for k in GENERATORS]
