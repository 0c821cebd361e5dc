"""The counting of the fuzz and differential tests (tests/fuzzing.py): the counts of
xdist workers add up in the controller's summary, and ``--fuzz-long`` scales the
examples.  A small suite in a temporary folder, run by pytest in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
from tests import fuzzing
from tests.fuzzing import fuzz_counts  # noqa: F401


def pytest_addoption(parser):
    fuzzing.addoption(parser)


def pytest_configure(config):
    fuzzing.configure(config)


def pytest_runtest_logreport(report):
    fuzzing.logreport(report)


def pytest_terminal_summary(terminalreporter, config):
    fuzzing.terminal_summary(terminalreporter, config)
"""

TESTS = """
import pytest

from tests import fuzzing


@pytest.mark.parametrize("k", range(6))
def test_cases(k, fuzz_counts):
    fuzz_counts["tried"] += k
    fuzz_counts["silent disagreements"] += 0


def test_scaled(fuzz_counts):
    fuzz_counts["examples"] += fuzzing.examples(3)
"""


def _pytest(folder: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                        *args, str(folder)], capture_output=True, text=True, cwd=folder, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_worker_counts_add_up_in_the_summary_and_fuzz_long_scales(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_counted.py").write_text(TESTS)
    out = _pytest(tmp_path, "-n", "2")
    assert "fuzz and differential counts" in out and "--fuzz-long" not in out
    assert "test_counted.py::test_cases: tried 15, silent disagreements 0" in out  # 0+1+...+5, both workers
    assert "test_counted.py::test_scaled: examples 3" in out
    assert "total: tried 15, silent disagreements 0, examples 3" in out
    out = _pytest(tmp_path, "--fuzz-long")
    assert "fuzz and differential counts (--fuzz-long)" in out and "test_scaled: examples 30" in out
