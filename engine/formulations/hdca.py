"""Formulation ``hdca``: the Hamiltonian divide-and-conquer algorithm (paper 001).

State: tree coordinates ``q`` and augmented canonical momenta ``p* = M v + K^T sigma``
(docs/derivations.md, section 8).  Each evaluation runs

* phase 1 -- velocities and constraint impulses: the DCA tree solve of
  :mod:`.tree` at the velocity level, with the same mobility blocks as
  ``dca``, the joints' known momentum impulses ``S_j p*_j`` as body biases and
  homogeneous constraint rows, so ``K v = 0`` holds exactly (eqs. H1-H2);
* phase 2 -- momentum derivatives: ``p*_k`` is ``S_k^T`` of the impulse the joint
  transmits (known from phase 1); differentiating gives eq. (H3) from the
  articulated external loads ``Q_bar`` collected over each subtree.  Cut joints
  have zero momentum and need no equation.

Reactions (paper 001 section 3.4): ``lambda = sigma_dot`` solves the acceleration-
level problem with the coefficients phase 1 has already factorised -- one more bias
pass and disassembly (the DCA's), no finite differences of ``sigma``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .. import config
from ..constraints import ConArrays, joint_constraint, joint_constraint_rate
from ..errors import SingularSystemError
from ..forces import ForceArrays, tree_applied_forces
from ..initial import initial_state, tree_velocities
from ..kinematics import (
    KinArrays, classical_accelerations, classical_into, fk_positions, fk_velocities, joint_momenta, motion_subspace,
    ode_rates, subtree_sums,
)
from ..model import UNIVERSAL, Model
from ..threads import HDCA_CHAIN_SERIAL_BELOW
from . import dense_solve, tree
from .base import NO_RATES, Evaluation, RowKernels, StateKernel, check_consistent
from .rk4_kernel import call_by_table_bool, call_void, native_address
from .tree import Regions, TreeIndex, TreeWork
from .tree_formulation import (
    TreeFormulation, joint_wrenches, momentum_post, tree_check, tree_post, unbranched_chain,
)
from .tree_kernels import Baumgarte, BodyWork, TreeModel, accelerations, cut_rows, leaves, residual, tree_rows
from .workspace import unpack


class HDCAWorkspace(NamedTuple):
    """Everything one ``hdca`` evaluation reads and writes, gathered once by
    :meth:`HDCAFormulation._workspace` and handed to the kernel as one table (as dca's
    :class:`~.dca_kernels.DCAWorkspace`)."""

    mk: KinArrays  # the kinematic kernels' model arrays
    ca: ConArrays  # the constraint kernels' model arrays
    fa: ForceArrays  # the force kernels' model arrays
    tm: TreeModel  # the tree kernels' model arrays
    ix: TreeIndex  # the assembly tree and the rows, flat
    #: phase 1's bodies' arrays: the poses, zero twists and velocity products (rows from the
    #: positions only), the known impulses (_known_impulses) as the loads and the leaves'
    #: right-hand side, the bodies' twists (``A``) and the joint velocities (``vdot``)
    bw1: BodyWork
    #: phase 2's and the reactions': the same poses, the twists and velocity products of the
    #: joint velocities, the applied wrenches, the accelerations (reactions pass)
    bw: BodyWork
    tw: TreeWork  # the tree solve's workspace (the layout's)
    hy: Regions  # the articulated-body regions
    jq: np.ndarray  # (nj,) joint coordinates of the springs, tree_applied_forces
    jq_ref: np.ndarray  # (nj,) their reference (the branch they are on), HDCAFormulation.evaluate
    phi: np.ndarray  # (n_rows,) closure residuals of the cut joints, cut_rows
    tol: float  # pivot tolerance of the merges' factors
    Wcut: np.ndarray  # (nb, 6) cut-joint impulse wrenches, _cut_loads
    Wdot: np.ndarray  # (nb, 6) their rates at fixed impulses, _cut_loads
    Q: np.ndarray  # (nb, 6) body loads of eq. H3, _loads
    Qbar: np.ndarray  # (nb, 6) articulated external loads, subtree_sums
    pdot: np.ndarray  # (nv,) momentum rates, _momentum_rates


@njit(cache=True, nogil=True, inline='always')
def _known_impulse(i, ix, nb, x, P, S, v_adr, nv_j, p, out):
    """Body impulse (about its COM) of the joints' momenta: ``+S_j p_j`` on the
    successor, ``-S_j p_j`` on the predecessor, through the body's handles."""
    node_nh, node_h_start, h_joint, h_side = ix.node_nh, ix.node_h_start, ix.h_joint, ix.h_side
    for k in range(6):
        out[i, k] = 0.0
    sh = node_h_start[i]
    for h in range(node_nh[i]):
        j = h_joint[sh + h]
        if j >= nb:  # cut joint: no momentum
            continue
        sgn = -1.0 if h_side[sh + h] == 0 else 1.0  # body holds the pred end -> minus
        f0 = f1 = f2 = n0 = n1 = n2 = 0.0
        for c in range(v_adr[j], v_adr[j] + nv_j[j]):
            f0 += S[c, 0] * p[c]
            f1 += S[c, 1] * p[c]
            f2 += S[c, 2] * p[c]
            n0 += S[c, 3] * p[c]
            n1 += S[c, 4] * p[c]
            n2 += S[c, 5] * p[c]
        # shift from P_j to the COM: n + (P_j - x) x f
        l0 = P[j, 0] - x[i, 0]
        l1 = P[j, 1] - x[i, 1]
        l2 = P[j, 2] - x[i, 2]
        out[i, 0] += sgn * f0
        out[i, 1] += sgn * f1
        out[i, 2] += sgn * f2
        out[i, 3] += sgn * (n0 + l1 * f2 - l2 * f1)
        out[i, 4] += sgn * (n1 + l2 * f0 - l0 * f2)
        out[i, 5] += sgn * (n2 + l0 * f1 - l1 * f0)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def _known_impulses(ix, nb, x, P, S, v_adr, nv_j, p, out):
    if nb >= ix.body_parallel_from:
        for i in prange(nb):
            _known_impulse(i, ix, nb, x, P, S, v_adr, nv_j, p, out)
    else:
        for i in range(nb):
            _known_impulse(i, ix, nb, x, P, S, v_adr, nv_j, p, out)


