"""Static equilibrium: where a mechanism comes to rest, and whether that rest is stable.

The configuration is the spanning tree's joint coordinates ``q`` (:mod:`engine.kinematics`);
the loops close through the cut joints' absolute-coordinate residuals
(:mod:`engine.constraints`), gears are their joint-space rows, and joints held fixed (the
driven joints of ``spec.drivers``, or any joint asked for) are rows ``q_j = 0``.  Increments
live in the tree *velocity* coordinates ``dv`` (nv): a spherical joint's quaternion moves by
the rotation ``exp(dv/2)`` on the left, every other coordinate by addition
(:meth:`Statics.retract`).

The potential (docs/derivations.md, "Static equilibrium and linear modes") is gravity, point
springs and joint springs (the engine's own :func:`~engine.forces.energies`) minus the work
of the constant joint torques ``tau . q``; dampers do nothing at rest.  Its gradient in ``dv``
is minus the generalized applied force ``Q = sum_i J_i^T F_i`` (exact: the engine's force
kernel and the bodies' twist Jacobians ``J_i``).  The rest is a minimum of ``V`` on
``Phi(q) = 0``: Newton's method on the reduced gradient ``N^T grad V`` (``N`` an orthonormal
basis of the null space of the constraint Jacobian ``A``) with the reduced Hessian
``N^T (grad^2 V + lambda . Phi_qq) N`` and a backtracking line search on ``V``; after every
step the configuration is projected back onto the constraints (Gauss-Newton, minimum-norm
steps) to round-off.  The Hessian of the Lagrangian is the central difference of its exact
gradient ``-Q + A^T lambda``, extrapolated (Richardson): accurate to about 1e-11 relative.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..constraints import all_constraints, con_arrays, coupling_rows
from ..errors import MechanismError
from ..mechfile import GROUND
from ..forces import energies, force_arrays, joint_coordinate, joint_rate, spring_joints, tree_applied_forces
from ..kinematics import fk_positions, fk_velocities, kin_arrays, motion_subspace, subtree_sums
from ..model import (CYLINDRICAL, F_JOINT_SPRING, F_JOINT_TORQUE, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL,
                     Model)

#: the constraint residual the configuration is kept at (2-norm, metres and radians)
CONSTRAINT_TOL = 1e-13
#: Newton stops when the reduced gradient is below this times the mechanism's force scale
GRADIENT_TOL = 1e-14
#: ... and has converged when it ends below this (the floor round-off may leave)
GRADIENT_ACCEPT = 1e-9
#: a reduced-Hessian eigenvalue below this times the largest (or the force scale) is neutral
NEUTRAL_TOL = 1e-8
MAX_ITERATIONS = 100


class EquilibriumError(Exception):
    """Newton did not reach a rest (the message says how far it got)."""


class Statics:
    """A model's potential, applied forces and constraints as functions of its tree
    coordinates, with their first derivatives exact and the second by extrapolated
    central differences.  ``hold``: internal indices of one-freedom joints held at their
    t = 0 coordinate."""

    def __init__(self, model: Model, hold=()):
        self.model = m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
        self.hold = tuple(int(j) for j in hold)
        springs = spring_joints(m)
        self.spring_tree = np.ascontiguousarray(springs[springs < m.nb])
        self.spring_cut = np.ascontiguousarray(springs[springs >= m.nb])
        # workspace, filled by pose(): positions, orientations, joint points, motion subspace
        self.x = np.zeros((m.nb, 3))
        self.R = np.zeros((m.nb, 3, 3))
        self.P = np.zeros((m.nj, 3))
        self.S = np.zeros((m.nv, 6))
        self.jq = np.zeros(m.nj)
        self.jq_ref = np.zeros(m.nj)
        self.torques = self._torque_terms()
        #: the tree joint (= its successor body) of each velocity coordinate
        self.joint_of_v = np.repeat(np.arange(m.nb), m.nv_j[:m.nb])
        # retract's index arrays: coordinates moved by addition, and the spherical joints'
        # quaternions (ns, 4) with their rotation increments (ns, 3)
        sph = [j for j in range(m.nb) if m.jtype[j] == SPHERICAL]
        add = [j for j in range(m.nb) if m.jtype[j] != SPHERICAL]
        self._add_q = np.array([m.q_adr[j] + k for j in add for k in range(m.nv_j[j])], dtype=np.int64)
        self._add_v = np.array([m.v_adr[j] + k for j in add for k in range(m.nv_j[j])], dtype=np.int64)
        self._sph_q = np.array([[m.q_adr[j] + k for k in range(4)] for j in sph], dtype=np.int64).reshape(-1, 4)
        self._sph_v = np.array([[m.v_adr[j] + k for k in range(3)] for j in sph], dtype=np.int64).reshape(-1, 3)
        pts = np.vstack([m.x0, [j.anchor for j in m.spec.joints] or np.zeros((0, 3))])
        self.length = float(max(np.max(np.linalg.norm(pts - pts.mean(axis=0), axis=1)), 1e-3))
        # translational velocity coordinates (prismatic, cylindrical's second) scale with length
        self.coord_scale = np.ones(m.nv)
        for j in range(m.nb):
            if m.jtype[j] == PRISMATIC:
                self.coord_scale[m.v_adr[j]] = self.length
            elif m.jtype[j] == CYLINDRICAL:
                self.coord_scale[m.v_adr[j] + 1] = self.length
        self.force_scale = self._force_scale()

    # ------------------------------------------------------------------ set-up
    def _torque_terms(self):
        """(element, joint, coordinate getter kind, values) of every constant joint torque:
        its potential is ``-tau . q``, which needs the joint's coordinates."""
        m = self.model
        out = []
        for e in np.flatnonzero(m.f_type == F_JOINT_TORQUE):
            j = int(m.f_joint[e])
            jt = int(m.jtype[j])
            vals = m.f_params[e]
            if jt in (REVOLUTE, PRISMATIC):
                out.append((j, (vals[0],)))
            elif j < m.nb and jt == CYLINDRICAL:
                out.append((j, (vals[0], vals[1])))
            elif j < m.nb and jt == UNIVERSAL:  # internal axes of a reversed joint swap the values
                out.append((j, (vals[1], vals[0]) if m.reversed[j] else (vals[0], vals[1])))
            else:
                kind = m.spec.joints[m.joint_file_index[j]].type
                what = "a spherical joint" if jt == SPHERICAL else f"the loop-closing {kind} joint"
                raise MechanismError(
                    f"forces[{e}]", f"a constant torque on {what} {m.joint_names[j]!r} has no potential: "
                    "static equilibrium and modes take joint torques on one-freedom joints, and on "
                    "cylindrical and universal joints of the spanning tree")
        return out

    def _force_scale(self) -> float:
        """A generalized force typical of the mechanism (N m): gravity's moment over its size,
        the springs' at a length's stretch, the torques."""
        m = self.model
        s = float(np.sum(m.mass)) * float(np.linalg.norm(m.gravity)) * self.length
        for e in range(m.f_type.shape[0]):
            k = abs(m.f_params[e, 0])
            if m.f_type[e] == F_JOINT_TORQUE:
                s += float(np.sum(np.abs(m.f_params[e])))
            elif m.f_type[e] == F_JOINT_SPRING:
                s += k * (1.0 if m.jtype[m.f_joint[e]] == REVOLUTE else self.length ** 2)
            else:
                s += k * self.length ** 2
        return max(s, 1e-12)

    # ------------------------------------------------------------------ coordinates
    def retract(self, q: np.ndarray, dv: np.ndarray) -> np.ndarray:
        """``q`` moved by the velocity-coordinate increment ``dv``: a spherical joint's
        quaternion by the rotation ``exp(w/2)`` on the left (renormalised), every other
        coordinate by addition."""
        out = np.array(q, dtype=float)
        dv = np.asarray(dv, dtype=float)
        out[self._add_q] += dv[self._add_v]
        if self._sph_q.shape[0]:
            w = dv[self._sph_v]  # (ns, 3)
            th = np.linalg.norm(w, axis=1)
            half = 0.5 * th
            sinc = np.where(th > 0.0, np.sin(half) / np.where(th > 0.0, th, 1.0), 0.5)
            e = np.column_stack([np.cos(half), sinc[:, None] * w])
            p = _quat_mul(e.T, out[self._sph_q].T).T
            out[self._sph_q] = p / np.linalg.norm(p, axis=1)[:, None]
        return out

    def pose(self, q: np.ndarray) -> None:
        """Fill the poses, joint points and motion subspace of configuration ``q``."""
        q = np.ascontiguousarray(q, dtype=float)
        fk_positions(self.mk, q, self.x, self.R, self.P)
        motion_subspace(self.mk, q, self.R, self.S)

    def jacobian(self) -> np.ndarray:
        """(nb, 6, nv) body twists ``[v_C; w]`` per unit tree velocity, at the last pose."""
        m = self.model
        J = np.zeros((m.nb, 6, m.nv))
        V = np.zeros((m.nb, 6))
        c = np.zeros((m.nb, 6))
        for k in range(m.nv):
            v = np.zeros(m.nv)
            v[k] = 1.0
            fk_velocities(self.mk, self.x, self.P, self.S, v, V, c)
            J[:, :, k] = V
        return J

    # ------------------------------------------------------------------ forces and potential
    def _wrenches(self, q, V) -> np.ndarray:
        F = np.zeros((self.model.nb, 6))
        tree_applied_forces(self.fa, np.ascontiguousarray(q, dtype=float), self.model.q_adr, self.spring_tree,
                            self.spring_cut, self.x, self.R, V, self.jq, self.jq_ref, F)
        self.jq_ref[:] = self.jq
        return F

    def generalized_force(self, q: np.ndarray, v: np.ndarray | None = None) -> np.ndarray:
        """(nv,) ``Q = sum_i J_i^T F_i`` of gravity and every force element at ``(q, v)``
        (``v`` zero when omitted): the power of the applied forces per unit tree velocity.
        One backward pass: each tree joint's motion columns against the wrench of the bodies
        outboard of it, about its point (``subtree_sums``)."""
        m = self.model
        self.pose(q)
        V = np.zeros((m.nb, 6))
        if v is not None:
            fk_velocities(self.mk, self.x, self.P, self.S, np.ascontiguousarray(v, dtype=float), V,
                          np.zeros((m.nb, 6)))
        F = self._wrenches(q, V)
        W = np.zeros((m.nb, 6))
        subtree_sums(m.parent, self.x, self.P, F, W)
        return np.einsum("ki,ki->k", self.S, W[self.joint_of_v])

    def joint_coordinates(self, q: np.ndarray) -> np.ndarray:
        """(nj,) the coordinate of every one-freedom joint (zero at t = 0); tree joints from
        ``q``, cut joints from the poses (``pose(q)`` first)."""
        m = self.model
        jq = np.zeros(m.nj)
        for j in range(m.nj):
            if m.jtype[j] not in (REVOLUTE, PRISMATIC):
                continue
            jq[j] = q[m.q_adr[j]] if j < m.nb else joint_coordinate(self.fa, j, self.x, self.R, self.jq_ref[j])
        return jq

    def potential(self, q: np.ndarray) -> float:
        """``V(q)``: gravity + springs + joint springs - sum of tau . q (J)."""
        m = self.model
        self.pose(q)
        self._wrenches(q, np.zeros((m.nb, 6)))  # fills the joint springs' coordinates
        _, pe = energies(self.fa, m.inertia, self.x, self.R, np.zeros((m.nb, 6)), self.jq)
        for j, vals in self.torques:
            if j < m.nb:
                qa = m.q_adr[j]
                pe -= sum(t * q[qa + i] for i, t in enumerate(vals))
            else:
                pe -= vals[0] * joint_coordinate(self.fa, j, self.x, self.R, self.jq_ref[j])
        return float(pe)

    # ------------------------------------------------------------------ constraints
    def constraints(self, q: np.ndarray):
        """``(Phi, A)``: the residuals of the cut joints, the gears and the held joints, and
        their Jacobian (m, nv) in the tree velocity coordinates."""
        m = self.model
        self.pose(q)
        J = self.jacobian() if m.nj > m.nb else None  # the loops' rows and held cut joints need it
        phi_all = np.zeros(m.nc)
        Ga = np.zeros((m.nc, 6))
        Gb = np.zeros((m.nc, 6))
        g = np.zeros(m.nc)
        all_constraints(self.ca, self.x, self.R, np.zeros((m.nb, 6)), phi_all, Ga, Gb, g)
        phis, rows = [], []
        for j in range(m.nb, m.nj):
            r, n = m.c_adr[j], m.nc_j[j]
            a, b = m.pred[j], m.succ[j]
            Aj = Gb[r:r + n] @ J[b]
            if a >= 0:
                Aj = Aj + Ga[r:r + n] @ J[a]
            phis.append(phi_all[r:r + n])
            rows.append(Aj)
        if m.ng:
            phi_g, K, _ = coupling_rows(m, np.asarray(q, dtype=float))
            phis.append(phi_g)
            rows.append(K)
        for j in self.hold:
            row = np.zeros((1, m.nv))
            if j < m.nb:
                row[0, m.v_adr[j]] = 1.0
                phis.append(np.array([q[m.q_adr[j]]]))
            else:
                for k in range(m.nv):
                    row[0, k] = joint_rate(self.fa, j, self.x, self.R, np.ascontiguousarray(J[:, :, k]))
                phis.append(np.array([joint_coordinate(self.fa, j, self.x, self.R, 0.0)]))
            rows.append(row)
        if not rows:
            return np.zeros(0), np.zeros((0, m.nv))
        return np.concatenate(phis), np.vstack(rows)

    def project(self, q: np.ndarray):
        """``q`` moved onto the constraints (Gauss-Newton, minimum-norm steps) until the
        residual stops falling below :data:`CONSTRAINT_TOL`; returns (q, residual)."""
        best = None
        for _ in range(50):
            phi, A = self.constraints(q)
            res = float(np.linalg.norm(phi))
            if best is not None and res >= best[1] * 0.5 and res <= 1e-12:
                return best if best[1] <= res else (q, res)
            best = (q, res) if best is None or res < best[1] else best
            if res <= CONSTRAINT_TOL:
                return q, res
            q = self.retract(q, -np.linalg.lstsq(A, phi, rcond=1e-10)[0])
        return best

    # ------------------------------------------------------------------ second order
    def multipliers(self, Q: np.ndarray, A: np.ndarray) -> np.ndarray:
        """``lambda`` with ``A^T lambda = Q`` in least squares (the constraint forces that
        balance the applied ones: ``grad V + A^T lambda = 0`` at rest, ``grad V = -Q``)."""
        if A.shape[0] == 0:
            return np.zeros(0)
        return np.linalg.lstsq(A.T, Q, rcond=1e-10)[0]

    def lagrangian_gradient(self, q: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """``-Q(q) + A(q)^T lambda``: the gradient of ``V + lambda . Phi`` in ``dv``."""
        r = -self.generalized_force(q)
        if lam.shape[0]:
            r += self.constraints(q)[1].T @ lam
        return r

    def hessian(self, q: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """(nv, nv) ``grad^2 V + lambda . Phi_qq``: central differences of the exact
        gradient with steps h and h/2, extrapolated (Richardson), symmetrised."""
        nv = self.model.nv
        H = np.zeros((nv, nv))
        ref = self.jq_ref.copy()
        for k in range(nv):
            d = np.zeros(nv)
            cols = []
            for h in (1e-3, 5e-4):
                d[k] = h * self.coord_scale[k]
                self.jq_ref[:] = ref
                rp = self.lagrangian_gradient(self.retract(q, d), lam)
                self.jq_ref[:] = ref
                rm = self.lagrangian_gradient(self.retract(q, -d), lam)
                cols.append((rp - rm) / (2.0 * d[k]))
            H[:, k] = (4.0 * cols[1] - cols[0]) / 3.0
        self.jq_ref[:] = ref
        return 0.5 * (H + H.T)

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """(nv, nv) ``sum_i J_i^T diag(m_i 1, R_i I_i R_i^T) J_i``."""
        m = self.model
        self.pose(q)
        J = self.jacobian()
        M = np.zeros((m.nv, m.nv))
        for i in range(m.nb):
            Mi = np.zeros((6, 6))
            Mi[:3, :3] = m.mass[i] * np.eye(3)
            Mi[3:, 3:] = self.R[i] @ m.inertia[i] @ self.R[i].T
            M += J[i].T @ Mi @ J[i]
        return 0.5 * (M + M.T)

    def damping_matrix(self, q: np.ndarray) -> np.ndarray:
        """(nv, nv) ``C = -dQ/dv`` at rest: the dampers' forces are linear in the velocities,
        so each column is one evaluation at a unit velocity."""
        nv = self.model.nv
        ref = self.jq_ref.copy()
        Q0 = self.generalized_force(q)
        C = np.zeros((nv, nv))
        for k in range(nv):
            v = np.zeros(nv)
            v[k] = 1.0
            self.jq_ref[:] = ref
            C[:, k] = -(self.generalized_force(q, v) - Q0)
        return 0.5 * (C + C.T)

    def coordinate_labels(self) -> list[str]:
        """One label per tree velocity coordinate: the joint's name, with ``[k]`` for a
        joint of several freedoms."""
        m = self.model
        out = []
        for j in range(m.nb):
            n = int(m.nv_j[j])
            out += [m.joint_names[j]] if n == 1 else [f"{m.joint_names[j]}[{i}]" for i in range(n)]
        return out


def _quat_mul(a, b):
    return np.array([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                     a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                     a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                     a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])


def null_space(A: np.ndarray, n: int) -> np.ndarray:
    """(n, f) orthonormal basis of the null space of ``A`` (m, n); rows of ``A`` that are
    combinations of others (planar loops' out-of-plane equations) are no constraint."""
    if A.shape[0] == 0:
        return np.eye(n)
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > 1e-9 * max(1.0, s[0]))) if s.size else 0
    return Vt[rank:].T.copy()


