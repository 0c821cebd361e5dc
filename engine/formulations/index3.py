"""Formulation ``index3``: the index-3 augmented-Lagrangian divide-and-conquer
algorithm of paper 000 (docs/index3.md).

Absolute coordinates per body, ``q_i = [r_i; p_i]`` (centre of mass and Euler
parameters, nd = 7), the trapezoidal rule, and at every step

1. Newton-Raphson on the positions (eqs. 17-39): predictor
   ``q = qb + dt qb_dot + dt^2/2 qb_ddot``, ``lam = lam_b``; each iteration solves

       M_cc dq + dt^2/4 Phi_q^T dlam = -dt^2/4 (g + Psi_q^T alpha Psi),
       dlam = alpha (Phi + Phi_q dq),   dmu = alpha (Psi + Psi_q dq)

   with ``M_cc = M + dt^2/4 alpha Psi_q^T Psi_q`` (+ the geometric stiffness
   ``dt^2/4 (Phi_qq^T lam + Psi_qq^T mu)`` body-diagonal blocks if asked);
   the tangent is kept for ``tangent_hold`` iterations (modified Newton); a fixed
   ``newton_iters`` iterations, or fewer once ``|dq| < newton_tol`` (up to
   NEWTON_MORE_ROUNDS rounds more where the last correction is above NEWTON_MORE_DQ);
2. the mass-orthogonal projection of the velocities (eqs. 40-54);
3. the mass-orthogonal projection of the accelerations (eqs. 55-69).

All three linear solves are assembly-disassemblies over the binary assembly tree
(:mod:`.tree`).  Newton: ``Phi = delta``, ``eps = 1 / alpha``, ``sgn = -1``.
Projections: exact by default -- one more matrix pass at the final q with leaf
blocks ``(M + k p p^T)^-1``, ``eps = 0``, ``sgn = +1``, then a bias pass each; with
``exact_projections=False`` the paper's penalised ones, bias passes on the last
Newton matrices.  On the tree the whole Newton loop is one numba
call (:func:`.index3_kernels.newton_iterations`); ``linear="dense"`` runs the same
iterations in Python and solves the linear systems as one dense KKT system instead
(the test oracle).
"""

from __future__ import annotations

import time

import numpy as np

from .. import config
from ..constraints import con_arrays
from ..errors import SimulationError, SingularSystemError
from ..forces import applied_forces, force_arrays, joint_coordinates_from_poses, spring_joints
from ..initial import initial_state
from ..model import F_SPRING, Model
from ..spatial import rot_to_quat
from ..assembly import index3_tree, stiff_elements
from . import index3_kernels as K
from . import tree
from .base import Evaluation, Formulation

#: A step has failed (diverged) when, after the Newton iterations, the position
#: residual of the joints exceeds this (metres / unit directions), or anything is not finite.
DIVERGED_VIOLATION = 1e-2
#: A step whose position residual after the Newton iterations exceeds this has not
#: converged: it is kept, and a warning says when (docs/index3.md, "Failure and warnings").
UNCONVERGED_VIOLATION = 1e-6
#: At most this many warnings per run (the stats count every unconverged step).
MAX_WARNINGS = 20
#: After this many converged steps in a row a new excess of the residual is warned afresh.
CONVERGED_STEPS = 100
#: A step whose last Newton correction is still above this after ``newton_iters``
#: iterations goes on for up to NEWTON_MORE_ROUNDS more rounds of as many.  The corrections
#: after three iterations are 8e-11 (median) and 1e-6 (at most) on chain-6-universal-spatial
#: at dt = 0.01; where they stayed at 1e-6..4e-6 for a few steps (t = 3.2 s) the energy jumped
#: by 1.35 J, and so it did at dt / 16 -- the count, not the step, was short.
NEWTON_MORE_DQ = 1e-8
NEWTON_MORE_ROUNDS = 3
#: Central-difference step of the geometric-stiffness blocks (coordinates are O(1)).
GEO_FD_STEP = 1e-6
#: Failure message when a leaf block M_cc is not positive definite (no tangent).
NOT_DEFINITE = "a body's tangent block M_cc is not positive definite"