@njit(cache=True, nogil=True, _nrt=False)
def _phase1(mk, ca, ix, tm, q, p, bw1, tw, phi, tol, hy):
    """Velocities ``v`` (``bw1.vdot``) and impulses ``lam`` (``tw.lam``) from (q, p*):
    eqs. (H1)-(H2), with phase 1's bodies' arrays ``bw1`` (:class:`HDCAWorkspace`)."""
    nb = ix.nb
    row_adr = ix.row_adr
    x, R, P, S, V0, c0 = bw1.x, bw1.R, bw1.P, bw1.S, bw1.V, bw1.c
    impulses = bw1.Fext
    G = tw.G
    g0 = tw.g0
    fk_positions(mk, q, x, R, P)
    motion_subspace(mk, q, R, S)
    # constraint rows: positions only (zero twists and velocity products), homogeneous
    tree_rows(mk, tm.perp_pred, R, S, c0, G[0], G[1], g0, row_adr)
    if tm.ncut > 0:
        cut_rows(ca, nb, x, R, V0, P, G[0], G[1], g0, phi, row_adr, Baumgarte(0.0, 0.0))
    for r in range(g0.shape[0]):
        g0[r] = 0.0
    _known_impulses(ix, nb, x, P, S, tm.v_adr, tm.nv_j, p, impulses)
    leaves(ix, tm.mass, tm.inertia, tm.inertia_inv, bw1, tw.Phi, tw.bv, np.bool_(False), np.bool_(True), hy)
    tree.assemble_matrices6(ix, tw, 0.0, 1.0, tol, hy)
    tree.assemble_biases6(ix, tw, g0, 1.0, hy)
    tree.disassemble6(ix, tw, hy)
    # body twists about the COM and joint velocities (the DCA recovery, no c term)
    accelerations(ix, mk, tm.mass, bw1, tw.Fh, hy)