# ---------------------------------------------------------------------- the equilibrium


@dataclass(frozen=True)
class Equilibrium:
    """A rest configuration and its stability (:func:`find_equilibrium`)."""

    q: np.ndarray  # (nq,) tree coordinates at rest
    converged: bool
    iterations: int
    constraint_residual: float  # 2-norm of Phi at rest
    gradient_residual: float  # 2-norm of N^T grad V at rest (N orthonormal), N m or N
    force_scale: float  # the generalized force the tolerances are relative to
    energy: float  # V at rest, J
    energy_start: float  # V at the file's configuration (projected onto the constraints), J
    eigenvalues: np.ndarray  # (f,) reduced Hessian N^T (grad^2 V + lambda . Phi_qq) N, ascending
    directions: np.ndarray  # (nv, f) the eigenvectors, in tree velocity coordinates
    multipliers: np.ndarray  # (m,) lambda at rest
    verdict: str  # "stable", "unstable" or "neutral"
    labels: tuple[str, ...]  # names of the tree velocity coordinates
    neutral_tol: float

    def direction_text(self, k: int) -> str:
        """Eigenvector ``k`` as its larger components: ``J1 +0.71, J3 -0.71``."""
        d = self.directions[:, k]
        big = np.max(np.abs(d))
        big = 1.0 if big == 0 else big
        parts = [f"{self.labels[i]} {d[i] / big:+.3g}" for i in range(d.size) if abs(d[i]) >= 0.05 * big]
        return ", ".join(parts)


