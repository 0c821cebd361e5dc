"""Initial state: body twists from the file's velocities and joint rates.

docs/file-format.md, "Mechanism file": "Initial velocities given on bodies and as joint rates are
combined, then projected (mass-orthogonally) onto the velocity constraints;
the size of that correction is reported."  Linkwork's reading
(docs/file-format.md, "Initial velocities"):

1. *combine*: every body starts with its file velocity; the rate of each tree
   joint adds its relative motion to all bodies outboard of it;
2. *project*: the twists ``V`` closest to the combination in the kinetic-energy
   metric that satisfy every joint's velocity constraint, every gear's
   (``qdot_driver = mu qdot_driven``) and every driver's (``qdot_J = f'(0)``,
   docs/file-format.md, "Drivers") and keep every given joint rate exactly
   (``min |V - V_c|_M  s.t.  G V = g,  S_j^T dV_j = rate_j``); a driver's rate wins
   over a rate the file gives its joint.

The report gives the kinetic energy of the correction, its share of the
combined kinetic energy, and the largest change of any velocity component.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .constraints import constraint_jacobian, coupling_twist_rows
from .drivers import motion_values
from .errors import SimulationError
from .kinematics import fk_positions, kin_arrays, motion_subspace
from .model import CYLINDRICAL, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL, Model


#: the drivers' velocity residual after the projection, relative to the velocities'
#: scale, above which the start is refused (:func:`_drivers_met`; round-off leaves 1e-15)
DRIVER_RATE_RTOL = 1e-9


@dataclass(frozen=True)
class InitialState:
    x: np.ndarray  # (nb, 3)
    R: np.ndarray  # (nb, 3, 3)
    V: np.ndarray  # (nb, 6) projected COM twists [v_C; w]
    V_combined: np.ndarray  # (nb, 6) before projection
    correction_energy: float  # J, kinetic energy of V - V_combined
    correction_ratio: float  # correction energy / kinetic energy of V_combined
    correction_max: float  # largest |component| of V - V_combined
    rate_residual: float  # how far the given joint rates could not all be honoured
    rated_joints: tuple[str, ...] = ()  # names of the joints whose rate the file gives

    def report(self) -> str:
        """What the projection changed, and whether the motion the file states was kept."""
        if self.correction_max == 0.0:
            return "initial velocities are consistent with the joints (no correction)"
        size = (f"largest velocity change {self.correction_max:.3g} (m/s or rad/s), kinetic energy of the "
                f"change {self.correction_energy:.3g} J ({100 * self.correction_ratio:.3g} % of the motion "
                "as given)")
        if not self.rated_joints:
            return (f"initial velocities projected onto the joint constraints (mass-orthogonally): {size}")
        names = ", ".join(self.rated_joints)
        if self.rate_residual > 1e-9:
            return (f"initial velocities projected onto the joint constraints: the joint rates given for "
                    f"{names} are incompatible with the joints and were not all kept (residual "
                    f"{self.rate_residual:.3g}); {size}")
        return (f"initial velocities projected onto the joint constraints: the joint rates given for {names} "
                f"were kept exactly, the other velocities were changed to fit the joints; {size}")


def joint_subspace(model: Model, j: int, R: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
    """(dof, 6) motion-subspace rows of joint ``j`` (tree or cut) at orientations ``R``.

    For a cut joint this is the subspace the joint *would* allow; universal
    second axes are taken at the current relative rotation.
    """
    t = model.jtype[j]
    a = model.pred[j]
    Ra = np.eye(3) if a < 0 else R[a]
    ax = Ra @ model.axis_pred[j]
    z = np.zeros(3)
    if t == REVOLUTE:
        return np.array([np.r_[z, ax]])
    if t == PRISMATIC:
        return np.array([np.r_[ax, z]])
    if t == CYLINDRICAL:
        return np.array([np.r_[z, ax], np.r_[ax, z]])
    if t == UNIVERSAL:
        a2 = R[model.succ[j]] @ model.axis_succ[j]
        return np.array([np.r_[z, ax], np.r_[z, a2]])
    if t == SPHERICAL:
        return np.array([np.r_[z, Ra[:, k]] for k in range(3)])
    return np.zeros((0, 6))


def internal_rate(model: Model, j: int, R: np.ndarray) -> np.ndarray | None:
    """The file's rate of joint ``j`` in the internal sense of :func:`joint_subspace`."""
    spec = model.spec.joints[model.joint_file_index[j]]
    if spec.rate is None:
        return None
    r = np.array(spec.rate, dtype=float)
    t = model.jtype[j]
    if t == UNIVERSAL and model.reversed[j]:
        r = r[::-1].copy()
    elif t == SPHERICAL:
        # file: relative angular velocity of child w.r.t. parent, world frame
        a = model.pred[j]
        Ra = np.eye(3) if a < 0 else R[a]
        w = -r if model.reversed[j] else r
        r = Ra.T @ w
    return r


