"""``linkwork study NAME``: the papers' numerical studies, reproducible by one command.

Studies (docs/studies.md):

* ``hdca-vs-dca`` -- paper 001 section 3: cases 1-3 (single loop of 4 bodies,
  single loop of 8 bodies, double loop of 8 bodies), 10 s, integrators rk45,
  lsoda, rk23 (MATLAB's ode45, ode113, ode23) at tolerances 1e-3 ... 1e-9:
  energy error, velocity- and position-level constraint violation and mirror
  symmetry vs time; DCA/HDCA ratios of wall time and right-hand-side
  evaluations vs tolerance; mean time per right-hand-side call (the paper's
  Table 1) and wall time per run (Table 2).
* ``dca-drift`` -- issue 3: position-constraint drift of ``dca`` without
  stabilisation on the four-bar and paper 001's loops over 10 s, on log axes
  with a t^2 reference, and the fitted growth exponent.
* ``index3`` -- paper 000 sections 4.2-4.4 and 5.2: the spatial double pendulum,
  the four-bar through its singular configuration, the 128-link pendulum for
  alpha = 1e6 ... 1e9 with and without geometric stiffness, and the timing of
  the 128- and 1024-link chains (Newton vs projections).
* ``rcr`` -- paper 002 sections 4.1-4.3 and Fig. 11: four-bar drift (velocity vs
  acceleration level), the redundant five-bar against ``dense``, ladders of 1-64
  cells equivalent to one 2-DOF pendulum, and the cost per right-hand side on ladders.

Each study writes PNG plots, ``results.json`` and a Markdown report
(``<out>/<name>.md``, images in ``<out>/<name>/``).  The default ``--out`` is
``linkwork-studies/`` in the current folder: a study never writes into the
checkout's committed ``docs/studies`` unless asked (``--out docs/studies``
regenerates them).  Plots need matplotlib (``pip install -e .[bench]``).

The pipeline's branch and health monitor is off in the studies (``STUDY_MONITOR``):
they measure each formulation's own behaviour -- DCA's unstabilised drift, index3's
failures at small penalties -- which the monitor exists to stop or refine away.  For the
same reason ``dca`` and ``hdca`` run there without their projection onto the loops
(:func:`study_projection`).

Timing: a run's wall time covers the integration alone (``Simulation.states``);
the output rows are evaluated afterwards.  Each timed run is repeated
(``--repeat``, best kept) with the two formulations interleaved, so that the
ratios are comparable on a shared, noisy machine.
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

from ..errors import SimulationError

#: the studies run without the pipeline's monitor (module docstring)
STUDY_MONITOR = False


def study_projection(formulation: str) -> bool | None:
    """The ``projection`` setting of a study's run: off for ``dca`` and ``hdca``, whose drift
    the papers measure (the product projects them onto their loops at output instants);
    the formulation's own default otherwise."""
    return False if formulation in ("dca", "hdca") else None

TOLERANCES = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
INTEGRATORS = (("rk45", "ode45"), ("lsoda", "ode113"), ("rk23", "ode23"))
PAPER001_CASES = (("case 1", "loop-4"), ("case 2", "loop-8"), ("case 3", "double-loop-8"))
T_END = 10.0
HISTORY_DT = 0.01
HISTORY_TOL = 1e-6  # paper 001 section 3.2: ode45 with delta = 1e-6
LONG_FACTOR = 10  # the long runs: 10 x t_end


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _case_model(stem: str):
    from ..generators import paper_cases
    from ..model import build_model

    return build_model(paper_cases()[stem])


def mirror_pairs(model, x0: np.ndarray, tol: float = 1e-9) -> tuple[list[tuple[int, int]], float]:
    """Pairs of bodies (internal indices) whose initial centres of mass are mirror images
    in the vertical plane x = x_mid (x_mid: the mean x); bodies on the plane pair with
    themselves.  Raises ValueError if the start is not mirror-symmetric."""
    x_mid = float(x0[:, 0].mean())
    pairs = []
    for a in range(model.nb):
        target = np.array([2 * x_mid - x0[a, 0], x0[a, 1], x0[a, 2]])
        d = np.abs(x0 - target).max(axis=1)
        b = int(np.argmin(d))
        if d[b] > tol * max(1.0, np.abs(x0).max()):
            raise ValueError(f"body {model.body_names[a]!r} has no mirror image")
        if a <= b:
            pairs.append((a, b))
    return pairs, x_mid


