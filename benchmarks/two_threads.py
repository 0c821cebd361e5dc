"""One thread against two for ``dca`` (or ``hdca``) on the benchmark chains, interleaved,
and what two threads of this machine give at most.

The second core of this shared machine comes and goes with other tenants
(docs/performance.md, "Two threads on this shared machine are bimodal"): a
``linkwork bench`` run times one and two threads minutes apart, so its speed-up is
worth only as much as the window it fell in.  This script times, in one process and
``--rounds`` times in turn, so that a slow window shows in every column:

- ``one thread``: a right-hand side on one thread;
- ``two threads``: on two threads as the formulation runs them (``dca``: an unbranched
  chain in two roles beside one another, ``_evaluate_chain``; ``hdca``: the two-part
  tree);
- ``two threads, two-part tree`` (``dca`` only): the chain cut into two parts that
  merge, as ``dca`` ran it on two threads before the two roles;
- ``ceiling``: two one-thread right-hand sides at once, one on each core, on two copies
  of the formulation that share nothing -- the time of one of them (the slower) per
  pair over one thread's time per call.  No two-thread right-hand side can do better
  than the machine runs two independent ones: this is the limit to judge the others by.

    python benchmarks/two_threads.py --n 1024 --rounds 3

prints, per chain kind, the microseconds per right-hand side of each round and the
speed-ups over one thread (for the ceiling: 2 x one thread's time over the pair's).
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _pair(kernels, states, outs, seconds=0.3) -> float:
    """Two kernels run at once, each in its own Python thread (numba releases the GIL):
    the wall time of the slower one's calls, per call, once each has run ``seconds``."""
    calls = [0, 0]
    stop = threading.Event()

    def loop(i):
        k, y, out = kernels[i], states[i], outs[i]
        while not stop.is_set():
            k(y, out)
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


def main(argv=None) -> int:
    import numba
    import numpy as np

    import engine.formulations.dca as dca_module
    from engine.studies.bench import _time_call, chain_formulation

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formulation", default="dca", choices=("dca", "hdca"))
    a = ap.parse_args(argv)
    if numba.config.NUMBA_NUM_THREADS < 2:
        print("needs two cores")
        return 1
    own_layout = dca_module.DCAFormulation.__dict__["layout_threads"]
    two_part = classmethod(lambda cls, model, threads: threads)
    configs = [("one thread", 1, own_layout), ("two threads", 2, own_layout)]
    if a.formulation == "dca":
        configs.append(("two threads, two-part tree", 2, two_part))
    try:
        for kind in ("spherical", "revolute"):
            times: dict[str, list[float]] = {label: [] for label, _, _ in configs}
            times["ceiling (a pair at once)"] = []
            forms = {}
            for label, threads, layout in configs:
                dca_module.DCAFormulation.layout_threads = layout
                forms[label] = chain_formulation(a.formulation, a.n, kind, threads)
            dca_module.DCAFormulation.layout_threads = own_layout
            pair = [chain_formulation(a.formulation, a.n, kind, 1) for _ in range(2)]
            kernels = [f._kernel for f, _ in pair]
            states = [y.copy() for _, y in pair]
            outs = [np.empty_like(y) for y in states]
            for _ in range(a.rounds):
                for label, threads, _ in configs:
                    f, y = forms[label]
                    numba.set_num_threads(threads)
                    times[label].append(_time_call(lambda: f.rhs(0.0, y)) * 1e6)
                numba.set_num_threads(1)
                times["ceiling (a pair at once)"].append(_pair(kernels, states, outs) * 1e6)
            print(f"{a.formulation}, {kind} chain of {a.n} bodies, us per right-hand side, round by round "
                  f"(speed-up over one thread in the same round):")
            one = times["one thread"]
            for label, ts in times.items():
                gain = "" if label == "one thread" else "   x " + " ".join(
                    f"{(2 if label.startswith('ceiling') else 1) * o / t:.2f}" for o, t in zip(one, ts))
                print(f"  {label:30s} " + "  ".join(f"{t:7.1f}" for t in ts) + gain)
    finally:
        dca_module.DCAFormulation.layout_threads = own_layout
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
