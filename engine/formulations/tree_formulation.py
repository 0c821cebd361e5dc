"""What ``dca`` and ``hdca`` share: the tree, its layout, the rows' structure, the
reactions, the thread rules and the loop projection (:class:`TreeFormulation`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .. import config
from ..assembly import cheaper_tree
from ..constraints import con_arrays
from ..errors import SingularSystemError
from ..forces import force_arrays, spring_joints
from ..kinematics import classical_into, kin_arrays, normalize_quaternions
from ..model import FIXED, Model, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL
from ..threads import DCA_CHAIN_SERIAL_BELOW
from ..topology import well_conditioned_tree
from . import dense_data, dense_solve, tree
from .base import TICK_FAILED, TICK_FRESH, TICK_I, TICK_N, TICK_T0, TICK_T1, Formulation, StateKernel
from .rk4_kernel import (
    RK4Interval, call_by_table, call_by_table_bool, call_float, call_void, native_address, normalize_state,
)
from .stabilise import LoopProjection, projector_project, projector_residual
from .tree.singular import loop_conditioning
from .tree_kernels import TreeModel, residual, tree_row_constants
from .workspace import NCOL, unpack


def unbranched_chain(model: Model) -> bool:
    """An open chain: one body on ground, every body at most one child, no cut joint."""
    parent = model.parent
    return (not model.ncut and (parent < 0).sum() == 1
            and np.bincount(parent[parent >= 0], minlength=1).max() <= 1)


#: the joint types whose rows are e_0, e_1, e_2, then rows with zero linear halves
#: (:func:`row_constants`; the kernels spell the same test out)
UNIT_FIRST = (SPHERICAL, REVOLUTE, UNIVERSAL, FIXED)


def unit_rows(model: Model, row_adr: np.ndarray) -> np.ndarray:
    """For each constraint row: k if the tree-joint row is +-e_k (see :func:`tree_rows`), else -1."""
    sel = np.full(int(model.nc_j.sum()), -1, dtype=np.int64)
    for j in range(model.nb):
        r, t = row_adr[j], model.jtype[j]
        if t in UNIT_FIRST:
            sel[r:r + 3] = (0, 1, 2)
        if t == FIXED:
            sel[r + 3:r + 6] = (3, 4, 5)
        if t == PRISMATIC:
            sel[r + 2:r + 5] = (3, 4, 5)
    return sel


def unit_rows_first(model: Model) -> np.ndarray:
    """For each tree joint: its rows are e_0, e_1, e_2 first, then rows with zero linear
    halves (:func:`row_constants`; ``TreeLayout.unit_first``)."""
    return np.isin(model.jtype[:model.nb], UNIT_FIRST)


#: the tree post-steps' clock slot beyond :mod:`.base`'s TICK_* slots: 1.0 where a post-step
#: ends with the singularity watch (the rk4 rows: after each step), 0.0 where the watch
#: comes before each step instead (the adaptive rows: :func:`tree_operation`)
TICK_WATCH = 6
TICK_SLOTS = 7


class RowWatch(NamedTuple):
    """:meth:`TreeFormulation._row_watch`: the watch's tables for the compiled row loop."""

    watching: bool  # there are loops to watch
    conditioning: tuple  # (address, arguments) of loop_conditioning on the layout's factors
    watch: np.ndarray  # (WATCH_SLOTS,) the WATCH_* slots
    tick: np.ndarray  # (TICK_SLOTS,) the post-step's clock, the TICK_* slots (.base, TICK_WATCH)
    before: object  # () -> None: the formulation's watch state into ``watch``
    after: object  # () -> None: and back


# ----------------------------------------------------------------- formulation