class Index3Formulation(Formulation):
    name = "index3"
    title = "index-3 augmented Lagrangian, divide and conquer (paper 000)"
    kind = "stepper"
    integrators = ("trapezoidal",)
    default_integrator = "trapezoidal"
    parameters = ("penalty", "newton_iters", "newton_tol", "tangent_hold", "geometric_stiffness",
                  "exact_projections")
    remedy = ("Try more --newton-iters, a larger --penalty, --projections exact, or a smaller --dt.")
    summary = ("Index-3 augmented Lagrangian in absolute coordinates (Euler parameters), trapezoidal "
               "rule and Newton-Raphson with mass-orthogonal projections, all solved over the binary "
               "assembly tree; handles redundant constraints and singular configurations.")

    def __init__(self, model: Model, settings, linear: str = "tree", plan=None):
        super().__init__(model, settings, plan)
        if linear not in ("tree", "dense"):
            raise ValueError(f"linear must be 'tree' or 'dense' (got {linear!r})")
        m = model
        nb = m.nb
        self.linear = linear
        self.alpha = float(settings.penalty)
        self.iters = int(settings.newton_iters)
        self.tol = float(settings.newton_tol)
        self.hold = int(getattr(settings, "tangent_hold", 1))
        self.geo = bool(getattr(settings, "geometric_stiffness", False))
        self.exact = bool(getattr(settings, "exact_projections", True))
        self.refines_with_step = self.exact  # penalised: a finer step weakens the penalty
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        self.s_elem, ends = stiff_elements(m)
        self.s_pred = ends[:, 0].copy()
        self.row_pred = np.concatenate([m.pred, ends[:, 0]])  # per joint, then per element row
        self.row_succ = np.concatenate([m.succ, ends[:, 1]])
        self.tree = index3_tree(m, ends, self.plan.threads)
        # rows per element: a spring's three (along it and across it), a joint spring's one
        s_nrow = np.where(m.f_type[self.s_elem] == F_SPRING, 3, 1).astype(np.int64)
        self.lay = tree.build_layout(m, self.tree, 7, np.concatenate([m.nc_j, s_nrow]), self.plan.layout)
        self.n_joint_rows = int(m.nc_j.sum())  # the elements' rows follow: s_row[k] is element k's first
        self.s_row = (self.n_joint_rows + np.concatenate([[0], np.cumsum(s_nrow)[:-1]])).astype(np.int64)
        self._closing = tree.closing_merges(self.lay, nb)  # where loops close (health)
        self.row_adr = self.lay.ix.row_adr
        self.rows = self.lay.ix.rows
        self.nr = self.lay.n_rows
        self.springs = spring_joints(m)
        self.jq_ref = np.zeros(m.nj)
        self.jq = np.full(m.nj, np.nan)
        # ---- workspace: position stage (body_kinematics, joint_rows)
        self.x = np.zeros((nb, 3))  # (nb, 3) COM, body_kinematics
        self.R = np.zeros((nb, 3, 3))  # (nb, 3, 3) orientation of the normalised p, body_kinematics
        self.E = np.zeros((nb, 3, 4))  # (nb, 3, 4) E(p), body_kinematics
        self.phi = np.zeros(self.nr)  # (n_rows,) joint residuals, joint_rows
        self.Ga = np.zeros((self.nr, 6))  # (n_rows, 6) twist Jacobian, pred end, joint_rows
        self.Gb = np.zeros((self.nr, 6))  # (n_rows, 6) twist Jacobian, succ end, joint_rows
        self.G7 = np.zeros((2, self.nr, 7))  # (2, n_rows, 7) Phi_q rows at the current q, joint_rows
        # ---- velocity / acceleration stage
        self.V = np.zeros((nb, 6))  # (nb, 6) twists [v_C; w], body_kinematics
        self.A = np.zeros((nb, 6))  # (nb, 6) classical accelerations, body_kinematics
        self.gq = np.zeros(self.nr)  # (n_rows,) quadratic terms of Phi_ddot, joint_rows
        # ---- dynamics stage
        self.F = np.zeros((nb, 6))  # (nb, 6) applied wrenches about the COM, applied_forces
        self.Mb = np.zeros((nb, 7, 7))  # (nb, 7, 7) M_i (eq. 7), body_mass_forces
        self.Qb = np.zeros((nb, 7))  # (nb, 7) Q_i (eq. 8), body_mass_forces
        self.res = np.zeros((nb, 7))  # (nb, 7) g_i (eq. 12), residuals
        self.Hgeo = np.zeros((nb, 7, 7))  # (nb, 7, 7) geometric stiffness, geometric_stiffness
        # ---- tree-solve stage (leaf coefficients; the merges' workspace is self.lay)
        self.Mcc = np.zeros((nb, 7, 7))  # (nb, 7, 7) M_cc where leaf_matrices inverts it by Cholesky
        self.D = np.zeros((nb, 7, 7))  # (nb, 7, 7) delta_i = leaf Phi block, leaf_matrices
        self.pst = np.zeros((nb, 4))  # (nb, 4) p at the last matrix pass, leaf_matrices
        self.okb = np.zeros(nb, dtype=np.int64)  # (nb,) M_cc positive definite, leaf_matrices
        self.base = np.zeros((nb, 7))  # (nb, 7) bias base term, projection_rhs
        self.rhs = np.zeros((nb, 7))  # (nb, 7) bias right-hand side, newton_rhs / projection_rhs
        self.bl = np.zeros((nb, 7))  # (nb, 7) leaf biases b_i, leaf_biases
        self.out = np.zeros((nb, 7))  # (nb, 7) solution per body, leaf_results
        self.zero7 = np.zeros((nb, 7))  # zero accelerations: the projections' kinematics
        #: scale k of the exact solves' leaf blocks (M + k p p^T): the largest eigenvalue of the
        #: rotational blocks 4 G^T J G (any k > 0 gives the same solution; this keeps them balanced)
        self.k_exact = 4.0 * float(np.linalg.eigvalsh(m.inertia).max())
        self.zero_rows = np.zeros(self.nr)
        self.qd_w = np.zeros((nb, 7))  # (nb, 7) q_dot of the Newton iterate, newton_state
        self.qdd_w = np.zeros((nb, 7))  # (nb, 7) q_ddot of the Newton iterate, newton_state
        self.qd_hat = np.zeros((nb, 7))  # (nb, 7) q_dot = 2/dt q + qd_hat (eq. 15), predictor
        self.qdd_hat = np.zeros((nb, 7))  # (nb, 7) q_ddot = 4/dt^2 q + qdd_hat (eq. 16), predictor
        self.nu = np.zeros(nb)  # (nb,) Euler-parameter acceleration term nu_i
        self._lam_solve = np.zeros(self.nr)
        self.timing = {"newton": 0.0, "projections": 0.0, "velocity_projection": 0.0,
                       "acceleration_projection": 0.0}
        self.steps = 0
        self.newton_total = 0
        self.last_dq = 0.0
        self.max_dq = 0.0
        self.max_violation = 0.0
        self.warnings: list[str] = []
        self.unconverged_steps = 0
        self.extra_newton_rounds = 0  # NEWTON_MORE_ROUNDS taken (statistics)
        self._warn_level = UNCONVERGED_VIOLATION  # the next warning comes above this residual
        self._converged_run = 0  # converged steps since the last unconverged one

    @classmethod
    def supports(cls, model: Model) -> tuple[bool, str]:
        return super().supports(model)  # refuses couplings (gears): they are not rows here

    # ------------------------------------------------------------------ state layout
    def _split(self, y):
        nb, nr = self.model.nb, self.nr
        n7 = 7 * nb
        q = y[:n7].reshape(nb, 7)
        qd = y[n7:2 * n7].reshape(nb, 7)
        qdd = y[2 * n7:3 * n7].reshape(nb, 7)
        lam = y[3 * n7:3 * n7 + nr]
        mu = y[3 * n7 + nr:]
        return q, qd, qdd, lam, mu

    def _pack(self, q, qd, qdd, lam, mu):
        return np.concatenate([q.ravel(), qd.ravel(), qdd.ravel(), lam, mu])

    # ------------------------------------------------------------------ passes
    def _kinematics(self, q, qd, qdd):
        K.body_kinematics(q, qd, qdd, self.x, self.R, self.V, self.A, self.E)

    def _forces(self):
        if self.springs.shape[0]:
            joint_coordinates_from_poses(self.fa, self.springs, self.x, self.R, self.jq_ref, self.jq)
        applied_forces(self.fa, self.x, self.R, self.V, self.jq, self.F)

    def _rows(self):
        K.joint_rows(self.ca, self.row_adr, self.x, self.R, self.V, self.E, self.phi, self.Ga, self.Gb,
                     self.gq, self.G7)

    def _matrices(self, q, c4, kpsi, scale):
        """Leaf coefficients (eq. 26) from the current M, p (and geometric stiffness)."""
        m = self.model
        K.leaf_matrices(self.lay.ix, self.Mb, self.Hgeo, q, c4, self.geo, m.mass, m.inertia_inv, kpsi, scale,
                        self.Mcc, self.D, self.pst, self.lay.Phi, self.okb)
        if not self.okb.all():
            raise np.linalg.LinAlgError(NOT_DEFINITE)
        self.lay.G[:] = self.G7

    def _stiffness_rows(self, dt) -> None:
        """The force elements' tangent rows into the tree's G (kernels.stiffness_rows)."""
        if self.s_elem.shape[0]:
            K.stiffness_rows(self.fa, self.s_elem, self.s_row, self.s_pred, dt, self.alpha, self.x, self.R,
                             self.V, self.E, self.lay.G)

    def _solve(self, g0, eps, sgn, matrices):
        """x_i = D_i sum F + b_i,  G x + g0 = eps Lambda over the whole mechanism.

        Leaf biases from ``self.base`` and ``self.rhs``; result in ``self.out``, the
        multipliers Lambda in ``self._lam_solve``."""
        lay = self.lay
        if self.linear == "tree":
            K.tree_solve(lay.ix, self.D, self.base, self.rhs, self.bl, self.out, lay.Phi, lay.bv, lay.Fh, lay.G,
                         lay.sel, g0, lay.lam, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.r0, lay.y0,
                         lay.scr, eps, sgn, config.PIVOT_RTOL, matrices)
            self._lam_solve[:] = lay.lam
        else:
            K.leaf_biases(lay.ix, self.D, self.base, self.rhs, self.bl, lay.bv)
            self._dense_solve(g0, eps)

    def absolute_jacobian(self, G) -> np.ndarray:
        """Phi_q as one (rows, 7 n) matrix from per-end row blocks ``G`` (2, rows, 7):
        ``self.G7`` (the last row evaluation) or ``self.lay.G`` (the tree's)."""
        m = self.model
        Gf = np.zeros((self.nr, 7 * m.nb))
        for j in range(len(self.rows)):  # the joints, then the force elements' rows
            r, n = self.row_adr[j], self.rows[j]
            a, b = self.row_pred[j], self.row_succ[j]
            Gf[r:r + n, 7 * b:7 * b + 7] += G[1, r:r + n]
            if a >= 0:
                Gf[r:r + n, 7 * a:7 * a + 7] += G[0, r:r + n]
        return Gf

    def _dense_solve(self, g0, eps):
        """The same linear system as one dense KKT solve (test oracle):
        [[D^-1, -G^T], [G, -eps 1]] [x; Lambda] = [D^-1 b; -g0]."""
        m = self.model
        nb, nr = m.nb, self.nr
        n7 = 7 * nb
        Gf = self.absolute_jacobian(self.lay.G)
        Di = np.zeros((n7, n7))
        for i in range(nb):
            Di[7 * i:7 * i + 7, 7 * i:7 * i + 7] = np.linalg.inv(self.D[i])
        b = self.bl.ravel()
        if eps > 0.0:
            # eliminate Lambda = (G x + g0) / eps: (G^T G / eps - D^-1) x = -D^-1 b - G^T g0 / eps
            A = Gf.T @ Gf / eps - Di
            x = np.linalg.solve(A, -Di @ b - Gf.T @ g0 / eps)
            self.out[:] = x.reshape(nb, 7)
            self._lam_solve[:] = (Gf @ x + g0) / eps
            return
        Kkt = np.zeros((n7 + nr, n7 + nr))
        Kkt[:n7, :n7] = Di
        Kkt[:n7, n7:] = -Gf.T
        Kkt[n7:, :n7] = Gf
        rhs = np.concatenate([Di @ b, -g0])
        sol = np.linalg.lstsq(Kkt, rhs, rcond=1e-12)[0]
        self.out[:] = sol[:n7].reshape(nb, 7)
        self._lam_solve[:] = sol[n7:]

    # ------------------------------------------------------------------ initial state
    def initial_state(self) -> np.ndarray:
        m = self.model
        nb = m.nb
        ini = initial_state(m)
        self.initial = ini
        q = np.zeros((nb, 7))
        qd = np.zeros((nb, 7))
        pq = np.zeros(4)
        for i in range(nb):
            rot_to_quat(ini.R[i], pq)
            q[i, :3] = ini.x[i]
            q[i, 3:] = pq
            Ei = np.zeros((3, 4))
            K.emat(pq, Ei)
            qd[i, :3] = ini.V[i, :3]
            qd[i, 3:] = 0.5 * Ei.T @ ini.V[i, 3:]
        qdd, lam, mu = self._accelerations(q, qd)
        return self._pack(q, qd, qdd, lam, mu)

    def _accelerations(self, q, qd):
        """Exact accelerations and multipliers at a consistent state (pseudo-code step 1):
        the tree solve with leaf blocks (M + k p p^T)^-1, eps = 0 (pivoted Cholesky for
        redundant rows), p-direction of Q removed (it is what mu carries)."""
        self._exact_matrices(q, qd, forces=True)
        kpsi = self.k_exact
        p = q[:, 3:]
        pn2 = np.sum(p * p, axis=1)
        mu = np.sum(p * self.Qb[:, 3:], axis=1) / pn2
        nu = -np.sum(qd[:, 3:] ** 2, axis=1)
        self.base[:] = 0.0
        self.rhs[:] = self.Qb
        self.rhs[:, 3:] += -mu[:, None] * p + kpsi * p * nu[:, None]
        self._solve(self.gq, 0.0, 1.0, False)
        return self.out.copy(), -self._lam_solve.copy(), mu

    # ------------------------------------------------------------------ one step
    def step(self, t, y, dt):
        m = self.model
        qb, qdb, qddb, lamb, mub = self._split(y)
        a = self.alpha
        c4 = 0.25 * dt * dt
        t0 = time.perf_counter()
        # the new state is written in place into views of one array (no copies, no packing)
        y_new = np.empty_like(y)
        q, qd, qdd, lam, mu = self._split(y_new)
        qd_hat, qdd_hat = self.qd_hat, self.qdd_hat
        K.predictor(qb, qdb, qddb, dt, q, qd_hat, qdd_hat)
        lam[:] = lamb
        mu[:] = mub
        self.base[:] = 0.0
        if self.linear == "tree":
            lay = self.lay
            n_it, dqn = K.newton_iterations(
                self.iters, self.hold, self.tol, self.geo, GEO_FD_STEP, dt, a, q, qd_hat, qdd_hat, mu, lam,
                self.fa, self.springs, self.jq_ref, self.jq, self.ca, lay.ix, m.mass, m.inertia, m.inertia_inv,
                self.qd_w, self.qdd_w, self.x, self.R, self.V, self.A, self.E, self.F, self.Mb, self.Qb, self.phi,
                self.Ga, self.Gb, self.gq, self.G7, self.res, self.Hgeo, self.Mcc, self.D, self.pst, self.okb,
                self.base, self.rhs, self.bl, self.out, lay.Phi, lay.bv, lay.Fh, lay.G, lay.sel, lay.lam, lay.Kf,
                lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.r0, lay.y0, lay.scr, self.s_elem, self.s_row, self.s_pred,
                config.PIVOT_RTOL)
            if n_it < 0:
                raise np.linalg.LinAlgError(NOT_DEFINITE)
            self.newton_total += n_it
            more = 0
            while dqn > NEWTON_MORE_DQ and more < NEWTON_MORE_ROUNDS:
                # not converged in the paper's fixed count: go on from where it stopped
                # rather than hand the monitor a step whose energy has jumped
                more += 1
                n_it, dqn = K.newton_iterations(
                    self.iters, self.hold, self.tol, self.geo, GEO_FD_STEP, dt, a, q, qd_hat, qdd_hat, mu, lam,
                    self.fa, self.springs, self.jq_ref, self.jq, self.ca, lay.ix, m.mass, m.inertia,
                    m.inertia_inv, self.qd_w, self.qdd_w, self.x, self.R, self.V, self.A, self.E, self.F, self.Mb,
                    self.Qb, self.phi, self.Ga, self.Gb, self.gq, self.G7, self.res, self.Hgeo, self.Mcc, self.D,
                    self.pst, self.okb, self.base, self.rhs, self.bl, self.out, lay.Phi, lay.bv, lay.Fh, lay.G,
                    lay.sel, lay.lam, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.r0, lay.y0, lay.scr,
                    self.s_elem, self.s_row, self.s_pred, config.PIVOT_RTOL)
                if n_it < 0:
                    raise np.linalg.LinAlgError(NOT_DEFINITE)
                self.newton_total += n_it
                self.extra_newton_rounds += 1
        else:  # the same iterations in Python, with the dense linear solve (test oracle)
            dqn = np.inf
            for it in range(self.iters):
                K.newton_state(q, qd_hat, qdd_hat, dt, self.qd_w, self.qdd_w, mu, lam, self.fa, self.springs,
                               self.jq_ref, self.jq, self.ca, self.lay.ix, m.mass, m.inertia, self.x, self.R,
                               self.V, self.A, self.E, self.F, self.Mb, self.Qb, self.phi, self.Ga, self.Gb,
                               self.gq, self.G7, self.res)
                refresh = it % self.hold == 0
                if refresh:
                    if self.geo:
                        K.geometric_stiffness(self.lay.ix, self.ca, self.row_adr, q, lam, mu, GEO_FD_STEP,
                                              self.Hgeo)
                    self._matrices(q, c4, a, -c4)
                    self._stiffness_rows(dt)
                K.newton_rhs(q, self.res, a, self.rhs)
                self._solve(self.phi, 1.0 / a, -1.0, refresh)
                lam += self._lam_solve
                lam[self.n_joint_rows:] = 0.0
                dqn = np.sqrt(K.newton_update(q, self.out, mu, a))
                self.newton_total += 1
                if dqn < self.tol:
                    break
        t1 = time.perf_counter()
        self.last_dq = dqn
        self.max_dq = max(self.max_dq, dqn)
        # ---- mass-orthogonal projections (eqs. 40-69)
        K.difference_rates(q, qd_hat, qdd_hat, dt, qd, qdd)
        if self.linear == "tree":
            viol, t_v = self._tree_projections(q, qd, qdd)
        else:
            viol, t_v = self._python_projections(q, qd, qdd)
        t2 = time.perf_counter()
        self.timing["newton"] += t1 - t0
        self.timing["projections"] += t2 - t1
        self.timing["velocity_projection"] += t_v - t1
        self.timing["acceleration_projection"] += t2 - t_v
        self.steps += 1
        self.max_violation = max(self.max_violation, viol)
        self._watch(t + dt, viol, dqn, dt)
        if self.springs.shape[0]:
            self.jq_ref[self.springs] = self.jq[self.springs]
        if not np.isfinite(y_new).all() or viol > DIVERGED_VIOLATION:
            raise SimulationError(t + dt, f"Newton-Raphson did not converge (position residual {viol:.3g}, "
                                          f"last |dq| {dqn:.3g}); try a larger --penalty or more "
                                          "--newton-iters")
        return y_new

    def _tree_projections(self, q, qd, qdd):
        """Both projections over the tree, in place on qd and qdd, in two kernels
        (K.velocity_projection, K.acceleration_projection).  Returns (|phi| at q, the
        clock between the two)."""
        m, lay = self.model, self.lay
        eps, sgn, kp = K.velocity_projection(
            self.exact, self.k_exact, self.alpha, q, qd, self.zero7, self.zero_rows, self.nu,
            self.n_joint_rows, m.mass, m.inertia, m.inertia_inv, self.ca, lay.ix, self.x, self.R, self.V, self.A,
            self.E, self.F, self.Mb, self.Qb, self.phi, self.Ga, self.Gb, self.gq, self.G7, self.Mcc, self.D,
            self.pst, self.okb, self.base, self.rhs, self.bl, self.out, lay.Phi, lay.bv, lay.Fh, lay.G, lay.sel,
            lay.lam, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.r0, lay.y0, lay.scr, config.PIVOT_RTOL)
        if eps != eps:
            raise np.linalg.LinAlgError(NOT_DEFINITE)
        t_v = time.perf_counter()
        viol = K.acceleration_projection(
            eps, sgn, kp, q, qd, qdd, self.nu, self.ca, lay.ix, self.x, self.R, self.V, self.A, self.E, self.phi,
            self.Ga, self.Gb, self.gq, self.G7, self.D, self.pst, self.base, self.rhs, self.bl, self.out, lay.Phi,
            lay.bv, lay.Fh, lay.G, lay.sel, lay.lam, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y, lay.E, lay.r0, lay.y0,
            lay.scr, config.PIVOT_RTOL)
        return float(viol), t_v

    def _python_projections(self, q, qd, qdd):
        """The projections of :meth:`_tree_projections` step by step with the dense linear
        solve (``linear="dense"``, the test oracle of the tree kernels)."""
        if self.exact:
            # exact: one matrix pass at the final q, leaf blocks (M + k p p^T)^-1, eps = 0
            self._exact_matrices(q, qd)
            sgn, eps, kp = 1.0, 0.0, -self.k_exact
        else:
            # penalised (paper): the last Newton matrices; the force elements' rows are not
            # constraints (the dense solve reads G afresh)
            sgn, eps, kp = -1.0, 1.0 / self.alpha, self.alpha
            self.lay.G[:, self.n_joint_rows:] = 0.0
        self.nu[:] = 0.0
        K.projection_rhs(self.pst, qd, self.nu, kp, self.base, self.rhs)
        self._solve(self.zero_rows, eps, sgn, False)
        qd[:] = self.out
        t_v = time.perf_counter()
        self._kinematics(q, qd, qdd)
        self._rows()  # g at the projected velocities; phi at the final q
        viol = float(np.sqrt(np.dot(self.phi, self.phi)))
        self.nu[:] = -np.sum(qd[:, 3:] ** 2, axis=1)
        K.projection_rhs(self.pst, qdd, self.nu, kp, self.base, self.rhs)
        self._solve(self.gq, eps, sgn, False)
        qdd[:] = self.out
        self.base[:] = 0.0
        return viol, t_v

    def _exact_matrices(self, q, qd, forces: bool = False) -> None:
        """The tree's matrix pass of the exact solves at q: the initial accelerations
        and the exact mass-orthogonal projections.

        Leaf blocks ``(M + k p p^T)^-1`` (k > 0 any scale; M p = 0, so k only fixes
        p^T x), joint rows ``G(q)`` with eps = 0 (pivoted Cholesky drops dependent rows).
        For a projection the biases ``x* + D k p (nu - p^T x*)`` then give
        ``min (x - x*)^T M (x - x*)`` subject to ``G x + g0 = 0``, ``p^T x = nu`` to
        round-off, whatever the penalty.  ``forces``: evaluate the applied forces too
        (for ``Q``)."""
        self._kinematics(q, qd, self.zero7)
        if forces:
            self._forces()
        K.body_mass_forces(self.model.mass, self.model.inertia, q, qd, self.R, self.F, self.Mb, self.Qb)
        self._rows()
        m = self.model
        # Mb stands for the geometric stiffness H_geo, which geo = False leaves unread
        K.leaf_matrices(self.lay.ix, self.Mb, self.Mb, q, 1.0, False, m.mass, m.inertia_inv, self.k_exact, 1.0,
                        self.Mcc, self.D, self.pst, self.lay.Phi, self.okb)
        if not self.okb.all():
            raise np.linalg.LinAlgError(NOT_DEFINITE)
        lay = self.lay
        lay.G[:] = self.G7
        if self.linear == "tree":
            tree.assemble_matrices7(lay.ix, lay.Phi, lay.G, lay.sel, lay.Kf, lay.Kp, lay.Kr, lay.Ks, lay.Y,
                                        lay.E, lay.scr, 0.0, 1.0, config.PIVOT_RTOL)

    # ------------------------------------------------------------------ output
    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        q, qd, qdd, lam, mu = self._split(y)
        self._kinematics(q, qd, qdd)
        self._rows()
        # joint points: the anchor fixed in the predecessor (ground anchors are world points)
        a = np.maximum(m.pred, 0)
        P = np.where((m.pred < 0)[:, None], m.anchor_pred,
                     self.x[a] + np.einsum("jik,jk->ji", self.R[a], m.anchor_pred))
        reactions = np.zeros((m.nj, 6))
        K.body_wrench_from_rows(self.ca, self.row_adr, self.x, P, self.Gb, lam, reactions)
        if not np.isfinite(q).all():
            raise SingularSystemError(t, "positions are not finite")
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(), acc=self.A.copy(), P=P,
                          reactions=reactions, jq=np.full(m.nj, np.nan),
                          extra={"q": q.copy(), "lam": lam.copy(), "mu": mu.copy()})

    def _watch(self, t, viol, dqn, dt) -> None:
        """Warn when the residual first exceeds UNCONVERGED_VIOLATION and again at each
        decade it grows past; start afresh after CONVERGED_STEPS converged steps."""
        if not viol > UNCONVERGED_VIOLATION:  # (not finite: the step fails next)
            self._converged_run += 1
            if self._converged_run >= CONVERGED_STEPS:
                self._warn_level = UNCONVERGED_VIOLATION
            return
        self._converged_run = 0
        self.unconverged_steps += 1
        if viol <= self._warn_level or len(self.warnings) >= MAX_WARNINGS:
            return
        if self._warn_level == UNCONVERGED_VIOLATION:
            self.warnings.append(
                f"t = {t:.4g} s: the Newton iterations left a position residual of {viol:.2g} (above "
                f"{UNCONVERGED_VIOLATION:g}; last correction {dqn:.2g}): the constraints are not converged and "
                f"the motion may be wrong. Raise the Newton iterations (--newton-iters; fast motion) or the "
                f"penalty (--penalty; near-singular loops, the effective penalty alpha dt^2/4 is "
                f"{self.alpha * dt * dt / 4:.3g})"
                + ("" if self.exact else ", or use the exact projections (--projections exact)")
                + " -- docs/index3.md")
        else:
            self.warnings.append(f"t = {t:.4g} s: the unconverged position residual of index3 has grown to "
                                 f"{viol:.2g} (raise the Newton iterations or the penalty)")
        self._warn_level = 10.0 ** np.ceil(np.log10(viol))

    def mobility(self, y) -> float | None:
        """The loop conditioning of the last step's factors (:meth:`health`): index-3's
        absolute coordinates have no joint-space Jacobian to whiten."""
        return self.health().get("loop_conditioning", 1.0)

    def health(self) -> dict:
        """The loop conditioning of the last step's tree factors (the projections' matrix
        pass at the final positions; Formulation.health)."""
        if self._closing.shape[0] == 0:
            return {}
        lay = self.lay
        return {"loop_conditioning": tree.loop_conditioning(lay.ix, lay.Kf, lay.Kr, self._closing)}

    def stats(self) -> dict:
        out = {"steps": self.steps, "newton_iterations": self.newton_total,
               "newton_time": self.timing["newton"], "projection_time": self.timing["projections"],
               "velocity_projection_time": self.timing["velocity_projection"],
               "acceleration_projection_time": self.timing["acceleration_projection"],
               "last_dq": self.last_dq, "max_dq": self.max_dq,
               "max_position_violation_after_newton": self.max_violation}
        if self.unconverged_steps:
            out["warnings"] = list(self.warnings)
            out["unconverged_steps"] = self.unconverged_steps
        if self.extra_newton_rounds:
            out["extra_newton_rounds"] = self.extra_newton_rounds
        return out
