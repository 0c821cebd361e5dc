"""Formulation ``rcr``: Anderson and Critchley's recursive coordinate reduction (paper 002).

State: tree coordinates ``q`` and velocities ``v`` -- the layout of ``dense`` and
``dca``, so every CSV column means the same.  The loop-closing (cut) joints split
the tree speeds of each loop *cluster* (loops that share a tree joint; a ladder is
one cluster, paper 002 section 4.3) into independent and dependent ones:

* the partition (:func:`build_partition`) is chosen automatically, loop after loop,
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
  equations (issue 18, item 4), so ``violation.position`` stays at round-off;
* the partition is re-chosen when a block's conditioning falls (issue 18, item 2),
  without changing the state layout; where no partition is well conditioned -- a
  genuine change of mobility, the parallelogram folding flat -- the run stops with
  :class:`~engine.errors.SimulationError` naming the time and the reason.

The derivation, and which equation of paper 002 each pass implements, is in docs/rcr.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .. import config
from ..constraints import con_arrays, coupling_rows
from ..errors import SimulationError, SingularSystemError
from ..forces import force_arrays, spring_joints
from ..initial import initial_state, tree_velocities
from ..kinematics import (
    classical_accelerations, fk_positions, kin_arrays, normalize_quaternions,
)
from ..model import Model
from . import rcr_kernels as K
from .base import NO_RATES, Evaluation, Formulation, StateKernel, check_consistent
from .dense import reactions_from_multipliers
from .workspace import pack

#: a block whose scaled dependent columns have min |R_ii| / max |R_ii| below this
#: makes the monitor look for a better partition
SWITCH_RTOL = 0.1
#: a new partition is adopted only if its conditioning beats the current one by this
SWITCH_GAIN = 2.0


@dataclass
class Partition:
    """Independent/dependent split of the loop speeds (one choice; see module docstring)."""

    lx: tuple  # the kernels' layout tuple (rcr_kernels module docstring)
    colscale: np.ndarray  # (nv,) mass-whitening 1/sqrt(M_cc) of each speed
    independent: np.ndarray  # global indices of the independent loop speeds
    dependent: np.ndarray  # global indices of the dependent loop speeds
    conditioning: float  # smallest block conditioning (singular values) at the state it was built
    n_blocks: int
    merged: int  # clusters whose loops could not be separated (one block each)
    dmax: int
    nq_tot: int  # sum over blocks of rows x dependent columns (QR storage)
    nk_tot: int  # sum over blocks of rows x columns
    ndep: int

    def key(self):
        return tuple(self.dependent.tolist())


def _lca(parent, a, b):
    pa = set()
    i = a
    while i >= 0:
        pa.add(i)
        i = parent[i]
    i = b
    while i >= 0 and i not in pa:
        i = parent[i]
    return i


def overlapping_groups(sets) -> list[list[int]]:
    """Indices of ``sets`` (collections of body indices) grouped so that sets sharing a
    body, directly or through others, fall in one group (union-find); each group
    ascending, groups in order of their first member."""
    root = list(range(len(sets)))

    def find(x):
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    owner: dict[int, int] = {}
    for k, bodies in enumerate(sets):
        for i in bodies:
            if i in owner:
                root[find(k)] = find(owner[i])
            else:
                owner[i] = k
    groups: dict[int, list[int]] = {}
    for k in range(len(sets)):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


def loop_structure(model: Model):
    """Per cut joint: loop base (lowest common ancestor, -1 ground) and the tree joints
    (= bodies) of its loop path; and the clusters of loops sharing a tree joint."""
    m = model
    lca = np.zeros(m.nj, dtype=np.int64)
    paths = []
    for j in range(m.nb, m.nj):
        a, b = int(m.pred[j]), int(m.succ[j])
        base = _lca(m.parent, a, b) if a >= 0 else -1
        lca[j] = base
        path = []
        for end in (b, a):
            i = end
            while i != base and i >= 0:
                path.append(i)
                i = int(m.parent[i])
        paths.append(sorted(set(path)))
    groups = {min(g): g for g in overlapping_groups(paths)}  # loops sharing a body's tree joint
    clusters = sorted(groups.values(), key=lambda ls: min(min(paths[l], default=10**9) for l in ls))
    return lca, paths, clusters


def _cut_rows_of(model: Model):
    """(first cut row of each joint, cut joint of each cut row)."""
    m = model
    row_adr = np.zeros(m.nj, dtype=np.int64)
    row_joint = []
    r = 0
    for j in range(m.nb, m.nj):
        row_adr[j] = r
        row_joint += [j] * int(m.nc_j[j])
        r += int(m.nc_j[j])
    return row_adr, np.asarray(row_joint, dtype=np.int64)


def _layout(model: Model, structure, choice):
    """The kernels' layout tuple for ``choice``: per cluster (blocks, independent speeds),
    a block being (cut rows, path columns, dependent columns)."""
    m = model
    lca, paths, clusters = structure
    row_adr, row_joint = _cut_rows_of(m)
    body_cl = np.full(m.nb, -1, dtype=np.int64)
    cl_base, cl_first, cl_bstart, cl_bodies = [], [], [0], []
    cl_istart, ind_cols, cl_kstart = [0], [], [0]
    blk_rstart, blk_rows, blk_cstart, blk_cols, blk_dstart, blk_dep = [0], [], [0], [], [0], []
    blk_kofs, blk_qofs = [0], [0]
    for ci, (loops, (blocks, indep)) in enumerate(zip(clusters, choice)):
        bodies = sorted(set(i for l in loops for i in paths[l]))
        for i in bodies:
            body_cl[i] = ci
        cl_base.append(int(m.parent[bodies[0]]) if bodies else -1)
        cl_first.append(bodies[0] if bodies else -1)
        cl_bodies += bodies
        cl_bstart.append(len(cl_bodies))
        ind_cols += sorted(indep)
        cl_istart.append(len(ind_cols))
        for rows, cols, dep in blocks:
            blk_rows += rows
            blk_rstart.append(len(blk_rows))
            blk_cols += cols
            blk_cstart.append(len(blk_cols))
            pos = {c: k for k, c in enumerate(cols)}
            blk_dep += [pos[c] for c in dep]
            blk_dstart.append(len(blk_dep))
            blk_kofs.append(blk_kofs[-1] + len(rows) * len(cols))
            blk_qofs.append(blk_qofs[-1] + len(rows) * len(dep))
        cl_kstart.append(len(blk_rstart) - 1)
    col_joint = np.zeros(m.nv, dtype=np.int64)
    for i in range(m.nb):
        col_joint[m.v_adr[i]:m.v_adr[i] + m.nv_j[i]] = i
    i64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
    return (body_cl, i64(cl_base), i64(cl_first), i64(cl_bstart), i64(cl_bodies), i64(cl_istart), i64(ind_cols),
            i64(cl_kstart), i64(blk_rstart), i64(blk_rows), i64(blk_cstart), i64(blk_cols), i64(blk_dstart),
            i64(blk_dep), i64(blk_kofs), i64(blk_qofs), row_joint, row_adr, lca, col_joint)


def _cols_of(model: Model, bodies):
    return [c for i in bodies for c in range(model.v_adr[i], model.v_adr[i] + model.nv_j[i])]


def _rows_of(model: Model, row_adr, l):
    j = model.nb + l
    return list(range(int(row_adr[j]), int(row_adr[j]) + int(model.nc_j[j])))


def _numeric_loop_jacobian(model: Model, q: np.ndarray, structure):
    """(K over all tree speeds, joint-space mass matrix) at q, from rcr's own kernels:
    every loop as a block with no dependent speeds fills K; the mass matrix is the
    composite-rigid-body sum about the origin (used only when a partition is chosen,
    never in the step)."""
    m = model
    lca, paths, clusters = structure
    row_adr, _ = _cut_rows_of(m)
    choice = [([(_rows_of(m, row_adr, l), _cols_of(m, paths[l]), []) for l in loops], []) for loops in clusters]
    lx = _layout(m, structure, choice)
    ncr = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
    x, R, P = np.zeros((m.nb, 3)), np.zeros((m.nb, 3, 3)), np.zeros((m.nj, 3))
    S, S6 = np.zeros((m.nv, 6)), np.zeros((m.nv, 6))
    Kval = np.zeros(max(int(lx[14][-1]), 1))
    ws = (kin_arrays(m), con_arrays(m), lx, m.nb, m.nv_j, x, R, P, S, S6, np.zeros((m.nb, 6)), np.zeros((ncr, 6)),
          np.zeros((ncr, 6)), np.zeros(ncr), np.zeros(ncr), np.ones(m.nv), Kval, np.zeros(1), np.zeros(2),
          np.zeros(m.nv, dtype=np.int64))
    K._positions_and_blocks(*pack(ws), q)
    Kmat = np.zeros((ncr, m.nv))
    rstart, rows, cstart, cols, kofs = lx[8], lx[9], lx[10], lx[11], lx[14]
    for b in range(rstart.shape[0] - 1):
        rr, cc = rows[rstart[b]:rstart[b + 1]], cols[cstart[b]:cstart[b + 1]]
        Kmat[np.ix_(rr, cc)] = Kval[kofs[b]:kofs[b + 1]].reshape(len(rr), len(cc))
    I6, p6 = np.zeros((m.nb, 6, 6)), np.zeros((m.nb, 6))
    K._body_terms(m.mass, m.inertia, x, R, np.zeros((m.nb, 6)), np.zeros((m.nb, 6)), I6, p6)
    for i in range(m.nb - 1, -1, -1):  # composite inertias about the origin: plain sums
        if m.parent[i] >= 0:
            I6[m.parent[i]] += I6[i]
    M = np.zeros((m.nv, m.nv))
    for i in range(m.nb):
        ci = slice(m.v_adr[i], m.v_adr[i] + m.nv_j[i])
        F = I6[i] @ S6[ci].T  # (6, n_i)
        j = i
        while j >= 0:
            cj = slice(m.v_adr[j], m.v_adr[j] + m.nv_j[j])
            M[cj, ci] = S6[cj] @ F
            M[ci, cj] = M[cj, ci].T
            j = int(m.parent[j])
    return Kmat, M


def _rank(s, scale):
    return int((s > config.RANK_RTOL * max(scale, 1e-300)).sum())


def _cond(A):
    if A.size == 0:
        return 1.0
    s = np.linalg.svd(A, compute_uv=False)
    return float(s[-1] / s[0]) if s[0] > 0 else 0.0


def build_partition(model: Model, q: np.ndarray, structure=None) -> Partition:
    """Choose the independent speeds of every loop cluster at configuration ``q``.

    Loops are taken in the order of their cut joints (for a ladder: cell after cell).
    Each loop's mass-whitened Jacobian ``K_l diag(M)^-1/2`` over the speeds of its path
    not yet claimed by an earlier loop is factorised by column-pivoted QR; its rank
    ``r_l`` leading columns become the loop's dependent speeds, the rest independent
    (so the blocks are triangular: a loop's dependent speeds depend only on earlier
    ones).  The loops are tried forward and backward; if neither order gives every
    block a conditioning of at least SWITCH_RTOL (or a loop's rows cannot be satisfied
    by its unclaimed speeds), the cluster is factorised as one block when that is
    better conditioned.
    """
    m = model
    structure = structure or loop_structure(m)
    lca, paths, clusters = structure
    Kmat, M = _numeric_loop_jacobian(m, q, structure)
    colscale = 1.0 / np.sqrt(np.maximum(np.diag(M), 1e-300)) if m.nv else np.zeros(0)
    Ks = Kmat * colscale[None, :] if Kmat.size else Kmat
    row_adr, _ = _cut_rows_of(m)
    scale = float(np.abs(Ks).max()) if Ks.size else 1.0
    merged = 0
    choice = []
    for loops in clusters:
        bodies_cols = _cols_of(m, sorted(set(i for l in loops for i in paths[l])))

        def greedy(order):
            """Loop after loop; None if a loop's unclaimed speeds cannot satisfy its rows."""
            blocks, claimed, indep = [], set(), []
            for l in order:
                rows = _rows_of(m, row_adr, l)
                cols = _cols_of(m, paths[l])
                free = [c for c in cols if c not in claimed]
                A_all = Ks[np.ix_(rows, cols)] if cols else np.zeros((len(rows), 0))
                r_all = _rank(np.linalg.svd(A_all, compute_uv=False), scale) if A_all.size else 0
                if free:
                    _, Rq, piv = scipy.linalg.qr(Ks[np.ix_(rows, free)], pivoting=True, mode="economic")
                    r_free = int((np.abs(np.diag(Rq)) > config.RANK_RTOL * scale).sum())
                else:
                    r_free, piv = 0, np.zeros(0, dtype=int)
                if r_free < r_all:
                    return None
                dep = [free[k] for k in piv[:r_all]]
                claimed.update(free)
                indep += [c for c in free if c not in dep]
                blocks.append((rows, cols, dep))
            return blocks, indep

        def merged_block():
            rows = [rr for l in sorted(loops) for rr in _rows_of(m, row_adr, l)]
            cols = bodies_cols
            A = Ks[np.ix_(rows, cols)]
            r_all = _rank(np.linalg.svd(A, compute_uv=False), scale) if A.size else 0
            _, _, piv = scipy.linalg.qr(A, pivoting=True, mode="economic")
            dep = [cols[k] for k in piv[:r_all]]
            return [(rows, cols, dep)], [c for c in cols if c not in dep]

        def worst(blocks):
            return min((_cond(Ks[np.ix_(rows, dep)]) for rows, _, dep in blocks if dep), default=1.0)

        candidates = [c for c in (greedy(sorted(loops)), greedy(sorted(loops, reverse=True))) if c is not None]
        best = None
        for cand in candidates:
            wc = worst(cand[0])
            if wc >= SWITCH_RTOL:
                best = (*cand, wc)
                break
            if best is None or wc > best[2]:
                best = (*cand, wc)
        if best is None or best[2] < SWITCH_RTOL:
            mb = merged_block()
            wm = worst(mb[0])
            if best is None or wm > best[2]:
                merged += 1
                best = (*mb, wm)
        choice.append((best[0], best[1]))
    return partition_from_choice(m, structure, choice, Ks, colscale, merged)