class TreeFormulation(LoopProjection, tree.SingularityWatch, Formulation):
    """What ``dca`` and ``hdca`` share: kernel arrays, the assembly tree and its layout
    (6-D handles, the joints' constraint rows, unit-row selection, the rank of the
    closure rows), the singularity watch, springs, the position-level workspace,
    quaternion renormalisation and the projection onto the loops (:mod:`.stabilise`)."""

    #: what :func:`.base.check_consistent` adds to its refusal
    residual_remedy = (", or a subassembly of the assembly tree is nearly singular there although the mechanism "
                       "is not (docs/formulations.md, hdca, \"nearly singular subassemblies\"); the dense, rcr and "
                       "embedding formulations do not merge")
    #: the output check's limit (:func:`.base.check_consistent`): no filter near singular
    #: configurations, so round-off elsewhere (config.TREE_RESIDUAL_RTOL)
    residual_rtol = config.TREE_RESIDUAL_RTOL
    #: assemble the tree's articulated-body regions by the recursion in inertia form
    #: (:mod:`.tree.regions`, docs/derivations.md "The articulated-body regions"); False: merge by merge
    articulated_regions = True
    #: a chain hanging from ground is one region with its ground joint (one thread: the
    #: tips-first tree merges ground last); False: the region's root merges with ground.
    #: dca's, not hdca's: the recursion derives joint forces from accelerations, and hdca's
    #: regions' joint impulses from velocities lose digits there (docs/performance.md,
    #: "The ground joint in the region")
    grounded_regions = False

    def __init__(self, model: Model, settings, plan=None):
        super().__init__(model, settings, plan)
        m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        self.threads = self.plan.threads
        lay_threads = self.plan.layout
        self.tree, sub = well_conditioned_tree(m, cheaper_tree(m, m.nc_j, lay_threads,
                                                               ground_last=self.grounded_regions),
                                               self.grounded_regions)
        self.lay = tree.build_layout(m, self.tree, 6, m.nc_j, lay_threads, regions=self.articulated_regions,
                                          grounded=self.grounded_regions)
        if sub is not None:  # loops: whether a closure row is redundant is the mechanism's, not one state's
            self.lay.cap_ranks(sub.redundant)
        self.lay.sel[:] = unit_rows(m, self.lay.ix.row_adr)
        if self.lay.unit_first.size:
            self.lay.unit_first[:] = unit_rows_first(m)
        tree_row_constants(self.mk, self.lay.G[0], self.lay.G[1], self.lay.ix.row_adr)
        self._watch_init(self.lay, m.nb)
        self.spring_joints = spring_joints(m)
        self.cut_spring = np.array([j for j in self.spring_joints if j >= m.nb], dtype=np.int64)
        self.spring_tree = np.array([j for j in self.spring_joints if j < m.nb], dtype=np.int64)
        self.tm = TreeModel(m.perp_pred, m.mass, m.inertia, m.inertia_inv, m.q_adr, m.v_adr, m.nv_j, m.ncut,
                            self.spring_tree, self.cut_spring)  # the kernels' model arrays
        self.jq_ref = np.zeros(m.nj)
        self.jq = np.full(m.nj, np.nan)
        self.x = np.zeros((m.nb, 3))  # COM, fk_positions
        self.R = np.zeros((m.nb, 3, 3))  # orientation, fk_positions
        self.P = np.zeros((m.nj, 3))  # joint points, fk_positions
        self.S = np.zeros((m.nv, 6))  # motion subspace columns, motion_subspace
        self.hy = self.lay.hybrid(self.S, self.P)  # the passes' articulated-body regions
        self._projection_init()

    @classmethod
    def automatic_threads(cls, model: Model, threads: int) -> tuple[int, str]:
        """Left automatic, one thread on an unbranched open chain shorter than
        :data:`threads.DCA_CHAIN_SERIAL_BELOW`: there the root-first half's merges, and a
        parallel region per pass, cost more than the second thread gives."""
        if model.nb < DCA_CHAIN_SERIAL_BELOW and unbranched_chain(model):
            return 1, f"an unbranched chain under {DCA_CHAIN_SERIAL_BELOW} bodies"
        return threads, ""

    def rhs(self, t, y):
        """One evaluation (``self._kernel``: the subclass's ``evaluate``, whose last pass
        writes the rates) into a new array; ``not_finite`` says which rates were not.
        ``dca``'s one-region kernels leave the multipliers out of a rates call: the
        formulation's own readers evaluate through :meth:`_solve`, with them.  ``dca``
        on a chain on two threads takes ``DCAFormulation._rhs_two_roles`` instead."""
        self.nfev += 1
        out, finite = self._kernel.rates(y)
        if not finite:
            raise SingularSystemError(t, self.not_finite)
        return out

    def rates_kernel(self):
        """:meth:`.base.Formulation.rates_kernel`: ``self._kernel``'s rates, where
        :meth:`rhs` is this class's own (not replaced on the object: ``dca``'s two roles
        and drivers) and the kernel compiled."""
        from .erk_kernel import STATE, Rates

        if ("rhs" in vars(self) or type(self).rhs is not TreeFormulation.rhs or self.model.nd
                or not hasattr(self._kernel.kernel, "overloads")):
            return None
        return Rates(self._kernel, STATE, self)

    def rk4_steps(self, t0: float, t1: float, y: np.ndarray, n: int) -> np.ndarray:
        """``n`` rk4 steps from ``(t0, y)`` to ``t1`` in one kernel call where a step is this
        class's own (:mod:`.rk4_kernel`: the same arithmetic, bit for bit); the generic
        loop where it is not (:meth:`_rk4`)."""
        fast = self._rk4
        if fast is None:
            return super().rk4_steps(t0, t1, y, n)
        out, count, t = fast(t0, t1, y, n)
        self.nfev += count
        if t == t:
            raise SingularSystemError(t, self.not_finite)
        return out

    @property
    def _rk4(self) -> RK4Interval | None:
        """The compiled rk4 interval, made at its first use, or None where a step is more
        than one state kernel's right-hand side and the quaternions' normalisation: a
        projection onto the loops (Python), a right-hand side or post-step of a
        subclass, ``dca``'s two roles on a chain (their ``rhs`` alternates kernels), or
        kernels run as Python (``NUMBA_DISABLE_JIT``); nor where the step watches loops
        for singular configurations (:class:`.tree.singular.SingularityWatch`)."""
        fast = self.__dict__.get("_rk4_interval", False)
        if fast is False:
            cls = type(self)
            own = (cls.rhs is TreeFormulation.rhs and cls.post_step is TreeFormulation.post_step
                   and cls.watch_singular is tree.SingularityWatch.watch_singular and "rhs" not in vars(self))
            own = own and self._closing.shape[0] == 0  # no loop to watch
            fast = None
            if own and not self._project and hasattr(self._kernel.kernel, "overloads"):
                quaternions = self.model.nq > self.model.nv
                fast = RK4Interval(self._kernel, StateKernel(normalize_state, (self.mk,)) if quaternions else None)
            self.__dict__["_rk4_interval"] = fast
        return fast

    def post_step(self, t, y):
        y = y.copy()
        normalize_quaternions(self.mk, y[: self.model.nq])
        if self._project:
            self._stabilise(t, y)
        return y

    #: the projection of the state (q, v); hdca's state (q, p*) takes its own
    _stabilise = LoopProjection._project_velocity_state

    def _row_watch(self) -> RowWatch:
        """What the row loop's post-steps (:func:`tree_post`, :func:`momentum_post`) and
        checks take of the singularity watch and the projection counters: the watch's
        state crosses in ``watch`` (``before`` puts it there, ``after`` takes it back)."""
        watching, conditioning = self._conditioning_call()
        watch, tick = np.zeros(WATCH_SLOTS), np.zeros(TICK_SLOTS)
        tick[TICK_WATCH] = 1.0

        def before():
            watch[WATCH_COND0] = np.nan if self._cond0 is None else self._cond0
            watch[WATCH_IN_WINDOW], watch[WATCH_T] = self._in_window, self._t_warn
            watch[WATCH_PROJECTIONS], watch[WATCH_RESETS] = self.projections, self.impulse_resets

        def after():
            self._cond0 = None if np.isnan(watch[WATCH_COND0]) else float(watch[WATCH_COND0])
            self._in_window, self._t_warn = bool(watch[WATCH_IN_WINDOW]), float(watch[WATCH_T])
            self.projections, self.impulse_resets = int(watch[WATCH_PROJECTIONS]), int(watch[WATCH_RESETS])

        return RowWatch(watching, conditioning, watch, tick, before, after)

    def _conditioning_call(self) -> tuple[bool, tuple]:
        """Whether there are loops to watch, and ``loop_conditioning`` on the layout's
        factors as the row loop's kernels call it: (address, its arguments)."""
        lay = self.lay
        watching = self._closing.shape[0] > 0
        args = (lay.ix, lay.Kf, lay.Kr, self._closing)  # loop_conditioning's, by address where there are loops
        return watching, (native_address(loop_conditioning, *args) if watching else 0, args)

    def adaptive_row_kernels(self):
        """:meth:`.base.Formulation.adaptive_row_kernels` on loops with the projection on:
        :func:`tree_operation` around this formulation's own row kernels (its right-hand
        side, post-step and check, :meth:`row_kernels`), where the compiled steps take
        its rates (:meth:`rates_kernel`)."""
        from .erk_kernel import OPERATION, Rates

        if not (self.model.ncut and self._project) or self.rates_kernel() is None:
            return None
        k = self.row_kernels()
        if (k is None or k.post is None or k.split or k.entry_clock is not None or k.efforts is not None
                or k.time is not None or k.tick is None or not k.own):
            return None
        watching, conditioning = self._conditioning_call()
        clock = np.zeros(4)
        op = StateKernel(tree_operation, (
            clock, (k.step.native(), k.step.desc), (k.post.native(), k.post.desc), k.tick, watching, conditioning,
            k.own[0], float(config.SINGULAR_WINDOW), float(config.CROSSING_TIME), np.empty(0)))
        kernels = k._replace(step=op, post=None, entry_clock=clock, ops=(dense_solve.RHS, dense_solve.EVALUATE),
                             reuse=False, keep=(k.step, k.post))
        return kernels, Rates(op, OPERATION, self, clock, dense_solve.RHS)

    def _projector_table(self) -> tuple:
        """``dense``'s projector as :func:`tree_post` calls it: (address, table, clock, Phi, K,
        nu), or a table of that type that is never called where the state is not projected."""
        if not self._project:
            return 0, np.zeros((0, NCOL), dtype=np.int64), np.zeros(4), np.zeros(0), np.zeros((0, 0)), np.zeros(0)
        proj = self.projector
        pw = proj.work
        return proj._k.native(), proj._k.desc, pw.clock, pw.phi, pw.K, pw.nu

    def _reactions(self) -> np.ndarray:
        """Each joint's wrench on its successor, ``G_b^T lambda``, from the last disassembly."""
        lay = self.lay
        out = np.zeros((self.model.nj, 6))
        joint_wrenches(lay.ix.row_adr, lay.ix.rows, lay.G[1], lay.lam, out)
        return out


