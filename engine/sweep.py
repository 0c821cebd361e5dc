"""Parameter sweeps and batch runs on Dask (``*.sweep.json``, docs/sweeps.md).

A sweep file names a base mechanism file, the run settings, and the parameters to
vary -- by JSON path into the mechanism (``bodies[2].mass``, ``joints[0].rate``,
``forces[0].stiffness``) or by run-setting name (``dt``, ``formulation``, ...) -- as a
grid, a list of explicit cases, or random samples drawn with a seed; plus the
quantities to keep from every run.

:func:`load_sweep` reads and checks the file (:class:`SweepError` names the JSON path
of the first broken rule, like the mechanism loader).  :func:`prepare_cases` builds
every case's mechanism document and settings and validates each through the same
loader and settings check as ``linkwork run``: a case they refuse is reported with its
index and their message and is not submitted; the others run.  :func:`run_case` is one
task: the engine's :class:`~engine.simulation.Simulation`, exactly as ``linkwork run``
drives it, returning its rows and the kept quantities.  A simulation failure (exit 3
of ``linkwork run``) is a result (``status = "failed"``), not a task error.

:func:`run_sweep` submits the cases to a Dask client (a ``LocalCluster`` on this
machine's cores by default), writes every finished case's trajectory to
``DIR/runs/`` and rewrites ``DIR/summary.parquet`` as cases finish, each file written
to a temporary name and renamed, so a killed sweep never leaves a torn file.  Run
again on the same ``DIR`` it skips the cases whose rows are complete.

Dask, pandas and pyarrow are the optional ``sweep`` extra; they are imported only
when a sweep runs, never by ``linkwork --help``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import LinkworkError

FORMAT_NAME = "linkwork-sweep"
FORMAT_VERSION = 1

#: run settings a sweep may set or vary (engine.simulation.Settings fields, CLI names)
RUN_SETTINGS = ("formulation", "integrator", "dt", "t_end", "rtol", "atol", "penalty", "newton_iters",
                "newton_tol", "threads", "projection", "baumgarte", "tangent_hold", "geometric_stiffness",
                "exact_projections")
#: the standard kept quantities (docs/sweeps.md, "Kept quantities")
STANDARD_KEEP = ("final_state", "max_position_violation", "energy_drift", "reaction_peaks")
#: per-column statistics: ``"max:slider.x"`` keeps the column ``max.slider.x``
COLUMN_STATS = ("final", "max", "min", "mean")
TRAJECTORY_FORMATS = ("csv", "parquet", "none")
#: summary columns always present, in this order (parameters and quantities follow)
HEAD_COLUMNS = ("case", "status", "exit_status", "message")
TAIL_COLUMNS = ("t_final", "rows", "wall_time", "worker", "session", "finished_at", "case_key")
#: case status -> meaning; ``ok`` and ``failed`` rows are complete results (a resumed
#: sweep skips them); ``refused`` and ``error`` cases are tried again
STATUSES = {"ok": "the run reached t_end",
            "failed": "the simulation failed (exit 3 of linkwork run): rows up to the failure are kept",
            "refused": "the loader or the settings check refused the case (exit 2 of linkwork run)",
            "error": "the task could not complete twice (its worker died, or an unexpected exception)"}
COMPLETE = ("ok", "failed")


class SweepError(LinkworkError):
    """A sweep file breaks a rule of the format; ``path`` is the JSON path in the sweep file."""

    def __init__(self, path: str, rule: str):
        self.path = path
        self.rule = rule
        super().__init__(f"{path}: {rule}" if path else rule)


# ----------------------------------------------------------------------- JSON paths

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def parse_path(text: str) -> tuple:
    """``"bodies[2].mass"`` -> ``("bodies", 2, "mass")``; raises ValueError."""
    if not isinstance(text, str) or not text:
        raise ValueError("a parameter path must be a non-empty string")
    keys: list = []
    pos = 0
    while pos < len(text):
        if keys and text[pos] == ".":
            pos += 1
        m = _TOKEN.match(text, pos)
        if m is None or (m.group(1) and keys and text[pos - 1] not in "."):
            raise ValueError(f"cannot read {text!r} as a JSON path (e.g. bodies[2].mass, joints[0].rate, dt)")
        keys.append(m.group(1) if m.group(1) else int(m.group(2)))
        pos = m.end()
    if not isinstance(keys[0], str):
        raise ValueError(f"{text!r} must start with a name (bodies, joints, forces, ... or a run setting)")
    return tuple(keys)


def is_setting(path: str) -> bool:
    """A run setting (``dt``) rather than a path into the mechanism (``bodies[0].mass``)."""
    return path in RUN_SETTINGS


def resolve_path(doc: Any, path: str) -> tuple[Any, Any]:
    """The container and key that ``path`` names in the mechanism document ``doc``.

    Every step but the last must exist; the last may be missing from an object (an
    optional field such as ``joints[0].rate``: the loader judges it).  Raises
    ValueError naming the path and the step that does not exist."""
    keys = parse_path(path)
    node = doc
    done = ""
    for n, k in enumerate(keys):
        last = n == len(keys) - 1
        here = f"{done}[{k}]" if isinstance(k, int) else (f"{done}.{k}" if done else k)
        if isinstance(k, int):
            if not isinstance(node, list):
                raise ValueError(f"{path}: {done or '(file)'} is not a list")
            if k >= len(node):
                raise ValueError(f"{path}: {here} does not exist ({done} has {len(node)} element"
                                 f"{'' if len(node) == 1 else 's'}"
                                 f"{', indices 0..' + str(len(node) - 1) if node else ''})")
        else:
            if not isinstance(node, dict):
                raise ValueError(f"{path}: {done or '(file)'} is not an object")
            if k not in node and not last:
                raise ValueError(f"{path}: {here} does not exist in the mechanism file")
        if last:
            return node, k
        node = node[k]
        done = here
    raise AssertionError("unreachable")


# ------------------------------------------------------------------------ the spec


@dataclass(frozen=True)
class Case:
    """One run of the sweep: its index and the (path, value) pairs it sets."""

    index: int
    params: tuple[tuple[str, Any], ...]
    origin: str  # "grid", "cases" or "random"


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep file (immutable apart from the mechanism document it copies)."""

    mechanism_path: Path
    base: dict  # the base mechanism file's JSON document (never modified)
    settings: dict  # run settings every case gets (before its own parameters)
    parameters: tuple[str, ...]  # every varied path, in order of first appearance
    cases: tuple[Case, ...]
    keep: tuple[str, ...] = STANDARD_KEEP
    trajectories: str = "csv"
    name: str = ""
    source: Path | None = None  # the sweep file, when read from one


