"""Can two numba threads run two recursions body by body, one trailing the other?

``dca`` on two threads runs a chain's recursions beside one another, the second thread
a few bodies behind the first (docs/dca-two-threads.md, "Two threads on one chain"): a
two-part tree leaves the busier thread most of the work.  numba's ``prange`` has no way for one
iteration to wait for another, so this probe gives it one -- a progress counter written
with an atomic store-release and read with an atomic load-acquire (``engine.atomics``,
which ``dca``'s two-thread chain kernel now uses) -- and measures, on synthetic per-body
work of the matrix pass's kind (a 6 x 6 product per body, "A") and of the bias pass's (a 6 x 6 by 6 product, "B", which
reads A's result for the same body), A then B on one thread against A and B in one
``prange(2)``, B spinning until A has passed its body::

    python benchmarks/pipeline_probe.py

It prints, round by round, the microseconds of A alone, B alone, A then B, and the two
overlapped.  A probe of the mechanism's cost on synthetic work; the engine's use of it
is ``dca``'s ``_evaluate_chain`` (docs/dca-two-threads.md, "Two threads on one chain").
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from linkwork.engine.atomics import load_acquire as _load_acquire  # noqa: E402
from linkwork.engine.atomics import store_release as _store_release  # noqa: E402


@njit(inline="always")
def _step_a(k, M, out):
    s = 0.0
    for a in range(6):
        for b in range(6):
            t = 0.0
            for c in range(6):
                t += M[k, a, c] * M[k, c, b]
            out[k, a, b] = t + 1e-3 * s
            s += t
    return s


@njit(inline="always")
def _step_b(k, out, w):
    t = 0.0
    for a in range(6):
        for b in range(6):
            t += out[k, a, b] * w[a]
    w[k % 6] = t * 1e-9
    return t


@njit(nogil=True)
def only_a(M, out):
    acc = 0.0
    for k in range(M.shape[0]):
        acc += _step_a(k, M, out)
    return acc


@njit(nogil=True)
def only_b(out, w):
    acc = 0.0
    for k in range(out.shape[0]):
        acc += _step_b(k, out, w)
    return acc


@njit(nogil=True)
def one_thread(M, out, w):
    """A, then B, on one thread."""
    return only_a(M, out) + only_b(out, w)


@njit(parallel=True, nogil=True)
def overlapped(M, out, w, progress):
    """A on one thread, B on the other a body or more behind it.  Needs two threads: on
    one, B would wait for ever if its iteration ran first (numba's static schedule runs
    iteration 0 first)."""
    n = M.shape[0]
    _store_release(progress, 0, 0)
    res = np.zeros(2)
    for role in prange(2):
        acc = 0.0
        if role == 0:
            for k in range(n):
                acc += _step_a(k, M, out)
                _store_release(progress, 0, k + 1)
        else:
            for k in range(n):
                while _load_acquire(progress, 0) <= k:
                    pass
                acc += _step_b(k, out, w)
        res[role] = acc
    return res[0] + res[1]


def _best(fn, reps=2000, rounds=5):
    best = 1e9
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main() -> int:
    if numba.config.NUMBA_NUM_THREADS < 2:
        print("needs two cores")
        return 1
    numba.set_num_threads(2)
    n = 1024
    M = np.random.default_rng(0).normal(size=(n, 6, 6)) * 0.3
    out, w, progress = np.zeros((n, 6, 6)), np.ones(6), np.zeros(8, dtype=np.int64)
    a, b = one_thread(M, out, w.copy()), overlapped(M, out, w.copy(), progress)
    print(f"same result: {a!r} and {b!r} (relative difference {abs(a - b) / abs(a):.1e})")
    only_a(M, out)
    only_b(out, w)
    for r in range(3):
        print(f"round {r + 1}: A {_best(lambda: only_a(M, out)):.1f} us, B {_best(lambda: only_b(out, w)):.1f} us, "
              f"A then B {_best(lambda: one_thread(M, out, w)):.1f} us, "
              f"overlapped {_best(lambda: overlapped(M, out, w, progress)):.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
