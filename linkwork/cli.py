"""``linkwork``: the engine's command line with the desktop application's front ends."""

from __future__ import annotations

import os
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


#: commands whose process ends as soon as their output is flushed: nothing of theirs is
#: left to tear down (their files are closed, they start no process or thread that
#: outlives them), and Python's own finalisation of a process that loaded compiled
#: kernels -- numba's and LLVM's objects freed one by one -- takes 0.15-0.3 s, a third
#: of a short run's wall time (docs/compile-time.md, "Start-up")
QUICK_EXIT = frozenset({"run", "info", "examples"})


def main(argv: list[str] | None = None) -> int:
    """The ``linkwork`` command (``argv`` None: this process's own arguments, and a
    :data:`QUICK_EXIT` command then ends the process itself once its output is out)."""
    from linkwork.engine.cli import main as engine_main

    status = engine_main(argv, front_ends=FRONT_ENDS)
    if argv is None and sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: finish as Python would
            return status
        os._exit(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
