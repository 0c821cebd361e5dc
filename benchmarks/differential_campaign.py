"""The differential comparison of ``tests/engine/test_differential.py`` on seeds the tests
do not run: every formulation named against ``dense`` (both dop853 at rtol = atol =
1e-10, or the error-controlled integrator ``--integrator`` names, 1 s; ``index3`` at
dt = 1e-4 with its second-order check), each mechanism built by the test's own
:func:`~tests.engine.test_differential.mechanism`.

Prints one line per mechanism and every case that is neither an agreement nor an exit-3
stop whose rows agree before it, then the counts.  A "silent disagreement" (both ran to
the end, exit 0, different motions) names the two formulations, not the one at fault:
``benchmarks/near_pass.py`` is how one such case was settled.  Where ``dca`` or ``hdca``
is apart from a ``dense`` run that reported its filter widened at a near pass (its
``near_pass_error``, shown to the user), the case is counted as that report, not as
silent.

    python benchmarks/differential_campaign.py --seeds 500-1499 --bodies 4-12
    python benchmarks/differential_campaign.py --seeds 2000-2149 --bodies 4-7 --formulations index3

Seed ``s`` has ``bodies[0] + s % (bodies[1] - bodies[0] + 1)`` bodies and ``s // 4 % 4``
loops (the tests' long campaign: seeds 0-299, 4-7 bodies), or with ``--loops``
``loops[0] + s % (loops[1] - loops[0] + 1)``.  With ``--cut-types`` (say
``prismatic,cylindrical,fixed``) seed ``s`` is instead the tests' :func:`~tests.engine.
test_differential.cut_mechanism` of the ``s % k``-th of those ``k`` types: every loop closed,
and cut, by a joint of that type (at least one loop); with ``--planar``, the planar
linkage :func:`~engine.generators.random_planar_mechanism` (at least one loop).

    python benchmarks/differential_campaign.py --seeds 3000-3399 --bodies 3-12 --loops 1-3 --cut-types prismatic,cylindrical,fixed
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine.generators import random_planar_mechanism  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from tests.engine import test_differential as diff  # noqa: E402


def _span(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def compare(seed: int, n_bodies: int, loops: int, forms: list[str], counts: collections.Counter,
            cut_type: str | None = None, planar: bool = False) -> None:
    """One mechanism: each of ``forms`` against dense (the tests' :func:`compare_with_dense`);
    prints what is neither an agreement, nor a stop whose rows agree before it, nor the
    refusal of a gear, and where ``dense`` stopped but a formulation ran to the end (counted
    as "dense stopped, another ran": a stop of the reference is worth a look -- a driver or
    gear row ``dense`` dropped was found so).  ``cut_type``: the tests' :func:`cut_mechanism`
    of that type; ``planar``: the planar linkage of the seed."""
    if planar:
        spec = random_planar_mechanism(seed, n_bodies, loops)
    elif cut_type is not None:
        spec = diff.cut_mechanism(seed, n_bodies, loops, cut_type)
    else:
        spec = diff.mechanism(seed, n_bodies, loops)
    model = build_model(spec)
    near_pass = None  # dense's report of its filter at a near pass, looked up once
    for form, what, dev, err, why in diff.compare_with_dense(model, counts, forms):
        if what == "exit 3" and err is None:  # the stop was dense's
            counts["dense stopped, another ran"] += 1
            print(f"  seed {seed} ({n_bodies} bodies, {loops} loops): dense stopped where {form} ran to the end",
                  flush=True)
        if what == "refused" and not diff.refuses_a_gear(model, why):
            print(f"  seed {seed} ({n_bodies} bodies, {loops} loops): {form} refused it: {why}", flush=True)
        elif what not in ("agree", "exit 3", "refused", "refused its settings"):
            if what == "silent disagreement" and form in ("dca", "hdca"):
                near_pass = _near_pass(model) if near_pass is None else near_pass
                if near_pass:
                    what = f"apart where dense reported its near-pass filter ({near_pass})"
                    counts["silent disagreements"] -= 1
                    counts["dense near pass, reported"] += 1
            print(f"  seed {seed} ({n_bodies} bodies, {loops} loops): {form} {what}, {dev:.2e} m from dense"
                  f"{'' if err is None else '; ' + str(err)}", flush=True)


def _near_pass(model) -> str:
    """What dense's run says of its filter widened at a near pass (``near_pass_error``,
    docs/derivations.md, "What the widened filter costs a near pass"), or ""; ``dca`` and
    ``hdca`` have no filter, so a disagreement of theirs with dense there is dense's,
    reported to the user in its statistics and health line."""
    _, _, sim = diff.run_positions(model, "dense")
    st = sim.stats
    if "near_pass_error" not in st:
        return ""
    return (f"measure {st['filtered_loop_conditioning']:.2g} at t = {st['t_filtered']:.3g} s, "
            f"force off by up to {st['near_pass_error']:.1g}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="500-1499", help="first-last [500-1499]")
    p.add_argument("--bodies", default="4-12", help="fewest-most bodies [4-12]")
    p.add_argument("--loops", default=None, help="fewest-most loops [the tests': seed // 4 %% 4]")
    p.add_argument("--formulations", default="dca,hdca,rcr,embedding", help="compared with dense [dca,hdca,rcr,embedding]")
    p.add_argument("--integrator", default="dop853", choices=("dop853", "rk45", "rk23", "lsoda", "radau", "bdf"),
                   help="both sides' error-controlled integrator, at 1e-10 [dop853]")
    p.add_argument("--cut-types", default=None,
                   help="loops closed and cut by joints of these types, in turn (module docstring)")
    p.add_argument("--planar", action="store_true", help="planar linkages (module docstring)")
    a = p.parse_args(argv)
    planar = a.planar
    cut_types = a.cut_types.split(",") if a.cut_types else None
    diff.INTEGRATOR = a.integrator
    s0, s1 = _span(a.seeds)
    b0, b1 = _span(a.bodies)
    l0, l1 = _span(a.loops or "0")
    forms = a.formulations.split(",")
    counts: collections.Counter = collections.Counter()
    t0 = time.perf_counter()
    for seed in range(s0, s1 + 1):
        n_bodies = b0 + seed % (b1 - b0 + 1)
        loops = seed // 4 % 4 if a.loops is None else l0 + seed % (l1 - l0 + 1)
        cut_type = cut_types[seed % len(cut_types)] if cut_types else None
        if cut_type is not None or planar:
            loops = max(loops, 1)
        compare(seed, n_bodies, loops, forms, counts, cut_type, planar)
        print(f"seed {seed}: {n_bodies} bodies, {loops} loops" + (f", cut at {cut_type} joints" if cut_type else "")
              + (", planar" if planar else ""), flush=True)
    print(f"{s1 - s0 + 1} mechanisms, {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
