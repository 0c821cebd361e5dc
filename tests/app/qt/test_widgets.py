"""Small widgets: the message bar."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from linkwork.app.qt.widgets import MessageBar


@pytest.mark.parametrize("level", ["info", "warning", "error"])
def test_message_bar_icon_is_the_styles_picture_not_a_glyph(qtbot, level):
    """The bar's icon is Qt's standard message-box icon, painted: the error bar's "⛔"
    (U+26D4) was an empty box with the fonts the machine had."""
    bar = MessageBar()
    qtbot.addWidget(bar)
    bar.show_message(level, "something happened")
    assert bar.icon.text() == ""
    pm = bar.icon.pixmap()
    assert pm is not None and not pm.isNull()
    img = pm.toImage()
    opaque = [QColor(img.pixel(x, y)) for x in range(img.width()) for y in range(img.height())
              if QColor.fromRgba(img.pixel(x, y)).alpha() > 128]
    assert len(opaque) > img.width() * img.height() // 4  # a picture, not an empty square
    # and a coloured one: red for an error, amber for a warning, blue for information
    hue = {"error": (340, 20), "warning": (25, 65), "info": (190, 250)}[level]
    hues = [c.hsvHue() for c in opaque if c.hsvSaturation() > 100]
    lo, hi = hue
    inside = [h for h in hues if (lo <= h <= hi if lo < hi else (h >= lo or h <= hi))]
    assert len(inside) > len(opaque) // 4
