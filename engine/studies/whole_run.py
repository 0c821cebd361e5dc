"""``linkwork bench --whole-run [--peers]``: whole simulations, not single right-hand sides.

Every bundled example (``resources/examples/*.mech.json``, or ``--examples``) runs
``--t-end`` seconds (10) at its defaults -- the formulation, integrator and step
``linkwork run`` takes for it -- or under every formulation that accepts it
(``--formulations all``, or a list).  For each run:

* wall per simulated second and steps per wall second (rk4: right-hand sides / 4;
  index3: its steps; adaptive integrators: no fixed count, shown as a dash);
* the formulation's count of right-hand sides (index3: steps), and the time of one at a
  representative state (the end of a short warm-up run; the best of five batches);
* the overhead factor: wall / (count x that time) -- 1 when the run is nothing but its
  right-hand sides; what is above is the integrator, the output rows, the monitor,
  the projections;
* the closure error: the largest distance over the run's output instants between two
  points a loop-closing joint holds together (:mod:`.closure_points`), and the contract's
  ``violation.position`` (largest over the run).

A run's wall time covers :meth:`Simulation.run` to the end, rows included, as a user's run
does; model load, compile and the initial state are outside it (a warm-up run first).

``--peers`` adds, per example, MuJoCo (``mj_step``, RK4, the example's step; loops as
``connect``/``weld`` equalities: :mod:`.mujoco_model`) and Exudyn (index-3 generalized-alpha,
the same step: :mod:`.exudyn_model`), each from Linkwork's initial state, with their closure
errors at the same points.  The entries of an example -- every formulation and the peers
-- are timed round by round (A, B, C, A, B, C, ...) and each keeps its best round
(``--rounds``), so a slow spell of a shared machine falls on all of them alike.  Within a
round, an entry whose run took less than :data:`ROUND_WALL` runs again until its runs in
that round add up to it (a parallelogram that stops at 0.6 s takes 3 ms: three samples of
that are at the mercy of one interruption), keeping its best run, whichever engine.  A peer's
closure error comes from one more, untimed run that reads its points at every step.

Writes ``whole-run-<date>.json`` and ``.md`` to ``--out-dir`` (``benchmarks/results``).
"""

from __future__ import annotations

import datetime
import json
import math
import time
from pathlib import Path

import numpy as np

from .report import jsonable, log
from .timing import cpu_name, rhs_call, time_call

T_END = 10.0
ROUNDS = 3
#: seconds of runs an entry makes in each round at least (short runs repeated; the best kept)
ROUND_WALL = 0.05
#: the most runs of one entry in one round
ROUND_REPEATS = 50
#: simulated seconds of the untimed warm-up run (compiles what the run calls)
WARM_T = 0.2


def example_paths(names: list[str] | None = None) -> list[Path]:
    """The bundled examples, or those named (file stems, ``fourbar-crank-rocker``)."""
    from ..paths import resources_dir

    folder = resources_dir() / "examples"
    every = sorted(folder.glob("*.mech.json"))
    if not names:
        return every
    stems = {p.name[: -len(".mech.json")]: p for p in every}
    missing = [n for n in names if n not in stems]
    if missing:
        raise ValueError(f"unknown example(s) {', '.join(missing)} (bundled: {', '.join(stems)})")
    return [stems[n] for n in names]


def formulations_for(model, which: str | list[str] | None) -> list[str]:
    """The formulations to run ``model`` with: its default (None or ``"default"``), every
    registered one that accepts it (``"all"``), or those of a list that accept it."""
    from ..formulations import REGISTRY
    from ..simulation import file_defaults, resolve_settings

    if which in (None, "default", ["default"]):
        return [resolve_settings(model, file_defaults(model)).formulation]
    names = list(REGISTRY) if which in ("all", ["all"]) else list(which)
    return [n for n in names if n in REGISTRY and REGISTRY[n].supports(model)[0]]


