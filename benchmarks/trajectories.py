"""Every shipped example, every formulation, against dense: the trajectory figures behind the tests.

For each example, 2 s: the largest body-position difference of ``dca``, ``hdca``
(rk4, dt = 1e-3) and ``index3`` (trapezoidal, dt = 1e-3) against

* ``dense`` with the same rk4 step (what the trajectory tests compare with), and
* a converged ``dense`` run (dop853, rtol = atol = 1e-12, projection on where there
  are loops), which shows how much of each difference is the integrator's
  truncation error.

    python benchmarks/trajectories.py [--only NAME,NAME]
    python benchmarks/trajectories.py --refine --only joint-zoo,...
    python benchmarks/trajectories.py --spectrum --only joint-zoo,...
    python benchmarks/trajectories.py --trapezoidal --only joint-zoo,...
    python benchmarks/trajectories.py --adaptive --only joint-zoo,...

``--refine`` instead prints, per example, the rk4 error of ``dense``/``dca``'s (q, v)
and ``hdca``'s (q, p*), and index3's trapezoidal error, against the converged run at
dt = 1e-3, 5e-4, 2.5e-4: whether a difference to ``dense`` is truncation, and how far
from the asymptotic 16x (rk4) or 4x (trapezoidal) per halving.

``--adaptive`` prints, per example, ``dca``'s and ``hdca``'s difference to the converged
``dense`` run when they too are integrated by dop853 at rtol = atol = 1e-12: what remains
of their fixed-step differences once the integrator controls its error.

``--spectrum`` prints, per example, the largest and the median spectral radius of the
right-hand side's Jacobian (central differences) along each formulation's own
trajectory, sampled every 10 ms, for ``dense``'s (q, v) and ``hdca``'s (q, p*): why the
two states' rk4 truncation errors differ (rk4's local error grows as (rho dt)^5).
Without ``--only``, ``--spectrum`` and ``--trapezoidal`` take the examples of at most
``SPECTRUM_BODIES`` bodies (a Jacobian costs two right-hand sides per state variable).

``--trapezoidal`` integrates ``dense``'s own equations (q, v) with the implicit trapezoidal
rule (index3's integrator; simplified Newton to 1e-12) at dt = 1e-3 and 5e-4 and prints
their error against the converged run next to ``index3``'s: how much of index3's
difference is the rule itself, whatever the coordinates.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine.model import load_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402
from tests.engine.conftest import EXAMPLES  # noqa: E402

def _positions(model, cols, rows):
    idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    return rows[:, idx]


def _run(model, dt=1e-3, **kw):
    cols, rows = Simulation(model, Settings(t_end=2.0, dt=dt, **kw)).run_all()
    return _positions(model, cols, rows)[::int(round(1e-3 / dt))]


REFINE_DTS = (1e-3, 5e-4, 2.5e-4)
SPECTRUM_BODIES = 16


def refine(paths) -> None:
    """rk4 errors against the converged run at the three steps of ``REFINE_DTS``."""
    print("| example | formulation | " + " | ".join(f"dt = {dt:g} [m]" for dt in REFINE_DTS) + " |")
    print("|---|---|" + "---|" * len(REFINE_DTS))
    for path in paths:
        model = load_model(path)
        conv = _run(model, formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12)
        for form in ("dense", "hdca", "index3"):
            kw = {"projection": False} if form == "dense" else {}
            kw["integrator"] = "trapezoidal" if form == "index3" else "rk4"
            errs = [np.abs(_run(model, dt=dt, formulation=form, **kw) - conv).max() for dt in REFINE_DTS]
            print(f"| {path.name.replace('.mech.json', '')} | {form} | " + " | ".join(f"{e:.1e}" for e in errs)
                  + " |", flush=True)


def adaptive(paths) -> None:
    """dca and hdca with dop853 at 1e-12 against the converged dense run."""
    print("| example | dca dop853 1e-12 vs dense [m] | hdca dop853 1e-12 vs dense [m] |")
    print("|---|---|---|")
    for path in paths:
        model = load_model(path)
        conv = _run(model, formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12)
        errs = [np.abs(_run(model, formulation=form, integrator="dop853", rtol=1e-12, atol=1e-12) - conv).max()
                for form in ("dca", "hdca")]
        print(f"| {path.name.replace('.mech.json', '')} | {errs[0]:.1e} | {errs[1]:.1e} |", flush=True)


def _jacobian(f, t, y, rel_step):
    """d f.rhs / d y at (t, y) by central differences of relative step ``rel_step``."""
    J = np.empty((len(y), len(y)))
    for j in range(len(y)):
        e = np.zeros_like(y)
        e[j] = rel_step * max(1.0, abs(y[j]))
        J[:, j] = (f.rhs(t, y + e) - f.rhs(t, y - e)) / (2 * e[j])
    return J


def _spectral_radii(sim, every=0.01):
    """(t, spectral radius of d rhs / d y) along ``sim``'s trajectory, every ``every`` s."""
    f = sim.formulation
    stride = int(round(every / sim.settings.dt))
    return np.array([(t, np.abs(np.linalg.eigvals(_jacobian(f, t, y, 1e-6))).max())
                     for k, (t, y) in enumerate(sim.states()) if k % stride == 0])