def _number_list(where: str, v: Any) -> list:
    """A grid axis: a list of values, or ``{"start", "stop", "num"}`` (linspace, inclusive)
    or ``{"start", "stop", "num", "log": true}`` (geometric)."""
    if isinstance(v, list):
        if not v:
            raise SweepError(where, "must list at least one value")
        return list(v)
    if isinstance(v, dict):
        unknown = set(v) - {"start", "stop", "num", "log"}
        if unknown:
            raise SweepError(where, f"unknown key(s) {', '.join(sorted(unknown))} (start, stop, num, log)")
        for k in ("start", "stop", "num"):
            if k not in v:
                raise SweepError(f"{where}.{k}", "is required")
            x = v[k]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                raise SweepError(f"{where}.{k}", f"must be a finite number (got {json.dumps(x)[:40]})")
        num = v["num"]
        if not (isinstance(num, int) and num >= 1):
            raise SweepError(f"{where}.num", f"must be an integer >= 1 (got {json.dumps(num)})")
        a, b = float(v["start"]), float(v["stop"])
        if v.get("log"):
            if a <= 0 or b <= 0:
                raise SweepError(where, "a log axis needs start and stop > 0")
            return [a * (b / a) ** (i / (num - 1)) if num > 1 else a for i in range(num)]
        return [a + (b - a) * i / (num - 1) if num > 1 else a for i in range(num)]
    raise SweepError(where, "must be a list of values or {\"start\", \"stop\", \"num\"}")


def _check_path(where: str, path: Any, base: dict) -> str:
    if not isinstance(path, str):
        raise SweepError(where, f"a parameter path must be a string (got {json.dumps(path)[:40]})")
    if is_setting(path):
        return path
    try:
        resolve_path(base, path)
    except ValueError as exc:
        raise SweepError(where, f"bad parameter path {exc}") from None
    return path