@njit(cache=True, nogil=True, _nrt=False)
def joint_wrenches(row_adr, rows, Gb, lam, out):
    for j in range(out.shape[0]):
        for a in range(row_adr[j], row_adr[j] + rows[j]):
            for c in range(6):
                out[j, c] += Gb[a, c] * lam[a]


@njit(cache=True, nogil=True, _nrt=False)
def tree_check(desc, proto, y, out):
    """What ``dca``'s :meth:`~.dca.DCAFormulation.evaluate` does after its kernel filled the
    workspace, for the compiled row loop (:meth:`.base.Formulation.row_kernels`): False
    where it would raise (accelerations not finite; the closure's acceleration residual
    beyond :func:`.base.check_consistent`'s limit), else the cut joints' springs' branch
    reference, the reactions and the classical accelerations into their arrays, and with
    loops their conditioning into ``health`` (:meth:`.tree.SingularityWatch.health`,
    ``conditioning``: ``loop_conditioning`` by address).  ``y``, ``out``: unused."""
    (vdot, row_adr, rows, pred, succ, x, P, A, GA, GB, g0, lam, V, acc, reactions, rtol, nj, cut_spring, jq, jq_ref,
     loops, conditioning, health) = unpack(desc, proto)
    for i in range(vdot.shape[0]):
        if not np.isfinite(vdot[i]):
            return False
    res, scale = residual((row_adr, rows), pred, succ, x, P, A, GA, GB, g0, nj)
    if not np.isfinite(res) or res > rtol * max(scale, 1.0):
        return False
    for j in cut_spring:
        jq_ref[j] = jq[j]
    reactions[:, :] = 0.0
    joint_wrenches(row_adr, rows, GB, lam, reactions)
    classical_into(V, A, acc)
    if loops:
        health[0] = 1.0
        health[1] = call_float(conditioning[0], conditioning[1])
    return True


