"""The cost of one right-hand side on spatial ladders of L = 1 ... 64 cells (paper 002
Fig. 11): every formulation asked for, and the ladder's tree with its loop-closing
joints dropped, timed in one run on one thread (``linkwork bench --ladders`` and
``linkwork study rcr``)."""

from __future__ import annotations

from .timing import rhs_call, time_call

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
    return time_call(rhs_call(form, 0.0, y))


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
