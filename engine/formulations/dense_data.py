"""The data of formulation ``dense``'s kernels (:mod:`.dense_solve`): the mechanism as
they read it (:class:`DenseModel`), their workspace (:class:`DenseWork`, every array
allocated once by :func:`dense_work` and only ever written in place) and the slots of its
small state arrays."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import config
from ..constraints import ConArrays
from ..drivers import MotionArrays
from ..forces import ForceArrays
from ..kinematics import KinArrays
from .dense_kernels import CrbaScratch, JointRowScratch, LoopRows, ReactionModel, crba_scratch, joint_row_scratch
from .dense_linalg import ThinSVD, svd_work

#: :attr:`DenseWork.watch` slots: the filter width in use, whether a previous measure
#: exists, its time and value, the measure's rate (> 0 while approaching), crossing (1.0),
#: the smallest measure at which the filter was widened (inf: never) and its time
MU_REL, HAS_PREV, T_PREV, S_PREV, RATE, NEAR, FILTERED, T_FILTERED = range(8)
#: :attr:`DenseWork.stats` slots: the last solve's acceleration residual and its scale,
#: the time of a failure, right-hand sides evaluated by the kernels
RESIDUAL, RESIDUAL_SCALE, T_FAILED, RHS_COUNT = range(4)


class Gears(NamedTuple):
    """Gear couplings as rows after the cut joints' (:func:`engine.constraints.coupling_rows`)."""

    driver: np.ndarray  # (ng,) driving joint
    driven: np.ndarray  # (ng,) driven joint
    ratio: np.ndarray  # (ng,) mu
    q0: np.ndarray  # (ng, 2) both coordinates at t = 0
    scale: np.ndarray  # (ng,) each row's scale (DenseFormulation._scale_gear_rows), set at t = 0


class Drivers(NamedTuple):
    """Drivers as rows after the gears' (docs/derivations.md, "Drivers"):
    ``Phi = q_J - (f(t) - f(0))``, ``K = e_J``, ``K v = f'(t)``, ``gamma = f''(t)``."""

    joint: np.ndarray  # (nd,) driven joint (a tree joint)
    motion: MotionArrays  # the laws f
    f0: np.ndarray  # (nd,) f(0)
    scale: np.ndarray  # (nd,) each row's scale (DenseFormulation._scale_gear_rows), set at t = 0


class DenseModel(NamedTuple):
    """The mechanism as ``dense``'s kernels read it."""

    mk: KinArrays  # kinematics' arrays and scratch
    ca: ConArrays  # the cut joints' constraint arrays
    fa: ForceArrays  # the force elements
    mass: np.ndarray  # (nb,)
    inertia: np.ndarray  # (nb, 3, 3) about the COM, body frame
    nv_j: np.ndarray  # (nb,) freedoms of each tree joint
    spring_tree: np.ndarray  # tree joints whose coordinate a spring reads
    spring_cut: np.ndarray  # cut joints whose coordinate a spring reads (from the poses)
    gears: Gears
    drivers: Drivers
    rm: ReactionModel  # what the reactions read
    nc: np.int64  # rows of the cut joints; the gear rows follow, then the drivers'
    project: bool  # stabilise by projection after every step


class RK4Stages(NamedTuple):
    """The stages of :func:`rk4_steps`."""

    k1: np.ndarray
    k2: np.ndarray
    k3: np.ndarray
    k4: np.ndarray
    stage: np.ndarray  # the stage state


