"""Formulation ``dca``: Featherstone's divide-and-conquer algorithm with closed loops.

Joint coordinates and 6-D spatial vectors (docs/derivations.md, "DCA").  Each
body is a two- (or more-) handle articulated body: for handles ``h``, ``k`` at
joint points ``P_h``, ``P_k``,

    A_h = sum_k Phi_hk F_k + b_h,    Phi_hk = X_h^T I_C^-1 X_k,    b_h = X_h^T I_C^-1 (F_ext - V x* I V)

(``X_k`` shifts a wrench from ``P_k`` to the centre of mass, ``A_h`` is the
spatial acceleration about ``P_h``).  Tree joints constrain
``T_j^T (A_succ - A_pred - c_j) = 0`` with ``T_j`` the orthonormal complement of
the motion subspace; cut joints constrain the absolute-coordinate closure
equations of :mod:`engine.constraints` re-expressed at the joint point, so loop
closures, drift terms and multipliers are those of the ``dense`` reference.
The assembly/disassembly over the binary tree is :mod:`.tree`; the joint
accelerations come from the body accelerations, ``vdot_j = S_j^T (A_succ - A_pred - c_j)``.

Loops are held by projection at the output instants (:mod:`.stabilise`, on by default;
``projection=False`` lets the drift be studied); ``baumgarte=(alpha, beta)`` adds
``2 alpha Phi_dot + beta^2 Phi`` to the closure rows between them.

Drivers (docs/file-format.md, "Drivers") by superposition -- Featherstone's hybrid
dynamics done with the forward dynamics itself: the joint accelerations are affine in
the generalized forces applied to the driven joints, ``vdot_J = a0 + Phi tau``, so
``nd + 1`` evaluations (tau = 0, then a unit effort on each driven joint) give ``a0`` and
``Phi``, the efforts are ``tau = Phi^-1 (f'' - a0)``, and a last evaluation applies them
(a joint torque, or force, on each driven joint: an applied load, so the reactions stay
constraint wrenches).  The driven coordinates and rates are held with the loops by the
projection at output instants, whose rows include the drivers' at that time.
"""

from __future__ import annotations

import numpy as np

from .. import config
from ..errors import SingularSystemError
from ..forces import driver_force_arrays
from ..initial import initial_state, tree_velocities
from ..kinematics import classical_accelerations, fk_positions
from ..model import Model
from ..threads import DCA_TREE_SERIAL_BELOW, PARALLEL_MIN_BODIES
from . import dense_solve
from .base import Evaluation, NO_RATES, RowKernels, StateKernel, check_consistent
from .dca_chain import (
    CHAIN_PROGRESS, CHAIN_RETIME_AT, CHAIN_RETIME_MASK, CHAIN_TWIN, evaluate_chain, seconds, swapped,
)
from .dca_kernels import DCAWorkspace, evaluate, evaluate_region
from .stabilise import LoopProjection
from .superposition import UNRESPONSIVE, superposed_kernel
from .tree import SingularityWatch
from .tree_formulation import TreeFormulation, tree_check, tree_post, unbranched_chain
from .tree_kernels import Baumgarte, BodyWork, residual