def symmetry_error(x: np.ndarray, pairs, x_mid: float) -> float:
    """Largest deviation of the body centres from mirror symmetry."""
    err = 0.0
    for a, b in pairs:
        err = max(err, abs(x[a, 0] + x[b, 0] - 2 * x_mid), abs(x[a, 1] - x[b, 1]), abs(x[a, 2] - x[b, 2]))
    return err


def run_case(model, formulation: str, integrator: str, tol: float, t_end: float, dt: float,
             pairs=None, x_mid=0.0) -> dict:
    """Integrate (timed), then evaluate every output: energy error, violations, symmetry."""
    from ..simulation import Settings, Simulation

    sim = Simulation(model, Settings(formulation=formulation, integrator=integrator, rtol=tol, atol=tol,
                                     t_end=t_end, dt=dt, monitor=STUDY_MONITOR,
                                     projection=study_projection(formulation)))
    sim.prepare()
    form = sim.formulation
    form.nfev = 0
    ts, ys = [], []
    t0 = time.perf_counter()
    try:
        for t, y in sim.states():
            ts.append(t)
            ys.append(y)
        failure = None
    except SimulationError as exc:
        failure = str(exc)
    wall = time.perf_counter() - t0
    nfev = form.nfev
    cols = sim.columns
    ie, iv, ip = (cols.index(c) for c in ("energy.total", "violation.velocity", "violation.position"))
    rows = []
    sym = []
    for t, y in zip(ts, ys):
        ev = form.evaluate(t, y)
        rows.append(sim.recorder.row(ev))
        if pairs is not None:
            sym.append(symmetry_error(ev.x, pairs, x_mid))
    rows = np.array(rows)
    E = rows[:, ie]
    return {
        "formulation": formulation, "integrator": integrator, "tol": tol, "wall_s": wall, "nfev": nfev,
        "failure": failure, "t": rows[:, 0], "energy_error": np.abs(E - E[0]),
        "violation_velocity": rows[:, iv], "violation_position": rows[:, ip],
        "symmetry": np.array(sym) if pairs is not None else None,
    }


def time_rhs(model, formulation: str, states: list[np.ndarray], min_batch: float = 0.05) -> float:
    """Mean seconds per right-hand-side call over ``states`` (best of 3 batches)."""
    from ..simulation import Settings, Simulation

    form = Simulation(model, Settings(formulation=formulation)).formulation
    for y in states:
        form.rhs(0.0, y)
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            for y in states:
                form.rhs(0.0, y)
        if time.perf_counter() - t0 >= min_batch:
            break
        n *= 2
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            for y in states:
                form.rhs(0.0, y)
        best = min(best, (time.perf_counter() - t0) / (n * len(states)))
    return best


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("linkwork study: the plots need matplotlib (pip install -e .[bench])") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "legend.fontsize": 8, "savefig.bbox": "tight"})
    return plt


COLORS = {"dca": "#c0392b", "hdca": "#2471a3"}


def _fmt(v: float, digits: int = 2) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:.{digits}e}"


# ----------------------------------------------------------------- hdca-vs-dca


