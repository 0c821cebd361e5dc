"""Where numba keeps the engine's compiled kernels: each directory checked once, and
each kernel's files its own.

numba finds a cached kernel's directory with a *locator* when the kernel is decorated,
that is when its module is imported. For ``NUMBA_CACHE_DIR`` that locator
(``numba.core.caching.UserProvidedCacheLocator``) checks that the directory is writable
by creating and deleting a temporary file in it, once for every kernel. Importing the
engine's modules for a run decorates about 240 kernels in some 25 directories, and those
checks cost about 12 ms of every start: of ``linkwork run``, of the application, of each
sweep worker.

:class:`EngineCacheLocator` puts each kernel in the same directory as numba's locator does.
It checks each directory once per process. numba saves a kernel through numba's own
check, so a directory removed while the process runs is made again before anything is
written there. The engine names this class first in ``NUMBA_CACHE_LOCATOR_CLASSES``,
numba's other locators after it (:data:`engine.CACHE_LOCATORS`), unless the variable is
set already.

:func:`variant` gives each kernel a factory makes (the tree passes for blocks of 6 and 7,
``dca``'s two evaluation kernels) a cache index of its own
(``test_no_two_kernels_share_a_cache_index``).
"""

from __future__ import annotations

import os

from numba.core import caching, config


class EngineCacheLocator(caching.UserProvidedCacheLocator):
    """numba's locator for ``NUMBA_CACHE_DIR``; the writable check once per directory."""

    #: the cache directories found writable in this process
    _writable: set[str] = set()

    @classmethod
    def from_function(cls, py_func, py_file):
        if not config.CACHE_DIR or not os.path.exists(py_file):
            return None  # as numba's: the next locator of the list is asked
        self = cls(py_func, py_file)
        path = self.get_cache_path()
        if path not in cls._writable:
            try:
                self.ensure_cache_path()
            except OSError:  # not writable: as numba's, the next locator is asked
                return None
            cls._writable.add(path)
        return self


def variant(tag: str):
    """A decorator, under numba's, for each kernel a factory makes: ``tag`` (what tells the
    factory's kernels apart) joins the function's qualified name, from which numba names
    the kernel's cache files. Two kernels a factory makes from one ``def`` otherwise share
    one index file, in which numba tells them apart by their closure's values only. numba
    adds an entry to an index by reading it, choosing the next free data file and writing
    both back, so two processes compiling the two kernels at once can each take the same
    data file, and one kernel's index entry can then point at the other's machine code for
    the same argument types."""

    def tagged(func):
        func.__qualname__ = f"{func.__qualname__}_{tag}"
        return func

    return tagged
