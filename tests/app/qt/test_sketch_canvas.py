"""The sketch canvas with the mouse: a drawn four-bar equals the generator's four-bar."""

import math

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from linkwork.engine import generators as g

from linkwork.app.session.document import Selection

from ..session.test_sketch import canonical


def _px(canvas, a, b) -> QPoint:
    p = canvas.plane_to_widget(a, b)
    return QPoint(round(p.x()), round(p.y()))


def _click(canvas, a, b, button=Qt.LeftButton):
    QTest.mouseClick(canvas, button, Qt.NoModifier, _px(canvas, a, b))


def _type_vector(vec_edit, values):
    for e, v in zip(vec_edit.edits, values):
        e.setText(repr(v))
        e.editingFinished.emit()


def test_drawn_fourbar_equals_generated(make_window, qtbot):
    win = make_window(gl=False)
    win.actions["new"].trigger()
    assert win.tabs.currentWidget() is win.sketch_panel and win.session.sketch.tool == "link"
    panel = win.sketch_panel
    canvas = panel.canvas
    qtbot.waitExposed(canvas)
    canvas.scale = 150.0
    centre = canvas.rect().center()
    canvas.origin = canvas.origin + (centre - _px(canvas, 0.85, 0.35))  # frame the drawing area
    # new links get the papers' unit inertia
    panel.inertia.setCurrentIndex(panel.inertia.findData("unit"))
    panel.inertia.activated.emit(panel.inertia.currentIndex())
    panel.tool_actions["pivot"].trigger()
    _click(canvas, 0.0, 0.0)
    _click(canvas, 1.0, 0.0)
    assert len(win.session.document.pivots) == 2
    panel.tool_actions["link"].trigger()
    _click(canvas, 0.0, 0.0)     # start on the first pivot
    _click(canvas, 0.7, 0.7)     # crank tip (snapped to the grid)
    _click(canvas, 1.7, 0.7)     # coupler tip
    _click(canvas, 1.0, 0.0)     # the second pivot closes the loop
    doc = win.session.document
    assert [b.name for b in doc.spec.bodies] == ["A", "B", "C"]
    assert [(j.name, j.parent, j.child) for j in doc.spec.joints] == [
        ("J1", "ground", "A"), ("J2", "A", "B"), ("J3", "B", "C"), ("J4", "C", "ground")]
    assert doc.validation.ok and doc.validation.summary.dof == 1
    # type the generator's exact joint positions in the property panel
    c, s = math.cos(math.radians(45.0)), math.sin(math.radians(45.0))
    doc.select(Selection("joint", "J2"))
    _type_vector(win.editor.properties.current_page().anchor, (c, s, 0.0))
    doc.select(Selection("joint", "J3"))
    _type_vector(win.editor.properties.current_page().anchor, (1.0 + c, s, 0.0))
    assert canonical(doc.spec) == canonical(g.fourbar())
    # every step is one undo: drawing 4 + pivots 2 + two moves (x, y typed separately: 4)
    assert win.undo_stack.count() >= 8


def test_drag_moves_a_point_and_delete_key(make_window, qtbot):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(g.fourbar())
    win.tabs.setCurrentIndex(1)
    canvas = win.sketch_panel.canvas
    qtbot.waitExposed(canvas)
    canvas.fit()
    win.session.sketch.set_tool("select")
    c, s = math.cos(math.radians(45.0)), math.sin(math.radians(45.0))
    start = _px(canvas, c, s)
    end = _px(canvas, 0.5, 0.9)
    QTest.mousePress(canvas, Qt.LeftButton, Qt.NoModifier, start)
    assert doc.selection == Selection("joint", "J2")
    for k in range(1, 6):
        QTest.mouseMove(canvas, start + (end - start) * (k / 5))
    QTest.mouseRelease(canvas, Qt.LeftButton, Qt.NoModifier, end)
    a = doc.spec.joint("J2").anchor
    assert np.allclose(a[:2], (0.5, 0.9), atol=0.026)  # snapped to the 0.05 m grid
    assert doc.spec.body("A").shape.p_to == a and doc.spec.body("B").shape.p_from == a
    win.actions["undo"].trigger()
    assert doc.spec == g.fourbar()
    # click a body, delete it
    _click(canvas, 1.2, s)
    assert doc.selection == Selection("body", "B")
    qtbot.keyClick(canvas, Qt.Key_Delete)
    assert [b.name for b in doc.spec.bodies] == ["A", "C"]
    assert not doc.validation.ok or doc.validation.summary.dof is not None


def test_escape_ends_a_chain_and_planes_switch(make_window, qtbot):
    win = make_window(gl=False)
    win.actions["new"].trigger()
    canvas = win.sketch_panel.canvas
    qtbot.waitExposed(canvas)
    _click(canvas, 0.0, 0.0)
    _click(canvas, 0.5, 0.0)
    assert win.session.sketch.chain_start is not None
    qtbot.keyClick(canvas, Qt.Key_Escape)
    assert win.session.sketch.chain_start is None
    assert len(win.session.document.spec.bodies) == 1 and win.session.document.validation.ok
    combo = win.sketch_panel.plane
    combo.setCurrentIndex(combo.findData("xz"))
    combo.activated.emit(combo.currentIndex())
    assert win.session.sketch.plane.key == "xz"


def test_double_loop_labels_do_not_overprint_at_1280_by_800(make_window, qtbot, qapp):
    """double-loop-8: J2/J6 and J4/J10 meet at one point each and share one label; no label
    covers another label, a joint or a ground symbol (the hatch covered J1 and J5)."""
    from PySide6.QtCore import QRectF
    from PySide6.QtWidgets import QToolButton

    from linkwork.engine.paths import examples_dir

    from linkwork.app.qt.sketch import ground_symbol_rect
    from linkwork.app.session.sketch import sketch_points

    win = make_window(gl=False)
    win.open_file(examples_dir() / "double-loop-8.mech.json")
    win.tabs.setCurrentIndex(1)
    panel = win.sketch_panel
    canvas = panel.canvas
    qtbot.waitExposed(canvas)
    canvas.fit()
    canvas.grab()  # paints
    labels = dict(canvas.labels_drawn)
    assert {"J2, J6", "J4, J10", "J1", "J5"} <= set(labels)
    assert {f"L{k}" for k in range(1, 9)} <= set(labels)
    rects = list(labels.values())
    for i, a in enumerate(rects):
        assert canvas.rect().contains(a.toRect())
        for b in rects[i + 1:]:
            assert not a.intersects(b)
    doc = win.session.document
    for sp in sketch_points(doc.spec, doc.pivots):
        c = canvas.world_to_widget(sp.pos)
        glyph = QRectF(c.x() - 6.5, c.y() - 6.5, 13, 13)
        for text, r in labels.items():
            assert not r.intersects(glyph), (text, sp.joints)
            if sp.grounded:
                assert not r.intersects(ground_symbol_rect(c)), (text, sp.joints)
    # the toolbars fit at 1280 px: nothing in the overflow menu ("››")
    assert tuple(win.size().toTuple()) == (1280, 800)
    for bar in (panel.toolbar, panel.defaults_toolbar):
        ext = bar.findChild(QToolButton, "qt_toolbar_ext_button")
        assert ext is None or not ext.isVisible()
        for act in bar.actions():
            if act.isSeparator():
                continue
            w = bar.widgetForAction(act)
            assert w is not None and w.isVisible(), act.text() or w
    # the hint is wrapped, never cut
    hint = panel.status
    assert hint.text() == canvas.hint()
    assert hint.height() >= hint.heightForWidth(hint.width())