def _random_values(where: str, dist: Any, n: int, rng) -> list:
    if not isinstance(dist, dict) or len(dist) != 1:
        raise SweepError(where, 'must be {"uniform": [low, high]}, {"normal": [mean, sd]}, '
                                '{"loguniform": [low, high]} or {"choice": [values]}')
    (kind, args), = dist.items()
    if kind == "choice":
        if not isinstance(args, list) or not args:
            raise SweepError(f"{where}.choice", "must be a non-empty list of values")
        return [args[int(i)] for i in rng.integers(0, len(args), n)]
    if kind not in ("uniform", "normal", "loguniform"):
        raise SweepError(where, f"unknown distribution {kind!r} (uniform, normal, loguniform, choice)")
    if (not isinstance(args, list) or len(args) != 2
            or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in args)):
        raise SweepError(f"{where}.{kind}", "must be a list of two finite numbers")
    a, b = float(args[0]), float(args[1])
    if kind == "uniform":
        return [float(x) for x in rng.uniform(a, b, n)]
    if kind == "normal":
        return [float(x) for x in rng.normal(a, b, n)]
    if a <= 0 or b <= 0:
        raise SweepError(f"{where}.{kind}", "bounds must be > 0")
    return [float(x) for x in math.e ** rng.uniform(math.log(a), math.log(b), n)]


def _check_keep(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list):
        raise SweepError("keep", "must be a list of quantity names")
    out = []
    for i, q in enumerate(v):
        if not isinstance(q, str):
            raise SweepError(f"keep[{i}]", "must be a string")
        if q in ("wall_time", "exit_status", "status"):
            continue  # always kept
        if q in STANDARD_KEEP:
            out.append(q)
            continue
        stat, sep, col = q.partition(":")
        if not sep or stat not in COLUMN_STATS or not col:
            raise SweepError(f"keep[{i}]", f"unknown quantity {q!r} (one of {', '.join(STANDARD_KEEP)}, "
                                           f"wall_time, exit_status, or STAT:COLUMN with STAT in "
                                           f"{', '.join(COLUMN_STATS)}, e.g. max:slider.x)")
        out.append(q)
    return tuple(dict.fromkeys(out))