def initial_state(model: Model) -> InitialState:
    nb = model.nb
    q = model.q_zero()
    x = np.zeros((nb, 3))
    R = np.zeros((nb, 3, 3))
    P = np.zeros((model.nj, 3))
    fk_positions(kin_arrays(model), q, x, R, P)
    S = np.zeros((model.nv, 6))
    motion_subspace(kin_arrays(model), q, R, S)

    V = np.zeros((nb, 6))
    for i in range(nb):
        b = model.spec.bodies[model.body_file_index[i]]
        V[i, :3] = b.velocity
        V[i, 3:] = b.angular_velocity
    # 1. combine: propagate tree-joint rates outboard
    rated = []
    for j in range(model.nj):
        r = internal_rate(model, j, R)
        if r is None:
            continue
        rated.append((j, r))
        if j >= nb:
            continue
        tw = joint_subspace(model, j, R).T @ r  # about P_j
        # every body in the subtree of j moves with this relative twist
        for i in range(j, nb):
            k = i
            while k > j:
                k = model.parent[k]
            if k == j:
                l = x[i] - P[j]
                V[i, :3] += tw[:3] + np.cross(tw[3:], l)
                V[i, 3:] += tw[3:]
    Vc = V.copy()

    # 2. project
    Jac, _, _ = constraint_jacobian(model, x, R)
    # the velocity constraints: every joint's, every gear's (qdot_d = mu qdot_n), then
    # every driver's (qdot_J = f'(0))
    ncon = model.nc + model.ng + model.nd
    rows = [Jac, coupling_twist_rows(model, x, R, P)]
    rhs = [np.zeros(model.nc + model.ng)]
    for i in range(model.nd):
        rows.append(_rate_rows(model, int(model.d_joint[i]), x, R, P))
        rhs.append(np.array([motion_values(model.d_motion, i, 0.0)[1]]))
    for j, r in rated:
        rows.append(_rate_rows(model, j, x, R, P))
        rhs.append(r)
    A = np.vstack(rows)
    bvec = np.concatenate(rhs)
    Minv = np.zeros(6 * nb)
    Mdiag_blocks = []
    for i in range(nb):
        Minv[6 * i:6 * i + 3] = 1.0 / model.mass[i]
        Jw = R[i] @ model.inertia[i] @ R[i].T
        Mdiag_blocks.append(Jw)
    Vflat = Vc.reshape(-1)
    res = A @ Vflat - bvec
    scale = max(1.0, float(np.abs(Vflat).max(initial=0.0)), float(np.abs(bvec).max(initial=0.0)))
    if np.abs(res).max(initial=0.0) <= 1e-13 * scale:
        Vp = Vc.copy()
        rate_res = 0.0
    else:
        # M^{-1} A^T with block-diagonal M
        AMi = A.copy()
        for i in range(nb):
            AMi[:, 6 * i:6 * i + 3] /= model.mass[i]
            Jinv = np.linalg.inv(Mdiag_blocks[i])
            AMi[:, 6 * i + 3:6 * i + 6] = A[:, 6 * i + 3:6 * i + 6] @ Jinv
        W = AMi @ A.T
        mu, *_ = scipy.linalg.lstsq(W, res, cond=1e-12, lapack_driver="gelsy")
        Vp = Vflat - AMi.T @ mu
        # Rates that contradict the joints (a rate on a joint its loop locks) leave the
        # least-squares solution off the constraints: the joints win, by a final exact
        # mass-orthogonal projection onto G V = 0 (no change when the rates are compatible).
        G, GMi = A[:ncon], AMi[:ncon]
        gres = G @ Vp - bvec[:ncon]
        if np.abs(gres).max(initial=0.0) > 1e-13 * scale:
            mu2, *_ = scipy.linalg.lstsq(GMi @ G.T, gres, cond=1e-12, lapack_driver="gelsy")
            Vp = Vp - GMi.T @ mu2
        if model.nd:
            _drivers_met(model, float(np.abs(G @ Vp - bvec[:ncon]).max(initial=0.0)), scale)
        Vp = Vp.reshape(nb, 6)
        rate_res = float(np.linalg.norm(A[ncon:] @ Vp.reshape(-1) - bvec[ncon:]))

    dV = Vp - Vc

    def ke(Vx):
        e = 0.0
        for i in range(nb):
            e += 0.5 * model.mass[i] * Vx[i, :3] @ Vx[i, :3] + 0.5 * Vx[i, 3:] @ Mdiag_blocks[i] @ Vx[i, 3:]
        return e

    e_corr = ke(dV)
    e_comb = ke(Vc)
    return InitialState(
        x=x, R=R, V=Vp, V_combined=Vc, correction_energy=e_corr,
        correction_ratio=(e_corr / e_comb) if e_comb > 0 else 0.0,
        correction_max=float(np.abs(dV).max(initial=0.0)), rate_residual=rate_res,
        rated_joints=tuple(model.spec.joints[model.joint_file_index[j]].name for j, _ in rated),
    )


