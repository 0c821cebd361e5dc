"""One thread against two for ``dca`` on chains and random trees of several sizes, and
the thread count a run left automatic takes (``engine/threads.py``, ``plan``).

The numbers behind ``threads.DCA_CHAIN_SERIAL_BELOW`` and
``threads.DCA_TREE_SERIAL_BELOW``: in one process, ``--rounds`` times in turn, a
right-hand side with one thread and with two, each on the tree its thread count takes (``assembly.cheaper_tree``)::

    python benchmarks/thread_choice.py --rounds 3

prints, per mechanism, the best microseconds per right-hand side on one and on two
threads, their ratio (two over one: below 1, the second thread pays) and the automatic
choice on this machine.  The second core of a shared machine comes and goes
(docs/benchmarks.md, "Measuring on a shared machine"): a round whose
two-thread column is far above the others fell in a slow window.
"""
from __future__ import annotations

import argparse


def cases(sizes):
    from linkwork.engine.generators import chain, random_mechanism

    for n in sizes:
        yield f"spherical chain {n}", chain(n, "spherical", planar=False)
        yield f"revolute chain {n}", chain(n, "revolute", planar=True)
    for n, seed in ((128, 3), (256, 1), (512, 4)):
        if n <= max(sizes):
            yield f"random tree {n}", random_mechanism(seed, n, joint_types=("revolute", "spherical"))


def main(argv=None) -> int:
    import numba
    import numpy as np

    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.model import build_model
    from linkwork.engine.simulation import Settings, Simulation
    from linkwork.engine.studies.timing import time_call as _time_call
    from linkwork.engine.threads import plan

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formulation", default="dca", choices=("dca", "hdca"))
    a = ap.parse_args(argv)
    if numba.config.NUMBA_NUM_THREADS < 2:
        print("one core: nothing to compare (NUMBA_NUM_THREADS = 1)")
        return 1
    print(f"{a.formulation}, us per right-hand side, best of {a.rounds} rounds")
    print(f"{'mechanism':24s} {'1 thread':>10s} {'2 threads':>10s} {'2 / 1':>7s}  automatic")
    for label, spec in cases(a.sizes):
        model = build_model(spec)
        times = {1: [], 2: []}
        for _ in range(a.rounds):
            for threads in (1, 2):
                numba.set_num_threads(threads)
                form = Simulation(model, Settings(formulation=a.formulation, threads=threads)).formulation
                y = form.initial_state()
                y[model.nq:] = np.random.default_rng(0).normal(scale=0.3, size=model.nv)
                times[threads].append(_time_call(lambda: form.rhs(0.0, y)) * 1e6)
        auto = plan(model, REGISTRY[a.formulation], None).threads
        one, two = min(times[1]), min(times[2])
        print(f"{label:24s} {one:10.1f} {two:10.1f} {two / one:7.2f}  {auto} thread{'s' if auto > 1 else ''}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
