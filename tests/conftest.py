"""Test-session settings shared by the engine and app tests."""

import os

# The suite runs in two xdist workers on two cores: one numba thread per worker, or
# the workers' OpenMP thread pools spin against each other (docs/benchmarks.md).
# Tests that exercise threading set the count themselves.
os.environ.setdefault("NUMBA_NUM_THREADS", "2")


def pytest_configure(config):
    import numba

    numba.set_num_threads(1)
