"""Without a display the application says so in one line and exits 2 -- never a Qt
abort."""

import os
import subprocess
import sys

import pytest

from linkwork.app.display import display_problem


@pytest.mark.parametrize("env,problem", [
    ({}, "DISPLAY is not set"),
    ({"DISPLAY": ":987"}, "no X server"),
    ({"DISPLAY": ":987", "QT_QPA_PLATFORM": "offscreen"}, None),
    ({"WAYLAND_DISPLAY": "wayland-0"}, None),
    ({"DISPLAY": "remote-host:0"}, None),
])
def test_display_problem(env, problem):
    got = display_problem(env)
    if problem is None:
        assert got is None
    else:
        assert problem in got


def test_gui_without_display_prints_one_line_and_exits_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    r = subprocess.run([sys.executable, "-m", "linkwork"], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no display found" in lines[0] and "xvfb-run" in lines[0]
    assert "xcb" not in r.stderr
