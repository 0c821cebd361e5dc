"""The fuzz and differential tests' scale and counts (docs/install.md, "Fuzzing and
differential tests").

Scale: the default suite runs bounded versions; ``pytest --fuzz-long`` multiplies the
hypothesis example counts by :data:`FACTOR` and widens the differential cases (seeds
0-299, loops 0-3, more geared mechanisms) for release checks.  The test modules read
:data:`LONG` when they are imported, which is after ``pytest_configure``.

Counts: a test takes the ``fuzz_counts`` fixture (a :class:`collections.Counter`) and adds
what it did -- files tried, refused, accepted; runs, agreements, exit-3 stops, silent
disagreements.  At teardown the counter goes into the test report's ``user_properties``,
which pytest-xdist sends from the workers to the controlling process, where
``pytest_runtest_logreport`` adds it up and ``pytest_terminal_summary`` prints the totals
per test function (the parametrised cases of one function summed) and per count.
"""

from __future__ import annotations

import collections

import pytest

#: set from ``--fuzz-long`` in ``pytest_configure``
LONG = False
#: how many times more hypothesis examples ``--fuzz-long`` runs
FACTOR = 10
#: the key of the counts in a report's ``user_properties``
PROPERTY = "fuzz_counts"

_totals: dict[str, collections.Counter] = {}


def examples(n: int) -> int:
    """``n`` hypothesis examples, or ``FACTOR * n`` with ``--fuzz-long``."""
    return n * FACTOR if LONG else n


def addoption(parser) -> None:
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help=f"fuzz and differential tests at release scale: {FACTOR}x the hypothesis examples, "
                          "differential seeds 0-299 with loops 0-3 (docs/install.md)")


def configure(config) -> None:
    global LONG
    LONG = bool(config.getoption("fuzz_long", default=False))


@pytest.fixture
def fuzz_counts(request):
    """A Counter the test adds its counts to; reported at teardown (see the module docstring).
    A ``@given`` test shares it over its examples (so its health check
    ``function_scoped_fixture`` is suppressed on purpose)."""
    counts = collections.Counter()
    yield counts
    request.node.user_properties.append((PROPERTY, dict(counts)))


def logreport(report) -> None:
    if report.when != "teardown":
        return
    for name, value in report.user_properties:
        if name == PROPERTY and isinstance(value, dict):
            _totals.setdefault(report.nodeid.split("[")[0], collections.Counter()).update(value)


def _line(counts) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def terminal_summary(terminalreporter, config) -> None:
    if hasattr(config, "workerinput") or not _totals:
        return
    tr = terminalreporter
    tr.write_sep("=", f"fuzz and differential counts{' (--fuzz-long)' if LONG else ''}")
    total = collections.Counter()
    for test in sorted(_totals):
        tr.write_line(f"{test}: {_line(_totals[test])}")
        total.update(_totals[test])
    tr.write_line(f"total: {_line(total)}")
