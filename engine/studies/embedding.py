"""``linkwork study embedding``: the cost of constraint embedding (paper 003 section 7.3).

Paper 003 reports no timings, only complexity statements: the articulated-body
algorithm with aggregated bodies stays linear in the size of the mechanism when the
aggregated bodies are of bounded size, and an aggregated body costs "quadratic in
the total degrees of freedom" of its sub-graph and "cubic in the number of
independent degrees of freedom" (the inversion of D = X^T M X, eq. 50).  Measured
here, in one run, as time per right-hand side (one thread) of ``embedding`` against
``dca``, ``hdca``, ``rcr`` and ``dense``:

* **growing tree, fixed loop**: a planar four-link loop between two ground pivots
  (one aggregated body, two independent velocities) carrying a serial chain of N
  revolute links, N = 4 ... 256 (linear expected);
* **growing loop**: one planar loop of n links between two ground pivots,
  n = 4 ... 64 -- one aggregated body of n bodies and n - 2 independent
  velocities (the cubic warning of section 7.3).

Mechanisms: :func:`loop_with_chain`, :func:`engine.generators.closed_loop`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .report import log, pyplot
from .timing import rhs_call, time_call

FORMULATIONS = ("embedding", "rcr", "dca", "hdca", "dense")
TREE_SIZES = (4, 8, 16, 32, 64, 128, 256)
LOOP_SIZES = (4, 6, 8, 12, 16, 24, 32, 48, 64)
COLORS = {"embedding": "#1e8449", "rcr": "#d68910", "dca": "#c0392b", "hdca": "#2471a3", "dense": "#7d3c98"}


def loop_with_chain(n_tree: int, loop: int = 4):
    """:func:`engine.generators.closed_loop` of ``loop`` links with a serial chain of
    ``n_tree`` revolute links (0.3 m, hanging 30 degrees off the vertical, alternating)
    attached to the loop's second joint point."""
    from ..generators import closed_loop, finish, joint_spec, rod_body
    from ..mechfile import MechanismSpec

    base = closed_loop(loop)
    j2 = next(j for j in base.joints if j.name == "J2")
    p = np.array(j2.anchor)
    parent = j2.child
    bodies, joints = list(base.bodies), list(base.joints)
    for k in range(n_tree):
        ang = math.radians(-90.0 + (30.0 if k % 2 == 0 else -30.0))
        q = p + 0.3 * np.array([math.cos(ang), math.sin(ang), 0.0])
        name = f"T{k + 1}"
        bodies.append(rod_body(name, p, q, mass=0.2, inertia=(0.01, 0.01, 0.01)))
        joints.append(joint_spec(f"H{k + 1}", "revolute", parent, name, p, axis=(0.0, 0.0, 1.0)))
        parent, p = name, q
    return finish(MechanismSpec(bodies=tuple(bodies), joints=tuple(joints), gravity=base.gravity,
                                name=f"{loop}-link loop with a {n_tree}-link chain"))


def time_rhs(spec, formulation: str) -> float:
    """Seconds per right-hand side (best of repeated batches, one thread), at the initial
    state with random speeds (closed by the formulation itself where it reduces them)."""
    import numba

    from ..model import build_model
    from ..simulation import Settings, Simulation

    model = build_model(spec)
    numba.set_num_threads(1)
    form = Simulation(model, Settings(formulation=formulation, threads=1)).formulation
    y = form.initial_state()
    return time_call(rhs_call(form, 0.0, y))


def _series(label, specs, sizes):
    rows, failed = [], {}
    for n, spec in zip(sizes, specs):
        row = {"n": n}
        for f in FORMULATIONS:
            if f in failed:
                row[f] = None
                continue
            try:
                row[f] = time_rhs(spec, f)
            except Exception as exc:  # noqa: BLE001 - the report says which formulation failed
                failed[f] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                row[f] = None
        rows.append(row)
        log(f"{label} n = {n}: " + ", ".join(f"{f} {row[f] * 1e6:.1f} us" if row[f] else f"{f} failed"
                                               for f in FORMULATIONS))
    return rows, failed


def _slope(rows, f, last=3):
    """Growth exponent of the last ``last`` sizes (log-log least squares)."""
    pts = [(r["n"], r[f]) for r in rows if r[f]][-last:]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def _crossover(rows, f, other):
    """The smallest size from which ``f`` stays slower than ``other`` (None: never)."""
    out = None
    for r in reversed(rows):
        if r[f] is None or r[other] is None:
            break
        if r[f] > r[other]:
            out = r["n"]
        else:
            break
    return out


