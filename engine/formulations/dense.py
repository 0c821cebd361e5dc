"""Formulation ``dense``: the O(n^3) textbook reference.

Tree joint coordinates ``q`` (quaternions for spherical joints) and
velocities ``v``; the joint-space mass matrix by the composite-rigid-body
algorithm, the bias forces by a recursive Newton-Euler pass, loop closures
from the absolute-coordinate constraints of the cut joints
(:mod:`engine.constraints`), and the Lagrange multipliers from a dense
least-squares solve, so redundant closure equations need no special case:

    M vdot + K^T lam = -h,     K vdot = gamma
    (K M^-1 K^T) lam = -K M^-1 h - gamma      (minimum-norm least squares)

Stabilisation by projection (on by default): at every output instant the
positions are brought back onto ``Phi_cut(q) = 0`` by mass-weighted
Gauss-Newton steps and the velocities are projected mass-orthogonally onto
``K v = 0`` (docs/derivations.md, "Dense reference").

Gear couplings (docs/file-format.md, "Mechanism file") are further rows of the same system, after
the cut joints' rows: ``K_g`` (+1 at the driver's velocity, -mu at the driven's),
``gamma_g = 0`` and ``Phi_g`` from :func:`engine.constraints.coupling_rows`; their
multipliers act as joint torques (forces) on the two geared joints.  Drivers (docs/file-format.md,
"Drivers") are rows after the gears': ``K_d = e_J``, ``Phi_d = q_J - (f(t) - f(0))``, the
velocity constraint ``K_d v = f'(t)`` and ``gamma_d = f''(t)``; minus a driver's multiplier is its
effort, the generalized force it applies along its joint (docs/derivations.md, "Drivers").

Nothing here is shared with the divide-and-conquer machinery: only the model,
the joint kinematics and the constraint functions, each tested on its own.  The numba
passes (mass matrix, force balances, closure rows) are in :mod:`.dense_kernels`; the
right-hand side, the closure's filtered least squares, the projection steps and whole
runs of rk4 steps, each one kernel call, in :mod:`.dense_solve`.
"""

from __future__ import annotations

import numpy as np

from .. import config
from ..constraints import con_arrays
from ..errors import SingularSystemError
from ..forces import force_arrays, spring_joints
from ..initial import initial_state, tree_velocities
from ..kinematics import fk_positions, kin_arrays, motion_subspace
from ..model import Model
from .base import Evaluation, Formulation, RowKernels, StateKernel, check_consistent
from . import dense_data as data
from . import dense_linalg as linalg
from . import dense_solve as solve
from .dense_kernels import Frames, ReactionModel, multiplier_reactions