def held_joints(model: Model, names=()) -> tuple[int, ...]:
    """Internal indices of the joints held at their t = 0 coordinate: the driven joints of
    ``spec.drivers`` and the joints ``names``; each must have one freedom."""
    spec = model.spec
    wanted = [d.joint for d in getattr(spec, "drivers", ())] + list(names)
    out = []
    for name in wanted:
        if name not in model.joint_names:
            raise MechanismError("(hold)", f"no joint named {name!r}")
        j = model.joint_index(name)
        if model.jtype[j] not in (REVOLUTE, PRISMATIC):
            raise MechanismError("(hold)", f"joint {name!r} is {spec.joint(name).type}; only a revolute or "
                                           "prismatic joint can be held")
        if j not in out:
            out.append(j)
    return tuple(out)


def find_equilibrium(model: Model, q0: np.ndarray | None = None, hold=(), max_iterations: int = MAX_ITERATIONS,
                     statics: Statics | None = None) -> Equilibrium:
    """The rest nearest the configuration ``q0`` [the file's] that Newton's descent reaches.

    Raises :class:`EquilibriumError` when the constraints cannot be met or Newton stalls
    above the tolerance; the message says the residuals it reached."""
    st = statics or Statics(model, held_joints(model, hold))
    q = model.q_zero() if q0 is None else np.array(q0, dtype=float)
    q, res = st.project(q)
    if res > 1e-12:
        raise EquilibriumError(f"the joints cannot be assembled near the file's configuration "
                               f"(constraint residual {res:.3g} after Gauss-Newton)")
    scale = st.force_scale
    energy_start = V = st.potential(q)
    it = 0
    gr_norm = np.inf
    prev = np.inf
    while True:
        Q = st.generalized_force(q)
        phi, A = st.constraints(q)
        N = null_space(A, model.nv)
        gr = -N.T @ Q
        gr_norm = float(np.linalg.norm(gr))
        if gr_norm <= GRADIENT_TOL * scale or N.shape[1] == 0:
            break
        if it >= max_iterations or (gr_norm <= GRADIENT_ACCEPT * scale and gr_norm >= 0.5 * prev):
            break  # round-off floor: no step makes it smaller
        prev = gr_norm
        lam = st.multipliers(Q, A)
        H = N.T @ st.hessian(q, lam) @ N
        w, U = np.linalg.eigh(0.5 * (H + H.T))
        floor = 1e-6 * max(np.max(np.abs(w)), scale)
        w = np.maximum(np.abs(w), floor)  # a descent direction where the Hessian is indefinite
        z = -U @ ((U.T @ gr) / w)
        dv = N @ z
        slope = float(gr @ z)
        alpha = 1.0
        slack = 1e-13 * (abs(V) + scale * st.length)
        for _ in range(40):
            qn, res = st.project(st.retract(q, alpha * dv))
            if res <= 1e-12:
                Vn = st.potential(qn)
                if Vn <= V + 1e-4 * alpha * slope + slack:
                    break
            alpha *= 0.5
        else:
            break  # no step lowers V: the residual below decides whether that is a rest
        q, V = qn, Vn
        it += 1
    phi, A = st.constraints(q)
    Q = st.generalized_force(q)
    N = null_space(A, model.nv)
    lam = st.multipliers(Q, A)
    converged = gr_norm <= GRADIENT_ACCEPT * scale
    if not converged:
        raise EquilibriumError(
            f"no rest found: after {it} Newton iterations the reduced gradient is {gr_norm:.3g} "
            f"(tolerance {GRADIENT_ACCEPT * scale:.3g}), potential {V:.9g} J from {energy_start:.9g} J")
    return _classify(st, q, it, float(np.linalg.norm(phi)), gr_norm, V, energy_start, N, lam)


