"""Editor: tree, property panel, undo/redo, inline refusals, topology summary."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout

from linkwork.engine import generators as g

from linkwork.app.session.document import Selection
from linkwork.app.session.solver import parameter_info


def _edit(widget, text):
    widget.setText(text)
    widget.editingFinished.emit()


def test_property_edit_undo_redo_round_trip(make_window, qtbot):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    original = doc.spec
    doc.select(Selection("body", "B"))
    page = win.editor.properties.current_page()
    assert page.kind == "body" and page.mass.text() == "1"
    _edit(page.mass, "2.5")
    assert doc.spec.body("B").mass == 2.5 and doc.dirty
    assert win.windowTitle().startswith("parallelogram four-bar[*]") or win.isWindowModified()
    assert win.actions["undo"].isEnabled()
    win.actions["undo"].trigger()
    assert doc.spec is original and not doc.dirty
    assert page.mass.text() == "1"
    win.actions["redo"].trigger()
    assert doc.spec.body("B").mass == 2.5
    assert "Set mass of B" in win.undo_stack.undoText()


def test_refusal_is_shown_inline_at_the_body(make_window):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    doc.select(Selection("joint", "J1"))
    doc.select(Selection("body", "C"))
    page = win.editor.properties.current_page()
    _edit(page.mass, "-1")
    msg = win.editor.properties.message
    assert msg.isVisible() and msg.text() == "bodies[2].mass: must be > 0 (got -1)"
    assert "border" in page.mass.styleSheet()  # the field is outlined
    assert not win.actions["run"].isEnabled()
    assert "refused" in win.editor.summary.text()
    # elsewhere, the message says where and offers to go there
    doc.select(Selection("joint", "J2"))
    assert "Show body 'C'" in msg.text()
    win.editor.properties._show_target("show")
    assert doc.selection == Selection("body", "C")
    # the tree marks the culprit
    item = win.editor.tree._items[("body", "C")]
    assert item.foreground(0).color().name() == "#c62828"
    win.actions["undo"].trigger()
    assert not msg.isVisible() and win.actions["run"].isEnabled()


def test_rename_length_and_joint_type(make_window):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.chain(3))
    doc.select(Selection("body", "L1"))
    page = win.editor.properties.current_page()
    _edit(page.name_edit, "base")
    assert doc.spec.bodies[0].name == "base" and doc.spec.joint("J2").parent == "base"
    assert doc.selection == Selection("body", "base")
    page = win.editor.properties.current_page()
    _edit(page.length, "1.5")
    assert doc.spec.body("L3").position[0] == pytest.approx(3.0)  # carried along
    doc.select(Selection("joint", "J2"))
    jpage = win.editor.properties.current_page()
    jpage.type.setCurrentIndex(jpage.type.findData("spherical"))
    jpage.type.activated.emit(jpage.type.currentIndex())
    assert doc.spec.joint("J2").type == "spherical" and doc.validation.ok
    assert doc.validation.summary.dof == 5
    # three undos restore the chain exactly
    for _ in range(3):
        win.actions["undo"].trigger()
    assert doc.spec == g.chain(3)


def test_joint_anchor_and_rate_and_forces(make_window):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    doc.select(Selection("joint", "J1"))
    page = win.editor.properties.current_page()
    page.rate_edit.edits[0].setText("2")
    page.rate_edit.edits[0].editingFinished.emit()
    assert doc.spec.joint("J1").rate == (2.0,)
    page.spring_btn.click()
    assert doc.spec.forces[-1].type == "joint-spring" and doc.selection == Selection("force", "0")
    fpage = win.editor.properties.current_page()
    _edit(fpage.stiffness, "25")
    assert doc.spec.forces[0].stiffness == 25.0
    assert doc.validation.ok


def test_tree_lists_items_and_deletes(make_window, qtbot):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.slider_crank())
    tree = win.editor.tree
    assert ("body", "slider") in tree._items and ("force", "0") in tree._items
    tree.setCurrentItem(tree._items[("body", "slider")])
    assert doc.selection == Selection("body", "slider")
    qtbot.keyClick(tree, Qt.Key_Delete)
    assert "slider" not in [b.name for b in doc.spec.bodies]
    assert doc.spec.forces == ()
    win.actions["undo"].trigger()
    assert doc.spec == g.slider_crank()


def test_mechanism_page_gravity(make_window):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    win.actions["mech_props"].trigger()
    page = win.editor.properties.current_page()
    assert page.kind == "mechanism"
    page.gravity.edits[1].setText("-1.62")
    page.gravity.edits[1].editingFinished.emit()
    assert doc.spec.gravity == (0.0, -1.62, 0.0)


def test_solver_panel_shows_each_formulations_own_settings(make_window):
    from linkwork.engine.formulations import REGISTRY

    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    panel = win.solver_panel
    names = [panel.formulation.itemData(i) for i in range(panel.formulation.count())]
    assert names == list(REGISTRY)
    for name, cls in REGISTRY.items():
        win.session.solver.update(formulation=name)
        own = [p for p in cls.parameters if p not in ("threads", "dt", "t_end", "rtol", "atol")]
        assert list(panel._param_widgets) == own
        # the formulation's own rows follow the common ones in the panel's form
        form = panel.form
        rows = [form.itemAt(r, QFormLayout.LabelRole).widget().text() for r in range(form.rowCount())]
        assert rows[panel._common_rows:] == [parameter_info(p).label for p in own]
        ints = [panel.integrator.itemData(i) for i in range(panel.integrator.count())]
        assert ints == list(cls.integrators)
        assert panel.summary.text() == cls.summary


def test_the_penalty_editor_shows_the_automatic_value_until_set(make_window):
    """index3's penalty: "automatic" shows, greyed, the value the step calls for (and
    follows the step); unticked, the value is the user's; ticked again, automatic."""
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    solver = win.session.solver
    solver.update(formulation="index3", dt=1e-3)
    auto, edit = win.solver_panel._param_widgets["penalty"]._parts
    assert auto.isChecked() and not edit.isEnabled() and edit.value() == pytest.approx(1e11)
    solver.update(dt=0.01)
    assert edit.value() == pytest.approx(1e9)
    auto.setChecked(False)
    assert edit.isEnabled() and solver.settings.penalty == pytest.approx(1e9)
    edit.setValue(3e10)
    edit.valueEdited.emit(3e10)
    assert solver.settings.penalty == 3e10
    solver.update(dt=1e-3)
    assert edit.value() == 3e10
    auto.setChecked(True)
    assert solver.settings.penalty is None and edit.value() == pytest.approx(1e11)


