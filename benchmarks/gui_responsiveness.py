"""Responsiveness of the desktop application during a 128-link run.

Measures, in one process with a real main window (under ``xvfb-run`` when there
is no display):

- the longest event-loop stall, seen by a 1 ms ``QTimer`` in the GUI thread while
  the worker runs (target < 100 ms);
- the run's slowdown caused by the live plots and the 3-D view, against the same
  simulation run headless in this process (target < 10 %).  Both timings are the
  engine's own ``wall_time`` of ``Simulation.run``; each side is the best of
  ``--inner`` interleaved runs (the usual estimator for timings under noise).

These are timing figures on a shared machine, so they are a benchmark, not a test
(a loaded machine gave a 141 ms stall that a quiet one does not):
``tests/app/qt/test_responsiveness.py`` keeps only what does not depend on the load.

    python benchmarks/gui_responsiveness.py [--repeat 3] [--inner 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the simulated time is chosen so that one headless run takes about this long
TARGET_WALL = 1.0


def _headless(model, settings) -> float:
    from linkwork.engine.simulation import Simulation

    sim = Simulation(model, settings)
    sim.prepare()
    for _ in sim.run(chunk_rows=1 << 30, max_interval=0.1):
        pass
    return sim.stats["wall_time"]


def _gui_run(win, probe: bool):
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer

    gaps = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(1)
    last = [0]

    def tick():
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    timer.timeout.connect(tick)
    loop = QEventLoop()
    win.runner.run_finished.connect(loop.quit)
    if probe:
        clock.start()
        timer.start()
    run = win.run()
    if run is None:
        raise RuntimeError(f"the run did not start: {win.message_bar.text()}")
    loop.exec()
    timer.stop()
    win.runner.run_finished.disconnect(loop.quit)
    if run.status != "finished":
        raise RuntimeError(f"the run ended {run.status}: {run.error}")
    return run, max(gaps) if gaps else 0


def measure(inner: int) -> dict:
    """One window, one 128-link run with the stall probe, then ``inner`` interleaved
    headless / GUI runs for the slowdown."""
    from linkwork.app.threads import configure_environment

    configure_environment()
    import linkwork.app.qt  # noqa: F401 -- first Qt import (PySide6 work-around)
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication

    from linkwork.app.main import configure_application
    from linkwork.app.qt.mainwindow import MainWindow
    from linkwork.app.vispy.scene import use_backend
    from linkwork.engine import generators as g
    from linkwork.engine.model import build_model

    use_backend()
    qapp = QApplication.instance() or QApplication([sys.argv[0]])
    QCoreApplication.setOrganizationName("LinkworkBenchmarks")
    QCoreApplication.setApplicationName("gui_responsiveness")
    configure_application(qapp)
    with tempfile.TemporaryDirectory() as tmp:
        settings_file = QSettings(str(Path(tmp) / "bench.ini"), QSettings.IniFormat)
        win = MainWindow(settings=settings_file, enable_gl=True)
        win.resize(1280, 800)
        win.show()
        spec = g.paper000_chain(128)
        win.session.document.replace(spec)
        win.session.solver.update(t_end=0.2, dt=0.01, integrator="rk4")
        settings, why = win.session.solver.resolved()
        if settings is None:
            raise RuntimeError(why)
        model = build_model(spec)
        _headless(model, settings)  # compile / load the kernels before timing anything
        per_second = _headless(model, settings) / 0.2
        t_end = float(min(5.0, max(0.2, round(TARGET_WALL / per_second, 1))))
        win.session.solver.update(t_end=t_end)
        settings, _ = win.session.solver.resolved()
        for _ in range(20):
            qapp.processEvents()
            time.sleep(0.01)
        run, stall = _gui_run(win, probe=True)
        headless, gui = [], []
        for _ in range(inner):
            headless.append(_headless(model, settings))
            run, _ = _gui_run(win, probe=False)
            gui.append(run.stats["wall_time"])
        frames = win.view_panel.display.frames
        win.runner.shutdown()
        win.session.document.set_dirty_from_undo(True)  # never prompt
        win.close()
    return {"formulation": settings.formulation, "threads": settings.threads, "t_end": t_end,
            "stall_ms": stall, "headless_s": min(headless), "gui_s": min(gui),
            "slowdown_percent": 100 * (min(gui) / min(headless) - 1.0), "headless_all": headless,
            "gui_all": gui, "live_3d_frames": frames, "load_average": os.getloadavg()[0],
            "when": time.strftime("%Y-%m-%d %H:%M:%S")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="separate processes [3]")
    ap.add_argument("--inner", type=int, default=5, help="interleaved runs per process for the slowdown [5]")
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)  # one measurement, JSON on stdout
    args = ap.parse_args(argv)
    if args.once:
        print(json.dumps(measure(args.inner)))
        return 0
    cmd = [sys.executable, str(Path(__file__).resolve()), "--once", "--inner", str(args.inner)]
    if not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24"] + cmd
    env = dict(os.environ, QT_QPA_PLATFORM="")
    rows = []
    for _ in range(args.repeat):
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
            return r.returncode
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print("| run | formulation | threads | t_end [s] | headless [s] | with GUI [s] | slowdown | "
          "longest stall | load avg |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for k, r in enumerate(rows, 1):
        print(f"| {k} | {r['formulation']} | {r['threads']} | {r['t_end']:g} | {r['headless_s']:.3f} | "
              f"{r['gui_s']:.3f} | {r['slowdown_percent']:.1f} % | {r['stall_ms']} ms | {r['load_average']:.2f} |")
    best = min(r["slowdown_percent"] for r in rows)
    print(f"\nbest slowdown {best:.1f} % (target < 10 %); worst stall {max(r['stall_ms'] for r in rows)} ms "
          "(target < 100 ms)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
