"""MuJoCo at Linkwork's accuracy: what MuJoCo costs when its loops close and its energy
holds as well as Linkwork's.

``linkwork bench --whole-run --peers`` times MuJoCo at the example's own step with its
default soft constraints, whose loops open by 5e-5 to 1e-2 m; Linkwork's close to round-off,
and Linkwork's step monitor refines a step that loses energy.  This script asks the other
question: what does MuJoCo need, and what does it then take, to hold the same loops to a
given closure, or to keep the energy of these conservative mechanisms as well as Linkwork?

MuJoCo's equality constraints are soft: each is a damped spring of time constant
``solref[0]`` whose force is blended with the unconstrained motion by the impedance
``solimp`` (at most 0.9999).  MuJoCo keeps the time constant at two steps or more (its
``refsafe`` rule), so a stiffer loop needs a smaller step.  For each example and each step
``dt' = dt x factor`` (``--factors``), MuJoCo runs RK4 with

* its defaults (``solref`` 0.02 s, ``solimp`` 0.9 ... 0.95), the whole-run benchmark's model;
* on a mechanism with loops, also the stiffest constraints it accepts at that step:
  ``solref = (2 dt', 1)``, ``solimp = (0.9999, 0.9999, 0.001, 0.5, 2)``.

Linkwork runs at its defaults (the formulation, integrator and step ``linkwork run``
takes).  All entries of an example are timed round by round (best of ``--rounds``).  Each
one's closure is the largest distance, over every MuJoCo step (Linkwork: every output row),
between two points a loop-closing joint holds together (:mod:`linkwork.engine.studies.
closure_points`); its energy drift the largest change of the total energy (MuJoCo's
``mjENBL_ENERGY``: gravity and springs, and the kinetic energy; every example here is
conservative).  The closure and drift come from one more, untimed run.  The table gives, per
example, every MuJoCo configuration; then the cheapest one that closes the loops to
``--closure`` (1e-9 m) or better, and the cheapest whose energy drifts no more than
Linkwork's, against Linkwork's wall.

    python benchmarks/mujoco_closure.py                       # the small examples, 2 s each
    python benchmarks/mujoco_closure.py --examples loop-8 --factors 1,0.1,0.01 --t-end 1

Needs the ``bench`` extra (``mujoco``).  Writes ``mujoco-closure-<date>.md`` and ``.json``
to ``--out-dir`` (``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from linkwork.engine.studies.whole_run import MujocoEntry

#: the small examples of the whole-run benchmark's MuJoCo line
EXAMPLES = ("parallelogram-fourbar", "fourbar-crank-rocker", "loop-4", "loop-8", "double-loop-8",
            "ladder-4", "ladder-8", "ladder-16", "chain-8-revolute", "chain-5-spherical-spatial",
            "spatial-double-pendulum")
#: the stiffest impedance MuJoCo accepts (mjMAXIMP), at both ends of its width
STIFF_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)


class Mujoco(MujocoEntry):
    """MuJoCo RK4 on one example at one step (the whole-run benchmark's entry), with default
    or the stiffest constraints."""

    def __init__(self, model, V0: np.ndarray, dt: float, t_end: float, stiff: bool):
        super().__init__(model, V0, dt, t_end)
        self.stiff = stiff
        m = self.mech.mj
        if stiff and m.neq:
            m.eq_solref[:] = (2.0 * dt, 1.0)
            m.eq_solimp[:] = STIFF_SOLIMP

    def accuracy(self) -> dict:
        """The best round, and an untimed run's closure error and energy drift after every step."""
        import mujoco

        from linkwork.engine.studies.mujoco_model import closure_error, diverged

        m = self.mech.mj
        m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
        d = self._fresh()
        e0 = float(np.sum(d.energy))
        closure, drift, failure = 0.0, 0.0, None
        for k in range(self.n):
            mujoco.mj_step(m, d)
            if diverged(d):
                failure = f"diverged at t = {(k + 1) * self.dt:.4g} s"
                break
            mujoco.mj_forward(m, d)  # positions, energy and sites at the step's end
            closure = max(closure, closure_error(self.mech, d))
            drift = max(drift, abs(float(np.sum(d.energy)) - e0))
        m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_ENERGY)
        return {"engine": "mujoco", "dt": self.dt, "constraints": "stiff" if self.stiff else "default",
                "solref": [float(x) for x in m.eq_solref[0]] if m.neq else None,
                "solimp": [float(x) for x in m.eq_solimp[0]] if m.neq else None,
                "steps": self.n, "wall_s": self.best, "wall_per_simulated_s": self.best / (self.n * self.dt),
                "closure_error": closure if self.mech.sites.shape[0] else None, "energy_drift": drift,
                "failure": failure}


def energy_drift(model, settings) -> float:
    """The largest change of Linkwork's total energy over the rows of one run."""
    from linkwork.engine.simulation import Simulation

    sim = Simulation(model, settings)
    rows = np.vstack([chunk.rows for chunk in sim.run()])
    e = rows[:, sim.columns.index("energy.total")]
    return float(np.max(np.abs(e - e[0])))