def test_add_a_gear_from_a_joint_and_edit_it(make_window):
    """Joint page -> "Add gear": the gear is listed and selected; its page edits driver,
    driven and ratio; the loader's refusal (ratio 0) is shown inline; undo removes it."""
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    doc.select(Selection("joint", "J1"))
    page = win.editor.properties.current_page()
    assert page.kind == "joint" and page.gear_btn.isEnabled()
    page.gear_btn.click()
    assert [(c.name, c.driver, c.driven, c.ratio) for c in doc.spec.couplings] == [("G1", "J1", "J2", 1.0)]
    assert doc.selection == Selection("gear", "G1")
    gp = win.editor.properties.current_page()
    assert gp.kind == "gear" and win.editor.properties.title.text() == "Gear G1"
    assert ("gear", "G1") in win.editor.tree._items
    gp.driven.activated.emit(gp.driven.findData("J4"))
    _edit(gp.ratio, "-1")
    assert doc.spec.couplings[0].driven == "J4" and doc.spec.couplings[0].ratio == -1.0
    assert doc.validation.ok and "DOF 1" in win.editor.summary.text()
    _edit(gp.ratio, "2")  # crank and rocker of the parallelogram turn alike: 2:1 locks it
    assert doc.validation.ok and "DOF 0" in win.editor.summary.text()
    _edit(gp.ratio, "0")
    msg = win.editor.properties.message
    assert msg.isVisible() and msg.text() == "couplings[0].ratio: must be non-zero (got 0)"
    assert "border" in gp.ratio.styleSheet()
    # a geared joint offers no second gear
    doc.select(Selection("joint", "J1"))
    assert not win.editor.properties.current_page().gear_btn.isEnabled()
    for _ in range(5):  # ratio 0, ratio 2, ratio -1, driven J4, the gear itself
        win.actions["undo"].trigger()
    assert doc.spec.couplings == ()


def test_add_a_driver_from_a_joint_and_edit_it(make_window, qtbot):
    """Joint page -> "Add driver": the driver is listed and selected; its page switches the
    motion law and shows only that law's fields; the loader's refusal (table times not
    increasing) is shown inline at the field; a driven joint offers no gear and no second
    driver; Delete and undo."""
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    doc.select(Selection("joint", "J1"))
    page = win.editor.properties.current_page()
    assert page.kind == "joint" and page.driver_btn.isEnabled()
    page.driver_btn.click()
    assert [(d.name, d.joint, d.motion.kind) for d in doc.spec.drivers] == [("M1", "J1", "constant-rate")]
    assert doc.selection == Selection("driver", "M1")
    dp = win.editor.properties.current_page()
    assert dp.kind == "driver" and win.editor.properties.title.text() == "Driver M1"
    assert ("driver", "M1") in win.editor.tree._items
    assert doc.validation.ok and "DOF 0" in win.editor.summary.text()  # the motor takes the one freedom
    visible = {k for k, w in dp.fields.items() if dp.form.isRowVisible(w)}
    assert visible == {"name", "joint", "kind", "rate"}
    _edit(dp.rate, "3")
    assert doc.spec.drivers[0].motion.rate == 3.0
    dp.kind_combo.activated.emit(dp.kind_combo.findData("harmonic"))
    assert doc.spec.drivers[0].motion.kind == "harmonic"
    visible = {k for k, w in dp.fields.items() if dp.form.isRowVisible(w)}
    assert visible == {"name", "joint", "kind", "amplitude", "frequency", "phase", "offset"}
    _edit(dp.amplitude, "0.4")
    _edit(dp.frequency, "1.5")
    assert (doc.spec.drivers[0].motion.amplitude, doc.spec.drivers[0].motion.frequency) == (0.4, 1.5)
    dp.kind_combo.activated.emit(dp.kind_combo.findData("table"))
    _edit(dp.t_edit, "0, 2, 1")
    msg = win.editor.properties.message
    assert msg.isVisible() and msg.text().startswith("drivers[0].motion.t") and "border" in dp.t_edit.styleSheet()
    _edit(dp.t_edit, "0, 1, nan")  # not numbers: flagged red, reverted, the document untouched
    assert doc.spec.drivers[0].motion.t == (0.0, 2.0, 1.0) and dp.t_edit.property("invalid")
    _edit(dp.t_edit, "0, 1, 2")
    assert doc.validation.ok
    doc.select(Selection("joint", "J1"))
    jp = win.editor.properties.current_page()
    assert not jp.driver_btn.isEnabled() and not jp.gear_btn.isEnabled()
    tree = win.editor.tree
    tree.setCurrentItem(tree._items[("driver", "M1")])
    qtbot.keyClick(tree, Qt.Key_Delete)
    assert doc.spec.drivers == ()
    win.actions["undo"].trigger()
    assert doc.spec.drivers[0].motion.t == (0.0, 1.0, 2.0)
