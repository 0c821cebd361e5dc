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
multipliers act as joint torques (forces) on the two geared joints.

Nothing here is shared with the divide-and-conquer machinery: only the model,
the joint kinematics and the constraint functions, each tested on its own.  The numba
passes (mass matrix, force balances, closure rows) are in :mod:`.dense_kernels`; the
closure's filtered least squares, rank and projection steps in :mod:`.dense_projection`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .. import config
from ..constraints import con_arrays, coupling_rows, joint_constraint
from ..errors import SingularSystemError
from ..forces import applied_forces, force_arrays, joint_coordinates_from_poses, spring_joints
from ..initial import initial_state, tree_velocities
from ..kinematics import (
    classical_accelerations, fk_accelerations, fk_positions, fk_velocities, kin_arrays,
    motion_subspace, normalize_quaternions, qdot_from_v, subtree_sums,
)
from ..model import PRISMATIC, Model
from ..spatial import shift_force
from .base import Evaluation, Formulation, check_consistent
from .dense_kernels import Frames, JointRowScratch, LoopRows, body_terms, crba, loop_rows, project_columns
from .dense_projection import (
    apply_increment, cholesky_lower, closure_rank, filtered_lstsq, position_increment, project_velocities,
    roundoff_floor, whitened,
)


class DenseFormulation(Formulation):
    name = "dense"
    title = "dense reference (joint coordinates, Lagrange multipliers)"
    kind = "ode"
    parameters = ("projection",)
    honours_couplings = True
    summary = ("The O(n^3) textbook method: slow, independent of the divide-and-conquer "
               "machinery; the reference the other formulations are checked against.")

    def __init__(self, model: Model, settings, plan=None):
        super().__init__(model, settings, plan)
        m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        self.spring_joints = spring_joints(m)
        self.cut_spring = np.array([j for j in self.spring_joints if j >= m.nb], dtype=np.int64)
        self.jq_ref = np.zeros(m.nj)
        proj = getattr(settings, "projection", None)
        self._project = (m.ncut > 0 or m.ng > 0) if proj is None else bool(proj)
        # workspace (position -> velocity -> acceleration -> constraint)
        self.x = np.zeros((m.nb, 3))  # filled by fk_positions
        self.R = np.zeros((m.nb, 3, 3))  # filled by fk_positions
        self.P = np.zeros((m.nj, 3))  # joint points, fk_positions
        self.S = np.zeros((m.nv, 6))  # motion subspace, motion_subspace
        self.V = np.zeros((m.nb, 6))  # COM twists, fk_velocities
        self.c = np.zeros((m.nb, 6))  # velocity-product terms, fk_velocities
        self.A = np.zeros((m.nb, 6))  # spatial accelerations, fk_accelerations
        self.Fext = np.zeros((m.nb, 6))  # applied wrenches, applied_forces
        self.Fbody = np.zeros((m.nb, 6))  # body force balance, body_terms
        self.fj = np.zeros((m.nb, 6))  # transmitted joint wrenches, _joint_forces
        self.h = np.zeros(m.nv)  # generalized bias forces
        self.tau = np.zeros(m.nv)  # M vdot + h by Newton-Euler, _refined
        self.M = np.zeros((m.nv, m.nv))  # mass matrix, crba
        self.jq = np.full(m.nj, np.nan)
        ncut_rows = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
        self.ncut_rows = ncut_rows  # rows of the cut joints; the gear rows follow
        self.ncr = ncut_rows + m.ng  # all constraint rows
        self.K = np.zeros((self.ncr, m.nv))  # loop Jacobian (cut rows), then gear rows
        self.Kabs = np.zeros((ncut_rows, m.nv))  # round-off scale of the cut rows, loop_rows
        self.gamma = np.zeros(self.ncr)
        self.phi = np.zeros(self.ncr)
        self.lam = np.zeros(self.ncr)
        # each gear row is solved as gear_scale * (K_g, Phi_g), so that in the mass-whitened
        # metric it weighs as much as the loop rows (set in initial_state; lam is unscaled)
        self.gear_scale = np.ones(m.ng)
        self.row_scratch = JointRowScratch(np.zeros((6, 6)), np.zeros((6, 6)), np.zeros(6))  # of loop_rows
        self.residual = 0.0  # acceleration residual of the last least-squares solve
        self.residual_scale = 1.0
        self._cache_y = None
        self._cache = None
        self._sing_prev = None
        self.near_singular = False  # crossing a singular configuration (watch_singular)
        self._sing_rate = 0.0
        self.mu_rel = config.DENSE_BASE_FILTER_RTOL  # filter width of filtered_lstsq (monitor)
        #: rank of the closure equations, decided once at the file's configuration
        self.rank = self.closure_rank() if self.ncr else 0

    # ------------------------------------------------------------------ state
    def initial_state(self) -> np.ndarray:
        m = self.model
        ini = initial_state(m)
        self.initial = ini
        q = m.q_zero()
        fk_positions(self.mk, q, self.x, self.R, self.P)
        motion_subspace(self.mk, q, self.R, self.S)
        v = tree_velocities(m, ini.V, self.x, self.R, self.P)
        if m.ng:
            self._scale_gear_rows(q, v)
        return np.concatenate([q, v])

    def _scale_gear_rows(self, q, v):
        """Row scales of the gear rows: a gear row (+1, -mu) of the mass-whitened system is
        often far longer than the loop rows (|.| 24.9 against a largest loop singular value
        of 2.26 in fourbar-geared), which would make s_min/s_max -- the monitor's singularity
        measure and the width of filtered_lstsq's filter -- a matter of units.  Scaling a row does
        not change the constrained solution; each gear row is scaled at t = 0 to the
        largest singular value of the whitened loop rows (1 without loops)."""
        self.gear_scale[:] = 1.0
        self._cut_phi_K(q, v)
        Kt = self._whitened_K(self._cholesky())
        nc = self.ncut_rows
        ref = float(np.linalg.svd(Kt[:nc], compute_uv=False)[0]) if nc else 1.0
        if not ref > 0.0:
            ref = 1.0
        self.gear_scale[:] = ref / np.linalg.norm(Kt[nc:], axis=1)

    def closure_rank(self) -> int:
        """The rank of the closure equations (cut rows and gear rows) at the file's
        configuration, where every loop closes: the number of singular values of the
        mass-whitened Jacobian above ``RANK_RTOL`` of the largest and above the round-off
        floor.  Redundant rows sit at round-off there (1e-16 relative); every least-squares
        solve and projection then keeps this many directions (:func:`.filtered_lstsq`), so the
        decision is the mechanism's, not one state's.  Leaves the workspace at that
        configuration."""
        m = self.model
        self._cut_phi_K(m.q_zero(), np.zeros(m.nv))
        L = self._cholesky()
        return closure_rank(self._whitened_K(L), self._floor(L))

    def _split(self, y):
        m = self.model
        return y[: m.nq], y[m.nq:]

    # --------------------------------------------------------------- kernels
    def _kinematics(self, q, v):
        fk_positions(self.mk, q, self.x, self.R, self.P)
        motion_subspace(self.mk, q, self.R, self.S)
        fk_velocities(self.mk, self.x, self.P, self.S, v, self.V, self.c)

    def _frames(self) -> Frames:
        """The workspace's kinematics, as :func:`.loop_rows` reads them."""
        return Frames(self.x, self.R, self.V, self.P, self.S)

    def _cut_rows(self) -> LoopRows:
        """The workspace's cut-joint rows (the first ``ncut_rows`` of K, gamma and Phi)."""
        nc = self.ncut_rows
        return LoopRows(self.K[:nc], self.Kabs, self.gamma[:nc], self.phi[:nc])

    def _joint_coords(self, q):
        m = self.model
        for j in self.spring_joints:
            if j < m.nb:
                self.jq[j] = q[m.q_adr[j]]
        if len(self.cut_spring):
            joint_coordinates_from_poses(self.fa, self.cut_spring, self.x, self.R, self.jq_ref, self.jq)

    def _loop_terms(self, A_bias, q):
        """K (loop Jacobian), Phi and gamma = -(Phi_ddot at vdot = 0), cut rows then gear rows."""
        m = self.model
        acc = classical_accelerations(self.V, A_bias)
        loop_rows(self.ca, m.parent, m.v_adr, m.nv_j, m.nb, self._frames(), acc, self._cut_rows(),
                  self.row_scratch)
        self._gear_rows(q)

    def _gear_rows(self, q):
        if self.model.ng:
            nc = self.ncut_rows
            phi, K, gamma = coupling_rows(self.model, q)
            self.phi[nc:] = self.gear_scale * phi
            self.K[nc:] = self.gear_scale[:, None] * K
            self.gamma[nc:] = self.gear_scale * gamma

    def _dynamics(self, t, y):
        m = self.model
        q, v = self._split(y)
        self._kinematics(q, v)
        self.M[:] = 0.0
        crba(m.parent, m.mass, m.inertia, self.R, self.x, self.P, self.S, m.v_adr, m.nv_j, self.M)
        self._joint_coords(q)
        applied_forces(self.fa, self.x, self.R, self.V, self.jq, self.Fext)
        self._newton_euler(np.zeros(m.nv), self.h)  # the bias forces: M vdot + h at vdot = 0
        A_bias = self.A.copy()
        L = self._cholesky(t)
        u0 = scipy.linalg.solve_triangular(L, -self.h, lower=True)
        if self.ncr:
            self._loop_terms(A_bias, q)
            Kt = self._whitened_K(L)
            floor = self._floor(L)
            # min |u - u0| s.t. Kt u = gamma, with u = L^T vdot (M = L L^T): the mass-
            # orthogonal correction, solved on Kt itself rather than on K M^-1 K^T so
            # that a singular configuration amplifies round-off by 1/d, not 1/d^2
            z = filtered_lstsq(Kt, Kt @ u0 - self.gamma, self.mu_rel, floor, self.rank)
            u = u0 - z
            vdot = scipy.linalg.solve_triangular(L, u, lower=True, trans="T")
            self.lam[:] = filtered_lstsq(Kt.T, z, self.mu_rel, floor, self.rank)
            self.lam[self.ncut_rows:] *= self.gear_scale  # the gear rows' own multipliers
            # In a singular configuration the closure equations lose a direction: the
            # least-squares solution then gives the instantaneous dynamics of the freed
            # direction, and any residual shows in violation.acceleration.
            self.residual = float(np.abs(self.K @ vdot - self.gamma).max())
            self.residual_scale = float(max(np.abs(self.gamma).max(), np.abs(self.K @ vdot).max()))
        else:
            vdot = self._refined(L, scipy.linalg.solve_triangular(L, u0, lower=True, trans="T"))
        if not np.all(np.isfinite(vdot)):
            raise SingularSystemError(t, "accelerations are not finite")
        return q, v, vdot

    def _refined(self, L, vdot):
        """``vdot`` after one step of iterative refinement of ``M vdot = -h``, the residual
        by the recursive Newton-Euler pass that gave ``h``.

        The Cholesky solve is only as accurate as ``M``, whose condition grows fast with a
        chain's length (3.5e8 for 256 spherical bodies, 5.5e9 for 1024): the solve alone was
        1.7e-10 and 5.9e-9 relative from the recursive formulations there.  The residual
        ``M vdot + h``, evaluated body by body from ``vdot`` instead of through ``M``,
        carries only the round-off of the recursion; one solve with the same factor removes
        the rest (docs/derivations.md, section 5, "Iterative refinement").  A second step
        changes ``vdot`` by less than 1e-14.
        """
        self._newton_euler(vdot, self.tau)
        return vdot - scipy.linalg.cho_solve((L, True), self.tau)

    def _newton_euler(self, vdot, out):
        """``out = M vdot + h``, body by body (recursive Newton-Euler): the bodies'
        accelerations from ``vdot`` into ``A``, their force balances into ``Fbody``, the
        subtrees' sums into ``fj``, projected on the joints' freedoms."""
        m = self.model
        fk_accelerations(self.mk, self.x, self.P, self.S, self.c, vdot, self.A)
        body_terms(m.mass, m.inertia, self.R, self.V, self.A, self.Fext, self.Fbody)
        subtree_sums(m.parent, self.x, self.P, self.Fbody, self.fj)
        project_columns(m.nb, m.v_adr, m.nv_j, self.S, self.fj, out)

    def rhs(self, t, y):
        self.nfev += 1
        m = self.model
        q, v, vdot = self._dynamics(t, y)
        self._cache_y = y.copy()
        self._cache = (t, vdot.copy(), self.lam.copy())
        qd = np.empty(m.nq)
        qdot_from_v(self.mk, q, v, qd)
        return np.concatenate([qd, vdot])

    # ------------------------------------------------------------ projection
    @property
    def projects(self) -> bool:
        return self._project

    def _closure_rows(self, q, v):
        """Kinematics, Phi and K at (q, v), without the mass matrix."""
        m = self.model
        self._kinematics(q, v)
        loop_rows(self.ca, m.parent, m.v_adr, m.nv_j, m.nb, self._frames(), np.zeros((m.nb, 6)), self._cut_rows(),
                  self.row_scratch)
        self._gear_rows(q)

    def closure_residuals(self, q, v) -> tuple[float, float]:
        """The largest closure residual of the positions ``q`` and of the velocities ``v``
        (cut joints and gears): what decides whether :meth:`project_state` has work to do.
        O(n) per loop; no mass matrix."""
        if not self.ncr:
            return 0.0, 0.0
        self._closure_rows(q, v)
        return float(np.abs(self.phi).max()), float(np.abs(self.K @ v).max())

    def _cut_phi_K(self, q, v):
        """Kinematics, Phi, K and M at (q, v) (for the projections)."""
        m = self.model
        self._closure_rows(q, v)
        self.M[:] = 0.0
        crba(m.parent, m.mass, m.inertia, self.R, self.x, self.P, self.S, m.v_adr, m.nv_j, self.M)

    def _apply_increment(self, q, dv):
        """q (+) dv (:func:`.apply_increment`)."""
        return apply_increment(self.model, q, dv)

    def _cholesky(self, t=0.0):
        """The lower Cholesky factor of the workspace's mass matrix (:func:`.cholesky_lower`)."""
        return cholesky_lower(self.M, t)

    def _whitened_K(self, L):
        """K L^-T: the loop Jacobian in mass-whitened velocity coordinates."""
        return whitened(L, self.K)

    def _floor(self, L) -> float:
        """The singular value of the whitened K below which it is round-off (:func:`.roundoff_floor`)."""
        return roundoff_floor(L, self.Kabs)

    def project_state(self, q, v, velocities: bool = True, iterations: int = config.PROJECTION_MAX_ITER):
        """Mass-orthogonal projection of (q, v) onto Phi_cut = 0 and K v = 0 (with
        ``velocities`` False: of the positions alone, ``v`` returned as given).

        The stabilisation of every joint-coordinate formulation that does not close its loops
        at the position level (dense, dca, hdca: docs/derivations.md, "Projection").  Leaves
        the workspace (kinematics, K, M) at the projected state.
        """
        for _ in range(iterations):
            self._cut_phi_K(q, v)
            if np.abs(self.phi).max(initial=0.0) < config.PROJECTION_TOL:
                break
            L = self._cholesky()
            q = self._apply_increment(q, position_increment(L, self.K, self.phi, self.mu_rel, self._floor(L),
                                                            self.rank))
        else:
            self._cut_phi_K(q, v)
        if not velocities:
            return q, v
        L = self._cholesky()
        return q, project_velocities(L, self.K, v, self.mu_rel, self._floor(L), self.rank)

    def post_step(self, t, y):
        m = self.model
        y = y.copy()
        q, v = y[: m.nq], y[m.nq:]
        normalize_quaternions(self.mk, q)
        if self._project and self.ncr:
            q, v = self.project_state(q, v)
        y[: m.nq] = q
        y[m.nq:] = v
        return y

    def loop_singular_values(self, y) -> np.ndarray:
        """Singular values of the mass-whitened loop Jacobian at state ``y`` that are not
        redundancies, largest first (empty without loops)."""
        if not self.ncr:
            return np.zeros(0)
        q, v = self._split(y)
        self._cut_phi_K(q, v)
        L = self._cholesky()
        s = np.linalg.svd(self._whitened_K(L), compute_uv=False)[:self.rank]
        if s.size == 0 or s[0] == 0.0:
            return np.zeros(0)
        return s

    def mobility(self, y) -> float:
        return self.singularity(y)

    def singularity(self, y) -> float:
        """Distance measure to a singular configuration: the smallest singular value of
        the mass-whitened loop Jacobian that is not a redundancy, over the largest."""
        live = self.loop_singular_values(y)
        return float(live[-1] / live[0]) if live.size else 1.0

    def watch_singular(self, t, y) -> None:
        """Track the singularity measure over accepted steps (called by the integrators).

        A *crossing* is a singular configuration being approached or left: measure
        below SINGULAR_WINDOW and at most CROSSING_TIME away at its current rate.
        Only then is the filter of :func:`.filtered_lstsq` widened to DENSE_FILTER_RTOL; a
        mechanism that merely stays ill-conditioned keeps the narrow base width
        DENSE_BASE_FILTER_RTOL (exact to (mu/sigma)^8 on its live directions).
        """
        if not (self._project and self.ncr):
            return
        s = self.singularity(y)
        prev = self._sing_prev
        self._sing_prev = (t, s)
        rate = 0.0
        if prev is not None and t > prev[0]:
            rate = (prev[1] - s) / (t - prev[0])  # > 0 while approaching
        self._sing_rate = rate
        near = s < config.SINGULAR_WINDOW and abs(rate) > 0.0 and s / abs(rate) < config.CROSSING_TIME
        self.near_singular = near
        self.mu_rel = config.DENSE_FILTER_RTOL if near else config.DENSE_BASE_FILTER_RTOL

    def health(self) -> dict:
        """The singularity measure of the last accepted step (:meth:`watch_singular` computes it
        for its own step control; nothing is recomputed here)."""
        if self._sing_prev is None:
            return {}
        return {"loop_conditioning": self._sing_prev[1]}

    def step_bound(self, t, y) -> float | None:
        """Largest step the integrator may take from (t, y), or None for no bound.

        While a singular configuration is approached (see :meth:`watch_singular`), the step
        is limited so that the measure falls by at most SINGULAR_STEP_FRACTION of
        itself per step: the drift of Runge-Kutta stage states (~h^2) then stays far
        below their distance to the singular configuration (~h), so the filtered
        solve and the projections cannot pick another branch.
        """
        self.watch_singular(t, y)
        if not self.near_singular or self._sing_rate <= 0.0:
            return None
        s = self._sing_prev[1]
        if s < 10.0 * config.DENSE_FILTER_RTOL:
            return None  # inside the filtered window: cross it freely
        return config.SINGULAR_STEP_FRACTION * s / self._sing_rate

    # --------------------------------------------------------------- output
    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        if self._cache_y is not None and self._cache[0] == t and np.array_equal(self._cache_y, y):
            vdot = self._cache[1]
            q, v = self._split(y)
            # workspace still holds this state's kinematics unless projection ran
            self._kinematics(q, v)
            self._joint_coords(q)
            applied_forces(self.fa, self.x, self.R, self.V, self.jq, self.Fext)
            self.lam[:] = self._cache[2]
        else:
            q, v, vdot = self._dynamics(t, y)
        if self.ncr:
            check_consistent(t, self.residual, self.residual_scale)
        # update the branch reference of cut-joint spring angles
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        fk_accelerations(self.mk, self.x, self.P, self.S, self.c, vdot, self.A)
        acc = classical_accelerations(self.V, self.A)
        reactions = self._reactions()
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(), acc=acc,
                          P=self.P.copy(), reactions=reactions, jq=self.jq.copy(),
                          extra={"vdot": vdot.copy(), "q": y[: m.nq].copy(), "v": y[m.nq:].copy()})

    def _reactions(self) -> np.ndarray:
        """Constraint wrenches of every joint from the force balance of each subtree."""
        return reactions_from_multipliers(self.model, self.ca, self.x, self.R, self.V, self.P, self.A, self.Fext,
                                          self.lam)


