"""Fuzzing the property panel: any text typed into any editable field of any page never
raises; text that is not a value of the field (a number field given no finite number,
the torque value or a driver's table given anything but finite numbers) is flagged red -- the ``invalid``
property and a red background -- and reverted, and the document is not touched.  Values
the field takes go to the document, where the engine judges them: a refusal shows above
the fields (tests/app/qt/test_editor.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtWidgets import QLineEdit

from linkwork.app.qt.properties import PropertyPanel
from linkwork.app.qt.widgets import INVALID_BACKGROUND, NumberEdit
from linkwork.app.session import Session, edits
from linkwork.app.session.document import Selection
from linkwork.engine import generators as gen
from linkwork.engine.mechfile import ForceSpec, MotionSpec

from ...fuzzing import examples

#: the geared four-bar (rods, a cylinder, a gear, a joint torque and a joint spring) with a
#: spring between two bodies, drivers with a table and a harmonic law; a ground pivot
SPEC = edits.add_driver(edits.add_driver(
    edits.add_force(gen.geared_fourbar(), ForceSpec("spring", body1="A", point1=(0.0, 0.0, 0.0), body2="C",
                                                    point2=(0.5, 0.2, 0.0), stiffness=10.0, damping=0.1,
                                                    rest_length=0.3)),
    "J3", name="D1", motion=MotionSpec("table", t=(0.0, 1.0, 2.0), q=(0.0, 0.5, 0.0))),
    "J4", name="D2", motion=MotionSpec("harmonic", amplitude=0.2, frequency=1.0))
SELECTIONS = [Selection("mechanism", ""), Selection("body", "A"), Selection("body", "motor_rotor"),
              Selection("joint", "J2"), Selection("joint", "motor"), Selection("force", "0"),
              Selection("force", "1"), Selection("force", "2"), Selection("gear", "pinion"),
              Selection("driver", "D1"), Selection("driver", "D2"), Selection("pivot", "0")]
SPECIAL = ["nan", "NaN", "inf", "-inf", "Infinity", "-0", "0", "1e999", "-1e999", "1e-999", "1e308", "", "  ",
           "1,5", "1;2", "1, 2, 3", "0.5,", ",", "+3", "--1", "1_000", "0x10", "\u0663", "\uff11\uff12", "\u00e9",
           "\u202e1", "\U0001f642", "\x00", "1 2", "ground", "A", "J1", "-1", "1e9"]
TEXTS = st.one_of(st.sampled_from(SPECIAL), st.text(max_size=12), st.floats().map(repr),
                  st.integers(-10**6, 10**6).map(str))


def _finite_numbers(text: str, separated: bool) -> bool:
    """An independent reading: the text is one finite number (or, ``separated``, finite
    numbers separated by commas or semicolons)."""
    parts = [p for p in text.replace(";", ",").split(",") if p.strip()] if separated else [text.strip()
                                                                                           .replace(",", ".")]
    try:
        return all(math.isfinite(float(p)) for p in parts)
    except ValueError:
        return False


def _editable(page) -> list[QLineEdit]:
    """The line edits of the page's visible rows, enabled, in form order."""
    out = []
    for w in page.fields.values():
        if not page.form.isRowVisible(w):
            continue
        line_edits = [w] if isinstance(w, QLineEdit) else w.findChildren(QLineEdit)
        out += [e for e in line_edits if e.isEnabled() and not e.isReadOnly()]
    return out


@pytest.fixture(scope="module")
def panel(qapp):
    session = Session()
    p = PropertyPanel(session)
    yield p
    p.close_panel()
    p.deleteLater()


@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, len(SELECTIONS) - 1), field=st.integers(0, 40), text=TEXTS)
def test_any_text_in_any_field_never_raises_and_bad_text_is_red_and_not_applied(panel, qtbot, fuzz_counts,
                                                                                 which, field, text):
    doc = panel.doc
    doc.replace(SPEC, pivots=[(0.3, -0.2, 0.0)])
    doc.select(SELECTIONS[which])
    page = panel.current_page()
    assert page is not None and page.kind == SELECTIONS[which].kind
    fields = _editable(page)
    w = fields[field % len(fields)]
    state, undo, shown = doc.state, doc.undo_stack.count(), w.text()
    with qtbot.captureExceptions() as raised:
        w.setText(text)
        w.editingFinished.emit()
    assert not raised, (SELECTIONS[which], w.objectName(), text, raised)
    fuzz_counts["texts typed"] += 1
    lists = [getattr(page, name, None) for name in ("value", "t_edit", "q_edit")]  # comma-separated numbers
    if isinstance(w, NumberEdit) or any(w is f for f in lists):
        bad = not _finite_numbers(text, separated=not isinstance(w, NumberEdit))
        if bad:
            fuzz_counts["refused red"] += 1
            assert w.property("invalid") is True and w.styleSheet() == INVALID_BACKGROUND, (text, w.styleSheet())
            assert doc.state is state and doc.undo_stack.count() == undo, text
            assert w.text() == shown, (text, shown, w.text())  # reverted
            return
        assert not w.property("invalid"), text
    if doc.state is state:
        fuzz_counts["unchanged"] += 1
    else:
        fuzz_counts["applied"] += 1
        assert doc.undo_stack.count() == undo + 1
        if not doc.validation.ok:  # the engine refuses it: said above the fields
            fuzz_counts["applied, refused by the engine"] += 1
            assert not panel.message.isHidden() and panel.message.text()


def test_the_torque_value_field_flags_non_finite_numbers(panel, qtbot):
    """"nan" and "inf" read as floats, but a torque must be finite: flagged and not applied."""
    doc = panel.doc
    doc.replace(SPEC)
    doc.select(Selection("force", "0"))
    page = panel.current_page()
    assert doc.spec.forces[0].type == "joint-torque"
    before = doc.spec.forces[0].value
    for text in ("nan", "1, inf", "1e999", "x"):
        page.value.setText(text)
        page.value.editingFinished.emit()
        assert page.value.property("invalid") is True and doc.spec.forces[0].value == before, text
        assert page.value.text() == ", ".join(repr(float(x)) for x in before)
    page.value.setText("0.25")
    page.value.editingFinished.emit()
    assert not page.value.property("invalid") and doc.spec.forces[0].value == (0.25,)


def test_a_huge_quaternion_component_is_normalised(panel, qtbot):
    """Orientation (1, 1e300, 0, 0) -- found by the fuzz above: squaring 1e300 overflowed --
    is (1e-300, 1, 0, 0) once normalised."""
    doc = panel.doc
    doc.replace(SPEC)
    doc.select(Selection("body", "A"))
    assert doc.spec.body("A").orientation == (1.0, 0.0, 0.0, 0.0)
    x = panel.current_page().orientation.edits[1]
    with qtbot.captureExceptions() as raised:
        x.setText("1e300")
        x.editingFinished.emit()
    assert not raised, raised
    assert doc.spec.body("A").orientation == (1e-300, 1.0, 0.0, 0.0)


def test_a_huge_rod_radius_is_taken_not_an_overflow(panel, qtbot):
    """A rod radius of 1e200 (found by the fuzz above: the slender-rod check squared it
    with ``**``, which raised OverflowError) goes to the document; the engine judges it."""
    doc = panel.doc
    doc.replace(SPEC)
    doc.select(Selection("body", "A"))
    radius = panel.current_page().sh_radius
    with qtbot.captureExceptions() as raised:
        radius.setText("1e200")
        radius.editingFinished.emit()
    assert not raised, raised
    assert doc.spec.body("A").shape.radius == 1e200
