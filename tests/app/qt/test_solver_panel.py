"""The solver panel at the default window size (1280 x 800): everything on screen, refusals
next to the Run button in the panel's own words."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QFrame, QPushButton, QScrollArea

from linkwork.engine.paths import examples_dir


def _fully_visible(widget) -> bool:
    """Shown, and no part of it scrolled away or covered by its parents' edges."""
    return (widget.isVisible() and not widget.visibleRegion().isEmpty()
            and widget.visibleRegion().boundingRect() == widget.rect())


def _open(win, qapp, name):
    win.open_file(examples_dir() / name)
    qapp.processEvents()
    assert tuple(win.size().toTuple()) == (1280, 800)


def test_refusal_is_next_to_run_in_the_panels_own_words(make_window, qapp):
    """dt = 5 s with an end time of 1 s: Run greys out and the reason is shown under it,
    naming the panel's rows, not the command line's flags."""
    win = make_window(gl=False)
    _open(win, qapp, "parallelogram-fourbar.mech.json")
    panel = win.solver_panel
    assert win.actions["run"].isEnabled() and not panel.refusal.isVisible()
    win.session.solver.update(dt=5.0, t_end=1.0)
    qapp.processEvents()
    assert not win.actions["run"].isEnabled()
    text = panel.refusal.text()
    assert text == "Step dt (5 s) is longer than the end time (1 s)."
    assert "--" not in text and win.actions["run"].toolTip() == text
    # in the run box, under the Run button, outside the scrolled settings
    run_box = panel.findChild(QFrame, "RunBox")
    assert panel.refusal.parentWidget() is run_box is panel.buttons["run"].parentWidget()
    assert _fully_visible(panel.refusal) and _fully_visible(panel.buttons["run"])
    run_rect = panel.buttons["run"].geometry()
    assert 0 <= panel.refusal.geometry().top() - run_rect.bottom() <= 12
    # a run refused for that reason says the same
    assert win.run() is None
    assert win.message_bar.text() == f"Cannot run: {text}"
    win.session.solver.update(t_end=10.0)
    qapp.processEvents()
    assert win.actions["run"].isEnabled() and not panel.refusal.isVisible()


@pytest.mark.parametrize("example, formulation", [
    ("parallelogram-fourbar.mech.json", "dense"),
    ("chain-8-revolute.mech.json", "dca"),
    ("chain-8-revolute.mech.json", "hdca"),
])
def test_panel_fits_at_1280_by_800(make_window, qapp, example, formulation):
    """The whole panel is on screen without scrolling: the formulation's description to its
    last word and "Defaults for this mechanism", also while a refusal is shown.  (index3's
    six settings of its own need the scroll bar at this size.)"""
    win = make_window(gl=False)
    _open(win, qapp, example)
    win.session.solver.update(formulation=formulation)
    panel = win.solver_panel
    scroll = panel.findChild(QScrollArea)
    reset = panel.findChild(QPushButton, "resetSettings")
    for refused in (False, True):
        if refused:
            win.session.solver.update(dt=5.0, t_end=1.0)
        qapp.processEvents()
        assert scroll.verticalScrollBar().maximum() == 0, f"{formulation}, refused={refused}"
        assert panel.summary.text() and _fully_visible(panel.summary)
        # the label is tall enough for all of its wrapped lines
        assert panel.summary.height() >= panel.summary.heightForWidth(panel.summary.width())
        assert reset is not None and _fully_visible(reset)
        assert _fully_visible(panel.buttons["run"])
        assert panel.refusal.isVisible() == refused
        if refused:
            assert _fully_visible(panel.refusal)