class DenseWork(NamedTuple):
    """The workspace of one ``dense`` formulation: position -> velocity -> acceleration ->
    closure, in the order the right-hand side fills it."""

    x: np.ndarray  # (nb, 3) centres of mass
    R: np.ndarray  # (nb, 3, 3) orientations
    P: np.ndarray  # (nj, 3) joint points
    S: np.ndarray  # (nv, 6) motion subspace
    V: np.ndarray  # (nb, 6) COM twists
    c: np.ndarray  # (nb, 6) velocity-product terms
    A: np.ndarray  # (nb, 6) spatial accelerations about each COM
    A_bias: np.ndarray  # (nb, 6) A at vdot = 0
    acc: np.ndarray  # (nb, 6) classical accelerations at vdot = 0 (the closure's gamma)
    zero_acc: np.ndarray  # (nb, 6) zeros: the closure rows without gamma
    Fext: np.ndarray  # (nb, 6) applied wrenches
    Fbody: np.ndarray  # (nb, 6) body force balances
    fj: np.ndarray  # (nb, 6) transmitted joint wrenches
    h: np.ndarray  # (nv,) generalized bias forces
    tau: np.ndarray  # (nv,) M vdot + h by Newton-Euler (iterative refinement)
    M: np.ndarray  # (nv, nv) mass matrix
    L: np.ndarray  # (nv, nv) its lower Cholesky factor
    jq: np.ndarray  # (nj,) joint coordinates the springs read
    jq_ref: np.ndarray  # (nj,) their branch reference (cut joints)
    K: np.ndarray  # (ncr, nv) closure Jacobian: cut rows, then gear rows, then driver rows
    Kabs: np.ndarray  # (nc, nv) round-off scale of the cut rows
    Kt: np.ndarray  # (ncr, nv) K L^-T
    gamma: np.ndarray  # (ncr,)
    phi: np.ndarray  # (ncr,)
    nu: np.ndarray  # (ncr,) the velocity constraints' right-hand side, K v = nu (non-zero on driver rows only)
    lam: np.ndarray  # (ncr,) multipliers
    rows: LoopRows  # views of the cut rows of K, Kabs, gamma, phi
    scratch: JointRowScratch  # one cut joint's rows
    crba: CrbaScratch  # what the mass matrix is computed in
    zero_nv: np.ndarray  # (nv,) zeros: vdot of the bias forces
    u0: np.ndarray  # (nv,) whitened unconstrained accelerations
    u: np.ndarray  # (nv,)
    vdot: np.ndarray  # (nv,)
    dv: np.ndarray  # (nv,) projection increment
    b: np.ndarray  # (ncr,) right-hand side of a least-squares solve
    z: np.ndarray  # (nv,) its solution
    rank: np.ndarray  # (1,) int64: the closure's rank, decided once
    watch: np.ndarray  # (8,) the singularity watch (MU_REL ...)
    stats: np.ndarray  # (4,) RESIDUAL ...
    sv: ThinSVD  # of Kt
    acc_out: np.ndarray  # (nb, 6) classical accelerations of an evaluation
    react: np.ndarray  # (nj, 6) every joint's wrench on its successor, of an evaluation
    clock: np.ndarray  # (4,) what an entry kernel takes besides the state: a time, an interval, a step count
    stages: RK4Stages  # rk4_steps' stages
    #: (4,) the last EVALUATE's dynamics: [t, 1.0 while its vdot is kept, the filter's
    #: MU_REL and the closure's rank it had] (:func:`rk4_steps` takes it as its k1)
    evaluated: np.ndarray
    evaluated_y: np.ndarray  # (nq + nv,) that state
    evaluated_vdot: np.ndarray  # (nv,) its vdot
    #: (1 + nq,) [1.0 while the workspace's geometry -- x, R, P, S, M, L, K, Kt, sv -- is
    #: that of the coordinates that follow, else 0.0] (dense_solve._keep_geometry)
    geometry: np.ndarray


def dense_work(nb: int, nj: int, nq: int, nv: int, nc: int, ng: int) -> DenseWork:
    """A zeroed workspace for ``nb`` bodies, ``nj`` joints, ``nq`` coordinates, ``nv``
    velocities, ``nc`` cut rows and ``ng`` joint-space rows (gears and drivers)."""
    ncr = nc + ng
    K = np.zeros((ncr, nv))
    Kabs = np.zeros((nc, nv))
    gamma = np.zeros(ncr)
    phi = np.zeros(ncr)
    watch = np.zeros(8)
    watch[MU_REL] = config.DENSE_BASE_FILTER_RTOL
    watch[FILTERED] = np.inf
    return DenseWork(
        x=np.zeros((nb, 3)), R=np.zeros((nb, 3, 3)), P=np.zeros((nj, 3)), S=np.zeros((nv, 6)),
        V=np.zeros((nb, 6)), c=np.zeros((nb, 6)), A=np.zeros((nb, 6)), A_bias=np.zeros((nb, 6)),
        acc=np.zeros((nb, 6)), zero_acc=np.zeros((nb, 6)), Fext=np.zeros((nb, 6)), Fbody=np.zeros((nb, 6)),
        fj=np.zeros((nb, 6)), h=np.zeros(nv), tau=np.zeros(nv), M=np.zeros((nv, nv)), L=np.zeros((nv, nv)),
        jq=np.full(nj, np.nan), jq_ref=np.zeros(nj), K=K, Kabs=Kabs, Kt=np.zeros((ncr, nv)), gamma=gamma,
        phi=phi, nu=np.zeros(ncr), lam=np.zeros(ncr), rows=LoopRows(K[:nc], Kabs, gamma[:nc], phi[:nc]),
        scratch=joint_row_scratch(), crba=crba_scratch(nb), zero_nv=np.zeros(nv),
        u0=np.zeros(nv), u=np.zeros(nv), vdot=np.zeros(nv), dv=np.zeros(nv), b=np.zeros(ncr), z=np.zeros(nv),
        rank=np.zeros(1, dtype=np.int64), watch=watch, stats=np.zeros(4), sv=svd_work(ncr, nv), acc_out=np.zeros((nb, 6)),
        react=np.zeros((nj, 6)), clock=np.zeros(4),
        stages=RK4Stages(*(np.zeros(nq + nv) for _ in range(5))),
        evaluated=np.zeros(4), evaluated_y=np.zeros(nq + nv), evaluated_vdot=np.zeros(nv),
        geometry=np.zeros(1 + nq),
    )