# ------------------------------------------------------------------ the engines
class LinkworkEntry:
    """One formulation on one example: warm-up, per-unit time, timed rounds."""

    def __init__(self, model, formulation: str, t_end: float, threads: int | None, settings: dict | None = None):
        """``settings``: run settings over the example's defaults (``integrator``,
        ``rtol``, ``atol``); raises :class:`~engine.errors.SettingsError` where the
        formulation refuses them."""
        from ..simulation import file_defaults, resolve_settings

        self.model = model
        self.name = formulation
        s = file_defaults(model, formulation).replace(formulation=formulation, t_end=t_end, threads=threads,
                                                      **(settings or {}))
        self.settings = resolve_settings(model, s)
        self.best = math.inf
        self.result: dict = {"formulation": formulation, "integrator": self.settings.integrator,
                             "dt": self.settings.dt, "t_end": t_end}

    def warm(self) -> None:
        """A short run (compiles everything the timed runs call), then the time of one
        right-hand side (index3: one step) at the state it ends in."""
        from ..errors import SimulationError
        from ..simulation import Simulation

        s = self.settings
        warm = Simulation(self.model, s.replace(t_end=max(s.dt, min(WARM_T, s.t_end))))
        try:
            for _ in warm.run():
                pass
        except SimulationError:
            pass  # the timed run reports it
        t, y = 0.0, None
        try:
            for t, y in warm.states():
                pass
        except SimulationError:
            pass
        form = warm.formulation
        y = form.initial_state() if y is None else y
        if form.kind == "stepper":
            self.result["unit"] = "step"
            self.result["t_unit_s"] = time_call(lambda: form.step(t, y, s.dt))
        else:
            self.result["unit"] = "rhs"
            self.result["t_unit_s"] = time_call(rhs_call(form, t, y))
        self.V0 = form.evaluate(0.0, form.initial_state()).V.copy()

    def round(self) -> float:
        from ..errors import SimulationError
        from ..simulation import Simulation

        sim = Simulation(self.model, self.settings)
        sim.prepare()
        parts, failure = [], None
        t0 = time.perf_counter()
        try:
            for chunk in sim.run():
                parts.append(chunk.rows)
        except SimulationError as exc:
            failure = str(exc)
        wall = time.perf_counter() - t0
        self.best = min(self.best, wall)
        if "count" not in self.result:  # every round runs the same steps: measure the first
            self._measure(sim, parts, failure)
        return wall

    def _measure(self, sim, parts, failure) -> None:
        from .closure_points import closure_error_rows, closure_points

        r = self.result
        st = sim.stats
        rows = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
        r["failure"] = failure
        r["threads"] = int(sim.plan.threads)
        r["t_reached"] = float(rows[-1, 0]) if rows.shape[0] else 0.0
        r["count"] = int(st.get("steps", 0) if r.get("unit") == "step" else st.get("rhs_evaluations", 0))
        if r.get("unit") == "step":
            r["steps"] = r["count"]
        elif self.settings.integrator == "rk4":
            r["steps"] = r["count"] // 4
        else:
            r["steps"] = None  # adaptive: the integrator's own steps are not counted
        r["output_rows"] = int(rows.shape[0])
        pts = closure_points(self.model)
        r["closure_error"] = float(closure_error_rows(self.model, pts, sim.columns, rows).max()) \
            if pts.count and rows.shape[0] else None
        ip = sim.columns.index("violation.position")
        r["violation_position_max"] = float(rows[:, ip].max()) if rows.shape[0] else None

    def finish(self) -> dict:
        r = self.result
        r["wall_s"] = self.best
        simulated = r.get("t_reached") or 0.0
        r["wall_per_simulated_s"] = self.best / simulated if simulated else None
        r["steps_per_s"] = r["steps"] / self.best if r.get("steps") else None
        unit = r.get("t_unit_s")
        r["overhead"] = self.best / (r["count"] * unit) if r.get("count") and unit else None
        return r


class MujocoEntry:
    """MuJoCo on one example: ``mj_step`` (RK4) for ``t_end`` at the example's step."""

    name = "mujoco"

    def __init__(self, model, V0: np.ndarray, dt: float, t_end: float):
        from .mujoco_model import build

        self.model, self.V0, self.dt = model, V0, dt
        self.n = max(1, int(round(t_end / dt)))
        self.mech = build(model, dt)
        self.best = math.inf
        self.result = {"engine": "mujoco", "integrator": "rk4", "dt": dt, "steps": self.n,
                       "equalities": dict(self.mech.equalities)}

    def _fresh(self):
        from .mujoco_model import initial_data

        d, residual = initial_data(self.mech, self.V0)
        self.result["initial_velocity_residual"] = residual
        return d

    def warm(self) -> None:
        import mujoco

        d = self._fresh()
        for _ in range(min(self.n, 10)):
            mujoco.mj_step(self.mech.mj, d)

    def round(self) -> float:
        import mujoco

        m, d = self.mech.mj, self._fresh()
        step, n = mujoco.mj_step, self.n
        t0 = time.perf_counter()
        for _ in range(n):
            step(m, d)
        wall = time.perf_counter() - t0
        self.best = min(self.best, wall)
        return wall

    def errors(self) -> None:
        """One untimed run reading the closure and gear errors after every step."""
        import mujoco

        from .mujoco_model import closure_error, diverged, gear_error

        m, d = self.mech.mj, self._fresh()
        closure = gear = 0.0
        failure = None
        for k in range(self.n):
            mujoco.mj_step(m, d)
            if diverged(d):
                failure = f"diverged at t = {(k + 1) * self.dt:.4g} s (MuJoCo reset its state)"
                break
            mujoco.mj_kinematics(m, d)
            closure = max(closure, closure_error(self.mech, d))
            gear = max(gear, gear_error(self.mech, d))
        r = self.result
        r["failure"] = failure
        r["closure_error"] = closure if self.mech.sites.shape[0] else None
        r["gear_error"] = gear if self.mech.gears.shape[0] else None

    def finish(self) -> dict:
        self.errors()
        r = self.result
        r["wall_s"] = self.best
        r["wall_per_simulated_s"] = self.best / (self.n * self.dt)
        r["steps_per_s"] = self.n / self.best
        return r


