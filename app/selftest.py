"""``linkwork --selftest``: the whole product, end to end, in about a minute.

Opens the main window, loads a bundled example, runs every registered
formulation for 0.5 s through the worker the GUI uses
(:class:`app.qt.runner.RunController`), renders the 3-D view once, exports the
last run's CSV and the view's PNG to a temporary folder and reads both back.
One line per step, then ``selftest: N/N ok``; exit status 0 only if every step
passed.  It is what a packager runs on a freshly installed bundle or wheel
(``xvfb-run -a linkwork --selftest`` without a display): it exercises the Qt
platform plugin, OpenGL, the numba kernels (from the shipped cache or compiled),
the bundled resources and the exporters.

The window uses its own settings file in the temporary folder: the user's
window layout and recent files are left alone.
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
import time
from pathlib import Path

#: the bundled example every formulation runs (the application's first example; a closed loop, so the
#: loop-closure paths run too; dca cannot hold the crank-rocker through its singular position)
EXAMPLE = "parallelogram-fourbar.mech.json"
#: simulated seconds per formulation
T_END = 0.5
#: longest wait for one run (s): a cold numba cache compiles a formulation's kernels first
RUN_TIMEOUT = 600.0


class _Steps:
    """Runs named checks, prints one line each, counts the passes."""

    def __init__(self, stream):
        self.stream = stream
        self.done = 0
        self.passed = 0

    def __call__(self, name: str, fn) -> object:
        t0 = time.perf_counter()
        self.done += 1
        try:
            detail = fn()
        except Exception as exc:  # noqa: BLE001 - every failure is a failed step, reported
            print(f"selftest: FAIL {name}: {type(exc).__name__}: {exc} ({time.perf_counter() - t0:.1f} s)",
                  file=self.stream, flush=True)
            return None
        self.passed += 1
        print(f"selftest: ok   {name}: {detail} ({time.perf_counter() - t0:.1f} s)", file=self.stream, flush=True)
        return detail


def _wait(app, condition, timeout: float) -> bool:
    """Process events until ``condition()`` or ``timeout`` seconds."""
    end = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > end:
            return False
        app.processEvents()
        time.sleep(0.01)
    return True


def _image_stats(img) -> tuple[int, int, float]:
    """(width, height, fraction of pixels that differ from the top-left corner's colour)."""
    import numpy as np

    arr = np.asarray(img)
    h, w = arr.shape[:2]
    differs = np.any(arr[..., :3] != arr[0, 0, :3], axis=-1)
    return w, h, float(differs.mean())


def check_csv(path: Path, columns, rows_expected: int, t_end: float) -> str:
    """The exported file is the contract's CSV: same header, every row complete and finite."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    if header != list(columns):
        raise AssertionError(f"header differs from the run's columns ({len(header)} vs {len(columns)})")
    if header[0] != "t" or "energy.total" not in header or "violation.position" not in header:
        raise AssertionError("contract columns t / energy.total / violation.position missing")
    if len(body) != rows_expected:
        raise AssertionError(f"{len(body)} rows, the run has {rows_expected}")
    values = [[float(x) for x in r] for r in body]
    if any(len(r) != len(header) or not all(math.isfinite(x) for x in r) for r in values):
        raise AssertionError("a row is incomplete or not finite")
    if values[0][0] != 0.0 or abs(values[-1][0] - t_end) > 1e-9:
        raise AssertionError(f"t runs {values[0][0]} ... {values[-1][0]}, expected 0 ... {t_end}")
    return f"{path.name}: {len(body)} rows x {len(header)} columns, t = 0 ... {values[-1][0]:g} s"


def run_selftest(stream=None, keep: Path | None = None) -> tuple[int, int]:
    """Run every step; returns (passed, total).  ``keep``: write the exports there
    instead of a temporary folder that is removed afterwards."""
    stream = stream or sys.stdout
    from .display import display_problem

    problem = display_problem()
    if problem is not None:
        print(f"selftest: FAIL display: {problem} (run it under xvfb-run without a screen)", file=stream)
        print("selftest: 0/1 ok", file=stream)
        return 0, 1
    from .threads import configure_environment

    configure_environment()
    from . import qt  # noqa: F401 -- first Qt import: the PySide6 6.12 work-around (app/qt_compat.py)
    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QImage
    from PySide6.QtWidgets import QApplication

    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.paths import examples_dir

    from .main import configure_application
    from .vispy.scene import use_backend

    tmp_ctx = tempfile.TemporaryDirectory(prefix="linkwork-selftest-") if keep is None else None
    out = Path(tmp_ctx.name) if tmp_ctx is not None else Path(keep)
    out.mkdir(parents=True, exist_ok=True)
    step = _Steps(stream)
    use_backend()
    app = QApplication.instance() or QApplication([sys.argv[0]])
    configure_application(app)
    state: dict = {}

    def window():
        from .qt.mainwindow import MainWindow

        settings = QSettings(str(out / "selftest-settings.ini"), QSettings.IniFormat)
        win = MainWindow(settings=settings)
        state["win"] = win
        win.show()
        if not _wait(app, win.isVisible, 10):
            raise RuntimeError("the main window did not show")
        gl = win.view_panel.scene is not None
        return f"{win.windowTitle()!r}, {app.platformName()} platform, 3-D view {'on' if gl else 'OFF'}"

    def example():
        win = state["win"]
        path = examples_dir() / EXAMPLE
        if not win.open_file(path):
            raise RuntimeError(f"cannot open {path}: {win.message_bar.text()}")
        model = win.session.solver.model
        if model is None:
            raise RuntimeError(f"{EXAMPLE} did not load a valid mechanism")
        return f"{path.name} from {path.parent}: {model.nb} bodies"

    def run(name):
        def go():
            win = state["win"]
            win.session.solver.update(formulation=name, t_end=T_END)
            t0 = time.perf_counter()
            rec = win.run()
            if rec is None:
                raise RuntimeError(f"refused: {win.message_bar.text()}")
            if not _wait(app, lambda: not win.runner.busy, RUN_TIMEOUT):
                win.runner.stop()
                raise TimeoutError(f"not finished after {RUN_TIMEOUT:g} s")
            wall = time.perf_counter() - t0
            if rec.status != "finished":
                raise RuntimeError(f"status {rec.status}: {getattr(rec, 'error', '')}")
            if abs(rec.t_last - T_END) > 1e-9 or rec.n_rows < 2:
                raise RuntimeError(f"ended at t = {rec.t_last} with {rec.n_rows} rows")
            import numpy as np

            if not np.all(np.isfinite(rec.data)):
                raise RuntimeError("the results contain non-finite values")
            state["run"] = rec
            return (f"{rec.settings.integrator}, {rec.n_rows} rows to t = {rec.t_last:g} s, "
                    f"wall {wall:.1f} s")
        return go

    def view():
        win = state["win"]
        scene = win.view_panel.scene
        if scene is None:
            raise RuntimeError("no 3-D view on this display (no OpenGL windows on the Qt platform "
                               f"{app.platformName()!r})")
        win.tabs.setCurrentWidget(win.view_panel)
        disp = win.view_panel.display
        n0 = disp.frames
        disp.schedule()
        if not _wait(app, lambda: disp.frames > n0, 10):
            raise RuntimeError("the view drew no frame")
        img = scene.render((320, 240))
        w, h, frac = _image_stats(img)
        if frac < 0.005:
            raise RuntimeError(f"the rendered view is blank ({100 * frac:.2f} % of pixels differ from the background)")
        return f"{disp.frames - n0} frame(s) on screen; off-screen {w}x{h}, {100 * frac:.1f} % of pixels drawn"

    def export_csv():
        from linkwork.app.session.export import export_csv as write

        rec = state["run"]
        p = write(rec, out / "selftest.csv")
        return check_csv(p, rec.columns, rec.n_rows, T_END)

    def export_png():
        from .qt.exporting import export_view_png

        scene = state["win"].view_panel.scene
        if scene is None:
            raise RuntimeError("no 3-D view to export")
        p = export_view_png(scene, out / "selftest-view.png", (640, 480))
        img = QImage(str(p))
        if img.isNull():
            raise RuntimeError(f"{p.name} cannot be read back")
        import numpy as np

        img = img.convertToFormat(QImage.Format_RGBA8888)
        arr = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
        w, h, frac = _image_stats(arr[:, :img.width()])
        if (w, h) != (640, 480) or frac < 0.005:
            raise RuntimeError(f"{p.name}: {w}x{h}, {100 * frac:.2f} % drawn")
        return f"{p.name}: {w}x{h}, {p.stat().st_size} bytes, {100 * frac:.1f} % of pixels drawn"

    t0 = time.perf_counter()
    try:
        if step("main window", window) is not None:
            if step("example", example) is not None:
                for name in REGISTRY:
                    step(f"run {name}", run(name))
            step("3-D view", view)
            if "run" in state:
                step("export CSV", export_csv)
            else:
                step("export CSV", lambda: (_ for _ in ()).throw(RuntimeError("no finished run to export")))
            step("export PNG", export_png)
    finally:
        win = state.get("win")
        if win is not None:
            win.runner.shutdown()
            win.session.document.set_dirty_from_undo(True)  # never ask to save
            win.close()
            win.deleteLater()
            app.processEvents()
        if tmp_ctx is not None:
            tmp_ctx.cleanup()
    print(f"selftest: {step.passed}/{step.done} ok ({time.perf_counter() - t0:.1f} s)", file=stream, flush=True)
    return step.passed, step.done


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="linkwork --selftest",
        description="Open the window, run every formulation on a bundled example, render the 3-D view, "
                    "export CSV and PNG, check them; exit 0 only if every step passed.")
    p.add_argument("--keep", metavar="DIR", help="write the exported files there (default: a temporary folder)")
    args = p.parse_args(argv)
    passed, total = run_selftest(keep=Path(args.keep) if args.keep else None)
    return 0 if passed == total else 1
