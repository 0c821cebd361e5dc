"""Edit > Assemble: one joint turned from the present pose, the loops following on the
present branch (app/session/assembly.py over engine/analysis/assemble.py)."""

import math

import numpy as np

from linkwork.engine.mechfile import load
from linkwork.engine.model import build_model
from linkwork.engine.paths import examples_dir
from linkwork.engine.simulation import Settings, Simulation

from linkwork.app.qt.assemble_dialog import AssembleDialog


def _crank_rocker():
    return load(examples_dir() / "fourbar-crank-rocker.mech.json")


def _violation_at_start(spec):
    """The position violation of the new file's first row (a run of it)."""
    sim = Simulation(build_model(spec), Settings(t_end=0.01))
    cols, rows = sim.run_all()
    return float(rows[0, cols.index("violation.position")])


def test_assemble_turns_the_crank_and_closes_the_loop_as_one_undoable_edit(make_window):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(_crank_rocker())
    before = doc.spec
    assert win.assemble("J1", math.radians(30.0))
    after = doc.spec
    # the crank turned by 30 degrees about its pivot, the loop closed
    a0, a1 = (np.asarray(s.body("A").shape.p_to) - np.asarray(s.body("A").shape.p_from) for s in (before, after))
    turn = math.degrees(math.atan2(a0[0] * a1[1] - a0[1] * a1[0], a0 @ a1))
    assert abs(turn - 30.0) < 1e-9
    assert _violation_at_start(after) < 1e-12
    assert "Assembled with J1 +30°" in win.statusBar().currentMessage()
    win.actions["undo"].trigger()
    assert doc.spec == before


def test_a_pose_the_loop_cannot_reach_is_refused_with_the_grashof_numbers(make_window):
    win = make_window(gl=False)
    doc = win.session.document
    doc.replace(_crank_rocker())
    before = doc.spec
    assert not win.assemble("J4", 1.5)  # the rocker cannot swing that far
    assert doc.spec == before
    assert win.message_bar.isVisible() and "s + l = 0.4 + 1.2 = 1.6 < p + q" in win.message_bar.text()


def test_the_dialog_offers_the_one_freedom_joints_in_degrees(qtbot):
    dlg = AssembleDialog(_crank_rocker(), joint="J2")
    qtbot.addWidget(dlg)
    assert [dlg.joint.itemData(i) for i in range(dlg.joint.count())] == ["J1", "J2", "J3", "J4"]
    assert dlg.joint.currentData() == "J2" and "degrees" in dlg.unit.text()
    dlg.amount.setValue(90.0)
    assert dlg.value() == math.radians(90.0)