def hdca_vs_dca(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    from ..formulations import REGISTRY
    from ..simulation import Settings, Simulation

    for f in ("dca", "hdca"):
        if f not in REGISTRY:
            raise SystemExit(f"linkwork study: formulation {f!r} is not available")
    tols = (1e-3, 1e-6) if quick else TOLERANCES
    t_end = 2.0 if quick else T_END
    forms = ("dca", "hdca")
    result = {"study": "hdca-vs-dca", **stamp, "t_end": t_end, "tolerances": list(tols), "cases": {}}
    histories = {}
    for label, stem in PAPER001_CASES:
        model = _case_model(stem)
        probe = Simulation(model, Settings(formulation="dca")).formulation
        pairs, x_mid = mirror_pairs(model, probe.evaluate(0.0, probe.initial_state()).x)
        case = {"stem": stem, "name": model.spec.name, "sweep": [], "history": {}, "rhs_time_s": {}}
        # time histories at the paper's setting (plots), every integrator for symmetry
        for integ, _ in INTEGRATORS:
            for f in forms:
                _log(f"{label} ({stem}): history {f} {integ} tol {HISTORY_TOL:g}")
                r = run_case(model, f, integ, HISTORY_TOL, t_end, HISTORY_DT, pairs, x_mid)
                histories[(stem, f, integ)] = r
                case["history"][f"{f}/{integ}"] = {
                    "nfev": r["nfev"], "failure": r["failure"],
                    "energy_error_max": float(r["energy_error"].max()),
                    "violation_velocity_max": float(r["violation_velocity"].max()),
                    "violation_position_end": float(r["violation_position"][-1]),
                    "symmetry_max": float(r["symmetry"].max()),
                }
        # the sweep: wall time and nfev (integration only), drift at t_end
        for integ, _ in INTEGRATORS:
            for tol in tols:
                best = {f: None for f in forms}
                for k in range(repeat):
                    for f in (forms if k % 2 == 0 else forms[::-1]):
                        r = run_case(model, f, integ, tol, t_end, t_end, pairs, x_mid)
                        if best[f] is None or r["wall_s"] < best[f]["wall_s"]:
                            best[f] = r
                for f in forms:
                    r = best[f]
                    case["sweep"].append({
                        "formulation": f, "integrator": integ, "tol": tol, "wall_s": r["wall_s"],
                        "nfev": r["nfev"], "failure": r["failure"],
                        "violation_position_end": float(r["violation_position"][-1]),
                        "violation_velocity_end": float(r["violation_velocity"][-1]),
                        "energy_error_end": float(r["energy_error"][-1]),
                        "symmetry_end": float(r["symmetry"][-1]),
                    })
                _log(f"{label} ({stem}): {integ} tol {tol:g}: wall dca/hdca "
                     f"{best['dca']['wall_s'] / best['hdca']['wall_s']:.2f}, nfev {best['dca']['nfev']}/"
                     f"{best['hdca']['nfev']}")
        # long runs: how the drift ratio develops beyond the paper's 10 s
        for f in forms:
            _log(f"{label} ({stem}): long run {f} rk45 tol {HISTORY_TOL:g}, {LONG_FACTOR * t_end:g} s")
            r = run_case(model, f, "rk45", HISTORY_TOL, LONG_FACTOR * t_end, LONG_FACTOR * t_end / 1000)
            histories[(stem, f, "long")] = r
            case["long"] = case.get("long", {})
            case["long"][f] = {"t_end": LONG_FACTOR * t_end, "failure": r["failure"],
                               "violation_position_end": float(r["violation_position"][-1]),
                               "violation_position_at_t_end": float(np.interp(t_end, r["t"],
                                                                              r["violation_position"]))}
        # Table 1: mean time per rhs call at states along the trajectory
        for f in forms:
            r = histories[(stem, f, "rk45")]
            sim = Simulation(model, Settings(formulation=f, integrator="rk45", rtol=1e-8, atol=1e-8,
                                             t_end=t_end, dt=t_end / 10, monitor=STUDY_MONITOR,
                                             projection=study_projection(f)))
            states = [y for _, y in sim.states()]
            case["rhs_time_s"][f] = time_rhs(model, f, states)
        result["cases"][label] = case
    _hdca_plots(out, result, histories, t_end)
    result["_report"] = _hdca_report(result)
    return result


def _ratio(case, key, integ, tol):
    vals = {}
    for row in case["sweep"]:
        if row["integrator"] == integ and row["tol"] == tol:
            vals[row["formulation"]] = row
    a, b = vals["dca"], vals["hdca"]
    if a["failure"] or b["failure"] or not b[key]:
        return float("nan")
    return a[key] / b[key]


def _reference_lines(ax, dca, hdca, t_end: float) -> None:
    """t^2 through DCA's final violation, t through HDCA's."""
    tt = np.array([t_end / 100, t_end])
    ax.plot(tt, max(float(dca["violation_position"][-1]), 1e-18) * (tt / t_end) ** 2, "k--", lw=0.8, label="∝ t²")
    ax.plot(tt, max(float(hdca["violation_position"][-1]), 1e-18) * (tt / t_end), "k:", lw=0.8, label="∝ t")


def _hdca_plots(out: Path, result: dict, histories: dict, t_end: float) -> None:
    plt = _pyplot()
    img = out / "hdca-vs-dca"
    img.mkdir(parents=True, exist_ok=True)
    cases = list(result["cases"].items())
    quantities = (("energy_error", "|E(t) - E(0)|  [J]", "energy.png"),
                  ("violation_velocity", "velocity-level violation  [m/s]", "violation-velocity.png"),
                  ("violation_position", "position-level violation  [m]", "violation-position.png"),
                  ("symmetry", "deviation from mirror symmetry  [m]", "symmetry.png"))
    for key, ylabel, fname in quantities:
        fig, axes = plt.subplots(1, len(cases), figsize=(4.0 * len(cases), 3.2), sharey=True)
        for ax, (label, case) in zip(np.atleast_1d(axes), cases):
            for f in ("dca", "hdca"):
                r = histories[(case["stem"], f, "rk45")]
                t, y = r["t"][1:], np.maximum(r[key][1:], 1e-18)
                ax.plot(t, y, color=COLORS[f], lw=1.2, label=f.upper())
            if key == "violation_position":
                ax.set_xscale("log")
                _reference_lines(ax, histories[(case["stem"], "dca", "rk45")],
                                 histories[(case["stem"], "hdca", "rk45")], t_end)
            ax.set_yscale("log")
            ax.set_title(f"{label}: {case['stem']}", fontsize=9)
            ax.set_xlabel("t  [s]")
        np.atleast_1d(axes)[0].set_ylabel(ylabel)
        np.atleast_1d(axes)[0].legend(loc="lower right")
        fig.suptitle(f"rk45 (ode45), rtol = atol = {HISTORY_TOL:g}", fontsize=9, y=1.03)
        fig.savefig(img / fname)
        plt.close(fig)
    fig, axes = plt.subplots(1, len(cases), figsize=(4.0 * len(cases), 3.2), sharey=True)
    for ax, (label, case) in zip(np.atleast_1d(axes), cases):
        for f in ("dca", "hdca"):
            r = histories[(case["stem"], f, "long")]
            ax.loglog(r["t"][1:], np.maximum(r["violation_position"][1:], 1e-18), color=COLORS[f], lw=1.2,
                      label=f.upper())
        t_long = LONG_FACTOR * t_end
        _reference_lines(ax, histories[(case["stem"], "dca", "long")], histories[(case["stem"], "hdca", "long")],
                         t_long)
        ax.axvline(t_end, color="0.5", lw=0.8)
        ax.set_title(f"{label}: {case['stem']}", fontsize=9)
        ax.set_xlabel("t  [s]")
    np.atleast_1d(axes)[0].set_ylabel("position-level violation  [m]")
    np.atleast_1d(axes)[0].legend(loc="lower right")
    fig.suptitle(f"rk45, rtol = atol = {HISTORY_TOL:g}, {LONG_FACTOR * t_end:g} s (grey: the paper's {t_end:g} s)",
                 fontsize=9, y=1.03)
    fig.savefig(img / "violation-position-long.png")
    plt.close(fig)
    tols = result["tolerances"]
    for key, ylabel, fname in (("wall_s", "wall time  DCA / HDCA", "wall-ratio.png"),
                               ("nfev", "RHS evaluations  DCA / HDCA", "nfev-ratio.png"),
                               ("violation_position_end", "position drift at t_end  DCA / HDCA",
                                "drift-ratio.png")):
        fig, axes = plt.subplots(1, len(cases), figsize=(4.0 * len(cases), 3.2), sharey=True)
        for ax, (label, case) in zip(np.atleast_1d(axes), cases):
            for (integ, matlab), style in zip(INTEGRATORS, ("o-", "s-", "^-")):
                ax.plot(tols, [_ratio(case, key, integ, tol) for tol in tols], style, ms=4,
                        label=f"{integ} ({matlab})")
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_xscale("log")
            if key == "violation_position_end":
                ax.set_yscale("log")
            ax.invert_xaxis()
            ax.set_title(f"{label}: {case['stem']}", fontsize=9)
            ax.set_xlabel("integrator tolerance (rtol = atol)")
        np.atleast_1d(axes)[0].set_ylabel(ylabel)
        np.atleast_1d(axes)[0].legend()
        fig.savefig(img / fname)
        plt.close(fig)


def _hdca_report(result: dict) -> list[str]:
    lines = [
        "# Study: HDCA vs DCA (paper 001, section 3)",
        "",
        f"Generated by `linkwork study hdca-vs-dca` on {result['date']}, {result['cpu']}; "
        f"t_end = {result['t_end']:g} s. Do not edit: rerun the command. The discussion is in "
        "[../studies.md](../studies.md).",
        "",
        "## Time histories (rk45, rtol = atol = 1e-6; paper 001 Figs. 5, 8, 9)",
        "",
        "![energy error](hdca-vs-dca/energy.png)",
        "![velocity violation](hdca-vs-dca/violation-velocity.png)",
        "![position violation](hdca-vs-dca/violation-position.png)",
        "![symmetry](hdca-vs-dca/symmetry.png)",
        "",
        "Maxima over the run, tolerance 1e-6, every integrator:",
        "",
        "| case | formulation | integrator | max energy error [J] | max velocity violation | "
        "position violation at t_end | max deviation from symmetry [m] | RHS calls |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, case in result["cases"].items():
        for key, h in case["history"].items():
            f, integ = key.split("/")
            lines.append(f"| {label} | {f} | {integ} | {_fmt(h['energy_error_max'])} | "
                         f"{_fmt(h['violation_velocity_max'])} | {_fmt(h['violation_position_end'])} | "
                         f"{_fmt(h['symmetry_max'])} | {h['nfev']} |"
                         + (f" failed: {h['failure']}" if h["failure"] else ""))
    lines += [
        "",
        "## Efficiency vs tolerance (paper 001 Figs. 10, 11)",
        "",
        "![wall-time ratio](hdca-vs-dca/wall-ratio.png)",
        "![RHS-evaluation ratio](hdca-vs-dca/nfev-ratio.png)",
        "",
        "## Position drift vs tolerance",
        "",
        "![drift ratio](hdca-vs-dca/drift-ratio.png)",
        "",
        "Position-level violation at t_end (DCA / HDCA, and their ratio):",
        "",
        "| case | integrator | " + " | ".join(f"{t:g}" for t in result["tolerances"]) + " |",
        "|---|---|" + "---|" * len(result["tolerances"]),
    ]
    for label, case in result["cases"].items():
        for integ, _ in INTEGRATORS:
            cells = []
            for tol in result["tolerances"]:
                d = {r["formulation"]: r for r in case["sweep"] if r["integrator"] == integ and r["tol"] == tol}
                a, b = d["dca"]["violation_position_end"], d["hdca"]["violation_position_end"]
                cells.append(f"{a:.1e} / {b:.1e} ({a / b:.0f}×)" if b > 0 else f"{a:.1e} / {b:.1e}")
            lines.append(f"| {label} | {integ} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"### Longer runs (rk45, tolerance {HISTORY_TOL:g})",
        "",
        "![position violation, long runs](hdca-vs-dca/violation-position-long.png)",
        "",
        "| case | DCA at t_end | HDCA at t_end | ratio | DCA at 10 t_end | HDCA at 10 t_end | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, case in result["cases"].items():
        a, b = case["long"]["dca"], case["long"]["hdca"]
        a1, b1 = a["violation_position_at_t_end"], b["violation_position_at_t_end"]
        a2, b2 = a["violation_position_end"], b["violation_position_end"]
        lines.append(f"| {label} | {_fmt(a1)} | {_fmt(b1)} | {a1 / b1:.0f}× | {_fmt(a2)} | {_fmt(b2)} | "
                     f"{a2 / b2:.0f}× |")
    lines += [
        "",
        "## Table 1: mean time per right-hand-side call",
        "",
        "Timed directly on states along each trajectory (best of 3 batches, one thread).",
        "",
        "| case | DCA [µs] | HDCA [µs] | DCA / HDCA |",
        "|---|---|---|---|",
    ]
    for label, case in result["cases"].items():
        a, b = case["rhs_time_s"]["dca"], case["rhs_time_s"]["hdca"]
        lines.append(f"| {label}: {case['name']} | {a * 1e6:.1f} | {b * 1e6:.1f} | {a / b:.2f} |")
    lines += [
        "",
        "## Table 2: wall time of the integration [s] and RHS calls, tolerance 1e-6",
        "",
        "| case | formulation | " + " | ".join(f"{i} ({m})" for i, m in INTEGRATORS) + " |",
        "|---|---|" + "---|" * len(INTEGRATORS),
    ]
    tol_t2 = 1e-6 if 1e-6 in result["tolerances"] else result["tolerances"][-1]
    for label, case in result["cases"].items():
        for f in ("dca", "hdca"):
            cells = []
            for integ, _ in INTEGRATORS:
                r = next(r for r in case["sweep"]
                         if r["formulation"] == f and r["integrator"] == integ and r["tol"] == tol_t2)
                cells.append(f"{r['wall_s']:.3f} ({r['nfev']})")
            lines.append(f"| {label} | {f} | " + " | ".join(cells) + " |")
    lines += ["", "Full data: [hdca-vs-dca/results.json](hdca-vs-dca/results.json).", ""]
    return lines


# ------------------------------------------------------------------- dca-drift


DRIFT_CASES = (("four-bar (crank-rocker)", "fourbar-crank-rocker"), ("case 1", "loop-4"),
               ("case 2", "loop-8"), ("case 3", "double-loop-8"))


def growth_exponent(t: np.ndarray, y: np.ndarray, t0: float = 1.0) -> float:
    """Least-squares slope of log y against log t for t >= t0 (y > 0)."""
    m = (t >= t0) & (y > 0)
    if m.sum() < 3:
        return float("nan")
    return float(np.polyfit(np.log(t[m]), np.log(y[m]), 1)[0])


def dca_drift(out: Path, stamp: dict, quick: bool = False, repeat: int = 1) -> dict:
    t_end = 2.0 if quick else T_END
    tols = (1e-6,) if quick else (1e-6, 1e-9)
    result = {"study": "dca-drift", **stamp, "t_end": t_end, "runs": []}
    runs = {}
    for label, stem in DRIFT_CASES:
        model = _case_model(stem)
        for tol in tols:
            _log(f"{label} ({stem}): dca rk45 tol {tol:g}")
            r = run_case(model, "dca", "rk45", tol, t_end, HISTORY_DT)
            runs[(stem, tol)] = r
            result["runs"].append({
                "case": label, "stem": stem, "tol": tol, "nfev": r["nfev"], "failure": r["failure"],
                "violation_position_end": float(r["violation_position"][-1]),
                "violation_velocity_end": float(r["violation_velocity"][-1]),
                "exponent_position": growth_exponent(r["t"], r["violation_position"]),
                "exponent_velocity": growth_exponent(r["t"], r["violation_velocity"]),
            })
    plt = _pyplot()
    img = out / "dca-drift"
    img.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(tols), figsize=(5.0 * len(tols), 3.6), sharey=False)
    for ax, tol in zip(np.atleast_1d(axes), tols):
        for (label, stem), color in zip(DRIFT_CASES, ("#7d3c98", "#c0392b", "#d68910", "#1e8449")):
            r = runs[(stem, tol)]
            t, y = r["t"][1:], np.maximum(r["violation_position"][1:], 1e-18)
            ax.loglog(t, y, color=color, lw=1.2, label=label)
        tt = np.array([0.1, t_end])
        ymax = max(float(runs[(s, tol)]["violation_position"][-1]) for _, s in DRIFT_CASES)
        ax.loglog(tt, ymax * (tt / t_end) ** 2, "k--", lw=0.8, label="∝ t²")
        ax.set_title(f"DCA, no stabilisation, rk45 rtol = atol = {tol:g}", fontsize=9)
        ax.set_xlabel("t  [s]")
        ax.set_ylabel("position-level violation  [m]")
        ax.legend(loc="lower right")
    fig.savefig(img / "violation-position.png")
    plt.close(fig)
    lines = [
        "# Study: DCA position drift without stabilisation (issue 3)",
        "",
        f"Generated by `linkwork study dca-drift` on {result['date']}, {result['cpu']}; t_end = {t_end:g} s. "
        "Do not edit: rerun the command. Discussion: [../studies.md](../studies.md).",
        "",
        "![DCA position drift](dca-drift/violation-position.png)",
        "",
        "Growth exponent: least-squares slope of log(violation) against log(t) for t ≥ 1 s "
        "(2 = quadratic).",
        "",
        "| case | tolerance | position violation at t_end [m] | exponent (position) | "
        "velocity violation at t_end | exponent (velocity) | RHS calls |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        lines.append(f"| {r['case']} | {r['tol']:g} | {_fmt(r['violation_position_end'])} | "
                     f"{r['exponent_position']:.2f} | {_fmt(r['violation_velocity_end'])} | "
                     f"{r['exponent_velocity']:.2f} | {r['nfev']} |")
    lines += ["", "Full data: [dca-drift/results.json](dca-drift/results.json).", ""]
    result["_report"] = lines
    return result


# ---------------------------------------------------------------------- index3


def index3(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    """Paper 000's cases 4.2-4.4 and the timing of 5.2 (engine/studies/index3.py)."""
    from .index3 import run_index3_study

    folder = out / "index3"
    page = run_index3_study(folder, quick=quick)
    text = page.read_text(encoding="utf-8")
    page.unlink()  # the report lives next to the folder, like the other studies'
    lines = text.replace("](index3_", "](index3/index3_").splitlines()
    lines[1:1] = ["", f"Generated by `linkwork study index3` on {stamp['date']}, {stamp['cpu']}. "
                      "Do not edit: rerun the command. Discussion: [../index3.md](../index3.md)."]
    return {"study": "index3", **stamp, "quick": quick, "_report": lines}


def rcr(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    """Paper 002's sections 4.1-4.3 and Fig. 11 (engine/studies/rcr.py)."""
    from .rcr import rcr as run_rcr_study

    return run_rcr_study(out, stamp, quick=quick, repeat=repeat)


def embedding(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    """Paper 003 section 7.3: cost of constraint embedding (engine/studies/embedding.py)."""
    from .embedding import embedding as run_embedding_study

    return run_embedding_study(out, stamp, quick=quick, repeat=repeat)


STUDIES = {
    "hdca-vs-dca": (hdca_vs_dca, "paper 001 section 3: HDCA vs DCA on cases 1-3"),
    "dca-drift": (dca_drift, "issue 3: DCA position drift without stabilisation, log axes"),
    "index3": (index3, "paper 000 sections 4.2-4.4, 5.2: the index-3 formulation's cases and timing"),
    "rcr": (rcr, "paper 002 sections 4.1-4.3, Fig. 11: recursive coordinate reduction"),
    "embedding": (embedding, "paper 003 section 7.3: cost of constraint embedding, growing tree and growing loop"),
}


#: where a study writes when no ``--out`` is given (relative to the current folder)
DEFAULT_OUT = Path("linkwork-studies")


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def main(argv: list[str] | None = None) -> int:
    import numba

    from .bench import cpu_name

    p = argparse.ArgumentParser(prog="linkwork study", description=__doc__.split("\n\n")[0])
    p.add_argument("name", choices=sorted(STUDIES) + ["list"], help="the study, or 'list'")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="output folder [%(default)s/ in the current folder; --out docs/studies regenerates the "
                        "committed studies]")
    p.add_argument("--quick", action="store_true", help="2 s and two tolerances: a smoke test, not the study")
    p.add_argument("--repeat", type=int, default=3, help="timed repetitions per run, best kept [%(default)s]")
    args = p.parse_args(argv)
    if args.name == "list":
        for name, (_, what) in STUDIES.items():
            print(f"{name:14s} {what}")
        return 0
    if args.repeat < 1:
        print("linkwork study: --repeat must be at least 1", file=sys.stderr)
        return 2
    numba.set_num_threads(1)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    fn, _ = STUDIES[args.name]
    t0 = time.perf_counter()
    stamp = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cpu": cpu_name()}
    result = fn(out, stamp, quick=args.quick, repeat=args.repeat)
    folder = out / args.name
    folder.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.md").write_text("\n".join(result["_report"]), encoding="utf-8")
    (folder / "results.json").write_text(json.dumps(_jsonable(result), indent=1), encoding="utf-8")
    _log(f"linkwork study {args.name}: {time.perf_counter() - t0:.0f} s; report {out / (args.name + '.md')}")
    return 0