def check_equilibrium(model: Model, q: np.ndarray | None = None, hold=(), tol: float = GRADIENT_ACCEPT) -> Equilibrium:
    """The configuration ``q`` [the file's] as an equilibrium, without moving it; raises
    :class:`EquilibriumError` when its constraint residual or reduced gradient is above the
    tolerances (relative to the force scale)."""
    st = Statics(model, held_joints(model, hold))
    q = model.q_zero() if q is None else np.array(q, dtype=float)
    phi, A = st.constraints(q)
    res = float(np.linalg.norm(phi))
    Q = st.generalized_force(q)
    N = null_space(A, model.nv)
    gr = float(np.linalg.norm(N.T @ Q))
    if res > 1e-9 * st.length or gr > tol * st.force_scale:
        raise EquilibriumError(f"the configuration is not an equilibrium: reduced gradient {gr:.3g} "
                               f"(tolerance {tol * st.force_scale:.3g}), constraint residual {res:.3g}")
    V = st.potential(q)
    return _classify(st, q, 0, res, gr, V, V, N, st.multipliers(Q, A))


def _classify(st: Statics, q, it, res, gr, V, V0, N, lam) -> Equilibrium:
    f = N.shape[1]
    if f:
        H = N.T @ st.hessian(q, lam) @ N
        w, U = np.linalg.eigh(0.5 * (H + H.T))
    else:
        w, U = np.zeros(0), np.zeros((0, 0))
    tol = NEUTRAL_TOL * max(float(np.max(np.abs(w))) if f else 0.0, st.force_scale)
    if f and w[0] < -tol:
        verdict = "unstable"
    elif f and w[0] <= tol:
        verdict = "neutral"
    else:
        verdict = "stable"
    return Equilibrium(q=q, converged=True, iterations=it, constraint_residual=res, gradient_residual=gr,
                       force_scale=st.force_scale, energy=V, energy_start=V0, eigenvalues=w,
                       directions=N @ U if f else np.zeros((st.model.nv, 0)), multipliers=lam,
                       verdict=verdict, labels=tuple(st.coordinate_labels()), neutral_tol=tol)


