"""``linkwork`` and ``linkwork FILE.mech.json``: start the desktop application."""

from __future__ import annotations

import sys

ORGANIZATION = "Linkwork"
APPLICATION = "Linkwork"
#: the desktop entry's name (packaging/linkwork.desktop): Wayland and the task bar match windows to it
DESKTOP_FILE = "linkwork"


def configure_application(app) -> None:
    """Names (for QSettings), style and default fonts of the application."""
    from PySide6.QtWidgets import QApplication

    if not app.organizationName():  # (tests and the screenshot script set their own)
        app.setOrganizationName(ORGANIZATION)
        app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("Linkwork")
    from linkwork.engine import __version__

    app.setApplicationVersion(__version__)
    if isinstance(app, QApplication):
        from .qt.style import app_icon

        app.setDesktopFileName(DESKTOP_FILE)
        icon = app_icon()
        if not icon.isNull():
            app.setWindowIcon(icon)
        app.setStyle("Fusion")
        from .qt.style import apply_style

        apply_style(app)


def create_window(path: str | None = None, enable_gl: bool | None = None):
    """The main window, optionally opened on ``path`` (a refused file shows its refusal)."""
    from .qt.mainwindow import MainWindow

    win = MainWindow(enable_gl=enable_gl)
    if path:
        win.open_file(path)
    return win


def main(argv: list[str] | None = None) -> int:
    """Create the QApplication, open the main window (on FILE if given), run the event loop."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print("usage: linkwork [FILE.mech.json]\n\nOpens the Linkwork desktop application, optionally on a "
              "mechanism file.")
        return 0
    if len(argv) > 1:
        print(f"linkwork: expected at most one file, got {len(argv)} arguments", file=sys.stderr)
        return 2
    from .display import display_problem, no_display_message

    problem = display_problem()
    if problem is not None:  # Qt would abort the process (exit 134) with a misleading message
        print(no_display_message(problem), file=sys.stderr)
        return 2
    from .threads import configure_environment

    configure_environment()  # before numpy loads: BLAS and OpenMP threads must not spin against the GUI
    from . import qt  # noqa: F401 -- first: protects the interpreter from a PySide6 6.12 bug (app/qt_compat.py)
    from PySide6.QtWidgets import QApplication

    from .vispy.scene import use_backend

    use_backend()
    app = QApplication.instance() or QApplication([sys.argv[0]])
    configure_application(app)
    win = create_window(argv[0] if argv else None)
    win.show()
    from .qt.recovery import offer_recovery

    offer_recovery(win)  # edits left by a Linkwork that did not close normally
    return int(app.exec())


if __name__ == "__main__":
    sys.exit(main())
