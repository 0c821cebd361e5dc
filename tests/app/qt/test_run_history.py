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


def test_a_file_that_cannot_be_written_stops_the_run_as_failed_with_its_rows(make_window, qtbot, monkeypatch):
    import errno

    from linkwork.app.session.runstore import RowsWriter, read_rows

    calls = []
    append = RowsWriter.append

    def full_disk(self, rows):
        calls.append(len(rows))
        if len(calls) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        append(self, rows)

    monkeypatch.setattr(RowsWriter, "append", full_disk)
    win = make_window(gl=False)
    win.open_file(examples_dir() / "chain-8-revolute.mech.json")
    win.session.solver.update(t_end=500.0)
    with qtbot.waitSignal(win.runner.run_finished, timeout=60_000):
        run = win.run()
    written = sum(calls[:2])
    assert run.status == "failed" and "No space left on device" in run.error
    assert run.n_rows == written and read_rows(run.path).n_rows == written
    assert run.t_last < 500.0 and run.overview.rows == written
    assert any("cannot be written" in n.text for n in win.session.notifications.log)
