"""Running: generate, run, live plots, pause/resume, stop, failure, CSV export."""

import numpy as np
import pytest
from PySide6.QtWidgets import QDialogButtonBox

from linkwork.engine import formulations as forms
from linkwork.engine import generators as g
from linkwork.engine.cli import main as cli_main
from linkwork.engine.errors import SimulationError
from linkwork.engine.formulations.dense import DenseFormulation
from linkwork.engine.mechfile import save
from linkwork.engine.paths import examples_dir


def test_generate_a_chain_from_the_dialog_run_and_see_the_plots(make_window, qtbot, run_to_end):
    win = make_window()
    dlg = win.generate("chain")
    qtbot.waitExposed(dlg)
    form = dlg.form()
    form.widgets["n"].setText("4")
    form.widgets["n"].textEdited.emit("4")
    form.widgets["angle_deg"].setValue(30.0)
    form.widgets["angle_deg"].valueEdited.emit(30.0)
    dlg.update_preview()
    assert dlg.spec is not None and len(dlg.spec.bodies) == 4
    assert "4 bodies" in dlg.info.text()
    dlg.buttons.button(QDialogButtonBox.Ok).click()
    qtbot.waitUntil(lambda: len(win.session.document.spec.bodies) == 4)
    assert win.session.document.validation.summary.dof == 4
    run = run_to_end(win, t_end=0.5)
    assert run.status == "finished" and run.n_rows == 51
    # every plot received the run's rows
    for kind in ("energy", "violation", "quantity"):
        curves = win.plots.curve_data(kind)
        assert curves, kind
        assert max(len(x) for x, _ in curves) == 51
    x, y = win.plots.curve_data("energy")[0]
    assert x[-1] == pytest.approx(0.5) and abs(y[0]) == 0.0
    # tick labels are the values themselves: no SI "femto" scaling of the tiny violations
    assert win.plots.plots["violation"].getAxis("left").autoSIPrefixScale == 1.0
    assert win.plots.plots["quantity"].getAxis("left").labelUnits == "rad"
    assert win.plots.plots["quantity"].titleLabel.text == "joint J1 coordinate"
    assert win.solver_panel.progress.value() == 1000
    assert "51 rows" in win.solver_panel.stats.text()
    # playback can start now
    assert win.view_panel.play_btn.isEnabled() or win.view_panel.scene is None


def test_live_plots_refresh_while_running_and_pause_resume(make_window, qtbot):
    win = make_window()
    win.open_file(examples_dir() / "parallelogram-fourbar.mech.json")
    win.session.solver.update(t_end=200.0)
    run = win.run()
    assert run is not None
    qtbot.waitUntil(lambda: run.n_rows > 20, timeout=60_000)
    qtbot.waitUntil(lambda: win.plots.curve_data("energy") and len(win.plots.curve_data("energy")[0][0]) > 20,
                    timeout=10_000)
    assert win.actions["pause"].isEnabled() and not win.actions["run"].isEnabled()
    win.actions["pause"].trigger()
    assert run.status == "paused" and win.actions["pause"].text() == "Resume"
    # the chunk being computed when the pause came still arrives; then the worker holds
    control = win.runner.worker.control
    qtbot.waitUntil(lambda: control.holding, timeout=30_000)
    qtbot.wait(100)  # (that chunk's rows reach the GUI thread)
    n = run.n_rows
    qtbot.wait(800)
    assert run.n_rows == n, "rows arrived while paused"
    win.actions["pause"].trigger()
    assert run.status == "running"
    qtbot.waitUntil(lambda: run.n_rows > n + 10, timeout=30_000)
    with qtbot.waitSignal(win.runner.run_finished, timeout=30_000):
        win.actions["stop"].trigger()
    assert run.status == "stopped"


def test_stop_mid_run_keeps_partial_results_and_exports_them(make_window, qtbot, tmp_path, monkeypatch):
    win = make_window(gl=False)
    win.open_file(examples_dir() / "chain-8-revolute.mech.json")
    win.session.solver.update(t_end=500.0)
    run = win.run()
    qtbot.waitUntil(lambda: run.n_rows > 30, timeout=60_000)
    with qtbot.waitSignal(win.runner.run_finished, timeout=30_000):
        win.runner.stop()
    assert run.status == "stopped" and 30 < run.n_rows < 50_001
    assert run.t_last < 500.0
    t = run.t
    assert np.allclose(np.diff(t), 0.01)
    out = tmp_path / "partial.csv"
    monkeypatch.setattr("linkwork.app.qt.mainwindow.QFileDialog.getSaveFileName", lambda *a, **k: (str(out), ""))
    win.actions["export_csv"].trigger()
    from linkwork.engine.results import read_csv

    header, data = read_csv(out)
    assert header == list(run.columns) and data.shape[0] == run.n_rows
    assert np.array_equal(data, run.data)


class FailsAtTwoTenths(DenseFormulation):
    """A formulation that diverges on purpose (tests the failure path)."""

    name = "failing"
    title = "fails at t = 0.2 s"
    summary = "for tests"

    def rhs(self, t, y):
        if t > 0.2:
            raise SimulationError(t, "the test formulation diverged")
        return super().rhs(t, y)


def test_failure_shows_the_engines_message_and_keeps_the_rows(make_window, qtbot, monkeypatch):
    monkeypatch.setitem(forms.REGISTRY, "failing", FailsAtTwoTenths)
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    infos = [win.solver_panel.formulation.itemData(i) for i in range(win.solver_panel.formulation.count())]
    assert "failing" in infos  # picked up from the registry without a GUI change
    win.session.solver.update(formulation="failing", t_end=1.0)
    with qtbot.waitSignal(win.runner.run_finished, timeout=60_000):
        run = win.run()
    assert run.status == "failed"
    assert "simulation failed at t = 0.2" in run.error and "the test formulation diverged" in run.error
    assert run.n_rows == 21 and run.t_last == pytest.approx(0.2)
    assert "the test formulation diverged" in win.message_bar.text()
    assert "21 rows kept" in win.solver_panel.stats.text()


def test_gui_csv_export_equals_linkwork_run(make_window, qtbot, tmp_path, monkeypatch, run_to_end):
    mech = tmp_path / "loop.mech.json"
    save(g.closed_loop(4), mech)
    win = make_window(gl=False)
    win.open_file(mech)
    win.session.solver.update(t_end=0.3, dt=0.005, integrator="rk45")
    run = run_to_end(win)
    gui = tmp_path / "gui.csv"
    monkeypatch.setattr("linkwork.app.qt.mainwindow.QFileDialog.getSaveFileName", lambda *a, **k: (str(gui), ""))
    win.actions["export_csv"].trigger()
    cli = tmp_path / "cli.csv"
    assert cli_main(["run", str(mech), "--integrator", "rk45", "--dt", "0.005", "--t-end", "0.3",
                     "--out", str(cli), "--quiet"]) == 0
    assert gui.read_bytes() == cli.read_bytes()
    assert run.n_rows == 61


def test_refused_settings_disable_run_with_the_reason(make_window):
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    win.session.solver.update(dt=1.0, t_end=0.5)
    assert not win.actions["run"].isEnabled()
    assert win.actions["run"].toolTip() == "Step dt (1 s) is longer than the end time (0.5 s)."
    assert win.solver_panel.refusal.isVisible()
    assert win.run() is None or win.runner.busy is False
