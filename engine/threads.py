"""The thread plan of a run: decided once, from the model, the formulation and the request.

numba runs the tree passes and the per-body loops on a pool of threads.  How many a run
uses, which assembly tree its layout is built for, and from how many bodies a per-body
loop opens a parallel region are one decision, made by :func:`plan` when a
:class:`~linkwork.engine.simulation.Simulation` starts (and by a formulation built on its
own), kept in a :class:`ThreadPlan`, passed to the formulation, shown by ``linkwork info``.

The rules (docs/performance.md, "Threads"; the measurements in
``benchmarks/results/``, made with ``benchmarks/thread_choice.py`` and
``benchmarks/two_threads.py``):

- below :data:`PARALLEL_MIN_BODIES` bodies a run has one thread whatever was asked: no
  kernel opens a parallel region there, and idle threads only wait for the cores;
- a count the user sets is otherwise taken as it is (at most numba's);
- left automatic, every core, except where a formulation's second thread costs more than
  it gives (:meth:`Formulation.automatic_threads`): ``dca`` and ``hdca`` on unbranched
  open chains shorter than :data:`DCA_CHAIN_SERIAL_BELOW` and :data:`HDCA_CHAIN_SERIAL_BELOW`
  bodies, ``dca`` on open branched trees shorter than :data:`DCA_TREE_SERIAL_BELOW`;
- the layout's thread count (:meth:`Formulation.layout_threads`) is the run's, except for
  ``dca`` on an unbranched chain, which runs its one-thread layout in two roles.
"""

from __future__ import annotations

from dataclasses import dataclass

#: per-body loops and tree passes go parallel from this many bodies on; below, one thread
PARALLEL_MIN_BODIES = 64
#: the layout's ``body_parallel_from`` on one thread: no body loop opens a parallel region
NEVER_PARALLEL = 2**63 - 1  # the largest int64
#: left automatic, ``dca`` runs an unbranched open chain of fewer bodies on one thread:
#: the chain's two halves on two threads took 1.31-1.36 x one thread's time at 64 bodies,
#: 1.02-1.03 x at 256, 0.93-0.96 x at 512
DCA_CHAIN_SERIAL_BELOW = 512
#: left automatic, ``hdca`` runs an unbranched open chain of fewer bodies on one thread:
#: two threads cut the chain into two parts that merge, 0.77-1.08 x one thread's speed up
#: to 4096 bodies
HDCA_CHAIN_SERIAL_BELOW = 8192
#: left automatic, ``dca`` runs an open branched tree (no loop) of fewer bodies on one
#: thread: random trees of 128-512 bodies took 1.5-1.9 x one thread's time on two
DCA_TREE_SERIAL_BELOW = 1024
#: on one thread the tree passes still cut the tree (one region per pass) from this many
#: bodies on: numba compiles the merges in a parallel region's body with ``noalias``
#: arguments, 3 % faster from 512 bodies on, while below about 200 the region's entry costs more
ONE_THREAD_CUT_MIN_BODIES = 256


def available() -> int:
    """numba's thread pool: every core unless ``NUMBA_NUM_THREADS`` says fewer."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def run_threads(nb: int, requested: int | None) -> int:
    """The general rule: ``requested`` threads (every core when None, at most numba's), but
    one below :data:`PARALLEL_MIN_BODIES` bodies."""
    n = available() if requested is None else min(requested, available())
    return 1 if nb < PARALLEL_MIN_BODIES else max(n, 1)


def body_parallel_from(nb: int, threads: int):
    """From how many bodies the per-body loops (leaves, accelerations, hdca's impulses and
    momentum rates) open a parallel region, for a layout built for ``threads``: never on
    one thread, where a region costs 0.6 us to enter and runs no faster than a plain loop."""
    import numpy as np  # (the command line reads this module's constants without numpy)

    return np.int64(PARALLEL_MIN_BODIES if run_threads(nb, threads) > 1 else NEVER_PARALLEL)


def cuts_tree(nb: int, threads: int) -> bool:
    """Whether the tree passes cut the tree into independent subtrees (one parallel region
    per pass) for a layout built for ``threads`` on ``nb`` bodies."""
    if run_threads(nb, threads) > 1:
        return True  # run_threads is 1 below PARALLEL_MIN_BODIES
    return nb >= ONE_THREAD_CUT_MIN_BODIES


@dataclass(frozen=True)
class ThreadPlan:
    """How a run uses the cores."""

    #: numba threads the run uses (``numba.set_num_threads``)
    threads: int
    #: the thread count its assembly tree and layout are built for
    layout: int
    #: what was asked: a count, or None for automatic
    requested: int | None
    #: why the count differs from the request, in a few words ("" when it does not)
    why: str = ""

    def describe(self) -> str:
        asked = "automatic" if self.requested is None else f"{self.requested} asked"
        text = f"{self.threads} thread{'s' if self.threads != 1 else ''} ({asked}"
        text += f"; {self.why})" if self.why else ")"
        if self.layout != self.threads:
            text += f", layout for {self.layout}"
        return text


def plan(model, formulation, requested: int | None = None, limit: int | None = None) -> ThreadPlan:
    """The plan of a run of ``formulation`` (a :class:`Formulation` class) on ``model`` with
    ``requested`` threads (None: automatic); ``limit``: at most this many, whatever the
    rules give (the application keeps a core for the window)."""
    n = run_threads(model.nb, requested)
    why = ""
    if n == 1 and requested != 1 and available() > 1 and model.nb < PARALLEL_MIN_BODIES:
        why = f"fewer than {PARALLEL_MIN_BODIES} bodies"
    if requested is None and n > 1:
        n, why = formulation.automatic_threads(model, n)
    if limit is not None and n > limit:
        n, why = max(limit, 1), why or f"at most {limit}"
    return ThreadPlan(threads=n, layout=formulation.layout_threads(model, n), requested=requested, why=why)