def measure(path: Path, t_end: float, factors: list[float], rounds: int) -> dict:
    from linkwork.engine.model import load_model
    from linkwork.engine.studies.whole_run import LinkworkEntry, formulations_for

    model = load_model(path)
    form = formulations_for(model, None)[0]
    lw = LinkworkEntry(model, form, t_end, None)
    lw.warm()
    dt = lw.settings.dt
    kinds = (False, True) if model.ncut else (False,)  # a tree has no constraint to stiffen
    peers = [Mujoco(model, lw.V0, dt * f, t_end, stiff) for f in factors for stiff in kinds]
    for p in peers:
        p.round()  # warm
    entries = [lw] + peers
    for r in range(rounds):
        for e in entries:
            e.round()
        print(f"  {path.name}: round {r + 1}/{rounds}", file=sys.stderr, flush=True)
    result = lw.finish()
    result["energy_drift"] = energy_drift(model, lw.settings)
    return {"example": path.name[: -len(".mech.json")], "linkwork": result, "mujoco": [p.accuracy() for p in peers]}


def cheapest(ex: dict, closure: float | None, drift: float | None) -> dict | None:
    """The fastest MuJoCo configuration of ``ex`` whose loops close to ``closure`` or better
    and whose energy drifts by ``drift`` or less (None: not asked)."""
    ok = [m for m in ex["mujoco"] if not m["failure"]
          and (closure is None or (m["closure_error"] is not None and m["closure_error"] <= closure))
          and (drift is None or m["energy_drift"] <= drift)]
    return min(ok, key=lambda m: m["wall_per_simulated_s"]) if ok else None


def _e(v) -> str:
    return "–" if v is None else f"{v:.1e}"


def markdown(results: list[dict], closure: float, args) -> str:
    from linkwork.engine.studies.timing import cpu_name

    lines = [f"# MuJoCo at Linkwork's closure and energy drift ({datetime.datetime.now().isoformat(timespec='seconds')})",
             "", f"`python benchmarks/mujoco_closure.py --examples {args.examples} --t-end {args.t_end:g} "
             f"--factors {args.factors} --rounds {args.rounds}` on {cpu_name()}; best of {args.rounds} interleaved "
             "rounds; closure and energy drift: the largest over the run. Columns: the script's docstring.", "",
             "| example | engine | dt | constraints | wall/sim-s ms | closure m | energy drift J | lw/this |",
             "|---|---|---|---|---|---|---|---|"]
    for ex in results:
        lw = ex["linkwork"]
        w = lw["wall_per_simulated_s"]
        lines.append(f"| {ex['example']} | linkwork {lw['formulation']} {lw['integrator']} | {lw['dt']:g} | exact "
                     f"| {1e3 * w:.2f} | {_e(lw['closure_error'])} | {_e(lw['energy_drift'])} | 1 |")
        for m in ex["mujoco"]:
            if m["failure"]:
                lines.append(f"| | mujoco rk4 | {m['dt']:g} | {m['constraints']} | – | – | – | {m['failure']} |")
                continue
            lines.append(f"| | mujoco rk4 | {m['dt']:g} | {m['constraints']} | {1e3 * m['wall_per_simulated_s']:.2f} "
                         f"| {_e(m['closure_error'])} | {_e(m['energy_drift'])} | {w / m['wall_per_simulated_s']:.3f} |")

    def cell(m, w):
        if m is None:
            return "none of those tried | – | –"
        return f"dt={m['dt']:g} {m['constraints']} | {1e3 * m['wall_per_simulated_s']:.2f} | {w / m['wall_per_simulated_s']:.2f}"

    lines += ["", "Per example: Linkwork at its defaults against MuJoCo at the example's step and its defaults; "
              f"against the cheapest MuJoCo configuration above whose loops close to {closure:g} m or better; and "
              "against the cheapest whose energy drifts no more than Linkwork's.", "",
              "| example | linkwork ms/sim-s | lw / mujoco at dt, default | cheapest mujoco closing to "
              f"{closure:g} m | its ms/sim-s | lw / it | cheapest mujoco drifting ≤ linkwork | its ms/sim-s | lw / it |",
              "|---|---|---|---|---|---|---|---|---|"]
    for ex in results:
        lw = ex["linkwork"]
        w = lw["wall_per_simulated_s"]
        d = next(m for m in ex["mujoco"] if m["dt"] == lw["dt"] and m["constraints"] == "default")
        dcell = "–" if d["failure"] else f"{w / d['wall_per_simulated_s']:.2f}"
        c = cell(cheapest(ex, closure, None), w) if lw["closure_error"] is not None else "no loop | – | –"
        lines.append(f"| {ex['example']} | {1e3 * w:.2f} | {dcell} | {c} | {cell(cheapest(ex, None, lw['energy_drift']), w)} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", default=",".join(EXAMPLES))
    p.add_argument("--t-end", type=float, default=2.0, help="simulated seconds per run (2)")
    p.add_argument("--factors", default="1,0.3,0.1,0.03,0.01", help="MuJoCo's steps as fractions of the example's")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--closure", type=float, default=1e-9, help="the closure to match, m (1e-9)")
    p.add_argument("--out-dir", default="benchmarks/results")
    a = p.parse_args(argv)
    from linkwork.engine.studies.whole_run import example_paths

    factors = [float(x) for x in a.factors.split(",")]
    results = [measure(path, a.t_end, factors, a.rounds) for path in example_paths(a.examples.split(","))]
    text = markdown(results, a.closure, a)
    print(text)
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H%M")
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"mujoco-closure-{stamp}.md").write_text(text, encoding="utf-8")
    from linkwork.engine.studies.report import jsonable

    (out / f"mujoco-closure-{stamp}.json").write_text(json.dumps(jsonable(results), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
