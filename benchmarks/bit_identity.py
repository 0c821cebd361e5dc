"""Bit identity: prove that a change to the engine changed no arithmetic.

Run the same dump against two checkouts -- before and after a refactoring -- and
compare the two files array by array::

    # before: a checkout where the engine is the top-level package ``engine``
    cd /path/to/before && PYTHONPATH=. python /path/to/bit_identity.py dump before.npz
    # after: a checkout where it is ``linkwork.engine``
    cd /path/to/after && python benchmarks/bit_identity.py dump after.npz
    python benchmarks/bit_identity.py compare before.npz after.npz

``dump`` runs every registered formulation on every bundled example
(``resources/examples/*.mech.json`` of the checkout being run) and on ``--random``
mechanisms built by the engine's own generators from fixed seeds, and records for
each pair, under keys ``<mechanism>|<formulation>|<what>``:

``y0``
    the initial state vector;
``rates``
    the state derivative at the initial state (ODE formulations), or
``step``
    one step of ``dt`` from it (stepping formulations, which have no derivative);
``acc``, ``reactions``
    the body accelerations and joint reactions of the initial state's evaluation;
``trajectory``
    every result row of a run of ``--t-end`` seconds with the mechanism file's own
    defaults for the formulation, on one thread;
``trajectory-<integrator>``, ``run_error-<integrator>``
    with ``--integrators``, the same run under each integrator named (those the
    formulation offers, but the file's own), at rtol = atol = 1e-8;
``error``, ``run_error``
    the class and message of a refusal or a failure (at construction, evaluation or
    during the run; a failed run keeps the rows it produced).

``compare`` counts the arrays that are identical bit for bit, lists every one that
differs with its largest absolute and relative difference (relative to the largest
magnitude before), and every key present in one file only.  It exits 1 if any array
differs by more than ``--tolerance`` (1e-14 relative) or any key is missing, else 0.

Both checkouts must be run with the same Python, numpy and numba (one environment),
and on one thread, so that only the engine's code can make a difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

#: the generator families random mechanisms are drawn from, in turn
FAMILIES = ("random", "chain", "loop", "ladder", "fourbar", "fivebar", "slider")
#: seeds of the random mechanisms: mechanism k draws everything from SEED_BASE + k
SEED_BASE = 20_000
SEP = "|"


# ------------------------------------------------------------------------ the engine


def engine_package() -> str:
    """The engine's package name in the checkout being run: ``linkwork.engine`` where it
    is part of the ``linkwork`` package, else the top-level ``engine``.

    A ``linkwork.engine`` is taken only if it lies in the same tree as ``linkwork``
    itself: an older checkout's ``linkwork`` is only a launcher, and an editable install
    of another checkout can still answer for ``linkwork.engine``.  Looked up without
    importing it, so that such a foreign engine never runs."""
    try:
        linkwork = importlib.util.find_spec("linkwork")
        engine = importlib.util.find_spec("linkwork.engine")
    except ImportError:
        return "engine"
    if linkwork is None or engine is None or not linkwork.origin or not engine.origin:
        return "engine"
    root = Path(linkwork.origin).resolve().parents[1]
    if root in Path(engine.origin).resolve().parents:
        return "linkwork.engine"
    return "engine"


class Engine:
    """The engine's modules this script uses, from either layout."""

    def __init__(self, package: str):
        def mod(name):
            return importlib.import_module(f"{package}.{name}")

        self.package = package
        self.location = Path(importlib.import_module(package).__file__).resolve().parent
        self.generators = mod("generators")
        self.mechfile = mod("mechfile")
        self.model = mod("model")
        self.simulation = mod("simulation")
        self.errors = mod("errors")
        self.formulations = mod("formulations")
        self.paths = mod("paths")


# ---------------------------------------------------------------- random mechanisms


