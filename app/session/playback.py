"""Playback time shared by the 3-D view, the time slider and the plots' cursor (no Qt)."""

from __future__ import annotations

from .events import Event

SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


class Playback:
    """Which instant of the current run is shown.

    ``live``: while a run is running, the views follow its newest row.
    Events: ``time_changed(t)``, ``playing_changed(bool)``, ``speed_changed(x)``,
    ``live_changed(bool)``.
    """

    def __init__(self):
        self.time_changed = Event("time_changed")
        self.playing_changed = Event("playing_changed")
        self.speed_changed = Event("speed_changed")
        self.live_changed = Event("live_changed")
        self._t = 0.0
        self._playing = False
        self._speed = 1.0
        self._live = False
        self.loop = True

    @property
    def time(self) -> float:
        return self._t

    def set_time(self, t: float) -> None:
        t = float(t)
        if t != self._t:
            self._t = t
            self.time_changed.emit(t)

    @property
    def playing(self) -> bool:
        return self._playing

    def set_playing(self, playing: bool) -> None:
        if bool(playing) != self._playing:
            self._playing = bool(playing)
            self.playing_changed.emit(self._playing)

    @property
    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ValueError("speed must be > 0")
        if speed != self._speed:
            self._speed = float(speed)
            self.speed_changed.emit(self._speed)

    @property
    def live(self) -> bool:
        return self._live

    def set_live(self, live: bool) -> None:
        if bool(live) != self._live:
            self._live = bool(live)
            self.live_changed.emit(self._live)

    def advance(self, wall_dt: float, t_end: float) -> float:
        """Move on by ``wall_dt`` seconds of wall time at the current speed (looping)."""
        t = self._t + wall_dt * self._speed
        if t > t_end:
            if self.loop and t_end > 0:
                t = 0.0 if self._t >= t_end else t_end
            else:
                t = t_end
                self.set_playing(False)
        self.set_time(t)
        return t