@njit(cache=True, nogil=True, _nrt=True)
def _cut_loads(ca, nb, x, R, V, lam, row_adr, Wcut, Wdot):
    """Cut-joint impulse wrenches (tree-solve sign, about each COM) and their time
    derivatives at fixed multipliers."""
    jtype, pred, succ, nc_j = ca.jtype, ca.pred, ca.succ, ca.nc_j
    nj = jtype.shape[0]
    for i in range(nb):
        for k in range(6):
            Wcut[i, k] = 0.0
            Wdot[i, k] = 0.0
    x0 = np.zeros(3)
    R0 = np.eye(3)
    V0 = np.zeros(6)
    phi = np.zeros(6)
    Ga = np.zeros((6, 6))
    Gb = np.zeros((6, 6))
    g = np.zeros(6)
    Wa = np.zeros(6)
    Wb = np.zeros(6)
    for j in range(nb, nj):
        a = pred[j]
        b = succ[j]
        n = nc_j[j]
        r = row_adr[j]
        xa, Ra, Va = (x0, R0, V0) if a < 0 else (x[a], R[a], V[a])
        joint_constraint(ca, j, xa, Ra, Va, x[b], R[b], V[b], phi[:n], Ga[:n], Gb[:n], g[:n])
        for k in range(6):
            Wa[k] = 0.0
            Wb[k] = 0.0
        joint_constraint_rate(ca, j, xa, Ra, Va, x[b], R[b], V[b], lam[r:r + n], Wa, Wb)
        for k in range(6):
            sb = 0.0
            sa = 0.0
            for rr in range(n):
                sb += Gb[rr, k] * lam[r + rr]
                sa += Ga[rr, k] * lam[r + rr]
            Wcut[b, k] += sb
            Wdot[b, k] += Wb[k]
            if a >= 0:
                Wcut[a, k] += sa
                Wdot[a, k] += Wa[k]


@njit(cache=True, nogil=True, inline='always')
def _momentum_rate(k, mk, nv_j, bw, p, lam, G1, row_adr, rows, Qbar, pdot):
    """Eq. (H3) for tree joint k, with phase 2's bodies' arrays ``bw`` (:class:`HDCAWorkspace`)."""
    parent, jtype, v_adr = mk.parent, mk.jtype, mk.v_adr
    x, P, S, V = bw.x, bw.P, bw.S, bw.V
    pk = parent[k]
    # articulated momentum: impulse through joint k about P_k = S p + (constraint impulse)
    Pb0 = Pb1 = Pb2 = Pb3 = Pb4 = Pb5 = 0.0
    va = v_adr[k]
    vb = va + nv_j[k]
    for c in range(va, vb):
        Pb0 += S[c, 0] * p[c]
        Pb1 += S[c, 1] * p[c]
        Pb2 += S[c, 2] * p[c]
        Pb3 += S[c, 3] * p[c]
        Pb4 += S[c, 4] * p[c]
        Pb5 += S[c, 5] * p[c]
    r = row_adr[k]
    for a in range(r, r + rows[k]):
        Pb0 += G1[a, 0] * lam[a]
        Pb1 += G1[a, 1] * lam[a]
        Pb2 += G1[a, 2] * lam[a]
        Pb3 += G1[a, 3] * lam[a]
        Pb4 += G1[a, 4] * lam[a]
        Pb5 += G1[a, 5] * lam[a]
    # velocity of P_k and angular velocity of the predecessor
    vp0 = vp1 = vp2 = 0.0
    wp0 = wp1 = wp2 = 0.0
    if pk >= 0:
        wp0, wp1, wp2 = V[pk, 3], V[pk, 4], V[pk, 5]
        l0 = P[k, 0] - x[pk, 0]
        l1 = P[k, 1] - x[pk, 1]
        l2 = P[k, 2] - x[pk, 2]
        vp0 = V[pk, 0] + wp1 * l2 - wp2 * l1
        vp1 = V[pk, 1] + wp2 * l0 - wp0 * l2
        vp2 = V[pk, 2] + wp0 * l1 - wp1 * l0
    # Q_bar - [0; v_P x P_lin]
    R0 = Qbar[k, 0]
    R1 = Qbar[k, 1]
    R2 = Qbar[k, 2]
    R3 = Qbar[k, 3] - (vp1 * Pb2 - vp2 * Pb1)
    R4 = Qbar[k, 4] - (vp2 * Pb0 - vp0 * Pb2)
    R5 = Qbar[k, 5] - (vp0 * Pb1 - vp1 * Pb0)
    for c in range(va, vb):
        # carrier of the column: the predecessor, except a universal joint's second axis
        w0, w1, w2 = wp0, wp1, wp2
        if jtype[k] == UNIVERSAL and c == va + 1:
            w0, w1, w2 = V[k, 3], V[k, 4], V[k, 5]
        s0, s1, s2, s3, s4, s5 = S[c, 0], S[c, 1], S[c, 2], S[c, 3], S[c, 4], S[c, 5]
        # s_dot = [w x s_lin; w x s_ang] (column fixed in the carrier, about a point fixed in it)
        d0 = w1 * s2 - w2 * s1
        d1 = w2 * s0 - w0 * s2
        d2 = w0 * s1 - w1 * s0
        d3 = w1 * s5 - w2 * s4
        d4 = w2 * s3 - w0 * s5
        d5 = w0 * s4 - w1 * s3
        pdot[c] = d0 * Pb0 + d1 * Pb1 + d2 * Pb2 + d3 * Pb3 + d4 * Pb4 + d5 * Pb5 + \
            s0 * R0 + s1 * R1 + s2 * R2 + s3 * R3 + s4 * R4 + s5 * R5


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def _momentum_rates(mk, nv_j, bw, p, lam, G1, row_adr, rows, Qbar, pdot, parallel_from):
    """Eq. (H3) for every tree joint (independent of each other) into ``pdot`` (an array,
    not a tuple's field: the parallel loop writes it); a parallel loop from
    ``parallel_from`` bodies on (``ix.body_parallel_from``)."""
    nb = bw.x.shape[0]
    if nb >= parallel_from:
        for k in prange(nb):
            _momentum_rate(k, mk, nv_j, bw, p, lam, G1, row_adr, rows, Qbar, pdot)
    else:
        for k in range(nb):
            _momentum_rate(k, mk, nv_j, bw, p, lam, G1, row_adr, rows, Qbar, pdot)