def _spin(eng: Engine, spec, rng, count: int):
    """``spec`` with random initial rates on up to ``count`` joints that have freedoms."""
    joints = list(spec.joints)
    free = [k for k, j in enumerate(joints) if j.dof > 0]
    for k in rng.permutation(free)[:count]:
        j = joints[int(k)]
        joints[int(k)] = dataclasses.replace(
            j, rate=tuple(float(r) for r in rng.normal(scale=1.0, size=j.dof)))
    mf = eng.mechfile
    return mf.spec_from_dict(mf.spec_to_dict(dataclasses.replace(spec, joints=tuple(joints))))


def _assembled(build, rng, tries: int = 50):
    """``build(rng)`` for the first draw whose geometry assembles (the generators raise
    ValueError for lengths that cannot close a loop)."""
    for _ in range(tries):
        try:
            return build(rng)
        except ValueError:
            continue
    raise RuntimeError("no draw assembled")


def random_spec(eng: Engine, k: int):
    """Random mechanism ``k``: its family's turn, sizes, joint types, masses, lengths and
    initial velocities all drawn from seed SEED_BASE + k."""
    gen = eng.generators
    seed = SEED_BASE + k
    rng = np.random.default_rng(seed)
    family = FAMILIES[k % len(FAMILIES)]
    u = rng.uniform
    if family == "random":
        return family, gen.random_mechanism(
            seed, n_bodies=int(rng.integers(2, 9)), loops=int(rng.integers(0, 3)),
            forces=bool(rng.random() < 0.7), rates=bool(rng.random() < 0.8))
    if family == "chain":
        n = int(rng.integers(1, 9))
        spec = gen.chain(n, str(rng.choice(["revolute", "universal", "spherical"])),
                         planar=bool(rng.random() < 0.5), length=u(0.3, 1.5), mass=u(0.2, 3.0),
                         angle_deg=u(-90.0, 90.0))
        return family, _spin(eng, spec, rng, int(rng.integers(0, n + 1)))
    if family == "loop":
        spec = gen.closed_loop(int(rng.integers(3, 9)), spread_deg=u(20.0, 80.0), length=u(0.5, 1.5),
                               mass=u(0.2, 3.0))
        return family, _spin(eng, spec, rng, 1)
    if family == "ladder":
        spec = gen.ladder(int(rng.integers(1, 5)), spacing=u(0.5, 1.5), length=u(0.5, 1.5),
                          tilt_x_deg=u(-45.0, 45.0), tilt_z_deg=u(-45.0, 45.0), mass=u(0.2, 3.0))
        return family, _spin(eng, spec, rng, 1)
    if family == "fourbar":
        spec = _assembled(lambda r: gen.fourbar(
            crank=r.uniform(0.2, 1.2), coupler=r.uniform(0.5, 1.5), rocker=r.uniform(0.5, 1.5),
            ground=r.uniform(0.5, 1.5), crank_angle_deg=r.uniform(0.0, 360.0),
            branch=int(r.choice([-1, 1])), mass=r.uniform(0.2, 3.0)), rng)
        return family, _spin(eng, spec, rng, 1)
    if family == "fivebar":
        spec = _assembled(lambda r: gen.fivebar(
            int(r.choice([2, 3])), base_half=r.uniform(0.5, 1.0), length=r.uniform(0.8, 1.4),
            tip=(r.uniform(-0.3, 0.3), r.uniform(0.8, 1.5)), mass=r.uniform(0.2, 3.0)), rng)
        return family, _spin(eng, spec, rng, 2)
    spec = _assembled(lambda r: gen.slider_crank(
        crank=r.uniform(0.1, 0.5), rod=r.uniform(0.6, 1.5), crank_angle_deg=r.uniform(0.0, 360.0),
        crank_rate=r.uniform(-10.0, 10.0), stiffness=r.uniform(0.0, 400.0)), rng)
    return family, spec


