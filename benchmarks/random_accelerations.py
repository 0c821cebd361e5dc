"""Every ODE formulation's accelerations against ``dense`` on random mechanisms, at one
instant: the quick general check (seconds for hundreds of mechanisms).

For each seed, ``engine.generators.random_mechanism`` builds a random tree of 3-24 bodies
(every joint type, forces, random joint rates) with 0-3 loop-closing joints; each
formulation evaluates its own consistent initial state, and the body accelerations are
compared with ``dense``'s, relative to the largest of them (at least 1).  Prints the
worst difference of each formulation and the mechanisms above ``--tol``; exits 1 if any.
Its first version found the redundant loop joints ``dense`` mishandled
(``random_mechanism(7, 8, 1)`` and ``(35, 8, 1)``: docs/derivations.md section 5).

    python benchmarks/random_accelerations.py [--seeds 0-150] [--threads 1] [--tol 1e-8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from linkwork.engine import generators as gen  # noqa: E402
from linkwork.engine.errors import SimulationError  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402

FORMULATIONS = ("dca", "hdca", "rcr", "embedding")


def _seeds(text: str) -> range:
    a, _, b = text.partition("-")
    return range(int(a), int(b) if b else int(a) + 1)


def accelerations(model, name: str, threads: int) -> np.ndarray:
    f = Simulation(model, Settings(formulation=name, threads=threads)).formulation
    return f.evaluate(0.0, f.initial_state()).acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-150", help="first-last (last excluded) [0-150]")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-8)
    args = ap.parse_args(argv)
    worst = {n: (0.0, None) for n in FORMULATIONS}
    bad, count = [], 0
    for seed in _seeds(args.seeds):
        shape = np.random.default_rng([1, seed])  # its body and loop counts
        nb, loops = int(shape.integers(3, 25)), int(shape.integers(0, 4))
        model = build_model(gen.random_mechanism(seed, nb, loops))
        try:
            ref = accelerations(model, "dense", args.threads)
        except SimulationError as exc:  # a random mechanism may be locked or singular
            print(f"seed {seed} ({nb} bodies, {loops} loops): dense refused: {exc}")
            continue
        count += 1
        scale = max(float(np.abs(ref).max()), 1.0)
        for name in FORMULATIONS:
            try:
                d = float(np.abs(accelerations(model, name, args.threads) - ref).max()) / scale
            except SimulationError as exc:
                print(f"seed {seed} ({nb} bodies, {loops} loops): {name} refused: {exc}")
                continue
            if d > worst[name][0]:
                worst[name] = (d, seed)
            if d > args.tol:
                bad.append((seed, nb, loops, name, d))
    print(f"{count} mechanisms, {args.threads} thread(s); worst relative difference from dense:")
    for name, (d, seed) in worst.items():
        print(f"  {name:10s} {d:.1e}" + (f" (seed {seed})" if seed is not None else ""))
    for seed, nb, loops, name, d in bad:
        print(f"ABOVE {args.tol:g}: seed {seed} ({nb} bodies, {loops} loops) {name} {d:.2e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
