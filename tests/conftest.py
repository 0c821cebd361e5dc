"""Test-session settings shared by the engine and app tests."""

import os

from . import fuzzing
from .fuzzing import fuzz_counts  # noqa: F401 -- the counts of the fuzz and differential tests

# The suite runs in two xdist workers on two cores: one numba thread per worker, or
# the workers' OpenMP thread pools spin against each other (docs/benchmarks.md).
# Tests that exercise threading set the count themselves.
os.environ.setdefault("NUMBA_NUM_THREADS", "2")


def pytest_addoption(parser):
    fuzzing.addoption(parser)  # --fuzz-long


def pytest_configure(config):
    import numba

    numba.set_num_threads(1)
    fuzzing.configure(config)


def pytest_runtest_logreport(report):
    fuzzing.logreport(report)


def pytest_terminal_summary(terminalreporter, config):
    fuzzing.terminal_summary(terminalreporter, config)