class ExudynEntry:
    """Exudyn on one example: index-3 generalized-alpha for ``t_end`` at the example's step."""

    name = "exudyn"

    def __init__(self, model, V0: np.ndarray, dt: float, t_end: float):
        from .exudyn_model import ExudynMechanism

        self.dt, self.t_end = dt, t_end
        self.mech = ExudynMechanism(model, V0, dt, t_end)
        self.best = math.inf
        self.result = {"engine": "exudyn", "integrator": "generalized-alpha (index 3)", "dt": dt}

    def warm(self) -> None:
        self.mech.run(min(self.t_end, max(self.dt, WARM_T)))

    def round(self) -> float:
        wall, _, failure = self.mech.run(self.t_end)
        self.best = min(self.best, wall)
        self.result["failure"] = failure
        self.result["steps"] = self.mech.steps
        self.result["newton_iterations"] = self.mech.newton_iterations
        return wall

    def finish(self) -> dict:
        _, closure, failure = self.mech.run(self.t_end, record=True)
        r = self.result
        r["failure"] = r.get("failure") or failure
        r["closure_error"] = closure if self.mech.sensors else None
        r["wall_s"] = self.best
        r["wall_per_simulated_s"] = self.best / self.t_end
        r["steps_per_s"] = r["steps"] / self.best if r.get("steps") else None
        return r


# ------------------------------------------------------------------ one example
def _quiet(fn):
    """Run ``fn`` with Python's and the C library's standard output sent to stderr
    (Exudyn prints its warnings there); returns what ``fn`` returns."""
    import contextlib
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            return fn()
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _peer(cls, model, V0, dt, t_end, label: str):
    """A peer's entry, or the reason there is none (a string): a peer whose model cannot
    carry the mechanism is not timed on another one."""
    from . import exudyn_model, mujoco_model

    why = (mujoco_model if cls is MujocoEntry else exudyn_model).not_comparable(model)
    if why:
        return "not comparable: " + "; ".join(why)
    try:
        return cls(model, V0, dt, t_end)
    except Exception as exc:  # noqa: BLE001 - a peer that cannot build this model is reported, not fatal
        return f"{label} could not build the model: {type(exc).__name__}: {exc}"


def measure_example(path: Path, forms, t_end: float, rounds: int, peers: bool, threads: int | None,
                    settings: dict | None = None) -> dict:
    """Every entry of one example, timed round by round (module docstring); ``settings``:
    run settings over the defaults (:class:`LinkworkEntry`), a formulation that refuses
    them left out."""
    from ..errors import SettingsError
    from ..model import load_model
    from .exudyn_model import available as exudyn_available

    stem = path.name[: -len(".mech.json")]
    model = load_model(path)
    out = {"example": stem, "bodies": model.nb, "loops": model.ncut, "gears": model.ng, "rows": [], "peers": {}}
    names = formulations_for(model, forms)
    if not names:
        out["refused"] = "no formulation asked for accepts this mechanism"
        return out
    entries = []
    for f in names:
        try:
            entries.append(LinkworkEntry(model, f, t_end, threads, settings))
        except SettingsError as exc:
            log(f"  {stem}: {f} refuses {settings}: {exc}")
    if not entries:
        out["refused"] = f"no formulation asked for accepts this mechanism with {settings}"
        return out
    for e in entries:
        log(f"  {stem}: warming up {e.name}")
        e.warm()
    if peers:
        base = entries[0]
        V0, dt = base.V0, base.settings.dt
        out["peers"]["mujoco"] = _peer(MujocoEntry, model, V0, dt, t_end, "MuJoCo")
        ok, why = exudyn_available()
        out["peers"]["exudyn"] = _quiet(lambda: _peer(ExudynEntry, model, V0, dt, t_end, "Exudyn")) if ok else why
        for k, p in out["peers"].items():
            if not isinstance(p, str):
                log(f"  {stem}: warming up {k}")
                _quiet(p.warm)
                entries.append(p)
    for r in range(rounds):
        for e in entries:
            wall = spent = _quiet(e.round)
            runs = 1
            while spent < ROUND_WALL and runs < ROUND_REPEATS:
                w = _quiet(e.round)
                wall, spent, runs = min(wall, w), spent + w, runs + 1
            log(f"  {stem}: round {r + 1}/{rounds} {e.name}: {wall:.4f} s (best of {runs})")
    for e in entries[: len(names)]:
        out["rows"].append(e.finish())
    for k, p in list(out["peers"].items()):
        out["peers"][k] = {"engine": k, "unavailable": p} if isinstance(p, str) else _quiet(p.finish)
    return out


