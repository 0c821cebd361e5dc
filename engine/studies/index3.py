"""Paper 000's numerical cases with the ``index3`` formulation (docs/index3.md).

:func:`run_index3_study` reproduces sections 4.2-4.4 and the timing of 5.2:

* spatial double pendulum (4.2): 10 s, dt = 0.01, alpha = 1e6, 3 iterations;
* four-bar through its singular configuration (4.3): 30 s, dt = 0.01, alpha = 1e6,
  4 iterations;
* 128-link pendulum (4.4): 10 s, dt = 0.01, alpha = 1e9, 3 iterations -- minimum total
  energy and when, final level (paper: -46.84 J at t ~ 5.22 s, then ~ -25 J);
  which alpha in 1e6 .. 1e9 fail, with and without geometric stiffness;
* timing: 128 links on one thread, 1024 links on two, Newton vs projections;
* scaling (5.2, Figs. 12-14): n = 2 ... 1024 links, 1 thread and all, speedup and efficiency.

The paper's cases run its penalised projections (``exact_projections=False``); the
double pendulum, the four-bar, the 128-link table and the timing also give the
default exact projections next to them.

Writes ``<out>/index3.md`` and PNGs (matplotlib, Agg).  ``quick`` shortens every
run (for tests); the figures it reports are then not the paper's.  ``linkwork study
index3`` (:func:`index3`) runs it in ``<out>/index3/`` with the report at ``<out>/index3.md``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..errors import SimulationError
from .runs import STUDY_MONITOR


def _run(spec_or_model, **kw):
    """(columns, rows, stats, error message or None) of one index3 run."""
    from ..model import build_model
    from ..simulation import Settings, Simulation

    model = spec_or_model if hasattr(spec_or_model, "nb") else build_model(spec_or_model)
    sim = Simulation(model, Settings(formulation="index3", monitor=STUDY_MONITOR, **kw))
    parts, err = [], None
    try:
        for ch in sim.run():
            parts.append(ch.rows)
    except SimulationError as exc:
        err = str(exc)
    rows = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
    return sim.columns, rows, sim.formulation.stats(), err, model


def _col(cols, rows, name):
    return rows[:, cols.index(name)]


def _exact_line(spec, kw) -> str:
    """One bullet: the same case with the exact projections."""
    cols, rows, st, err, _ = _run(spec, exact_projections=True, **kw)
    E = _col(cols, rows, "energy.total")
    return ("- exact projections: " + ("completed" if err is None else f"**failed**: {err}")
            + f"; max violation position {_col(cols, rows, 'violation.position').max():.2e}, velocity "
            f"{_col(cols, rows, 'violation.velocity').max():.2e}, acceleration "
            f"{_col(cols, rows, 'violation.acceleration').max():.2e}; total energy {E.min():.6f} .. "
            f"{E.max():.6f} J")


def time_chain(n, threads, t_end, alpha, hold=1, detail=False, exact=False):
    import numba

    from ..generators import paper000_chain
    from ..model import build_model
    from ..simulation import Settings, Simulation

    model = build_model(paper000_chain(n))
    s = Settings(formulation="index3", dt=0.01, t_end=t_end, penalty=alpha, newton_iters=3, newton_tol=1e-12,
                 tangent_hold=hold, threads=min(threads, numba.config.NUMBA_NUM_THREADS),
                 exact_projections=exact, monitor=STUDY_MONITOR)
    sim = Simulation(model, s)
    sim.prepare()
    f = sim.formulation
    f.step(0.0, f.initial_state(), 0.01)  # compile / warm up outside the clock
    f.timing = {k: 0.0 for k in f.timing}
    t0 = time.perf_counter()
    err = None
    try:
        for _ in sim.states():
            pass
    except SimulationError as exc:
        err = str(exc)
    wall = time.perf_counter() - t0
    if detail:
        return wall, dict(f.timing), err, numba.get_num_threads()
    return wall, f.timing["newton"], f.timing["projections"], err, numba.get_num_threads()


#: the scaling sweep's penalty: enough for the longest chain at dt = 0.01 (1e9 fails at 1024 links)
SWEEP_ALPHA = 1e11


def _scaling(out: Path, plt, quick: bool) -> list[str]:
    """Paper 000 section 5.2: chains of n = 2 ... 1024 links, 1 thread and all, wall time
    per step split into Newton, velocity and acceleration projections; speedup and
    efficiency (Figs. 12-14)."""
    import numba

    ns = [2 ** k for k in range(1, 7 if quick else 11)]
    threads = sorted({1, numba.config.NUMBA_NUM_THREADS})
    T = 0.1 if quick else 1.0
    res = {}
    for n in ns:
        for th in threads:
            wall, tm, err, used = time_chain(n, th, T, SWEEP_ALPHA, detail=True)
            res[(n, th)] = (wall / (T / 0.01), tm, err, used)
    lines = ["## Scaling (5.2, Figs. 12-14)", "",
             f"Chains of n links (paper000_chain), dt = 0.01, alpha = {SWEEP_ALPHA:.0e}, 3 iterations, "
             f"{T:g} s simulated, the paper's penalised projections; wall time per step with 1 thread and "
             f"with {threads[-1]}, and the share of the Newton iterations and of the two projections (paper: "
             "about 81 % / 9.5 % / 9.5 %).", "",
             "| n | threads | ms / step | Newton | velocity projection | acceleration projection | speedup | "
             "efficiency | result |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in ns:
        t1 = res[(n, 1)][0]
        for th in threads:
            per, tm, err, used = res[(n, th)]
            tot = max(tm["newton"] + tm["projections"], 1e-300)
            sp = t1 / per
            lines.append(f"| {n} | {used} | {1e3 * per:.3f} | {100 * tm['newton'] / tot:.1f} % | "
                         f"{100 * tm['velocity_projection'] / tot:.1f} % | "
                         f"{100 * tm['acceleration_projection'] / tot:.1f} % | {sp:.2f} | {sp / used:.2f} | "
                         f"{'ok' if err is None else err} |")
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    for th in threads:
        ax[0].loglog(ns, [1e3 * res[(n, th)][0] for n in ns], "o-", label=f"{th} thread{'s' * (th > 1)}")
    ax[0].set_title("wall time per step [ms]")
    if len(threads) > 1:
        top = threads[-1]
        sp = [res[(n, 1)][0] / res[(n, top)][0] for n in ns]
        ax[1].semilogx(ns, sp, "o-")
        ax[1].axhline(top, color="0.6", lw=0.8)
        ax[2].semilogx(ns, [s / top for s in sp], "o-")
        ax[2].axhline(1.0, color="0.6", lw=0.8)
    ax[1].set_title(f"speedup, {threads[-1]} threads vs 1")
    ax[2].set_title("parallel efficiency")
    for a in ax:
        a.set_xlabel("links n")
    ax[0].legend()
    fig.tight_layout()
    fig.savefig(out / "index3_scaling.png", dpi=90)
    plt.close(fig)
    lines += ["", "![scaling](index3_scaling.png)", ""]
    return lines


def run_index3_study(out_dir, quick: bool = False) -> Path:
    """The study's page ``out_dir/index3.md`` and its PNGs; returns the page's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .. import generators as gen
    from ..formulations.index3 import UNCONVERGED_VIOLATION
    from ..model import build_model

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scale = 0.1 if quick else 1.0
    lines = ["# index3 study (paper 000, sections 4.2-4.4, 5.2)", ""]
    if quick:
        lines += ["*Quick run: every simulated time is 1/10 of the paper's; the figures are not the paper's.*", ""]

    # ---------------------------------------------------------------- 4.2 spatial double pendulum
    T = 10.0 * scale
    lines += ["The paper's cases run its penalised projections (`exact_projections=False`); "
              "each section also gives the run with Linkwork's default exact projections.", ""]
    kw = dict(dt=0.01, t_end=T, penalty=1e6, newton_iters=3, newton_tol=1e-12)
    cols, rows, st, err, model = _run(gen.spatial_double_pendulum(), exact_projections=False, **kw)
    E = _col(cols, rows, "energy.total")
    lines += ["## Spatial double pendulum (4.2)", "",
              f"{T:g} s, dt = 0.01, alpha = 1e6, 3 iterations, tol 1e-12: "
              + ("completed" if err is None else f"**failed**: {err}") + ".", "",
              f"- total energy: {E.min():.3e} .. {E.max():.3e} J (initial {E[0]:.3e} J)",
              f"- max violation: position {_col(cols, rows, 'violation.position').max():.2e}, velocity "
              f"{_col(cols, rows, 'violation.velocity').max():.2e}, acceleration "
              f"{_col(cols, rows, 'violation.acceleration').max():.2e}",
              _exact_line(gen.spatial_double_pendulum(), kw), ""]
    bn = model.spec.bodies[0].name
    jn = model.spec.joints[0].name
    fig, ax = plt.subplots(2, 2, figsize=(10, 7))
    for c in "xyz":
        ax[0, 0].plot(rows[:, 0], _col(cols, rows, f"{bn}.{c}"), label=c)
        ax[0, 1].plot(rows[:, 0], _col(cols, rows, f"reaction.{jn}.f{c}"), label=f"f{c}")
    for lv in ("position", "velocity", "acceleration"):
        ax[1, 0].semilogy(rows[:, 0], np.maximum(_col(cols, rows, f"violation.{lv}"), 1e-18), label=lv)
    ax[1, 1].plot(rows[:, 0], E)
    ax[0, 0].set_title(f"body {bn} position [m]")
    ax[0, 1].set_title(f"reaction at {jn} [N]")
    ax[1, 0].set_title("constraint violations")
    ax[1, 1].set_title("total energy [J]")
    for a in ax.flat:
        a.set_xlabel("t [s]")
    ax[0, 0].legend(); ax[0, 1].legend(); ax[1, 0].legend()  # noqa: E702
    fig.tight_layout()
    fig.savefig(out / "index3_double_pendulum.png", dpi=90)
    plt.close(fig)
    lines += ["![double pendulum](index3_double_pendulum.png)", ""]

    # ---------------------------------------------------------------- 4.3 four-bar
    T = 30.0 * scale
    kw = dict(dt=0.01, t_end=T, penalty=1e6, newton_iters=4, newton_tol=1e-12)
    cols, rows, st, err, model = _run(gen.fourbar(), exact_projections=False, **kw)
    E = _col(cols, rows, "energy.total")
    vp = _col(cols, rows, "violation.position")
    lines += ["## Four-bar through the singular configuration (4.3)", "",
              f"{T:g} s, dt = 0.01, alpha = 1e6, 4 iterations: "
              + ("completed, no failure" if err is None else f"**failed**: {err}") + ".", "",
              f"- max position violation {vp.max():.2e} (velocity "
              f"{_col(cols, rows, 'violation.velocity').max():.2e}, acceleration "
              f"{_col(cols, rows, 'violation.acceleration').max():.2e})",
              f"- total energy {E.min():.6f} .. {E.max():.6f} J (range {E.max() - E.min():.2e} J, "
              f"initial {E[0]:.6f} J, final {E[-1]:.6f} J)",
              f"- largest last Newton increment |dq| {st['max_dq']:.2e}",
              _exact_line(gen.fourbar(), kw), ""]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
    for lv in ("position", "velocity", "acceleration"):
        ax[0].semilogy(rows[:, 0], np.maximum(_col(cols, rows, f"violation.{lv}"), 1e-18), label=lv)
    ax[0].legend()
    ax[0].set_title("constraint violations")
    ax[1].plot(rows[:, 0], E)
    ax[1].set_title("total energy [J]")
    fig.tight_layout()
    fig.savefig(out / "index3_fourbar.png", dpi=90)
    plt.close(fig)
    lines += ["![four-bar](index3_fourbar.png)", ""]

    # ---------------------------------------------------------------- 4.4 128-link pendulum
    T = 10.0 * scale
    chain = build_model(gen.paper000_chain(128))
    lines += ["## 128-link pendulum (4.4)", "",
              f"{T:g} s, dt = 0.01, 3 iterations, tol 1e-12.  Paper (alpha = 1e9): minimum total energy "
              "-46.84 J at t ~ 5.22 s, then ~ -25 J; alpha = 1e6, 1e7 no convergence, 1e8 wrong results.", "",
              "| alpha | projections | geometric stiffness | result | min total energy [J] (at t) "
              "| final total energy [J] | max position violation | max last dq |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    ref = None
    alphas = (1e6, 1e7, 1e8, 1e9)
    for exact, geo in ((False, False), (False, True), (True, False)):
        for a in alphas:
            cols, rows, st, err, _ = _run(chain, dt=0.01, t_end=T, penalty=a, newton_iters=3, newton_tol=1e-12,
                                          geometric_stiffness=geo, exact_projections=exact)
            E = _col(cols, rows, "energy.total")
            k = int(np.argmin(E))
            res = "completed" if err is None else f"failed at t = {rows[-1, 0] + 0.01:.2f} s"
            if st.get("unconverged_steps"):
                res += f", {st['unconverged_steps']} steps unconverged (residual > {UNCONVERGED_VIOLATION:g})"
            lines.append(f"| {a:.0e} | {'exact' if exact else 'penalised'} | {'on' if geo else 'off'} | {res} | "
                         f"{E[k]:.2f} ({rows[k, 0]:.2f} s) | {E[-1]:.2f} | "
                         f"{_col(cols, rows, 'violation.position').max():.1e} | {st['max_dq']:.1e} |")
            if a == 1e9 and not geo and not exact:
                ref = (cols, rows)
    lines.append("")
    if ref is not None:
        cols, rows = ref
        names = [b.name for b in chain.spec.bodies]
        last = names[-1]
        fig, ax = plt.subplots(2, 2, figsize=(10, 7))
        for c in "xy":
            ax[0, 0].plot(rows[:, 0], _col(cols, rows, f"{last}.{c}"), label=c)
            ax[1, 0].plot(rows[:, 0], _col(cols, rows, f"{last}.v{c}"), label=f"v{c}")
        j1 = chain.spec.joints[0].name
        for c in "xy":
            ax[0, 1].plot(rows[:, 0], _col(cols, rows, f"reaction.{j1}.f{c}"), label=f"f{c}")
        for e in ("kinetic", "potential", "total"):
            ax[1, 1].plot(rows[:, 0], _col(cols, rows, f"energy.{e}"), label=e)
        for a in ax.flat:
            a.legend()
            a.set_xlabel("t [s]")
        ax[0, 0].set_title(f"last body ({last}) position [m]")
        ax[1, 0].set_title("its velocity [m/s]")
        ax[0, 1].set_title(f"reaction at {j1} [N]")
        ax[1, 1].set_title("energy [J]")
        fig.tight_layout()
        fig.savefig(out / "index3_chain128.png", dpi=90)
        plt.close(fig)
        lines += ["![128-link pendulum](index3_chain128.png)", ""]

    # ---------------------------------------------------------------- timing
    lines += ["## Timing (5.2)", "",
              "Wall time of the integration alone (no output rows), after a warm-up step; "
              "dt = 0.01, 3 iterations (always taken); the tangent refreshed every iteration "
              "(tangent_hold 1) or once per step (3, modified Newton).  The machine may be shared: "
              "the wall times are upper bounds.", "",
              "| links | threads | alpha | tangent_hold | projections | simulated | wall [s] | Newton [s] "
              "| projections [s] | result |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    runs = ((128, 1, 1e9, 1, False), (128, 1, 1e9, 3, False), (128, 1, 1e9, 1, True), (1024, 2, 1e9, 1, False),
            (1024, 2, 1e11, 1, False), (1024, 2, 1e11, 3, False), (1024, 2, 1e11, 1, True)) \
        if not quick else ((128, 1, 1e9, 1, False), (128, 1, 1e9, 1, True))
    for n, thr, a, hold, exact in runs:
        T = 10.0 * scale
        wall, tn, tp, err, used = time_chain(n, thr, T, a, hold, exact=exact)
        lines.append(f"| {n} | {used} | {a:.0e} | {hold} | {'exact' if exact else 'penalised'} | {T:g} s | "
                     f"{wall:.2f} | {tn:.2f} | {tp:.2f} | {'ok' if err is None else err} |")
    lines.append("")
    lines += _scaling(out, plt, quick)
    path = out / "index3.md"
    path.write_text("\n".join(lines))
    return path


def index3(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    """``linkwork study index3``: :func:`run_index3_study` in ``out/index3/``, its page moved
    next to that folder as ``out/index3.md`` like the other studies' reports."""
    folder = out / "index3"
    page = run_index3_study(folder, quick=quick)
    text = page.read_text(encoding="utf-8")
    page.unlink()  # the report lives next to the folder, like the other studies'
    lines = text.replace("](index3_", "](index3/index3_").splitlines()
    lines[1:1] = ["", f"Generated by `linkwork study index3` on {stamp['date']}, {stamp['cpu']}. "
                      "Do not edit: rerun the command. Discussion: [../index3.md](../index3.md)."]
    return {"study": "index3", **stamp, "quick": quick, "_report": lines}