def reactions_from_multipliers(model: Model, ca, x, R, V, P, A, Fext, lam) -> np.ndarray:
    """Every joint's wrench on its successor (about its point) from the cut joints'
    multipliers ``lam`` (dense's row order and sign) and the spatial accelerations ``A``
    about each COM: cut joints directly, tree joints from the force balance of each
    subtree with the cut-joint wrenches counted as applied (also used by ``rcr``).

    When ``lam`` also holds the gear rows' multipliers (after the cut rows), each gear's
    generalized force ``-K_g^T lam_g`` acts like a joint torque (force) on its two
    joints: counted as applied, so a geared joint's reaction is its constraint wrench
    alone (no component about a revolute axis), as for any driven joint."""
    m = model
    react = np.zeros((m.nj, 6))
    Fcut = np.zeros((m.nb, 6))
    row = 0
    x0, R0, V0 = np.zeros(3), np.eye(3), np.zeros(6)
    for j in range(m.nb, m.nj):
        n = m.nc_j[j]
        a, b = m.pred[j], m.succ[j]
        phi = np.zeros(n)
        Ga = np.zeros((n, 6))
        Gb = np.zeros((n, 6))
        g = np.zeros(n)
        xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi, Ga, Gb, g)
        lj = lam[row:row + n]
        Fb = -Gb.T @ lj  # wrench on b about its COM
        Fcut[b] += Fb
        if a >= 0:
            Fcut[a] += -Ga.T @ lj
        out = np.empty(6)
        shift_force(Fb, x[b] - P[j], out)
        react[j] = out
        row += n
    if m.ng and lam.shape[0] >= row + m.ng:
        for i in range(m.ng):
            lg = lam[row + i]
            for j, tau in ((m.g_driver[i], -lg), (m.g_driven[i], m.g_ratio[i] * lg)):
                a, b = m.pred[j], m.succ[j]
                ax = (np.eye(3) if a < 0 else R[a]) @ m.axis_pred[j]
                for body, sgn in ((b, 1.0), (a, -1.0)):
                    if body < 0:
                        continue
                    if m.jtype[j] == PRISMATIC:
                        f = sgn * tau * ax
                        Fcut[body, :3] += f
                        Fcut[body, 3:] += np.cross(P[j] - x[body], f)
                    else:
                        Fcut[body, 3:] += sgn * tau * ax
    Fbody = np.zeros((m.nb, 6))
    fj = np.zeros((m.nb, 6))
    body_terms(m.mass, m.inertia, R, V, A, Fext + Fcut, Fbody)
    subtree_sums(m.parent, x, P, Fbody, fj)
    react[: m.nb] = fj
    return react