# ------------------------------------------------------------------ table
def _f(v, fmt: str, width: int) -> str:
    return f"{'–':>{width}s}" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:{width}{fmt}}"


def _peer_cells(p: dict | None) -> tuple[float | None, float | None, str]:
    """(wall per simulated second, closure error, note) of a peer's result."""
    if not p:
        return None, None, ""
    if p.get("unavailable"):
        return None, None, p["unavailable"]
    if p.get("failure"):  # a run that stopped or diverged has no wall time to compare
        return None, None, p["failure"]
    return p.get("wall_per_simulated_s"), p.get("closure_error"), ""


COLUMNS = ("example", "formulation", "integrator", "dt", "wall/sim-s ms", "steps/s", "count", "t_unit us",
           "overhead", "closure m")
PEER_COLUMNS = ("mujoco ms/sim-s", "mujoco closure m", "lw/mujoco", "exudyn ms/sim-s", "exudyn closure m",
                "lw/exudyn")


def table_lines(examples: list[dict], peers: bool) -> list[str]:
    """The printed table: one line per example and formulation; the peers' columns repeat
    per formulation, a ratio is Linkwork's wall over the peer's."""
    head = (f"{'example':26s} {'formulation':>11s} {'integrator':>11s} {'dt':>7s} {'wall/sim-s ms':>13s} "
            f"{'steps/s':>9s} {'count':>9s} {'t_unit us':>9s} {'overhead':>8s} {'closure m':>9s}")
    if peers:
        head += (f" {'mujoco ms/sim-s':>15s} {'mujoco closure m':>16s} {'lw/mujoco':>9s}"
                 f" {'exudyn ms/sim-s':>15s} {'exudyn closure m':>16s} {'lw/exudyn':>9s}")
    lines = [head]
    notes = []
    for ex in examples:
        if ex.get("refused"):
            lines.append(f"{ex['example']:26s} {ex['refused']}")
            continue
        pc = {k: _peer_cells(ex["peers"].get(k)) for k in ("mujoco", "exudyn")}
        for k, (_, _, note) in pc.items():
            if note:
                notes.append(f"{ex['example']}, {k}: {note}")
        for r in ex["rows"]:
            wps = r.get("wall_per_simulated_s")
            count = f"{r['count']}{'s' if r.get('unit') == 'step' else ''}" if r.get("count") is not None else "–"
            line = (f"{ex['example']:26s} {r['formulation']:>11s} {r['integrator']:>11s} {r['dt']:7.3g} "
                    + _f(None if wps is None else wps * 1e3, ".2f", 13) + " "
                    + _f(r.get("steps_per_s"), ".0f", 9) + f" {count:>9s} "
                    + _f(None if r.get("t_unit_s") is None else r["t_unit_s"] * 1e6, ".2f", 9) + " "
                    + _f(r.get("overhead"), ".2f", 8) + " " + _f(r.get("closure_error"), ".1e", 9))
            if peers:
                for k in ("mujoco", "exudyn"):
                    pw, pcl, _ = pc[k]
                    ratio = wps / pw if wps and pw else None
                    line += (" " + _f(None if pw is None else pw * 1e3, ".2f", 15) + " " + _f(pcl, ".1e", 16)
                             + " " + _f(ratio, ".2f", 9))
            lines.append(line)
            if r.get("failure"):
                notes.append(f"{ex['example']}, {r['formulation']}: {r['failure']}")
    if notes:
        lines += ["", "notes:"] + [f"  {n}" for n in notes]
    return lines