def spectrum(paths, max_bodies=None) -> None:
    """Spectral radii of dense's and hdca's right-hand sides along their trajectories
    (skipping mechanisms of more than ``max_bodies`` bodies when given)."""
    print("| example | formulation | largest ρ [1/s] (at t) | median ρ [1/s] | largest ρ·1 ms |")
    print("|---|---|---|---|---|")
    for path in paths:
        model = load_model(path)
        if max_bodies is not None and len(model.spec.bodies) > max_bodies:
            continue
        for form in ("dense", "hdca"):
            kw = {"projection": False} if form == "dense" else {}
            sim = Simulation(model, Settings(t_end=2.0, dt=2.5e-4, formulation=form, integrator="rk4", **kw))
            r = _spectral_radii(sim)
            i = r[:, 1].argmax()
            print(f"| {path.name.replace('.mech.json', '')} | {form} | {r[i, 1]:.0f} ({r[i, 0]:.2f} s) | "
                  f"{np.median(r[:, 1]):.0f} | {r[i, 1] * 1e-3:.2f} |", flush=True)


def _dense_trapezoidal(model, dt, t_end=2.0):
    """Body positions of ``dense`` integrated by the implicit trapezoidal rule, every 1 ms."""
    sim = Simulation(model, Settings(t_end=t_end, dt=dt, formulation="dense", integrator="rk4"))
    f, rec = sim.formulation, sim.recorder
    y = f.initial_state()
    f.watch_singular(0.0, y)
    rows = [rec.row(f.evaluate(0.0, y))]
    eye = np.eye(len(y))
    for k in range(int(round(t_end / dt))):
        t = k * dt
        f0 = f.rhs(t, y)
        A = eye - dt / 2 * _jacobian(f, t, y, 1e-7)
        z = y + dt * f0
        for _ in range(50):  # simplified Newton on z - y - dt/2 (f(y) + f(z)) = 0
            dz = np.linalg.solve(A, z - y - dt / 2 * (f0 + f.rhs(t + dt, z)))
            z = z - dz
            if np.abs(dz).max() <= 1e-12 * max(1.0, np.abs(z).max()):
                break
        else:
            raise RuntimeError(f"trapezoidal Newton did not converge at t = {t + dt:g}")
        y = f.post_step(t + dt, z)
        f.watch_singular(t + dt, y)  # as the integrators do: widens the filter while crossing
        rows.append(rec.row(f.evaluate(t + dt, y)))
    return _positions(model, rec.columns, np.array(rows))[::int(round(1e-3 / dt))]


def trapezoidal(paths, max_bodies=None) -> None:
    """The trapezoidal rule on dense's equations against index3, both against the converged run
    (skipping mechanisms of more than ``max_bodies`` bodies when given)."""
    print("| example | index3 Δt = 1e-3 [m] | dense + trapezoidal Δt = 1e-3 [m] | dense + trapezoidal Δt = 5e-4 [m] |")
    print("|---|---|---|---|")
    for path in paths:
        name = path.name.replace(".mech.json", "")
        model = load_model(path)
        if max_bodies is not None and len(model.spec.bodies) > max_bodies:
            continue
        conv = _run(model, formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12)
        idx3 = np.abs(_run(model, formulation="index3") - conv).max()
        cells = []
        for dt in (1e-3, 5e-4):
            try:
                cells.append(f"{np.abs(_dense_trapezoidal(model, dt) - conv).max():.1e}")
            except RuntimeError as exc:  # the parallelogram's singular configuration
                cells.append(str(exc))
        print(f"| {name} | {idx3:.1e} | {cells[0]} | {cells[1]} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated example names")
    ap.add_argument("--refine", action="store_true", help="rk4 step refinement of dense and hdca instead")
    ap.add_argument("--spectrum", action="store_true",
                    help="spectral radii of dense's and hdca's right-hand sides instead")
    ap.add_argument("--trapezoidal", action="store_true",
                    help="the trapezoidal rule on dense's equations against index3 instead")
    ap.add_argument("--adaptive", action="store_true",
                    help="dca and hdca with dop853 at 1e-12 against the converged dense run instead")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    t0 = time.perf_counter()
    if args.refine or args.spectrum or args.trapezoidal or args.adaptive:
        paths = [p for p in EXAMPLES if not only or p.name.replace(".mech.json", "") in only]
        if args.refine:
            refine(paths)
        elif args.adaptive:
            adaptive(paths)
        elif args.trapezoidal:
            trapezoidal(paths, None if only else SPECTRUM_BODIES)
        else:
            spectrum(paths, None if only else SPECTRUM_BODIES)
        print(f"\n({time.perf_counter() - t0:.0f} s)")
        return 0
    print("| example | formulation | vs dense rk4 1e-3 [m] | vs converged dense [m] | dense rk4 vs converged [m] |")
    print("|---|---|---|---|---|")
    for path in EXAMPLES:
        name = path.name.replace(".mech.json", "")
        if only and name not in only:
            continue
        model = load_model(path)
        ref = _run(model, formulation="dense", integrator="rk4", projection=False)
        # converged: with dense's projection (its default with loops), which crosses singular
        # configurations on the right branch (the parallelogram's closed-form test)
        conv = _run(model, formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12)
        own = np.abs(ref - conv).max()
        for form in ("dca", "hdca", "index3"):
            kw = {} if form == "index3" else {"integrator": "rk4"}
            X = _run(model, formulation=form, **kw)
            print(f"| {name} | {form} | {np.abs(X - ref).max():.1e} | {np.abs(X - conv).max():.1e} | {own:.1e} |",
                  flush=True)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
