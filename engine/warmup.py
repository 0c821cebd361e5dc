"""``linkwork compile``: every formulation's kernels into the numba cache before anyone waits.

numba compiles a kernel the first time it runs and keeps the machine code in its cache, a
directory keyed by a hash of the engine's sources (``engine/__init__.py``,
``_numba_cache_dir``): the first Run of each formulation after an install or an update of
the engine compiles, every later one loads (docs/compile-time.md). This command does that
compiling ahead: it runs each registered formulation for two output steps on every bundled
example, at the example's own default settings -- the kernels a first Run calls, with the
types it calls them with -- and shows a progress bar, formulation by formulation, with the
elapsed time. ``--variants`` also compiles the variants a formulation asks for
(``Formulation.warm_variants``: ``dca``'s two roles on a chain of 512 bodies or more on
two threads), which no bundled example calls at its defaults: a desktop bundle ships them,
a plain install compiles them at the first run that calls them. ``scripts/setup.sh`` calls
it at the end of every set-up.

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
#: an empty cache; docs/compile-time.md), used by :func:`compile_notice`
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


def compiled(variants: bool = False) -> set[str]:
    """The formulations whose kernels are in the cache for these sources (at this place)
    and this numba (with ``variants``: compiled with ``--variants``)."""
    d = cache_dir()
    if d is None or not any(d.rglob("*.nbi")):
        return set()
    rec = _read_json(d / RECORD)
    if rec.get("numba") != _numba_version() or rec.get("root", engine_root()) != engine_root():
        return set()
    return {n for n, r in rec.get("formulations", {}).items() if r.get("variants", False) or not variants}


def measured_seconds() -> dict[str, float]:
    """The last measured compile time of each formulation on this machine, else the typical one."""
    d = cache_dir()
    out = dict(TYPICAL_SECONDS)
    if d is not None:
        out.update({k: float(v) for k, v in _read_json(d.parent / TIMES).items()})
    return out


def _record(name: str, seconds: float, examples: int, variants: bool = False) -> None:
    d = cache_dir()
    if d is None:
        return
    rec = _read_json(d / RECORD)
    if rec.get("numba") != _numba_version() or rec.get("root", engine_root()) != engine_root():
        rec = {"numba": _numba_version(), "formulations": {}}
    rec["root"] = engine_root()
    rec["formulations"][name] = {"seconds": round(seconds, 1), "examples": examples, "variants": variants}
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


#: the formulation whose warm-up also compiles the adaptive integrators' steps
#: (:mod:`.formulations.erk_kernel`: compiled once for every formulation, so once is enough)
ADAPTIVE_WARMER = "dca"
#: the formulations whose warm-up also runs the first mechanism with loops under ``rk45``:
#: their adaptive rows on loops are compiled per formulation (:class:`.row_loop.AdaptiveRowLoop`)
ADAPTIVE_LOOPS = ("dense", "dca", "hdca")


def warm(name: str, files: list[Path], on_file=None, variants: bool = False) -> tuple[int, list[str]]:
    """Run formulation ``name`` for two output steps on each mechanism file, at the
    file's own default settings and, with ``variants``, at the formulation's
    ``warm_variants`` of them (dca: two threads on a long chain); :data:`ADAPTIVE_WARMER`
    also runs its first file with ``rk45``, and each of :data:`ADAPTIVE_LOOPS` its first
    file with loops.  Returns how many ran
    and the errors of those that could not: files the formulation refuses are skipped quietly, a run that fails
    numerically has compiled its kernels all the same, anything else is reported
    (the warm-up never stops a set-up; the kernels then compile at first use)."""
    from .errors import LinkworkError, SimulationError
    from .formulations import REGISTRY
    from .model import load_model
    from .simulation import Simulation, file_defaults

    done, errors = 0, []
    loops_warm = name not in ADAPTIVE_LOOPS
    for k, path in enumerate(files):
        try:
            model = load_model(path)
            s = file_defaults(model, name)
            s = s.replace(formulation=name, t_end=2 * s.dt)
            runs = [s, *(REGISTRY[name].warm_variants(model, s) if variants else [])]
            if name == ADAPTIVE_WARMER and k == 0:
                runs.append(s.replace(integrator="rk45"))  # the compiled adaptive steps, shared by all
            if not loops_warm and model.ncut and not model.nd and REGISTRY[name].supports(model)[0]:
                runs.append(s.replace(integrator="rk45"))  # the adaptive rows on loops
                loops_warm = True
            for settings in runs:
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


class _Progress:
    """The formulations' progress: ``dca    [#####.....]  9/21 examples  12.3 s``.  On a
    terminal the running ones share one line, redrawn four times a second (so the clocks
    move during a long compile), and each gets a line of its own when done; elsewhere only
    the finished lines are printed."""

    WIDTH = 24

    def __init__(self, total: int, stream):
        self.total, self.stream = total, stream
        self.tty = stream.isatty()
        self.running: dict[str, list] = {}  # name -> [files done, start time]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if self.tty:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _line(self, name: str, width: int | None = None) -> str:
        done, t0 = self.running[name]
        w = self.WIDTH if width is None else width
        fill = int(w * done / max(self.total, 1))
        bar = "#" * fill + "." * (w - fill)
        if width is None:
            return (f"  {name:<9} [{bar}] {done:>2}/{self.total} examples  "
                    f"{time.perf_counter() - t0:6.1f} s")
        return f"{name} [{bar}] {time.perf_counter() - t0:.0f} s"

    def _draw(self) -> None:
        if self.running:
            many = len(self.running) > 1
            text = ("  " + "  ".join(self._line(n, 10) for n in self.running)) if many \
                else self._line(next(iter(self.running)))
            self.stream.write("\r\x1b[K" + text)
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.25):
            with self._lock:
                self._draw()

    def start(self, name: str) -> None:
        with self._lock:
            self.running.setdefault(name, [0, time.perf_counter()])

    def update(self, name: str, done: int) -> None:
        with self._lock:
            self.running.setdefault(name, [0, time.perf_counter()])[0] = done

    def finish(self, name: str, note: str = "") -> float:
        """Print the formulation's line; returns its seconds."""
        with self._lock:
            self.running.setdefault(name, [0, time.perf_counter()])
            seconds = time.perf_counter() - self.running[name][1]
            line = self._line(name) + note
            del self.running[name]
            if self.tty:
                self.stream.write("\r\x1b[K" + line + "\n")
                self._draw()
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        return seconds

    def close(self) -> None:
        self._stop.set()
        if self.tty:
            self._thread.join()


