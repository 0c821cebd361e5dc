"""``linkwork compile``: every formulation's kernels into the numba cache before anyone waits.

numba compiles a kernel the first time it runs and keeps the machine code in its
cache, a directory keyed by a hash of the engine's sources (``engine/__init__.py``,
``_numba_cache_dir``): the first Run of each formulation after an install or an
update of the engine compiles, every later one loads (docs/performance.md,
"Compile time").  This command does that compiling ahead: it runs each registered
formulation for two output steps on every bundled example, at the example's own
default settings -- the kernels a first Run calls, with the types it calls them
with -- plus the variants a formulation asks for (``Formulation.warm_variants``:
``dca``'s two roles on a chain, which only a run on two threads calls), and shows a
progress bar, formulation by formulation, with the elapsed time.
``scripts/setup.sh`` calls it at the end of every set-up.

A record in the cache directory (:data:`RECORD`) lists the formulations done for
this version of the sources and of numba; they are skipped unless ``--force``.
The measured seconds also go to :data:`TIMES` next to the keyed directories, so
the application can tell how long a compile it still has to wait for takes on
this machine (:func:`compile_notice`).  Nothing here imports numba before a
formulation runs: :func:`compile_notice` is safe for the GUI thread.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

#: in the keyed cache directory: the formulations compiled for these sources
RECORD = "compiled.json"
#: next to the keyed directories: seconds each formulation's compile took, last measured
TIMES = "compile-times.json"
#: CPU seconds a cold compile of each formulation took on a 2-core machine (the four-bar,
#: an empty cache; docs/performance.md, "Compile time"), used by :func:`compile_notice`
#: until this machine has measured its own
TYPICAL_SECONDS = {"dense": 20.0, "dca": 60.0, "hdca": 80.0, "index3": 100.0, "rcr": 30.0, "embedding": 65.0}


def cache_dir() -> Path | None:
    """The numba cache directory of this version of the engine (None: numba's default)."""
    from linkwork import engine  # noqa: F401  (sets NUMBA_CACHE_DIR)

    d = os.environ.get("NUMBA_CACHE_DIR")
    return Path(d) if d else None


def _numba_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba")
    except PackageNotFoundError:  # pragma: no cover - numba vendored or missing
        return "unknown"


def _read_json(path: Path | None) -> dict:
    try:
        return json.loads(path.read_text()) if path is not None else {}
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict) -> None:
    try:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:  # a read-only cache: the next run compiles again, nothing worse
        pass


def engine_root() -> str:
    """Where this engine's sources are: numba files each kernel's cache under a folder
    named after its source file's path, so two checkouts of the same sources share the
    keyed directory but not the kernels."""
    from linkwork import engine

    return str(Path(engine.__file__).resolve().parent)


def compiled() -> set[str]:
    """The formulations whose kernels are in the cache for these sources (at this place)
    and this numba."""
    d = cache_dir()
    if d is None or not any(d.rglob("*.nbi")):
        return set()
    rec = _read_json(d / RECORD)
    if rec.get("numba") != _numba_version() or rec.get("root", engine_root()) != engine_root():
        return set()
    return set(rec.get("formulations", {}))


def measured_seconds() -> dict[str, float]:
    """The last measured compile time of each formulation on this machine, else the typical one."""
    d = cache_dir()
    out = dict(TYPICAL_SECONDS)
    if d is not None:
        out.update({k: float(v) for k, v in _read_json(d.parent / TIMES).items()})
    return out


def _record(name: str, seconds: float, examples: int) -> None:
    d = cache_dir()
    if d is None:
        return
    rec = _read_json(d / RECORD)
    if rec.get("numba") != _numba_version() or rec.get("root", engine_root()) != engine_root():
        rec = {"numba": _numba_version(), "formulations": {}}
    rec["root"] = engine_root()
    rec["formulations"][name] = {"seconds": round(seconds, 1), "examples": examples}
    _write_json(d / RECORD, rec)
    times = _read_json(d.parent / TIMES)
    times[name] = round(seconds, 1)
    _write_json(d.parent / TIMES, times)


def compile_notice(formulation: str, elapsed: float) -> tuple[str, float]:
    """What the application says while a Run of ``formulation`` waits for its kernels,
    and the fraction of the expected wait that has passed (0 ... 0.99)."""
    if formulation in compiled():
        return f"Loading the compiled {formulation} kernels… {elapsed:.0f} s", min(elapsed / 5.0, 0.99)
    expect = measured_seconds().get(formulation, max(TYPICAL_SECONDS.values()))
    text = (f"Compiling the {formulation} kernels: {elapsed:.0f} s of about {expect:.0f} s (first run of "
            f"{formulation} after an install or update only; 'linkwork compile' does it ahead)…")
    return text, min(elapsed / expect, 0.99)


