"""The notification sink's view: a log dock and the status-bar/banner presentation."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from linkwork.app.session import Session, Subscriptions
from linkwork.app.session.notifications import Notification

COLORS = {"info": "#1f5f99", "warning": "#7a5200", "error": "#9b1c1c"}


class MessagesPanel(QWidget):
    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("MessagesPanel")
        self.session = session
        self._subs = Subscriptions()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.tree = QTreeWidget()
        self.tree.setObjectName("messagesTree")
        self.tree.setHeaderLabels(["Time", "Level", "Message"])
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 64)
        self.tree.setColumnWidth(1, 60)
        self.tree.setWordWrap(True)
        lay.addWidget(self.tree, 1)
        clear = QPushButton("Clear")
        clear.clicked.connect(self.tree.clear)
        lay.addWidget(clear, 0, Qt.AlignRight)
        for n in session.notifications.log:
            self.add(n)
        self._subs.connect(session.notifications.posted, self.add)

    def close_panel(self) -> None:
        self._subs.disconnect_all()

    def add(self, n: Notification) -> None:
        it = QTreeWidgetItem([time.strftime("%H:%M:%S", time.localtime(n.when)), n.level, n.text])
        it.setForeground(2, QBrush(QColor(COLORS.get(n.level, "#000"))))
        it.setToolTip(2, n.text + (f"\n\n{n.detail}" if n.detail else ""))
        self.tree.addTopLevelItem(it)
        self.tree.scrollToItem(it)

    def messages(self) -> list[str]:
        return [self.tree.topLevelItem(i).text(2) for i in range(self.tree.topLevelItemCount())]