@njit(cache=True, nogil=True, _nrt=False)
def _loads(nb, Fext, Wcut, Wdot, V, Q):
    """Per body: F_ext - d/dt(G^T lam)|lam - [0; v_C x W_cut,lin] (eq. H3); only bodies
    at cut joints differ from F_ext."""
    for i in range(nb):
        for k in range(6):
            Q[i, k] = Fext[i, k] - Wdot[i, k]
        v0, v1, v2 = V[i, 0], V[i, 1], V[i, 2]
        Q[i, 3] -= v1 * Wcut[i, 2] - v2 * Wcut[i, 1]
        Q[i, 4] -= v2 * Wcut[i, 0] - v0 * Wcut[i, 2]
        Q[i, 5] -= v0 * Wcut[i, 1] - v1 * Wcut[i, 0]


@njit(cache=True, nogil=True, _nrt=False)
def _evaluate(desc, proto, y, out):
    """One HDCA evaluation, both phases in one call (docs/derivations.md, "HDCA").

    The workspace comes as one table (:mod:`.workspace`; :meth:`HDCAFormulation._workspace`
    lists it) and the kernel is compiled without reference counting, as dca's
    ``_evaluate`` (docs/performance.md, "The workspace as one argument").

    ``y`` = (q, p) is the state; the right-hand side (qdot, pdot) goes to ``out`` if it
    is as long as ``y`` (as dca's).  Returns whether v and pdot are all finite."""
    mk, ca, fa, tm, ix, bw1, bw, tw, hy, jq, jq_ref, phi, tol, Wcut, Wdot, Q, Qbar, pdot = unpack(desc, proto)
    nb = ix.nb
    nq = y.shape[0] - pdot.shape[0]
    q = y[:nq]
    p = y[nq:]
    _phase1(mk, ca, ix, tm, q, p, bw1, tw, phi, tol, hy)
    # phase 2: velocities, applied loads, articulated external loads, eq. (H3)
    x, R, P, S, V, c, Fext = bw.x, bw.R, bw.P, bw.S, bw.V, bw.c, bw.Fext
    v = bw1.vdot
    lam = tw.lam
    fk_velocities(mk, x, P, S, v, V, c)
    tree_applied_forces(fa, q, tm.q_adr, tm.spring_tree, tm.spring_cut, x, R, V, jq, jq_ref, Fext)
    if tm.ncut > 0:
        _cut_loads(ca, nb, x, R, V, lam, ix.row_adr, Wcut, Wdot)
    _loads(nb, Fext, Wcut, Wdot, V, Q)
    subtree_sums(mk.parent, x, P, Q, Qbar)
    _momentum_rates(mk, tm.nv_j, bw, p, lam, tw.G[1], ix.row_adr, ix.rows, Qbar, pdot, ix.body_parallel_from)
    if out.shape[0] != y.shape[0]:
        return True
    return ode_rates(mk, q, v, pdot, out)