def partition_from_choice(model: Model, structure, choice, Ks, colscale, merged=0) -> Partition:
    """A :class:`Partition` from ``choice`` (per cluster: blocks of (rows, columns,
    dependent columns), and the independent speeds), scaled loop Jacobian ``Ks``."""
    m = model
    lx = _layout(m, structure, choice)
    blocks = [b for blk, _ in choice for b in blk]
    conds = [_cond(Ks[np.ix_(rows, dep)]) for rows, _, dep in blocks if dep]
    dep_global = np.array(sorted(c for _, _, dep in blocks for c in dep), dtype=np.int64)
    d = np.diff(lx[5])
    return Partition(lx=lx, colscale=colscale, independent=lx[6], dependent=dep_global,
                     conditioning=min(conds) if conds else 1.0, n_blocks=len(blocks), merged=merged,
                     dmax=int(d.max()) if d.size else 0, nq_tot=int(lx[15][-1]), nk_tot=int(lx[14][-1]),
                     ndep=int(lx[12][-1]))


def _whitened_singular_values(model: Model, q: np.ndarray, structure) -> np.ndarray:
    Kmat, M = _numeric_loop_jacobian(model, q, structure)
    if not Kmat.size:
        return np.zeros(0)
    L = np.linalg.cholesky(M)
    return np.linalg.svd(scipy.linalg.solve_triangular(L, Kmat.T, lower=True).T, compute_uv=False)


