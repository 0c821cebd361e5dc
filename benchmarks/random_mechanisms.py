"""Random mechanisms, every formulation against a converged dense run: general correctness.

The shipped examples are few; the formulations must be right on mechanisms nobody
chose.  For each seed, ``engine.generators.random_mechanism`` builds a random tree of
3-9 bodies (every joint type, random axes, poses, full inertia tensors, springs,
dampers and joint torques) with 0-2 loop-closing joints, and each formulation runs
it for ``--t-end`` seconds at dt = 1e-3 (``dca``, ``hdca``: rk4; ``index3``:
trapezoidal, at its default penalty 1e9 with the default exact projections and with
the paper's penalised ones, and penalised at 1e11).  Printed per mechanism: the
largest body-position difference against ``dense`` (dop853, rtol = atol = 1e-12),
index3's count of unconverged steps (residual > 1e-6, docs/index3.md) and the
smallest singular value of the mass-whitened loop Jacobian at t = 0 (small: a loop
near a singular configuration, where index3 needs a larger penalty).

    python benchmarks/random_mechanisms.py [--seeds 100-123,14:8:1,16:9:2] [--t-end 2]
    python benchmarks/random_mechanisms.py --robustness --seeds 300-341

``--robustness`` runs only ``index3`` at its defaults (α = 1e9) with the exact and with
the paper's penalised projections, without the reference: whether each run completes,
its unconverged steps and its largest velocity violation.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkwork.engine import generators as gen  # noqa: E402
from linkwork.engine.model import build_model  # noqa: E402
from linkwork.engine.simulation import Settings, Simulation  # noqa: E402

#: (label, formulation, settings) of the runs compared with the converged reference
RUNS = (("dca rk4", "dca", {"integrator": "rk4"}), ("hdca rk4", "hdca", {"integrator": "rk4"}),
        ("index3 α=1e9", "index3", {}), ("index3 α=1e9 penalised", "index3", {"exact_projections": False}),
        ("index3 α=1e11 penalised", "index3", {"penalty": 1e11, "exact_projections": False}))


def _shape(seed: int) -> tuple[int, int]:
    """(bodies, loops) of a seed: 3-9 bodies, 0-2 loops, cycling so every pair occurs."""
    return 3 + seed % 7, (seed // 3) % 3


def _cases(text: str) -> list[tuple[int, int, int]]:
    """(seed, bodies, loops) from "A-B" (shapes by :func:`_shape`), "S" or "S:bodies:loops"."""
    out = []
    for part in text.split(","):
        if ":" in part:
            s, nb, loops = (int(v) for v in part.split(":"))
            out.append((s, nb, loops))
            continue
        a, _, b = part.partition("-")
        out += [(s, *_shape(s)) for s in (range(int(a), int(b) + 1) if b else [int(a)])]
    return out


def _positions(model, cols, rows):
    idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
    return rows[:, idx]


def _loop_conditioning(model) -> float:
    """Smallest non-redundant singular value of the mass-whitened loop Jacobian at t = 0
    (nan without loops)."""
    form = Simulation(model, Settings(formulation="dense")).formulation
    live = form.loop_singular_values(form.initial_state())
    return float(live[-1]) if live.size else float("nan")


def _attempt(sim):
    """(columns, rows) of ``sim``'s run, or the table cell saying how it failed."""
    try:
        return sim.run_all()
    except Exception as exc:  # noqa: BLE001 - the table says what failed
        return f"failed: {str(exc).split(':')[0]}"


def _robustness(cases, t_end) -> None:
    print(f"index3 at its defaults (alpha = 1e9), {t_end:g} s at dt = 1e-3.\n")
    print("| seed | bodies | loops | exact projections | penalised projections |")
    print("|---|---|---|---|---|")
    for seed, nb, loops in cases:
        model = build_model(gen.random_mechanism(seed, n_bodies=nb, loops=loops))
        cells = []
        for exact in (True, False):
            sim = Simulation(model, Settings(formulation="index3", dt=1e-3, t_end=t_end, exact_projections=exact))
            res = _attempt(sim)
            if isinstance(res, str):
                cells.append(res)
                continue
            cols, rows = res
            cells.append(f"{sim.stats.get('unconverged_steps', 0)} unconverged, velocity violation "
                         f"≤ {rows[:, cols.index('violation.velocity')].max():.1e}")
        print(f"| {seed} | {nb} | {loops} | " + " | ".join(cells) + " |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="100-123,14:8:1,16:9:2",
                    help="seeds: A-B, S or S:bodies:loops (default: 24 seeds and two near-singular loops)")
    ap.add_argument("--t-end", type=float, default=2.0, help="simulated time per run [s]")
    ap.add_argument("--robustness", action="store_true",
                    help="index3 only, exact and penalised projections, no reference")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.robustness:
        _robustness(_cases(args.seeds), args.t_end)
        print(f"\n({time.perf_counter() - t0:.0f} s)")
        return 0
    print(f"Largest body-position difference [m] against dense (dop853, 1e-12) after {args.t_end:g} s, dt = 1e-3.\n")
    print("| seed | bodies | loops | loop conditioning | " + " | ".join(r[0] for r in RUNS) + " |")
    print("|---|---|---|---|" + "---|" * len(RUNS))
    for seed, nb, loops in _cases(args.seeds):
        model = build_model(gen.random_mechanism(seed, n_bodies=nb, loops=loops))
        ref = Simulation(model, Settings(formulation="dense", integrator="dop853", rtol=1e-12, atol=1e-12,
                                         dt=1e-3, t_end=args.t_end))
        ref_pos = _positions(model, *ref.run_all())
        cells = []
        for _label, form, kw in RUNS:
            sim = Simulation(model, Settings(formulation=form, dt=1e-3, t_end=args.t_end, **kw))
            res = _attempt(sim)
            if isinstance(res, str):
                cells.append(res)
                continue
            cols, rows = res
            cell = f"{np.abs(_positions(model, cols, rows) - ref_pos).max():.1e}"
            if sim.stats.get("unconverged_steps"):
                cell += f" ({sim.stats['unconverged_steps']} unconverged)"
            cells.append(cell)
        cond = _loop_conditioning(model)
        print(f"| {seed} | {nb} | {loops} | {'—' if np.isnan(cond) else f'{cond:.2g}'} | " + " | ".join(cells)
              + " |", flush=True)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