def spec_at_rest(model: Model, q: np.ndarray):
    """The mechanism file's spec with the configuration ``q`` as its initial one: poses,
    joint anchors and axes, spring points and drawn shapes moved with their bodies, joint
    springs' rests shifted by the joint's coordinate (coordinates are zero at t = 0 again),
    every velocity and joint rate zero."""
    spec = model.spec
    st = Statics(model)
    st.pose(q)
    x, R = st.x.copy(), st.R.copy()
    jq = st.joint_coordinates(q)

    def moved(b_name):
        """world point at t = 0 -> world point at rest, on body ``b_name`` (ground stays)."""
        if b_name == GROUND:
            return lambda p: tuple(float(c) for c in p)
        i = model.body_index(b_name)
        T = R[i] @ model.R0_body[i].T
        return lambda p: tuple(float(c) for c in x[i] + T @ (np.asarray(p, float) - model.x0[i]))

    def turned(b_name):
        if b_name == GROUND:
            return lambda a: tuple(float(c) for c in a)
        i = model.body_index(b_name)
        T = R[i] @ model.R0_body[i].T
        return lambda a: tuple(float(c) for c in T @ np.asarray(a, float))

    bodies = []
    for b in spec.bodies:
        i = model.body_index(b.name)
        shape = b.shape
        if shape is not None and shape.kind == "rod":
            shape = replace(shape, p_from=moved(b.name)(shape.p_from), p_to=moved(b.name)(shape.p_to))
        elif shape is not None and shape.kind == "cylinder" and shape.axis is not None:
            shape = replace(shape, axis=turned(b.name)(shape.axis))
        bodies.append(replace(b, position=tuple(float(c) for c in x[i]), orientation=_quaternion(R[i]),
                              velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0), shape=shape))
    joints = []
    for js in spec.joints:
        j = model.joint_index(js.name)
        changes = {"anchor": moved(js.parent)(js.anchor), "rate": None}
        if js.axis is not None:
            changes["axis"] = turned(js.parent)(js.axis)
        if js.axes is not None:
            changes["axes"] = (turned(js.parent)(js.axes[0]), turned(js.child)(js.axes[1]))
        joints.append(replace(js, **changes))
    forces = []
    for e, f in enumerate(spec.forces):
        if f.type == "spring":
            f = replace(f, point1=moved(f.body1)(f.point1), point2=moved(f.body2)(f.point2),
                        rest_length=float(model.f_params[e, 2]))
        elif f.type == "joint-spring":
            f = replace(f, rest=float(f.rest - jq[model.joint_index(f.joint)]))
        forces.append(f)
    return spec.with_(bodies=tuple(bodies), joints=tuple(joints), forces=tuple(forces))


def _quaternion(R) -> tuple[float, float, float, float]:
    from ..spatial import rot_to_quat

    out = np.zeros(4)
    rot_to_quat(np.ascontiguousarray(R), out)
    out /= np.linalg.norm(out)
    return tuple(float(c) for c in out)