def _worker(name: str, files: list[str], progress, variants: bool) -> tuple[str, float, int, list[str]]:
    """One formulation's warm-up in a process of its own (:func:`compile_all`): sends
    ``(name, files done)`` to ``progress`` as it goes."""
    progress.put((name, 0))
    t0 = time.perf_counter()
    n, errors = warm(name, [Path(f) for f in files], lambda k: progress.put((name, k)), variants)
    return name, time.perf_counter() - t0, n, errors


def compile_all(names: list[str], force: bool = False, files: list[Path] | None = None, stream=None,
                jobs: int | None = None, variants: bool = False):
    """Compile (or load) the kernels of each formulation in ``names`` (with ``variants``,
    their :meth:`~.formulations.base.Formulation.warm_variants` too); returns
    ``({name: seconds} of those compiled now, [names with failed examples])``.
    Already compiled ones are skipped unless ``force``.  The formulations compile in
    ``jobs`` processes at once (every core when None), the longest first, each with its
    progress bar; one job compiles them in this process, one after the other."""
    stream = stream or sys.stderr
    files = examples() if files is None else files
    have = set() if force else compiled(variants)
    for name in names:
        if name in have:
            print(f"  {name:<9} already compiled", file=stream, flush=True)
    todo = [n for n in names if n not in have]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    out, failed = {}, []
    board = _Progress(len(files), stream)

    def done(name, seconds, n, errors):
        out[name] = board.finish(name, f"  ({len(errors)} failed)" if errors else "")
        for e in errors:
            print(f"    {e}", file=stream)
        if errors:
            failed.append(name)
        else:
            _record(name, seconds, n, variants)

    try:
        if jobs == 1:
            for name in todo:
                board.start(name)
                t0 = time.perf_counter()
                n, errors = warm(name, files, lambda k, name=name: board.update(name, k), variants)
                done(name, time.perf_counter() - t0, n, errors)
        else:
            _compile_in_processes(todo, files, jobs, board, done, variants)
    finally:
        board.close()
    return out, failed


