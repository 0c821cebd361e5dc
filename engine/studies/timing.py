"""Timing a call on a shared, noisy machine, and naming the machine.

Every figure is the best of repeated batches, each batch long enough (>= 50 ms by
default) that the clock's resolution does not matter.  :func:`time_interleaved` times
the entries of one table row in turns, so that a slow window of the machine falls on
all of them alike.
"""

from __future__ import annotations

import itertools
import platform
import time
from pathlib import Path

import numpy as np


def _per_call(f, n: int) -> float:
    """Seconds per call of ``f`` over a batch of ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n


def _batch(f, min_batch: float) -> tuple[int, float]:
    """After one untimed call, the smallest power of two of calls of ``f`` that takes
    ``min_batch`` seconds or more: (that count, seconds per call in that batch)."""
    f()
    n = 1
    while (per := _per_call(f, n)) * n < min_batch:
        n *= 2
    return n, per


def time_call(f, min_batch=0.05, repeats=5) -> float:
    """Seconds per call of ``f``: the best of ``repeats`` batches of at least ``min_batch`` s."""
    n, best = _batch(f, min_batch)
    for _ in range(repeats - 1):
        best = min(best, _per_call(f, n))
    return best


def rhs_call(form, t: float, y: np.ndarray):
    """A call of ``form``'s right-hand side at time ``t`` to time, at ``y`` and at ``y``
    with its coordinates moved by 1e-12 in turn.  ``dense`` keeps what depends on the
    coordinates alone (poses, mass matrix, its factor, the closure rows' SVD) and takes
    it again at the same coordinates bit for bit, as an output instant's evaluation
    does after a step's projection; an integrator's other stages are at new
    coordinates, and a timing at one state would time the shortcut alone (on ladder-4,
    6 us against 23 us).  The two states' right-hand sides cost the same."""
    nq = form.model.nq
    moved = np.array(y, dtype=float)
    moved[:nq] += 1e-12
    nxt = itertools.cycle((y, moved)).__next__
    return lambda: form.rhs(t, nxt())


def time_interleaved(calls: dict, min_batch=0.05, rounds=5) -> dict:
    """Seconds per call of each of ``calls`` (name -> callable), timed in turns: every
    round times one batch of each callable, and each keeps its best round.  On a shared
    machine whose speed changes over seconds, a slow window then falls on every entry
    of a row alike, not on whichever one was being timed in it (as with
    :func:`time_call` run for each in turn), and the best rounds are spread over the
    whole row's time."""
    batch = {name: _batch(f, min_batch) for name, f in calls.items()}
    best = {name: per for name, (_, per) in batch.items()}
    for _ in range(rounds - 1):
        for name, f in calls.items():
            best[name] = min(best[name], _per_call(f, batch[name][0]))
    return best


def cpu_name() -> str:
    """The processor's model name (Linux ``/proc/cpuinfo``), or what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
