"""A tiny event mechanism (pure Python, no Qt).

An :class:`Event` is a list of callbacks; :meth:`Event.emit` calls them in
order.  Models own events as attributes and emit them only when a value
really changes, so subscribers can redraw without checking.  Bound methods are
held strongly: subscribers disconnect when they close (napari-style
``_vispy`` layers do the same in their ``close``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

log = logging.getLogger(__name__)


class Event:
    """Callbacks called with the emitted arguments."""

    __slots__ = ("name", "_callbacks", "_blocked")

    def __init__(self, name: str = ""):
        self.name = name
        self._callbacks: list[Callable[..., Any]] = []
        self._blocked = 0

    def connect(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """Subscribe ``callback``; returns it so this can be used as a decorator."""
        if callback not in self._callbacks:
            self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable[..., Any] | None = None) -> None:
        """Unsubscribe ``callback`` (all callbacks if None); unknown callbacks are ignored."""
        if callback is None:
            self._callbacks.clear()
        else:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

    @property
    def callbacks(self) -> tuple[Callable[..., Any], ...]:
        return tuple(self._callbacks)

    def emit(self, *args: Any) -> None:
        if self._blocked:
            return
        for cb in list(self._callbacks):
            cb(*args)

    def blocked(self) -> "_Blocker":
        """Context manager that suppresses emission."""
        return _Blocker(self)

    def __repr__(self) -> str:
        return f"<Event {self.name} ({len(self._callbacks)} callbacks)>"


class _Blocker:
    def __init__(self, ev: Event):
        self.ev = ev

    def __enter__(self):
        self.ev._blocked += 1
        return self.ev

    def __exit__(self, *exc):
        self.ev._blocked -= 1
        return False


class Subscriptions:
    """Remembers (event, callback) pairs so a view can drop them all on close."""

    def __init__(self):
        self._pairs: list[tuple[Event, Callable[..., Any]]] = []

    def connect(self, event: Event, callback: Callable[..., Any]) -> None:
        event.connect(callback)
        self._pairs.append((event, callback))

    def disconnect_all(self) -> None:
        for ev, cb in self._pairs:
            ev.disconnect(cb)
        self._pairs.clear()

    def __len__(self) -> int:
        return len(self._pairs)
