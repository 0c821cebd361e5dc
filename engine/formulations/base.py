"""The small interface every formulation implements.

A formulation owns its state layout and workspace.  ODE formulations expose
``rhs(t, y)`` for an integrator; stepping formulations (index-3) expose
``step(t, y, dt)``.  Both give an :class:`Evaluation` of any state -- body
poses, twists, accelerations and joint reactions -- from which the recorder
writes the contract's CSV columns, so output never depends on who computed it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .. import config, start_parallel_backend
from ..errors import SingularSystemError
from ..model import Model
from ..threads import ThreadPlan
from ..threads import plan as thread_plan
from .workspace import MAX_NDIM, compiled_address, compiled_entry, pack


_F64 = np.dtype(np.float64)
_empty = np.empty
#: a plain state array (float64, C-contiguous) of each number of dimensions: what StateKernel.native types
_PLAIN = tuple(np.zeros((1,) * d) for d in range(MAX_NDIM + 1))

#: an evaluation kernel's ``out`` when only the workspace is wanted (no right-hand side)
NO_RATES = np.empty(0)


def _plain(a: np.ndarray) -> bool:
    """Whether ``a`` has the one array type a bound kernel was compiled for (float64,
    C-contiguous, writable, aligned: a slice of an integrator's state vector)."""
    return a.dtype is _F64 and a.flags.carray


class StateKernel:
    """``kernel(desc, proto, *state)``: a kernel called on every evaluation with the same
    workspace -- a tuple of arrays allocated once and written in place, handed over as
    one table (:mod:`.workspace`: the kernel's first line is ``... = unpack(desc, proto)``)
    -- and the arrays of ``state`` (the state vector or its halves, and the array its
    right-hand side goes to); returns what the kernel returns.  Unboxing a hundred
    workspace arrays on every call cost a right-hand side about 1.8 us
    (docs/performance.md, "The workspace as one argument").

    It calls numba's compiled entry point for the state's array types directly: numba's
    dispatcher resolves the type of ``proto`` (a type) in Python, 60 us a call.  The
    entry for plain states (float64, C-contiguous, writable, aligned: slices of an
    integrator's state vector) is checked for in a few attribute reads; a state of
    another array type (strided, read-only, another dtype) is typed and its entry looked
    up, compiled through the dispatcher the first time.  The kernel holds the workspace
    (its table holds only addresses)."""

    def __init__(self, kernel, workspace: tuple):
        self.kernel, self.workspace = kernel, workspace
        self.desc, self.proto = pack(workspace)
        self.entry = None  # the entry for plain states, once bound
        if not hasattr(kernel, "overloads"):  # NUMBA_DISABLE_JIT: the kernel is plain Python
            self.entry = kernel

    def __reduce__(self):
        """Copied or pickled, a kernel is built again from its workspace (the copy's
        arrays, shared with the rest of the copied formulation): its table holds
        addresses, which another copy of the arrays does not have."""
        return StateKernel, (self.kernel, self.workspace)

    def __call__(self, *state: np.ndarray):
        entry = self.entry
        if entry is not None:
            for a in state:  # _plain, inline: 0.2 us of a 4 us right-hand side
                if a.dtype is not _F64 or not a.flags.carray:
                    break
            else:
                return entry(self.desc, self.proto, *state)
        return self._typed(state)

    def rates(self, y: np.ndarray) -> tuple[np.ndarray, bool]:
        """``kernel(desc, proto, y, out)`` into a new ``out`` as long as ``y``: (out, what
        the kernel returned).  The right-hand side's own path: ``out`` is plain by
        construction, so only ``y`` is checked (0.1-0.2 us less than ``np.empty_like``
        and :meth:`__call__`'s loop over both)."""
        out = _empty(y.shape[0])
        entry = self.entry
        if entry is not None and y.dtype is _F64 and y.flags.carray:
            return out, entry(self.desc, self.proto, y, out)
        return out, self._typed((y, out))

    def native(self, arrays: int | tuple = 2) -> int:
        """The address of the kernel's machine code for ``arrays`` plain state arrays
        (float64, C-contiguous: ``y`` and ``out``), or for the state arrays of the
        dimensions in ``arrays`` (a tuple), compiled if need be: what :mod:`.rk4_kernel`
        and :mod:`engine.row_loop` call."""
        dims = (1,) * arrays if isinstance(arrays, int) else arrays
        return compiled_address(self.kernel, (self.desc, self.proto, *(_PLAIN[d] for d in dims)))

    def _typed(self, state: tuple):
        """Call with the entry point for ``state``'s array types, typed and bound the
        first time (compiled through the dispatcher if need be)."""
        if not hasattr(self.kernel, "overloads"):  # NUMBA_DISABLE_JIT
            return self.kernel(self.desc, self.proto, *state)
        entry = compiled_entry(self.kernel, (self.desc, self.proto, *state))
        if all(_plain(a) for a in state):
            self.entry = entry
        return entry(self.desc, self.proto, *state)


def check_consistent(t: float, residual: float, scale: float, remedy: str, rtol: float) -> None:
    """Refuse to return a silently wrong answer at an output instant.

    ``residual`` is the largest acceleration-level closure residual left by the
    solve, ``scale`` the largest term of the same equations.  Redundant closure
    equations leave round-off; a mechanism locked or sitting at a singular
    configuration with velocities that leave it leaves a finite residual, and so does a
    solve that dropped a row it needed (``remedy``: what the formulation says of that).
    ``rtol``: the limit relative to ``scale`` (the formulation's ``residual_rtol``).
    """
    if not np.isfinite(residual) or residual > rtol * max(scale, 1.0):
        raise SingularSystemError(
            t, f"the loop-closure equations cannot be satisfied (acceleration residual {residual:.3g}); "
               f"the mechanism is locked or at a singular configuration{remedy}")


def coupling_support(cls, model: Model) -> tuple[bool, str]:
    """``(True, "")``, or the refusal naming the model's couplings and the registered
    formulations that can honour them (docs/file-format.md, "Refusal rules": exit 2)."""
    if not model.ng or cls.honours_couplings:
        return True, ""
    from .registry import REGISTRY

    able = [n for n in REGISTRY if REGISTRY[n].honours_couplings]
    gears = ", ".join(
        f"{c.type} {c.name!r} (couplings[{i}]: {c.driver} -> {c.driven}, ratio {c.ratio:g})"
        for i, c in enumerate(model.spec.couplings))
    word = "coupling" if model.ng == 1 else "couplings"
    return False, (f"{cls.name} cannot honour the {word} {gears}; "
                   f"formulations that can: {', '.join(able) or 'none'}")


def driver_support(cls, model: Model) -> tuple[bool, str]:
    """``(True, "")``, or the refusal naming the model's drivers and the registered
    formulations that can honour them (docs/file-format.md, "Drivers": exit 2)."""
    if not model.nd or cls.honours_drivers:
        return True, ""
    from .registry import REGISTRY

    able = [n for n in REGISTRY if REGISTRY[n].honours_drivers]
    names = ", ".join(f"{d.name!r} (drivers[{i}] on joint {d.joint}, {d.motion.kind})"
                      for i, d in enumerate(model.spec.drivers))
    word = "driver" if model.nd == 1 else "drivers"
    return False, (f"{cls.name} cannot honour the {word} {names}; "
                   f"formulations that can: {', '.join(able) or 'none'}")


#: :attr:`RowKernels.tick`'s slots: the interval (t0, t1, steps), the steps done, a failure
#: (the row loop leaves the interval to Python), and whether the last post-step left the
#: workspace evaluated at the state it ends in, with the rates in its ``out``
TICK_T0, TICK_T1, TICK_N, TICK_I, TICK_FAILED, TICK_FRESH = range(6)


class RowKernels(NamedTuple):
    """What the compiled row loop (:mod:`engine.row_loop`) calls to make a formulation's
    ``rk4`` rows without Python (:meth:`Formulation.row_kernels`).

    An interval is either :func:`.rk4_kernel.rk4_interval` on the right-hand side
    ``step`` with the post-step ``post`` (``entry_clock`` None; with ``split``,
    :func:`.rk4_kernel.rk4_interval_split` on the positions kernel ``step`` and the
    dynamics ``post``), or one call of the
    formulation's operations kernel ``step`` (``kernel(desc, proto, y, out) -> status``,
    0.0: done) with ``entry_clock`` = (t0, t1, n, ``ops[0]``); the evaluation is then
    ``step`` again without rates (or the operation ``ops[1]`` at ``(t, 0.0)``), and
    ``check``, which does what :meth:`Formulation.evaluate` does beyond it -- False where
    that would raise -- and writes the loops' conditioning into ``health``.  ``own``: the
    formulation's state an interval changes besides ``y`` (put back with ``y`` where the
    loop leaves that interval to Python, so Python makes it from where the loop started)."""

    step: StateKernel
    post: StateKernel | None
    check: StateKernel
    arrays: tuple  # (x, R, V, acc, jq, P, reactions): what the Evaluation would hold, written in place
    health: np.ndarray  # (2,) [1.0 if the loop conditioning is reported, its value], check
    entry_clock: np.ndarray | None = None  # the operations kernel's clock
    ops: tuple = (0, 0)  # its rk4 interval's and its evaluation's operation codes
    evaluations: object = None  # () -> right-hand sides evaluated so far, where the kernel counts them
    own: tuple = ()  # at most two 1-D arrays of the formulation's state that an interval changes besides y
    split: bool = False  # step, post: the positions and dynamics kernels of a two-kernel right-hand side
    tick: np.ndarray | None = None  # (6,) the post-step's clock, the TICK_* slots (tree_formulation.tree_post)
    before: object = None  # () -> None: the formulation's state into ``own`` before a block
    after: object = None  # () -> None: ``own`` back into the formulation's state after it
    #: ``step`` with rates fills the workspace the evaluation leaves for ``check`` and the
    #: row as it does without: the evaluation then writes its rates, which are the next
    #: interval's k1 (one right-hand side a step fewer)
    reuse: bool = False
    #: (1,) set to 1 by the row loop while ``step`` makes an output instant's evaluation
    #: with its rates (``reuse``), to 0 after: a kernel that leaves out of its rates what
    #: only a row reads (``dca``'s ``evaluate_region``: the multipliers) makes it then
    at_row: np.ndarray | None = None
    #: ``split``: the post-step after each step (None: the quaternions' normalisation alone)
    split_post: StateKernel | None = None
    #: () -> whether these kernels still hold the formulation's arrays (None: always; ``rcr``'s
    #: are replaced where it re-chooses its partition, and the row loop asks for new ones)
    valid: object = None
    #: with drivers: (array, sign) -- the drivers' efforts of the evaluation are ``sign *
    #: array`` after ``check`` (Evaluation.extra["driver_effort"]); None: no drivers
    efforts: tuple | None = None
    #: (1,) where a time-dependent ``step`` (a state kernel) reads its time: the row loop
    #: writes each stage's and each output instant's into it; None: ``step`` takes no time
    time: np.ndarray | None = None
    #: kernels that ``step`` calls by their tables (addresses of their workspaces' arrays),
    #: held here while the row loop runs: a table does not keep the arrays it points to
    keep: tuple = ()
    #: () -> whether the kernels would leave the next interval to Python at its first step
    #: (``rcr`` tracking a near-singular pass): the row loop then does not open a block
    #: for it; None: not known ahead
    defer: object = None


@dataclass
class Evaluation:
    """Everything the recorder needs at one instant (world frame, SI).

    ``reactions[j]`` is the wrench ``[f; n]`` that joint ``j``'s predecessor
    exerts on its successor through the constraint, about the joint point
    ``P[j]`` (the anchor fixed in the predecessor).
    """

    t: float
    x: np.ndarray  # (nb, 3)
    R: np.ndarray  # (nb, 3, 3)
    V: np.ndarray  # (nb, 6) [v_C; w]
    acc: np.ndarray  # (nb, 6) classical [a_C; alpha]
    P: np.ndarray  # (nj, 3)
    reactions: np.ndarray  # (nj, 6)
    jq: np.ndarray  # (nj,) one-freedom joint coordinates where known (nan otherwise)
    extra: dict = field(default_factory=dict)


def rk4_step(f, t: float, y: np.ndarray, h: float) -> np.ndarray:
    """One classical Runge-Kutta step of ``y' = f(t, y)``."""
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


class Formulation(ABC):
    """Base class; subclasses set ``name``, ``kind`` and ``integrators``."""

    name: str = ""
    title: str = ""
    kind: str = "ode"  # "ode" or "stepper"
    integrators: tuple[str, ...] = ("rk4", "rk45", "rk23", "dop853", "lsoda", "radau", "bdf")
    default_integrator: str = "rk4"
    #: the :class:`~engine.simulation.Settings` fields this formulation reads, beyond
    #: dt, t_end and (for adaptive integrators) rtol/atol -- the GUI shows only these
    parameters: tuple[str, ...] = ()
    #: one line for tooltips and the formulation guide
    summary: str = ""
    #: True if the formulation honours the file's couplings (gear pairs, docs/file-format.md, "Mechanism file")
    honours_couplings: bool = False
    #: True if the formulation honours the file's drivers (prescribed joint motions,
    #: docs/file-format.md, "Drivers")
    honours_drivers: bool = False

    #: whether a finer fixed step makes this formulation's result more accurate -- so that a
    #: fixed-step run may refine itself where the monitor finds the step too coarse
    #: (engine.integrators.Refinement).  index3 with the paper's penalised projections
    #: says no: there a smaller step weakens the penalty (what counts is alpha dt^2 / 4)
    refines_with_step: bool = True

    #: the output check's limit on the closure's acceleration residual, relative to the
    #: equations' largest term (:func:`check_consistent`)
    residual_rtol: float = config.SINGULAR_RESIDUAL_RTOL
    #: what :func:`check_consistent` adds to its refusal: what else may leave a residual
    residual_remedy: str = ""

    #: what to try when the monitor stops a run near a singular configuration of the loops
    singular_remedy = ("the dense formulation crosses singular configurations (--formulation dense; "
                       "docs/formulations.md, \"Singular configurations\").")
    #: what to try when an error-controlled run's steps collapse or crawl away from any
    #: singular configuration of the loops (``{implicit}``: the implicit integrators other
    #: than the run's, Monitor.collapsed)
    rough_remedy = "Try an implicit integrator ({implicit}) or looser tolerances (--rtol, --atol)."

    #: whether the formulation is crossing a singular configuration of its loops now (set
    #: by :meth:`watch_singular`): the adaptive integrators then project after every step
    near_singular: bool = False
    #: the initial state's report (:class:`~linkwork.engine.initial.InitialState`), set by
    #: :meth:`initial_state`
    initial = None
    #: ``step_bound(t, y) -> float | None``: the largest step an adaptive integrator may take
    #: from ``(t, y)``, for formulations that watch singular configurations as they approach
    #: (``dense``, ``dca``, ``hdca``, ``rcr``); None: no bound (a method here would cost a
    #: call per step)
    step_bound = None

    @property
    def watches_steps(self) -> bool:
        """Whether :attr:`step_bound` does anything on this mechanism (a formulation whose
        watch has no loop to watch says no): where it does, an adaptive integrator calls
        it before every step from Python."""
        return self.step_bound is not None

    def watch_singular(self, t: float, y: np.ndarray) -> None:
        """Called by the integrators at every output instant (and ``rk4``'s sub-steps):
        formulations that watch for singular configurations of their loops measure them
        here.  Nothing by default."""

    def mobility(self, y: np.ndarray) -> float | None:
        """The loops' mobility measure at state ``y``: ``s_min / s_max`` of the mass-whitened
        loop Jacobian over the closure's rank (``dense``'s :meth:`singularity`), 1.0 without
        loops, None where the formulation cannot say.  The one figure by which every
        formulation's failure messages decide whether the mechanism is near a singular
        configuration (below SINGULAR_WINDOW); computed when a message needs it, not per
        step (O(n^3))."""
        return None

    @property
    def remedy(self) -> str:
        """What to try when the pipeline's monitor stops a run of this formulation (exit 3);
        formulations with a better answer override it with a class attribute."""
        if getattr(self.settings, "integrator", "rk4") in ("rk4", "trapezoidal"):
            return "Try a smaller --dt, or an adaptive integrator (e.g. --integrator dop853)."
        return ("Try rk4 with a fixed --dt (e.g. --integrator rk4 --dt 0.01) or other tolerances (--rtol, --atol); "
                "the dense formulation crosses singular configurations with dop853 too (docs/formulations.md, "
                "\"Singular configurations\").")

    def __init__(self, model: Model, settings, plan: ThreadPlan | None = None):
        """``plan``: how the run uses the cores, decided by the :class:`Simulation`
        (:func:`threads.plan`); a formulation built on its own decides it here."""
        start_parallel_backend()  # before any cached parallel kernel runs
        self.model = model
        self.settings = settings
        self._plan = plan
        self.nfev = 0

    @property
    def plan(self) -> ThreadPlan:
        """How this run uses the cores: the simulation's plan, or this formulation's own
        (:func:`threads.plan` for its model and settings) when it was built on its own."""
        if self._plan is None:
            self._plan = thread_plan(self.model, type(self), getattr(self.settings, "threads", None))
        return self._plan

    @classmethod
    def automatic_threads(cls, model: Model, threads: int) -> tuple[int, str]:
        """Left automatic, the threads a run of this formulation on ``model`` takes of the
        ``threads`` the general rule gives (:func:`threads.plan`), and why, when fewer:
        where a second thread costs more than it gives."""
        return threads, ""

    @classmethod
    def layout_threads(cls, model: Model, threads: int) -> int:
        """The thread count a run on ``threads`` threads builds its assembly tree and
        layout for: the same, unless the formulation runs a one-thread layout on more."""
        return threads

    #: settings that act on loops (and gears) only
    LOOP_PARAMETERS = ("projection", "baumgarte")

    @classmethod
    def parameters_for(cls, model: Model) -> tuple[str, ...]:
        """The :attr:`parameters` that act on ``model``: without loops or gears, none of
        :attr:`LOOP_PARAMETERS` (the application shows only these)."""
        if model.nj > model.nb or model.ng or model.nd:
            return tuple(cls.parameters)
        return tuple(p for p in cls.parameters if p not in cls.LOOP_PARAMETERS)

    @classmethod
    def warm_variants(cls, model: Model, settings) -> list:
        """Settings besides a file's defaults under which ``linkwork compile`` also runs this
        formulation on ``model`` (engine/warmup.py): for kernels that only such runs call."""
        return []

    @classmethod
    def supports(cls, model: Model) -> tuple[bool, str]:
        """Whether this formulation can run ``model``, and if not, why.

        Subclasses that add conditions call this one: it refuses a model with couplings
        unless the class ``honours_couplings`` (docs/file-format.md, "Couplings"), and one
        with drivers unless it ``honours_drivers`` (docs/file-format.md, "Drivers")."""
        ok, why = coupling_support(cls, model)
        if not ok:
            return ok, why
        return driver_support(cls, model)

    @abstractmethod
    def initial_state(self) -> np.ndarray:
        """The state vector at t = 0 (initial velocities already projected)."""

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:  # pragma: no cover - ODE kinds override
        raise TypeError(f"{self.name} is not an ODE formulation")

    def rk4_steps(self, t0: float, t1: float, y: np.ndarray, n: int) -> np.ndarray:
        """``n`` classical Runge-Kutta steps from ``(t0, y)`` to ``t1``, each followed by
        :meth:`post_step` and :meth:`watch_singular`: the inner loop of the ``rk4``
        integrator.  Formulations with a compiled right-hand side override it with one
        kernel call doing the same arithmetic (``dense``)."""
        h = (t1 - t0) / n
        for i in range(n):
            ti = t1 if i == n - 1 else t0 + (i + 1) * h
            y = self.post_step(ti, rk4_step(self.rhs, t0 + i * h, y, h))
            self.watch_singular(ti, y)
        return y

    def row_kernels(self):
        """What the compiled row loop (:mod:`engine.row_loop`) needs to make this
        formulation's ``rk4`` rows without Python (:class:`RowKernels`), or None (the
        default) where the Python pipeline makes them."""
        return None

    def adaptive_row_kernels(self):
        """For a formulation that projects (:attr:`projects`) other than ``dense`` (whose
        :meth:`row_kernels` are already an operations kernel): ``(kernels, rates)``, its
        row kernels around an operations kernel that does what
        :func:`engine.integrators.scipy_ode` does between the steps -- the watch before
        each, the post-step and the evaluation at each output instant -- and the
        :class:`.erk_kernel.Rates` of its right-hand side through that kernel, with which
        the compiled ``rk45`` / ``dop853`` rows (:class:`engine.row_loop.AdaptiveRowLoop`)
        run; or None (the default), where those rows are Python's."""
        return None

    def rates_kernel(self):
        """The right-hand side as compiled code calls it (:class:`.erk_kernel.Rates`:
        ``rk45`` and ``dop853`` then take their steps in compiled code), or None (the
        default) where :meth:`rhs` is Python's to call."""
        return None

    #: what a non-finite right-hand side means for this formulation (SingularSystemError)
    not_finite = "the right-hand side is not finite"

    def step(self, t: float, y: np.ndarray, dt: float) -> np.ndarray:  # pragma: no cover
        raise TypeError(f"{self.name} is not a stepping formulation")

    def post_step(self, t: float, y: np.ndarray) -> np.ndarray:
        """Called on each accepted output state; may project or renormalise (returns y)."""
        return y

    @property
    def projects(self) -> bool:
        """True if :meth:`post_step` changes the state (adaptive integrators restart then)."""
        return False

    @abstractmethod
    def evaluate(self, t: float, y: np.ndarray) -> Evaluation:
        """Poses, twists, accelerations and reactions of state ``y`` at time ``t``."""

    def health(self) -> dict:
        """Cheap health figures of the state last evaluated (after :meth:`evaluate`), for the
        pipeline's branch and health monitor (:mod:`engine.monitor`), which judges them.

        Only what the formulation already has at hand -- no extra solve.  Keys, all
        optional (the default reports nothing; the monitor then judges the residuals and
        the energy of the result row alone):

        ``loop_conditioning``
            ``s_min / s_max`` of the mass-whitened loop Jacobian (or of the independent
            rows its solver kept), smallest over the loops: 0 at a singular
            configuration, 1.0 without loops.  Goes into the run's statistics (closest
            approach) and the failure message.
        """
        return {}

    def stats(self) -> dict:
        return {"rhs_evaluations": self.nfev}
