"""The sweep file (``*.sweep.json``, docs/sweeps.md): its format and its parser.

A sweep file names a base mechanism file, the run settings, and the parameters to
vary (:mod:`.parameters`) -- as a grid, a list of explicit cases, or random samples
drawn with a seed; plus the quantities to keep from every run.  :func:`load_sweep`
reads and checks the file; :class:`SweepError` names the JSON path of the first broken
rule, like the mechanism loader.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LinkworkError
from .parameters import RUN_SETTINGS, is_setting, resolve_path

FORMAT_NAME = "linkwork-sweep"
FORMAT_VERSION = 1

#: the standard kept quantities (docs/sweeps.md, "Kept quantities")
STANDARD_KEEP = ("final_state", "max_position_violation", "energy_drift", "reaction_peaks")
#: per-column statistics: ``"max:slider.x"`` keeps the column ``max.slider.x``
COLUMN_STATS = ("final", "max", "min", "mean")
TRAJECTORY_FORMATS = ("csv", "parquet", "none")
#: the most cases one sweep file may ask for (a summary row each; a grid's axes multiply)
MAX_CASES = 1_000_000


class SweepError(LinkworkError):
    """A sweep file breaks a rule of the format; ``path`` is the JSON path in the sweep file."""

    def __init__(self, path: str, rule: str):
        self.path = path
        self.rule = rule
        super().__init__(f"{path}: {rule}" if path else rule)



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
    case_timeout: float | None = None  # seconds a case may run (docs/sweeps.md, "Faults"); None: no limit


def _finite_number(x: Any) -> bool:
    """A JSON number (not a boolean) that is a finite float; an integer too large for a
    float is not."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


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
            if not _finite_number(x):
                raise SweepError(f"{where}.{k}", f"must be a finite number (got {json.dumps(x)[:40]})")
        num = v["num"]
        if not (isinstance(num, int) and num >= 1):
            raise SweepError(f"{where}.num", f"must be an integer >= 1 (got {json.dumps(num)})")
        if num > MAX_CASES:
            raise SweepError(f"{where}.num", f"must be at most {MAX_CASES:,} (got {num:,})")
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
    if not isinstance(args, list) or len(args) != 2 or not all(_finite_number(x) for x in args):
        raise SweepError(f"{where}.{kind}", "must be a list of two finite numbers")
    a, b = float(args[0]) + 0.0, float(args[1]) + 0.0  # + 0.0: -0.0 is 0.0 (numpy refuses a -0.0 scale)
    if kind == "normal":
        if b < 0:
            raise SweepError(f"{where}.normal", f"the standard deviation must be >= 0 (got {json.dumps(args[1])})")
        return [float(x) for x in rng.normal(a, b, n)]
    if b < a:
        raise SweepError(f"{where}.{kind}", f"must be [low, high] with low <= high (got {json.dumps(args)})")
    if kind == "uniform":
        if not math.isfinite(b - a):
            raise SweepError(f"{where}.uniform", f"high - low must be a finite number (got {json.dumps(args)})")
        return [float(x) for x in rng.uniform(a, b, n)]
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

    from ..errors import MechanismError

    if not isinstance(data, dict):
        raise SweepError("(file)", "must be a JSON object")
    if data.get("format") != FORMAT_NAME:
        raise SweepError("format", f'is required and must be "{FORMAT_NAME}"')
    if data.get("version") != FORMAT_VERSION or isinstance(data.get("version"), bool):
        raise SweepError("version", f"this Linkwork reads version {FORMAT_VERSION}")
    allowed = {"format", "version", "name", "mechanism", "settings", "grid", "cases", "random", "keep",
               "trajectories", "case_timeout"}
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
    from ..mechfile import spec_from_dict

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
        total = math.prod(len(vals) for _, vals in axes)
        if total > MAX_CASES:
            raise SweepError("grid", f"asks for {total:,} cases (the product of its axes' lengths); "
                                     f"at most {MAX_CASES:,}")
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
        if n > MAX_CASES:
            raise SweepError("random.n", f"must be at most {MAX_CASES:,} (got {n:,})")
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
    limit = data.get("case_timeout")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                              or not math.isfinite(limit) or limit <= 0):
        raise SweepError("case_timeout", f"must be a number of seconds > 0, or null for no limit "
                                         f"(got {json.dumps(limit)})")
    return SweepSpec(mechanism_path=mpath, base=base, settings=dict(settings), parameters=tuple(order),
                     cases=tuple(Case(i, p, o) for i, (p, o) in enumerate(cases)), keep=keep,
                     trajectories=traj, name=name, source=source,
                     case_timeout=None if limit is None else float(limit))


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
        raise SweepError(where, f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                                f"{exc.msg})") from None


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a ``*.sweep.json`` file."""
    p = Path(path)
    return sweep_from_dict(_read_json(p, "(file)"), p.parent, source=p)