class HDCAFormulation(TreeFormulation):
    name = "hdca"
    title = "Hamiltonian divide-and-conquer algorithm, velocity level"
    kind = "ode"
    parameters = ("projection", "threads")
    not_finite = "velocities or momentum rates are not finite"
    summary = ("Paper 001's Hamiltonian DCA: joint coordinates and canonical momenta, loops closed at the "
               "velocity level, so velocity constraints hold to round-off and positions drift only slowly.")

    rough_remedy = ("hdca's momentum rates are not smooth where a subassembly of its assembly tree is nearly "
                    "singular (docs/formulations.md, hdca, \"nearly singular subassemblies\"): dca or dense "
                    "(--formulation), or hdca with rk4, run such a mechanism. A stiff one needs an implicit "
                    "integrator ({implicit}) or looser tolerances (--rtol, --atol).")

    _stabilise = TreeFormulation._project_momentum_state

    @classmethod
    def automatic_threads(cls, model: Model, threads: int) -> tuple[int, str]:
        """Left automatic, one thread on an unbranched open chain of fewer than
        :data:`threads.HDCA_CHAIN_SERIAL_BELOW` bodies."""
        if model.nb < HDCA_CHAIN_SERIAL_BELOW and unbranched_chain(model):
            return 1, f"an unbranched chain under {HDCA_CHAIN_SERIAL_BELOW} bodies"
        return threads, ""

    def __init__(self, model: Model, settings, plan=None):
        super().__init__(model, settings, plan)
        m = model
        # workspace: position -> velocity (phase 1) -> momentum rates (phase 2) -> reactions
        self.V0 = np.zeros((m.nb, 6))  # zero twists (rows from positions only)
        self.c0 = np.zeros((m.nb, 6))  # zero velocity-product terms
        self.impulses = np.zeros((m.nb, 6))  # known joint impulses per body, _known_impulses
        self.Jinv_w = np.zeros((m.nb, 3, 3))  # world inverse inertia, leaves
        self._scratch = np.zeros((m.nb, 3, 3))
        self.Vh = np.zeros((m.nb, 6))  # body twists from phase 1
        self.v = np.zeros(m.nv)  # joint velocities, phase 1
        self.V = np.zeros((m.nb, 6))  # COM twists, fk_velocities
        self.c = np.zeros((m.nb, 6))  # velocity-product terms, fk_velocities
        self.Fext = np.zeros((m.nb, 6))  # applied wrenches, applied_forces
        self.Wcut = np.zeros((m.nb, 6))  # cut-joint impulse wrenches, _cut_loads
        self.Wdot = np.zeros((m.nb, 6))  # their rates at fixed impulses, _cut_loads
        self.Q = np.zeros((m.nb, 6))  # body loads of eq. H3, _loads
        self.Qbar = np.zeros((m.nb, 6))  # articulated external loads, subtree_sums
        self.pdot = np.zeros(m.nv)  # momentum rates, _momentum_rates
        self.phi = np.zeros(self.lay.n_rows)
        self.rhs_body = np.zeros((m.nb, 6))  # DCA bias wrench (reactions), leaves
        self.A = np.zeros((m.nb, 6))  # accelerations (reactions pass)
        self.vdot = np.zeros(m.nv)
        # the kernels' bodies' arrays: phase 1's (its loads and right-hand side the impulses,
        # its "accelerations" the twists and joint velocities), and phase 2's and the reactions'
        self.bw1 = BodyWork(self.x, self.R, self.P, self.S, self.V0, self.c0, self.impulses, self.impulses,
                            self.Jinv_w, self._scratch, self.Vh, self.v)
        self.bw = BodyWork(self.x, self.R, self.P, self.S, self.V, self.c, self.Fext, self.rhs_body, self.Jinv_w,
                           self._scratch, self.A, self.vdot)
        self._kernel = StateKernel(_evaluate, self._workspace())

    # ----------------------------------------------------------------- state
    def initial_state(self) -> np.ndarray:
        """q = 0 and p* = M v0 (sigma = 0, paper 001 section 2.1)."""
        m = self.model
        ini = initial_state(m)
        self.initial = ini
        q = m.q_zero()
        fk_positions(self.mk, q, self.x, self.R, self.P)
        motion_subspace(self.mk, q, self.R, self.S)
        v0 = tree_velocities(m, ini.V, self.x, self.R, self.P)
        fk_velocities(self.mk, self.x, self.P, self.S, v0, self.V, self.c)
        # body momenta about each COM, collected over subtrees: p*_k = S_k^T h_k
        H = np.zeros((m.nb, 6))
        for i in range(m.nb):
            Jw = self.R[i] @ m.inertia[i] @ self.R[i].T
            H[i, :3] = m.mass[i] * self.V[i, :3]
            H[i, 3:] = Jw @ self.V[i, 3:]
        h = np.zeros((m.nb, 6))
        subtree_sums(m.parent, self.x, self.P, H, h)
        p = np.zeros(m.nv)
        for k in range(m.nb):
            for c in range(m.v_adr[k], m.v_adr[k] + m.nv_j[k]):
                p[c] = self.S[c] @ h[k]
        return np.concatenate([q, p])

    # ---------------------------------------------------------------- passes
    def _workspace(self) -> HDCAWorkspace:
        """``_evaluate``'s workspace, gathered once (as dca's)."""
        return HDCAWorkspace(
            mk=self.mk, ca=self.ca, fa=self.fa, tm=self.tm, ix=self.lay.ix, bw1=self.bw1, bw=self.bw,
            tw=self.lay.work, hy=self.hy, jq=self.jq, jq_ref=self.jq_ref, phi=self.phi, tol=config.PIVOT_RTOL, Wcut=self.Wcut, Wdot=self.Wdot,
            Q=self.Q, Qbar=self.Qbar, pdot=self.pdot)

    def _solve(self, t, y, check=True):
        """One evaluation of state ``y`` into the workspace; ``check``: refuse non-finite
        velocities or momentum rates."""
        self._kernel(y, NO_RATES)
        if check and not (np.isfinite(self.v).all() and np.isfinite(self.pdot).all()):
            raise SingularSystemError(t, self.not_finite)

    def velocities(self, t, y) -> np.ndarray:
        """Joint velocities of the state (q, p*)."""
        self._solve(t, y)
        return self.v.copy()

    @property
    def sigma(self) -> np.ndarray:
        """Constraint impulses of the last evaluation (every joint's rows, tree-solve sign)."""
        return self.lay.lam

    # ------------------------------------------------------------- reactions
    def _acceleration_pass(self):
        """lambda = sigma_dot: the acceleration-level bias pass and disassembly on the
        tree phase 1 factorised (paper 001 section 3.4)."""
        m, lay = self.model, self.lay
        row_adr = lay.ix.row_adr
        tree_rows(self.mk, m.perp_pred, self.R, self.S, self.c, lay.G[0], lay.G[1], lay.g0, row_adr)
        if m.ncut:
            cut_rows(self.ca, m.nb, self.x, self.R, self.V, self.P, lay.G[0], lay.G[1], lay.g0, self.phi,
                      row_adr, Baumgarte(0.0, 0.0))
        leaves(lay.ix, m.mass, m.inertia, m.inertia_inv, self.bw, lay.Phi, lay.bv, True, False, self.hy)
        tree.assemble_biases6(lay.ix, lay.work, lay.g0, 1.0, self.hy)
        tree.disassemble6(lay.ix, lay.work, self.hy)
        accelerations(lay.ix, self.mk, m.mass, self.bw, lay.Fh, self.hy)

    def row_kernels(self):
        """The compiled row loop's kernels (:meth:`.base.Formulation.row_kernels`) where the
        step, the post-step, the watch and the evaluation are this class's own.  On a tree
        without loops a step is one state kernel (:attr:`_rk4`) and the evaluation the
        right-hand side without rates, then :func:`output_check`.  With loops, the
        right-hand side (its rates at an output instant are the next step's first: the
        kernel fills the same workspace either way) with
        :func:`.tree_formulation.momentum_post` after each step (the projection and the
        impulse reset, :meth:`._project_momentum_state`; or :func:`.tree_formulation.tree_post`
        with the projection off), then :func:`loop_output_check` (the acceleration pass,
        then ``dca``'s :func:`.tree_formulation.tree_check`)."""
        m, lay, fast = self.model, self.lay, self._rk4
        if type(self).evaluate is not _OWN_EVALUATE:
            return None
        acc, reactions, health = np.empty((m.nb, 6)), np.empty((m.nj, 6)), np.zeros(2)
        tw, ix, bw, hy = lay.work, lay.ix, self.bw, self.hy
        arrays = (self.x, self.R, self.V, acc, self.jq, self.P, reactions)
        if not m.ncut:
            if fast is None:
                return None
            check = StateKernel(output_check, (self._acceleration_calls(), self.v, self.pdot, ix.row_adr, ix.rows,
                                               tw.G[1], tw.lam, self.V, self.A, acc, reactions))
            return RowKernels(fast.rhs, fast.post, check, arrays, health)
        cls = type(self)
        if (m.nd or "rhs" in vars(self) or not hasattr(self._kernel.kernel, "overloads")
                or cls.rhs is not TreeFormulation.rhs or cls.post_step is not TreeFormulation.post_step
                or cls.watch_singular is not tree.SingularityWatch.watch_singular
                or cls._stabilise is not TreeFormulation._project_momentum_state
                or cls.velocities is not HDCAFormulation.velocities or cls.momenta is not TreeFormulation.momenta):
            return None
        rw = self._row_watch()
        watch_args = (rw.watching, rw.conditioning, rw.watch, rw.tick, float(config.SINGULAR_WINDOW),
                      float(config.CROSSING_TIME))
        if self._project:
            pm = np.empty(m.nv)
            margs = self._momenta_args(self.v, pm)
            proj = self._projector_table()
            post = StateKernel(momentum_post, (
                self.mk, np.int64(m.nq), proj[0], proj[1], proj[2], proj[3], np.zeros(m.nv),
                float(config.PROJECTION_TOL), float(config.PROJECTION_MAX_ITER),
                (self._kernel.native(), self._kernel.desc), np.empty(0), self.v, self.pdot,
                (native_address(joint_momenta, *margs), margs), pm, *watch_args,
                (float(dense_solve.CLOSURE), float(dense_solve.PROJECT), float(dense_solve.PROJECT_ROWS_DONE))))
        else:
            post = StateKernel(tree_post, (
                self.mk, np.int64(m.nq), False, *self._projector_table(), float(config.PROJECTION_TOL),
                float(config.PROJECTION_MAX_ITER), *watch_args,
                (float(dense_solve.CLOSURE), float(dense_solve.PROJECT),
                 float(dense_solve.PROJECT_VELOCITIES | dense_solve.PROJECT_ROWS_DONE))))
        tail = StateKernel(tree_check, (
            self.vdot, ix.row_adr, ix.rows, m.pred, m.succ, self.x, self.P, self.A, tw.G[0], tw.G[1], tw.g0, tw.lam,
            self.V, acc, reactions, float(self.residual_rtol), np.int64(m.nj), self.cut_spring, self.jq,
            self.jq_ref, True, rw.conditioning, health))
        check = StateKernel(loop_output_check, (self._acceleration_calls(), self.v, self.pdot,
                                                (tail.native(), tail.desc)))
        return RowKernels(self._kernel, post, check, arrays, health, own=(rw.watch,), tick=rw.tick,
                          before=rw.before, after=rw.after, reuse=True)

    def _acceleration_calls(self) -> tuple:
        """:meth:`_acceleration_pass`'s kernels by address, each with exactly its arguments
        (by name they would be compiled again into the check kernels: 30 s), in its order;
        without loops ``cut_rows`` too, which there has no row to write (one list of six
        for trees and loops: one compiled check)."""
        m, lay = self.model, self.lay
        tw, ix, bw, hy = lay.work, lay.ix, self.bw, self.hy
        kernels = [
            (tree_rows, (self.mk, m.perp_pred, self.R, self.S, self.c, tw.G[0], tw.G[1], tw.g0, ix.row_adr)),
            (leaves, (ix, m.mass, m.inertia, m.inertia_inv, bw, tw.Phi, tw.bv, True, False, hy)),
            (tree.assemble_biases6, (ix, tw, tw.g0, 1.0, hy)),
            (tree.disassemble6, (ix, tw, hy)),
            (accelerations, (ix, self.mk, m.mass, bw, tw.Fh, hy))]
        kernels.insert(1, (cut_rows, (self.ca, m.nb, self.x, self.R, self.V, self.P, tw.G[0], tw.G[1], tw.g0,
                                      self.phi, ix.row_adr, Baumgarte(0.0, 0.0))))
        return tuple((native_address(k, *args), args) for k, args in kernels)

    def evaluate(self, t, y) -> Evaluation:
        m, lay = self.model, self.lay
        q, p = y[: m.nq], y[m.nq:]
        self._solve(t, y)
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        lam_vel = self.lay.lam.copy()
        self._acceleration_pass()
        if m.ncut:
            check_consistent(t, *residual((lay.ix.row_adr, lay.ix.rows), m.pred, m.succ, self.x, self.P, self.A,
                                           lay.G[0], lay.G[1], lay.g0, m.nj), self.residual_remedy, self.residual_rtol)
        reactions = self._reactions()
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(),
                          acc=classical_accelerations(self.V, self.A), P=self.P.copy(), reactions=reactions,
                          jq=self.jq.copy(),
                          extra={"v": self.v.copy(), "p": p.copy(), "q": q.copy(), "sigma": lam_vel,
                                 "vdot": self.vdot.copy()})


