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
   NEWTON_MORE_ROUNDS rounds more where the last correction is above NEWTON_MORE_ACC dt^2/4);
2. the mass-orthogonal projection of the velocities (eqs. 40-54);
3. the mass-orthogonal projection of the accelerations (eqs. 55-69).

All three linear solves are assembly-disassemblies over the binary assembly tree
(:mod:`.tree`).  Newton: ``Phi = delta``, ``eps = 1 / alpha``, ``sgn = -1``.
Projections: exact by default -- one more matrix pass at the final q with leaf
blocks ``(M + k p p^T)^-1``, ``eps = 0``, ``sgn = +1``, then a bias pass each; with
``exact_projections=False`` the paper's penalised ones, bias passes on the last
Newton matrices.  On the tree the whole Newton loop is one numba
call (:func:`.index3_newton.newton_iterations`), and so is each projection;
``linear="dense"`` runs the same iterations in Python and solves the linear systems as one
dense KKT system instead (the test oracle).

The kernels' arrays are built once, in named tuples that hold the very arrays the kernels
write in place (:mod:`.index3_kernels`): ``model_arrays`` (the model), ``body`` (per body),
``rows`` (per constraint row), ``leaf`` and ``tree_work`` (the tree solve's leaves and
merges), with the settings ``newton_settings`` and ``projection_settings``.
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
from ..settings import penalty_at
from ..spatial import rot_to_quat
from ..topology import subassemblies
from ..assembly import index3_tree, stiff_elements
from . import index3_kernels as K
from . import index3_newton as N
from . import tree
from .index3_kernels import BodyState, JointRows, LeafWork, ModelArrays, NewtonSettings, ProjectionSettings
from .index3_rows import Limits, row_kernels
from .base import Evaluation, Formulation
from .workspace import typeof_cached

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
#: A step whose last Newton correction |dq| is still above ``NEWTON_MORE_ACC dt^2 / 4`` (the
#: acceleration it stands for under the trapezoidal rule, 4 |dq| / dt^2, above this; never
#: below ``newton_tol``) after ``newton_iters`` iterations goes on for up to
#: NEWTON_MORE_ROUNDS more rounds of as many.  At dt = 0.01 that is |dq| > 1e-8: the
#: corrections after three iterations are 8e-11 (median) and 1e-6 (at most) on
#: chain-6-universal-spatial; where they stayed at 1e-6..4e-6 for a few steps (t = 3.2 s)
#: the energy jumped by 1.35 J, and so it did at dt / 16 -- the count, not the step, was
#: short.  The bound falls with dt^2 because a smaller step divides the correction by dt
#: twice: at dt = 1e-4 a Newton that converged only linearly (a spring's moment arm is
#: not in the tangent) stopped at |dq| = 1.5e-10 every step, and the motion went 1.7e-3 m
#: from dense's in 1 s (docs/index3.md, "Failure and warnings").
NEWTON_MORE_ACC = 4e-4
NEWTON_MORE_ROUNDS = 6
#: ... while each round divides the correction by 1 / NEWTON_STALL at least: the solve's
#: round-off leaves a floor (5e-12 on some mechanisms at dt = 1e-4, alpha = 1e9) that more
#: rounds do not lower.
NEWTON_STALL = 0.5
#: Central-difference step of the geometric-stiffness blocks (coordinates are O(1)).
GEO_FD_STEP = 1e-6
#: Failure message when a leaf block M_cc is not positive definite (no tangent).
NOT_DEFINITE = "a body's tangent block M_cc is not positive definite"


#: (kernel, :func:`_type_key` of its arguments) -> its compiled entry point, for every formulation
_ENTRIES: dict = {}


def _type_key(a):
    """What numba's type of the argument ``a`` depends on: an array's dtype, dimensions,
    layout, writability and alignment, a tuple's class and items', any other value's class."""
    if type(a) is np.ndarray:
        f = a.flags
        return a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned
    if isinstance(a, tuple):
        return (type(a),) + tuple(_type_key(x) for x in a)
    return type(a)


