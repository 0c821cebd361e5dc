"""One study run and the measures taken on it: energy error, velocity- and
position-level constraint violation, mirror symmetry, and the growth exponent of a drift.

The pipeline's branch and health monitor is off in the studies (:data:`STUDY_MONITOR`):
they measure each formulation's own behaviour -- DCA's unstabilised drift, index3's
failures at small penalties -- which the monitor exists to stop or refine away.  For the
same reason ``dca`` and ``hdca`` run there without their projection onto the loops
(:func:`study_projection`).

Timing: a run's wall time covers the integration alone (``Simulation.states``); the
output rows are evaluated afterwards.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import SimulationError

#: the studies run without the pipeline's monitor (module docstring)
STUDY_MONITOR = False
#: paper 001's run length [s] and output interval [s]
T_END = 10.0
HISTORY_DT = 0.01


def study_projection(formulation: str) -> bool | None:
    """The ``projection`` setting of a study's run: off for ``dca`` and ``hdca``, whose drift
    the papers measure (the product projects them onto their loops at output instants);
    the formulation's own default otherwise."""
    return False if formulation in ("dca", "hdca") else None


def case_model(stem: str):
    """The model of one of the papers' test cases by its file stem
    (:func:`engine.generators.paper_cases`: ``loop-4``, ``fourbar-crank-rocker``, ...)."""
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


def growth_exponent(t: np.ndarray, y: np.ndarray, t0: float = 1.0) -> float:
    """Least-squares slope of log y against log t for t >= t0 (y > 0)."""
    m = (t >= t0) & (y > 0)
    if m.sum() < 3:
        return float("nan")
    return float(np.polyfit(np.log(t[m]), np.log(y[m]), 1)[0])
