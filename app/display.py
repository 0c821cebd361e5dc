"""Is there a screen for the desktop application?  (No Qt import: Qt aborts the
process when its platform plugin finds no display, so the question is asked first.)

``python -m linkwork.app.display`` exits 0 when there is one and otherwise prints the
one-line explanation and exits 1; ``make run`` uses it to choose between the
application and a headless run of the example.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

#: how to get a display, for the one-line message
HOW = ("run it in a desktop session, over `ssh -X`, or under a virtual screen: "
       "`xvfb-run -a linkwork FILE` (Debian/Ubuntu: apt-get install xvfb xauth); "
       "`linkwork report FILE` runs a mechanism headless")


def display_problem(env=None) -> str | None:
    """None if a display can be used, otherwise why not (one line, no advice).

    Qt's own platform choice (``QT_QPA_PLATFORM``) is respected: ``offscreen`` and the
    other non-X platforms need no display.  A local X display (``:N``) is checked by
    its socket, so a stale ``DISPLAY`` is caught too; a remote one is trusted.
    """
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return None  # Windows and macOS always have their own platform
    platform = env.get("QT_QPA_PLATFORM", "").split(":")[0]
    if platform and platform not in ("xcb", "wayland", "wayland-egl"):
        return None
    if env.get("WAYLAND_DISPLAY") and platform != "xcb":
        return None
    display = env.get("DISPLAY", "")
    if not display:
        return "no display found (DISPLAY is not set)"
    m = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
    if m and not Path(f"/tmp/.X11-unix/X{m.group(1)}").exists():
        return f"no display found (DISPLAY={display}, but no X server listens there)"
    return None


def no_display_message(problem: str) -> str:
    return f"linkwork: {problem}: the desktop application needs one -- {HOW}"


def main() -> int:
    problem = display_problem()
    if problem is None:
        return 0
    print(no_display_message(problem), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