def _drivers_met(model: Model, residual: float, scale: float) -> None:
    """Refuse a start whose drivers' rates the joints cannot follow: the joints' and
    gears' velocity constraints are homogeneous (met by rest), so a residual left by the
    exact projection is the drivers' -- a driver on a joint its loops lock, or drivers
    that contradict each other.  Integrated from there, the loops would open at the
    first step, far from the cause."""
    if residual > DRIVER_RATE_RTOL * scale:
        named = ", ".join(f"{name!r} on joint {model.joint_names[int(j)]!r}"
                          for name, j in zip(model.d_names, model.d_joint))
        raise SimulationError(0.0, f"the drivers' rates at t = 0 cannot be met with the joints closed "
                                   f"(velocity residual {residual:.3g}; drivers: {named}): a driver on a joint "
                                   f"its loops lock, or drivers that contradict each other")


def _rate_rows(model: Model, j: int, x, R, P) -> np.ndarray:
    """(nv_j, 6 nb) joint ``j``'s rates in the body twists: ``S^T (V_b(P) - V_a(P))`` with
    ``V(P) = [v + w x (P - x); w]``."""
    nb = model.nb
    Sj = joint_subspace(model, j, R)
    a, b = model.pred[j], model.succ[j]
    A = np.zeros((Sj.shape[0], 6 * nb))
    lb = P[j] - x[b]
    A[:, 6 * b:6 * b + 3] += Sj[:, :3]
    A[:, 6 * b + 3:6 * b + 6] += Sj[:, 3:] + np.cross(lb, Sj[:, :3])
    if a >= 0:
        la = P[j] - x[a]
        A[:, 6 * a:6 * a + 3] -= Sj[:, :3]
        A[:, 6 * a + 3:6 * a + 6] -= Sj[:, 3:] + np.cross(la, Sj[:, :3])
    return A


def tree_velocities(model: Model, V: np.ndarray, x: np.ndarray, R: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Tree joint velocities ``v`` (nv,) whose kinematics reproduce the twists ``V``."""
    v = np.zeros(model.nv)
    for j in range(model.nb):
        n = model.nv_j[j]
        if n == 0:
            continue
        Sj = joint_subspace(model, j, R)
        b, a = model.succ[j], model.pred[j]
        Vb = np.r_[V[b, :3] + np.cross(V[b, 3:], P[j] - x[b]), V[b, 3:]]
        Va = np.zeros(6) if a < 0 else np.r_[V[a, :3] + np.cross(V[a, 3:], P[j] - x[a]), V[a, 3:]]
        v[model.v_adr[j]:model.v_adr[j] + n] = Sj @ (Vb - Va)
    return v
