"""The run history in the window: the solver panel's output estimate before a run, the
runs of the last window listed (with their plots) in the next one, and Run › Clear run
history."""

from linkwork.engine.paths import examples_dir


def test_the_next_window_lists_the_runs_and_clear_run_history_removes_them(make_window, run_to_end,
                                                                             _runs_dir):
    win = make_window()
    win.open_file(examples_dir() / "fourbar-crank-rocker.mech.json")
    win.session.solver.update(t_end=0.3, dt=0.01)
    assert win.solver_panel.estimate.text().startswith("Output: 31 rows × ")
    run = run_to_end(win)
    assert run.status == "finished" and run.path.parent == _runs_dir

    again = make_window()  # the application started again over the same folder
    runs = again.session.history.runs
    assert [r.path for r in runs] == [run.path] and runs[0].n_rows == 31
    assert again.runs_panel.tree.topLevelItemCount() == 1
    again.plots.refresh()
    x, _ = again.plots.curve_data("energy")[0]
    assert len(x) == 31 and x[-1] == 0.3

    again.actions["clear_runs"].trigger()
    assert again.session.history.runs == [] and again.runs_panel.tree.topLevelItemCount() == 0
    assert not run.path.exists()