#: :func:`tree_post`'s ``watch`` slots: the singularity watch's first conditioning (NaN: none
#: yet), whether it is in the singular window, the last time it was, the projections made,
#: the impulse resets made (:func:`momentum_post`); and ``dense``'s slot NEAR, which
#: ``row_kernels.erk_rows`` reads after each watch and a tree formulation leaves 0 (it
#: bounds no step)
WATCH_COND0, WATCH_IN_WINDOW, WATCH_T, WATCH_PROJECTIONS, WATCH_RESETS, WATCH_NEAR = range(6)
WATCH_SLOTS = 6
assert WATCH_NEAR == dense_data.NEAR
#: the operations :func:`tree_operation` does, by ``dense``'s codes (``row_kernels.erk_rows`` asks for them)
_RHS, _WATCH, _POST_STEP = dense_solve.RHS, dense_solve.WATCH, dense_solve.POST_STEP


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _post_clock(tick):
    """The time a post-step is at (the step ``tick[TICK_I]`` of the interval in ``tick``),
    ``tick`` advanced past it."""
    n = tick[TICK_N]
    i = tick[TICK_I]
    h = (tick[TICK_T1] - tick[TICK_T0]) / n
    tick[TICK_I] = i + 1
    return tick[TICK_T1] if i == n - 1 else tick[TICK_T0] + (i + 1) * h


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _watch_step(watching, conditioning, watch, tick, t, window, crossing):
    """:meth:`.tree.SingularityWatch.watch_singular` at ``t`` on the latest factors
    (``conditioning``: ``loop_conditioning`` by address); False, with ``tick[TICK_FAILED]``,
    where Python would record a warning (a new crossing) or the conditioning is not finite."""
    if not watching:
        return True
    c = call_float(conditioning[0], conditioning[1])
    if c != c:
        tick[TICK_FAILED] = 1.0
        return False
    if watch[WATCH_COND0] != watch[WATCH_COND0]:
        watch[WATCH_COND0] = max(c, 1e-300)
        return True
    rel = c / watch[WATCH_COND0]
    if watch[WATCH_IN_WINDOW] == 0.0 and rel < window:
        watch[WATCH_IN_WINDOW] = 1.0
        if t - watch[WATCH_T] < crossing:
            return True  # the same crossing, seen again by a large step
        tick[TICK_FAILED] = 1.0  # a new crossing: Python records its warning
        return False
    elif watch[WATCH_IN_WINDOW] != 0.0 and rel > 2.0 * window:
        watch[WATCH_IN_WINDOW] = 0.0
    if watch[WATCH_IN_WINDOW] != 0.0:
        watch[WATCH_T] = t
    return True


