"""The one notification sink every error and notice goes to (no Qt)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from .events import Event

log = logging.getLogger("linkwork.app")

LEVELS = ("info", "warning", "error")


@dataclass(frozen=True)
class Notification:
    level: str
    text: str
    detail: str = ""
    source: str = ""
    when: float = field(default_factory=time.time)


class Notifications:
    """Collects notifications; views subscribe to ``posted(notification)``."""

    def __init__(self, keep: int = 500):
        self.posted = Event("posted")
        self.log: list[Notification] = []
        self._keep = keep

    def notify(self, level: str, text: str, detail: str = "", source: str = "") -> Notification:
        if level not in LEVELS:
            raise ValueError(level)
        n = Notification(level, text, detail, source)
        self.log.append(n)
        del self.log[:-self._keep]
        getattr(log, {"info": "info", "warning": "warning", "error": "error"}[level])(
            "%s%s", text, f" ({detail})" if detail else "")
        self.posted.emit(n)
        return n

    def info(self, text: str, **kw) -> Notification:
        return self.notify("info", text, **kw)

    def warning(self, text: str, **kw) -> Notification:
        return self.notify("warning", text, **kw)

    def error(self, text: str, **kw) -> Notification:
        return self.notify("error", text, **kw)