def mechanisms(eng: Engine, n_random: int):
    """``(label, model)`` of every bundled example, then of the random mechanisms."""
    for path in sorted(eng.paths.examples_dir().glob("*.mech.json")):
        yield path.name.removesuffix(".mech.json"), eng.model.load_model(path)
    for k in range(n_random):
        family, spec = random_spec(eng, k)
        yield f"random-{k:03d}-{family}", eng.model.build_model(spec)


# --------------------------------------------------------------------------- dump


def _error(exc: BaseException) -> np.ndarray:
    return np.array(f"{type(exc).__name__}: {exc}")


def _copy(a) -> np.ndarray:
    """A float64 copy (formulations hand out views of workspaces they reuse)."""
    return np.array(a, dtype=np.float64, copy=True)


def settings_for(eng: Engine, model, name: str, t_end: float):
    """The file's own defaults for formulation ``name``, for ``t_end`` s on one thread."""
    return eng.simulation.file_defaults(model, name).replace(formulation=name, t_end=t_end, threads=1)


def point_values(eng: Engine, model, settings) -> dict[str, np.ndarray]:
    """The initial state, its derivative (or one step) and its evaluation's acc and
    reactions, from a simulation of its own (so the trajectory's starts untouched)."""
    form = eng.simulation.Simulation(model, settings).formulation
    y0 = _copy(form.initial_state())
    out = {"y0": y0}
    if form.kind == "ode":
        out["rates"] = _copy(form.rhs(0.0, y0.copy()))
    else:
        out["step"] = _copy(form.step(0.0, y0.copy(), settings.dt))
    ev = form.evaluate(0.0, y0.copy())
    out["acc"] = _copy(ev.acc)
    out["reactions"] = _copy(ev.reactions)
    return out


def trajectory(eng: Engine, model, settings) -> dict[str, np.ndarray]:
    """Every row of the run; the failure's class and message too if it failed."""
    sim = eng.simulation.Simulation(model, settings)
    parts, out = [], {}
    try:
        for chunk in sim.run():
            parts.append(np.array(chunk.rows))
    except Exception as exc:  # noqa: BLE001 - a failure is a result to compare
        out["run_error"] = _error(exc)
    out["trajectory"] = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
    return out