class DCAFormulation(TreeFormulation):
    name = "dca"
    title = "divide-and-conquer algorithm (Featherstone), acceleration level"
    kind = "ode"
    parameters = ("projection", "baumgarte", "threads")
    not_finite = "accelerations are not finite"
    grounded_regions = True
    singular_remedy = ("dca closes loops at the acceleration level and cannot tell the branch through a singular "
                       "configuration: use dense or index3 (docs/formulations.md, \"Singular configurations\").")
    summary = ("Featherstone's divide-and-conquer algorithm in joint coordinates: O(n) work, "
               "O(log n) depth over a binary assembly tree, loops closed at the acceleration level.")

    honours_drivers = True

    def __init__(self, model: Model, settings, plan=None):
        super().__init__(model, settings, plan)
        m = model
        if m.nd:  # the drivers' efforts as joint torques the evaluations apply (module docstring)
            self.fa, self.effort = driver_force_arrays(m)
            self._driven_v = np.array([m.v_adr[j] for j in m.d_joint], dtype=np.int64)
            flag = getattr(settings, "projection", None)
            self._project = flag is None or bool(flag)  # the drivers' rows, with the loops'
        bg = getattr(settings, "baumgarte", None)
        self.alpha, self.beta = (float(bg[0]), float(bg[1])) if bg else (0.0, 0.0)
        # workspace: position -> velocity -> acceleration -> constraint
        self.V = np.zeros((m.nb, 6))  # COM twists, fk_velocities
        self.c = np.zeros((m.nb, 6))  # velocity-product terms, fk_velocities
        self.Fext = np.zeros((m.nb, 6))  # applied wrenches at the COM, applied_forces
        self.rhs_body = np.zeros((m.nb, 6))  # F_ext - V x* I V, leaves
        self.Jinv_w = np.zeros((m.nb, 3, 3))  # world inverse inertia, leaves
        self._scratch = np.zeros((m.nb, 3, 3))  # per-body scratch of leaves
        self.A = np.zeros((m.nb, 6))  # spatial accelerations about the COM, accelerations
        self.vdot = np.zeros(m.nv)  # joint accelerations, accelerations
        self.phi = np.zeros(self.lay.n_rows)  # closure residuals of cut joints, cut_rows
        self.bw = BodyWork(self.x, self.R, self.P, self.S, self.V, self.c, self.Fext, self.rhs_body, self.Jinv_w,
                           self._scratch, self.A, self.vdot)  # the kernels' bodies' arrays
        self._row_ix = (self.lay.ix.row_adr, self.lay.ix.rows)
        # evaluate_chain's trailing role: the same model arrays, scratch of its own
        self.mk_trail = self.mk._replace(rot_scratch=np.empty_like(self.mk.rot_scratch),
                                         vec_scratch=np.empty_like(self.mk.vec_scratch))
        self._progress = np.zeros(CHAIN_PROGRESS, dtype=np.int64)  # evaluate_chain's counters
        self._at_row = np.zeros(1)  # the row loop's output-instant evaluation (DCAWorkspace.at_row)
        # one grounded region on one thread: its passes called directly (evaluate_region);
        # an unbranched chain's on two threads, beside one another (evaluate_chain)
        direct = self.lay.one_region and m.nb < self.lay.ix.body_parallel_from
        self.two_roles = (direct and not m.nd and self.threads > 1
                          and np.array_equal(self.lay.reg[2], np.arange(m.nb)[::-1]))
        kernel = evaluate_chain if self.two_roles else evaluate_region if direct else evaluate
        self._kernel = StateKernel(kernel, self._workspace())
        self.twin = {}  # the second copies of CHAIN_TWIN's arrays, by name (two roles only)
        self._roles = self._alone = None
        self.kernel_choices: list[tuple[int, float, float]] = []  # (nfev, two roles s, alone s) of each choice
        if self.two_roles:  # right-hand sides alternate between two copies of what the roles hand over
            first = self._chain_twin()
            self.twin = {n: a.copy() for n, a in zip(CHAIN_TWIN, first)}
            self._roles = (self._kernel,
                           StateKernel(kernel, swapped(self._workspace(), first, list(self.twin.values()))))
            # and the one-thread kernel on the same workspace (compiled with the roles: they
            # call it when the second thread does not come): rhs takes the faster
            self._alone = StateKernel(evaluate_region, self._workspace())
            self._rhs_kernels = self._roles
            self.rhs = self._rhs_two_roles  # the other mechanisms' rhs pays nothing for the choice
        if m.nd:
            self._time = np.zeros(1)  # the time the drivers' laws are read at (superposed_rates)
            self._driven, self._drive_status = superposed_kernel(self._kernel, self._time, self.effort,
                                                                 self._driven_v, self.vdot, m.d_motion)
            self.rhs = self._rhs_driven

    def _rhs_two_roles(self, t, y):
        """``rhs`` of a chain on two threads: the calls take ``_rhs_kernels`` in turn --
        the two roles' two copies of the arrays they hand each other
        (:data:`CHAIN_TWIN`), or one thread alone (:meth:`_choose_kernels`) -- so after
        it the workspace may hold the call before last."""
        self.nfev += 1
        if self.nfev & CHAIN_RETIME_MASK == CHAIN_RETIME_AT:
            self._choose_kernels(y)
        out, finite = self._rhs_kernels[self.nfev & 1].rates(y)
        if not finite:
            raise SingularSystemError(t, self.not_finite)
        return out

    def _choose_kernels(self, y) -> None:
        """On an unbranched chain on two threads, times the two roles against one thread
        alone at state ``y`` (twice each, the best) and takes the faster for the next
        right-hand sides: both give the same result bit for bit, but where the two cores
        hand cache lines over slowly the roles take twice one thread's time
        (docs/dca-two-threads.md, "One thread when two are slower")."""
        roles, alone = self._roles, self._alone
        t_roles = min(seconds(roles[0], y), seconds(roles[1], y), seconds(roles[0], y), seconds(roles[1], y))
        t_alone = min(seconds(alone, y), seconds(alone, y))
        self._rhs_kernels = roles if t_roles < t_alone else (alone, alone)
        if len(self.kernel_choices) < 1000:
            self.kernel_choices.append((self.nfev, t_roles, t_alone))

    def _rhs_driven(self, t, y):
        """``rhs`` with drivers: the efforts at ``(t, y)`` by superposition, then the rates
        (:func:`.superposition.superposed_rates`, around the kernel)."""
        self.nfev += 1
        self._time[0] = t
        out, finite = self._driven.rates(y)
        if not finite:
            self._refuse(t)
        return out

    def _refuse(self, t) -> None:
        """The error of a driven evaluation that failed at ``t``."""
        if self._drive_status[0] == UNRESPONSIVE:
            raise SingularSystemError(t, "the driven joints' accelerations do not respond to their efforts "
                                         "(a driver on a joint its loops lock)")
        raise SingularSystemError(t, self.not_finite)

    def _chain_twin(self) -> list:
        """The arrays of :data:`CHAIN_TWIN`: the layout's by its names, the formulation's by its own."""
        return [getattr(self.lay, n) if hasattr(self.lay, n) else getattr(self, n) for n in CHAIN_TWIN]

    @classmethod
    def automatic_threads(cls, model: Model, threads: int) -> tuple[int, str]:
        """As :meth:`TreeFormulation.automatic_threads`; and one thread on an open branched
        tree (no loop) of fewer than :data:`threads.DCA_TREE_SERIAL_BELOW` bodies.  On one
        thread such a tree is assembled by the articulated-body recursion with its ground
        joint; on two it is cut into subtrees that merge, which cost more.  ``hdca`` keeps
        its rule: its regions end in a merge with ground, and it broke even on such trees."""
        n, why = super().automatic_threads(model, threads)
        if n > 1 and not model.ncut and model.nb < DCA_TREE_SERIAL_BELOW and not unbranched_chain(model):
            return 1, f"an open tree under {DCA_TREE_SERIAL_BELOW} bodies"
        return n, why

    @classmethod
    def warm_variants(cls, model: Model, settings) -> list:
        """An unbranched chain of ``PARALLEL_MIN_BODIES`` bodies or more on two threads:
        its two roles (``evaluate_chain``) are a kernel of their own, which a run calls
        wherever it gets two threads (``--threads 2``; the automatic count from
        ``threads.DCA_CHAIN_SERIAL_BELOW`` bodies: every core from the command line, every core
        but one in the application).  Compiled at that run's start they took 52 s while the
        application said it was loading."""
        import numba

        if (numba.config.NUMBA_NUM_THREADS < 2 or model.nb < PARALLEL_MIN_BODIES
                or not unbranched_chain(model)):
            return []
        return [settings.replace(threads=2)]

    @classmethod
    def layout_threads(cls, model: Model, threads: int) -> int:
        """An unbranched open chain hanging from ground is one region on any thread count:
        on two or more threads it runs in two roles (``evaluate_chain``) instead of being
        cut into parts that merge (docs/dca-two-threads.md, "Two threads on one chain")."""
        if threads > 1 and unbranched_chain(model):
            return 1
        return threads

    @classmethod
    def supports(cls, model: Model) -> tuple[bool, str]:
        return super().supports(model)  # refuses couplings (gears): they are not rows here

    def initial_state(self) -> np.ndarray:
        m = self.model
        ini = initial_state(m)
        self.initial = ini
        q = m.q_zero()
        fk_positions(self.mk, q, self.x, self.R, self.P)
        v = tree_velocities(m, ini.V, self.x, self.R, self.P)
        return np.concatenate([q, v])

    # ---------------------------------------------------------------- passes
    def _workspace(self) -> DCAWorkspace:
        """``evaluate``'s workspace, gathered once (``StateKernel``): every array is
        allocated in ``__init__`` and only ever written in place."""
        lay = self.lay
        return DCAWorkspace(
            mk=self.mk, ca=self.ca, fa=self.fa, tm=self.tm, ix=lay.ix, bw=self.bw, tw=lay.work, hy=self.hy,
            jq=self.jq, jq_ref=self.jq_ref, phi=self.phi, bg=Baumgarte(self.alpha, self.beta), tol=config.PIVOT_RTOL, mk_trail=self.mk_trail,
            progress=self._progress, at_row=self._at_row)

    def _solve(self, t, y, check=True):
        """One evaluation of state ``y`` into the workspace; ``check``: refuse non-finite
        accelerations."""
        if self.model.nd:
            self._time[0] = t
            if not self._driven(y, NO_RATES) and self._drive_status[0] == UNRESPONSIVE:
                self._refuse(t)
        else:
            self._kernel(y, NO_RATES)
        if check and not np.isfinite(self.vdot).all():
            raise SingularSystemError(t, self.not_finite)

    def closure_residual(self) -> tuple[float, float]:
        """(largest acceleration residual of any joint row, largest term) of the last solve."""
        m, lay = self.model, self.lay
        return residual(self._row_ix, m.pred, m.succ, self.x, self.P, self.A, lay.G[0], lay.G[1], lay.g0, m.nj)

    def row_kernels(self):
        """The compiled row loop's kernels (:meth:`.base.Formulation.row_kernels`) where the
        evaluation, the step, the post-step and the watch are this class's own, not on two
        roles: the right-hand side (with drivers, :func:`.superposition.superposed_rates`
        around it, its time written by the row loop) with
        :func:`.tree_formulation.tree_post` after each step (the quaternions and, on loops
        or with drivers, the projection onto them and the singularity watch, whose state
        crosses over in ``watch``), then :func:`.tree_formulation.tree_check`.  Trees take
        the same post-step (its projection and watch off), so ``rk4_rows`` is compiled once
        for ``dca`` (and once more with drivers)."""
        m, lay, cls = self.model, self.lay, type(self)
        own_rhs = "rhs" not in vars(self) or (
            m.nd and getattr(vars(self)["rhs"], "__func__", None) is DCAFormulation._rhs_driven)
        if (cls.evaluate is not _OWN_EVALUATE or not hasattr(self._kernel.kernel, "overloads")
                or self.two_roles or not own_rhs or cls.rhs is not TreeFormulation.rhs
                or cls.post_step is not TreeFormulation.post_step
                or cls.watch_singular is not SingularityWatch.watch_singular
                or cls._stabilise is not LoopProjection._project_velocity_state):
            return None
        acc, reactions, health = np.empty((m.nb, 6)), np.empty((m.nj, 6)), np.zeros(2)
        rw = self._row_watch()
        check = StateKernel(tree_check, (
            self.vdot, lay.ix.row_adr, lay.ix.rows, m.pred, m.succ, self.x, self.P, self.A, lay.G[0], lay.G[1],
            lay.g0, lay.lam, self.V, acc, reactions, float(self.residual_rtol), np.int64(m.nj),
            self.cut_spring, self.jq, self.jq_ref, rw.watching, rw.conditioning, health))
        arrays = (self.x, self.R, self.V, acc, self.jq, self.P, reactions)
        post = StateKernel(tree_post, (
            self.mk, np.int64(m.nq), bool(self._project), *self._projector_table(), float(config.PROJECTION_TOL),
            float(config.PROJECTION_MAX_ITER), rw.watching, rw.conditioning, rw.watch, rw.tick,
            float(config.SINGULAR_WINDOW), float(config.CROSSING_TIME),
            (float(dense_solve.CLOSURE), float(dense_solve.PROJECT),
             float(dense_solve.PROJECT_VELOCITIES | dense_solve.PROJECT_ROWS_DONE))))
        # evaluate fills the same workspace with rates as without, evaluate_region where the
        # row loop sets at_row
        driven = bool(m.nd)
        return RowKernels(self._driven if driven else self._kernel, post, check, arrays, health, own=(rw.watch,),
                          tick=rw.tick, before=rw.before, after=rw.after, reuse=True, at_row=self._at_row,
                          efforts=(self.effort, 1.0) if driven else None, time=self._time if driven else None)

    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        q, v = y[: m.nq], y[m.nq:]
        self._solve(t, y)
        check_consistent(t, *self.closure_residual(), self.residual_remedy, self.residual_rtol)
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        reactions = self._reactions()
        extra = {"vdot": self.vdot.copy(), "q": q.copy(), "v": v.copy()}
        if m.nd:
            extra["driver_effort"] = self.effort.copy()
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(),
                          acc=classical_accelerations(self.V, self.A), P=self.P.copy(), reactions=reactions,
                          jq=self.jq.copy(), extra=extra)


#: the evaluation the row kernels do (:meth:`DCAFormulation.row_kernels`); another -- a subclass's
#: or a double patched onto the class -- leaves the rows to Python
_OWN_EVALUATE = DCAFormulation.evaluate