class DenseFormulation(Formulation):
    name = "dense"
    title = "dense reference (joint coordinates, Lagrange multipliers)"
    kind = "ode"
    parameters = ("projection",)
    honours_couplings = True
    honours_drivers = True
    summary = ("The O(n^3) textbook method: slow, independent of the divide-and-conquer "
               "machinery; the reference the other formulations are checked against.")
    #: what :func:`.base.check_consistent` adds to its refusal
    residual_remedy = (", or the filter that crosses singular configurations acted where the loops only pass near one "
                       "(their conditioning near 1e-4; docs/derivations.md, \"What the widened filter costs a near "
                       "pass\"): dca and hdca, which have no filter, run such a pass exactly")

    def __init__(self, model: Model, settings, plan=None, projector: bool = False):
        """With ``projector``, the formulation another one projects its state with
        (:meth:`project_state`, :meth:`closure_residuals`, :meth:`singularity`): its kernel
        entry has those operations alone, and compiles in a fraction of the time."""
        super().__init__(model, settings, plan)
        m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        self.spring_joints = spring_joints(m)
        self.cut_spring = np.array([j for j in self.spring_joints if j >= m.nb], dtype=np.int64)
        proj = getattr(settings, "projection", None)
        self._project = (m.ncut > 0 or m.ng > 0 or m.nd > 0) if proj is None else bool(proj)
        ncut_rows = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
        self.ncut_rows = ncut_rows  # rows of the cut joints; the gear rows follow, then the drivers'
        self.ncr = ncut_rows + m.ng + m.nd  # all constraint rows
        # the workspace the kernels fill (dense_data.DenseWork says what each array holds);
        # its arrays are this object's attributes too
        self.work = w = data.dense_work(m.nb, m.nj, m.nq, m.nv, ncut_rows, m.ng + m.nd)
        self.x, self.R, self.P, self.S, self.V, self.c, self.A = w.x, w.R, w.P, w.S, w.V, w.c, w.A
        self.Fext, self.Fbody, self.fj, self.h, self.tau, self.M = w.Fext, w.Fbody, w.fj, w.h, w.tau, w.M
        self.jq, self.jq_ref = w.jq, w.jq_ref
        self.K, self.Kabs, self.gamma, self.phi, self.lam = w.K, w.Kabs, w.gamma, w.phi, w.lam
        # each gear row is solved as gear_scale * (K_g, Phi_g), so that in the mass-whitened
        # metric it weighs as much as the loop rows (set in initial_state; lam is unscaled)
        self.gear_scale = np.ones(m.ng)
        self.driver_scale = np.ones(m.nd)  # likewise for the driver rows
        self.dm = data.DenseModel(
            self.mk, self.ca, self.fa, m.mass, m.inertia, m.nv_j,
            np.array([j for j in self.spring_joints if j < m.nb], dtype=np.int64), self.cut_spring,
            data.Gears(m.g_driver.astype(np.int64), m.g_driven.astype(np.int64), m.g_ratio.astype(float),
                        m.g_q0.astype(float).reshape(m.ng, 2), self.gear_scale),
            data.Drivers(m.d_joint.astype(np.int64), m.d_motion, m.d_f0.astype(float), self.driver_scale),
            reaction_model(m, drivers=True), np.int64(ncut_rows), self._project,
        )
        #: the kernels' entry point, with the workspace as one table (dense_solve.entry)
        self._k = StateKernel(solve.projection_entry if projector else solve.entry, (self.dm, w))
        self._none = np.zeros(0)  # the entry's second array where an operation takes one
        self._cache_y = None
        self._cache = None
        #: rank of the closure equations, decided once at the file's configuration
        w.rank[0] = self.closure_rank() if self.ncr else 0

    @property
    def rank(self) -> int:
        return int(self.work.rank[0])

    @property
    def mu_rel(self) -> float:
        """The filter width of :func:`.dense_linalg.filter_factors` in use (:meth:`watch_singular`)."""
        return float(self.work.watch[data.MU_REL])

    @mu_rel.setter
    def mu_rel(self, value: float) -> None:
        self.work.watch[data.MU_REL] = value

    @property
    def near_singular(self) -> bool:
        """Crossing a singular configuration (:meth:`watch_singular`)."""
        return bool(self.work.watch[data.NEAR])

    @property
    def residual(self) -> float:
        """Acceleration residual of the last least-squares solve, and its scale."""
        return float(self.work.stats[data.RESIDUAL])

    @property
    def residual_scale(self) -> float:
        return float(self.work.stats[data.RESIDUAL_SCALE])

    # ------------------------------------------------------------------ state
    def initial_state(self) -> np.ndarray:
        m = self.model
        ini = initial_state(m)
        self.initial = ini
        q = m.q_zero()
        fk_positions(self.mk, q, self.x, self.R, self.P)
        motion_subspace(self.mk, q, self.R, self.S)
        v = tree_velocities(m, ini.V, self.x, self.R, self.P)
        if m.ng or m.nd:
            self._scale_gear_rows(q, v)
        return np.concatenate([q, v])

    def _scale_gear_rows(self, q, v):
        """Row scales of the gear rows: a gear row (+1, -mu) of the mass-whitened system is
        often far longer than the loop rows (|.| 24.9 against a largest loop singular value
        of 2.26 in fourbar-geared), which would make s_min/s_max -- the monitor's singularity
        measure and the width of the least squares' filter -- a matter of units.  Scaling a row does
        not change the constrained solution; each gear row is scaled at t = 0 to the
        largest singular value of the whitened loop rows -- 1 without loops, and where every
        loop row is round-off (a loop joint redundant with the tree: a second weld between
        two welded bodies), whose scale would put the gears and drivers under the round-off
        floor, and the filter would drop them."""
        self.work.geometry[0] = 0.0  # the scales are part of K
        self.gear_scale[:] = 1.0
        self.driver_scale[:] = 1.0
        self._cut_phi_K(q, v)
        L = self._cholesky()
        Kt = self._whitened_K(L)
        nc, ng = self.ncut_rows, self.model.ng
        ref = float(linalg.singular_values(Kt[:nc])[0]) if nc else 1.0
        if not ref > self._floor(L):
            ref = 1.0
        scale = ref / np.linalg.norm(Kt[nc:], axis=1)  # the drivers' rows likewise
        self.gear_scale[:] = scale[:ng]
        self.driver_scale[:] = scale[ng:]
        self.work.geometry[0] = 0.0

    def closure_rank(self) -> int:
        """The rank of the closure equations (cut rows and gear rows) at the file's
        configuration, where every loop closes: the number of singular values of the
        mass-whitened Jacobian above ``RANK_RTOL`` of the largest and above the round-off
        floor.  Redundant rows sit at round-off there (1e-16 relative); every least-squares
        solve and projection then keeps this many directions (:func:`.dense_linalg.filter_factors`), so the
        decision is the mechanism's, not one state's.  Leaves the workspace at that
        configuration."""
        m = self.model
        self._cut_phi_K(m.q_zero(), np.zeros(m.nv))
        L = self._cholesky()
        floor = self._floor(L)
        sv = linalg.singular_values(self._whitened_K(L))
        if sv.size == 0 or sv[0] == 0.0:
            return 0
        return int(np.sum(sv > max(config.RANK_RTOL * sv[0], floor)))

    def _split(self, y):
        m = self.model
        return y[: m.nq], y[m.nq:]

    # --------------------------------------------------------------- kernels
    def _raise(self, status: int) -> None:
        """The error a kernel's status stands for (:mod:`.dense_solve`)."""
        t = float(self.work.stats[data.T_FAILED])
        if status == solve.NOT_POSITIVE_DEFINITE:
            raise SingularSystemError(t, "joint-space mass matrix is not positive definite")
        if status == solve.NOT_AN_OPERATION:
            raise TypeError("a dense projector projects and measures; it does not integrate")
        raise SingularSystemError(t, "accelerations are not finite")

    def _call(self, op: int, a, b=None, clock=()) -> float:
        """Operation ``op`` of :func:`.dense_solve.entry` on ``a`` (and ``b``), ``clock``
        first into the workspace's clock; raises what a failed status stands for."""
        c = self.work.clock
        c[:len(clock)] = clock
        c[3] = op
        status = self._k(a, self._none if b is None else b)
        if status and op != solve.SINGULARITY:
            self._raise(int(status))
        return status

    def _dynamics(self, t, y):
        """Accelerations ``vdot`` and multipliers ``lam`` at ``(t, y)`` (:func:`.dense_solve.dynamics`):

            L L^T = M,  u0 = -L^-1 h,  Kt = K L^-T
            Kt = U S V^T,  z = V f(S) U^T (Kt u0 - gamma),  vdot = L^-T (u0 - z),  lam = U f(S) V^T z

        -- the mass-orthogonal correction, solved on ``Kt`` itself rather than on
        ``K M^-1 K^T`` so that a singular configuration amplifies round-off by 1/d, not
        1/d^2.  In a singular configuration the closure equations lose a direction: the
        least-squares solution then gives the instantaneous dynamics of the freed direction,
        and any residual shows in violation.acceleration.  Without closure rows, one step of
        iterative refinement of ``M vdot = -h`` with the residual by Newton-Euler: the
        Cholesky solve alone is only as accurate as ``M``, whose condition grows fast with a
        chain's length (docs/derivations.md, "Iterative refinement")."""
        y = np.ascontiguousarray(y, dtype=float)
        self._call(solve.DYNAMICS, y, clock=(t,))
        m = self.model
        return y[: m.nq], y[m.nq:], self.work.vdot

    def rhs(self, t, y):
        self.nfev += 1
        y = np.ascontiguousarray(y, dtype=float)
        self.work.clock[0] = t
        self.work.clock[3] = solve.RHS
        out, status = self._k.rates(y)
        if status:
            self._raise(int(status))
        self._cache_y = y.copy()
        self._cache = (t, self.work.vdot.copy(), self.lam.copy())
        return out

    def rk4_steps(self, t0: float, t1: float, y: np.ndarray, n: int) -> np.ndarray:
        """``n`` rk4 steps from ``(t0, y)`` to ``t1`` in one kernel call (:func:`.dense_solve.rk4_steps`,
        step for step the arithmetic of the generic loop), unless a subclass changed what a
        step calls."""
        cls = type(self)
        if (cls.rhs is not DenseFormulation.rhs or cls.post_step is not DenseFormulation.post_step
                or cls.watch_singular is not DenseFormulation.watch_singular):
            return super().rk4_steps(t0, t1, y, n)
        out = np.array(y, dtype=float)
        count = self.work.stats[data.RHS_COUNT]
        try:
            self._call(solve.RK4, out, clock=(t0, t1, n))
        finally:
            self.nfev += int(self.work.stats[data.RHS_COUNT] - count)
            self._cache_y = None
        return out

    # ------------------------------------------------------------ projection
    @property
    def projects(self) -> bool:
        return self._project

    def _closure_rows(self, q, v, t=0.0):
        """Kinematics, Phi and K at (q, v) and time ``t`` (the drivers'), without the mass matrix."""
        self._call(solve.CLOSURE, np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(v, dtype=float),
                   clock=(t,))

    def closure_residuals(self, q, v, t=0.0) -> tuple[float, float]:
        """The largest closure residual of the positions ``q`` and of the velocities ``v``
        (cut joints, gears, drivers at time ``t``): what decides whether :meth:`project_state`
        has work to do.  O(n) per loop; no mass matrix."""
        if not self.ncr:
            return 0.0, 0.0
        self._closure_rows(q, v, t)
        v = np.ascontiguousarray(v, dtype=np.float64)
        return float(np.abs(self.phi).max()), float(linalg.velocity_residual(self.K, v, self.work.nu))

    def _cut_phi_K(self, q, v, t=0.0):
        """Kinematics, Phi, K and M at (q, v) and time ``t`` (for the projections)."""
        self._call(solve.CUT_PHI_K, np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(v, dtype=float),
                   clock=(t,))

    def _cholesky(self, t=0.0):
        """The lower Cholesky factor ``L`` of the workspace's mass matrix (``M = L L^T``);
        a :class:`SingularSystemError` at time ``t`` if ``M`` is not positive definite."""
        self.work.geometry[0] = 0.0  # written here, outside the kernels' account of it
        if not linalg.cholesky(self.M, self.work.L):
            raise SingularSystemError(t, "joint-space mass matrix is not positive definite")
        return self.work.L

    def _whitened_K(self, L):
        """K L^-T: the loop Jacobian in mass-whitened velocity coordinates."""
        self.work.geometry[0] = 0.0
        linalg.whiten(L, self.K, self.work.Kt)
        return self.work.Kt

    def _floor(self, L) -> float:
        """The singular value of the whitened K below which it is round-off (:func:`.dense_linalg.roundoff_floor`)."""
        return linalg.roundoff_floor(L, self.Kabs, self.work.u)

    def _apply_increment(self, q, dv):
        """q (+) dv (:func:`.dense_solve.apply_increment`), a new array."""
        q = np.array(q, dtype=float)
        solve.apply_increment(self.dm, q, np.ascontiguousarray(dv, dtype=float))
        return q

    def project_state(self, q, v, velocities: bool = True, iterations: int = config.PROJECTION_MAX_ITER,
                      t: float = 0.0, rows_done: bool = False):
        """Mass-orthogonal projection of (q, v) onto Phi = 0 and K v = nu at time ``t`` (with
        ``velocities`` False: of the positions alone, ``v`` returned as given).

        The stabilisation of every joint-coordinate formulation that does not close its loops
        at the position level (dense, dca, hdca: docs/derivations.md, "Projection"): mass-
        weighted Gauss-Newton steps on the positions, then the velocities' mass-orthogonal
        projection (:func:`.dense_solve.project_state`).  Leaves the workspace (kinematics,
        K, and M with the velocities) at the projected state.  ``rows_done``:
        :meth:`closure_residuals` was the last call, at this ``(q, v, t)`` (its rows are reused).
        """
        q = np.array(q, dtype=float)
        v = np.array(v, dtype=float)
        flags = (solve.PROJECT_VELOCITIES if velocities else 0) | (solve.PROJECT_ROWS_DONE if rows_done else 0)
        self._call(solve.PROJECT, q, v, clock=(t, iterations, float(flags)))
        return q, v

    def post_step(self, t, y):
        y = np.array(y, dtype=float)
        self._call(solve.POST_STEP, y, clock=(t,))
        return y

    def loop_singular_values(self, y) -> np.ndarray:
        """Singular values of the mass-whitened loop Jacobian at state ``y`` that are not
        redundancies, largest first (empty without loops)."""
        if not self.ncr:
            return np.zeros(0)
        q, v = self._split(y)
        self._cut_phi_K(q, v)
        L = self._cholesky()
        s = linalg.singular_values(self._whitened_K(L))[:self.rank]
        if s.size == 0 or s[0] == 0.0:
            return np.zeros(0)
        return s

    def mobility(self, y) -> float:
        return self.singularity(y)

    def singularity(self, y) -> float:
        """Distance measure to a singular configuration: the smallest singular value of
        the mass-whitened loop Jacobian that is not a redundancy, over the largest."""
        s = self._call(solve.SINGULARITY, np.ascontiguousarray(y, dtype=float), clock=(0.0,))
        if np.isnan(s):
            self._raise(solve.NOT_POSITIVE_DEFINITE)
        return float(s)

    def watch_singular(self, t, y) -> None:
        """Track the singularity measure over accepted steps (called by the integrators).

        A *crossing* is a singular configuration being approached or left: measure
        below SINGULAR_WINDOW and at most CROSSING_TIME away at its current rate.
        Only then is the filter of :func:`.dense_linalg.filter_factors` widened to DENSE_FILTER_RTOL; a
        mechanism that merely stays ill-conditioned keeps the narrow base width
        DENSE_BASE_FILTER_RTOL (exact to (mu/sigma)^8 on its live directions).
        """
        self._call(solve.WATCH, np.ascontiguousarray(y, dtype=float), clock=(t,))

    def stats(self) -> dict:
        """:meth:`.base.Formulation.stats`, and where the filter was widened at a measure low
        enough for a near pass to be off by more than ``DENSE_NEAR_PASS_REPORT``: that
        measure (``filtered_loop_conditioning``), its time (``t_filtered``) and the
        relative change ``(mu/s)^8`` of the force it would have made (``near_pass_error``,
        at most 1) -- exact where a singular configuration is crossed there, not where the
        loops only pass near one (docs/derivations.md, "What the widened filter costs a
        near pass")."""
        out = super().stats()
        s = float(self.work.watch[data.FILTERED])
        change = min((config.DENSE_FILTER_RTOL / s) ** 8, 1.0) if s > 0.0 else 1.0
        if change > config.DENSE_NEAR_PASS_REPORT:
            out.update(filtered_loop_conditioning=s, t_filtered=float(self.work.watch[data.T_FILTERED]),
                       near_pass_error=change)
        return out

    def health(self) -> dict:
        """The singularity measure of the last accepted step (:meth:`watch_singular` computes it
        for its own step control; nothing is recomputed here)."""
        if not self.work.watch[data.HAS_PREV]:
            return {}
        return {"loop_conditioning": float(self.work.watch[data.S_PREV])}

    def step_bound(self, t, y) -> float | None:
        """Largest step the integrator may take from (t, y), or None for no bound.

        While a singular configuration is approached (see :meth:`watch_singular`), the step
        is limited so that the measure falls by at most SINGULAR_STEP_FRACTION of
        itself per step: the drift of Runge-Kutta stage states (~h^2) then stays far
        below their distance to the singular configuration (~h), so the filtered
        solve and the projections cannot pick another branch.
        """
        self.watch_singular(t, y)
        wt = self.work.watch
        if not self.near_singular or wt[data.RATE] <= 0.0:
            return None
        s = float(wt[data.S_PREV])
        if s < 10.0 * config.DENSE_FILTER_RTOL:
            return None  # inside the filtered window: cross it freely
        return config.SINGULAR_STEP_FRACTION * s / float(wt[data.RATE])

    def rates_kernel(self):
        """:meth:`.base.Formulation.rates_kernel`: the operations kernel's RHS, where
        :meth:`rhs` is this class's own.  The drivers' rows are the kernel's own, at the
        time in its clock, which the compiled steps set to each stage's time as :meth:`rhs`
        sets ``t``."""
        from .erk_kernel import OPERATION, Rates

        if ("rhs" in vars(self) or type(self).rhs is not DenseFormulation.rhs
                or self._k.kernel is not solve.entry):
            return None
        return Rates(self._k, OPERATION, self, self.work.clock, solve.RHS)

    # --------------------------------------------------------------- output
    def row_kernels(self):
        """The compiled row loop's kernels (:meth:`.base.Formulation.row_kernels`): the
        operations kernel's RK4 and EVALUATE, and :func:`.dense_solve.output_check`;
        not where a subclass changed what a step calls.  With drivers, their efforts are
        minus the driver rows' multipliers (as :meth:`evaluate` reports them)."""
        cls, m, w = type(self), self.model, self.work
        if (cls.rhs is not DenseFormulation.rhs or cls.post_step is not DenseFormulation.post_step
                or cls.watch_singular is not DenseFormulation.watch_singular
                or cls.evaluate is not _OWN_EVALUATE or self._k.kernel is not solve.entry):
            return None
        health = np.zeros(2)
        check = StateKernel(solve.output_check, (
            w.stats, w.watch, float(self.residual_rtol), self.ncr > 0, self.cut_spring, w.jq, w.jq_ref,
            health))
        return RowKernels(self._k, None, check, (w.x, w.R, w.V, w.acc_out, w.jq, w.P, w.react), health,
                          w.clock, (solve.RK4, solve.EVALUATE), lambda: int(w.stats[data.RHS_COUNT]),
                          (w.watch, w.jq_ref), efforts=(self.lam[self.ncr - m.nd:], -1.0) if m.nd else None)

    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        y = np.ascontiguousarray(y, dtype=float)
        w = self.work
        cached = self._cache_y is not None and self._cache[0] == t and np.array_equal(self._cache_y, y)
        if cached:  # the last right-hand side was this state's
            w.vdot[:] = self._cache[1]
            self.lam[:] = self._cache[2]
        self._call(solve.EVALUATE, y, clock=(t, 1.0 if cached else 0.0))
        if self.ncr:
            check_consistent(t, self.residual, self.residual_scale, self.residual_remedy, self.residual_rtol)
        # update the branch reference of cut-joint spring angles
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(), acc=w.acc_out.copy(),
                          P=self.P.copy(), reactions=w.react.copy(), jq=self.jq.copy(),
                          extra={"vdot": w.vdot.copy(), "q": y[: m.nq].copy(), "v": y[m.nq:].copy(),
                                 "driver_effort": -self.lam[self.ncr - m.nd:].copy()})


