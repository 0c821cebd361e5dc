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
  with an empty cache and again with the kernels that run compiled (warm).

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path


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


def _time_call(f, min_batch=0.05, repeats=5) -> float:
    n, best = _batch(f, min_batch)
    for _ in range(repeats - 1):
        best = min(best, _per_call(f, n))
    return best


def _time_interleaved(calls: dict, min_batch=0.05, rounds=5) -> dict:
    """Seconds per call of each of ``calls`` (name -> callable), timed in turns: every
    round times one batch of each callable, and each keeps its best round.  On a shared
    machine whose speed changes over seconds, a slow window then falls on every entry
    of a row alike, not on whichever one was being timed in it (as with
    :func:`_time_call` run for each in turn), and the best rounds are spread over the
    whole row's time."""
    batch = {name: _batch(f, min_batch) for name, f in calls.items()}
    best = {name: per for name, (_, per) in batch.items()}
    for _ in range(rounds - 1):
        for name, f in calls.items():
            best[name] = min(best[name], _per_call(f, batch[name][0]))
    return best


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
    return _time_call(lambda: form.rhs(0.0, y))


LADDER_CELLS = (1, 2, 4, 8, 16, 32, 64)


def time_ladder(name: str, cells: int) -> float:
    """Seconds per right-hand side of formulation ``name`` on the spatial ladder of
    ``cells`` cells (paper 002 Fig. 11), one thread, at its initial state.  ``tree``
    is the same ladder with its loop-closing joints dropped (the paper's curve (i):
    constraints ignored), run by ``dca`` -- no loops, so the articulated-body tree."""
    import numba

    from ..generators import ladder
    from ..mechfile import MechanismSpec
    from ..model import build_model
    from ..simulation import Settings, Simulation

    spec = ladder(cells)
    formulation = name
    if name == "tree":
        spec = MechanismSpec(bodies=spec.bodies, joints=tuple(j for j in spec.joints if not j.name.endswith("b")),
                             forces=spec.forces, gravity=spec.gravity, name=spec.name + " (tree)")
        formulation = "dca"
    model = build_model(spec)
    numba.set_num_threads(1)
    form = Simulation(model, Settings(formulation=formulation, threads=1)).formulation
    y = form.initial_state()
    return _time_call(lambda: form.rhs(0.0, y))


def ladders(forms: list[str]) -> dict:
    """Paper 002 Fig. 11 on this machine, every formulation in one run."""
    cols = forms + ["tree"]
    print("spatial ladders (paper 002 section 4.3): microseconds per right-hand side, one thread")
    print(f"{'L':>4s}" + "".join(f" {c:>10s}" for c in cols))
    rows = []
    failed: dict[str, str] = {}
    for L in LADDER_CELLS:
        row = {"cells": L}
        for c in cols:
            try:
                row[c] = None if c in failed else time_ladder(c, L)
            except Exception as exc:  # noqa: BLE001 - the table says which formulation failed
                failed[c] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                row[c] = None
        rows.append(row)
        print(f"{L:4d}" + "".join(f" {row[c] * 1e6:10.1f}" if row[c] is not None else f" {'failed':>10s}"
                                  for c in cols), flush=True)
    for c, why in failed.items():
        print(f"  {c} failed: {why}")
    t = {r["cells"]: r for r in rows}
    summary = {}
    for c in cols:
        if c not in failed:
            summary[f"{c}_L64_over_L8"] = t[64][c] / t[8][c]
    ok = [f for f in forms if f not in failed]
    for L in LADDER_CELLS:
        summary[f"fastest_L{L}"] = min(ok, key=lambda f: t[L][f]) + (" (of those that ran)" if failed else "")
    for k, v in summary.items():
        print(f"  {k:30s} {v if isinstance(v, str) else f'{v:.2f}'}")
    return {"rows": rows, "summary": summary, "failed": failed}


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
    return _time_call(lambda: pin.aba(model, data, q, v, tau))


def startup_example() -> Path:
    """The mechanism the start-up figures are measured on (the bundled four-bar)."""
    from ..paths import examples_dir

    return examples_dir() / "parallelogram-fourbar.mech.json"