def loop_rank(model: Model, structure=None) -> int:
    """The rank of the closure equations at the file's configuration, where every loop
    closes (``dense``'s :meth:`~.dense.DenseFormulation.closure_rank`): singular values of
    the mass-whitened loop Jacobian above ``RANK_RTOL`` of the largest."""
    s = _whitened_singular_values(model, model.q_zero(), structure or loop_structure(model))
    if not s.size or s[0] == 0.0:
        return 0
    return int(np.sum(s > config.RANK_RTOL * s[0]))


def loop_singularity(model: Model, q: np.ndarray, structure=None, rank: int | None = None) -> float:
    """The mobility measure of the loops at q: the smallest of the ``rank`` (the closure's,
    :func:`loop_rank`) largest singular values of the mass-whitened loop Jacobian over the
    largest -- dense's measure; 1 without loops.  Small for every choice of independent
    speeds."""
    structure = structure or loop_structure(model)
    s = _whitened_singular_values(model, q, structure)
    if rank is None:
        rank = loop_rank(model, structure)
    if not s.size or s[0] == 0.0 or rank == 0:
        return 1.0
    return float(s[rank - 1] / s[0])


def singular_crossing(samples: list, t: float) -> tuple[bool, float, float]:
    """Whether the loops are reaching a singular configuration, from the mobility measure's
    recent ``samples`` ``[(t, s), ...]`` (oldest first, the last at ``t``): ``(crossing,
    predicted minimum, seconds until it falls below SINGULAR_STOP)``.

    Near a configuration ``t*`` where the closure loses rank, the measure behaves as
    ``s(t)^2 = a^2 + b^2 (t - t*)^2``: ``a = 0`` at a singular configuration (a
    parallelogram folding flat: ``s`` falls linearly to zero and rises again), ``a > 0``
    when the motion only passes near one (a five-bar: the measure dips to 0.07 and turns
    within two output intervals).  A quadratic in ``s^2`` through three samples, at least
    1 ms apart, predicts ``a``: a crossing is a measure predicted to fall below
    SINGULAR_STOP before the next sample, or one below it already; with fewer samples, a
    measure falling below SINGULAR_STOP; below DENSE_FILTER_RTOL, always."""
    s = samples[-1][1]
    if s < config.DENSE_FILTER_RTOL:
        return True, s, 0.0
    pts = [samples[-1]]
    for ti, si in reversed(samples[:-1]):
        if pts[-1][0] - ti >= 1e-3:
            pts.append((ti, si))
            if len(pts) == 3:
                break
    if len(pts) < 3:
        falling = len(pts) == 2 and pts[1][1] > s
        return bool(falling and s < config.SINGULAR_STOP), s, 0.0
    (t2, s2), (t1, s1), (t0, s0) = pts
    # s^2 = c0 + c1 (t - t) + c2 (t - t)^2 through the three samples (Newton's form)
    d1 = (s2 * s2 - s1 * s1) / (t2 - t1)
    d0 = (s1 * s1 - s0 * s0) / (t1 - t0)
    c2 = (d1 - d0) / (t2 - t0)
    slope = d1 + c2 * (t2 - t1)  # d(s^2)/dt at t2
    if slope >= 0.0:
        return False, s, 0.0  # rising (or at its minimum): moving away
    if s < config.SINGULAR_STOP:
        return True, s, 0.0
    # when s^2 reaches SINGULAR_STOP^2, if it does; decided only when that is before the
    # next sample (1.5 sample intervals): until then the samples may yet show the turn of
    # a near pass, which three samples far from the minimum cannot tell from a crossing
    gap = s * s - config.SINGULAR_STOP ** 2
    if c2 <= 0.0:
        tau = gap / -slope
        low = 0.0
    else:
        low = float(np.sqrt(max(s * s - slope * slope / (4.0 * c2), 0.0)))
        disc = slope * slope - 4.0 * c2 * gap
        if disc < 0.0:
            return False, low, -slope / (2.0 * c2)  # turns above SINGULAR_STOP
        tau = (-slope - np.sqrt(disc)) / (2.0 * c2)
    return bool(tau < 1.5 * (t2 - t1)), low, float(tau)