def markdown(result: dict) -> str:
    """``whole-run-<date>.md``: the command, the machine, the table and how to read it."""
    peers = result["peers"]
    cols = list(COLUMNS) + (list(PEER_COLUMNS) if peers else [])
    out = [f"# Whole runs: {result['t_end']:g} s of every example ({result['date']})", "",
           f"`{result['command']}` on {result['cpu']}, {result['rounds']} rounds, best kept.", "",
           "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    notes = []
    for ex in result["examples"]:
        if ex.get("refused"):
            out.append(f"| {ex['example']} | {ex['refused']} |" + " |" * (len(cols) - 2))
            continue
        pc = {k: _peer_cells(ex["peers"].get(k)) for k in ("mujoco", "exudyn")}
        for k, (_, _, note) in pc.items():
            if note:
                notes.append(f"- {ex['example']}, {k}: {note}")
        for r in ex["rows"]:
            wps = r.get("wall_per_simulated_s")
            cells = [ex["example"], r["formulation"], r["integrator"], f"{r['dt']:g}",
                     _f(None if wps is None else wps * 1e3, ".2f", 0), _f(r.get("steps_per_s"), ".0f", 0),
                     f"{r.get('count')}{' steps' if r.get('unit') == 'step' else ''}",
                     _f(None if r.get("t_unit_s") is None else r["t_unit_s"] * 1e6, ".2f", 0),
                     _f(r.get("overhead"), ".2f", 0), _f(r.get("closure_error"), ".1e", 0)]
            if peers:
                for k in ("mujoco", "exudyn"):
                    pw, pcl, _ = pc[k]
                    cells += [_f(None if pw is None else pw * 1e3, ".2f", 0), _f(pcl, ".1e", 0),
                              _f(wps / pw if wps and pw else None, ".2f", 0)]
            out.append("| " + " | ".join(c.strip() for c in cells) + " |")
            if r.get("failure"):
                notes.append(f"- {ex['example']}, {r['formulation']}: {r['failure']}")
    if notes:
        out += ["", "Notes:", ""] + notes
    out += ["", "Columns: docs/benchmarks.md, \"Whole runs\".  `count`: right-hand sides (index3: steps); "
                "`t_unit`: one of them at the end of a warm-up run; overhead = wall / (count x t_unit); "
                "closure: the largest distance between two points a loop-closing joint holds together, "
                "over the output instants (MuJoCo, Exudyn: every step); a dash where the example has no "
                "loop.  Ratios: Linkwork's wall over the peer's.", ""]
    return "\n".join(out)


def run(argv_line: str, forms, examples: list[str] | None, t_end: float, rounds: int, peers: bool,
        threads: int | None, out_dir: Path | None, settings: dict | None = None) -> dict:
    """Measure, print the table, write JSON and Markdown (unless ``out_dir`` is None);
    ``settings``: run settings over every example's defaults (``integrator``, ``rtol``,
    ``atol``)."""
    now = datetime.datetime.now()
    result = {"date": now.isoformat(timespec="seconds"), "cpu": cpu_name(), "command": argv_line,
              "t_end": t_end, "rounds": rounds, "peers": peers, "examples": []}
    if peers:
        result["versions"] = _versions()
    paths = example_paths(examples)
    for k, path in enumerate(paths):
        log(f"[{k + 1}/{len(paths)}] {path.name}")
        result["examples"].append(measure_example(path, forms, t_end, rounds, peers, threads, settings))
    print(f"linkwork bench --whole-run  {result['date']}  {result['cpu']}  ({t_end:g} s per run, best of "
          f"{rounds} rounds)")
    for line in table_lines(result["examples"], peers):
        print(line)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = out_dir / f"whole-run-{now.strftime('%Y-%m-%dT%H%M')}"
        if stem.with_suffix(".json").exists():  # another run started in the same minute
            stem = out_dir / f"whole-run-{now.strftime('%Y-%m-%dT%H%M%S')}"
        stem.with_suffix(".json").write_text(json.dumps(jsonable(result), indent=1), encoding="utf-8")
        stem.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
        print(f"\nwritten {stem}.json and {stem}.md")
    return result


def _versions() -> dict:
    out = {}
    for mod in ("mujoco", "exudyn"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", None) or str(m.config.Version())
        except Exception:  # noqa: BLE001 - a missing peer has no version
            out[mod] = None
    return out
