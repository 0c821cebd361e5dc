"""One thread against two for ``dca`` (or ``hdca``) on the benchmark chains, interleaved.

The second core of this shared machine comes and goes with other tenants
(docs/performance.md, "Two threads on this shared machine are bimodal"): a
``linkwork bench`` run times one and two threads minutes apart, so its speed-up is
worth only as much as the window it fell in.  This script times, in one process and
``--rounds`` times in turn, a right-hand side on one thread, on two threads over the tree
two threads take (``topology.cheaper_tree``), and on two threads over the one-thread tree
(parallel body loops only), so that a slow window shows as such in every column::

    python benchmarks/two_threads.py --n 1024 --rounds 3

prints, per chain kind, the microseconds per right-hand side of each round.
"""
from __future__ import annotations

import argparse


def main(argv=None) -> int:
    import engine.formulations.dca as dca_module
    from engine import topology
    from engine.studies.bench import _time_call, chain_formulation

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formulation", default="dca", choices=("dca", "hdca"))
    a = ap.parse_args(argv)
    chosen = dca_module.cheaper_tree
    configs = [("one thread", 1, chosen), ("two threads", 2, chosen),
               ("two threads, one-thread tree", 2,
                lambda model, rows, threads, balanced=None, ground_last=False: topology.serial_assembly_tree(model, ground_last))]
    try:
        for kind in ("spherical", "revolute"):
            times: dict[str, list[float]] = {label: [] for label, _, _ in configs}
            for _ in range(a.rounds):
                for label, threads, tree in configs:
                    dca_module.cheaper_tree = tree
                    f, y = chain_formulation(a.formulation, a.n, kind, threads)
                    times[label].append(_time_call(lambda: f.rhs(0.0, y)) * 1e6)
            print(f"{a.formulation}, {kind} chain of {a.n} bodies, us per right-hand side, round by round:")
            for label, ts in times.items():
                print(f"  {label:30s} " + "  ".join(f"{t:7.1f}" for t in ts))
    finally:
        dca_module.cheaper_tree = chosen
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
