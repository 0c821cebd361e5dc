"""Keep the engine's linear algebra from fighting the GUI for the cores.

OpenBLAS (numpy's and scipy's) starts one spinning thread per core.  On a
small, loaded machine a simulation thread plus the GUI thread plus those
spinners makes dense solves 10-100x slower (measured on 2 cores).  The
desktop application therefore runs BLAS single-threaded: the environment
variables are set before numpy loads, and already-loaded OpenBLAS libraries
are told through their own ``*_set_num_threads`` entry points.
"""

from __future__ import annotations

import ctypes
import os
import sys

_ENV = ("OPENBLAS_NUM_THREADS", "LP_NUM_THREADS")
_SYMBOLS = ("openblas_set_num_threads", "openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "scipy_openblas_set_num_threads64_")


def configure_environment() -> None:
    """Before numpy is imported: single-threaded BLAS.

    numba's OpenMP threads keep GNU OpenMP's default waiting (spin briefly, then
    sleep).  ``OMP_WAIT_POLICY=PASSIVE`` (sleep at once) made every parallel region
    of a run in the worker thread wait for a futex wake-up of its idle team
    member: the 128-link run took 2.2x its headless time (passive) against 0.97x
    (default spinning), tests/app/qt/test_responsiveness.py.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Mesa's software OpenGL: leave a core to the simulation thread
    os.environ.setdefault("LP_NUM_THREADS", str(max(1, (os.cpu_count() or 2) - 1)))


def _loaded_openblas() -> list[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.endswith(".so") or ".so." in p or p.endswith(".dylib"))


def limit_blas_threads(n: int = 1) -> int:
    """Set the thread count of every OpenBLAS already loaded; returns how many were set."""
    configure_environment()
    if "numpy" not in sys.modules and "scipy" not in sys.modules:
        return 0
    done = 0
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in _SYMBOLS:
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                fn(int(n))
                done += 1
                break
    return done