class _Specialised:
    """``kernel`` called through its compiled entry point for the argument types of its
    first call, not through numba's dispatcher, which types every argument of every call:
    a named tuple at about 0.2 us a field, 10-30 us a call of the step's kernels -- as much
    as their work on a small mechanism.  The arguments keep their types: the formulation's
    named tuples and settings, and views of a new float64 state (:meth:`Index3Formulation.step`).
    The entry point is looked up by :func:`_type_key` (40 us; numba's own typing of the
    named tuples takes 1 ms) and is the kernel's specialisation in numba's cache, compiled
    if need be; under ``NUMBA_DISABLE_JIT`` the kernel is the plain function.
    (:class:`.base.StateKernel` does the same for the ODE formulations' workspace tables.)"""

    __slots__ = ("kernel", "entry")

    def __init__(self, kernel):
        self.kernel = kernel
        self.entry = None

    def __call__(self, *args):
        entry = self.entry
        if entry is None:
            entry = self.entry = self._bind(args)
        return entry(*args)

    def __reduce__(self):
        """Copied or pickled, bound afresh by its first call (an entry point does not pickle)."""
        return _Specialised, (self.kernel,)

    def _bind(self, args):
        compile_for = getattr(self.kernel, "compile", None)
        if compile_for is None:  # NUMBA_DISABLE_JIT: a plain function
            return self.kernel
        key = (self.kernel, _type_key(args))
        entry = _ENTRIES.get(key)
        if entry is None:
            entry = _ENTRIES[key] = compile_for(tuple(typeof_cached(a) for a in args))
        return entry


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
        self.iters = int(settings.newton_iters)
        self.tol = float(settings.newton_tol)
        self.hold = int(getattr(settings, "tangent_hold", 1))
        self.geo = bool(getattr(settings, "geometric_stiffness", False))
        self.exact = bool(getattr(settings, "exact_projections", True))
        #: the penalty at the run's step; ``penalty_at`` gives a sub-step's, which for the
        #: automatic penalty (none named) keeps the run's effective penalty alpha dt^2 / 4.
        #: The penalised projections solve with the Newton's last matrices and the run's
        #: alpha (ProjectionSettings): there the Newton keeps the run's alpha at every step.
        self.alpha = settings.index3_penalty
        self._alpha_rule = settings.index3_penalty_rule if self.exact else (self.alpha, 0.0)
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
        # the exact solves (eps = 0: the initial accelerations, the exact projections) keep at
        # most each merge's rows less those redundant where the loops close, as dca's
        # (docs/derivations.md, "Redundant rows"): a pivot test alone kept redundant rows whose
        # round-off pivots passed it, and their multipliers moved the bodies (mechanism(80527, 8,
        # 3): 1.1e-3 m off the other formulations after 1 s, at any step).  The penalised
        # solves' K is definite: every row keeps its penalty.
        if m.ncut:
            self.lay.cap_ranks(subassemblies(m, self.tree).redundant)
        self.n_joint_rows = int(m.nc_j.sum())  # the elements' rows follow: s_row[k] is element k's first
        self.s_row = (self.n_joint_rows + np.concatenate([[0], np.cumsum(s_nrow)[:-1]])).astype(np.int64)
        self._closing = tree.closing_merges(self.lay, nb)  # where loops close (health)
        self.row_adr = self.lay.ix.row_adr
        self.nr = self.lay.n_rows
        self.springs = spring_joints(m)
        nr = self.nr
        #: the kernels' arrays (index3_kernels says what each holds)
        self.model_arrays = ModelArrays(m.mass, m.inertia, m.inertia_inv, self.ca, self.fa, self.springs,
                                        self.s_elem, self.s_row, self.s_pred, self.n_joint_rows)
        self.body = BodyState(
            qd_hat=np.zeros((nb, 7)), qdd_hat=np.zeros((nb, 7)), qd=np.zeros((nb, 7)), qdd=np.zeros((nb, 7)),
            x=np.zeros((nb, 3)), R=np.zeros((nb, 3, 3)), E=np.zeros((nb, 3, 4)), V=np.zeros((nb, 6)),
            A=np.zeros((nb, 6)), jq_ref=np.zeros(m.nj), jq=np.full(m.nj, np.nan), F=np.zeros((nb, 6)),
            Mb=np.zeros((nb, 7, 7)), Qb=np.zeros((nb, 7)), res=np.zeros((nb, 7)), Hgeo=np.zeros((nb, 7, 7)),
            nu=np.zeros(nb), zero7=np.zeros((nb, 7)))
        self.rows = JointRows(phi=np.zeros(nr), Ga=np.zeros((nr, 6)), Gb=np.zeros((nr, 6)), gq=np.zeros(nr),
                              G7=np.zeros((2, nr, 7)), zero_rows=np.zeros(nr))
        self.leaf = LeafWork(Mcc=np.zeros((nb, 7, 7)), D=np.zeros((nb, 7, 7)), pst=np.zeros((nb, 4)),
                             ok=np.zeros(nb, dtype=np.int64), base=np.zeros((nb, 7)), rhs=np.zeros((nb, 7)),
                             bl=np.zeros((nb, 7)), out=np.zeros((nb, 7)))
        self.tree_work = self.lay.work
        #: scale k of the exact solves' leaf blocks (M + k p p^T): the largest eigenvalue of the
        #: rotational blocks 4 G^T J G (any k > 0 gives the same solution; this keeps them balanced)
        self.k_exact = 4.0 * float(np.linalg.eigvalsh(m.inertia).max())
        self.newton_settings = NewtonSettings(self.iters, self.hold, self.tol, self.geo, GEO_FD_STEP,
                                              *self._alpha_rule, config.PIVOT_RTOL)
        self.projection_settings = ProjectionSettings(self.exact, self.k_exact, self.alpha, config.PIVOT_RTOL)
        # the kernels of every step and output, without numba's dispatcher (_Specialised)
        self._newton_iterations = _Specialised(N.newton_iterations)
        self._velocity_projection = _Specialised(N.velocity_projection)
        self._acceleration_projection = _Specialised(N.acceleration_projection)
        self._joint_rows = _Specialised(K.joint_rows)
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

    @property
    def tree_calls(self) -> N.TreeCalls:
        """The tree solve's kernels by address for the step's kernels (:class:`.index3_newton.TreeCalls`),
        made in this process at the first step."""
        calls = self.__dict__.get("_tree_calls")
        if calls is None:
            calls = self.__dict__["_tree_calls"] = N.tree_calls(self.lay.ix, self.leaf, self.tree_work, self.nr)
        return calls

    def __getstate__(self) -> dict:
        """Pickled or copied without :attr:`tree_calls`: addresses of this process's machine code."""
        state = self.__dict__.copy()
        state.pop("_tree_calls", None)
        return state

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
        b = self.body
        K.body_kinematics(q, qd, qdd, b.x, b.R, b.V, b.A, b.E)

    def _forces(self):
        b = self.body
        if self.springs.shape[0]:
            joint_coordinates_from_poses(self.fa, self.springs, b.x, b.R, b.jq_ref, b.jq)
        applied_forces(self.fa, b.x, b.R, b.V, b.jq, b.F)

    def _rows(self):
        self._joint_rows(self.ca, self.row_adr, self.body, self.rows)

    def _matrices(self, q, c4, kpsi, scale):
        """Leaf coefficients (eq. 26) from the current M, p (and geometric stiffness)."""
        b = self.body
        N.leaf_matrices(self.lay.ix, self.model_arrays, b.Mb, b.Hgeo, q, c4, self.geo, kpsi, scale, self.leaf,
                        self.lay.Phi)
        if not self.leaf.ok.all():
            raise np.linalg.LinAlgError(NOT_DEFINITE)
        self.lay.G[:] = self.rows.G7

    def _stiffness_rows(self, dt) -> None:
        """The force elements' tangent rows into the tree's G (index3_kernels.stiffness_rows)."""
        if self.s_elem.shape[0]:
            K.stiffness_rows(self.model_arrays, dt, self.penalty_at(dt), self.body, self.lay.G)

    def _solve(self, g0, eps, sgn, matrices):
        """x_i = D_i sum F + b_i,  G x + g0 = eps Lambda over the whole mechanism.

        Leaf biases from ``self.leaf.base`` and ``self.leaf.rhs``; result in ``self.leaf.out``,
        the multipliers Lambda in ``self._lam_solve``."""
        lay = self.lay
        if self.linear == "tree":
            N.tree_solve(lay.ix, self.leaf, self.tree_work, g0, eps, sgn, config.PIVOT_RTOL, matrices)
            self._lam_solve[:] = lay.lam
        else:
            N.leaf_biases(lay.ix, self.leaf, lay.bv)
            self._dense_solve(g0, eps)

    def absolute_jacobian(self, G) -> np.ndarray:
        """Phi_q as one (rows, 7 n) matrix from per-end row blocks ``G`` (2, rows, 7):
        ``self.rows.G7`` (the last row evaluation) or ``self.lay.G`` (the tree's)."""
        m = self.model
        rows = self.lay.ix.rows
        Gf = np.zeros((self.nr, 7 * m.nb))
        for j in range(len(rows)):  # the joints, then the force elements' rows
            r, n = self.row_adr[j], rows[j]
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
            Di[7 * i:7 * i + 7, 7 * i:7 * i + 7] = np.linalg.inv(self.leaf.D[i])
        b = self.leaf.bl.ravel()
        if eps > 0.0:
            # eliminate Lambda = (G x + g0) / eps: (G^T G / eps - D^-1) x = -D^-1 b - G^T g0 / eps
            A = Gf.T @ Gf / eps - Di
            x = np.linalg.solve(A, -Di @ b - Gf.T @ g0 / eps)
            self.leaf.out[:] = x.reshape(nb, 7)
            self._lam_solve[:] = (Gf @ x + g0) / eps
            return
        Kkt = np.zeros((n7 + nr, n7 + nr))
        Kkt[:n7, :n7] = Di
        Kkt[:n7, n7:] = -Gf.T
        Kkt[n7:, :n7] = Gf
        rhs = np.concatenate([Di @ b, -g0])
        sol = np.linalg.lstsq(Kkt, rhs, rcond=1e-12)[0]
        self.leaf.out[:] = sol[:n7].reshape(nb, 7)
        self._lam_solve[:] = sol[n7:]

    def penalty_at(self, dt: float) -> float:
        """The penalty of a step ``dt`` (the Newton kernel's :func:`.index3_newton.step_penalty`)."""
        return penalty_at(*self._alpha_rule, dt)

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
        Qb, leaf = self.body.Qb, self.leaf
        mu = np.sum(p * Qb[:, 3:], axis=1) / pn2
        nu = -np.sum(qd[:, 3:] ** 2, axis=1)
        leaf.base[:] = 0.0
        leaf.rhs[:] = Qb
        leaf.rhs[:, 3:] += -mu[:, None] * p + kpsi * p * nu[:, None]
        self._solve(self.rows.gq, 0.0, 1.0, False)
        return leaf.out.copy(), -self._lam_solve.copy(), mu

    # ------------------------------------------------------------------ one step
    def step(self, t, y, dt):
        qb, qdb, qddb, lamb, mub = self._split(y)
        a = self.penalty_at(dt)
        c4 = 0.25 * dt * dt
        t0 = time.perf_counter()
        # the new state is written in place into views of one float64 array (no copies, no
        # packing; the types the kernels were specialised for)
        y_new = np.empty(y.shape[0])
        q, qd, qdd, lam, mu = self._split(y_new)
        body, leaf = self.body, self.leaf
        N.predictor(qb, qdb, qddb, dt, q, body.qd_hat, body.qdd_hat)
        lam[:] = lamb
        mu[:] = mub
        leaf.base[:] = 0.0
        if self.linear == "tree":
            lay = self.lay
            newton_args = (self.newton_settings, dt, q, mu, lam, self.model_arrays, lay.ix, body, self.rows, leaf,
                           self.tree_work, self.tree_calls)
            n_it, dqn = self._newton_iterations(*newton_args)
            if n_it < 0:
                raise np.linalg.LinAlgError(NOT_DEFINITE)
            self.newton_total += n_it
            more = 0
            more_dq = max(NEWTON_MORE_ACC * c4, self.tol)
            last = np.inf
            while dqn > more_dq and more < NEWTON_MORE_ROUNDS and dqn < NEWTON_STALL * last:
                # not converged in the paper's fixed count: go on from where it stopped
                # rather than hand the monitor a step whose energy has jumped (and stop
                # where a round no longer shrinks the correction: round-off's floor)
                last = dqn
                more += 1
                n_it, dqn = self._newton_iterations(*newton_args)
                if n_it < 0:
                    raise np.linalg.LinAlgError(NOT_DEFINITE)
                self.newton_total += n_it
                self.extra_newton_rounds += 1
        else:  # the same iterations in Python, with the dense linear solve (test oracle)
            dqn = np.inf
            for it in range(self.iters):
                N.newton_state(q, dt, mu, lam, self.model_arrays, self.lay.ix, body, self.rows)
                refresh = it % self.hold == 0
                if refresh:
                    if self.geo:
                        K.geometric_stiffness(self.lay.ix, self.ca, self.row_adr, q, lam, mu, GEO_FD_STEP,
                                              body.Hgeo)
                    self._matrices(q, c4, a, -c4)
                    self._stiffness_rows(dt)
                N.newton_rhs(q, body.res, a, leaf.rhs)
                self._solve(self.rows.phi, 1.0 / a, -1.0, refresh)
                lam += self._lam_solve
                lam[self.n_joint_rows:] = 0.0
                dqn = np.sqrt(N.newton_update(q, leaf.out, mu, a))
                self.newton_total += 1
                if dqn < self.tol:
                    break
        t1 = time.perf_counter()
        self.last_dq = dqn
        self.max_dq = max(self.max_dq, dqn)
        # ---- mass-orthogonal projections (eqs. 40-69)
        N.difference_rates(q, body.qd_hat, body.qdd_hat, dt, qd, qdd)
        if self.linear == "tree":
            viol, t_v = self._tree_projections(q, qd, qdd)
        else:
            viol, t_v = self._python_projections(q, qd, qdd)
        if self.exact:
            # the multipliers of the projected accelerations (docs/index3.md, "Reactions")
            nu = self.tree_work.lam if self.linear == "tree" else self._lam_solve
            lam[:self.n_joint_rows] -= nu[:self.n_joint_rows]
        t2 = time.perf_counter()
        self.timing["newton"] += t1 - t0
        self.timing["projections"] += t2 - t1
        self.timing["velocity_projection"] += t_v - t1
        self.timing["acceleration_projection"] += t2 - t_v
        self.steps += 1
        self.max_violation = max(self.max_violation, viol)
        self._watch(t + dt, viol, dqn, dt)
        if self.springs.shape[0]:
            body.jq_ref[self.springs] = body.jq[self.springs]
        if not np.isfinite(y_new).all() or viol > DIVERGED_VIOLATION:
            raise SimulationError(t + dt, f"Newton-Raphson did not converge (position residual {viol:.3g}, "
                                          f"last |dq| {dqn:.3g}); try a larger --penalty or more "
                                          "--newton-iters")
        return y_new

    def _tree_projections(self, q, qd, qdd):
        """Both projections over the tree, in place on qd and qdd, in two kernels
        (N.velocity_projection, N.acceleration_projection).  Returns (|phi| at q, the
        clock between the two)."""
        args = (self.model_arrays, self.lay.ix, self.body, self.rows, self.leaf, self.tree_work, self.tree_calls)
        solve = self._velocity_projection(self.projection_settings, q, qd, *args)
        if solve[0] != solve[0]:  # eps = NaN
            raise np.linalg.LinAlgError(NOT_DEFINITE)
        t_v = time.perf_counter()
        viol = self._acceleration_projection(self.projection_settings, solve, q, qd, qdd, *args)
        return float(viol), t_v

    def _python_projections(self, q, qd, qdd):
        """The projections of :meth:`_tree_projections` step by step with the dense linear
        solve (``linear="dense"``, the test oracle of the tree kernels)."""
        body, leaf = self.body, self.leaf
        if self.exact:
            # exact: one matrix pass at the final q, leaf blocks (M + k p p^T)^-1, eps = 0,
            # and the position projection G dq + phi = 0 with it
            sgn, eps, kp = 1.0, 0.0, -self.k_exact
            for rnd in range(N.POSITION_ROUNDS):
                self._exact_matrices(q, qd)
                body.nu[:] = 0.0
                N.projection_rhs(leaf.pst, body.zero7, body.nu, kp, leaf.base, leaf.rhs)
                self._solve(self.rows.phi, eps, sgn, False)
                if rnd == N.POSITION_ROUNDS - 1 or np.abs(leaf.out).max() < N.POSITION_TOL:
                    break
                q += leaf.out
        else:
            # penalised (paper): the last Newton matrices; the force elements' rows are not
            # constraints (the dense solve reads G afresh)
            sgn, eps, kp = -1.0, 1.0 / self.alpha, self.alpha
            self.lay.G[:, self.n_joint_rows:] = 0.0
        body.nu[:] = 0.0
        N.projection_rhs(leaf.pst, qd, body.nu, kp, leaf.base, leaf.rhs)
        self._solve(self.rows.zero_rows, eps, sgn, False)
        qd[:] = leaf.out
        t_v = time.perf_counter()
        self._kinematics(q, qd, qdd)
        self._rows()  # g at the projected velocities; phi at the final q
        phi = self.rows.phi
        viol = float(np.sqrt(np.dot(phi, phi)))
        body.nu[:] = -np.sum(qd[:, 3:] ** 2, axis=1)
        N.projection_rhs(leaf.pst, qdd, body.nu, kp, leaf.base, leaf.rhs)
        self._solve(self.rows.gq, eps, sgn, False)
        qdd[:] = leaf.out
        leaf.base[:] = 0.0
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
        b = self.body
        self._kinematics(q, qd, b.zero7)
        if forces:
            self._forces()
        K.body_mass_forces(self.model.mass, self.model.inertia, q, qd, b.R, b.F, b.Mb, b.Qb)
        self._rows()
        # Mb stands for the geometric stiffness H_geo, which geo = False leaves unread
        N.leaf_matrices(self.lay.ix, self.model_arrays, b.Mb, b.Mb, q, 1.0, False, self.k_exact, 1.0, self.leaf,
                        self.lay.Phi)
        if not self.leaf.ok.all():
            raise np.linalg.LinAlgError(NOT_DEFINITE)
        lay = self.lay
        lay.G[:] = self.rows.G7
        if self.linear == "tree":
            tree.assemble_matrices7(lay.ix, lay.work, 0.0, 1.0, config.PIVOT_RTOL, None)  # hy: as the step kernels pass it

    # ------------------------------------------------------------------ output
    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        q, qd, qdd, lam, mu = self._split(y)
        self._kinematics(q, qd, qdd)
        self._rows()
        b = self.body
        P = np.empty((m.nj, 3))
        K.joint_points(m.pred, m.anchor_pred, b.x, b.R, P)
        reactions = np.zeros((m.nj, 6))
        K.body_wrench_from_rows(self.ca, self.row_adr, b.x, P, self.rows.Gb, lam, reactions)
        if not np.isfinite(q).all():
            raise SingularSystemError(t, "positions are not finite")
        return Evaluation(t=t, x=b.x.copy(), R=b.R.copy(), V=b.V.copy(), acc=b.A.copy(), P=P,
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
                f"{self.penalty_at(dt) * dt * dt / 4:.3g})"
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

    def row_kernels(self):
        """The compiled row loop's kernels (:mod:`.index3_rows`) where the step, the
        evaluation and the health report are this class's own, on the tree solve."""
        cls = type(self)
        if (self.linear != "tree" or cls.step is not Index3Formulation.step
                or cls.evaluate is not Index3Formulation.evaluate or cls.health is not Index3Formulation.health
                or cls._watch is not Index3Formulation._watch or not hasattr(N.newton_iterations, "overloads")):
            return None
        return row_kernels(self, Limits(self.tol, NEWTON_MORE_ACC, NEWTON_MORE_ROUNDS, NEWTON_STALL,
                                        UNCONVERGED_VIOLATION, CONVERGED_STEPS, DIVERGED_VIOLATION))

    def stats(self) -> dict:
        """The run's statistics; the Newton and projection times are those of the steps made
        in Python (the compiled row loop's steps are not timed by part: ``linkwork study
        index3`` times its steps in Python)."""
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
