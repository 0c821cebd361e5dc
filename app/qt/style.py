"""The application's look: Fusion with a light palette and a small style sheet."""

from __future__ import annotations

from PySide6.QtGui import QColor, QIcon, QPalette

from linkwork.engine.paths import resources_dir


def style_sheet() -> str:
    p = resources_dir() / "style" / "linkwork.qss"
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return ""


def icon_path():
    """The application icon: ``resources/icons/linkwork.svg`` (checkout, wheel or bundle;
    the desktop entry installs the same file)."""
    return resources_dir() / "icons" / "linkwork.svg"


def app_icon() -> QIcon:
    """The application icon (null if the file or Qt's SVG image plug-in is missing)."""
    return QIcon(str(icon_path()))


def apply_style(app) -> None:
    pal = QPalette()
    pal.setColor(QPalette.Window, QColor("#f4f5f7"))
    pal.setColor(QPalette.WindowText, QColor("#1d2127"))
    pal.setColor(QPalette.Base, QColor("#ffffff"))
    pal.setColor(QPalette.AlternateBase, QColor("#f3f5f8"))
    pal.setColor(QPalette.ToolTipBase, QColor("#ffffff"))
    pal.setColor(QPalette.ToolTipText, QColor("#1d2127"))
    pal.setColor(QPalette.Text, QColor("#1d2127"))
    pal.setColor(QPalette.Button, QColor("#eceef2"))
    pal.setColor(QPalette.ButtonText, QColor("#1d2127"))
    pal.setColor(QPalette.Highlight, QColor("#3d7bd9"))
    pal.setColor(QPalette.HighlightedText, QColor("#ffffff"))
    pal.setColor(QPalette.Disabled, QPalette.Text, QColor("#9aa0a8"))
    pal.setColor(QPalette.Disabled, QPalette.ButtonText, QColor("#9aa0a8"))
    pal.setColor(QPalette.Disabled, QPalette.WindowText, QColor("#9aa0a8"))
    app.setPalette(pal)
    app.setStyleSheet(style_sheet())