def sweep_from_dict(data: Any, base_dir: str | Path = ".", source: Path | None = None,
                    base: dict | None = None) -> SweepSpec:
    """Check a parsed sweep document and return its :class:`SweepSpec` (``base_dir``: where
    the mechanism path is relative to).  ``base``: the mechanism document itself (the
    application's open mechanism), instead of the file ``mechanism`` names.  Raises
    :class:`SweepError`."""
    import numpy as np

    from .errors import MechanismError

    if not isinstance(data, dict):
        raise SweepError("(file)", "must be a JSON object")
    if data.get("format") != FORMAT_NAME:
        raise SweepError("format", f'is required and must be "{FORMAT_NAME}"')
    if data.get("version") != FORMAT_VERSION or isinstance(data.get("version"), bool):
        raise SweepError("version", f"this Linkwork reads version {FORMAT_VERSION}")
    allowed = {"format", "version", "name", "mechanism", "settings", "grid", "cases", "random", "keep",
               "trajectories"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise SweepError(unknown[0], f"unknown key (allowed: {', '.join(sorted(allowed))})")
    if base is not None:
        mpath = Path(data.get("mechanism") or "(open mechanism)")
        base = copy.deepcopy(base)
    else:
        if not isinstance(data.get("mechanism"), str) or not data["mechanism"]:
            raise SweepError("mechanism", "is required: the base mechanism file, relative to the sweep file")
        mpath = Path(base_dir) / data["mechanism"]
        base = _read_json(mpath, "mechanism")
    from .mechfile import spec_from_dict

    try:
        spec_from_dict(base)
    except MechanismError as exc:
        raise SweepError("mechanism", f"{mpath}: {exc}") from None

    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise SweepError("settings", "must be an object of run settings")
    for k in settings:
        if k not in RUN_SETTINGS:
            raise SweepError(f"settings.{k}", f"unknown run setting (one of: {', '.join(RUN_SETTINGS)})")

    cases: list[tuple[tuple[tuple[str, Any], ...], str]] = []
    order: list[str] = []

    def note(path):
        if path not in order:
            order.append(path)

    if "grid" in data:
        grid = data["grid"]
        if not isinstance(grid, dict) or not grid:
            raise SweepError("grid", "must be an object: parameter path -> values")
        axes = []
        for path, values in grid.items():
            _check_path(f"grid.{path}", path, base)
            note(path)
            axes.append((path, _number_list(f"grid.{path}", values)))
        import itertools

        for combo in itertools.product(*(vals for _, vals in axes)):
            cases.append((tuple((p, v) for (p, _), v in zip(axes, combo)), "grid"))
    if "cases" in data:
        lst = data["cases"]
        if not isinstance(lst, list):
            raise SweepError("cases", "must be a list of objects: parameter path -> value")
        for i, c in enumerate(lst):
            if not isinstance(c, dict):
                raise SweepError(f"cases[{i}]", "must be an object: parameter path -> value")
            for path in c:
                if not isinstance(path, str):
                    raise SweepError(f"cases[{i}]", "keys must be parameter paths")
                note(path)  # a bad path refuses this case only (prepare_cases)
            cases.append((tuple(c.items()), "cases"))
    if "random" in data:
        r = data["random"]
        if not isinstance(r, dict):
            raise SweepError("random", 'must be {"n": N, "seed": S, "parameters": {path: distribution}}')
        unknown = sorted(set(r) - {"n", "seed", "parameters"})
        if unknown:
            raise SweepError(f"random.{unknown[0]}", "unknown key (n, seed, parameters)")
        n, seed = r.get("n"), r.get("seed")
        if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
            raise SweepError("random.n", "is required: the number of samples, an integer >= 1")
        if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise SweepError("random.seed", "is required: an integer >= 0, so the samples can be drawn again")
        params = r.get("parameters")
        if not isinstance(params, dict) or not params:
            raise SweepError("random.parameters", "must be an object: parameter path -> distribution")
        rng = np.random.default_rng(seed)
        cols = []
        for path, dist in params.items():
            _check_path(f"random.parameters.{path}", path, base)
            note(path)
            cols.append((path, _random_values(f"random.parameters.{path}", dist, n, rng)))
        for k in range(n):
            cases.append((tuple((p, vals[k]) for p, vals in cols), "random"))
    if not cases:
        raise SweepError("(file)", "no cases: give a grid, a list of cases or random samples")

    keep = _check_keep(data["keep"]) if "keep" in data else STANDARD_KEEP
    traj = data.get("trajectories", "csv")
    if traj not in TRAJECTORY_FORMATS:
        raise SweepError("trajectories", f"must be one of {', '.join(TRAJECTORY_FORMATS)} (got {json.dumps(traj)})")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise SweepError("name", "must be a string")
    return SweepSpec(mechanism_path=mpath, base=base, settings=dict(settings), parameters=tuple(order),
                     cases=tuple(Case(i, p, o) for i, (p, o) in enumerate(cases)), keep=keep,
                     trajectories=traj, name=name, source=source)


def _read_json(path: Path, where: str):
    """The JSON document in ``path``, or a :class:`SweepError` at ``where`` saying why not
    (the sweep file itself, or the base mechanism it names)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SweepError(where, f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(where, f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SweepError(where, f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a ``*.sweep.json`` file."""
    p = Path(path)
    return sweep_from_dict(_read_json(p, "(file)"), p.parent, source=p)


# ------------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class PreparedCase:
    """A case ready to submit (``refused`` is None) or refused before submission."""

    case: Case
    doc: dict  # the mechanism document with the case's values
    settings: dict  # run settings (sweep's, then the case's)
    key: str  # hash of everything that determines the result
    refused: str | None = None

    @property
    def index(self) -> int:
        return self.case.index


def _label(value: Any) -> str:
    return json.dumps(value)[:60]


def _case_key(what) -> str:
    """Hash of everything that determines a case's result (resume compares it)."""
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]


def build_settings(model, given: dict):
    """The :class:`Settings` of a run, exactly as ``linkwork run`` makes them: the
    mechanism file's recommended settings, then the given ones."""
    from .simulation import file_defaults

    given = dict(given)
    if "baumgarte" in given and isinstance(given["baumgarte"], list):
        given["baumgarte"] = tuple(given["baumgarte"])
    return file_defaults(model, given.get("formulation")).replace(**given)