#: the evaluation the row kernels do (:meth:`HDCAFormulation.row_kernels`); another -- a subclass's
#: or a double patched onto the class -- leaves the rows to Python
_OWN_EVALUATE = HDCAFormulation.evaluate


@njit(cache=True, nogil=True, _nrt=False, inline='always')
def _call_all(calls):
    """The six ``(address, arguments)`` of :meth:`HDCAFormulation._acceleration_calls` in
    turn (:func:`.rk4_kernel.call_void`), up to the first that raised; whether none did.
    Spelled out: numba's ``literal_unroll`` over them cost 48 s of compile."""
    ok = call_void(calls[0][0], calls[0][1])
    ok = ok and call_void(calls[1][0], calls[1][1])
    ok = ok and call_void(calls[2][0], calls[2][1])
    ok = ok and call_void(calls[3][0], calls[3][1])
    ok = ok and call_void(calls[4][0], calls[4][1])
    return ok and call_void(calls[5][0], calls[5][1])


@njit(cache=True, nogil=True, _nrt=False)
def output_check(desc, proto, y, out):
    """What :meth:`HDCAFormulation.evaluate` does on a tree after its kernel evaluated
    ``y`` without rates, for the compiled row loop (:class:`.base.RowKernels`): False
    where it would raise (velocities or momentum rates not finite), else the
    acceleration pass (:meth:`HDCAFormulation._acceleration_pass`: the same kernels with
    the same arguments, ``calls``, in the same order), the reactions and the classical
    accelerations.  ``y``, ``out``: unused."""
    calls, v, pdot, row_adr, rows, GB, lam, V, A, acc, reactions = unpack(desc, proto)
    for i in range(v.shape[0]):
        if not (np.isfinite(v[i]) and np.isfinite(pdot[i])):
            return False
    ok = _call_all(calls)
    reactions[:, :] = 0.0
    joint_wrenches(row_adr, rows, GB, lam, reactions)
    classical_into(V, A, acc)
    return ok


@njit(cache=True, nogil=True, _nrt=False)
def loop_output_check(desc, proto, y, out):
    """What :meth:`HDCAFormulation.evaluate` does on a mechanism with loops after its kernel
    evaluated ``y`` without rates, for the compiled row loop: False where it would raise
    (velocities or momentum rates not finite), else the acceleration pass (``calls``: the
    kernels of :meth:`HDCAFormulation._acceleration_pass` with its arguments, in its
    order), then ``dca``'s check on its result (``check``: :func:`.tree_formulation.tree_check`
    by address with its table: the closure's acceleration residual, the cut joints'
    springs' branch reference, the reactions, the classical accelerations, the loops'
    conditioning).  ``y``, ``out``: as the check takes them."""
    calls, v, pdot, check = unpack(desc, proto)
    for i in range(v.shape[0]):
        if not (np.isfinite(v[i]) and np.isfinite(pdot[i])):
            return False
    return _call_all(calls) and call_by_table_bool(check[0], check[1], y, out)
