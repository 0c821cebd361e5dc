"""The loop structure of formulation ``rcr`` and its partitions (paper 002 section 4.3;
docs/rcr.md).

The cut joints' loops are grouped into *clusters* -- loops that share a tree joint
(:func:`loop_structure`) -- and the tree speeds of each cluster are split into
independent and dependent ones (:func:`build_partition`): loop after loop, by
column-pivoted QR of each loop's mass-whitened Jacobian over the speeds that no earlier
loop has claimed; a loop whose rows its unclaimed speeds cannot satisfy is merged with its
cluster's other loops into one block.  A :class:`Partition` carries the choice, with its
:class:`.rcr_layout.PartitionLayout` for the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg

from .. import config
from ..constraints import con_arrays
from ..kinematics import kin_arrays
from ..model import Model
from .rcr_articulated import body_terms
from .rcr_kernels import positions_and_blocks
from .rcr_layout import PartitionLayout, cut_rows_of, partition_layout
from .rcr_mobility import composite_mass_matrix, whitened_singular_values
from .base import StateKernel

#: a block whose scaled dependent columns have min |R_ii| / max |R_ii| below this
#: makes the monitor look for a better partition (and a partition is chosen so that none does)
SWITCH_RTOL = 0.1
#: a block conditioning that fell by more than this factor since the last accepted state
#: (under SWITCH_RTOL) is falling fast: the partition monitor searches, and takes any
#: better partition (:meth:`.rcr_monitor.PartitionMonitor._searches`, :func:`.rcr_rows.close_post`)
SWITCH_FALL = 1.5


@dataclass
class Partition:
    """Independent/dependent split of the loop speeds (one choice; see module docstring)."""

    lx: PartitionLayout  # the partition as the kernels read it
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

    def partition(self) -> "Partition":
        """Itself (a search's result laid out: :meth:`PartitionSearch.partition`)."""
        return self


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


def cols_of(model: Model, bodies):
    return [c for i in bodies for c in range(model.v_adr[i], model.v_adr[i] + model.nv_j[i])]


def rows_of(model: Model, row_adr, l):
    j = model.nb + l
    return list(range(int(row_adr[j]), int(row_adr[j]) + int(model.nc_j[j])))


class LoopJacobian:
    """(K over all tree speeds, joint-space mass matrix) at ``q``, from rcr's own kernels:
    every loop as a block with no dependent speeds fills K; the mass matrix is the
    composite-rigid-body sum about the origin.  Called at every partition search and every
    sample of the mobility measure (not in the step), so its layout and workspace are
    made, and the workspace packed, once per model and loop structure; each call returns
    new arrays.  The last configuration's pair is kept: a search follows the mobility
    sample at the same state."""

    def __init__(self, model: Model, structure):
        m = self.model = model
        lca, paths, clusters = structure
        row_adr, _ = cut_rows_of(m)
        choice = [([(rows_of(m, row_adr, l), cols_of(m, paths[l]), []) for l in loops], []) for loops in clusters]
        lx = partition_layout(m, structure, choice)
        self.ncr = ncr = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
        self.x, self.R, P = np.zeros((m.nb, 3)), np.zeros((m.nb, 3, 3)), np.zeros((m.nj, 3))
        self.S6 = np.zeros((m.nv, 6))
        self.Kval = np.zeros(max(int(lx.blk_kofs[-1]), 1))
        self._kernel = StateKernel(positions_and_blocks, (
            kin_arrays(m), con_arrays(m), lx, m.nb, m.nv_j, self.x, self.R, P, np.zeros((m.nv, 6)), self.S6,
            np.zeros((m.nb, 6)), np.zeros((ncr, 6)), np.zeros((ncr, 6)), np.zeros(ncr), np.zeros(ncr), np.ones(m.nv),
            self.Kval, np.zeros(1), np.zeros(2), np.zeros(m.nv, dtype=np.int64), np.zeros(1)))
        # each block's entries of Kval (row-major, the blocks one after another) and their place in K
        rstart, rows, cstart, cols = lx.blk_rstart, lx.blk_rows, lx.blk_cstart, lx.blk_cols
        places = [(rows[rstart[b]:rstart[b + 1], None] * m.nv + cols[None, cstart[b]:cstart[b + 1]]).ravel()
                  for b in range(rstart.shape[0] - 1)]
        self._places = np.concatenate(places) if places else np.zeros(0, dtype=np.int64)
        self._I6, self._p6, self._zero = np.zeros((m.nb, 6, 6)), np.zeros((m.nb, 6)), np.zeros((m.nb, 6))
        self._F = np.zeros(6)
        self._last: tuple | None = None  # (q, K, M) of the last call

    def __call__(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        last = self._last
        if last is not None and np.array_equal(q, last[0]):  # a search right after a mobility sample
            return last[1].copy(), last[2].copy()
        Kmat, M = self._at(q)
        self._last = (q.copy(), Kmat.copy(), M.copy())
        return Kmat, M

    def _at(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = self.model
        self._kernel(q)
        Kmat = np.zeros((self.ncr, m.nv))
        Kmat.flat[self._places] = self.Kval[: self._places.shape[0]]
        body_terms(m.mass, m.inertia, self.x, self.R, self._zero, self._zero, self._I6, self._p6)
        M = np.empty((m.nv, m.nv))
        composite_mass_matrix(m.parent, m.v_adr, m.nv_j, self._I6, self.S6, M, self._F)
        return Kmat, M


def numeric_loop_jacobian(model: Model, q: np.ndarray, structure, jacobian: LoopJacobian | None = None):
    """:class:`LoopJacobian`'s ``(K, M)`` at ``q``: ``jacobian``'s where given (made for
    this model and structure), else a new one's."""
    return (jacobian or LoopJacobian(model, structure))(q)


def numeric_rank(s, scale):
    return int((s > config.RANK_RTOL * max(scale, 1e-300)).sum())


def _cond(A):
    if A.size == 0:
        return 1.0
    s = np.linalg.svd(A, compute_uv=False)
    return float(s[-1] / s[0]) if s[0] > 0 else 0.0


def build_partition(model: Model, q: np.ndarray, structure=None, jacobian: LoopJacobian | None = None) -> Partition:
    """The :class:`Partition` :func:`search_partition` chooses at configuration ``q``."""
    return search_partition(model, q, structure, jacobian).partition()


def search_partition(model: Model, q: np.ndarray, structure=None,
                     jacobian: LoopJacobian | None = None) -> PartitionSearch:
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
    Kmat, M = numeric_loop_jacobian(m, q, structure, jacobian)
    colscale = 1.0 / np.sqrt(np.maximum(np.diag(M), 1e-300)) if m.nv else np.zeros(0)
    Ks = Kmat * colscale[None, :] if Kmat.size else Kmat
    row_adr, _ = cut_rows_of(m)
    scale = float(np.abs(Ks).max()) if Ks.size else 1.0
    conds = _BlockConditioning(Ks)
    merged = 0
    choice = []
    for loops in clusters:
        bodies_cols = cols_of(m, sorted(set(i for l in loops for i in paths[l])))

        def greedy(order):
            """Loop after loop; None if a loop's unclaimed speeds cannot satisfy its rows."""
            blocks, claimed, indep = [], set(), []
            for l in order:
                rows = rows_of(m, row_adr, l)
                cols = cols_of(m, paths[l])
                free = [c for c in cols if c not in claimed]
                A_all = Ks[np.ix_(rows, cols)] if cols else np.zeros((len(rows), 0))
                r_all = numeric_rank(np.linalg.svd(A_all, compute_uv=False), scale) if A_all.size else 0
                if free:
                    Rq, piv = scipy.linalg.qr(Ks[np.ix_(rows, free)], pivoting=True, mode="r")
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
            rows = [rr for l in sorted(loops) for rr in rows_of(m, row_adr, l)]
            cols = bodies_cols
            A = Ks[np.ix_(rows, cols)]
            r_all = numeric_rank(np.linalg.svd(A, compute_uv=False), scale) if A.size else 0
            _, piv = scipy.linalg.qr(A, pivoting=True, mode="r")
            dep = [cols[k] for k in piv[:r_all]]
            return [(rows, cols, dep)], [c for c in cols if c not in dep]

        def worst(blocks):
            return min((conds(rows, dep) for rows, _, dep in blocks if dep), default=1.0)

        # one loop: backward is forward
        orders = (sorted(loops),) if len(loops) == 1 else (sorted(loops), sorted(loops, reverse=True))
        candidates = [c for c in map(greedy, orders) if c is not None]
        best = None
        for cand in candidates:
            wc = worst(cand[0])
            if wc >= SWITCH_RTOL:
                best = (*cand, wc)
                break
            if best is None or wc > best[2]:
                best = (*cand, wc)
        # one loop with a candidate: the merged block is that loop's block again
        if best is None or (best[2] < SWITCH_RTOL and len(loops) > 1):
            mb = merged_block()
            wm = worst(mb[0])
            if best is None or wm > best[2]:
                merged += 1
                best = (*mb, wm)
        choice.append((best[0], best[1]))
    return PartitionSearch(m, structure, choice, Ks, colscale, merged, conds)


class _BlockConditioning:
    """``_cond`` of the block of the scaled loop Jacobian ``Ks`` at ``rows`` and dependent
    columns ``dep``, each block's once: a search weighs its candidates by the blocks that
    :func:`partition_from_choice` then reports."""

    def __init__(self, Ks: np.ndarray):
        self.Ks, self.known = Ks, {}

    def __call__(self, rows, dep) -> float:
        key = (tuple(rows), tuple(dep))
        c = self.known.get(key)
        if c is None:
            c = self.known[key] = _cond(self.Ks[np.ix_(rows, dep)])
        return c


class PartitionSearch(NamedTuple):
    """What :func:`search_partition` chose, before the kernels' layout of it is made: the
    partition monitor compares it with the partition in use (:meth:`key`,
    :attr:`conditioning`) and lays it out (:meth:`partition`) only where it switches."""

    model: Model
    structure: tuple
    choice: list  # per cluster: blocks of (rows, columns, dependent columns), and the independent speeds
    Ks: np.ndarray  # the scaled loop Jacobian
    colscale: np.ndarray
    merged: int
    conds: _BlockConditioning

    def key(self) -> tuple:
        """:meth:`Partition.key`: the dependent speeds, ascending."""
        return tuple(sorted(c for blocks, _ in self.choice for _, _, dep in blocks for c in dep))

    @property
    def conditioning(self) -> float:
        """:attr:`Partition.conditioning`: the smallest of its blocks'."""
        c = [self.conds(rows, dep) for blocks, _ in self.choice for rows, _, dep in blocks if dep]
        return min(c) if c else 1.0

    def partition(self) -> Partition:
        return partition_from_choice(self.model, self.structure, self.choice, self.Ks, self.colscale, self.merged,
                                     self.conds)


def partition_from_choice(model: Model, structure, choice, Ks, colscale, merged=0, conds=None) -> Partition:
    """A :class:`Partition` from ``choice`` (per cluster: blocks of (rows, columns,
    dependent columns), and the independent speeds), scaled loop Jacobian ``Ks``
    (``conds``: a :class:`_BlockConditioning` of it, with the blocks a search has weighed)."""
    m = model
    lx = partition_layout(m, structure, choice)
    blocks = [b for blk, _ in choice for b in blk]
    measure = conds if conds is not None else _BlockConditioning(Ks)
    conds = [measure(rows, dep) for rows, _, dep in blocks if dep]
    dep_global = np.array(sorted(c for _, _, dep in blocks for c in dep), dtype=np.int64)
    d = np.diff(lx.cl_istart)
    return Partition(lx=lx, colscale=colscale, independent=lx.ind_cols, dependent=dep_global,
                     conditioning=min(conds) if conds else 1.0, n_blocks=len(blocks), merged=merged,
                     dmax=int(d.max()) if d.size else 0, nq_tot=int(lx.blk_qofs[-1]), nk_tot=int(lx.blk_kofs[-1]),
                     ndep=int(lx.blk_dstart[-1]))


def _whitened_singular_values(model: Model, q: np.ndarray, structure, jacobian=None) -> np.ndarray:
    Kmat, M = numeric_loop_jacobian(model, q, structure, jacobian)
    if not Kmat.size:
        return np.zeros(0)
    s = whitened_singular_values(Kmat, M)
    if s.size or not M.size:
        return s
    L = np.linalg.cholesky(M)  # not positive definite: numpy says so
    return np.linalg.svd(scipy.linalg.solve_triangular(L, Kmat.T, lower=True).T, compute_uv=False)


def loop_rank(model: Model, structure=None, jacobian=None) -> int:
    """The rank of the closure equations at the file's configuration, where every loop
    closes (``dense``'s :meth:`~.dense.DenseFormulation.closure_rank`): singular values of
    the mass-whitened loop Jacobian above ``RANK_RTOL`` of the largest."""
    s = _whitened_singular_values(model, model.q_zero(), structure or loop_structure(model), jacobian)
    if not s.size or s[0] == 0.0:
        return 0
    return int(np.sum(s > config.RANK_RTOL * s[0]))


def loop_singularity(model: Model, q: np.ndarray, structure=None, rank: int | None = None,
                     jacobian: LoopJacobian | None = None) -> float:
    """The mobility measure of the loops at q: the smallest of the ``rank`` (the closure's,
    :func:`loop_rank`) largest singular values of the mass-whitened loop Jacobian over the
    largest -- dense's measure; 1 without loops.  Small for every choice of independent
    speeds.  ``jacobian``: a :class:`.rcr_partition.LoopJacobian` of the model and structure."""
    structure = structure or loop_structure(model)
    s = _whitened_singular_values(model, q, structure, jacobian)
    if rank is None:
        rank = loop_rank(model, structure, jacobian)
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


#: partitions a formulation keeps with their arrays and kernels (:class:`KeptPartitions`)
PARTITIONS_KEPT = 16


def same_layout(a: PartitionLayout, b: PartitionLayout) -> bool:
    """Whether two partitions' layouts are equal, array by array."""
    return all(np.array_equal(x, y) for x, y in zip(a, b))


class KeptPartitions:
    """The partitions a formulation has left, each with the arrays sized for it and the
    kernels bound to them (the attributes ``names``): a switch back to one binds nothing
    again -- packing the workspaces of a dozen kernels costs more than a step.  Keyed by
    the dependent speeds, and given back only where the layout is the same (a search can
    group the same speeds into other blocks); at most ``size``, the least recently left
    first out (``size`` 0: none kept)."""

    def __init__(self, names: tuple[str, ...], size: int = PARTITIONS_KEPT):
        self.names, self.size = names, size
        self._kept: dict = {}
        self.taken = 0  # partitions given back

    def leave(self, form, part: Partition, token) -> None:
        """Keep ``form``'s attributes ``names`` for ``part``, with ``token``."""
        if self.size <= 0:
            return
        key = part.key()
        self._kept.pop(key, None)
        self._kept[key] = (part.lx, part.colscale, token, {n: getattr(form, n) for n in self.names})
        while len(self._kept) > self.size:
            del self._kept[next(iter(self._kept))]

    def take(self, form, part: Partition):
        """Give ``form`` back the attributes kept for ``part``'s key, ``part`` made to hold
        the arrays its kernels were bound to (its own scaling copied into them, its layout
        being equal); their token, or None where nothing is kept for it."""
        entry = self._kept.pop(part.key(), None)
        if entry is None or not same_layout(entry[0], part.lx):
            return None
        lx, colscale, token, values = entry
        colscale[:] = part.colscale
        part.lx, part.colscale = lx, colscale
        for name, value in values.items():
            setattr(form, name, value)
        self.taken += 1
        return token
