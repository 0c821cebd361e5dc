"""The application's name, icon and version in its window and About box."""

from PySide6.QtWidgets import QApplication, QLabel

from linkwork.engine import __version__


def test_window_and_about_show_name_icon_and_version(make_window):
    win = make_window(gl=False)
    assert win.windowTitle().endswith(f"— Linkwork {__version__}")
    icon = QApplication.instance().windowIcon()
    assert not icon.isNull() and not icon.pixmap(64, 64).isNull()  # the SVG rendered (Qt's svg plug-in)
    assert QApplication.instance().desktopFileName() == "linkwork"
    about = win.show_about()
    assert f"Linkwork {__version__}" in about.browser.toPlainText()
    logo = about.findChild(QLabel, "aboutIcon")
    assert logo is not None and not logo.pixmap().isNull()
    about.close()