def embedding(out: Path, stamp: dict, quick: bool = False, repeat: int = 3) -> dict:
    """The study: the plot in ``out/embedding/``, the results, and the report's lines (``_report``)."""
    from ..generators import closed_loop

    tree_sizes = TREE_SIZES[:3] if quick else TREE_SIZES
    loop_sizes = LOOP_SIZES[:3] if quick else LOOP_SIZES
    img = out / "embedding"
    img.mkdir(parents=True, exist_ok=True)
    result = {"study": "embedding", **stamp, "quick": quick}
    tree, tree_failed = _series("growing tree", [loop_with_chain(n) for n in tree_sizes], tree_sizes)
    loop, loop_failed = _series("growing loop", [closed_loop(n) for n in loop_sizes], loop_sizes)
    result["tree"], result["loop"] = tree, loop
    result["failed"] = {"tree": tree_failed, "loop": loop_failed}
    summary = {
        "tree_slope": {f: _slope(tree, f) for f in FORMULATIONS},
        "loop_slope": {f: _slope(loop, f) for f in FORMULATIONS},
        "tree_slower_than": {f: _crossover(tree, "embedding", f) for f in FORMULATIONS if f != "embedding"},
        "loop_slower_than": {f: _crossover(loop, "embedding", f) for f in FORMULATIONS if f != "embedding"},
    }
    result["summary"] = summary
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
    for ax, rows, xlabel, title in (
            (axes[0], tree, "links N of the chain on the 4-link loop", "fixed loop, growing tree (linear expected)"),
            (axes[1], loop, "links n of the loop", "one growing loop (section 7.3: cubic in its freedoms)")):
        ns = [r["n"] for r in rows]
        for f in FORMULATIONS:
            ys = [r[f] * 1e6 if r[f] else np.nan for r in rows]
            ax.loglog(ns, ys, "o-", ms=3, lw=1.2, color=COLORS[f], label=f)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("µs per right-hand side (one thread)")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(img / "cost.png")
    plt.close(fig)

    def table(rows, what):
        lines = [f"| {what} | " + " | ".join(f"{f} [µs]" for f in FORMULATIONS) + " | fastest |",
                 "|---|" + "---|" * (len(FORMULATIONS) + 1)]
        for r in rows:
            ok = [f for f in FORMULATIONS if r[f]]
            lines.append(f"| {r['n']} | " + " | ".join(f"{r[f] * 1e6:.1f}" if r[f] else "failed" for f in FORMULATIONS)
                         + f" | {min(ok, key=lambda f: r[f]) if ok else '–'} |")
        return lines

    def slopes(key):
        return ", ".join(f"{f} {summary[key][f]:.2f}" for f in FORMULATIONS)

    def cross(key):
        parts = []
        for f, n in summary[key].items():
            parts.append(f"{f}: from n = {n}" if n is not None else f"{f}: never")
        return "; ".join(parts)

    lines = [
        "# Study: cost of constraint embedding (paper 003 section 7.3)",
        "",
        f"Generated by `linkwork study embedding` on {stamp['date']}, {stamp['cpu']}. Do not edit: rerun the "
        "command. Derivation: [../embedding.md](../embedding.md).",
        "",
        "Time per right-hand side, one thread, best of repeated batches; every formulation measured in the "
        "same run (the machine is shared: compare within a row).",
        "",
        "![cost](embedding/cost.png)",
        "",
        "## A fixed loop with a growing tree",
        "",
        "A planar loop of 4 links between two ground pivots (one aggregated body, 2 independent velocities) "
        "carrying a serial chain of N revolute links.",
        "",
        *table(tree, "N"),
        "",
        f"Growth exponents over the last three sizes: {slopes('tree_slope')}.",
        f"Size from which embedding is slower than each other formulation to the end of the series: "
        f"{cross('tree_slower_than')}.",
        "",
        "## One loop of growing size",
        "",
        "A planar loop of n links between two ground pivots: one aggregated body of n bodies, n - 2 "
        "independent velocities.",
        "",
        *table(loop, "n"),
        "",
        f"Growth exponents over the last three sizes: {slopes('loop_slope')}.",
        f"Size from which embedding is slower than each other formulation to the end of the series: "
        f"{cross('loop_slower_than')}.",
        "",
    ]
    for series, fails in result["failed"].items():
        for f, why in fails.items():
            lines.append(f"{f} failed on the {series} series: {why}")
    lines += ["", "Full data: [embedding/results.json](embedding/results.json).", ""]
    result["_report"] = lines
    return result