@njit(cache=True, nogil=True, _nrt=False)
def tree_post(desc, proto, y, out):
    """``dca``'s :meth:`TreeFormulation.post_step` and :meth:`.tree.SingularityWatch.watch_singular`
    after one rk4 step of an interval, in place on ``y`` (``out`` unused), for the
    compiled row loop: the quaternions renormalised; with ``project``, the state onto its
    loops where their residuals exceed ``tol`` (``dense``'s projector by address,
    :func:`.rk4_kernel.call_by_table`: its CLOSURE, then its PROJECT, as
    :meth:`.stabilise.LoopProjection._project_velocity_state`); the loops' conditioning
    watched (``watch``).  The step's time comes from ``tick``, which it advances.  Where
    Python would do otherwise -- raise, record a warning, or decide on a residual too
    close to ``tol`` for a sum in another order to be sure of -- it sets
    ``tick[TICK_FAILED]`` and the row loop leaves the interval to Python."""
    (mk, nq, project, proj, proj_desc, proj_clock, phi, K, nu, tol, iterations, watching, conditioning, watch, tick,
     window, crossing, ops) = unpack(desc, proto)
    t = _post_clock(tick)
    normalize_quaternions(mk, y)
    if project:
        q, v = y[:nq], y[nq:]
        worst = projector_residual(proj, proj_desc, proj_clock, t, ops[0], q, v, phi, K, nu, tol, tick)
        if worst != worst:
            return False
        # ops[2]: the velocities too, the CLOSURE above having been at this state
        if worst > tol and not projector_project(proj, proj_desc, proj_clock, t, iterations, ops, q, v, tick, watch,
                                                 WATCH_PROJECTIONS):
            return False
    return tick[TICK_WATCH] == 0.0 or _watch_step(watching, conditioning, watch, tick, t, window, crossing)