#: the evaluation the row kernels do (:meth:`DenseFormulation.row_kernels`); another -- a subclass's
#: or a double patched onto the class -- leaves the rows to Python
_OWN_EVALUATE = DenseFormulation.evaluate


def reaction_model(model: Model, drivers: bool = False) -> ReactionModel:
    """What :func:`.dense_kernels.multiplier_reactions` reads of ``model``.  With ``drivers``
    (multipliers that hold the driver rows after the gear rows), each driver is a gear of
    its joint with itself and ratio 0: its row ``e_J`` and its effort ``-lam`` on joint J."""
    m = model
    if not drivers or not m.nd:
        return ReactionModel(m.parent, m.mass, m.inertia, m.jtype, m.axis_pred, m.g_driver, m.g_driven, m.g_ratio)
    # read-only like the model's own arrays: numba types the two apart, and a writeable
    # triple compiled the whole dense pipeline a second time for driven mechanisms
    rows = (np.concatenate([m.g_driver, m.d_joint]).astype(np.int64),
            np.concatenate([m.g_driven, m.d_joint]).astype(np.int64),
            np.concatenate([m.g_ratio, np.zeros(m.nd)]))
    for a in rows:
        a.setflags(write=False)
    return ReactionModel(m.parent, m.mass, m.inertia, m.jtype, m.axis_pred, *rows)


