"""One thread against two for ``dca`` (or ``hdca``) on the benchmark chains, interleaved,
and what two threads of this machine give at most.

The second core of this shared machine comes and goes with other tenants
(docs/benchmarks.md, "Measuring on a shared machine"): a
``linkwork bench`` run times one and two threads minutes apart, so its speed-up is
worth only as much as the window it fell in.  This script times, in one process and
``--rounds`` times in turn, so that a slow window shows in every column:

- ``one thread``: a right-hand side on one thread;
- ``two threads``: on two threads as the formulation runs them (``dca``: an unbranched
  chain in two roles beside one another, ``_evaluate_chain``, or one thread alone where
  ``rhs``'s timing found that faster, ``_choose_kernels``; ``hdca``: the two-part tree);
- ``two roles, no choice`` (``dca`` only): the two roles every call, whatever is faster;
- ``two threads, two-part tree`` (``dca`` only): the chain cut into two parts that
  merge, as ``dca`` ran it on two threads before the two roles;
- ``ceiling (a pair at once)``: two one-thread right-hand sides at once, one on each
  core, on two copies of the formulation that share nothing -- the time of the pair per
  call (both run in one numba parallel region, each its own calls) over one thread's
  time per call, doubled: what the machine gives two threads that each have the whole
  work and their own data.  Two copies read and write twice the memory of one (5-6 MB
  each at 1024 bodies, far beyond a core's 512 KB second-level cache), so where the
  cores share the memory system badly this is below what the arithmetic allows;
- ``ceiling, halves``: the same on two chains of half the length, one per core, over
  one thread's time on the whole chain: what *any* split of the chain between two
  threads gives at most in that round -- each thread exactly half the one-thread work,
  on data of its own, nothing passed between the threads and nothing merged.  The two
  roles share one copy of the data and pass every body's results between the cores;
  ``share of the halves ceiling`` is the two threads' speed-up over this bound;

and, in the same round, two figures of the machine itself that say which window the round
fell in:

- ``hand-over (ns)``: how long a cache line written by one core takes to reach the other
  (two threads take turns writing one counter; the time per turn).  The two roles hand
  every body's results from one core to the other, so their speed-up falls as this rises.
  On the shared 2-vCPU machines it is bimodal: about 50 ns (the two vCPUs near each
  other) or about 220-260 ns (far apart), from one second to the next;
- ``ceiling, arithmetic only``: as ``ceiling`` on a loop that only does arithmetic in
  registers: whether the two vCPUs are two cores at all (about 2) or share one (about 1).

    python benchmarks/two_threads.py --n 1024 --rounds 3

prints, per chain kind, the microseconds per right-hand side of each round and the
speed-ups over one thread (for the pair of whole chains: 2 x one thread's time over the
pair's), the two threads' share of the halves ceiling, then the round's hand-over time
and arithmetic-only ceiling.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _pair(kernels, states, outs, seconds=0.3) -> float:
    """Two kernels run at once, each in its own Python thread (numba releases the GIL):
    the wall time of the slower one's calls, per call, once each has run ``seconds``."""
    calls = [0, 0]
    stop = threading.Event()

    def loop(i):
        k, args = kernels[i], (states[i],) if outs[i] is None else (states[i], outs[i])
        while not stop.is_set():
            k(*args)
            calls[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return (time.perf_counter() - t0) / min(calls)


def _pair_kernel(kernel):
    """A numba parallel region in which two iterations each call ``kernel`` ``reps``
    times on arguments of their own, one per core (``kernel(desc, proto, y, out)``, a
    formulation's one-thread kernel).  In numba's own threads, as the two roles run:
    Python threads would hand the GIL over between calls."""
    from numba import njit, prange

    @njit(parallel=True, nogil=True)
    def pair(d0, p0, y0, o0, d1, p1, y1, o1, reps):
        for i in prange(2):
            for _ in range(reps):
                if i == 0:
                    kernel(d0, p0, y0, o0)
                else:
                    kernel(d1, p1, y1, o1)

    return pair


def _time_pair(pair, forms, reps=16) -> float:
    """Seconds per call of two one-thread formulations ``forms`` ((form, y) each) run at
    once, one per core: the slower one's time."""
    from linkwork.engine.studies.timing import time_call as _time_call

    args = []
    for f, y in forms:
        args += [f._kernel.desc, f._kernel.proto, y, np.empty_like(y)]
    return _time_call(lambda: pair(*args, reps)) / reps


def _machine_kernels():
    """The two probes of the machine (njit, built here so that a run without numba's
    threads still imports this script): a player of the hand-over game and a loop of
    arithmetic in registers."""
    from numba import njit

    from linkwork.engine.atomics import load_acquire, store_release

    @njit(nogil=True)
    def player(turn, me, turns):
        for r in range(turns):
            mine = 2 * r + me
            while load_acquire(turn, 0) != mine:
                pass
            store_release(turn, 0, mine + 1)

    @njit(nogil=True)
    def arithmetic(n):
        a, b, c, d = 1.0, 0.5, 0.25, 0.125
        for _ in range(n):
            a = a * 0.9999999 + 1e-9
            b = b * 0.9999998 + 1e-9
            c = c * 0.9999997 + 1e-9
            d = d * 0.9999996 + 1e-9
        return a + b + c + d

    return player, arithmetic


def _hand_over(player, turns=100_000) -> float:
    """Seconds per turn of two threads taking turns to write one int64 (one cache line
    moving from one core to the other and back, halved)."""
    turn = np.zeros(8, dtype=np.int64)
    threads = [threading.Thread(target=player, args=(turn, me, turns)) for me in (0, 1)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - t0) / (2 * turns)


def _arithmetic_ceiling(arithmetic, n=200_000, seconds=0.3) -> float:
    """Twice one thread's time per call of ``arithmetic`` over the time per call of a
    pair run at once, one per core."""
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        arithmetic(n)
        calls += 1
    one = (time.perf_counter() - t0) / calls
    return 2 * one / _pair([arithmetic, arithmetic], [n, n], [None, None], seconds)


def main(argv=None) -> int:
    import numba

    import linkwork.engine.formulations.dca as dca_module
    from linkwork.engine.studies.bench import chain_formulation
    from linkwork.engine.studies.timing import time_call as _time_call

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formulation", default="dca", choices=("dca", "hdca"))
    a = ap.parse_args(argv)
    if numba.config.NUMBA_NUM_THREADS < 2:
        print("needs two cores")
        return 1
    player, arithmetic = _machine_kernels()
    player(np.zeros(8, dtype=np.int64), 0, 1)
    arithmetic(1)
    own_layout = dca_module.DCAFormulation.__dict__["layout_threads"]
    two_part = classmethod(lambda cls, model, threads: threads)
    configs = [("one thread", 1, own_layout), ("two threads", 2, own_layout)]
    if a.formulation == "dca":
        configs.append(("two threads, two-part tree", 2, two_part))
    try:
        for kind in ("spherical", "revolute"):
            times: dict[str, list[float]] = {label: [] for label, _, _ in configs}
            if a.formulation == "dca":
                times["two roles, no choice"] = []
            times["ceiling (a pair at once)"] = []
            times["ceiling, halves"] = []
            machine: dict[str, list[float]] = {"hand-over (ns)": [], "ceiling, arithmetic only": []}
            forms = {}
            for label, threads, layout in configs:
                dca_module.DCAFormulation.layout_threads = layout
                forms[label] = chain_formulation(a.formulation, a.n, kind, threads)
            dca_module.DCAFormulation.layout_threads = own_layout
            wholes = [chain_formulation(a.formulation, a.n, kind, 1) for _ in range(2)]
            halves = [chain_formulation(a.formulation, a.n // 2, kind, 1) for _ in range(2)]
            pair = _pair_kernel(wholes[0][0]._kernel.kernel)
            for _ in range(a.rounds):
                for label, threads, _ in configs:
                    f, y = forms[label]
                    numba.set_num_threads(threads)
                    times[label].append(_time_call(lambda: f.rhs(0.0, y)) * 1e6)
                    if label == "two threads" and getattr(f, "two_roles", False):
                        turn = [0]

                        def roles():
                            turn[0] ^= 1
                            return f._roles[turn[0]].rates(y)

                        times["two roles, no choice"].append(_time_call(roles) * 1e6)
                numba.set_num_threads(2)
                times["ceiling (a pair at once)"].append(_time_pair(pair, wholes) * 1e6)
                times["ceiling, halves"].append(_time_pair(pair, halves) * 1e6)
                numba.set_num_threads(1)
                machine["hand-over (ns)"].append(_hand_over(player) * 1e9)
                machine["ceiling, arithmetic only"].append(_arithmetic_ceiling(arithmetic))
            print(f"{a.formulation}, {kind} chain of {a.n} bodies, us per right-hand side, round by round "
                  f"(speed-up over one thread in the same round):")
            one = times["one thread"]
            for label, ts in times.items():
                factor = 2 if label == "ceiling (a pair at once)" else 1
                gain = "" if label == "one thread" else "   x " + " ".join(
                    f"{factor * o / t:.2f}" for o, t in zip(one, ts))
                print(f"  {label:30s} " + "  ".join(f"{t:7.1f}" for t in ts) + gain)
            print(f"  {'share of the halves ceiling':30s} " + " " * (9 * a.rounds - 1) + "   x " + " ".join(
                f"{h / t:.2f}" for h, t in zip(times["ceiling, halves"], times["two threads"])))
            print(f"  {'hand-over (ns)':30s} " + "  ".join(f"{t:7.0f}" for t in machine["hand-over (ns)"]))
            print(f"  {'ceiling, arithmetic only':30s} " + " " * (9 * a.rounds - 1)
                  + "   x " + " ".join(f"{c:.2f}" for c in machine["ceiling, arithmetic only"]))
    finally:
        dca_module.DCAFormulation.layout_threads = own_layout
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
