"""Time from pressing Run to the first motion, per formulation, in the application.

A user who has run the README's command (set-up, which compiles every formulation's
kernels into the cache: ``linkwork compile``) starts the application, opens a bundled
example and presses Run.  For each formulation this starts one new application process
(a real main window with the 3-D view, under ``xvfb-run`` when there is no display),
and for every bundled example the formulation can run: opens it, presses Run (the
window's own ``run``) and waits for the first rows after t = 0 to reach the session --
the first motion on screen.  It reports the slowest and the median first motion per
formulation and which example was slowest, and the number of numba compiles the process
needed (0 once the cache is warm).

    python benchmarks/first_motion.py [--formulations dense,dca] [--examples 5] [--json out.json]

Timing figures on a shared machine: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the most a first motion may take after pressing Run
TARGET_S = 10.0


def measure(formulation: str, limit: int | None) -> dict:
    """One application process: every bundled example's first Run with ``formulation``."""
    from linkwork.app.threads import configure_environment

    configure_environment()
    import linkwork.app.qt  # noqa: F401 -- first Qt import (PySide6 work-around)
    from PySide6.QtCore import QCoreApplication, QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from linkwork.app.main import configure_application
    from linkwork.app.qt.mainwindow import MainWindow
    from linkwork.app.vispy.scene import use_backend
    from linkwork.engine.paths import examples_dir

    compiles = [0]
    try:  # count real compiles (the numba:compile event fires only for those)
        from numba.core import event

        class _Count(event.Listener):
            def on_start(self, ev):
                compiles[0] += 1

            def on_end(self, ev):
                pass

        event.register("numba:compile", _Count())
    except Exception:  # pragma: no cover - numba without the event API
        compiles[0] = -1

    t_app = time.perf_counter()
    use_backend()
    qapp = QApplication.instance() or QApplication([sys.argv[0]])
    QCoreApplication.setOrganizationName("LinkworkBenchmarks")
    QCoreApplication.setApplicationName("first_motion")
    configure_application(qapp)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        win = MainWindow(settings=QSettings(str(Path(tmp) / "b.ini"), QSettings.IniFormat), enable_gl=True)
        win.resize(1280, 800)
        win.show()
        qapp.processEvents()
        app_start = time.perf_counter() - t_app
        files = sorted(examples_dir().glob("*.mech.json"))[:limit]
        for path in files:
            if not win.open_file(path):
                rows.append({"example": path.stem, "skipped": "could not open"})
                continue
            infos = {f.name: f for f in win.session.solver.formulations()}
            if formulation not in infos or not infos[formulation].ok:
                rows.append({"example": path.name, "skipped": "formulation refuses it"})
                continue
            win.session.solver.update(formulation=formulation)
            loop = QEventLoop()
            seen = {}

            def progress(run, loop=loop, seen=seen):
                if "t" not in seen and run.n_rows > 1:  # a row after t = 0: the mechanism moved
                    seen["t"] = time.perf_counter() - seen["start"]
                    loop.quit()

            def finished(run, loop=loop, seen=seen):
                progress(run)
                loop.quit()

            win.runner.run_progress.connect(progress)
            win.runner.run_finished.connect(finished)
            seen["start"] = time.perf_counter()
            run = win.run()
            if run is None:
                rows.append({"example": path.name, "skipped": win.message_bar.text()})
            else:
                QTimer.singleShot(600_000, loop.quit)
                loop.exec()
                win.runner.stop()
                win.runner.wait()
                rows.append({"example": path.name, "first_motion_s": seen.get("t", float("nan")),
                             "status": run.status})
            win.runner.run_progress.disconnect(progress)
            win.runner.run_finished.disconnect(finished)
            for _ in range(5):
                qapp.processEvents()
        win.runner.shutdown()
        win.session.document.set_dirty_from_undo(True)  # never prompt
        win.close()
    return {"formulation": formulation, "app_start_s": app_start, "compiles": compiles[0], "rows": rows,
            "load_average": os.getloadavg()[0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formulations", default=None, help="comma-separated [every registered one]")
    ap.add_argument("--examples", type=int, default=None, help="only the first N examples [all]")
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    ap.add_argument("--once", help=argparse.SUPPRESS)  # one formulation in this process, JSON on stdout
    args = ap.parse_args(argv)
    if args.once:
        print(json.dumps(measure(args.once, args.examples)))
        return 0
    from linkwork.engine.formulations import REGISTRY

    names = args.formulations.split(",") if args.formulations else list(REGISTRY)
    env = dict(os.environ, QT_QPA_PLATFORM="")
    results = []
    for name in names:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--once", name]
        if args.examples:
            cmd += ["--examples", str(args.examples)]
        if not os.environ.get("DISPLAY") and shutil.which("xvfb-run"):
            cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24"] + cmd
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
            return r.returncode
        results.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print("| formulation | examples run | first motion median [s] | slowest [s] | slowest example | "
          "app start [s] | numba compiles | load avg |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for res in results:
        times = [r["first_motion_s"] for r in res["rows"] if "first_motion_s" in r]
        slow = max(res["rows"], key=lambda r: r.get("first_motion_s", -1.0))
        worst = max(worst, max(times))
        print(f"| {res['formulation']} | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} | "
              f"{slow['example']} | {res['app_start_s']:.2f} | {res['compiles']} | {res['load_average']:.1f} |")
    print(f"\nslowest first motion {worst:.2f} s (target <= {TARGET_S:g} s after the set-up's compile)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