def startup(formulation: str) -> dict:
    """Cold (empty numba cache) and warm first-evaluation and end-to-end CLI times."""
    example = startup_example()
    code = (
        "import time; t0 = time.perf_counter()\n"
        "from engine.model import load_model\nfrom engine.simulation import Settings, Simulation\n"
        f"sim = Simulation(load_model({str(example)!r}), Settings(formulation={formulation!r}))\n"
        "sim.prepare(); print(time.perf_counter() - t0)\n"
    )
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out[f"first_evaluation_{label}_s"] = float(r.stdout.strip().splitlines()[-1])
    run = [sys.executable, "-m", "linkwork.engine.cli", "run", str(example), "--formulation", formulation,
           "--t-end", "10", "--dt", "0.01", "--out", os.devnull]
    with tempfile.TemporaryDirectory() as cache:  # the whole run cold, then again with its kernels cached
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            # rcr stops at the four-bar's singular configuration (exit 3): still timed
            r = subprocess.run(run, env=env, check=False, capture_output=True)
            if r.returncode not in (0, 3):
                raise subprocess.CalledProcessError(r.returncode, run, r.stdout, r.stderr)
            out[f"run_{label}_1000_steps_s"] = time.perf_counter() - t0
            out[f"run_{label}_exit"] = r.returncode
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def monitor_cost(forms, example: str = "chain-128-spherical", t_end: float = 0.5, repeats: int = 7) -> list[dict]:
    """The pipeline monitor's cost (engine/monitor.py): whole runs of ``example`` with and
    without it, interleaved (so machine load hits both alike), medians of wall and CPU
    time, and the monitor's own clock (judging, health, the recorder's saved state)."""
    import statistics

    from ..model import load_model
    from ..paths import examples_dir
    from ..simulation import Settings, Simulation

    model = load_model(examples_dir() / f"{example}.mech.json")
    out = []
    print(f"\nmonitor cost: {example}, {t_end:g} s at the defaults, {repeats} interleaved repeats (medians; "
          "'judge %': the monitor's own clock over the run's wall time, the figure load does not blur)")
    print(f"{'formulation':12s} {'wall on':>9s} {'wall off':>9s} {'cpu on':>9s} {'cpu off':>9s} "
          f"{'wall +%':>8s} {'cpu +%':>8s} {'judge %':>8s}")
    for f in forms:
        walls, cpus, own = {True: [], False: []}, {True: [], False: []}, []
        for r in range(repeats):
            for on in ((True, False) if r % 2 else (False, True)):  # alternate which goes first
                sim = Simulation(model, Settings(formulation=f, t_end=t_end, monitor=on))
                sim.prepare()
                c0, w0 = time.process_time(), time.perf_counter()
                for _chunk in sim.run():
                    pass
                walls[on].append(time.perf_counter() - w0)
                cpus[on].append(time.process_time() - c0)
                if on:
                    own.append(sim.stats["monitor_time"] / walls[on][-1])
        w1, w0_, c1, c0_ = (statistics.median(walls[True]), statistics.median(walls[False]),
                            statistics.median(cpus[True]), statistics.median(cpus[False]))
        row = {"formulation": f, "example": example, "t_end": t_end, "wall_on": w1, "wall_off": w0_,
               "cpu_on": c1, "cpu_off": c0_, "wall_overhead": w1 / w0_ - 1, "cpu_overhead": c1 / c0_ - 1,
               "cpu_min_overhead": min(cpus[True]) / min(cpus[False]) - 1,
               "judge_share": statistics.median(own)}
        out.append(row)
        print(f"{f:12s} {w1:9.3f} {w0_:9.3f} {c1:9.3f} {c0_:9.3f} {100 * row['wall_overhead']:8.2f} "
              f"{100 * row['cpu_overhead']:8.2f} {100 * row['judge_share']:8.2f}   (best-of CPU +"
              f"{100 * row['cpu_min_overhead']:.2f} %)", flush=True)
    return out


def _peers(forms: list[str], args) -> int:
    from . import peers as bench_peers

    ok, why = bench_peers.peers_available()
    if not ok:
        print(f"linkwork bench --peers: {why}", file=sys.stderr)
        return 2
    date = datetime.datetime.now().isoformat(timespec="seconds")
    sizes = tuple(n for n in bench_peers.SIZES if n <= args.max_n)
    print(f"linkwork bench --peers  {date}  {cpu_name()}")
    result = bench_peers.run(forms, sizes)
    worst = max(bench_peers.linkwork_worst(r) for r in result["rows"])
    peers = {k: max((r["agreement"][k] for r in result["rows"] if k in r["agreement"]), default=float("nan"))
             for k in bench_peers.PEERS}
    mutual = max((r["mutual"] for r in result["rows"] if r.get("mutual") is not None), default=float("nan"))
    print(f"\nworst relative difference of the body accelerations from dense (required <= "
          f"{bench_peers.AGREE_RTOL:g}): Linkwork's formulations {worst:.1e}; "
          + "; ".join(f"{k} {v:.1e}" for k, v in peers.items())
          + f"; between two of Linkwork's O(n) formulations {mutual:.1e}")
    result.update(date=date, cpu=cpu_name())
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"written {args.json}")
    if args.markdown:
        Path(args.markdown).write_text(bench_peers.markdown(result, cpu_name(), date))
        print(f"written {args.markdown}")
    return 0 if worst <= bench_peers.AGREE_RTOL else 1


def main(argv: list[str] | None = None) -> int:
    import numba

    from ..formulations import REGISTRY

    p = argparse.ArgumentParser(prog="linkwork bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--formulations", default=None,
                   help="comma-separated [dca,hdca; with --peers every registered ODE formulation]")
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
                        "16 ... 1024 bodies, accelerations compared first (needs the bench extra)")
    p.add_argument("--markdown", metavar="FILE", help="with --peers: also write the table as Markdown")
    args = p.parse_args(argv)
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
