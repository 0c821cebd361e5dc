"""``linkwork bench``: speed of the divide-and-conquer formulations.

Measures, on this machine and in one run (so ratios are meaningful on a shared,
noisy machine):

* one forward-dynamics evaluation (the ODE right-hand side) of spatial
  (spherical) and planar (revolute) chains, n = 2, 4, ..., 1024 bodies, with one
  thread and with all threads; the time per body;
* Pinocchio's ``aba`` on the same chains, where its ``Data`` fits in memory
  (Pinocchio 4 allocates n_v^3 tensors: 3.5 GB at 128 spherical bodies), as
  the speed reference for tree forward dynamics;
* start-up: the first evaluation with an empty numba cache (cold) and with a
  filled one (warm), and ``linkwork run`` on the four-bar (1000 steps) end to end,
  with an empty cache and again with the kernels that run compiled (warm)
  (:mod:`.startup`).

``--ladders``, ``--monitor`` and ``--peers`` run one other measurement instead
(:mod:`.ladder_cost`, :mod:`.monitor_cost`, :mod:`.peers`); ``--whole-run`` times whole
simulations of the bundled examples, with ``--peers`` against MuJoCo and Exudyn
(:mod:`.whole_run`).

Prints a table and writes JSON (``--json FILE``).  Timing: best of repeated
batches, each batch long enough (>= 50 ms) that the clock resolution does not
matter.  See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path

from .ladder_cost import ladders
from .monitor_cost import monitor_cost
from .startup import startup
from .timing import cpu_name, rhs_call, time_call


def _chain_model(n: int, kind: str):
    from ..generators import chain
    from ..model import build_model

    return build_model(chain(n, "spherical" if kind == "spherical" else "revolute", planar=kind != "spherical"))


def chain_formulation(name: str, n: int, kind: str, threads: int = 1):
    """Formulation ``name`` on the benchmark chain and the state every speed figure is
    taken at: the initial pose, random joint rates (seed 0).  Returns (formulation, y)."""
    import numpy as np

    from ..simulation import Settings, Simulation

    model = _chain_model(n, kind)
    form = Simulation(model, Settings(formulation=name, threads=threads)).formulation
    y = form.initial_state()
    y[model.nq:] = np.random.default_rng(0).normal(scale=0.3, size=model.nv)
    return form, y


def time_formulation(name: str, n: int, kind: str, threads: int) -> float:
    import numba

    form, y = chain_formulation(name, n, kind, threads)
    numba.set_num_threads(threads)
    return time_call(rhs_call(form, 0.0, y))


def time_pinocchio(n: int, kind: str) -> float | None:
    """Seconds per ``pinocchio.aba`` on the same chain, or None (not installed / too big)."""
    try:
        import numpy as np
        import pinocchio as pin
    except ImportError:
        return None
    model = pin.Model()
    parent = 0
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([1.0, 0.0, 0.0])) if i > 0 else pin.SE3.Identity()
        jm = pin.JointModelSpherical() if kind == "spherical" else pin.JointModelRZ()
        jid = model.addJoint(parent, jm, placement, f"j{i}")
        model.appendBodyToJoint(jid, pin.Inertia(1.0, np.array([0.5, 0.0, 0.0]), np.eye(3)), pin.SE3.Identity())
        parent = jid
    try:
        data = model.createData()
    except MemoryError:
        return None
    rng = np.random.default_rng(0)
    if kind == "spherical":
        Q = rng.normal(size=(n, 4))
        Q /= np.linalg.norm(Q, axis=1)[:, None]
        q = Q[:, [1, 2, 3, 0]].reshape(-1)
    else:
        q = rng.normal(size=n)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    return time_call(lambda: pin.aba(model, data, q, v, tau))


def _peers(forms: list[str], args) -> int:
    from . import lcaba
    from .peers import AGREE_RTOL, PEERS, SIZES, linkwork_worst, markdown, peers_available
    from .peers import run as run_peers

    ok, why = peers_available()
    if not ok:
        print(f"linkwork bench --peers: {why}", file=sys.stderr)
        return 2
    date = datetime.datetime.now().isoformat(timespec="seconds")
    print(f"linkwork bench --peers  {date}  {cpu_name()}")
    result, worst, text = {"rows": []}, 0.0, ""
    if not args.closed_loops:
        result = run_peers(forms, tuple(n for n in SIZES if n <= args.max_n))
        worst = max(linkwork_worst(r) for r in result["rows"])
        peers = {k: max((r["agreement"][k] for r in result["rows"] if k in r["agreement"]), default=float("nan"))
                 for k in PEERS}
        mutual = max((r["mutual"] for r in result["rows"] if r.get("mutual") is not None), default=float("nan"))
        print(f"\nworst relative difference of the body accelerations from dense (required <= "
              f"{AGREE_RTOL:g}): Linkwork's formulations {worst:.1e}; "
              + "; ".join(f"{k} {v:.1e}" for k, v in peers.items())
              + f"; between two of Linkwork's O(n) formulations {mutual:.1e}\n")
        text = markdown(result, cpu_name(), date)
    loops = lcaba.run([f for f in forms if f != "dense"] + ["dense"])
    worst = max(worst, lcaba.worst(loops))
    result.update(date=date, cpu=cpu_name(), closed_loops=loops)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"written {args.json}")
    if args.markdown:
        Path(args.markdown).write_text(text + lcaba.markdown(loops, cpu_name(), date))
        print(f"written {args.markdown}")
    return 0 if worst <= AGREE_RTOL else 1


def _whole_run(args, argv) -> int:
    """``--whole-run``: with ``--formulations`` unset each example's default formulation;
    ``all`` (or a list) every one of those that accepts the example."""
    from ..formulations import REGISTRY
    from .whole_run import example_paths
    from .whole_run import run as run_whole

    forms = None
    if args.formulations:
        forms = [f for f in args.formulations.split(",") if f]
        if forms == ["all"]:
            forms = "all"
        else:
            unknown = [f for f in forms if f not in REGISTRY]
            if unknown:
                print(f"linkwork bench: unknown formulation {unknown[0]!r} (available: all, "
                      f"{', '.join(REGISTRY)})", file=sys.stderr)
                return 2
    if not (args.t_end > 0 and args.rounds >= 1) or (args.threads is not None and args.threads < 1):
        print("linkwork bench: --t-end must be > 0, --rounds and --threads >= 1", file=sys.stderr)
        return 2
    examples = [e for e in args.examples.split(",") if e] if args.examples else None
    try:
        example_paths(examples)
    except ValueError as exc:
        print(f"linkwork bench: {exc}", file=sys.stderr)
        return 2
    from ..integrators import ODE_INTEGRATORS, STEPPER_INTEGRATORS

    known = ODE_INTEGRATORS + STEPPER_INTEGRATORS
    if args.integrator is not None and args.integrator not in known:
        print(f"linkwork bench: unknown integrator {args.integrator!r} (available: {', '.join(known)})",
              file=sys.stderr)
        return 2
    if any(v is not None and not v > 0 for v in (args.rtol, args.atol)):
        print("linkwork bench: --rtol and --atol must be > 0", file=sys.stderr)
        return 2
    settings = {k: v for k, v in (("integrator", args.integrator), ("rtol", args.rtol), ("atol", args.atol))
                if v is not None}
    line = "linkwork bench " + " ".join(argv if argv is not None else sys.argv[2:])
    out = None if args.out_dir == "-" else Path(args.out_dir)
    run_whole(line.strip(), forms, examples, args.t_end, args.rounds, args.peers, args.threads, out, settings)
    return 0


def main(argv: list[str] | None = None) -> int:
    import numba

    from ..formulations import REGISTRY

    p = argparse.ArgumentParser(prog="linkwork bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--formulations", default=None,
                   help="comma-separated [dca,hdca; with --peers every registered ODE formulation; with "
                        "--whole-run each example's default, 'all': every one that accepts the example]")
    p.add_argument("--max-n", type=int, default=1024, help="largest chain [%(default)s]")
    p.add_argument("--no-pinocchio", action="store_true", help="skip the Pinocchio reference")
    p.add_argument("--no-startup", action="store_true", help="skip the start-up measurements")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--ladders", action="store_true",
                   help="only the spatial-ladder cost study (paper 002 Fig. 11), L = 1 ... 64")
    p.add_argument("--monitor", action="store_true",
                   help="only the pipeline monitor's cost: the 128-link chain with and without it")
    p.add_argument("--peers", action="store_true",
                   help="only Linkwork against Pinocchio's aba and MuJoCo's mj_forward on chains of "
                        "16 ... 1024 bodies, accelerations compared first (needs the bench extra); with "
                        "--whole-run: MuJoCo and Exudyn on the same whole runs")
    p.add_argument("--markdown", metavar="FILE", help="with --peers: also write the table as Markdown")
    p.add_argument("--closed-loops", action="store_true",
                   help="with --peers: only the closed-loop table (Pinocchio's lcaba on loop-8 and ladders)")
    w = p.add_argument_group(
        "whole runs", "--whole-run: --t-end seconds of every bundled example at its defaults, wall per "
        "simulated second, steps per second, right-hand-side count, the time of one, the overhead factor "
        "wall / (count x one) and the loops' closure error; with --peers also MuJoCo (mj_step, RK4, the "
        "same step, loops as connect equalities) and Exudyn (index-3 generalized-alpha, the same step), "
        "the engines timed round by round; JSON and Markdown to --out-dir (docs/benchmarks.md, \"Whole runs\")")
    w.add_argument("--whole-run", action="store_true", help="time whole simulations of the bundled examples")
    w.add_argument("--t-end", type=float, default=10.0, help="simulated seconds per run [%(default)s]")
    w.add_argument("--examples", default=None,
                   help="comma-separated example names (file stems, e.g. fourbar-crank-rocker) [all bundled]")
    w.add_argument("--rounds", type=int, default=3, help="timed rounds, best kept [%(default)s]")
    w.add_argument("--threads", type=int, default=None, help="Linkwork's engine threads [automatic]")
    w.add_argument("--integrator", default=None, metavar="NAME",
                   help="Linkwork's integrator for every run (rk4, rk45, dop853, ...) [each example's default]")
    w.add_argument("--rtol", type=float, default=None, help="with an adaptive --integrator [the defaults']")
    w.add_argument("--atol", type=float, default=None, help="with an adaptive --integrator [the defaults']")
    w.add_argument("--out-dir", default="benchmarks/results",
                   help="where whole-run-<date>.json and .md go [%(default)s]; '-' writes nothing")
    args = p.parse_args(argv)
    if args.whole_run:
        return _whole_run(args, argv)
    default = ("dca", "hdca", "rcr", "embedding", "dense") if args.peers else ("dca", "hdca")
    forms = ([f for f in args.formulations.split(",") if f] if args.formulations
             else [f for f in default if f in REGISTRY])
    for f in forms:
        if f not in REGISTRY:
            print(f"linkwork bench: unknown formulation {f!r}", file=sys.stderr)
            return 2
    if args.peers:
        return _peers(forms, args)
    if args.monitor:
        result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cpu": cpu_name(),
                  "monitor": monitor_cost(forms)}
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
            print(f"\nwritten {args.json}")
        return 0
    if args.ladders:
        result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cpu": cpu_name(),
                  "ladders": None}
        print(f"linkwork bench --ladders  {result['date']}  {result['cpu']}")
        result["ladders"] = ladders(forms)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))
            print(f"\nwritten {args.json}")
        return 0
    all_threads = numba.config.NUMBA_NUM_THREADS
    sizes = [2 ** k for k in range(1, 11) if 2 ** k <= args.max_n]
    result = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu_name(), "cores": os.cpu_count(), "threads_all": all_threads,
        "python": platform.python_version(), "numba": numba.__version__,
        "threading_layer": None, "rows": [],
    }
    print(f"linkwork bench  {result['date']}  {result['cpu']}  ({result['cores']} cores)")
    head = f"{'chain':10s} {'n':>5s}"
    for f in forms:
        head += f" {f + ' 1t us':>12s} {f + ' ' + str(all_threads) + 't us':>12s} {'ns/body':>8s}"
    head += f" {'aba us':>9s} {'ns/body':>8s}"
    print(head)
    for kind in ("spherical", "revolute"):
        for n in sizes:
            row = {"chain": kind, "n": n}
            line = f"{kind:10s} {n:5d}"
            for f in forms:
                t1 = time_formulation(f, n, kind, 1)
                tall = time_formulation(f, n, kind, all_threads)
                row[f] = {"t1_s": t1, f"t{all_threads}_s": tall, "per_body_1t_ns": t1 / n * 1e9}
                line += f" {t1 * 1e6:12.1f} {tall * 1e6:12.1f} {t1 / n * 1e9:8.0f}"
            ta = None
            limit = 128 if kind == "spherical" else 256
            if not args.no_pinocchio and n <= limit:
                ta = time_pinocchio(n, kind)
            row["pinocchio_aba_s"] = ta
            line += f" {ta * 1e6:9.1f} {ta / n * 1e9:8.0f}" if ta else f" {'-':>9s} {'-':>8s}"
            result["rows"].append(row)
            print(line, flush=True)
    try:
        result["threading_layer"] = numba.threading_layer()
    except ValueError:
        pass
    # summary figures for the DCA targets
    summary = {}
    for f in forms:
        for kind in ("spherical", "revolute"):
            rows = {r["n"]: r for r in result["rows"] if r["chain"] == kind}
            per = [rows[n][f]["per_body_1t_ns"] for n in rows if 64 <= n <= 1024]
            if per:
                summary[f"{f}_{kind}_per_body_spread_64_1024"] = max(per) / min(per) - 1.0
                # the target "flat within +-30 %": the largest deviation from the mean per-body cost
                mean = sum(per) / len(per)
                summary[f"{f}_{kind}_per_body_dev_from_mean_64_1024"] = max(abs(p / mean - 1.0) for p in per)
            aba = [rows[n]["pinocchio_aba_s"] / n for n in rows if rows[n]["pinocchio_aba_s"]]
            if aba and max(rows) == 1024:
                aba_1024 = min(aba[-2:]) * 1024  # per-body cost is flat: from the largest measured sizes
                summary[f"{f}_{kind}_1024_over_aba"] = rows[1024][f]["t1_s"] / aba_1024
                summary[f"{kind}_aba_per_body_ns"] = aba_1024 / 1024 * 1e9
            if max(rows) == 1024:
                summary[f"{f}_{kind}_1024_speedup_{all_threads}t"] = (
                    rows[1024][f]["t1_s"] / rows[1024][f][f"t{all_threads}_s"])
    result["summary"] = summary
    print("\nsummary")
    for k, v in summary.items():
        print(f"  {k:45s} {v:8.3f}")
    if not args.no_startup:
        result["startup"] = {}
        for f in forms:
            st = startup(f)
            result["startup"][f] = st
            print(f"  {f} start-up: first evaluation cold {st['first_evaluation_cold_s']:.1f} s, warm "
                  f"{st['first_evaluation_warm_s']:.2f} s; linkwork run four-bar 1000 steps: cold "
                  f"{st['run_cold_1000_steps_s']:.1f} s, warm {st['run_warm_1000_steps_s']:.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"\nwritten {args.json}")
    return 0