@njit(cache=True, nogil=True, _nrt=False)
def momentum_post(desc, proto, y, out):
    """``hdca``'s :meth:`TreeFormulation.post_step` and watch after one rk4 step, in place
    on the state ``y`` = (q, p*), for the compiled row loop, as
    :meth:`.stabilise.LoopProjection._project_momentum_state` does it: the quaternions
    renormalised; the positions onto the loops where their residual exceeds ``tol``
    (``dense``'s projector by address: CLOSURE at zero velocities, then PROJECT of the
    positions alone); the velocities of (q, p*) by ``hdca``'s kernel (``solve``: its
    address and table; its rates into ``out`` where it is as long as ``y`` -- the rk4
    loop hands in its k1, which the next step computes again -- else without); their
    momenta ``M v``
    (:func:`~engine.kinematics.joint_momenta` by address, ``momenta``: into ``pm``); p* reset
    to them where the accumulated impulse outweighs them; then the watch, as
    :func:`tree_post`'s.  Where Python would raise or record a warning it sets
    ``tick[TICK_FAILED]``; ``tick[TICK_FRESH]`` says whether the workspace and ``out`` hold
    the evaluation of ``y`` as it leaves (no reset): the row loop's evaluation at the output
    instant is then already made."""
    (mk, nq, proj, proj_desc, proj_clock, phi, zero_v, tol, iterations, solve, no_rates, v, pdot, momenta, pm,
     watching, conditioning, watch, tick, window, crossing, ops) = unpack(desc, proto)
    t = _post_clock(tick)
    normalize_quaternions(mk, y)
    q, p = y[:nq], y[nq:]
    proj_clock[0] = t
    proj_clock[3] = ops[0]
    if call_by_table(proj, proj_desc, q, zero_v) != 0.0:
        tick[TICK_FAILED] = 1.0
        return False
    worst = 0.0
    for r in range(phi.shape[0]):
        worst = max(worst, abs(phi[r]))
    if not np.isfinite(worst):
        tick[TICK_FAILED] = 1.0
        return False
    # ops[2]: the positions alone, the CLOSURE above having been at this state
    if worst > tol and not projector_project(proj, proj_desc, proj_clock, t, iterations, ops, q, zero_v, tick, watch,
                                             WATCH_PROJECTIONS):
        return False
    rates = out.shape[0] == y.shape[0]
    call_by_table_bool(solve[0], solve[1], y, out if rates else no_rates)
    for i in range(v.shape[0]):
        if not (np.isfinite(v[i]) and np.isfinite(pdot[i])):
            tick[TICK_FAILED] = 1.0
            return False
    call_void(momenta[0], momenta[1])
    drift, size = 0.0, 0.0
    for i in range(pm.shape[0]):
        drift = max(drift, abs(p[i] - pm[i]))
        size = max(size, abs(pm[i]))
    tick[TICK_FRESH] = 1.0 if rates else 0.0
    if drift > size:
        for i in range(pm.shape[0]):
            p[i] = pm[i]
        watch[WATCH_RESETS] += 1.0
        tick[TICK_FRESH] = 0.0
    return tick[TICK_WATCH] == 0.0 or _watch_step(watching, conditioning, watch, tick, t, window, crossing)


@njit(cache=True, nogil=True, _nrt=False)
def tree_operation(desc, proto, a, b):
    """A tree formulation's loops in the compiled ``rk45`` / ``dop853`` rows
    (:func:`engine.row_kernels.erk_rows`, which calls ``dense``'s operations kernel the
    same way): the operation ``clock[3]`` (``dense``'s codes) at time ``clock[0]`` on the
    state ``a``, as :func:`engine.integrators.scipy_ode` does it in Python:

    - RHS: the right-hand side into ``b`` (``rates``: the formulation's state kernel,
      address and table), as :meth:`TreeFormulation.rhs`;
    - WATCH: the singularity watch on the latest evaluation's factors (:func:`_watch_step`),
      as :meth:`.tree.SingularityWatch.step_bound` before every step;
    - POST_STEP: the post-step at the output instant, in place (``post``: :func:`tree_post`
      or :func:`momentum_post`, without its rates and, ``tick[TICK_WATCH]`` 0, without
      the watch after it: the next step's comes before it), as :meth:`TreeFormulation.post_step`;
    - EVALUATE: the state kernel without rates (the row's check kernel does the rest of
      :meth:`evaluate`, as in the rk4 rows).

    Returns 0.0 where done, 1.0 where Python would raise or record a warning: the row loop
    then leaves the interval to Python."""
    clock, rates, post, tick, watching, conditioning, watch, window, crossing, no_rates = unpack(desc, proto)
    op = np.int64(clock[3])
    t = clock[0]
    if op == _RHS:
        return 0.0 if call_by_table_bool(rates[0], rates[1], a, b) else 1.0
    if op == _WATCH:
        tick[TICK_FAILED] = 0.0
        return 0.0 if _watch_step(watching, conditioning, watch, tick, t, window, crossing) else 1.0
    if op == _POST_STEP:
        tick[TICK_T0], tick[TICK_T1], tick[TICK_N], tick[TICK_I] = t, t, 1.0, 0.0
        tick[TICK_FAILED], tick[TICK_FRESH], tick[TICK_WATCH] = 0.0, 0.0, 0.0
        done = call_by_table_bool(post[0], post[1], a, no_rates)
        return 0.0 if done and tick[TICK_FAILED] == 0.0 else 1.0
    call_by_table_bool(rates[0], rates[1], a, no_rates)
    return 0.0

