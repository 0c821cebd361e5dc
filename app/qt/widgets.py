"""Small reusable widgets: number and vector fields, a message bar, a colour swatch."""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QApplication, QFrame, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QStyle, QToolButton, QWidget,
)


def fmt_number(x: float | None) -> str:
    """Shortest text that reads back as the same float (repr), tidy for round values: whole
    numbers in full below a million, larger ones as ``1e11`` or ``2.5e13`` where that reads
    back the same (a penalty factor fits its field)."""
    if x is None:
        return ""
    x = float(x)
    if x == 0.0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        if abs(x) >= 1e6:
            short = f"{x:.6g}".replace("e+0", "e").replace("e+", "e")
            if float(short) == x:
                return short
        return str(int(x))
    r = repr(x)
    g = f"{x:.12g}"
    return g if float(g) == x else r


#: the background of a field whose text was refused (``invalid`` property True)
INVALID_BACKGROUND = "background: #fde2e1;"


def mark_invalid(edit: QLineEdit, bad: bool) -> None:
    """Flag a field whose text was refused: the ``invalid`` property and a red background."""
    edit.setProperty("invalid", bad)
    edit.setStyleSheet(INVALID_BACKGROUND if bad else "")


class NumberEdit(QLineEdit):
    """A line edit for one float: accepts any finite number (the engine judges it).

    ``valueEdited(float)`` is emitted when the user finishes editing a new
    number; unparsable text is reverted and flagged.
    """

    valueEdited = Signal(float)

    def __init__(self, value: float | None = None, parent: QWidget | None = None, integer: bool = False,
                 minimum: float | None = None, live: bool = False):
        super().__init__(parent)
        self._value = value
        self._integer = integer
        self._minimum = minimum
        self.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        self.setMinimumWidth(60)
        self.setText(self._format(value))
        self.editingFinished.connect(self._finish)
        if live:
            self.textEdited.connect(self._live)

    def _format(self, v) -> str:
        if v is None:
            return ""
        return str(int(v)) if self._integer else fmt_number(v)

    def value(self) -> float | None:
        return self._value

    def setValue(self, v: float | None) -> None:  # noqa: N802 (Qt naming)
        self._value = v
        text = self._format(v)
        if self.text() != text:
            self.setText(text)
        self._mark(False)

    def _parse(self, text: str):
        v = float(text.strip().replace(",", "."))
        if not math.isfinite(v):
            raise ValueError
        if self._integer:
            if not float(v).is_integer():
                raise ValueError
            v = int(v)
        if self._minimum is not None and v < self._minimum:
            raise ValueError
        return v

    def _live(self, text: str) -> None:
        """While typing: take the number as soon as the text is one (no reformatting)."""
        try:
            v = self._parse(text)
        except ValueError:
            return
        if v != self._value:
            self._value = v
            self._mark(False)
            self.valueEdited.emit(float(v))

    def _mark(self, bad: bool) -> None:
        mark_invalid(self, bad)

    def _finish(self) -> None:
        text = self.text().strip()
        try:
            v = self._parse(text)
        except ValueError:
            self._mark(True)
            self.setToolTip(f"not a{'n integer' if self._integer else ' number'}"
                            + (f" >= {fmt_number(self._minimum)}" if self._minimum is not None else "")
                            + f": {text!r}")
            self.setText("" if self._value is None else fmt_number(self._value))
            return
        self._mark(False)
        self.setText(self._format(v))
        if v != self._value:
            self._value = v
            self.valueEdited.emit(float(v))


class VectorEdit(QWidget):
    """n number fields in a row; ``valueEdited(tuple)`` when any of them is edited."""

    valueEdited = Signal(tuple)

    def __init__(self, values=(0.0, 0.0, 0.0), labels=None, parent: QWidget | None = None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(3)
        self.edits: list[NumberEdit] = []
        for k, v in enumerate(values):
            e = NumberEdit(v)
            e.setMinimumWidth(44)
            if labels:
                e.setPlaceholderText(labels[k])
                e.setToolTip(labels[k])
            e.valueEdited.connect(self._edited)
            lay.addWidget(e)
            self.edits.append(e)

    def value(self) -> tuple:
        return tuple(e.value() for e in self.edits)

    def setValue(self, values) -> None:  # noqa: N802
        for e, v in zip(self.edits, values):
            e.setValue(v)

    def _edited(self, _v) -> None:
        self.valueEdited.emit(self.value())


class MessageBar(QFrame):
    """An inline, dismissable message (info / warning / error) above a view."""

    linkActivated = Signal(str)

    STYLES = {
        "info": ("#e8f1fb", "#1f5f99", "#9cc3e6"),
        "warning": ("#fff5e0", "#7a5200", "#f0c36d"),
        "error": ("#fde8e7", "#9b1c1c", "#f1a9a4"),
    }
    #: Qt's own message-box icons: drawn by the style, so never a glyph the font may lack
    #: (an emoji such as U+26D4 rendered as an empty box with the DejaVu fonts)
    ICONS = {
        "info": QStyle.SP_MessageBoxInformation,
        "warning": QStyle.SP_MessageBoxWarning,
        "error": QStyle.SP_MessageBoxCritical,
    }
    ICON_PX = 16

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("MessageBar")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 4, 4)
        self.icon = QLabel()
        self.icon.setObjectName("messageIcon")
        self.icon.setFixedSize(self.ICON_PX, self.ICON_PX)
        lay.addWidget(self.icon, 0, Qt.AlignTop)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse | Qt.LinksAccessibleByMouse)
        self.label.linkActivated.connect(self.linkActivated)
        self.label.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        lay.addWidget(self.label, 1)
        self.close_btn = QToolButton()
        self.close_btn.setText("✕")
        self.close_btn.setAutoRaise(True)
        self.close_btn.setToolTip("Dismiss")
        self.close_btn.clicked.connect(self.hide)
        lay.addWidget(self.close_btn)
        self.level = "info"
        self.hide()

    def show_message(self, level: str, text: str, closable: bool = True) -> None:
        bg, fg, border = self.STYLES.get(level, self.STYLES["info"])
        self.level = level
        self.setStyleSheet(f"QFrame#MessageBar {{ background: {bg}; border: 1px solid {border}; "
                           f"border-radius: 4px; }} QLabel {{ color: {fg}; }}")
        style = self.style() or QApplication.style()
        icon = style.standardIcon(self.ICONS.get(level, QStyle.SP_MessageBoxInformation), None, self)
        self.icon.setPixmap(icon.pixmap(self.ICON_PX, self.ICON_PX))
        self.label.setText(text)
        self.close_btn.setVisible(closable)
        self.show()

    def text(self) -> str:
        return self.label.text()


def color_icon(color: str, size: int = 12) -> QIcon:
    pm = QPixmap(size, size)
    pm.fill(Qt.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.Antialiasing)
    p.setBrush(QColor(color))
    p.setPen(QColor(color).darker(130))
    p.drawRoundedRect(1, 1, size - 2, size - 2, 2, 2)
    p.end()
    return QIcon(pm)