def prepare_case(spec: SweepSpec, case: Case) -> PreparedCase:
    """Apply a case's values and validate it with the mechanism loader and the settings
    check; a refusal names the case, the parameter values and the loader's message."""
    from .errors import MechanismError, SettingsError
    from .mechfile import spec_from_dict
    from .model import build_model
    from .simulation import resolve_settings

    doc = copy.deepcopy(spec.base)
    settings = dict(spec.settings)
    desc = ", ".join(f"{p} = {_label(v)}" for p, v in case.params)
    key = _case_key([doc, settings, list(case.params), list(spec.keep), spec.trajectories])

    def refuse(msg: str) -> PreparedCase:
        return PreparedCase(case, doc, settings, key, refused=f"case {case.index} ({desc}): {msg}")

    for path, value in case.params:
        if is_setting(path):
            settings[path] = value
            continue
        try:
            node, k = resolve_path(doc, path)
        except ValueError as exc:
            return refuse(f"bad parameter path {exc}")
        node[k] = copy.deepcopy(value)
    key = _case_key([doc, settings, list(spec.keep), spec.trajectories])
    try:
        mspec = spec_from_dict(doc)
        model = build_model(mspec)
    except MechanismError as exc:
        return refuse(str(exc))
    varied = {p for p, _ in case.params}
    for w in mspec.warnings:  # a misspelt field would be ignored by the loader: refuse it
        where = w.partition(": unknown key")[0]
        if "unknown key" in w and where in varied:
            return refuse(f"bad parameter path {where}: not a field of the mechanism format ({w})")
    try:
        resolve_settings(model, build_settings(model, settings))
    except (SettingsError, TypeError, ValueError) as exc:
        return refuse(str(exc))
    return PreparedCase(case, doc, settings, key)


def prepare_cases(spec: SweepSpec) -> list[PreparedCase]:
    return [prepare_case(spec, c) for c in spec.cases]


# ------------------------------------------------------------------------ one case


def quantities(columns: list[str], rows, keep: tuple[str, ...]) -> dict:
    """The kept quantities of one run, computed from its result rows (the same numbers
    as the rows of ``linkwork run``'s CSV, so a reader can recompute them from it)."""
    import numpy as np

    from .results import BODY_FIELDS

    rows = np.asarray(rows, dtype=float)
    col = {c: i for i, c in enumerate(columns)}
    empty = rows.shape[0] == 0
    out: dict[str, float] = {}
    for q in keep:
        if q == "final_state":
            for c in columns:
                name, _, fld = c.rpartition(".")
                if fld in BODY_FIELDS and not c.startswith(("joint.", "reaction.")):
                    out[f"final.{c}"] = math.nan if empty else float(rows[-1, col[c]])
        elif q == "max_position_violation":
            out[q] = math.nan if empty else float(np.max(rows[:, col["violation.position"]]))
        elif q == "energy_drift":
            e = rows[:, col["energy.total"]]
            out[q] = math.nan if empty else float(np.max(np.abs(e - e[0])))
        elif q == "reaction_peaks":
            for c in columns:
                if c.startswith("reaction.") and c.endswith(".fx"):
                    j = c[len("reaction."):-len(".fx")]
                    for part, fields_ in (("force", "fxyz"), ("moment", "nxyz")):
                        idx = [col[f"reaction.{j}.{fields_[0]}{a}"] for a in "xyz"]
                        v = math.nan if empty else float(np.max(np.sqrt(np.sum(rows[:, idx] ** 2, axis=1))))
                        out[f"reaction_peak.{j}.{part}"] = v
        else:
            stat, _, c = q.partition(":")
            if c not in col:
                out[f"{stat}.{c}"] = math.nan
                continue
            x = rows[:, col[c]]
            out[f"{stat}.{c}"] = (math.nan if empty else
                                  float({"final": lambda a: a[-1], "max": np.max, "min": np.min,
                                         "mean": np.mean}[stat](x)))
    return out


def run_case(doc: dict, settings: dict, keep: tuple[str, ...], trajectory: str = "array") -> dict:
    """One case, run through the engine's :class:`Simulation` exactly as ``linkwork run``
    does.  Returns a dict: ``status`` (ok / failed / refused), ``exit_status``
    (0 / 3 / 2), ``message``, the kept quantities, ``t_final``, ``rows`` (count),
    ``wall_time``, ``worker``, ``columns``, and the result rows as ``trajectory`` asks:
    ``"array"`` or ``"parquet"``: ``data`` (an array); ``"csv"``: ``csv``, the text of
    ``linkwork run``'s CSV (formatted here, on the worker, so a sweep's client only
    writes it); ``"none"``: neither.  A simulation failure is a result, not an exception."""
    import numpy as np

    from .errors import MechanismError, SettingsError, SimulationError
    from .mechfile import spec_from_dict
    from .model import build_model
    from .simulation import Simulation

    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = f"pid {os.getpid()}"
    t0 = time.perf_counter()
    out: dict[str, Any] = {"worker": worker, "message": ""}
    try:
        model = build_model(spec_from_dict(doc))
        sim = Simulation(model, build_settings(model, settings))
    except (MechanismError, SettingsError) as exc:
        out.update(status="refused", exit_status=2, message=str(exc), columns=[], data=None, t_final=math.nan,
                   rows=0, wall_time=time.perf_counter() - t0)
        return out
    parts = []
    status, code = "ok", 0
    try:
        for chunk in sim.run():
            parts.append(chunk.rows)
    except SimulationError as exc:
        status, code, out["message"] = "failed", 3, str(exc)
    data = np.vstack(parts) if parts else np.zeros((0, len(sim.columns)))
    out.update(status=status, exit_status=code, wall_time=time.perf_counter() - t0, rows=int(data.shape[0]),
               t_final=float(data[-1, 0]) if data.shape[0] else math.nan)
    out.update(quantities(sim.columns, data, keep))
    out["columns"] = list(sim.columns)
    out["data"] = data if trajectory in ("array", "parquet") else None
    if trajectory == "csv":
        import io

        from .results import CsvWriter

        buf = io.StringIO()
        CsvWriter(buf, sim.columns).write_rows(data)
        out["csv"] = buf.getvalue()
    return out


