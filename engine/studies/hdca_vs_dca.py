"""``linkwork study hdca-vs-dca``: paper 001 section 3, HDCA against DCA.

Cases 1-3 (single loop of 4 bodies, single loop of 8 bodies, double loop of 8
bodies), 10 s, integrators rk45, lsoda, rk23 (MATLAB's ode45, ode113, ode23) at
tolerances 1e-3 ... 1e-9: energy error, velocity- and position-level constraint
violation and mirror symmetry vs time; DCA/HDCA ratios of wall time and
right-hand-side evaluations vs tolerance; mean time per right-hand-side call (the
paper's Table 1) and wall time per run (Table 2); runs ten times longer, to follow the
drift ratio beyond the paper's 10 s.

Each timed run is repeated (``repeat``, best kept) with the two formulations
interleaved, so that the ratios are comparable on a shared, noisy machine.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from .report import fmt, log, pyplot
from .runs import HISTORY_DT, STUDY_MONITOR, T_END, case_model, mirror_pairs, run_case, study_projection

TOLERANCES = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
INTEGRATORS = (("rk45", "ode45"), ("lsoda", "ode113"), ("rk23", "ode23"))
PAPER001_CASES = (("case 1", "loop-4"), ("case 2", "loop-8"), ("case 3", "double-loop-8"))
HISTORY_TOL = 1e-6  # paper 001 section 3.2: ode45 with delta = 1e-6
LONG_FACTOR = 10  # the long runs: 10 x t_end


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


#: the plots' colour of each formulation
COLORS = {"dca": "#c0392b", "hdca": "#2471a3"}


def hdca_vs_dca(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    """The study: plots in ``out/hdca-vs-dca/``, the results, and the report's lines (``_report``)."""
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
        model = case_model(stem)
        probe = Simulation(model, Settings(formulation="dca")).formulation
        pairs, x_mid = mirror_pairs(model, probe.evaluate(0.0, probe.initial_state()).x)
        case = {"stem": stem, "name": model.spec.name, "sweep": [], "history": {}, "rhs_time_s": {}}
        # time histories at the paper's setting (plots), every integrator for symmetry
        for integ, _ in INTEGRATORS:
            for f in forms:
                log(f"{label} ({stem}): history {f} {integ} tol {HISTORY_TOL:g}")
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
                log(f"{label} ({stem}): {integ} tol {tol:g}: wall dca/hdca "
                     f"{best['dca']['wall_s'] / best['hdca']['wall_s']:.2f}, nfev {best['dca']['nfev']}/"
                     f"{best['hdca']['nfev']}")
        # long runs: how the drift ratio develops beyond the paper's 10 s
        for f in forms:
            log(f"{label} ({stem}): long run {f} rk45 tol {HISTORY_TOL:g}, {LONG_FACTOR * t_end:g} s")
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
    plt = pyplot()
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
            lines.append(f"| {label} | {f} | {integ} | {fmt(h['energy_error_max'])} | "
                         f"{fmt(h['violation_velocity_max'])} | {fmt(h['violation_position_end'])} | "
                         f"{fmt(h['symmetry_max'])} | {h['nfev']} |"
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
        lines.append(f"| {label} | {fmt(a1)} | {fmt(b1)} | {a1 / b1:.0f}× | {fmt(a2)} | {fmt(b2)} | "
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
