"""``linkwork``: the engine's command line with the desktop application's front ends."""

from __future__ import annotations

import sys


def _refuse(msg: str) -> int:
    print(f"linkwork: {msg}", file=sys.stderr)
    return 2  # engine.cli.EXIT_REFUSED


def gui(argv: list[str]) -> int:
    """``linkwork [FILE.mech.json]``: open the window."""
    try:
        from linkwork.app.main import main as gui_main
    except ImportError as exc:
        return _refuse(f"the desktop application is not available ({exc})")
    return gui_main(argv)


def report(argv: list[str]) -> int:
    """``linkwork report``: the application's exporters, on Qt's offscreen platform."""
    try:
        from linkwork.app.report import main as report_main
    except ImportError as exc:
        return _refuse(f"linkwork report needs the desktop application's libraries ({exc})")
    return report_main(argv)


def selftest(argv: list[str]) -> int:
    """``linkwork --selftest``: the whole product end to end (app/selftest.py)."""
    try:
        from linkwork.app.selftest import main as selftest_main
    except ImportError as exc:
        return _refuse(f"the self-test needs the desktop application ({exc})")
    return selftest_main(argv)


FRONT_ENDS = {"gui": gui, "report": report, "selftest": selftest}


def main(argv: list[str] | None = None) -> int:
    from linkwork.engine.cli import main as engine_main

    return engine_main(argv, front_ends=FRONT_ENDS)


if __name__ == "__main__":
    sys.exit(main())