# ------------------------------------------------------------------------ files


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` then rename onto ``path``: a reader (or a killed writer) sees the old
    file or the new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)


def trajectory_path(out_dir: Path, index: int, fmt: str) -> Path:
    return Path(out_dir) / "runs" / f"case-{index:05d}.{fmt}"


def write_trajectory(path: Path, columns: list[str], data, fmt: str) -> None:
    """The case's rows as the contract's CSV (``repr`` digits, as ``linkwork run``), or Parquet."""
    if fmt == "csv":
        from .results import CsvWriter

        def write(tmp):
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                CsvWriter(fh, columns).write_rows(data)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        def write(tmp):
            table = pa.table({c: data[:, i] for i, c in enumerate(columns)})
            pq.write_table(table, tmp)
    atomic_write(path, write)


def _column_values(values: list) -> list:
    """Parameter values of one column: numbers as floats, or (any non-number present) JSON text."""
    if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
        return [math.nan if v is None else float(v) for v in values]
    return [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values]


def summary_frame(records: dict[int, dict], parameters: tuple[str, ...], keep_columns: list[str]):
    """The summary table (pandas), one row per case in case order."""
    import pandas as pd

    idx = sorted(records)
    cols: dict[str, list] = {c: [records[i].get(c) for i in idx] for c in HEAD_COLUMNS}
    for p in parameters:
        cols[f"param.{p}"] = _column_values([records[i].get("params", {}).get(p) for i in idx])
    for q in keep_columns:
        cols[q] = [float(records[i].get(q, math.nan)) for i in idx]
    for c in TAIL_COLUMNS:
        cols[c] = [records[i].get(c) for i in idx]
    df = pd.DataFrame(cols)
    df["case"] = df["case"].astype("int64")
    df["exit_status"] = df["exit_status"].astype("int64")
    df["rows"] = df["rows"].fillna(0).astype("int64")
    for c in ("t_final", "wall_time"):
        df[c] = df[c].astype("float64")
    return df


def write_summary(path: Path, df) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def read_summary(path: Path):
    """A previous summary (pandas), or None when there is none or it cannot be read."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pandas()
    except Exception:  # noqa: BLE001 -- missing, torn by an older writer, or not Parquet: start afresh
        return None


def _record_from_row(row, parameters) -> dict:
    rec = {k: (None if isinstance(v, float) and math.isnan(v) and k in ("message", "worker") else v)
           for k, v in row.items()}
    rec["params"] = {}
    for p in parameters:
        if f"param.{p}" in row:
            rec["params"][p] = row[f"param.{p}"]
    return rec


def complete_records(prepared: list[PreparedCase], previous, out_dir: Path | None, fmt: str,
                     parameters: tuple[str, ...]) -> dict[int, dict]:
    """The rows of an earlier summary that a resumed sweep keeps: status ``ok`` or
    ``failed`` (a result), the same case definition (``case_key``: mechanism, settings,
    kept quantities), and its trajectory file present.  Every other case is computed."""
    by_case = {int(r["case"]): r for r in previous.to_dict("records")}
    out: dict[int, dict] = {}
    for pc in prepared:
        row = by_case.get(pc.index)
        if (row is not None and pc.refused is None and row.get("status") in COMPLETE
                and row.get("case_key") == pc.key
                and (fmt == "none" or out_dir is None or trajectory_path(out_dir, pc.index, fmt).is_file())):
            rec = _record_from_row(row, parameters)
            rec["params"] = dict(pc.case.params)
            out[pc.index] = rec
    return out


# ------------------------------------------------------------------------ running


@dataclass
class Progress:
    """What a progress display needs; handed to the ``progress`` callback."""

    total: int
    done: int = 0  # finished this session (ok or failed)
    failed: int = 0  # of which failed (simulation failure or task error)
    running: int = 0  # cases executing on a worker now
    skipped: int = 0  # complete from an earlier session (resume)
    refused: int = 0
    started: float = field(default_factory=time.perf_counter)
    to_compute: int = 0

    @property
    def eta(self) -> float | None:
        """Seconds left, from the mean rate so far (None before the first case)."""
        if self.done == 0:
            return None
        rate = self.done / max(time.perf_counter() - self.started, 1e-9)
        return (self.to_compute - self.done) / rate


def default_workers(threads_per_worker: int = 1) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, threads_per_worker))


def worker_environment(threads_per_worker: int) -> dict:
    """The worker processes' environment: numba (and OpenMP, OpenBLAS) get
    ``threads_per_worker`` threads, so N workers use N x threads cores, not N x cores.
    OpenMP's threads keep their default wait policy (spin, then sleep) when a worker has
    more than one: with ``OMP_WAIT_POLICY=PASSIVE`` every parallel region wakes sleeping
    threads, and two threads made a dca evaluation slower than one (1024 bodies: 627 us
    on one thread, 661-672 us on two passive ones, 368-370 us on two default ones;
    docs/performance.md, "Speed").  With one thread there is no team to wake."""
    n = max(1, threads_per_worker)
    env = {"NUMBA_NUM_THREADS": str(n), "OMP_NUM_THREADS": str(n), "OPENBLAS_NUM_THREADS": "1"}
    if n == 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def local_cluster(workers: int | None = None, threads_per_worker: int = 1):
    """A ``LocalCluster`` of worker processes on this machine's loopback interface (every
    listening socket, the workers' HTTP endpoints included, on 127.0.0.1): one
    case at a time per worker, ``threads_per_worker`` numba threads for it.  A task whose
    worker dies twice is given up (``allowed-failures`` 1: Dask retries it once)."""
    import dask
    from distributed import LocalCluster

    n = workers or default_workers(threads_per_worker)
    env = worker_environment(threads_per_worker)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.nanny.pre-spawn-environ": env}):
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                            # the scheduler's HTTP server runs in any case (health, metrics; the
                            # dashboard's pages when bokeh is installed): on loopback, a free port
                            dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0", env=env,
                            silence_logs=40)


def run_sweep(spec: SweepSpec | str | Path | dict, client=None, out: str | Path | None = None, *,
              workers: int | None = None, threads_per_worker: int = 1, resume: bool = True,
              progress: Callable[[Progress], None] | None = None, cancel=None,
              on_start: Callable[[Any, list[PreparedCase], int], None] | None = None,
              retries: int = 1, poll: float = 0.25):
    """Run a sweep and return its summary (a pandas DataFrame, one row per case).

    ``spec``: a :class:`SweepSpec`, a sweep file's path, or a parsed sweep document.
    ``client``: a ``distributed.Client``, or None to start a ``LocalCluster`` of
    ``workers`` processes (default: the cores / ``threads_per_worker``) for this call.
    ``out``: the results directory (``summary.parquet``, ``runs/``); with it the sweep
    resumes (unless ``resume`` is false): complete cases of an earlier run with the same
    case definition are read back, not computed again.  ``progress(Progress)`` is called
    as cases start and finish; ``cancel`` (a ``threading.Event``) stops the sweep (the
    summary then holds the cases finished so far).  ``on_start(client, cases,
    to_compute)`` is called once the client is up (the CLI prints the dashboard)."""
    from distributed import Client, wait

    if isinstance(spec, (str, Path)):
        spec = load_sweep(spec)
    elif isinstance(spec, dict):
        spec = sweep_from_dict(spec)
    prepared = prepare_cases(spec)
    session = uuid.uuid4().hex[:12]
    out_dir = Path(out) if out is not None else None
    fmt = spec.trajectories
    summary_path = out_dir / "summary.parquet" if out_dir else None
    if out_dir is not None:
        (out_dir / "runs").mkdir(parents=True, exist_ok=True)

    records: dict[int, dict] = {}
    keep_columns: list[str] = []

    def note_columns(res: dict):
        for k in res:
            if k not in keep_columns and k not in HEAD_COLUMNS and k not in TAIL_COLUMNS and k not in (
                    "columns", "data", "csv", "params"):
                keep_columns.append(k)

    # resume: complete rows of an earlier session whose case is unchanged
    previous = read_summary(summary_path) if (out_dir is not None and resume) else None
    if previous is not None:
        records.update(complete_records(prepared, previous, out_dir, fmt, spec.parameters))
        keep_columns += [k for k in previous.columns
                         if not k.startswith("param.") and k not in HEAD_COLUMNS and k not in TAIL_COLUMNS]

    state = Progress(total=len(prepared), skipped=len(records))
    for pc in prepared:
        if pc.refused is not None:
            records[pc.index] = {"case": pc.index, "status": "refused", "exit_status": 2, "message": pc.refused,
                                 "params": dict(pc.case.params), "t_final": math.nan, "rows": 0,
                                 "wall_time": math.nan, "worker": None, "session": session,
                                 "finished_at": time.time(), "case_key": pc.key}
            state.refused += 1
    todo = [pc for pc in prepared if pc.index not in records]
    state.to_compute = len(todo)

    def flush():
        if summary_path is not None:
            write_summary(summary_path, summary_frame(records, spec.parameters, keep_columns))

    own_cluster = None
    if client is None and todo:
        own_cluster = local_cluster(workers, threads_per_worker)
        client = Client(own_cluster)
    own_client = own_cluster is not None
    try:
        if on_start is not None:
            on_start(client, prepared, len(todo))
        flush()
        if not todo:
            return summary_frame(records, spec.parameters, keep_columns)
        futures = {}
        for pc in todo:
            f = client.submit(run_case, pc.doc, pc.settings, spec.keep, fmt, pure=False, retries=retries,
                              key=f"linkwork-case-{pc.index}-{pc.key}-{session}")
            futures[f] = pc
        pending = set(futures)
        last_running = 0.0
        if progress:
            progress(state)
        while pending:
            if cancel is not None and cancel.is_set():
                client.cancel(list(pending))
                break
            try:
                finished = wait(list(pending), timeout=poll, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                finished = set()
            for f in finished:
                pending.discard(f)
                pc = futures[f]
                rec = {"case": pc.index, "params": dict(pc.case.params), "session": session, "case_key": pc.key}
                if f.status == "finished":
                    try:
                        res = f.result()
                    except Exception as exc:  # the result could not be fetched
                        res = {"status": "error", "exit_status": 1, "message": f"{type(exc).__name__}: {exc}"}
                else:
                    exc = f.exception()
                    res = {"status": "error", "exit_status": 1,
                           "message": f"{type(exc).__name__}: {exc}" if exc is not None else f.status,
                           "rows": 0, "t_final": math.nan, "wall_time": math.nan, "worker": None}
                f.release()
                if out_dir is not None and res.get("csv") is not None:
                    text = res["csv"]
                    atomic_write(trajectory_path(out_dir, pc.index, fmt),
                                 lambda tmp: tmp.write_text(text, encoding="utf-8", newline="\n"))
                elif out_dir is not None and res.get("data") is not None:
                    write_trajectory(trajectory_path(out_dir, pc.index, fmt), res["columns"], res["data"], fmt)
                note_columns({k: v for k, v in res.items() if k not in ("status", "exit_status", "message")})
                rec.update({k: v for k, v in res.items() if k not in ("columns", "data", "csv")})
                rec["finished_at"] = time.time()
                records[pc.index] = rec
                state.done += 1
                if rec["status"] != "ok":
                    state.failed += 1
            if finished:
                flush()
                if out_dir is not None:
                    with open(out_dir / "sweep.log", "a", encoding="utf-8") as log:
                        for f in finished:
                            r = records[futures[f].index]
                            log.write(json.dumps({"session": session, "case": r["case"], "status": r["status"],
                                                  "worker": r.get("worker"), "wall_time": r.get("wall_time")})
                                      + "\n")
            now = time.perf_counter()
            if progress and (finished or now - last_running > 1.0):
                if now - last_running > 0.5:
                    last_running = now
                    try:  # the scheduler's "processing" includes tasks queued on a busy worker
                        proc = client.processing()
                        live = {f.key for f in pending}
                        state.running = min(sum(1 for ks in proc.values() for k in ks if k in live),
                                            sum(client.nthreads().values()))
                    except Exception:  # pragma: no cover - scheduler unreachable for a moment
                        pass
                progress(state)
        flush()
        return summary_frame(records, spec.parameters, keep_columns)
    finally:
        if own_client:
            client.close()
            own_cluster.close()

