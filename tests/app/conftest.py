"""Fixtures of the desktop application's tests (conventions 13).

- the environment the application sets up (single-threaded BLAS, the PySide6
  reference-count work-around) before anything else loads;
- settings isolated in a temporary folder, under an organisation name only
  tests use; autosave's recovery files in a fresh temporary folder per test;
- ``make_window``: main windows that are closed after the test, failing the
  test if a top-level widget leaks (napari's ``make_napari_viewer``);
- the ``gl`` marker: skipped cleanly where no OpenGL display exists (run the
  suite under ``xvfb-run`` to include them).
"""

from __future__ import annotations

import gc
import os

from linkwork.app.threads import configure_environment

configure_environment()
if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    # no display at all: widgets still work off screen; the `gl` tests skip themselves
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import linkwork.app.qt  # noqa: E402,F401 -- first Qt import: applies the PySide6 6.12 work-around
import pytest  # noqa: E402
from PySide6.QtCore import QCoreApplication, QEvent, QSettings  # noqa: E402

TEST_ORGANIZATION = "LinkworkTests"


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels():
    """Compile (or load from the cache) the kernels of the application's default runs --
    dca on a chain, dense on a closed loop -- before any test's clock starts.

    With an empty numba cache a first run compiles for one to two minutes per
    formulation on two cores (docs/user-guide.md); the GUI tests' waits are about the
    GUI, and without this their first run in each worker waited on the compiler
    (test_generate_a_chain_from_the_dialog_run_and_see_the_plots timed out at 60 s in a
    fresh clone)."""
    from linkwork.engine import generators as gen
    from linkwork.engine.model import build_model
    from linkwork.engine.simulation import Settings, Simulation

    for spec, formulation in ((gen.chain(3, "revolute"), "dca"), (gen.fourbar(), "dense")):
        Simulation(build_model(spec), Settings(formulation=formulation, t_end=0.02, dt=0.01)).run_all()


@pytest.fixture(autouse=True)
def _recovery_dir(tmp_path_factory, monkeypatch):
    """Autosave's recovery files of each test go to a fresh temporary folder, never the user's."""
    from linkwork.app.session.recovery import ENV_DIR

    folder = tmp_path_factory.mktemp("recovery")
    monkeypatch.setenv(ENV_DIR, str(folder))
    return folder


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path_factory, monkeypatch):
    """A main window's run history of each test goes to a fresh temporary folder, never the user's."""
    from linkwork.app.session.runstore import ENV_DIR

    folder = tmp_path_factory.mktemp("runs")
    monkeypatch.setenv(ENV_DIR, str(folder))
    return folder


@pytest.fixture(scope="session")
def settings_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("settings")


@pytest.fixture(scope="session", autouse=True)
def _app_identity(qapp, settings_dir):
    """QSettings of every test go to a temporary folder, never to the user's."""
    from linkwork.app.main import configure_application
    from linkwork.app.vispy.scene import use_backend

    use_backend()
    QCoreApplication.setOrganizationName(TEST_ORGANIZATION)
    QCoreApplication.setApplicationName("LinkworkTestApp")
    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(settings_dir))
    QSettings.setPath(QSettings.IniFormat, QSettings.SystemScope, str(settings_dir / "system"))
    configure_application(qapp)
    yield


def _gl_usable() -> tuple[bool, str]:
    from PySide6.QtGui import QGuiApplication, QOffscreenSurface, QOpenGLContext

    plat = QGuiApplication.platformName()
    if plat in ("offscreen", "minimal", "vnc"):
        return False, f"Qt platform {plat!r} has no OpenGL windows (run under xvfb-run)"
    ctx = QOpenGLContext()
    if not ctx.create():
        return False, "no OpenGL context can be created"
    surf = QOffscreenSurface()
    surf.create()
    ok = ctx.makeCurrent(surf)
    ctx.doneCurrent()
    return (True, "") if ok else (False, "OpenGL context cannot be made current")


@pytest.fixture(scope="session")
def gl_status(qapp):
    return _gl_usable()


@pytest.fixture(autouse=True)
def _skip_without_gl(request, gl_status):
    if request.node.get_closest_marker("gl") is not None and not gl_status[0]:
        pytest.skip(gl_status[1])


@pytest.fixture
def settings(tmp_path):
    """A fresh settings file for one test."""
    s = QSettings(str(tmp_path / "linkwork-test.ini"), QSettings.IniFormat)
    yield s
    s.sync()


def _flush_deletes(qapp) -> None:
    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
        qapp.processEvents()
    gc.collect()


@pytest.fixture
def make_window(qapp, qtbot, settings, gl_status, request):
    """Factory of main windows; closes them after the test and fails on leaked widgets."""
    from linkwork.app.qt.mainwindow import MainWindow

    before = {id(w) for w in qapp.topLevelWidgets()}
    windows = []

    def factory(gl: bool | None = None, show: bool = True, **kw):
        use_gl = gl_status[0] if gl is None else gl
        win = MainWindow(settings=settings, enable_gl=use_gl, **kw)
        windows.append(win)
        if show:
            win.show()
            qtbot.waitExposed(win)
        return win

    yield factory

    for win in windows:
        win.runner.shutdown()
        win.session.document.set_dirty_from_undo(True)  # never prompt in a test
        win.close()
        win.deleteLater()
    windows.clear()
    _flush_deletes(qapp)
    leaked = [w for w in qapp.topLevelWidgets() if id(w) not in before]
    assert not leaked, f"leaked top-level widgets: {[type(w).__name__ + ':' + w.objectName() for w in leaked]}"


@pytest.fixture
def run_to_end(qtbot):
    """Start a run in a window and wait for it to end; returns the RunRecord."""

    def go(win, timeout=60_000, **overrides):
        if overrides:
            win.session.solver.update(**overrides)
        with qtbot.waitSignal(win.runner.run_finished, timeout=timeout):
            run = win.run()
            assert run is not None, win.message_bar.text()
        return run

    return go
