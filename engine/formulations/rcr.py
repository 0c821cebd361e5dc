"""Formulation ``rcr``: Anderson and Critchley's recursive coordinate reduction (paper 002).

State: tree coordinates ``q`` and velocities ``v`` -- the layout of ``dense`` and
``dca``, so every CSV column means the same.  The loop-closing (cut) joints split
the tree speeds of each loop *cluster* (loops that share a tree joint; a ladder is
one cluster, paper 002 section 4.3) into independent and dependent ones:

* the partition (:func:`.rcr_partition.build_partition`) is chosen automatically, loop after loop,
  by column-pivoted QR of each loop's mass-whitened Jacobian over the speeds that no
  earlier loop has claimed; a loop whose rows cannot be satisfied by its unclaimed
  speeds is merged with its cluster's other loops into one block;
* dependent speeds follow from the independent ones by the velocity-level closure
  (eq. 34), block after block, and accelerations by eq. (35) -- every right-hand
  side ignores the dependent speeds of the state and recomputes them, so the
  velocity constraints hold to round-off (velocity-level enforcement);
* each cluster's kinetics (section 3.2, eqs. 56-60) fold onto its loop base body as
  one virtual body carrying d_C independent speeds, inside the articulated-body
  triangularisation and forward substitution of the tree (eqs. 14-27, 61-71); no
  global constraint matrix is formed;
* after every step the dependent coordinates are restored by Newton on the loop
  equations, so ``violation.position`` stays at round-off;
* the partition is re-chosen when a block's conditioning falls,
  without changing the state layout; where no partition is well conditioned -- a
  genuine change of mobility, the parallelogram folding flat -- the run stops with
  :class:`~engine.errors.SimulationError` naming the time and the reason.

The derivation, and which equation of paper 002 each pass implements, is in docs/rcr.md.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import config
from ..constraints import con_arrays, coupling_rows
from ..errors import SimulationError, SingularSystemError
from ..forces import driver_force_arrays, force_arrays, spring_joints
from ..initial import initial_state, tree_velocities
from ..kinematics import (
    classical_accelerations, classical_into, fk_positions, kin_arrays, normalize_quaternions,
)
from ..model import Model
from . import dense_solve
from . import rcr_kernels as K
from .base import NO_RATES, Evaluation, Formulation, RowKernels, StateKernel, check_consistent, rk4_step
from .dense import _NO_SUBSPACE, reaction_model, reactions_from_multipliers
from .dense_kernels import Frames, multiplier_reactions
from .rcr_articulated import Articulated, ClusterFold, LoopMaps
from .rcr_monitor import DEAD_POINT_RANGE, PartitionMonitor
from .rcr_partition import (SWITCH_RTOL, KeptPartitions, LoopJacobian, Partition, PartitionSearch, build_partition,
                            loop_rank, loop_singularity, loop_structure, search_partition)
from .rcr_rows import close_loops, close_post, closure_residual, com_accelerations, loop_check, loop_multipliers
from .rk4_kernel import RK4SplitInterval, call_void, native_address
from .superposition import UNRESPONSIVE, superposed_kernel
from .workspace import NCOL, unpack


class RCRFormulation(PartitionMonitor, Formulation):
    name = "rcr"
    title = "recursive coordinate reduction (Anderson & Critchley), velocity level"
    kind = "ode"
    not_finite = ("the reduced mass matrix of a loop cluster is singular "
                  "(independent speeds no longer valid)")
    parameters = ()
    summary = ("Paper 002's recursive coordinate reduction: joint coordinates, loops closed at the velocity "
               "level by independent/dependent speeds chosen (and re-chosen) automatically, dependent "
               "coordinates restored by Newton after every step; linear cost on ladders.")
    #: drivers by superposition of forward-dynamics evaluations (superposition.superposed_dynamics), held with the
    #: loops by dense's projection after a step where they drifted (_hold_drivers)
    honours_drivers = True
    #: joint-space rows (gear pairs) after the cut-joint rows: none in rcr (embedding has them)
    njr: int = 0
    #: rheonomic joint-space rows among them (embedding's drivers), the last ``ndr``
    ndr: int = 0
    #: the right-hand side's kernel of positions and blocks, and the arrays it takes between
    #: ``lx`` and ``nb`` (embedding's: its joint-space rows, ``jr``)
    _positions_entry = staticmethod(K.positions_and_blocks)
    jr: tuple = ()
    #: where the kernels read the time the drivers' laws are taken at (rcr's superposition,
    #: embedding's rows; _drive and the row loop write it): None without drivers
    _time: np.ndarray | None = None
    #: the attributes sized for, or bound to, one partition: kept per partition (_use)
    _per_partition = ("Kval", "Qf", "tau", "N", "Gam", "Ucl", "Dcl", "ucl", "_bound_kernels", "_multipliers_kernel",
                      "_row_kernels", "_drive_status", "_close_kernel")
    #: (positions kernel, :func:`.rcr_rows.close_loops` bound with it): :meth:`_closer`
    _close_kernel: tuple | None = None
    #: the superposition's status (superposition.superposed_dynamics), with its kernel
    _drive_status: np.ndarray | None = None

    def __init__(self, model: Model, settings, plan=None):
        super().__init__(model, settings, plan)
        m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        #: drivers by superposition, as dca's (docs/derivations.md, "Drivers"): their efforts
        #: applied as joint torques (forces); embedding makes them rows instead (ndr)
        self._superpose = bool(m.nd) and not self.ndr
        if self._superpose:
            self.fa, self.effort = driver_force_arrays(m)
            self._driven_v = np.array([m.v_adr[j] for j in m.d_joint], dtype=np.int64)
            self._driver_projector = None
            self._time = np.zeros(1)  # the drivers' time (_drive), which the row loop writes too
        self.structure = loop_structure(m)
        sj = spring_joints(m)
        self.cut_spring = np.array([j for j in sj if j >= m.nb], dtype=np.int64)
        self.spring_tree = np.array([j for j in sj if j < m.nb], dtype=np.int64)
        self.jq_ref = np.zeros(m.nj)
        self.jq = np.full(m.nj, np.nan)
        self.ncr = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
        ncl = len(self.structure[2])
        # workspace: position -> velocity -> loop maps -> acceleration
        self.x = np.zeros((m.nb, 3))  # COM, fk_positions
        self.R = np.zeros((m.nb, 3, 3))  # orientations, fk_positions
        self.P = np.zeros((m.nj, 3))  # joint points, fk_positions
        self.S = np.zeros((m.nv, 6))  # motion subspace about each joint point, motion_subspace
        self.S6 = np.zeros((m.nv, 6))  # ... about the origin, _origin_columns
        self.V0 = np.zeros((m.nb, 6))  # zero twists (closure rows from positions)
        self.GA = np.zeros((self.ncr, 6))  # cut rows on the predecessor, about the origin, cut_rows
        self.GB = np.zeros((self.ncr, 6))  # ... on the successor
        self.g0 = np.zeros(self.ncr)  # velocity-product part of the rows, cut_rows
        self.phi = np.zeros(self.ncr)  # closure residuals, cut_rows
        self.gam = np.zeros(self.ncr)  # eq. (35) remainder, _loop_rhs
        self.zero_rows = np.zeros(self.ncr)
        self.nu = np.zeros(self.ncr)  # the closure rows' velocity right-hand side (embedding's drivers: f'(t))
        self.pos = np.zeros(m.nv, dtype=np.int64)  # column -> block position scratch, block_rows
        self.w = np.zeros(max(self.ncr, 1))  # block solve scratch
        self.v = np.zeros(m.nv)  # closed speeds (eq. 34), evaluate
        self.V = np.zeros((m.nb, 6))  # COM twists, fk_velocities
        self.c = np.zeros((m.nb, 6))  # velocity products about joint points, fk_velocities
        self.Ab = np.zeros((m.nb, 6))  # bias accelerations about COMs, fk_accelerations
        self.Ao = np.zeros((m.nb, 6))  # ... about the origin, _to_origin
        self.co = np.zeros((m.nb, 6))  # velocity products about the origin, _to_origin
        self.Fext = np.zeros((m.nb, 6))  # applied wrenches, applied_forces
        self.I6 = np.zeros((m.nb, 6, 6))  # inertia -> articulated inertia, body_terms/solve_articulated
        self.p6 = np.zeros((m.nb, 6))  # bias force -> articulated bias, body_terms/solve_articulated
        self.g = np.zeros(m.nv)  # particular solution of eq. (35)
        self.beta = np.zeros((m.nb, 6))  # remainder accelerations in clusters, cluster_maps
        self.U = np.zeros((m.nv, 6))  # IA S per tree speed, solve_articulated
        self.Dl = np.zeros((m.nb, 3, 3))  # S^T IA S factors, solve_articulated
        self.u = np.zeros(m.nv)  # -S^T pA, solve_articulated
        self.a = np.zeros((m.nb, 6))  # spatial accelerations about the origin, solve_articulated
        self.vdot = np.zeros(m.nv)
        self.t6 = np.zeros(6)
        self.zero_v = np.zeros(m.nv)
        self.dq = np.zeros(m.nv)
        self.ncl = ncl
        self.switches = 0
        self.switch_log: list[str] = []
        self.block_conditioning = 1.0
        # [the block conditioning below which the monitor looks for a better partition, SWITCH_RTOL,
        #  the block conditioning at the last accepted state (0: none since the partition's adoption)]
        self._search_below = np.array([SWITCH_RTOL, SWITCH_RTOL, 0.0])
        self._falling = False  # the conditioning fell by more than SWITCH_FALL in the last step (_searches)
        self._step_began = 0.0  # the conditioning where the rk4 step being taken in parts began (_rk4_guarded)
        #: the lowest block conditioning the positions kernel has returned since it was last
        #: reset to inf, then each pivot's lowest (K.lowest_so_far): what a step's stages saw
        self.stages_lowest = np.full(m.nv + 2, np.inf)
        self._reach_scale = 1.0  # parts of the whole rk4 step in the one being closed (_rk4_guarded)
        self._sing_samples: list = []  # (t, mobility measure) while near a singular configuration
        #: each pivot's |R_kk| over its block's largest at the last accepted state (NaN: none
        #: since the partition's adoption; K.dying_blocks)
        self._block_ends = np.full(m.nv + 1, np.nan)
        self._dying = False  # a pivot under SWITCH_RTOL would reach zero within DEAD_POINT_RANGE steps (_searches)
        self._last_conditioning = None  # (t, each block's conditioning, partition) at the last step_bound
        self.switch_conditioning = 1.0  # the block conditioning the last switch left
        self._close_result = np.zeros(3)  # close_loops: block conditioning, residual, Newton steps
        self._kept_ratio = None  # (partition, block conditioning / mobility measure) at the last search that kept it
        #: the loop Jacobian and mass matrix of partition searches and mobility samples
        self.loop_jacobian = LoopJacobian(m, self.structure) if self.ncr else None
        self.loop_rank = loop_rank(m, self.structure, self.loop_jacobian) if self.ncr else 0
        self.part: Partition | None = None
        self._kept = KeptPartitions(self._per_partition)
        self._binding = None  # the partition's arrays and kernels: the row kernels are valid while it is theirs
        self._use(self._partition_at(m.q_zero()))

    def __getstate__(self) -> dict:
        """Copied or pickled without the row loop's kernels, the closure kernel and the
        partitions kept: their closures hold this object, and the closure kernel's table the
        address of this object's positions table (the copy builds its own at their first use)."""
        state = self.__dict__.copy()
        state["_row_kernels"] = None
        state["_close_kernel"] = None
        state["_kept"] = KeptPartitions(self._per_partition)
        return state

    @classmethod
    def supports(cls, model: Model) -> tuple[bool, str]:
        return super().supports(model)  # refuses couplings (gears): they are not rows here

    # ------------------------------------------------------------- partition
    def _partition_at(self, q: np.ndarray) -> Partition:
        """The independent/dependent split chosen at configuration ``q``."""
        return build_partition(self.model, q, self.structure, self.loop_jacobian)

    def _search_at(self, q: np.ndarray) -> PartitionSearch | Partition:
        """The partition monitor's search at ``q``: its choice's ``key()`` and
        ``conditioning``, laid out by ``partition()`` where the monitor switches to it."""
        return search_partition(self.model, q, self.structure, self.loop_jacobian)

    def _use(self, part: Partition) -> bool:
        """Adopt ``part``: with the arrays and kernels it had where it was used before and
        kept (:class:`.rcr_partition.KeptPartitions`; returns True), else new ones."""
        m = self.model
        if self.part is not None:
            self._kept.leave(self, self.part, self._binding)
        self.part = part
        self._search_below[0] = SWITCH_RTOL
        self._search_below[2] = 0.0
        self._step_began = 0.0
        self._block_ends[:] = np.nan
        binding = self._kept.take(self, part)
        if binding is not None:
            self._binding = binding
            return True
        self._binding = object()
        self._bound_kernels = None  # their workspace changes with the partition
        self._multipliers_kernel = None
        self._row_kernels = None
        d = max(part.dmax, 0)
        self.Kval = np.zeros(max(part.nk_tot, 1))  # block loop Jacobians, block_rows
        self.Qf = np.zeros(max(part.nq_tot, 1))  # Householder factors of the dependent columns, block_qr
        self.tau = np.zeros(2 * max(part.ndep, 1))  # reflector scales | R diagonal, block_qr
        self.N = np.zeros((d, m.nv))  # dependent speeds per unit independent speed (eq. 34), evaluate
        self.Gam = np.zeros((m.nb, 6, d))  # cluster partial velocities (eq. 58), cluster_maps
        self.Ucl = np.zeros((max(self.ncl, 1), 6, d))  # cluster coupling inertia, solve_articulated
        self.Dcl = np.zeros((max(self.ncl, 1), d, d))  # cluster reduced inertia factor, solve_articulated
        self.ucl = np.zeros((max(self.ncl, 1), d))  # cluster reduced forces, solve_articulated
        return False

    @property
    def independent_speeds(self) -> np.ndarray:
        return self.part.independent

    # ----------------------------------------------------------------- state
    def initial_state(self) -> np.ndarray:
        m = self.model
        ini = initial_state(m)
        self.initial = ini
        q = m.q_zero()
        fk_positions(self.mk, q, self.x, self.R, self.P)
        v = tree_velocities(m, ini.V, self.x, self.R, self.P)
        y = np.concatenate([q, v])
        return self._close(0.0, y, check=False)

    def _kernels(self) -> tuple[StateKernel, StateKernel]:
        """The right-hand side's two kernels with this partition's workspace, bound
        (:class:`StateKernel`; rebuilt after :meth:`_use`): positions and blocks, called
        with ``q``; ``K.dynamics``, called with ``q``, ``v`` and the output array.  The
        dynamics' workspace holds its arrays grouped as its passes take them (``K.Poses``,
        ``K.CutRows``, ``K.Blocks``, :class:`.Articulated`, :class:`.LoopMaps`,
        :class:`.ClusterFold`); the positions kernel's is flat, the table ``embedding``'s
        own positions kernel also reads (with its joint-space rows, ``jr``)."""
        if self._bound_kernels is None:
            m, p = self.model, self.part
            dyn = StateKernel(
                K.dynamics, (self.mk, self.ca, self.fa, p.lx, m.mass, m.inertia, m.q_adr, m.nv_j, self.spring_tree,
                             self.cut_spring, K.Poses(self.x, self.R, self.P, self.S, self.S6), self.V, self.c,
                             self.Ab, self.Ao, self.co, self.Fext, self.jq, self.jq_ref,
                             K.CutRows(self.GA, self.GB, self.g0, self.phi), self.gam, self.nu, self.zero_rows,
                             self._blocks(), self.w, Articulated(self.I6, self.p6, self.U, self.Dl, self.u),
                             LoopMaps(self.N, self.g, self.Gam, self.beta), ClusterFold(self.Ucl, self.Dcl, self.ucl),
                             self.a, self.v, self.vdot, self.t6, self.zero_v))
            if self._superpose:  # the efforts by superposition around it, at the time _drive wrote
                dyn, self._drive_status = superposed_kernel(dyn, self._time, self.effort, self._driven_v, self.vdot,
                                                            m.d_motion, split=True)
            self._bound_kernels = (self._positions_kernel(), dyn)
        return self._bound_kernels

    def _positions_kernel(self) -> StateKernel:
        m, p = self.model, self.part
        return StateKernel(self._positions_entry, (self.mk, self.ca, p.lx, *self._position_rows(), m.nb, m.nv_j,
                                                   self.x, self.R, self.P, self.S, self.S6, self.V0, self.GA, self.GB,
                                                   self.g0, self.phi, p.colscale, self.Kval, self.Qf, self.tau,
                                                   self.pos, self.stages_lowest))

    def _position_rows(self) -> tuple:
        """What the positions kernel takes between ``lx`` and ``nb``: :attr:`jr` (embedding
        adds its drivers' laws)."""
        return self.jr

    def _blocks(self) -> K.Blocks:
        """This partition's block matrices and factors, as the kernels take them."""
        return K.Blocks(self.Kval, self.Qf, self.tau, self.part.colscale)

    def _positions(self, q):
        return self._kernels()[0](q)

    def _solve(self, t, q, v, check=True, out=NO_RATES):
        """One evaluation into the workspace, and the right-hand side into ``out`` if it is
        as long as the state; ``check``: refuse non-finite speeds or accelerations."""
        self._drive(t)
        positions, dynamics = self._kernels()
        self.block_conditioning = positions(q)
        ok = dynamics(q, v, out)
        if self._superpose and self._drive_status[0] == UNRESPONSIVE:
            raise SingularSystemError(t, "the driven joints' accelerations do not respond to their efforts "
                                         "(a driver on a joint its loops lock)")
        if not ok or (check and not (np.isfinite(self.vdot).all() and np.isfinite(self.v).all())):
            raise SingularSystemError(t, self.not_finite)

    def rk4_steps(self, t0: float, t1: float, y: np.ndarray, n: int) -> np.ndarray:
        """``n`` rk4 steps from ``(t0, y)`` to ``t1`` in one kernel call where the mechanism
        has no loop to close after each step (:mod:`.rk4_kernel`, the same arithmetic bit
        for bit); the generic loop elsewhere."""
        if self.ncr:
            return self._rk4_switching(t0, t1, y, n)
        fast = self._interval("_rk4_interval", self.model.nq > self.model.nv)
        if fast is None:
            return super().rk4_steps(t0, t1, y, n)
        return self._run_interval(fast, t0, t1, y, n)

    def _rk4_step(self, t: float, y: np.ndarray, h: float) -> np.ndarray:
        """One rk4 step of ``h`` from ``(t, y)``, not closed (:meth:`post_step` closes it):
        :func:`.base.rk4_step`'s arithmetic in one kernel call, or :func:`.base.rk4_step`
        itself where :meth:`rk4_steps` takes the generic loop.  The kernel runs from 0 to
        ``h`` (its step is then ``h`` to the bit; it reads no time without drivers)."""
        fast = self._interval("_rk4_one_step", False)
        if fast is None:
            return rk4_step(self.rhs, t, y, h)
        return self._run_interval(fast, 0.0, h, y, 1, t)

    def _interval(self, key: str, quaternions: bool) -> RK4SplitInterval | None:
        """rk4 steps without a closure between them in one call
        (:class:`.rk4_kernel.RK4SplitInterval`, bound to this partition's kernels, kept as
        the attribute ``key``; the quaternions renormalised after each step if
        ``quaternions``), or None where the right-hand side or the post-step is not this
        class's, or drivers set the time, or the kernels run as Python."""
        cls = type(self)
        if (self.model.nd or cls.rhs is not RCRFormulation.rhs
                or cls.post_step is not RCRFormulation.post_step or "rhs" in vars(self)
                or not hasattr(K.dynamics, "overloads")):
            return None
        fast = self.__dict__.get(key)
        kernels = self._kernels()
        if fast is None or (fast.positions, fast.dynamics) != kernels:
            fast = self.__dict__[key] = RK4SplitInterval(*kernels, self.mk, quaternions)
        return fast

    def _run_interval(self, fast: RK4SplitInterval, t0: float, t1: float, y: np.ndarray, n: int,
                      origin: float = 0.0) -> np.ndarray:
        """``fast`` from ``(t0, y)`` to ``t1`` in ``n`` steps; raises at ``origin + t`` where a
        right-hand side at ``t`` was not finite."""
        out, count, t, cond = fast(t0, t1, y, n, self.model.nq)
        self.nfev += count
        self.block_conditioning = cond
        if t == t:
            raise SingularSystemError(origin + t, self.not_finite)
        return out

    def rhs(self, t, y):
        self.nfev += 1
        nq = self.model.nq
        out = np.empty_like(y)
        self._solve(t, y[:nq], y[nq:], False, out)
        return out

    # ------------------------------------------------------------ projection
    @property
    def projects(self) -> bool:
        return self.ncr > 0 or self._superpose

    def _hold_drivers(self, t, y):
        """``dense``'s projection of the state onto the loops and the drivers' rows at time
        ``t`` (docs/derivations.md, "Projection"), where the driven coordinates or rates have
        drifted: the independent coordinates integrate, so a dependent driven coordinate
        is held only this way."""
        m = self.model
        proj = self._projector()
        q, v = y[: m.nq], y[m.nq:]
        if max(proj.closure_residuals(q, v, t)) <= config.PROJECTION_TOL:
            return y
        qp, vp = proj.project_state(q.copy(), v.copy(), t=t)
        return np.concatenate([qp, vp])

    def _projector(self):
        """``dense`` as the projector of :meth:`_hold_drivers`, made at its first use."""
        if self._driver_projector is None:
            from .dense import DenseFormulation

            self._driver_projector = DenseFormulation(self.model, self.settings, projector=True)
        return self._driver_projector

    def _drive(self, t: float) -> None:
        """The time the drivers' laws are read at (the superposition's, embedding's rows):
        ``t`` into :attr:`_time`, where the kernels read it; nothing without drivers."""
        if self._time is not None:
            self._time[0] = t

    def _close(self, t, y, check=True):
        """Newton on the loop equations for the dependent coordinates, then
        eq. (34) for the dependent speeds (independent ones untouched): one call of
        :func:`.rcr_rows.close_loops` (the steps :func:`.rcr_rows.close_post` takes in the
        compiled row loop)."""
        self._drive(t)
        y = y.copy()
        if not self.ncr and not self.ndr:
            normalize_quaternions(self.mk, y[: self.model.nq])
            return y
        result = self._close_result
        closer = self._closer()
        if closer is None:
            self._close_python(y, result)
        else:
            closer(y, result)
        cond, res, it = float(result[0]), float(result[1]), int(result[2])
        self.block_conditioning = cond
        if check and not (np.isfinite(res) and res < 1e3 * config.PROJECTION_TOL + 1e-9):
            raise SimulationError(t, f"{self.name}: the loop equations cannot be closed from the independent "
                                     f"coordinates (residual {res:.3g} after {it} Newton steps)")
        return y

    def _closer(self) -> StateKernel | None:
        """:func:`.rcr_rows.close_loops` bound to this partition's arrays (rebuilt with its
        positions kernel); None where kernels run as Python (``NUMBA_DISABLE_JIT``)."""
        if not hasattr(close_loops, "overloads"):
            return None
        positions = self._kernels()[0]
        bound = self._close_kernel
        if bound is None or bound[0] is not positions:
            m = self.model
            bound = self._close_kernel = (positions, StateKernel(close_loops, (
                self.mk, np.int64(m.nq), (positions.native(1), positions.desc), self.part.lx, np.int64(m.nb),
                m.nv_j, self.phi, self._blocks(), K.NewtonScratch(self.w, self.dq, np.zeros(self.phi.shape[0])),
                self.nu, self.w, float(config.PROJECTION_TOL), np.int64(config.PROJECTION_MAX_ITER))))
        return bound[1]

    def _close_python(self, y, result):
        """:func:`.rcr_rows.close_loops` where kernels run as Python: its positions kernel
        is called by name, not by address."""
        m, p = self.model, self.part
        q, v = y[: m.nq], y[m.nq:]
        normalize_quaternions(self.mk, q)
        blocks, work = self._blocks(), K.NewtonScratch(self.w, self.dq, np.zeros(self.phi.shape[0]))
        it = 0
        while True:
            cond = self._positions(q)
            tol = config.PROJECTION_TOL if it < config.PROJECTION_MAX_ITER else np.inf
            res = K.newton_step(self.mk, p.lx, m.nb, m.nv_j, q, self.phi, blocks, work, tol)
            if res <= tol or cond != cond or it > config.PROJECTION_MAX_ITER:
                break
            it += 1
        normalize_quaternions(self.mk, q)
        K.close_velocities(p.lx, blocks, v, self.nu, self.w)
        result[:] = cond, res, it

    def post_step(self, t, y):
        y = self._close(t, y)
        if self.ncr and self._searches():
            y = self._repartition(t, y)
        if self._superpose:
            y = self._hold_drivers(t, y)
        return y

    singular_remedy = ("rcr stops where the loops reach a singular configuration (a change of mobility); the "
                       "dense formulation crosses such configurations (--formulation dense).")

    def mobility(self, y) -> float:
        """The mobility measure at the positions of ``y`` (:func:`loop_singularity`, dense's)."""
        if not self.ncr:
            return 1.0
        return loop_singularity(self.model, y[: self.model.nq], self.structure, self.loop_rank, self.loop_jacobian)

    def health(self) -> dict:
        """For the pipeline's monitor (:mod:`engine.monitor`): the conditioning of the
        closure rows the partition keeps -- the smallest ``min |R_ii| / max |R_ii|`` of the
        scaled dependent blocks at the last evaluation (1.0 without loops).  A dead point
        of the current partition shows here before the partition is switched; the
        mobility measure itself is :func:`loop_singularity`."""
        return {"loop_conditioning": float(self.block_conditioning) if self.ncr else 1.0}

    def stats(self) -> dict:
        out = {"rhs_evaluations": self.nfev}
        if self.ncr:
            out["partition_switches"] = self.switches
            if self.switch_log:
                out["partition_log"] = list(self.switch_log)
        return out

    # --------------------------------------------------------------- output
    def row_kernels(self):
        """The compiled row loop's kernels (:meth:`.base.Formulation.row_kernels`) where the
        step, the closure and the evaluation are this class's own, without drivers applied by
        superposition (rcr's; embedding's are rows, read at the time ``_time``): the
        positions and dynamics kernels (the dynamics' rates at an output instant are the
        next step's first: the kernels fill the same workspace either way); on an open
        tree :func:`output_check` (the reactions need no multipliers); with loops or
        joint-space rows :func:`.rcr_rows.close_post` after each step where there are loops
        to close (:meth:`_close`) and :func:`.rcr_rows.loop_check`, valid while the
        partition they hold is the formulation's."""
        m, cls = self.model, type(self)
        if ((m.nd and self._time is None) or cls.rhs is not RCRFormulation.rhs
                or cls.post_step is not RCRFormulation.post_step
                or cls._close is not RCRFormulation._close or cls.evaluate not in self._own_evaluations
                or not hasattr(K.dynamics, "overloads")):
            return None
        if self._row_kernels is None:
            self._row_kernels = self._bind_rows()
        return self._row_kernels

    def _bind_rows(self) -> RowKernels:
        """:meth:`row_kernels`, bound to this partition's arrays."""
        m = self.model
        positions, dynamics = self._kernels()
        A, acc, react = np.empty((m.nb, 6)), np.empty((m.nb, 6)), np.empty((m.nj, 6))
        arrays = (self.x, self.R, self.V, acc, self.jq, self.P, react)
        frames = Frames(self.x, self.R, self.V, self.P, _NO_SUBSPACE)
        lam = np.zeros(self.ncr + self.njr)
        args = (self.ca, reaction_model(m, drivers=self.ndr > 0), frames, A, self.Fext, lam, react)
        reactions = (native_address(multiplier_reactions, *args), args)
        lx, singular, tick = self.part.lx, np.zeros(1), np.zeros(6)
        post = None
        if self.ncr or self.ndr or self._superpose:  # as post_step: loops or drivers' rows to close, drivers to hold
            post = StateKernel(close_post, (
                self.mk, np.int64(m.nq), (positions.native(1), positions.desc), lx, np.int64(m.nb), m.nv_j, self.phi,
                self._blocks(), K.NewtonScratch(self.w, self.dq, np.zeros(self.phi.shape[0])), self.nu, self.w,
                float(config.PROJECTION_TOL), np.int64(config.PROJECTION_MAX_ITER), self._search_below,
                self.stages_lowest, singular, tick, self._hold_table(), self._block_ends, float(DEAD_POINT_RANGE)))
        own = (self._search_below, self._block_ends) if post is not None else ()
        # the drivers' efforts: the superposition's torques (rcr), or minus their rows' multipliers (embedding)
        efforts = (self.effort, 1.0) if self._superpose else (lam[lam.shape[0] - self.ndr:], -1.0) if self.ndr else None
        if not self.ncr and not self.njr:
            check = StateKernel(output_check, (reactions, self.vdot, self.v, self.a, self.x, self.V, A, acc))
            return RowKernels(positions, dynamics, check, arrays, np.array([1.0, 1.0]), split=True, reuse=True,
                              tick=tick, own=own, split_post=post, efforts=efforts, time=self._time)
        mult, health = self._multipliers(), np.zeros(2)
        check = StateKernel(loop_check, (
            (mult.native(), mult.desc), reactions, self.vdot, self.v, self.a, self.x, self.V, A, acc, lam,
            (np.int64(m.nb), m.pred, m.succ, lx.row_adr, m.nc_j, self.GA, self.GB, self.g0),
            float(self.residual_rtol), self.cut_spring, self.jq, self.jq_ref, lx, self.tau, health))
        binding = self._binding

        def before():
            singular[0] = 1.0 if self._sing_samples else 0.0

        def after():
            self.block_conditioning = float(health[1])

        return RowKernels(positions, dynamics, check, arrays, health, split=True, tick=tick, own=own, before=before,
                          after=after, reuse=True, split_post=post, valid=lambda: self._binding is binding,
                          efforts=efforts, time=self._time, defer=lambda: bool(self._sing_samples))

    def _hold_table(self) -> tuple:
        """:meth:`_hold_drivers` as :func:`.rcr_rows.close_post` calls it: ``dense``'s
        projector (address, table, clock, its rows' Phi, K and nu), the time, its operations
        (CLOSURE, PROJECT, the projection's flags) and a count of its projections; a table of
        that type, never called, without drivers to hold."""
        ops = (float(dense_solve.CLOSURE), float(dense_solve.PROJECT), float(dense_solve.PROJECT_VELOCITIES))
        if not self._superpose:
            return (0, np.zeros((0, NCOL), dtype=np.int64), np.zeros(4), np.zeros(0), np.zeros((0, 0)), np.zeros(0),
                    np.zeros(1), ops, np.zeros(1))
        proj = self._projector()
        pw = proj.work
        return proj._k.native(), proj._k.desc, pw.clock, pw.phi, pw.K, pw.nu, self._time, ops, np.zeros(1)

    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        q = y[: m.nq]
        self._solve(t, q, y[m.nq:])
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        A = np.empty_like(self.a)  # about the origin -> about each COM: lin += alpha x c
        com_accelerations(self.a, self.x, A)
        if self.ncr:
            check_consistent(t, *self._closure_residual(), self.residual_remedy, self.residual_rtol)
        reactions = self._reactions(A)
        extra = {"vdot": self.vdot.copy(), "q": q.copy(), "v": self.v.copy()}
        if self._superpose:
            extra["driver_effort"] = self.effort.copy()
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(),
                          acc=classical_accelerations(self.V, A), P=self.P.copy(), reactions=reactions,
                          jq=self.jq.copy(), extra=extra)

    def _reactions(self, A) -> np.ndarray:
        """Joint wrenches at an output instant, from the multipliers
        (:func:`.rcr_rows.loop_multipliers`: coordinate reduction never forms them in the
        step) and the accelerations ``A`` about each COM.  Output instants only."""
        m = self.model
        lam = np.zeros(self.ncr + self.njr)
        if lam.shape[0]:
            self._multipliers()(lam, lam)
        self._lam = lam
        return reactions_from_multipliers(m, self.ca, self.x, self.R, self.V, self.P, A, self.Fext, lam,
                                          drivers=self.ndr > 0)

    def _multipliers(self) -> StateKernel:
        """:func:`.rcr_rows.loop_multipliers` with this partition's arrays (rebuilt after
        :meth:`_use`): called with the multipliers' array (twice: ``out`` is unused), from
        the accelerations about the origin in the workspace.  The constant joint-space rows
        after the cut rows: the file's gears (dense's rows, order and scale), then the
        drivers' ``e_J`` (embedding)."""
        if self._multipliers_kernel is None:
            m, lx = self.model, self.part.lx
            nr = self.ncr + self.njr
            Kc = np.zeros((self.njr, m.nv))
            if self.njr:
                Kc[: m.ng] = coupling_rows(m, m.q_zero())[1]
            for i in range(self.ndr):
                Kc[self.njr - self.ndr + i, m.v_adr[m.d_joint[i]]] = 1.0
            scratch = (np.zeros((m.nb, 6, 6)), np.zeros((m.nb, 6)), np.zeros((m.nb, 6)))  # I6, p6, F
            self._multipliers_kernel = StateKernel(loop_multipliers, (
                self.a, m.mass, m.inertia, self.x, self.R, self.V, self.Fext, *scratch, m.parent, self.S6, lx.col_joint,
                lx, self.Kval, Kc, np.zeros((nr, m.nv)), np.zeros(m.nv), float(config.RANK_RTOL), not self.njr, self.Qf,
                self.tau, self.part.colscale))
        return self._multipliers_kernel

    def _closure_residual(self):
        """(largest acceleration residual of the cut rows, the scale of its terms):
        :func:`.rcr_rows.closure_residual`, as the row loop's check computes it."""
        m = self.model
        return closure_residual(m.nb, m.pred, m.succ, self.part.lx.row_adr, m.nc_j, self.GA, self.GB, self.g0,
                                self.a)


#: the evaluations the row kernels do (:meth:`RCRFormulation.row_kernels`; ``embedding`` adds
#: its own, the same on an open tree); another -- a subclass's, a double patched onto the
#: class -- leaves the rows to Python
RCRFormulation._own_evaluations = (RCRFormulation.evaluate,)


@njit(cache=True, nogil=True, _nrt=False)
def output_check(desc, proto, y, out):
    """What :meth:`RCRFormulation.evaluate` does on an open tree after the positions and
    dynamics kernels, for the compiled row loop (:class:`.base.RowKernels`): False where
    it would raise (accelerations or speeds not finite), else the spatial accelerations
    about each centre of mass (``a`` is about the origin: lin += alpha x c, as numpy's
    ``cross`` computes it), the reactions (``multiplier_reactions`` by address with no
    multipliers, ``reactions``) and the classical accelerations.  ``y``, ``out``: unused."""
    reactions, vdot, v, a, x, V, A, acc = unpack(desc, proto)
    for i in range(vdot.shape[0]):
        if not (np.isfinite(vdot[i]) and np.isfinite(v[i])):
            return False
    com_accelerations(a, x, A)
    ok = call_void(reactions[0], reactions[1])
    classical_into(V, A, acc)
    return ok

