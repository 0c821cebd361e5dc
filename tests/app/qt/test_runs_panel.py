"""Names at the default window size: run labels in the runs panel and
names in the mechanism tree are not cut short."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QStyleOptionViewItem

from linkwork.engine import generators as g
from linkwork.engine.paths import examples_dir


def test_run_labels_fit_the_runs_panel(make_window, qtbot, qapp, run_to_end):
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    first = run_to_end(win, t_end=0.2)
    with qtbot.waitSignal(win.runner.run_finished, timeout=60_000):
        win.compare({"integrator": "rk45"}, first.settings)
    qapp.processEvents()
    assert tuple(win.size().toTuple()) == (1280, 800)
    tree = win.runs_panel.tree
    texts = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
    assert texts == ["dense/rk45 dt=0.01", "dense/rk4 dt=0.01"]
    # the column is as wide as its widest entry (check box, colour, text) needs, however long or
    # short the runs took (a faster machine once wrote "0.000381" and took the label's pixels)
    for wall in (None, 0.000381, 0.0123, 57.3, 4321.0):
        for run in win.session.history.runs:
            if wall is not None:
                run.stats["wall_time"] = wall
            win.runs_panel.update_run(run)
        qapp.processEvents()
        assert tree.columnWidth(0) >= tree.sizeHintForColumn(0), wall
    for i in range(tree.topLevelItemCount()):
        rect = tree.visualItemRect(tree.topLevelItem(i))
        assert tree.viewport().rect().contains(rect.topLeft())
    # a third run, of the first one's settings: numbered, and with the list's scroll bar
    # taking its width, every label still whole (the current one in bold the widest)
    run_to_end(win, t_end=0.2)
    qapp.processEvents()
    texts = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
    assert texts == ["dense/rk4 dt=0.01 (2)", "dense/rk45 dt=0.01", "dense/rk4 dt=0.01"]
    assert tree.verticalScrollBar().isVisible()
    assert tree.columnWidth(0) >= tree.sizeHintForColumn(0)
    assert [tree.topLevelItem(i).text(1) for i in range(3)] == ["✓"] * 3
    assert tree.topLevelItem(0).toolTip(1).startswith("finished")


def test_listed_labels_number_the_runs_of_the_same_settings():
    from types import SimpleNamespace

    from linkwork.app.qt.runs_panel import STATUS_MARKS, shown_labels
    from linkwork.app.session.runs import STATUSES

    runs = [SimpleNamespace(label=x) for x in ("a", "b", "a", "a", "b")]
    assert shown_labels(runs) == ["a", "b", "a (2)", "a (3)", "b (2)"]
    assert set(STATUS_MARKS) == set(STATUSES)  # every status has its mark


@pytest.mark.parametrize("example", ["parallelogram-fourbar.mech.json", "double-loop-8.mech.json",
                                     "joint-zoo.mech.json"])
def test_mechanism_tree_shows_whole_names(make_window, qapp, example):
    win = make_window(gl=False)
    win.open_file(examples_dir() / example)
    qapp.processEvents()
    assert tuple(win.size().toTuple()) == (1280, 800)
    tree = win.editor.tree
    mech = tree.topLevelItem(0)
    assert mech.text(0) == win.session.document.spec.name
    # the mechanism's row spans the tree's width ("parallelogra…" in a 120-pixel column)
    assert mech.isFirstColumnSpanned()
    if example == "parallelogram-fourbar.mech.json":
        assert tree.fontMetrics().horizontalAdvance(mech.text(0)) + 2 * tree.indentation() \
            <= tree.viewport().width()
    # every body, joint and force name fits its column: where the item starts (indentation)
    # plus what Qt's item delegate needs for the text
    opt = QStyleOptionViewItem()
    opt.font = tree.font()
    opt.fontMetrics = tree.fontMetrics()
    for i in range(1, tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        assert top.isFirstColumnSpanned()
        for k in range(top.childCount()):
            idx = tree.indexFromItem(top.child(k), 0)
            need = tree.visualRect(idx).left() + tree.itemDelegate().sizeHint(opt, idx).width()
            assert need <= tree.columnWidth(0), top.child(k).text(0)


def test_one_loop_is_not_one_loops(make_window, qapp):
    win = make_window(gl=False)
    win.open_file(examples_dir() / "parallelogram-fourbar.mech.json")
    qapp.processEvents()
    assert "1 loop ·" in win.editor.summary.text() and "1 loops" not in win.editor.summary.text()
    assert "1 loop ·" in win.status_summary.text()


def test_status_bar_shows_the_run_and_its_health_on_one_line(make_window, qapp, run_to_end):
    """The run summary has its health figures on a second line; the one-line status bar
    drew the two lines over each other."""
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    run = run_to_end(win, t_end=0.2)
    qapp.processEvents()
    text = win.run_status.text()
    assert "\n" not in text
    assert text.startswith(run.label) and "worst position violation" in text
    assert win.run_status.toolTip() == run.summary()