def reactions_from_multipliers(model: Model, ca, x, R, V, P, A, Fext, lam, drivers: bool = False) -> np.ndarray:
    """Every joint's wrench on its successor (about its point) from the cut joints'
    multipliers ``lam`` (dense's row order and sign) and the spatial accelerations ``A``
    about each COM: cut joints directly, tree joints from the force balance of each
    subtree with the cut-joint wrenches counted as applied (also used by ``rcr``).

    When ``lam`` also holds the gear rows' multipliers (after the cut rows), each gear's
    generalized force ``-K_g^T lam_g`` acts like a joint torque (force) on its two
    joints: counted as applied, so a geared joint's reaction is its constraint wrench
    alone (no component about a revolute axis), as for any driven joint.  With ``drivers``,
    ``lam`` holds the drivers' rows after the gears' and their efforts count as applied
    too.  One kernel call (:func:`.dense_kernels.multiplier_reactions`)."""
    react = np.empty((model.nj, 6))
    c = np.ascontiguousarray
    multiplier_reactions(ca, reaction_model(model, drivers), Frames(c(x), c(R), c(V), c(P), _NO_SUBSPACE), c(A),
                         c(Fext), c(lam, dtype=float), react)
    return react


#: the motion subspace :func:`reactions_from_multipliers` does not read
_NO_SUBSPACE = np.zeros((0, 6))