def examples() -> list[Path]:
    from .paths import examples_dir

    return sorted(examples_dir().glob("*.mech.json"))


def warm(name: str, files: list[Path], on_file=None) -> tuple[int, list[str]]:
    """Run formulation ``name`` for two output steps on each mechanism file, at the
    file's own default settings and at the formulation's ``warm_variants`` of them
    (dca: two threads on a long chain).  Returns how many ran and the errors of those that
    could not: files the formulation refuses are skipped quietly, a run that fails
    numerically has compiled its kernels all the same, anything else is reported
    (the warm-up never stops a set-up; the kernels then compile at first use)."""
    from .errors import LinkworkError, SimulationError
    from .formulations import REGISTRY
    from .model import load_model
    from .simulation import Simulation, file_defaults

    done, errors = 0, []
    for k, path in enumerate(files):
        try:
            model = load_model(path)
            s = file_defaults(model, name)
            s = s.replace(formulation=name, t_end=2 * s.dt)
            for settings in [s, *REGISTRY[name].warm_variants(model, s)]:
                for _chunk in Simulation(model, settings).run():
                    pass
            done += 1
        except SimulationError:
            done += 1
        except LinkworkError:
            pass
        except Exception as exc:  # noqa: BLE001 - reported, see the docstring
            errors.append(f"{path.name}: {type(exc).__name__}: {exc}")
        if on_file:
            on_file(k + 1)
    return done, errors


class _Bar:
    """One line per formulation: ``dca    [#####.....]  9/19 examples  12.3 s``, redrawn
    four times a second on a terminal (so the clock moves during a long compile),
    printed once when done otherwise."""

    WIDTH = 24

    def __init__(self, name: str, total: int, stream):
        self.name, self.total, self.stream = name, total, stream
        self.tty = stream.isatty()
        self.done = 0
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        if self.tty:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def line(self) -> str:
        fill = int(self.WIDTH * self.done / max(self.total, 1))
        bar = "#" * fill + "." * (self.WIDTH - fill)
        return (f"  {self.name:<7} [{bar}] {self.done:>2}/{self.total} examples  "
                f"{time.perf_counter() - self.t0:6.1f} s")

    def _draw(self, end: str = "") -> None:
        with self._lock:
            self.stream.write("\r" + self.line() + end)
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            self._draw()

    def update(self, done: int) -> None:
        self.done = done

    def finish(self, note: str = "") -> float:
        self._stop.set()
        seconds = time.perf_counter() - self.t0
        if self.tty:
            self._thread.join()
            self._draw(f"{note}\n")
        else:
            print(self.line() + note, file=self.stream, flush=True)
        return seconds


def compile_all(names: list[str], force: bool = False, files: list[Path] | None = None, stream=None):
    """Compile (or load) the kernels of each formulation in ``names``; returns
    ``({name: seconds} of those compiled now, [names with failed examples])``.
    Already compiled ones are skipped unless ``force``."""
    stream = stream or sys.stderr
    files = examples() if files is None else files
    have = set() if force else compiled()
    out, failed = {}, []
    for name in names:
        if name in have:
            print(f"  {name:<7} already compiled", file=stream, flush=True)
            continue
        bar = _Bar(name, len(files), stream)
        n, errors = warm(name, files, bar.update)
        out[name] = bar.finish(f"  ({len(errors)} failed)" if errors else "")
        for e in errors:
            print(f"    {e}", file=stream)
        if errors:
            failed.append(name)
        else:
            _record(name, out[name], n)
    return out, failed


def main(argv: list[str] | None = None) -> int:
    from .formulations import REGISTRY

    p = argparse.ArgumentParser(
        prog="linkwork compile",
        description="Compile every formulation's numerical kernels into the cache, so that the first Run "
                    "of each starts at once (runs each on every bundled example for two steps).")
    p.add_argument("--formulations", metavar="A,B", default=",".join(REGISTRY),
                   help="which formulations [%(default)s]")
    p.add_argument("--force", action="store_true", help="compile again even if the cache has them")
    args = p.parse_args(argv)
    names = [n for n in args.formulations.split(",") if n]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        print(f"linkwork compile: unknown formulation(s) {', '.join(unknown)} (available: {', '.join(REGISTRY)})",
              file=sys.stderr)
        return 2
    d = cache_dir()
    print(f"linkwork compile: numerical kernels into {d or 'numba default cache'} "
          "(once per version of the engine)", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    done, failed = compile_all(names, force=args.force)
    ok = [n for n in done if n not in failed]
    if ok:
        print(f"linkwork compile: {len(ok)} formulation(s) compiled in {time.perf_counter() - t0:.0f} s; "
              "their first runs now start at once", file=sys.stderr)
    if failed:
        print(f"linkwork compile: {', '.join(failed)} failed on the examples above; their kernels compile "
              "(or fail again) at their first run", file=sys.stderr)
    return 1 if failed else 0