def _compile_in_processes(todo: list[str], files: list[Path], jobs: int, board: _Progress, done,
                          variants: bool) -> None:
    """:func:`compile_all`'s formulations in ``jobs`` processes, the longest first (so the
    last to start are the short ones)."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    expect = measured_seconds()
    todo = sorted(todo, key=lambda n: -expect.get(n, 0.0))
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no numba state inherited
    with ctx.Manager() as manager, ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        progress = manager.Queue()
        pending = {pool.submit(_worker, name, [str(f) for f in files], progress, variants): name for name in todo}
        while pending:
            finished, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            while not progress.empty():
                board.update(*progress.get())
            for fut in finished:
                name = pending.pop(fut)
                try:
                    _, seconds, n, errors = fut.result()
                except Exception as exc:  # noqa: BLE001 - a crashed worker: reported like a failed example
                    seconds, n, errors = 0.0, 0, [f"{type(exc).__name__}: {exc}"]
                done(name, seconds, n, errors)


def _compile_for(path: str) -> int:
    """``linkwork compile --for FILE``: the kernels a first run of ``FILE`` at its defaults
    calls, and no more -- not recorded as the formulation compiled (other files call other
    variants)."""
    from .errors import LinkworkError
    from .model import load_model
    from .simulation import file_defaults, resolve_settings

    try:
        model = load_model(path)
        name = resolve_settings(model, file_defaults(model)).formulation
    except LinkworkError as exc:
        print(f"linkwork compile: {path}: {exc}", file=sys.stderr)
        return 2
    if name in compiled():
        return 0
    t0 = time.perf_counter()
    _, errors = warm(name, [Path(path)])
    for e in errors:
        print(f"linkwork compile: {e}", file=sys.stderr)
    print(f"linkwork compile: {name} for {Path(path).name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    from .formulations import REGISTRY

    p = argparse.ArgumentParser(
        prog="linkwork compile",
        description="Compile every formulation's numerical kernels into the cache, so that the first Run "
                    "of each starts at once (runs each on every bundled example for two steps).")
    p.add_argument("--formulations", metavar="A,B", default=",".join(REGISTRY),
                   help="which formulations [%(default)s]")
    p.add_argument("--force", action="store_true", help="compile again even if the cache has them")
    p.add_argument("--variants", action="store_true",
                   help="also the variants no bundled example calls at its defaults (dca's two roles on a chain "
                        "of 512 bodies or more on two threads; a desktop bundle ships them)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="formulations compiled at once, each in a process of its own [every core]")
    p.add_argument("--for", dest="for_file", metavar="FILE",
                   help="only what a first run of FILE needs: its default formulation, on that file "
                        "(make run does this first, and the rest in the background)")
    args = p.parse_args(argv)
    if args.for_file:
        return _compile_for(args.for_file)
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
    if args.jobs is not None and args.jobs < 1:
        print(f"linkwork compile: --jobs must be >= 1 (got {args.jobs})", file=sys.stderr)
        return 2
    done, failed = compile_all(names, force=args.force, jobs=args.jobs, variants=args.variants)
    ok = [n for n in done if n not in failed]
    if ok:
        print(f"linkwork compile: {len(ok)} formulation(s) compiled in {time.perf_counter() - t0:.0f} s; "
              "their first runs now start at once", file=sys.stderr)
    if failed:
        print(f"linkwork compile: {', '.join(failed)} failed on the examples above; their kernels compile "
              "(or fail again) at their first run", file=sys.stderr)
    return 1 if failed else 0
