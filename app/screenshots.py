"""Take the documentation's screenshots (run under Xvfb):

    xvfb-run -a -s '-screen 0 1280x800x24' python -m linkwork.app.screenshots docs/images [NAME ...]

(NAME: only those pictures, e.g. ``sweep-dialog``.)  Each picture is a real state of the application at 1280x800: the four-bar
example loaded and run (the README's walkthrough), a run in progress with live
plots, the sketch editor, a generator dialog, the 3-D view, and a comparison
of two integrators, the offer to restore after a crash.  Settings, recovery
files and runs go to temporary folders, not the user's.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def _wait(app, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)


def _wait_for(app, cond, timeout: float = 120.0) -> None:
    end = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > end:
            raise TimeoutError("the application did not get there in time")
        app.processEvents()
        time.sleep(0.01)


def take(out: Path, only: tuple[str, ...] = ()) -> list[Path]:
    from .threads import configure_environment

    configure_environment()
    from . import qt  # noqa: F401  (PySide6 work-around first)
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication

    from .vispy.scene import use_backend

    use_backend()
    tmp = tempfile.mkdtemp(prefix="linkwork-shots-")
    QCoreApplication.setOrganizationName("LinkworkScreenshots")
    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, tmp)
    from .session.recovery import ENV_DIR
    from .session.runstore import ENV_DIR as RUNS_DIR

    os.environ[ENV_DIR] = tempfile.mkdtemp(prefix="linkwork-shots-recovery-")
    os.environ[RUNS_DIR] = tempfile.mkdtemp(prefix="linkwork-shots-runs-")  # no runs of earlier sessions
    app = QApplication.instance() or QApplication([sys.argv[0]])
    from .main import configure_application

    configure_application(app)
    from linkwork.engine.paths import examples_dir

    from .qt.exporting import export_plot, export_view_png
    from .qt.mainwindow import MainWindow
    from .session.document import Selection

    out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []

    def grab(widget, name):
        p = out / name
        widget.grab().save(str(p))
        shots.append(p)
        return p

    win = MainWindow()
    win.resize(1280, 800)
    win.move(0, 0)
    win.show()
    _wait(app, 0.5)
    if only:
        if "sweep-dialog" in only:
            _sweep_dialog(app, win, grab)
        if "recovery-offer" in only:
            _recovery_offer(app, win, shots, out)
        if "modes-dock" in only:
            _modes_dock(app, win, grab)
        if "driven-effort" in only:
            _driven_effort(app, win, grab)
        if "run-speed" in only:
            _run_speed(app, win, grab)
        win.session.document.set_dirty_from_undo(True)
        win.close()
        app.processEvents()
        return shots

    # 1. the README walkthrough: File > Examples > parallelogram four-bar, Run
    win.open_file(examples_dir() / "parallelogram-fourbar.mech.json")
    win.session.solver.update(t_end=4.0)
    win.session.plot_options.set(quantity="joint.J1.q")
    _wait(app, 0.5)
    grab(win, "fourbar-opened.png")
    run = win.run()
    _wait_for(app, lambda: not win.runner.busy)
    win.view_panel.set_trail(("joint", "J3"))
    win.session.playback.set_time(2.6)
    _wait(app, 0.8)
    grab(win, "fourbar-run.png")

    # 2. a run in progress: double loop, plots filling, progress bar part way
    win.open_file(examples_dir() / "loop-8.mech.json")
    win.session.solver.update(t_end=12.0)
    win.session.plot_options.set(quantity="reaction.J1.fy")
    _wait(app, 0.3)
    win.view_panel.reset_camera("front")
    win.view_panel.set_trail(("joint", "J5"))
    _wait(app, 0.3)
    for attempt in range(4):  # the picture must show the run still going
        run = win.run()
        _wait_for(app, lambda: run.t_last > 4.5 or not win.runner.busy)
        _wait(app, 0.3)  # the progress line refreshes every 0.25 s
        still_running = run.status == "running"
        if still_running:
            grab(win, "run-in-progress.png")
        win.runner.stop()
        _wait_for(app, lambda: not win.runner.busy)
        if still_running:
            break
        win.session.remove_run(run)  # an attempt that ended too soon: not listed in the pictures
        win.session.solver.update(t_end=win.session.solver.settings.t_end * 2)
    else:
        print("warning: no picture of a run in progress (the runs ended too soon)", file=sys.stderr)

    # 3. the 3-D view on its own, larger: a spatial chain with the trail of its tip
    win.open_file(examples_dir() / "chain-5-spherical-spatial.mech.json")
    win.session.solver.update(t_end=2.0)
    run = win.run()
    _wait_for(app, lambda: not win.runner.busy)
    win.view_panel.set_trail(("body", "L5"))
    win.session.playback.set_time(1.6)
    win.view_panel.reset_camera("iso")
    _wait(app, 0.5)
    p = out / "view3d.png"
    export_view_png(win.view_panel.scene, p, size=(1200, 760))
    shots.append(p)

    # 4. the sketch editor: a four-bar being drawn, a joint selected
    win.session.document.new()
    sk = win.session.sketch
    sk.set_default(inertia_mode="unit", snap=True)
    sk.set_tool("pivot")
    sk.place_pivot(0.0, 0.0)
    sk.place_pivot(1.2, 0.0)
    sk.set_tool("link")
    pts = lambda: sk.points()  # noqa: E731

    def at(a, b):
        for k, q in enumerate(pts()):
            if abs(q.pos[0] - a) < 1e-9 and abs(q.pos[1] - b) < 1e-9:
                return k
        return None

    sk.link_click(0.0, 0.0, at(0.0, 0.0))
    sk.link_click(0.4, 0.7, None)
    sk.link_click(1.5, 0.9, None)
    sk.link_click(1.2, 0.0, at(1.2, 0.0))
    sk.set_tool("select")
    win.session.document.select(Selection("joint", "J2"))
    win.tabs.setCurrentIndex(1)
    win.sketch_panel.canvas.fit()
    _wait(app, 0.4)
    grab(win, "editor-sketch.png")

    # 5. a generator dialog with its live preview
    dlg = win.generate("ladder")
    form = dlg.form()
    form.set_value("cells", 3)
    dlg.update_preview()
    _wait(app, 0.4)
    grab(dlg, "generator-dialog.png")
    dlg.reject()
    _wait(app, 0.2)

    # 6. compare: RK4 against RK45 on the single loop, drift curves overlaid
    win.session.document.set_dirty_from_undo(True)  # the drawing above is not to be saved
    win.open_file(examples_dir() / "loop-4.mech.json")
    win.tabs.setCurrentIndex(0)
    win.session.solver.update(t_end=5.0)
    win.run()
    _wait_for(app, lambda: not win.runner.busy)
    win.compare({"integrator": "rk45"}, win.session.history.current.settings)
    _wait_for(app, lambda: not win.runner.busy)
    _wait(app, 0.5)
    grab(win, "compare.png")
    p = out / "compare-plots.png"
    export_plot(win.session, "all", p, width=1000, height=420)
    shots.append(p)

    # 7. the sketch of the double loop: joints at one point share one label (J2, J6 and J4, J10)
    win.session.document.set_dirty_from_undo(True)
    win.open_file(examples_dir() / "double-loop-8.mech.json")
    win.tabs.setCurrentIndex(1)
    win.sketch_panel.canvas.fit()
    _wait(app, 0.4)
    grab(win, "sketch-double-loop.png")

    # 8. the solver panel refusing a run: the reason under Run, in the panel's own words
    win.tabs.setCurrentIndex(0)
    win.session.solver.update(dt=5.0, t_end=1.0)
    _wait(app, 0.4)
    grab(win, "solver-refusal.png")

    # 9. a two-parameter sweep of the slider-crank, its result as an image
    _sweep_dialog(app, win, grab)

    # 10. Analysis > Modes on the sprung parallelogram, the mode animated
    _modes_dock(app, win, grab)

    # 11. the restore offer after a crash
    _recovery_offer(app, win, shots, out)

    win.session.document.set_dirty_from_undo(True)
    win.close()
    app.processEvents()
    return shots


def _sweep_dialog(app, win, grab) -> None:
    """Run > Parameter sweep… on the slider-crank: crank start speed x spring stiffness,
    48 cases on a local cluster of two workers, the final crank angle as an image."""
    from linkwork.engine.paths import examples_dir

    win.open_file(examples_dir() / "slider-crank.mech.json")
    dlg = win.open_sweep()
    dlg.move(40, 20)
    for row, path, a, b, n in ((dlg.axis1, "joints[0].rate", 2.0, 11.0, 8),
                               (dlg.axis2, "forces[0].stiffness", 50.0, 800.0, 6)):
        row.combo.setCurrentIndex(row.combo.findData(path))
        row.start.setValue(a)
        row.stop.setValue(b)
        row.num.setValue(n)
    dlg.use2.setChecked(True)
    dlg.t_end.setValue(5.0)
    dlg.workers.setValue(2)
    dlg.out_dir.setText(tempfile.mkdtemp(prefix="linkwork-sweep-shot-"))
    dlg.start()
    _wait_for(app, lambda: dlg.model.result is not None and dlg.worker is None, timeout=600)
    dlg.quantity.setCurrentText("final.joint.crank_pin.q")
    _wait(app, 0.5)
    grab(dlg, "sweep-dialog.png")
    dlg.reject()
    _wait(app, 0.2)


def _modes_dock(app, win, grab) -> None:
    """Analysis > Modes on the sprung parallelogram: the Modes dock listing its mode, the
    3-D view caught part way through the animation."""
    from linkwork.engine.paths import examples_dir

    win.session.document.set_dirty_from_undo(True)
    win.open_file(examples_dir() / "sprung-parallelogram.mech.json")
    win.tabs.setCurrentIndex(0)
    win.analyse("modes")
    win.modes_panel.wait()
    win.modes_panel.amplitude.setValue(0.35)
    win.modes_panel.animate_button.setChecked(True)
    win.view_panel.reset_camera("front")
    _wait_for(app, lambda: 1.0 < win.modes_panel._phase < 1.6, timeout=10.0)
    win.modes_panel.animate_button.setChecked(False)
    win.modes_panel.poses.emit(win.modes_panel.mode_poses(1.3))
    _wait(app, 0.4)
    grab(win, "modes-dock.png")
    win.modes_panel.clear()


def _driven_effort(app, win, grab) -> None:
    """The driven slider-crank run: its driver selected in the editor, the motor's torque
    plotted over two turns of the crank."""
    from linkwork.engine.paths import examples_dir

    from .session.document import Selection

    win.session.document.set_dirty_from_undo(True)
    win.open_file(examples_dir() / "slider-crank-driven.mech.json")
    win.tabs.setCurrentIndex(0)
    win.session.solver.update(t_end=2.0)
    win.session.plot_options.set(quantity="driver.motor.effort")
    win.session.document.select(Selection("driver", "motor"))
    win.run()
    _wait_for(app, lambda: not win.runner.busy)
    win.session.playback.set_time(1.3)
    win.view_panel.reset_camera("front")
    _wait(app, 0.6)
    grab(win, "driven-effort.png")


def _run_speed(app, win, grab) -> None:
    """The parallelogram four-bar run at its defaults (dense, rk4, 10 s at dt = 0.01), the
    live plots on: the solver panel's status with the run's steps per second, which is
    also printed (standard error), the picture taken of the fastest of three runs."""
    from linkwork.engine.paths import examples_dir

    win.session.document.set_dirty_from_undo(True)
    win.open_file(examples_dir() / "parallelogram-fourbar.mech.json")
    win.tabs.setCurrentIndex(0)
    win.session.plot_options.set(quantity="joint.J1.q")
    best = 0.0
    for _ in range(3):  # the picture of the fastest of three: the machine's load varies
        run = win.run()
        _wait_for(app, lambda: not win.runner.busy)
        sps = run.steps_per_second()
        print(f"run-speed: {run.n_rows} rows, {sps:,.0f} steps/s (wall {run.stats.get('wall_time', float('nan')):.3f} s)",
              file=sys.stderr)
        if sps > best:
            best = sps
            _wait(app, 0.5)
            grab(win, "run-speed.png")
    print(f"run-speed: best {best:,.0f} steps/s", file=sys.stderr)


def _recovery_offer(app, win, shots, out: Path) -> None:
    """The offer at start-up after Linkwork was killed with unsaved edits of the
    slider-crank: a Linkwork process edits it, waits for the autosave and is killed
    (SIGKILL); the window then offers what it left."""
    import os
    import signal
    import subprocess

    from linkwork.engine.paths import examples_dir

    from .qt.recovery import offer_recovery

    win.session.document.set_dirty_from_undo(True)
    win.session.document.new()  # as at start-up: an empty window
    win.tabs.setCurrentIndex(0)
    work = Path(tempfile.mkdtemp(prefix="linkwork-recovery-shot-"))
    original = work / "slider-crank.mech.json"
    original.write_bytes((examples_dir() / "slider-crank.mech.json").read_bytes())
    folder = win.autosave.store.folder
    code = ("import sys, time\n"
            "from linkwork.app.session import Session, edits\n"
            "from linkwork.app.session.recovery import Autosave, RecoveryStore\n"
            "s = Session(); s.document.open(sys.argv[1])\n"
            "auto = Autosave(s.document, RecoveryStore(sys.argv[2]), s.notifications)\n"
            "d = s.document\n"
            "d.edit('name', edits.set_mechanism(d.spec, name='slider-crank, longer crank'))\n"
            "d.edit('mass', edits.set_body(d.spec, d.spec.bodies[0].name, mass=2.0))\n"
            "auto.save_now(); print('saved', flush=True); time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(original), str(folder)], stdout=subprocess.PIPE,
                            text=True)
    proc.stdout.readline()
    _wait(app, 6.0)  # killed 6 s after the last edit, like a crash
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    dlg = offer_recovery(win)
    if dlg is None:
        print("warning: no recovery offer to take a picture of", file=sys.stderr)
        return
    _wait(app, 0.6)
    p = out / "recovery-offer.png"
    screen = app.primaryScreen()
    screen.grabWindow(0, win.x(), win.y(), win.frameGeometry().width(), win.frameGeometry().height()).save(str(p))
    shots.append(p)
    dlg.discard_button.click()
    _wait(app, 0.2)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out = Path(argv[0] if argv else "docs/images")
    for p in take(out, tuple(argv[1:])):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