class RCRFormulation(Formulation):
    name = "rcr"
    title = "recursive coordinate reduction (Anderson & Critchley), velocity level"
    kind = "ode"
    not_finite = ("the reduced mass matrix of a loop cluster is singular "
                  "(independent speeds no longer valid)")
    parameters = ()
    summary = ("Paper 002's recursive coordinate reduction: joint coordinates, loops closed at the velocity "
               "level by independent/dependent speeds chosen (and re-chosen) automatically, dependent "
               "coordinates restored by Newton after every step; linear cost on ladders.")
    #: joint-space rows (gear pairs) after the cut-joint rows: none in rcr (embedding has them)
    njr: int = 0
    #: the right-hand side's kernel of positions and blocks, and the arrays it takes between
    #: ``lx`` and ``nb`` (embedding's: its joint-space rows, ``jr``)
    _positions_entry = staticmethod(K._positions_and_blocks)
    jr: tuple = ()

    def __init__(self, model: Model, settings):
        super().__init__(model, settings)
        m = model
        self.mk = kin_arrays(m)
        self.ca = con_arrays(m)
        self.fa = force_arrays(m)
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
        self.GA = np.zeros((self.ncr, 6))  # cut rows on the predecessor, about the origin, _cut_rows
        self.GB = np.zeros((self.ncr, 6))  # ... on the successor
        self.g0 = np.zeros(self.ncr)  # velocity-product part of the rows, _cut_rows
        self.phi = np.zeros(self.ncr)  # closure residuals, _cut_rows
        self.gam = np.zeros(self.ncr)  # eq. (35) remainder, _loop_rhs
        self.zero_rows = np.zeros(self.ncr)
        self.pos = np.zeros(m.nv, dtype=np.int64)  # column -> block position scratch, _blocks
        self.w = np.zeros(max(self.ncr, 1))  # block solve scratch
        self.v = np.zeros(m.nv)  # closed speeds (eq. 34), evaluate
        self.V = np.zeros((m.nb, 6))  # COM twists, fk_velocities
        self.c = np.zeros((m.nb, 6))  # velocity products about joint points, fk_velocities
        self.Ab = np.zeros((m.nb, 6))  # bias accelerations about COMs, fk_accelerations
        self.Ao = np.zeros((m.nb, 6))  # ... about the origin, _to_origin
        self.co = np.zeros((m.nb, 6))  # velocity products about the origin, _to_origin
        self.Fext = np.zeros((m.nb, 6))  # applied wrenches, applied_forces
        self.I6 = np.zeros((m.nb, 6, 6))  # inertia -> articulated inertia, _body_terms/_dynamics
        self.p6 = np.zeros((m.nb, 6))  # bias force -> articulated bias, _body_terms/_dynamics
        self.g = np.zeros(m.nv)  # particular solution of eq. (35)
        self.beta = np.zeros((m.nb, 6))  # remainder accelerations in clusters, _cluster_maps
        self.U = np.zeros((m.nv, 6))  # IA S per tree speed, _dynamics
        self.Dl = np.zeros((m.nb, 3, 3))  # S^T IA S factors, _dynamics
        self.u = np.zeros(m.nv)  # -S^T pA, _dynamics
        self.a = np.zeros((m.nb, 6))  # spatial accelerations about the origin, _dynamics
        self.vdot = np.zeros(m.nv)
        self.t6 = np.zeros(6)
        self.zero_v = np.zeros(m.nv)
        self.dq = np.zeros(m.nv)
        self.ncl = ncl
        self.switches = 0
        self.switch_log: list[str] = []
        self.block_conditioning = 1.0
        self._sing_samples: list = []  # (t, mobility measure) while near a singular configuration
        self.loop_rank = loop_rank(m, self.structure) if self.ncr else 0
        self.part: Partition | None = None
        self._use(self._partition_at(m.q_zero()))

    @classmethod
    def supports(cls, model: Model) -> tuple[bool, str]:
        return super().supports(model)  # refuses couplings (gears): they are not rows here

    # ------------------------------------------------------------- partition
    def _partition_at(self, q: np.ndarray) -> Partition:
        """The independent/dependent split chosen at configuration ``q``."""
        return build_partition(self.model, q, self.structure)

    def _use(self, part: Partition) -> None:
        m = self.model
        self.part = part
        self._bound_kernels = None  # their workspace changes with the partition
        d = max(part.dmax, 0)
        self.Kval = np.zeros(max(part.nk_tot, 1))  # block loop Jacobians, _blocks
        self.Qf = np.zeros(max(part.nq_tot, 1))  # Householder factors of the dependent columns, _blocks
        self.tau = np.zeros(2 * max(part.ndep, 1))  # reflector scales | R diagonal, _blocks
        self.N = np.zeros((d, m.nv))  # dependent speeds per unit independent speed (eq. 34), evaluate
        self.Gam = np.zeros((m.nb, 6, d))  # cluster partial velocities (eq. 58), _cluster_maps
        self.Ucl = np.zeros((max(self.ncl, 1), 6, d))  # cluster coupling inertia, _dynamics
        self.Dcl = np.zeros((max(self.ncl, 1), d, d))  # cluster reduced inertia factor, _dynamics
        self.ucl = np.zeros((max(self.ncl, 1), d))  # cluster reduced forces, _dynamics

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
        with ``q``; ``K.dynamics``, called with ``q``, ``v`` and the output array."""
        if self._bound_kernels is None:
            m, p = self.model, self.part
            dyn = StateKernel(
                K.dynamics, (self.mk, self.ca, self.fa, p.lx, m.mass, m.inertia, m.q_adr, m.nv_j, self.spring_tree,
                             self.cut_spring, self.x, self.R, self.P, self.S, self.S6, self.V, self.c, self.Ab,
                             self.Ao, self.co, self.Fext, self.jq, self.jq_ref, self.GA, self.GB, self.g0, self.phi,
                             self.gam, self.zero_rows, p.colscale, self.Kval, self.Qf, self.tau, self.w, self.I6,
                             self.p6, self.N, self.g, self.Gam, self.beta, self.U, self.Dl, self.u, self.Ucl,
                             self.Dcl, self.ucl, self.a, self.v, self.vdot, self.t6, self.zero_v))
            self._bound_kernels = (self._positions_kernel(), dyn)
        return self._bound_kernels

    def _positions_kernel(self) -> StateKernel:
        m, p = self.model, self.part
        return StateKernel(self._positions_entry, (self.mk, self.ca, p.lx, *self.jr, m.nb, m.nv_j, self.x, self.R,
                                                   self.P, self.S, self.S6, self.V0, self.GA, self.GB, self.g0,
                                                   self.phi, p.colscale, self.Kval, self.Qf, self.tau, self.pos))

    def _positions(self, q):
        return self._kernels()[0](q)

    def _solve(self, t, q, v, check=True, out=NO_RATES):
        """One evaluation into the workspace, and the right-hand side into ``out`` if it is
        as long as the state; ``check``: refuse non-finite speeds or accelerations."""
        positions, dynamics = self._kernels()
        self.block_conditioning = positions(q)
        ok = dynamics(q, v, out)
        if not ok or (check and not (np.isfinite(self.vdot).all() and np.isfinite(self.v).all())):
            raise SingularSystemError(t, self.not_finite)

    def rhs(self, t, y):
        self.nfev += 1
        nq = self.model.nq
        out = np.empty_like(y)
        self._solve(t, y[:nq], y[nq:], False, out)
        return out

    # ------------------------------------------------------------ projection
    @property
    def projects(self) -> bool:
        return self.ncr > 0

    def _close(self, t, y, check=True):
        """Item 4: Newton on the loop equations for the dependent coordinates, then
        eq. (34) for the dependent speeds (independent ones untouched)."""
        m, p = self.model, self.part
        y = y.copy()
        q, v = y[: m.nq], y[m.nq:]
        normalize_quaternions(self.mk, q)
        if not self.ncr:
            return y
        rhs = np.zeros(self.phi.shape[0])
        it = 0
        while True:  # Newton on Phi(q) = 0 for the dependent coordinates
            cond = self._positions(q)
            tol = config.PROJECTION_TOL if it < config.PROJECTION_MAX_ITER else np.inf
            res = K.newton_step(self.mk, p.lx, m.nb, m.nv_j, q, self.phi, p.colscale, self.Kval, self.Qf, self.tau,
                                self.w, self.dq, rhs, tol)
            if res <= tol:
                break
            it += 1
        normalize_quaternions(self.mk, q)
        self.block_conditioning = cond
        if check and not (np.isfinite(res) and res < 1e3 * config.PROJECTION_TOL + 1e-9):
            raise SimulationError(t, f"{self.name}: the loop equations cannot be closed from the independent "
                                     f"coordinates (residual {res:.3g} after {it} Newton steps)")
        K._close_velocities(p.lx, self.Kval, self.Qf, self.tau, p.colscale, v, self.zero_rows, self.w)
        return y

    def post_step(self, t, y):
        y = self._close(t, y)
        if self.ncr and (self.block_conditioning < SWITCH_RTOL or self._sing_samples):
            y = self._repartition(t, y)
        return y

    def step_bound(self, t, y):
        """Adaptive integrators call this before every step: the partition monitor runs
        on every accepted state, not only at output instants (a dead point of the
        current partition can come within one output interval).  Never bounds the step."""
        if self.ncr:
            self.block_conditioning = self._positions(y[: self.model.nq])
            if self.block_conditioning < SWITCH_RTOL or self._sing_samples:
                self._repartition(t, y, close=False)
        return None

    def _repartition(self, t, y, close=True):
        """A block has become ill-conditioned, or the loops are near a singular configuration.
        If the loops themselves reach one (every partition is singular there: a change of
        mobility), stop; otherwise re-choose the independent speeds at this state (the state
        layout is unchanged).  The mobility measure is tracked while it is below twice
        SINGULAR_WINDOW; :func:`singular_crossing` tells a crossing from a near pass."""
        m = self.model
        q = y[: m.nq]
        s = loop_singularity(m, q, self.structure, self.loop_rank)
        if s < 2.0 * config.SINGULAR_WINDOW:
            self._sing_samples = [p for p in self._sing_samples if 0.0 < t - p[0] <= 0.1][-8:] + [(t, s)]
            crossing, low, tau = singular_crossing(self._sing_samples, t)
            if crossing:
                raise SimulationError(
                    t, f"{self.name}: the loops reach a singular configuration (mobility measure {s:.2e}, "
                       f"falling below {config.SINGULAR_STOP:g} within {tau:.2g} s): the mechanism may change branch there, "
                       "which a choice of independent coordinates cannot decide; the dense formulation crosses "
                       "singular configurations")
        else:
            self._sing_samples = []
        if self.block_conditioning >= SWITCH_RTOL:
            return y
        new = self._partition_at(q)
        old_cond = self.block_conditioning
        if new.key() != self.part.key() and new.conditioning > SWITCH_GAIN * old_cond:
            self.switches += 1
            if len(self.switch_log) < 20:
                self.switch_log.append(f"t = {t:.4g} s: independent speeds {self.part.independent.tolist()} -> "
                                       f"{new.independent.tolist()} (block conditioning {old_cond:.1e} -> "
                                       f"{new.conditioning:.1e})")
            self._use(new)
            if close:
                y = self._close(t, y)
        return y

    singular_remedy = ("rcr stops where the loops reach a singular configuration (a change of mobility); the "
                       "dense formulation crosses such configurations (--formulation dense).")

    def mobility(self, y) -> float:
        """The mobility measure at the positions of ``y`` (:func:`loop_singularity`, dense's)."""
        if not self.ncr:
            return 1.0
        return loop_singularity(self.model, y[: self.model.nq], self.structure, self.loop_rank)

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
    def evaluate(self, t, y) -> Evaluation:
        m = self.model
        q = y[: m.nq]
        self._solve(t, q, y[m.nq:])
        for j in self.cut_spring:
            self.jq_ref[j] = self.jq[j]
        A = self.a.copy()  # about the origin -> about each COM: lin += alpha x c
        A[:, :3] += np.cross(A[:, 3:], self.x)
        if self.ncr:
            check_consistent(t, *self._closure_residual())
        reactions = self._reactions(A)
        return Evaluation(t=t, x=self.x.copy(), R=self.R.copy(), V=self.V.copy(),
                          acc=classical_accelerations(self.V, A), P=self.P.copy(), reactions=reactions,
                          jq=self.jq.copy(), extra={"vdot": self.vdot.copy(), "q": q.copy(), "v": self.v.copy()})

    def _reactions(self, A) -> np.ndarray:
        """Joint wrenches at an output instant.  Coordinate reduction never forms the
        multipliers; they follow from the generalized forces the accelerations leave
        unbalanced, ``K^T lam = -(M vdot + h)`` (one inverse-dynamics sum about the
        origin and a least-squares solve, minimum-norm where closure rows are
        redundant, as in ``dense``; K scattered from this evaluation's loop blocks).
        Output instants only, never in the step."""
        m, lx = self.model, self.part.lx
        nr = self.ncr + self.njr
        lam = np.zeros(nr)
        if nr:
            I6, p6 = np.zeros((m.nb, 6, 6)), np.zeros((m.nb, 6))
            K._body_terms(m.mass, m.inertia, self.x, self.R, self.V, self.Fext, I6, p6)
            F = np.einsum("kij,kj->ki", I6, self.a) + p6  # wrench each body needs beyond the applied
            for i in range(m.nb - 1, 0, -1):  # subtree sums: about the origin, plain sums
                if m.parent[i] >= 0:
                    F[m.parent[i]] += F[i]
            tau = np.einsum("ck,ck->c", self.S6, F[lx[19]]) if m.nv else np.zeros(0)
            Kmat = np.zeros((nr, m.nv))
            rstart, rows, cstart, cols, kofs = lx[8], lx[9], lx[10], lx[11], lx[14]
            for b in range(rstart.shape[0] - 1):
                rr, cc = rows[rstart[b]:rstart[b + 1]], cols[cstart[b]:cstart[b + 1]]
                Kmat[np.ix_(rr, cc)] = self.Kval[kofs[b]:kofs[b + 1]].reshape(len(rr), len(cc))
            if self.njr:  # the gears' constant rows, in dense's order and scale (multipliers as dense's)
                Kmat[self.ncr:] = coupling_rows(m, m.q_zero())[1]
            lam = np.linalg.lstsq(Kmat.T, -tau, rcond=config.RANK_RTOL)[0]
        return reactions_from_multipliers(m, self.ca, self.x, self.R, self.V, self.P, A, self.Fext, lam)

    def _closure_residual(self):
        """(largest acceleration residual of the cut rows, the scale of its terms)."""
        m = self.model
        Ao = self.a
        worst, scale = 0.0, 0.0
        for j in range(m.nb, m.nj):
            a, b = m.pred[j], m.succ[j]
            for r in range(self.part.lx[17][j], self.part.lx[17][j] + m.nc_j[j]):
                t1 = self.GB[r] @ Ao[b]
                t2 = self.GA[r] @ Ao[a] if a >= 0 else 0.0
                worst = max(worst, abs(t1 + t2 + self.g0[r]))
                scale = max(scale, abs(t1) + abs(t2) + abs(self.g0[r]))
        return worst, scale
