"""How small the adaptive solvers' steps get on the bundled examples (the stall guard's margin).

The pipeline ends a run with exit 3 when an adaptive solver takes ``config.STALL_STEPS``
accepted steps in a row, each shorter than ``config.STALL_RATIO`` of the output interval
(engine/integrators.py, ``StepCollapse``).  This prints, for every bundled example, ODE
formulation and error-controlled integrator, the smallest accepted step relative to the
output interval, the longest run of steps under ``STALL_RATIO``, and the smallest average
step over any ``config.CRAWL_STEPS`` steps in a row relative to the output interval (a
crawl's blocks stop a run where a block's is under ``CRAWL_RATIO``; "-": fewer steps in
the whole run), with the guard counting but never stopping a run (everything else as in
a normal run, monitor on):

    LINKWORK_COMPILED_ROWS=0 python benchmarks/step_collapse.py [--t-end 2] [--only parallelogram-fourbar] [--forms dca,hdca] [--ratio 1e-5]

The counter is the Python pipeline's (``LINKWORK_COMPILED_ROWS=0``: the compiled rows carry
the guard's count but not the longest run); ``--ratio`` measures another ``STALL_RATIO``.

A run that stops for another reason (exit 3 from the monitor, rcr's change of mobility)
shows the time it reached.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine import config, integrators  # noqa: E402
from linkwork.engine.errors import SettingsError, SimulationError  # noqa: E402
from linkwork.engine.model import load_model  # noqa: E402
from linkwork.engine.paths import examples_dir  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402

FORMS = ("dense", "dca", "hdca", "rcr", "embedding")
SOLVERS = (("dop853", 1e-10), ("rk45", 1e-8))


class _Counting(integrators._Stall):
    """The guard's counter, recording instead of stopping."""

    seen: list["_Counting"] = []

    def __init__(self, steps, dt, method, t0=0.0):
        super().__init__(steps, dt, method, t0)
        self.limit = self.crawl_limit = 1 << 62
        self.longest = 0
        self.min_ratio = float("inf")
        self.steps = 0
        self.times = [t0]
        _Counting.seen.append(self)

    def window_ratio(self) -> float:
        """The smallest average step over CRAWL_STEPS accepted steps in a row, over the
        output interval; NaN where the run took fewer."""
        n = config.CRAWL_STEPS
        if len(self.times) <= n:
            return float("nan")
        t = np.array(self.times)
        return float(np.min(np.abs(t[n:] - t[:-n]))) / n / self.dt

    def step(self, solver):
        h = abs(solver.t - solver.t_old)
        self.steps += 1
        self.times.append(solver.t)
        if h > 0:
            self.min_ratio = min(self.min_ratio, h / self.dt)
        super().step(solver)
        self.longest = max(self.longest, self.run)


def measure(path: Path, form: str, method: str, tol: float, t_end: float) -> dict:
    _Counting.seen.clear()
    try:
        sim = Simulation(load_model(path), Settings(formulation=form, integrator=method, rtol=tol, atol=tol,
                                                    t_end=t_end))
    except SettingsError:  # e.g. a coupling the formulation cannot honour
        return {"status": "not supported", "wall": 0.0, "steps": 0, "min_ratio": float("nan"), "longest": 0,
                "window": float("nan")}
    c0 = time.perf_counter()
    try:
        sim.run_all()
        status = "ok"
    except SimulationError as exc:
        status = f"exit 3 at {exc.t:.4g} s"
    wall = time.perf_counter() - c0
    g = _Counting.seen[0] if _Counting.seen else None
    return {"status": status, "wall": wall, "steps": g.steps if g else 0,
            "min_ratio": g.min_ratio if g else float("nan"), "longest": g.longest if g else 0,
            "window": g.window_ratio() if g else float("nan")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--only", default="", help="comma-separated example names (without .mech.json)")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--ratio", type=float, default=config.STALL_RATIO, help="the guard's STALL_RATIO to count under")
    args = ap.parse_args(argv)
    config.STALL_RATIO = args.ratio
    integrators._Stall = _Counting  # the simulation builds its guard through this name
    names = [n for n in args.only.split(",") if n]
    paths = sorted(examples_dir().glob("*.mech.json"))
    if names:
        paths = [p for p in paths if p.name.removesuffix(".mech.json") in names]
    limit = config.CRAWL_STEPS if config.STALL_RATIO >= config.CRAWL_RATIO else config.STALL_STEPS
    print(f"guard: {limit} steps in a row under {config.STALL_RATIO:g} of the output interval; "
          f"t_end = {args.t_end:g} s, monitor on")
    print(f"| example | formulation | solver | steps | smallest step / dt | longest run under the ratio | "
          f"smallest average of {config.CRAWL_STEPS} steps / dt | result | wall [s] |")
    print("|---|---|---|---:|---:|---:|---:|---|---:|")
    window = (float("inf"), "")
    worst = {"ok": (-1, ""), "stopped": (-1, "")}  # runs that ended normally / with exit 3
    for path in paths:
        for form in args.forms.split(","):
            for method, tol in SOLVERS:
                r = measure(path, form, method, tol, args.t_end)
                name = path.name.removesuffix(".mech.json")
                w = "-" if r["window"] != r["window"] else f"{r['window']:.2g}"
                print(f"| {name} | {form} | {method} {tol:g} | {r['steps']} | {r['min_ratio']:.2g} | "
                      f"{r['longest']} | {w} | {r['status']} | {r['wall']:.1f} |", flush=True)
                if r["status"] == "ok" and r["window"] < window[0]:
                    window = (r["window"], f"{name}, {form}, {method}")
                key = "ok" if r["status"] == "ok" else "stopped"
                if r["status"] != "not supported" and r["longest"] > worst[key][0]:
                    worst[key] = (r["longest"], f"{name}, {form}, {method}")
    for key, what in (("ok", "ended normally"), ("stopped", "stopped with exit 3")):
        if worst[key][0] < 0:
            print(f"no run {what}")
            continue
        print(f"longest run of steps under the ratio in a run that {what}: {worst[key][0]} ({worst[key][1]}); "
              f"the guard stops at {limit}")
    if window[1]:
        print(f"smallest average of {config.CRAWL_STEPS} steps in a row in a run that ended normally: "
              f"{window[0]:.2g} of the output interval ({window[1]}); a crawl's block stops below "
              f"{config.CRAWL_RATIO:g}")
    else:
        print(f"no run that ended normally took {config.CRAWL_STEPS} steps or more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
