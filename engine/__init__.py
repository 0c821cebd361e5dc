"""Linkwork engine: headless mechanism dynamics.

The engine never imports Qt, pyqtgraph or vispy. Its public surface:

- :mod:`engine.mechfile` -- load, validate and save ``*.mech.json`` files;
- :mod:`engine.model` -- the immutable :class:`~engine.model.Model` built from a file;
- :mod:`engine.topology` -- loops, degrees of freedom, redundant constraints, assembly tree;
- :mod:`engine.simulation` -- :class:`~engine.simulation.Simulation` and its settings;
- :mod:`engine.generators` -- parametric mechanisms (chains, loops, ladders, the papers' cases).
"""

__version__ = "0.1.0"


def _limit_blas_threads() -> None:
    """One BLAS thread: the engine's matrices are small, and OpenBLAS's thread pool
    competes with numba's OpenMP threads for the cores (measured: the dense
    formulation on a 16-cell ladder, 13.4 ms per evaluation with both pools busy,
    0.92 ms with one BLAS thread).  The engine parallelises over the assembly tree.

    Before numpy is loaded the environment variable is enough (OpenBLAS reads it when
    it starts), and importing numpy and scipy here would cost every command a quarter
    of a second -- ``linkwork run --help`` included; after, threadpoolctl tells the
    loaded libraries."""
    import os
    import sys

    if "numpy" not in sys.modules and "scipy" not in sys.modules:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        return
    try:
        import scipy.linalg  # noqa: F401  (load scipy's BLAS too, so the limit reaches it)
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except Exception:  # pragma: no cover - threadpoolctl missing or unusable
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def source_key(root) -> str:
    """Hash of every ``*.py`` under ``root`` (names and contents): the numba cache key."""
    import hashlib
    from pathlib import Path

    h = hashlib.sha1()
    for path in sorted(Path(root).rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


#: ``NUMBA_CACHE_LOCATOR_CLASSES``: the engine's locator (:mod:`.cache_locator`: numba's for
#: ``NUMBA_CACHE_DIR``, its directories checked once), then numba's others in numba's order
CACHE_LOCATORS = (f"{__name__}.cache_locator.EngineCacheLocator,"
                  "InTreeCacheLocator,UserWideCacheLocator,IPythonCacheLocator,ZipCacheLocator")

#: numba cache directories unused this long are removed when another one is created
CACHE_KEEP_DAYS = 30


def _numba_cache_dir() -> None:
    """Keep numba's compiled kernels in a directory keyed by the engine's sources.

    numba checks a cached kernel against its own file only: a kernel that calls (or
    inlines) a function from another module keeps the old code when that module
    changes, and silently runs it.  Keying the whole cache by a hash of the engine's
    sources rules that out.  An explicit ``NUMBA_CACHE_DIR`` is respected.  Stale
    directories of other source versions are pruned after ``CACHE_KEEP_DAYS``.  numba
    finds each kernel's directory there with :data:`CACHE_LOCATORS`' first locator,
    unless ``NUMBA_CACHE_LOCATOR_CLASSES`` is set already."""
    import os
    import shutil
    import sys
    import time
    from pathlib import Path

    if getattr(sys, "frozen", False) and "numba" not in sys.modules:
        # a desktop bundle: kernels for a portable CPU level, as shipped (engine/shipped_cache.py)
        from .shipped_cache import choose_cpu

        choose_cpu()
    if not os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES"):
        os.environ["NUMBA_CACHE_LOCATOR_CLASSES"] = CACHE_LOCATORS
        if "numba" in sys.modules:  # imported before the engine: its config has been read already
            sys.modules["numba"].config.CACHE_LOCATOR_CLASSES = CACHE_LOCATORS
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    try:
        root = Path(__file__).resolve().parent
        key = source_key(root) if any(root.glob("*.py")) else __version__
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "linkwork" / "numba"
        cache = base / key
        if not cache.is_dir():
            cache.mkdir(parents=True, exist_ok=True)
            now = time.time()
            for old in base.iterdir():
                if old != cache and old.is_dir() and now - old.stat().st_mtime > CACHE_KEEP_DAYS * 86400:
                    shutil.rmtree(old, ignore_errors=True)
        os.utime(cache)
    except OSError:  # pragma: no cover - no writable cache location: numba's own default
        return
    os.environ["NUMBA_CACHE_DIR"] = str(cache)
    if "numba" in sys.modules:  # imported before the engine: its config has been read already
        sys.modules["numba"].config.CACHE_DIR = str(cache)
    shipped = Path(getattr(sys, "_MEIPASS", "")) / "numba-cache"
    if getattr(sys, "frozen", False) and shipped.is_dir():
        # a desktop bundle: its compiled kernels, re-keyed for where it was unpacked
        # (engine/shipped_cache.py, packaging/build.sh)
        from .shipped_cache import seed

        try:
            seed(shipped, Path(sys._MEIPASS), cache, stream=sys.stderr)
        except OSError as exc:  # pragma: no cover - unreadable bundle or full disk: compile at first use
            print(f"linkwork: the shipped compiled kernels could not be copied ({exc})", file=sys.stderr)


def start_parallel_backend() -> None:
    """Start numba's threading layer before any kernel runs.

    A cached kernel that calls a ``parallel=True`` kernel starts the threading layer
    when it is loaded only if its callees were compiled, not loaded from the cache,
    in the process that compiled it: numba does not carry a cached callee's start-up
    hook over to its callers (numba issues 4807, 8578).  When two processes fill the
    cache (two test workers, the app and a ``linkwork run``), such a kernel is cached
    without the hook, and a later process that loads it before anything else has
    started the threading layer calls a null pointer and crashes.  Measured: an
    ``hdca`` run segfaulted on its first evaluation with a cache filled by the
    two-worker test suite, and a pickled ``index3`` formulation aborted its first step in
    a fresh process ("LLVM ERROR: Symbol not found: allocate_sched").  Starting the layer
    up front is harmless and idempotent; every formulation does it on construction, and
    every compiled entry point or address before it compiles or loads a kernel
    (``formulations.workspace``: a formulation unpickled in another process was not
    constructed)."""
    import numba

    numba.get_num_threads()


_limit_blas_threads()
_numba_cache_dir()
