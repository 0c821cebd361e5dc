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
    0.92 ms with one BLAS thread).  The engine parallelises over the assembly tree."""
    try:
        import numpy  # noqa: F401  (load numpy's and scipy's BLAS so the limit reaches them)
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except Exception:  # pragma: no cover - threadpoolctl missing or unusable
        import os

        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


_limit_blas_threads()