def record(eng: Engine, model, name: str, t_end: float, integrators=()) -> dict[str, np.ndarray]:
    """What formulation ``name`` gives on ``model``: its values, or its refusal; with
    ``integrators``, its trajectory under each of them too."""
    try:
        settings = settings_for(eng, model, name, t_end)
        cls = eng.formulations.REGISTRY[name]
        ok, why = cls.supports(model)
        if not ok:
            return {"error": np.array(f"refused: {why}")}
        out = {**point_values(eng, model, settings), **trajectory(eng, model, settings)}
        for integrator in integrators:
            if integrator == settings.integrator or integrator not in cls.integrators:
                continue
            other = settings.replace(integrator=integrator, rtol=1e-8, atol=1e-8)
            out.update({f"{what}-{integrator}": a for what, a in trajectory(eng, model, other).items()})
        return out
    except Exception as exc:  # noqa: BLE001 - a refusal or failure is a result to compare
        if not isinstance(exc, eng.errors.LinkworkError):
            print(f"    unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        return {"error": _error(exc)}


def dump(out: Path, n_random: int, t_end: float, only: list[str] | None, integrators=()) -> int:
    eng = Engine(engine_package())
    names = [n for n in eng.formulations.REGISTRY if not only or n in only]
    print(f"engine: {eng.package} from {eng.location}; formulations: {', '.join(names)}", file=sys.stderr)
    arrays: dict[str, np.ndarray] = {}
    t0 = time.perf_counter()
    for label, model in mechanisms(eng, n_random):
        t1 = time.perf_counter()
        for name in names:
            for what, a in record(eng, model, name, t_end, integrators).items():
                arrays[SEP.join((label, name, what))] = a
        print(f"  {label:40s} {time.perf_counter() - t1:7.1f} s", file=sys.stderr)
    np.savez_compressed(out, **arrays)
    print(f"{len(arrays)} arrays -> {out} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------ compare


@dataclasses.dataclass
class Difference:
    key: str
    abs: float
    rel: float
    note: str = ""


def _clip(text, width: int = 100) -> str:
    text = str(text)
    return text if len(text) <= width else text[:width - 3] + "..."


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (NaNs and signed zeros included)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def difference(key: str, a: np.ndarray, b: np.ndarray) -> Difference:
    """How far ``b`` is from ``a``: largest absolute difference, and that relative to
    ``max |a|``; infinite for different shapes, texts, or NaN against a number."""
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        texts = a.dtype.kind == b.dtype.kind == "U"
        return Difference(key, np.inf, np.inf, f"{_clip(a)}  ->  {_clip(b)}" if texts else f"{a.dtype} -> {b.dtype}")
    if a.shape != b.shape:
        return Difference(key, np.inf, np.inf, f"shape {a.shape} -> {b.shape}")
    if a.size == 0:
        return Difference(key, 0.0, 0.0)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if (nan_a != nan_b).any():
        return Difference(key, np.inf, np.inf, "NaN in one only")
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(np.where(nan_a, 0.0, a - b))
        d = np.where(np.isinf(a) & (a == b), 0.0, d)
        big = np.abs(np.where(nan_a | np.isinf(a), 0.0, a)).max()
    dmax = float(d.max())
    rel = dmax / big if big > 0 else (0.0 if dmax == 0 else np.inf)
    return Difference(key, dmax, float(rel))


def compare(before: Path, after: Path, tolerance: float) -> int:
    with np.load(before) as fa, np.load(after) as fb:
        A = {k: fa[k] for k in fa.files}
        B = {k: fb[k] for k in fb.files}
    common = sorted(A.keys() & B.keys())
    missing = [(k, "before only") for k in sorted(A.keys() - B.keys())] + \
              [(k, "after only") for k in sorted(B.keys() - A.keys())]
    diffs = [difference(k, A[k], B[k]) for k in common if not identical(A[k], B[k])]
    worst = max((d.rel for d in diffs), default=0.0)
    print(f"{'arrays compared':28s} {len(common)}")
    print(f"{'identical bit for bit':28s} {len(common) - len(diffs)}")
    print(f"{'differing':28s} {len(diffs)}")
    print(f"{'max relative difference':28s} {worst:.3g}" if diffs else f"{'max relative difference':28s} -")
    print(f"{'missing (in one file only)':28s} {len(missing)}")
    if diffs:
        print("\ndiffering arrays (max |after - before|, relative to max |before|):")
        for d in sorted(diffs, key=lambda d: (-d.rel, d.key)):
            print(f"  {d.key:60s} abs {d.abs:10.3g}  rel {d.rel:10.3g}  {d.note}")
    if missing:
        print("\nmissing:")
        for key, where in missing:
            print(f"  {key:60s} {where}")
    failed = missing or any(d.rel > tolerance for d in diffs)
    return 1 if failed else 0


# ---------------------------------------------------------------------------- main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="record every formulation on every mechanism")
    d.add_argument("out", type=Path, help="the .npz file to write")
    d.add_argument("--random", type=int, default=100, help="random mechanisms besides the examples (100)")
    d.add_argument("--t-end", type=float, default=2.0, help="seconds of every trajectory (2)")
    d.add_argument("--formulation", action="append", help="only this formulation (repeatable)")
    d.add_argument("--integrators", default="",
                   help="comma-separated: each formulation's trajectory under these integrators too "
                        "(e.g. rk4,rk45,dop853)")
    c = sub.add_parser("compare", help="compare two dumps array by array")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--tolerance", type=float, default=1e-14,
                   help="largest relative difference accepted (1e-14)")
    args = p.parse_args(argv)
    if args.command == "dump":
        return dump(args.out, args.random, args.t_end, args.formulation,
                    tuple(x for x in args.integrators.split(",") if x))
    return compare(args.before, args.after, args.tolerance)


if __name__ == "__main__":
    sys.exit(main())
