"""The divide-and-conquer machinery shared by ``dca``, ``hdca`` and ``index3``.

Every node of the binary assembly tree (:class:`~engine.topology.AssemblyTree`)
is a set of bodies with *handles* -- the joints with one end inside it.  Each
formulation brings, per node, the linear relation between the forces applied
at its handles and a handle quantity ``x`` (spatial acceleration for DCA,
spatial velocity for HDCA, position increment for index-3):

    x_h = sum_k Phi[h, k] F_k + b_h                                   (1)

with ``nd x nd`` blocks (``nd`` = 6, or 7 for Euler-parameter coordinates),
and, per joint ``j``, its constraint rows on both ends

    G_pred,j x_pred + G_succ,j x_succ + g0_j = eps * Lambda_j,        (2)
    F on pred = G_pred,j^T Lambda_j,   F on succ = G_succ,j^T Lambda_j.

Merging children A and B over their shared (interface) joints eliminates the
interface multipliers:  with ``E_e`` the rows of ``G Phi`` coupling interface
constraints to external handle ``e`` and

    K = sum_sides G Phi G^T - eps 1,     r0 = sum_sides G b + g0,
    Y_e = K^-1 E_e,   y0 = K^-1 r0,
    Lambda = -(sum_e Y_e F_e + y0)                                    (3)

the merged node obeys (1) with

    Phi^C[e, f] = [e, f on one side] Phi^X[e, f] - E_e^T Y_f,   b^C_e = b^X_e - Y_e^T r0.   (4)

For DCA/HDCA these are Featherstone's formulas (paper 001 eqs. 26-36);
for index-3 with ``Phi = delta`` and ``eps = 1/alpha`` they are paper 000's
eqs. (35)-(39) (``C = -K^-1``).  ``K`` is factorised by Cholesky with diagonal
pivoting: dependent rows (redundant closure equations) show as vanishing
pivots and get zero multipliers -- a valid solution, since a force in the null
space of ``G Phi G^T`` moves nothing (docs/derivations.md, "DCA").

The matrix pass (``Phi^C``, ``K``, ``Y``) and the bias pass (``r0``, ``y0``,
``b^C``) are separate kernels: index-3's modified Newton iterations and
projections rerun only the bias pass.  Merges of one level are independent; the
passes cut the tree into independent subtrees (:func:`subtree_partition`) so each
pass opens a single parallel region -- a few fork/joins per evaluation, which
matters on loaded machines -- and run the few merges above the cut serially.
The passes exist once per block size (``assemble_matrices6`` ... for dca/hdca,
``...7`` for index-3; :func:`_passes`), with the size a compile-time constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .. import config
from ..model import Model
from ..topology import AssemblyTree, articulated_regions

#: per-body passes go parallel from this many bodies on
PARALLEL_MIN_BODIES = 64
#: ``ix[24]`` of a run on one thread: no body loop opens a parallel region
NEVER_PARALLEL = np.iinfo(np.int64).max


def run_threads(nb: int, threads: int | None) -> int:
    """numba threads of a run on ``nb`` bodies: the settings' ``threads`` (all cores
    when None, at most numba's), but one below ``PARALLEL_MIN_BODIES`` bodies."""
    import numba

    n = numba.config.NUMBA_NUM_THREADS if threads is None else min(threads, numba.config.NUMBA_NUM_THREADS)
    return 1 if nb < PARALLEL_MIN_BODIES else max(n, 1)


#: left automatic, dca and hdca run an unbranched open chain on one thread below this
#: many bodies: two threads (the chain's two halves, :func:`topology.two_part_assembly_tree`)
#: took 1.31-1.36 x the time of one at 64 bodies, 1.11-1.16 x at 128, 1.02-1.03 x at 256 and
#: 0.93-0.96 x at 512, while random trees of 128 and 256 bodies took 0.84-0.85 x
#: (``benchmarks/thread_choice.py``; docs/performance.md, "Automatic threads").  dca's
#: two roles on a chain (``dca._evaluate_chain``) took 2.0-2.1 x at 64 bodies, 1.07-1.14 x
#: at 128, 0.71-1.08 x at 256 and 0.76-0.94 x at 512 (docs/performance.md, "Two threads on
#: one chain")
CHAIN_PARALLEL_MIN_BODIES = 512


def body_parallel_from(nb: int, threads: int | None) -> np.int64:
    """``ix[24]``: the body count from which the per-body loops (leaves, accelerations,
    hdca's impulses and momentum rates) open a parallel region -- never on one thread,
    where a region costs 0.6 us to enter and its loop runs no faster than a plain one
    (docs/performance.md, "Fixed cost per call").  index-3's body loops keep the fixed
    threshold: several of its kernels count references, and a plain loop that counts ran
    twice as slow as a region's body in dca (performance.md, "What was changed")."""
    return np.int64(PARALLEL_MIN_BODIES if run_threads(nb, threads) > 1 else NEVER_PARALLEL)


#: on one thread the tree passes still cut the tree (one region per pass) from this many
#: bodies on: numba compiles the merges in a parallel region's body with ``noalias``
#: arguments, faster than the same merges in the serial loop by 3 % from 512 bodies on,
#: while below about 200 bodies the regions' entry costs more (docs/performance.md)
ONE_THREAD_CUT_MIN_BODIES = 256


def cuts_tree(nb: int, threads: int | None) -> bool:
    """Whether the tree passes cut the tree into independent subtrees (one parallel
    region per pass) for a run on ``nb`` bodies with the settings' ``threads``."""
    if run_threads(nb, threads) > 1:
        return True  # run_threads is 1 below PARALLEL_MIN_BODIES
    return nb >= ONE_THREAD_CUT_MIN_BODIES


@dataclass(eq=False)
class TreeLayout:
    """Flat index arrays (``ix``) and workspace (``ws``) of one tree solve."""

    nd: int
    ix: tuple
    n_rows: int  # total constraint rows (all joints)
    tree: AssemblyTree
    # workspace, grouped by pass
    Phi: np.ndarray  # (n_pairs, nd, nd) node blocks, filled by the leaf kernel + matrix pass
    bv: np.ndarray  # (n_slots, nd) node biases, leaf kernel + bias pass
    Fh: np.ndarray  # (n_slots, nd) handle forces, disassembly
    G: np.ndarray  # (2, n_rows, nd) constraint rows on the pred (0) and succ (1) ends, formulation
    g0: np.ndarray  # (n_rows,) constant term of each constraint row, formulation
    lam: np.ndarray  # (n_rows,) multipliers, disassembly
    #: (2 sum nr^2,) pivoted Cholesky factor of each merge's K, matrix pass; then, for a
    #: factor of lower rank, its null space and the Cholesky factor of that space's Gram matrix (_null_factor)
    Kf: np.ndarray
    Kp: np.ndarray  # (sum nr,) its pivot order
    #: (2 nm,) its rank, then each merge's rank bound: the rank of its closure rows where the
    #: loops close (:meth:`cap_ranks`), its row count until then.  The pivoting keeps at most
    #: that many pivots, so redundant rows stay dropped off the closure too.
    Kr: np.ndarray
    Ks: np.ndarray  # (sum nr^2,) scratch for the factorisation
    Y: np.ndarray  # (sum ne*nr, nd) K^-1 E_e per external handle, matrix pass
    E: np.ndarray  # (sum ne*nr, nd) E_e, matrix pass
    r0: np.ndarray  # (sum nr,) bias pass
    y0: np.ndarray  # (sum nr,) K^-1 r0, bias pass
    scr: np.ndarray  # (nm, nd + 3 max_nr + nd^2) per-merge scratch (no allocation in the passes)
    #: (n_rows,) column k if constraint row r is +-e_k on both ends (G rows of tree
    #: joints' translational parts), else -1: G Phi is then a signed row copy.
    #: Set by the formulation when it knows its rows' structure; -1 is always safe.
    sel: np.ndarray
    # articulated-body regions (dca, hdca; docs/derivations.md, "The articulated-body regions")
    IA: np.ndarray  # (nb, 6, 6) articulated inertia of the body's subtree about its joint point
    W: np.ndarray  # (nb, 6) its bias wrench
    U: np.ndarray  # (nv, 6) I S per freedom of the joint to the parent
    Dinv: np.ndarray  # (nb, 3, 3) (S^T I S)^-1
    sz: np.ndarray  # (nv,) S^T (W - I c)
    cperp: np.ndarray  # (nb, 6) the joint's constant term c = -G_succ^T g0
    xa: np.ndarray  # (nb, 6) handle quantity at the joint point, disassembly
    LA: np.ndarray  # (n_regions, 6, 6) Cholesky factor of each region root's inertia; scratch
    reg: tuple  # the regions' index arrays (_region_arrays)
    #: (nb,) the body's joint has rows e_0, e_1, e_2 first (G_succ, linear) and rows with
    #: zero linear halves after them: its passes skip their zeros (_bias_step, _down_step).
    #: Set by the formulation when it knows its rows' structure; False is always safe.
    unit_first: np.ndarray

    def cap_ranks(self) -> None:
        """Bound each merge's rank, from now on, by the rank its last matrix pass found: called
        once, after a pass at a configuration where every loop closes (the file's).  Redundant
        closure rows are dependent there to round-off (a planar loop's three out-of-plane rows);
        off the closure -- a Runge-Kutta stage, a drifted position -- they become independent
        by ~d, and a pivot test alone would then keep one as a constraint that is not the
        mechanism's (docs/derivations.md, "Redundant rows")."""
        nm = self.Kr.shape[0] // 2
        self.Kr[nm:] = self.Kr[:nm]

    @property
    def n_regions(self) -> int:
        return self.LA.shape[0]

    @property
    def one_region(self) -> bool:
        """The whole tree is region 0, grounded (an open tree hanging from ground by one
        joint, assembled on one thread): the three passes are then that region's
        :func:`region_matrices`, :func:`region_biases` and :func:`region_down` alone, which
        a kernel may call directly (dca's ``_evaluate_region``)."""
        region_of, reg_head = self.reg[0], self.reg[3]
        return (len(reg_head) == 1 and bool(np.isin(region_of, (0, -2)).all())
                and self.tree.node_nh[self.tree.nb + reg_head[0]] == 0)

    def hybrid(self, S: np.ndarray, P: np.ndarray) -> tuple:
        """The passes' last argument ``hy``: the regions' workspace with the formulation's
        motion subspaces ``S`` and joint points ``P`` (arrays it writes in place), then
        their index arrays: ``hy[10:20]`` = region_of, reg_start, reg_body, reg_head,
        parent, slot_in, slot_out, va, nvj, in_region (:func:`_region_arrays`), and
        ``hy[20]`` = ``unit_first``.  Apart from
        the layout's ``ix``: index-3's kernels, which take ``ix`` everywhere, compile
        without them."""
        return ((S, P, self.IA, self.W, self.U, self.Dinv, self.sz, self.cperp, self.xa, self.LA) + self.reg
                + (self.unit_first,))

    @property
    def GA(self) -> np.ndarray:  # view: rows on the pred end
        return self.G[0]

    @property
    def GB(self) -> np.ndarray:  # view: rows on the succ end
        return self.G[1]


#: the tree is cut into at least this many independent subtrees for the parallel passes
SUBTREES = 16


def subtree_partition(tree: AssemblyTree, min_subtrees: int = SUBTREES):
    """Independent subtrees for one parallel region per pass.

    ``split`` is the highest level with at least ``min_subtrees`` merges (-1: none,
    everything runs serially).  Every merge at a level <= ``split`` whose parent merge
    is above it (or which is a root) heads a subtree; a subtree's merges are listed
    children first.  Merges above ``split`` form the serial top, in level order.
    Returns (sub_start, sub_merges, top_merges).
    """
    nm, nb = tree.n_merges, tree.nb
    level = np.zeros(nm, dtype=np.int64)
    for l in range(tree.n_levels):
        level[tree.level_start[l]:tree.level_start[l + 1]] = l
    counts = np.diff(tree.level_start)
    split = -1
    for l in range(tree.n_levels):
        if counts[l] >= min_subtrees:
            split = l
    parent = np.full(nm, -1, dtype=np.int64)
    for m in range(nm):
        for child in (tree.left[m], tree.right[m]):
            if child >= nb:
                parent[child - nb] = m
    if split < 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.arange(nm, dtype=np.int64)
    heads = [m for m in range(nm) if level[m] <= split and (parent[m] < 0 or level[parent[m]] > split)]
    members = {h: [] for h in heads}
    for m in range(nm):
        if level[m] > split:
            continue
        h = m
        while not (parent[h] < 0 or level[parent[h]] > split):
            h = parent[h]
        members[h].append(m)
    sub_start, sub_merges = [0], []
    for h in heads:
        sub_merges += sorted(members[h], key=lambda k: (level[k], k))
        sub_start.append(len(sub_merges))
    top = [m for m in range(nm) if level[m] > split]
    return (np.array(sub_start, dtype=np.int64), np.array(sub_merges, dtype=np.int64),
            np.array(top, dtype=np.int64))


def build_layout(model: Model, tree: AssemblyTree, nd: int, rows_per_joint: np.ndarray,
                 threads: int | None = None, regions: bool = False, grounded: bool = False) -> TreeLayout:
    """Index arrays for ``tree`` with ``rows_per_joint[j]`` constraint rows per joint,
    for a run with the settings' ``threads`` (:func:`body_parallel_from`); ``regions``:
    assemble the articulated-body regions (:func:`topology.articulated_regions`) in
    inertia form -- for 6-vector handles whose tree-joint rows are ``G_succ = T^T``,
    ``G_pred = -T^T`` with ``T`` orthonormal and ``T^T S = 0`` (dca, hdca); ``grounded``:
    regions may take in their root's joint to ground (dca)."""
    nb, nm = tree.nb, tree.n_merges
    rows = np.asarray(rows_per_joint, dtype=np.int64)
    row_adr = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    n_rows = int(rows.sum())
    m_nr = np.zeros(nm, dtype=np.int64)
    if_roff = np.zeros(len(tree.if_joint), dtype=np.int64)
    for m in range(nm):
        off = 0
        for ii in range(tree.if_start[m], tree.if_start[m + 1]):
            if_roff[ii] = off
            off += rows[tree.if_joint[ii]]
        m_nr[m] = off
    node_of = nb + np.arange(nm, dtype=np.int64)
    ne = tree.node_nh[node_of] if nm else np.zeros(0, dtype=np.int64)
    m_K = np.concatenate([[0], np.cumsum(m_nr**2)[:-1]]).astype(np.int64) if nm else np.zeros(0, np.int64)
    m_R = np.concatenate([[0], np.cumsum(m_nr)[:-1]]).astype(np.int64) if nm else np.zeros(0, np.int64)
    m_E = np.concatenate([[0], np.cumsum(ne * m_nr)[:-1]]).astype(np.int64) if nm else np.zeros(0, np.int64)
    nK = int((m_nr**2).sum())
    nR = int(m_nr.sum())
    nE = int((ne * m_nr).sum())
    # no parallel region in the tree passes unless they cut the tree (cuts_tree); a tree
    # with its own parallel parts (topology.two_part_assembly_tree) is cut there
    cut = cuts_tree(nb, threads)
    if cut and tree.partition:
        sub_start, sub_merges, top_merges = tree.partition
    else:
        sub_start, sub_merges, top_merges = subtree_partition(tree, SUBTREES if cut else nm + 1)
    # regions lie in the parts of the cut tree whether or not this run cuts it: the same
    # tree then gives the same arithmetic on any number of threads
    region_of, regions_list = (articulated_regions(model, tree, tree.partition or subtree_partition(tree), grounded)
                               if regions and nd == 6 else (np.full(nm, -1, dtype=np.int64), []))
    ix = (
        np.int64(nb), tree.left, tree.right, tree.level_start, tree.node_nh, tree.node_h_start,
        tree.node_pair_start, tree.h_joint, tree.h_side, tree.h_src, tree.if_start, tree.if_joint,
        tree.if_left, tree.if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows,
        sub_start, sub_merges, top_merges, body_parallel_from(nb, threads),
    )
    nv = int(model.nv_j[:nb].sum()) if regions_list else 0
    nbr = nb if regions_list else 0
    return TreeLayout(
        nd=nd, ix=ix, n_rows=n_rows, tree=tree,
        Phi=np.zeros((tree.n_pairs, nd, nd)), bv=np.zeros((tree.n_slots, nd)),
        Fh=np.zeros((tree.n_slots, nd)), G=np.zeros((2, n_rows, nd)),
        g0=np.zeros(n_rows), lam=np.zeros(n_rows), Kf=np.zeros(2 * nK), Kp=np.zeros(nR, dtype=np.int64),
        Kr=np.concatenate([np.zeros(nm, dtype=np.int64), m_nr.astype(np.int64)]), Ks=np.zeros(nK), Y=np.zeros((nE, nd)), E=np.zeros((nE, nd)),
        r0=np.zeros(nR), y0=np.zeros(nR),
        scr=np.zeros((max(nm, 1), nd + 3 * int(m_nr.max(initial=0)) + nd * nd)),
        sel=np.full(n_rows, -1, dtype=np.int64),
        IA=np.zeros((nbr, 6, 6)), W=np.zeros((nbr, 6)), U=np.zeros((nv, 6)), Dinv=np.zeros((nbr, 3, 3)),
        sz=np.zeros(nv), cperp=np.zeros((nbr, 6)), xa=np.zeros((nbr, 6)), LA=np.zeros((len(regions_list), 6, 6)),
        reg=_region_arrays(model, tree, region_of, regions_list), unit_first=np.zeros(nbr, dtype=np.bool_),
    )


def _region_arrays(model: Model, tree: AssemblyTree, region_of: np.ndarray, regions: list) -> tuple:
    """``hy[10:20]`` (:meth:`TreeLayout.hybrid`): per merge the region it heads (-1 none, -2 inside one); the regions'
    bodies tips first (``reg_start``, ``reg_body``) and head merges; per body its parent,
    the handle slots of its joint to the parent on itself and on the parent (as leaves),
    the joint's first freedom and freedom count, and its region (-1: none)."""
    nb = tree.nb
    # arrays of its own, never read-only views of the model's: a copied or unpickled layout
    # gets writeable arrays, which numba types apart, and would compile every kernel again
    i64 = lambda a: np.array(a, dtype=np.int64)  # noqa: E731
    reg_start = i64(np.concatenate([[0], np.cumsum([len(r) for r in regions])]))
    reg_body = i64([b for r in regions for b in r])
    reg_head = np.zeros(len(regions), dtype=np.int64)
    for m in np.flatnonzero(region_of >= 0):
        reg_head[region_of[m]] = m
    in_region = np.full(nb, -1, dtype=np.int64)
    slot_in = np.full(nb, -1, dtype=np.int64)
    slot_out = np.full(nb, -1, dtype=np.int64)
    for r, bodies in enumerate(regions):
        for b in bodies:
            in_region[b] = r
            slot_in[b] = _leaf_slot(tree, b, b)
            if model.parent[b] >= 0 and b != bodies[-1]:
                slot_out[b] = _leaf_slot(tree, model.parent[b], b)
    return (i64(region_of), reg_start, reg_body, reg_head, i64(model.parent[:nb]), slot_in, slot_out,
            i64(model.v_adr[:nb]), i64(model.nv_j[:nb]), in_region)


def _leaf_slot(tree: AssemblyTree, body: int, joint: int) -> int:
    """The handle slot of ``joint`` on ``body`` as a leaf."""
    s0 = tree.node_h_start[body]
    for h in range(tree.node_nh[body]):
        if tree.h_joint[s0 + h] == joint:
            return int(s0 + h)
    raise ValueError(f"joint {joint} is not a handle of body {body}")


# ------------------------------------------------------------------ small algebra


@njit(cache=True, nogil=True, _nrt=False)
def _pchol(W, L, P, kb, rb, n, tol, cap):
    """Pivoted Cholesky of the symmetric positive semi-definite n x n matrix stored
    flat at ``W[kb:]`` (overwritten): ``K[piv][:, piv] = L L^T`` on the leading
    ``rank`` rows, ``L`` flat at ``L[kb:]``, ``piv`` at ``P[rb:]``.

    Stops when the largest remaining diagonal is below ``tol`` times the largest
    initial one, or after ``cap`` pivots (the merge's rank bound, ``TreeLayout.Kr``:
    its redundant rows, decided where the loops close); returns the rank.  A factor of
    lower rank is completed by :func:`_null_factor` for the minimum-norm solves.
    """
    for k in range(n):
        P[rb + k] = k
    dmax0 = 0.0
    for k in range(n):
        if W[kb + k * n + k] > dmax0:
            dmax0 = W[kb + k * n + k]
    if dmax0 <= 0.0:
        for k in range(n * n):
            L[kb + k] = 0.0
        return 0
    thresh = tol * dmax0
    # first try without pivoting (K is definite unless closure equations are redundant)
    ok = cap >= n
    for k in range(n if ok else 0):
        d = W[kb + k * n + k]
        for i in range(k):
            d -= L[kb + k * n + i] * L[kb + k * n + i]
        if d <= thresh:
            ok = False
            break
        d = np.sqrt(d)
        L[kb + k * n + k] = d
        inv = 1.0 / d
        for i in range(k + 1, n):
            t = W[kb + i * n + k]
            for q in range(k):
                t -= L[kb + i * n + q] * L[kb + k * n + q]
            L[kb + i * n + k] = t * inv
        for i in range(k + 1, n):
            L[kb + k * n + i] = 0.0
    if ok:
        return n
    for k in range(n * n):
        L[kb + k] = 0.0
    rank = 0
    for k in range(n):
        p = k
        dmax = W[kb + k * n + k]
        for i in range(k + 1, n):
            if W[kb + i * n + i] > dmax:
                dmax = W[kb + i * n + i]
                p = i
        if dmax <= thresh or rank >= cap:
            break
        if p != k:
            # symmetric swap of rows/columns k and p in W, rows in L, entries in piv
            for i in range(n):
                t = W[kb + k * n + i]
                W[kb + k * n + i] = W[kb + p * n + i]
                W[kb + p * n + i] = t
            for i in range(n):
                t = W[kb + i * n + k]
                W[kb + i * n + k] = W[kb + i * n + p]
                W[kb + i * n + p] = t
            for i in range(k):
                t = L[kb + k * n + i]
                L[kb + k * n + i] = L[kb + p * n + i]
                L[kb + p * n + i] = t
            t2 = P[rb + k]
            P[rb + k] = P[rb + p]
            P[rb + p] = t2
        d = np.sqrt(W[kb + k * n + k])
        L[kb + k * n + k] = d
        for i in range(k + 1, n):
            L[kb + i * n + k] = W[kb + i * n + k] / d
        for i in range(k + 1, n):
            lik = L[kb + i * n + k]
            if lik != 0.0:
                for j in range(k + 1, i + 1):
                    W[kb + i * n + j] -= lik * L[kb + j * n + k]
                    W[kb + j * n + i] = W[kb + i * n + j]
        rank += 1
    return rank


@njit(cache=True, nogil=True, _nrt=False)
def _null_factor(L, kb, n, rank):
    """For a factor of rank ``r < n`` (``K[piv][:, piv] = [L11; L21] [L11; L21]^T``): the null
    space of ``K`` in pivoted order, ``Z = [T; I]`` with ``T = -L11^-T L21^T`` (r x z, z = n -
    r), and the lower Cholesky factor ``R`` of ``Z^T Z = T^T T + I``; ``T`` row-major at
    ``L[L.shape[0] // 2 + kb:]``, ``R`` after it (z x z), for :func:`_pinv_solve`.

    With redundant rows the multipliers of a merge are not unique; the basic solution of
    the pivoted factor (zero on the rows not pivoted) jumps by a self-equilibrated set
    whenever two nearly equal diagonals swap pivots between nearby states.  The
    minimum-norm one is the same smooth function of the state whichever rows were
    pivoted, at the conditioning of the basic solve.  dca's accelerations do not see the
    difference; hdca's momenta carry the multipliers, and their jumps made its right-hand
    side discontinuous (docs/derivations.md, "Redundant rows")."""
    z = n - rank
    h = L.shape[0] // 2 + kb
    hr = h + rank * z
    for j in range(z):  # column j of T: L11^T t = -(row r + j of L)
        for k in range(rank - 1, -1, -1):
            t = -L[kb + (rank + j) * n + k]
            for i in range(k + 1, rank):
                t -= L[kb + i * n + k] * L[h + i * z + j]
            L[h + k * z + j] = t / L[kb + k * n + k]
    for a in range(z):  # R R^T = T^T T + I
        for b in range(a + 1):
            t = 1.0 if a == b else 0.0
            for k in range(rank):
                t += L[h + k * z + a] * L[h + k * z + b]
            for q in range(b):
                t -= L[hr + a * z + q] * L[hr + b * z + q]
            L[hr + a * z + b] = np.sqrt(t) if a == b else t / L[hr + b * z + b]


@njit(cache=True, nogil=True, _nrt=False)
def _null_out(L, kb, n, rank, v, o, w, wo):
    """``v[o:o+n]`` (pivoted order) minus its part in the null space of the rank-r factor:
    ``v - Z (Z^T Z)^-1 Z^T v`` with :func:`_null_factor`'s ``Z = [T; I]`` and ``R``;
    ``w[wo:wo+n-r]`` is scratch."""
    z = n - rank
    h = L.shape[0] // 2 + kb
    hr = h + rank * z
    for j in range(z):  # w = R^-1 Z^T v
        t = v[o + rank + j]
        for k in range(rank):
            t += L[h + k * z + j] * v[o + k]
        for q in range(j):
            t -= L[hr + j * z + q] * w[wo + q]
        w[wo + j] = t / L[hr + j * z + j]
    for j in range(z - 1, -1, -1):  # w = R^-T w
        t = w[wo + j]
        for q in range(j + 1, z):
            t -= L[hr + q * z + j] * w[wo + q]
        w[wo + j] = t / L[hr + j * z + j]
    for k in range(rank):  # v -= Z w
        t = 0.0
        for j in range(z):
            t += L[h + k * z + j] * w[wo + j]
        v[o + k] -= t
    for j in range(z):
        v[o + rank + j] -= w[wo + j]


@njit(cache=True, nogil=True, _nrt=False)
def _pinv_solve(L, kb, n, rank, v, o, w, wo):
    """``v[o:o+n] = K^+ v[o:o+n]`` (pivoted order) for a factor of rank below n: the
    right-hand side's part in the range of ``K`` (where the rows are dependent on the
    closure it all is; off it, the dependent rows' O(offset) inconsistency is dropped),
    the pivoted rows solved for it, and the solution's null-space part removed -- the
    minimum-norm least-squares solution for the rank-r ``K``, which does not depend on
    which rows were pivoted (:func:`_null_factor`), at the basic solve's conditioning.
    Called, not inlined: only merges with redundant rows take it, and inlined into every
    pass variant it cost the cold compile 40 % (dca: 168 -> 238 s)."""
    _null_out(L, kb, n, rank, v, o, w, wo)
    for k in range(rank):
        s = v[o + k]
        for i in range(k):
            s -= L[kb + k * n + i] * v[o + i]
        v[o + k] = s / L[kb + k * n + k]
    for k in range(rank - 1, -1, -1):
        s = v[o + k]
        for i in range(k + 1, rank):
            s -= L[kb + i * n + k] * v[o + i]
        v[o + k] = s / L[kb + k * n + k]
    for k in range(rank, n):
        v[o + k] = 0.0
    _null_out(L, kb, n, rank, v, o, w, wo)


@njit(cache=True, nogil=True, _nrt=False)
def _psolve_vec(L, P, kb, rb, n, rank, b, x, vb, sgn, scr, m, t0):
    """x[vb:vb+n] = sgn K^-1 b[vb:vb+n] (basic solution; minimum-norm least squares where
    the rank is below n, :func:`_pinv_solve`); ``scr[m, t0:t0+2n]`` is scratch."""
    if rank < n:
        for k in range(n):
            scr[m, t0 + k] = b[vb + P[rb + k]]
        _pinv_solve(L, kb, n, rank, scr[m], t0, scr[m], t0 + n)
        for k in range(n):
            x[vb + P[rb + k]] = sgn * scr[m, t0 + k]
        return
    for k in range(rank):
        s = b[vb + P[rb + k]]
        for i in range(k):
            s -= L[kb + k * n + i] * scr[m, t0 + i]
        scr[m, t0 + k] = s / L[kb + k * n + k]
    for k in range(rank - 1, -1, -1):
        s = scr[m, t0 + k]
        for i in range(k + 1, rank):
            s -= L[kb + i * n + k] * scr[m, t0 + i]
        scr[m, t0 + k] = s / L[kb + k * n + k]
    for k in range(n):
        x[vb + k] = 0.0
    for k in range(rank):
        x[vb + P[rb + k]] = sgn * scr[m, t0 + k]


@njit(cache=True, nogil=True, _nrt=False)
def _psolve_rows(L, P, kb, rb, n, rank, B, X, base, ncol, sgn, scr, m, t0):
    """X[base:base+n, :ncol] = sgn K^-1 B[base:base+n, :ncol] (basic solution; minimum-norm
    least squares where the rank is below n, :func:`_pinv_solve`); ``scr[m, t0:t0+2n]``
    is scratch."""
    for d in range(ncol):
        if rank < n:
            for k in range(n):
                scr[m, t0 + k] = B[base + P[rb + k], d]
            _pinv_solve(L, kb, n, rank, scr[m], t0, scr[m], t0 + n)
            for k in range(n):
                X[base + P[rb + k], d] = sgn * scr[m, t0 + k]
            continue
        for k in range(rank):
            s = B[base + P[rb + k], d]
            for i in range(k):
                s -= L[kb + k * n + i] * scr[m, t0 + i]
            scr[m, t0 + k] = s / L[kb + k * n + k]
        for k in range(rank - 1, -1, -1):
            s = scr[m, t0 + k]
            for i in range(k + 1, rank):
                s -= L[kb + i * n + k] * scr[m, t0 + i]
            scr[m, t0 + k] = s / L[kb + k * n + k]
        for k in range(n):
            X[base + k, d] = 0.0
        for k in range(rank):
            X[base + P[rb + k], d] = sgn * scr[m, t0 + k]


# ----------------------------------------------------------------- merge kernels
# The per-merge functions below that the level loops call are ``inline='always'``:
# they take the layout's tuple of 24 index arrays, and called out of line each call
# cost more than a merge's arithmetic (docs/index3.md, "Timing").  The per-body
# kernels of dca, hdca and index3 are inlined for the same reason.


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def _gphi(Gs, w, r, nr, Phi, blk, out, nd):
    """out[:nr] = G_w[r:r+nr] Phi[blk]  (axpy form over the nd columns; zero entries skipped)."""
    for a in range(nr):
        for d in range(nd):
            out[a, d] = 0.0
        for c in range(nd):
            g = Gs[w, r + a, c]
            if g != 0.0:
                for d in range(nd):
                    out[a, d] += g * Phi[blk, c, d]


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def _psolve_cols(L, P, kb, rb, n, rank, B, X, base, sgn, Z, nd, w):
    """X[base:base+n, :nd] = sgn K^-1 B[base:base+n, :nd], all nd columns at once
    (basic solution of the pivoted factor, minimum-norm least squares where the rank is
    below n: :func:`_pinv_solve`; ``Z`` is (>= n, nd) scratch, ``w`` (>= 2n,) scratch)."""
    if rank < n:
        for d in range(nd):
            for k in range(n):
                w[k] = B[base + P[rb + k], d]
            _pinv_solve(L, kb, n, rank, w, 0, w, n)
            for k in range(n):
                X[base + P[rb + k], d] = sgn * w[k]
        return
    for k in range(rank):
        pk = P[rb + k]
        for d in range(nd):
            Z[k, d] = B[base + pk, d]
        for i in range(k):
            lki = L[kb + k * n + i]
            for d in range(nd):
                Z[k, d] -= lki * Z[i, d]
        inv = 1.0 / L[kb + k * n + k]
        for d in range(nd):
            Z[k, d] *= inv
    for k in range(rank - 1, -1, -1):
        for i in range(k + 1, rank):
            lik = L[kb + i * n + k]
            for d in range(nd):
                Z[k, d] -= lik * Z[i, d]
        inv = 1.0 / L[kb + k * n + k]
        for d in range(nd):
            Z[k, d] *= inv
    for k in range(n):
        for d in range(nd):
            X[base + k, d] = 0.0
    for k in range(rank):
        pk = P[rb + k]
        for d in range(nd):
            X[base + pk, d] = sgn * Z[k, d]


@njit(cache=True, nogil=True, inline='always')
def _merge_matrices_one(m, ix, Phi, G, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol, nd):
    """:func:`_merge_matrices` for one interface joint (every merge of a chain or tree):
    the same equations in axpy form over the ``nd`` (= Phi.shape[2], a compile-time
    constant of the calling pass: :func:`_passes`) columns, which the compiler unrolls and
    vectorises, and zero entries of G skipped."""
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows, _s0, _s1, _s2, _p = ix
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    pL = node_pair_start[Ln]
    nR = node_nh[Rn] if Rn >= 0 else 0
    pR = node_pair_start[Rn] if Rn >= 0 else 0
    ii = if_start[m]
    j = if_joint[ii]
    r = row_adr[j]
    nr = rows[j]
    kb = m_K[m]
    rb = m_R[m]
    wl = h_side[sL + if_left[ii]]
    wr = 1 - wl
    hl = if_left[ii]
    hr = if_right[ii]
    T = scr[m, scr.shape[1] - nd * nd:].reshape((nd, nd))  # scratch, no allocation
    # K = sgn (G_l Phi^L_ll G_l^T + G_r Phi^R_rr G_r^T - eps 1)
    for a in range(nr * nr):
        Ks[kb + a] = 0.0
    nside = 2 if Rn >= 0 else 1
    for side in range(nside):
        w = wl if side == 0 else wr
        blk = pL + hl * nL + hl if side == 0 else pR + hr * nR + hr
        _gphi(G, w, r, nr, Phi, blk, T, nd)
        for b in range(nr):
            for d in range(nd):
                g = G[w, r + b, d]
                if g != 0.0:
                    for a in range(nr):
                        Ks[kb + a * nr + b] += sgn * g * T[a, d]
    if eps != 0.0:
        for a in range(nr):
            Ks[kb + a * nr + a] -= sgn * eps
    rank = _pchol(Ks, Kf, Kp, kb, rb, nr, tol, Kr[Kr.shape[0] // 2 + m])
    Kr[m] = rank
    if rank < nr:
        _null_factor(Kf, kb, nr, rank)
    n_h = node_nh[n]
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(n_h):
        src = h_src[sN + e]
        if src < nL:
            _gphi(G, wl, r, nr, Phi, pL + hl * nL + src, T, nd)
        else:
            _gphi(G, wr, r, nr, Phi, pR + hr * nR + (src - nL), T, nd)
        base = eb + e * nr
        for a in range(nr):
            for d in range(nd):
                E[base + a, d] = T[a, d]
        _psolve_cols(Kf, Kp, kb, rb, nr, rank, E, Y, base, sgn, T, nd, scr[m])
    pN = node_pair_start[n]
    for e in range(n_h):
        se = h_src[sN + e]
        be = eb + e * nr
        for f in range(e, n_h):
            sf = h_src[sN + f]
            bf = eb + f * nr
            blk = pN + e * n_h + f
            if (se < nL) == (sf < nL):
                src_blk = pL + se * nL + sf if se < nL else pR + (se - nL) * nR + (sf - nL)
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk, c, d] = Phi[src_blk, c, d]
            else:
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk, c, d] = 0.0
            for a in range(nr):
                for c in range(nd):
                    ea = E[be + a, c]
                    if ea != 0.0:
                        for d in range(nd):
                            Phi[blk, c, d] -= ea * Y[bf + a, d]
            if f != e:
                blk2 = pN + f * n_h + e
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk2, d, c] = Phi[blk, c, d]


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def _gphi7(G, w, r, a, P, S, o):
    """S[o:o+7] = row r+a of G_w times the 7 x 7 block P, in seven accumulators."""
    t0 = t1 = t2 = t3 = t4 = t5 = t6 = 0.0
    for c in range(7):
        g = G[w, r + a, c]
        t0 += g * P[c, 0]
        t1 += g * P[c, 1]
        t2 += g * P[c, 2]
        t3 += g * P[c, 3]
        t4 += g * P[c, 4]
        t5 += g * P[c, 5]
        t6 += g * P[c, 6]
    S[o], S[o + 1], S[o + 2], S[o + 3], S[o + 4], S[o + 5], S[o + 6] = t0, t1, t2, t3, t4, t5, t6


@njit(cache=True, nogil=True, error_model="numpy", inline='always')
def _merge_matrices_leaf3(m, ix, Phi, G, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol):
    """:func:`_merge_matrices_one` for 7 x 7 blocks, a joint of three rows (spherical) and a
    merged node whose one handle comes from a leaf child whose ``Phi`` blocks are all the
    same (index-3's ``delta_i``): every merge but the last of a spherical chain assembled
    tips first.  Then ``E = G_leaf delta`` is the product ``K`` takes from that side, and
    with ``K = L L^T``, ``W = L^-1 E``: ``Y = sgn L^-T W``, ``Phi^C = delta - sgn W^T W``.
    The 3 x 3 factor in scalars, the products in a row of ``scr`` (C-contiguous): 2.6 x
    faster than the general kernel (``benchmarks/index3_merge_probe.py``; docs/index3.md,
    "Timing").  Returns False where this does not apply or ``K`` needs a pivot (the
    general kernel then runs and overwrites what this wrote); the same results to
    round-off otherwise (``Kp`` the identity, ``Kr`` 3, as the general kernel's)."""
    nb, left, right, node_nh, node_h_start, node_pair_start, h_side, h_src = (ix[0], ix[1], ix[2], ix[4], ix[5],
                                                                            ix[6], ix[8], ix[9])
    if_start, if_joint, if_left, if_right, m_K, m_R, m_E, row_adr, rows = (ix[10], ix[11], ix[12], ix[13], ix[16],
                                                                          ix[17], ix[18], ix[19], ix[20])
    n = nb + m
    ii = if_start[m]
    j = if_joint[ii]
    if node_nh[n] != 1 or rows[j] != 3 or Kr[Kr.shape[0] // 2 + m] < 3:
        return False
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    src = h_src[node_h_start[n]]
    ext_left = src < nL
    if not (Ln < nb if ext_left else 0 <= Rn < nb):
        return False
    r = row_adr[j]
    sL = node_h_start[Ln]
    hl = if_left[ii]
    hr = if_right[ii]
    wl = h_side[sL + hl]
    # X: the leaf child with the external handle; O: the other child (if any)
    if ext_left:
        wx, px, kx, so = wl, node_pair_start[Ln], nL, src
        wo, po = 1 - wl, (node_pair_start[Rn] + hr * node_nh[Rn] + hr) if Rn >= 0 else -1
    else:
        wx, px, kx, so = 1 - wl, node_pair_start[Rn], node_nh[Rn], src - nL
        wo, po = wl, node_pair_start[Ln] + hl * nL + hl
    S = scr[m]  # E = G_X delta at [0, 21), then W; G_O Phi_O at [21, 42)
    delta = Phi[px]
    for a in range(3):
        _gphi7(G, wx, r, a, delta, S, 7 * a)
        if po >= 0:
            _gphi7(G, wo, r, a, Phi[po], S, 21 + 7 * a)
    kb = m_K[m]
    for a in range(3):  # K = sgn (G_X delta G_X^T + G_O Phi_O G_O^T - eps 1)
        for b in range(a + 1):
            t = 0.0
            for d in range(7):
                t += S[7 * a + d] * G[wx, r + b, d]
            if po >= 0:
                for d in range(7):
                    t += S[21 + 7 * a + d] * G[wo, r + b, d]
            Ks[kb + 3 * a + b] = sgn * t
            Ks[kb + 3 * b + a] = sgn * t
        Ks[kb + 4 * a] -= sgn * eps
    k00, k10, k11, k20, k21, k22 = Ks[kb], Ks[kb + 3], Ks[kb + 4], Ks[kb + 6], Ks[kb + 7], Ks[kb + 8]
    # Cholesky without pivoting, with _pchol's test
    thresh = tol * max(k00, k11, k22)
    if max(k00, k11, k22) <= 0.0 or k00 <= thresh:
        return False
    l00 = np.sqrt(k00)
    l10 = k10 / l00
    l20 = k20 / l00
    d1 = k11 - l10 * l10
    if d1 <= thresh:
        return False
    l11 = np.sqrt(d1)
    l21 = (k21 - l20 * l10) / l11
    d2 = k22 - l20 * l20 - l21 * l21
    if d2 <= thresh:
        return False
    l22 = np.sqrt(d2)
    Kf[kb], Kf[kb + 1], Kf[kb + 2] = l00, 0.0, 0.0
    Kf[kb + 3], Kf[kb + 4], Kf[kb + 5] = l10, l11, 0.0
    Kf[kb + 6], Kf[kb + 7], Kf[kb + 8] = l20, l21, l22
    rb = m_R[m]
    Kp[rb], Kp[rb + 1], Kp[rb + 2] = 0, 1, 2
    Kr[m] = 3
    i00, i11, i22 = 1.0 / l00, 1.0 / l11, 1.0 / l22
    eb = m_E[m]
    for d in range(7):
        e0, e1, e2 = S[d], S[7 + d], S[14 + d]
        E[eb, d], E[eb + 1, d], E[eb + 2, d] = e0, e1, e2
        w0 = e0 * i00
        w1 = (e1 - l10 * w0) * i11
        w2 = (e2 - l20 * w0 - l21 * w1) * i22
        S[d], S[7 + d], S[14 + d] = w0, w1, w2
        y2 = w2 * i22
        y1 = (w1 - l21 * y2) * i11
        y0 = (w0 - l10 * y1 - l20 * y2) * i00
        Y[eb, d], Y[eb + 1, d], Y[eb + 2, d] = sgn * y0, sgn * y1, sgn * y2
    src_blk = px + so * kx + so
    out = Phi[node_pair_start[n]]
    for c in range(7):
        w0, w1, w2 = S[c], S[7 + c], S[14 + c]
        for d in range(c, 7):
            v = Phi[src_blk, c, d] - sgn * (w0 * S[d] + w1 * S[7 + d] + w2 * S[14 + d])
            out[c, d] = v
            out[d, c] = v
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _merge_matrices(m, ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol):
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows, _s0, _s1, _s2, _p = ix
    nd = Phi.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    pL = node_pair_start[Ln]
    nR = 0
    pR = 0
    if Rn >= 0:
        nR = node_nh[Rn]
        pR = node_pair_start[Rn]
    nr = m_nr[m]
    kb = m_K[m]
    rb = m_R[m]
    i0 = if_start[m]
    i1 = if_start[m + 1]
    # ---- K = sgn (G Phi G^T - eps 1) over both sides: rows of G Phi (in scr[m, :nd]), then G^T
    for a in range(nr * nr):
        Ks[kb + a] = 0.0
    nside = 2 if Rn >= 0 else 1
    for side in range(nside):
        for ii in range(i0, i1):
            j1 = if_joint[ii]
            r1 = row_adr[j1]
            o1 = if_roff[ii]
            # end of j1 held by this side: left holds pred iff h_side == 0
            w1 = h_side[sL + if_left[ii]]
            if side == 1:
                w1 = 1 - w1
            h1 = if_left[ii] if side == 0 else if_right[ii]
            for jj in range(i0, i1):
                j2 = if_joint[jj]
                r2 = row_adr[j2]
                o2 = if_roff[jj]
                w2 = h_side[sL + if_left[jj]]
                if side == 1:
                    w2 = 1 - w2
                h2 = if_left[jj] if side == 0 else if_right[jj]
                blk = pL + h1 * nL + h2 if side == 0 else pR + h1 * nR + h2
                for a in range(rows[j1]):
                    k1 = sel[r1 + a]
                    if k1 >= 0:  # unit row: a signed copy of a row of Phi
                        sg = G[w1, r1 + a, k1]
                        for d in range(nd):
                            scr[m, d] = sg * Phi[blk, k1, d]
                    else:
                        for d in range(nd):
                            t = 0.0
                            for c in range(nd):
                                t += G[w1, r1 + a, c] * Phi[blk, c, d]
                            scr[m, d] = t
                    for b in range(rows[j2]):
                        k2 = sel[r2 + b]
                        if k2 >= 0:
                            t = scr[m, k2] * G[w2, r2 + b, k2]
                        else:
                            t = 0.0
                            for d in range(nd):
                                t += scr[m, d] * G[w2, r2 + b, d]
                        Ks[kb + (o1 + a) * nr + o2 + b] += sgn * t
    if eps != 0.0:
        for a in range(nr):
            Ks[kb + a * nr + a] -= sgn * eps
    rank = _pchol(Ks, Kf, Kp, kb, rb, nr, tol, Kr[Kr.shape[0] // 2 + m])
    Kr[m] = rank
    if rank < nr:
        _null_factor(Kf, kb, nr, rank)
    # ---- E_e (rows of G Phi coupling interface constraints to handle e), Y_e = K^-1 E_e
    n_h = node_nh[n]
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(n_h):
        src = h_src[sN + e]
        onleft = src < nL
        for ii in range(i0, i1):
            j1 = if_joint[ii]
            r1 = row_adr[j1]
            o1 = if_roff[ii]
            w1 = h_side[sL + if_left[ii]]
            if onleft:
                blk = pL + if_left[ii] * nL + src
            else:
                w1 = 1 - w1
                blk = pR + if_right[ii] * nR + (src - nL)
            for a in range(rows[j1]):
                row = eb + e * nr + o1 + a
                k1 = sel[r1 + a]
                if k1 >= 0:
                    sg = G[w1, r1 + a, k1]
                    for d in range(nd):
                        E[row, d] = sg * Phi[blk, k1, d]
                else:
                    for d in range(nd):
                        t = 0.0
                        for c in range(nd):
                            t += G[w1, r1 + a, c] * Phi[blk, c, d]
                        E[row, d] = t
        _psolve_rows(Kf, Kp, kb, rb, nr, rank, E, Y, eb + e * nr, nd, sgn, scr, m, nd)
    # ---- Phi^C[e, f] = [same side] Phi^X[e, f] - E_e^T Y_f  (upper blocks, mirrored)
    pN = node_pair_start[n]
    for e in range(n_h):
        se = h_src[sN + e]
        for f in range(e, n_h):
            sf = h_src[sN + f]
            blk = pN + e * n_h + f
            same = (se < nL) == (sf < nL)
            src_blk = 0
            if same:
                if se < nL:
                    src_blk = pL + se * nL + sf
                else:
                    src_blk = pR + (se - nL) * nR + (sf - nL)
            for c in range(nd):
                d0 = c if f == e else 0  # diagonal blocks are symmetric
                for d in range(d0, nd):
                    t = Phi[src_blk, c, d] if same else 0.0
                    for a in range(nr):
                        t -= E[eb + e * nr + a, c] * Y[eb + f * nr + a, d]
                    Phi[blk, c, d] = t
                    if f == e:
                        Phi[blk, d, c] = t
            if f != e:
                blk2 = pN + f * n_h + e
                for c in range(nd):
                    for d in range(nd):
                        Phi[blk2, d, c] = Phi[blk, c, d]


@njit(cache=True, nogil=True, _nrt=False)
def _one_joint(m, ix):
    """Indices of a merge with one interface joint (the ``*_one`` kernels): right child
    (-1: none), the left child's handle count, both children's first handle slots, the
    joint's first row and row count, the merge's row base, the pred/succ end the left
    child holds, the left and right interface handle slots, the merged node's first
    handle slot, its E/Y row base and handle count."""
    nb, left, right, node_nh, node_h_start, h_side = ix[0], ix[1], ix[2], ix[4], ix[5], ix[8]
    if_start, if_joint, if_left, if_right, m_R, m_E, row_adr, rows = (ix[10], ix[11], ix[12], ix[13], ix[17],
                                                                      ix[18], ix[19], ix[20])
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    sL = node_h_start[Ln]
    sR = node_h_start[Rn] if Rn >= 0 else 0
    ii = if_start[m]
    j = if_joint[ii]
    return (Rn, node_nh[Ln], sL, sR, row_adr[j], rows[j], m_R[m], h_side[sL + if_left[ii]], sL + if_left[ii],
            sR + if_right[ii], node_h_start[n], m_E[m], node_nh[n])


@njit(cache=True, nogil=True, inline='always')
def _merge_bias_one(m, ix, bv, G, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn, nd):
    """:func:`_merge_bias` for one interface joint (axpy form; ``nd`` = bv.shape[1], a
    constant of the calling pass)."""
    Rn, nL, sL, sR, r, nr, rb, wl, bl, br, sN, eb, n_h = _one_joint(m, ix)
    wr = 1 - wl
    h_src, m_K = ix[9], ix[16]
    for a in range(nr):
        t = g0[r + a]
        for c in range(nd):
            t += G[wl, r + a, c] * bv[bl, c]
        if Rn >= 0:
            for c in range(nd):
                t += G[wr, r + a, c] * bv[br, c]
        r0[rb + a] = t
    # scratch after the first nd entries; bv.shape[1] (= nd, not the literal): the one
    # specialisation of _psolve_vec that _merge_bias uses too
    _psolve_vec(Kf, Kp, m_K[m], rb, nr, Kr[m], r0, y0, rb, sgn, scr, m, bv.shape[1])
    for e in range(n_h):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            bv[sN + e, d] = bv[slot, d]
        for a in range(nr):
            ra = r0[rb + a]
            for d in range(nd):
                bv[sN + e, d] -= Y[eb + e * nr + a, d] * ra


@njit(cache=True, nogil=True, inline='always')
def _merge_down_one(m, ix, Fh, G, lam, Y, y0, nd):
    """:func:`_merge_down` for one interface joint (axpy form; ``nd`` = Fh.shape[1], a
    constant of the calling pass)."""
    Rn, nL, sL, sR, r, nr, rb, wl, sl, sr, sN, eb, n_h = _one_joint(m, ix)
    wr = 1 - wl
    h_src = ix[9]
    for a in range(nr):
        t = y0[rb + a]
        for e in range(n_h):
            for d in range(nd):
                t += Y[eb + e * nr + a, d] * Fh[sN + e, d]
        lam[r + a] = -t
    for e in range(n_h):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            Fh[slot, d] = Fh[sN + e, d]
    for d in range(nd):
        Fh[sl, d] = 0.0
    if Rn >= 0:
        for d in range(nd):
            Fh[sr, d] = 0.0
    for a in range(nr):
        la = lam[r + a]
        for d in range(nd):
            Fh[sl, d] += G[wl, r + a, d] * la
        if Rn >= 0:
            for d in range(nd):
                Fh[sr, d] += G[wr, r + a, d] * la


@njit(cache=True, nogil=True, _nrt=False)
def _merge_bias(m, ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn):
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows, _s0, _s1, _s2, _p = ix
    nd = bv.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    sR = node_h_start[Rn] if Rn >= 0 else 0
    nr = m_nr[m]
    rb = m_R[m]
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        r = row_adr[j]
        o = if_roff[ii]
        wl = h_side[sL + if_left[ii]]
        wr = 1 - wl
        bl = sL + if_left[ii]
        br = sR + if_right[ii]
        for a in range(rows[j]):
            t = g0[r + a]
            k = sel[r + a]
            if k >= 0:
                t += G[wl, r + a, k] * bv[bl, k]
                if Rn >= 0:
                    t += G[wr, r + a, k] * bv[br, k]
            else:
                for c in range(nd):
                    t += G[wl, r + a, c] * bv[bl, c]
                if Rn >= 0:
                    for c in range(nd):
                        t += G[wr, r + a, c] * bv[br, c]
            r0[rb + o + a] = t
    _psolve_vec(Kf, Kp, m_K[m], rb, nr, Kr[m], r0, y0, rb, sgn, scr, m, nd)
    sN = node_h_start[n]
    eb = m_E[m]
    for e in range(node_nh[n]):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            t = bv[slot, d]
            for a in range(nr):
                t -= Y[eb + e * nr + a, d] * r0[rb + a]
            bv[sN + e, d] = t


@njit(cache=True, nogil=True, _nrt=False)
def _merge_down(m, ix, Fh, G, sel, lam, Y, y0):
    nb, left, right, level_start, node_nh, node_h_start, node_pair_start, h_joint, h_side, h_src, \
        if_start, if_joint, if_left, if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows, _s0, _s1, _s2, _p = ix
    nd = Fh.shape[1]
    n = nb + m
    Ln = left[m]
    Rn = right[m]
    nL = node_nh[Ln]
    sL = node_h_start[Ln]
    sR = node_h_start[Rn] if Rn >= 0 else 0
    nr = m_nr[m]
    rb = m_R[m]
    sN = node_h_start[n]
    eb = m_E[m]
    n_h = node_nh[n]
    # Lambda = -(sum_e Y_e F_e + y0)
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        o = if_roff[ii]
        for a in range(rows[j]):
            t = y0[rb + o + a]
            for e in range(n_h):
                for d in range(nd):
                    t += Y[eb + e * nr + o + a, d] * Fh[sN + e, d]
            lam[row_adr[j] + a] = -t
    # external handles pass their forces down
    for e in range(n_h):
        src = h_src[sN + e]
        slot = sL + src if src < nL else sR + (src - nL)
        for d in range(nd):
            Fh[slot, d] = Fh[sN + e, d]
    # interface handles receive G^T Lambda
    for ii in range(if_start[m], if_start[m + 1]):
        j = if_joint[ii]
        r = row_adr[j]
        wl = h_side[sL + if_left[ii]]
        wr = 1 - wl
        sl = sL + if_left[ii]
        sr = sR + if_right[ii]
        for d in range(nd):
            Fh[sl, d] = 0.0
            if Rn >= 0:
                Fh[sr, d] = 0.0
        for a in range(rows[j]):
            la = lam[r + a]
            k = sel[r + a]
            if k >= 0:
                Fh[sl, k] += G[wl, r + a, k] * la
                if Rn >= 0:
                    Fh[sr, k] += G[wr, r + a, k] * la
            else:
                for d in range(nd):
                    Fh[sl, d] += G[wl, r + a, d] * la
                if Rn >= 0:
                    for d in range(nd):
                        Fh[sr, d] += G[wr, r + a, d] * la


# ------------------------------------------------------ articulated-body regions
# A region (topology.articulated_regions) is a subtree of the spanning tree whose only
# handle is the joint to its root.  Its bodies obey, about their joint points,
# ``I x = F + W`` (x the handle quantity, F the handle force; a leaf's I = X^T M X and
# W = X^T w for its wrench w at the centre of mass).  The recursion eliminates each
# joint c to parent p with its nv freedoms (x_c = x_p + c + S s, S^T F_c = 0):
#     U = I_c S,  D = S^T U,  I_p += Y^T (I_c - U D^-1 U^T) Y,
#     W_p += Y^T (z - U D^-1 S^T z),  z = W_c - I_c c,
# with Y the shift from P_p to P_c, and hands the merges above the root's relation
# ``x = I^-1 F + I^-1 W``; on the way down  s = D^-1 (S^T z - U^T Y x_p),
# x_c = Y x_p + c + S s,  F_c = I_c x_c - W_c  (docs/derivations.md, "The
# articulated-body regions").  ``c = -G_succ^T g0`` is the joint's constant term: its
# part along S does not matter, and the constraint rows carry the rest.


@njit(cache=True, nogil=True, inline='always')
def _ax(S, c, q, va, nvj, k):
    """Entry k of freedom q of joint c in the region basis: a spherical joint's unit
    angular axes (its S spans the same space, with three nonzero entries per column),
    else the joint's motion subspace column."""
    if nvj[c] == 3:
        return 1.0 if k == 3 + q else 0.0
    return S[va[c] + q, k]


@njit(cache=True, nogil=True, inline='always')
def _inv_small(D, n):
    """In-place inverse of the symmetric positive definite n x n (n <= 3) D[:n, :n]."""
    if n == 1:
        D[0, 0] = 1.0 / D[0, 0]
    elif n == 2:
        a, b, d = D[0, 0], D[0, 1], D[1, 1]
        det = a * d - b * b
        D[0, 0] = d / det
        D[1, 1] = a / det
        D[0, 1] = -b / det
        D[1, 0] = -b / det
    elif n == 3:
        a, b, c = D[0, 0], D[0, 1], D[0, 2]
        e, f, i = D[1, 1], D[1, 2], D[2, 2]
        A = e * i - f * f
        B = c * f - b * i
        C = b * f - c * e
        E = a * i - c * c
        F = b * c - a * f
        II = a * e - b * b
        det = a * A + b * B + c * C
        D[0, 0] = A / det
        D[0, 1] = B / det
        D[0, 2] = C / det
        D[1, 0] = B / det
        D[1, 1] = E / det
        D[1, 2] = F / det
        D[2, 0] = C / det
        D[2, 1] = F / det
        D[2, 2] = II / det


@njit(cache=True, nogil=True, inline='always')
def _chol_solve6(L, b, x):
    """x = (L L^T)^-1 b for the 6 x 6 lower factor L (x may alias b)."""
    for i in range(6):
        t = b[i]
        for k in range(i):
            t -= L[i, k] * x[k]
        x[i] = t / L[i, i]
    for i in range(5, -1, -1):
        t = x[i]
        for k in range(i + 1, 6):
            t -= L[k, i] * x[k]
        x[i] = t / L[i, i]


@njit(cache=True, nogil=True, inline='always')
def _region_step(k, hy):
    """Entry k of the regions' body list: the body c, its parent p, its joint's freedom
    count and first freedom, and d = P_c - P_p (the shift from the parent's joint point)."""
    P, reg_body, parent, va, nvj = hy[1], hy[12], hy[14], hy[17], hy[18]
    c = reg_body[k]
    p = parent[c]
    return c, p, nvj[c], va[c], P[c, 0] - P[p, 0], P[c, 1] - P[p, 1], P[c, 2] - P[p, 2]


@njit(cache=True, nogil=True, inline='always')
def _grounded(rg, ix, hy):
    """Region ``rg`` takes in its root's joint to ground: its head merge has no handle."""
    return ix[4][ix[0] + hy[13][rg]] == 0


@njit(cache=True, nogil=True, inline='always')
def _into_parent(T, Ip):
    """``I_p += T`` for a child's articulated inertia ``T`` already shifted to the
    parent's joint point, from its upper triangle of blocks (the lower left block is the
    upper right's transpose)."""
    for a in range(3):
        for b in range(3):
            Ip[a, b] += T[a, b]
            Ip[a, 3 + b] += T[a, 3 + b]
            Ip[3 + a, b] += T[b, 3 + a]
            Ip[3 + a, 3 + b] += T[3 + a, 3 + b]


@njit(cache=True, nogil=True, inline='always')
def _matrix_step_ball(p, v0, d0, d1, d2, Ic, D, U, IA, T):
    """:func:`_matrix_step` for a spherical joint, whose freedoms in the region basis are
    the unit angular axes: ``U`` = the angular columns of ``I``, ``D`` = its angular
    block, and of ``I - U D^-1 U^T`` only the linear block ``A`` remains (the joint passes
    no moment), which goes to the parent as ``[[A, -A ~d], [~d A, -~d A ~d]]``: exactly,
    where the subtraction would leave round-off of the size eps |I| cond(D) that a
    slender parent's small axial inertia would see magnified.  The same sums in the same
    order as the general step's for these entries, without the products by S's zeros
    and ones."""
    for q in range(3):  # U = I S: I's angular columns
        for a in range(6):
            U[v0 + q, a] = Ic[a, 3 + q]
    for q in range(3):  # D = S^T U: I's angular block
        for r in range(3):
            D[q, r] = Ic[3 + q, 3 + r] if q <= r else Ic[3 + r, 3 + q]
    _inv_small(D, 3)
    if p < 0:  # a grounded region's root: its parent, ground, takes nothing
        return p
    for a in range(3):  # T = I - U D^-1 U^T, linear block
        w0 = 0.0
        w1 = 0.0
        w2 = 0.0
        for q in range(3):
            u = U[v0 + q, a]
            w0 += u * D[q, 0]
            w1 += u * D[q, 1]
            w2 += u * D[q, 2]
        for b in range(a, 3):
            t = Ic[a, b]
            t -= w0 * U[v0, b]
            t -= w1 * U[v0 + 1, b]
            t -= w2 * U[v0 + 2, b]
            T[a, b] = t
            T[b, a] = t
    for r in range(3):  # B12 = -A ~d, row r: -(row r of A) x d
        m0, m1, m2 = T[r, 0], T[r, 1], T[r, 2]
        T[r, 3] = 0.0 - (m1 * d2 - m2 * d1)
        T[r, 4] = 0.0 - (m2 * d0 - m0 * d2)
        T[r, 5] = 0.0 - (m0 * d1 - m1 * d0)
    for col in range(3):  # A22 = ~d B12, column by column
        b0, b1, b2 = T[0, 3 + col], T[1, 3 + col], T[2, 3 + col]
        T[3, 3 + col] = 0.0 + (d1 * b2 - d2 * b1)
        T[4, 3 + col] = 0.0 + (d2 * b0 - d0 * b2)
        T[5, 3 + col] = 0.0 + (d0 * b1 - d1 * b0)
    _into_parent(T, IA[p])
    return p


@njit(cache=True, nogil=True, inline='always')
def _matrix_step_one(p, v0, d0, d1, d2, s, Ic, D, U, IA, T):
    """:func:`_matrix_step` for a joint of one freedom (revolute, prismatic) with motion
    subspace column ``s``: ``U = I s``, ``D = s^T U`` and ``I - U D^-1 U^T`` with ``s``'s
    six entries in registers, where the general step reads each through :func:`_ax` and a
    branch.  The products by ``s``'s zero entries add exact zeros, so the sums equal the
    general step's term by term -- the same result bit for bit."""
    s0, s1, s2, s3, s4, s5 = s[0], s[1], s[2], s[3], s[4], s[5]
    for a in range(6):  # U = I s
        U[v0, a] = (((((0.0 + Ic[a, 0] * s0) + Ic[a, 1] * s1) + Ic[a, 2] * s2) + Ic[a, 3] * s3) + Ic[a, 4] * s4) \
            + Ic[a, 5] * s5
    D[0, 0] = 1.0 / (((((((0.0 + s0 * U[v0, 0]) + s1 * U[v0, 1]) + s2 * U[v0, 2]) + s3 * U[v0, 3])
                       + s4 * U[v0, 4]) + s5 * U[v0, 5]))
    if p < 0:  # a grounded region's root: its parent, ground, takes nothing
        return p
    dinv = D[0, 0]
    for a in range(6):  # T = I - U D^-1 U^T
        w0 = U[v0, a] * dinv
        for b in range(a, 6):
            t = Ic[a, b] - w0 * U[v0, b]
            T[a, b] = t
            T[b, a] = t
    _shift_into_parent(T, d0, d1, d2, IA[p])
    return p


@njit(cache=True, nogil=True, inline='always')
def _shift_into_parent(T, d0, d1, d2, Ip):
    """``I_p += Y^T T Y`` for the shift ``d = P_c - P_p``:
    ``[[A11, B12], [B12^T, A22 - A21 ~d + ~d B12]]``, ``B12 = A12 - A11 ~d`` (``T`` is
    overwritten)."""
    for r in range(3):
        # A21 ~d, row r: (row r of A21) x d, before B12 overwrites A12 (A21 = T[3:, :3] stays)
        g0_ = T[3 + r, 1] * d2 - T[3 + r, 2] * d1
        g1_ = T[3 + r, 2] * d0 - T[3 + r, 0] * d2
        g2_ = T[3 + r, 0] * d1 - T[3 + r, 1] * d0
        T[3 + r, 3] -= g0_
        T[3 + r, 4] -= g1_
        T[3 + r, 5] -= g2_
    for r in range(3):
        m0, m1, m2 = T[r, 0], T[r, 1], T[r, 2]
        T[r, 3] -= m1 * d2 - m2 * d1
        T[r, 4] -= m2 * d0 - m0 * d2
        T[r, 5] -= m0 * d1 - m1 * d0
    for col in range(3):  # + ~d B12, column by column
        b0, b1, b2 = T[0, 3 + col], T[1, 3 + col], T[2, 3 + col]
        T[3, 3 + col] += d1 * b2 - d2 * b1
        T[4, 3 + col] += d2 * b0 - d0 * b2
        T[5, 3 + col] += d0 * b1 - d1 * b0
    _into_parent(T, Ip)


@njit(cache=True, nogil=True, inline='always')
def _matrix_step(k, T, hy):
    """Step k of a region's matrix pass (:func:`region_matrices`): body c's ``U``,
    ``D^-1`` and its articulated inertia taken into its parent's (``T``: 6 x 6 scratch).
    Returns the parent (-1: a grounded region's root, the pass's last step)."""
    S, IA, U, Dinv, va, nvj = hy[0], hy[2], hy[4], hy[5], hy[17], hy[18]
    c, p, n, v0, d0, d1, d2 = _region_step(k, hy)
    Ic = IA[c]
    D = Dinv[c]
    if n == 3:
        return _matrix_step_ball(p, v0, d0, d1, d2, Ic, D, U, IA, T)
    if n == 1:
        return _matrix_step_one(p, v0, d0, d1, d2, S[va[c]], Ic, D, U, IA, T)
    for q in range(n):  # U = I S
        for a in range(6):
            t = 0.0
            for b in range(6):
                sb = _ax(S, c, q, va, nvj, b)
                if sb != 0.0:
                    t += Ic[a, b] * sb
            U[v0 + q, a] = t
    for q in range(n):  # D = S^T U
        for r in range(q, n):
            t = 0.0
            for b in range(6):
                sb = _ax(S, c, q, va, nvj, b)
                if sb != 0.0:
                    t += sb * U[v0 + r, b]
            D[q, r] = t
            D[r, q] = t
    _inv_small(D, n)
    if p < 0:  # a grounded region's root: its parent, ground, takes nothing
        return p
    for a in range(6):  # T = I - U D^-1 U^T
        w0 = 0.0
        w1 = 0.0
        w2 = 0.0
        for q in range(n):
            u = U[v0 + q, a]
            w0 += u * D[q, 0]
            w1 += u * D[q, 1]
            w2 += u * D[q, 2]
        for b in range(a, 6):
            t = Ic[a, b]
            if n > 0:
                t -= w0 * U[v0, b]
            if n > 1:
                t -= w1 * U[v0 + 1, b]
            if n > 2:
                t -= w2 * U[v0 + 2, b]
            T[a, b] = t
            T[b, a] = t
    _shift_into_parent(T, d0, d1, d2, IA[p])  # I_p += Y^T T Y, d = P_c - P_p
    return p


@njit(cache=True, nogil=True, _nrt=False)
def region_matrices(rg, ix, Phi, hy):
    """Matrix pass of region ``rg``: articulated inertias tips first, then the head
    node's ``Phi`` = the inverse of the root's (factor kept in ``LA[rg]``); a grounded
    region (its head has no handle) ends with its root joint's ``D^-1`` instead."""
    nb, node_pair_start = ix[0], ix[6]
    IA, LA = hy[2], hy[9]
    reg_start, reg_body, reg_head = hy[11], hy[12], hy[13]
    T = LA[rg]  # scratch until the root's factor goes there
    k0 = reg_start[rg]
    k1 = reg_start[rg + 1]
    grounded = _grounded(rg, ix, hy)
    for k in range(k0, k1 if grounded else k1 - 1):
        if _matrix_step(k, T, hy) < 0:
            break
    if grounded:
        return
    root = reg_body[k1 - 1]
    L = LA[rg]
    A = IA[root]
    for i in range(6):  # Cholesky of the root's articulated inertia
        for j in range(i + 1):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            if i == j:
                L[i, i] = np.sqrt(t)
            else:
                L[i, j] = t / L[j, j]
        for j in range(i + 1, 6):
            L[i, j] = 0.0
    blk = node_pair_start[nb + reg_head[rg]]
    for col in range(6):  # Phi = I^-1, column by column
        for i in range(6):
            Phi[blk, i, col] = 1.0 if i == col else 0.0
        _chol_solve6(L, Phi[blk, :, col], Phi[blk, :, col])


@njit(cache=True, nogil=True, inline='always')
def _bias_step(k, row_adr, rows, G, g0, hy):
    """Step k of a region's bias pass (:func:`region_biases`): body c's ``S^T z`` and its
    bias wrench taken into its parent's.  Returns the parent (-1: a grounded region's
    root, the pass's last step)."""
    S, IA, W, U, Dinv, sz, cperp, xa = hy[0], hy[2], hy[3], hy[4], hy[5], hy[6], hy[7], hy[8]
    va, nvj, unit_first = hy[17], hy[18], hy[20]
    c, p, n, v0, d0, d1, d2 = _region_step(k, hy)
    cp = cperp[c]
    z = xa[c]  # scratch here: z = W_c - I_c c
    Ic = IA[c]
    r0_, r1_ = row_adr[c], row_adr[c] + rows[c]
    if unit_first[c]:  # rows e_0, e_1, e_2, then angular ones: the sums below without their zeros
        cp[0] = 0.0 - g0[r0_]
        cp[1] = 0.0 - g0[r0_ + 1]
        cp[2] = 0.0 - g0[r0_ + 2]
        cp[3] = 0.0
        cp[4] = 0.0
        cp[5] = 0.0
        for rr in range(r0_ + 3, r1_):
            gg = g0[rr]
            if gg != 0.0:
                cp[3] -= G[1, rr, 3] * gg
                cp[4] -= G[1, rr, 4] * gg
                cp[5] -= G[1, rr, 5] * gg
    else:
        for a in range(6):
            cp[a] = 0.0
        for rr in range(r0_, r1_):
            gg = g0[rr]
            if gg != 0.0:
                for a in range(6):
                    cp[a] -= G[1, rr, a] * gg
    ball = n == 3  # S: the unit angular axes (_ax), products by its zeros and ones skipped
    if ball and unit_first[c]:  # its three rows the unit ones: c's angular half is zero
        for a in range(6):
            z[a] = ((W[c, a] - Ic[a, 0] * cp[0]) - Ic[a, 1] * cp[1]) - Ic[a, 2] * cp[2]
    else:
        for a in range(6):
            t = W[c, a]
            for b in range(6):
                t -= Ic[a, b] * cp[b]
            z[a] = t
    for q in range(n):
        if ball:
            sz[v0 + q] = 0.0 + z[3 + q]
            continue
        t = 0.0
        for b in range(6):
            sb = _ax(S, c, q, va, nvj, b)
            if sb != 0.0:
                t += sb * z[b]
        sz[v0 + q] = t
    if p < 0:  # a grounded region's root
        return p
    D = Dinv[c]
    for q in range(n):  # z -= U D^-1 S^T z
        t = 0.0
        for r in range(n):
            t += D[q, r] * sz[v0 + r]
        for a in range(3 if ball else 6):  # a spherical joint's angular part is set to zero below
            z[a] -= U[v0 + q, a] * t
    if ball:  # no moment through a spherical joint (as in region_matrices)
        z[3] = 0.0
        z[4] = 0.0
        z[5] = 0.0
    W[p, 0] += z[0]
    W[p, 1] += z[1]
    W[p, 2] += z[2]
    W[p, 3] += z[3] + d1 * z[2] - d2 * z[1]
    W[p, 4] += z[4] + d2 * z[0] - d0 * z[2]
    W[p, 5] += z[5] + d0 * z[1] - d1 * z[0]
    return p


@njit(cache=True, nogil=True, _nrt=False)
def region_biases(rg, ix, bv, G, g0, hy):
    """Bias pass of region ``rg``: bias wrenches tips first (the leaves set each body's
    own), then the head node's ``b = I^-1 W`` of the root (a grounded region: its root
    joint's ``S^T z`` instead)."""
    nb, node_h_start, row_adr, rows = ix[0], ix[5], ix[19], ix[20]
    W, LA = hy[3], hy[9]
    reg_start, reg_body, reg_head = hy[11], hy[12], hy[13]
    k0 = reg_start[rg]
    k1 = reg_start[rg + 1]
    grounded = _grounded(rg, ix, hy)
    for k in range(k0, k1 if grounded else k1 - 1):
        if _bias_step(k, row_adr, rows, G, g0, hy) < 0:
            break
    if not grounded:
        _chol_solve6(LA[rg], W[reg_body[k1 - 1]], bv[node_h_start[nb + reg_head[rg]]])


@njit(cache=True, nogil=True, inline='always')
def _down_step(k, row_adr, rows, Fh, G, lam, hy, forces):
    """Step k of a region's disassembly (:func:`region_down`), its parent's done: body
    c's handle quantity ``x_c``; and if ``forces``, its joint's force and multipliers."""
    S, IA, W, U, Dinv, sz, cperp, xa = hy[0], hy[2], hy[3], hy[4], hy[5], hy[6], hy[7], hy[8]
    slot_in, slot_out, va, nvj, unit_first = hy[15], hy[16], hy[17], hy[18], hy[20]
    c, p, n, v0, d0, d1, d2 = _region_step(k, hy)
    xc = xa[c]
    if p >= 0:  # x_p shifted to P_c: [a + alpha x d; alpha]
        xp = xa[p]
        xc[0] = xp[0] + xp[4] * d2 - xp[5] * d1
        xc[1] = xp[1] + xp[5] * d0 - xp[3] * d2
        xc[2] = xp[2] + xp[3] * d1 - xp[4] * d0
        xc[3] = xp[3]
        xc[4] = xp[4]
        xc[5] = xp[5]
    else:  # a grounded region's root: ground at rest
        for a in range(6):
            xc[a] = 0.0
    e0 = 0.0
    e1 = 0.0
    e2 = 0.0
    for q in range(n):  # e = S^T z - U^T x
        t = sz[v0 + q]
        for a in range(6):
            t -= U[v0 + q, a] * xc[a]
        if q == 0:
            e0 = t
        elif q == 1:
            e1 = t
        else:
            e2 = t
    D = Dinv[c]
    for a in range(6):
        xc[a] += cperp[c, a]
    for q in range(n):  # x_c += S D^-1 e
        sq = D[q, 0] * e0
        if n > 1:
            sq += D[q, 1] * e1
        if n > 2:
            sq += D[q, 2] * e2
        for b in range(6):
            sb = _ax(S, c, q, va, nvj, b)
            if sb != 0.0:
                xc[b] += sb * sq
    if not forces:
        return
    Ic = IA[c]
    si = slot_in[c]
    so = slot_out[c]
    for a in range(6):  # F_c, in the body's own handle slot for now
        t = -W[c, a]
        for b in range(6):
            t += Ic[a, b] * xc[b]
        Fh[si, a] = t
    # the multipliers, and F_c = G_succ^T lambda: the joint's force exactly in its
    # constraint space (no moment through a spherical joint, none about a hinge's axis),
    # where I_c x_c - W_c has round-off along S that a slender body's small inertia
    # about its axis would turn into a large error in its acceleration
    r0_, r1_ = row_adr[c], row_adr[c] + rows[c]
    if unit_first[c]:  # rows e_0, e_1, e_2, then angular ones: the sums below without their zeros
        f3, f4, f5 = Fh[si, 3], Fh[si, 4], Fh[si, 5]
        for a in range(3):
            lam[r0_ + a] = 0.0 + Fh[si, a]
            Fh[si, a] = 0.0 + lam[r0_ + a]
        m3 = 0.0
        m4 = 0.0
        m5 = 0.0
        for rr in range(r0_ + 3, r1_):
            t = ((0.0 + G[1, rr, 3] * f3) + G[1, rr, 4] * f4) + G[1, rr, 5] * f5
            lam[rr] = t
            m3 += G[1, rr, 3] * t
            m4 += G[1, rr, 4] * t
            m5 += G[1, rr, 5] * t
        Fh[si, 3] = m3
        Fh[si, 4] = m4
        Fh[si, 5] = m5
    else:
        for rr in range(r0_, r1_):
            t = 0.0
            for a in range(6):
                t += G[1, rr, a] * Fh[si, a]
            lam[rr] = t
        for a in range(6):
            Fh[si, a] = 0.0
        for rr in range(r0_, r1_):
            t = lam[rr]
            for a in range(6):
                Fh[si, a] += G[1, rr, a] * t
    if so >= 0:  # on the parent's handle (none on ground)
        for a in range(6):
            Fh[so, a] = -Fh[si, a]


@njit(cache=True, nogil=True, _nrt=False)
def region_down(rg, ix, Fh, G, lam, hy, forces):
    """Disassembly of region ``rg`` from its handle force: root first, each body's handle
    quantity, and if ``forces`` its joint's force ``F_c`` (on both handles) and multipliers
    ``G_succ F_c``.  The region's bodies' accelerations come from the handle quantities
    alone (``dca._region_acceleration``): only a joint force that leaves the region -- a
    root's on a parent outside it -- and the multipliers need ``forces``.  A grounded
    region starts from ground at rest with its root's joint."""
    nb, node_h_start, row_adr, rows = ix[0], ix[5], ix[19], ix[20]
    W, xa, LA = hy[3], hy[8], hy[9]
    reg_start, reg_body, reg_head, slot_in = hy[11], hy[12], hy[13], hy[15]
    k0 = reg_start[rg]
    k1 = reg_start[rg + 1]
    grounded = _grounded(rg, ix, hy)
    if not grounded:
        root = reg_body[k1 - 1]
        sN = node_h_start[nb + reg_head[rg]]
        xr = xa[root]
        for a in range(6):
            Fh[slot_in[root], a] = Fh[sN, a]
            xr[a] = Fh[sN, a] + W[root, a]
        _chol_solve6(LA[rg], xr, xr)
    for k in range(k1 - 1 if grounded else k1 - 2, k0 - 1, -1):
        _down_step(k, row_adr, rows, Fh, G, lam, hy, forces)


# ----------------------------------------------------------------- level passes


@njit(cache=True, nogil=True, inline='always')
def _one_joint_merge(m, ix, nd):
    """The merge has one interface joint with at most nd rows: the axpy kernels apply."""
    return ix[10][m + 1] - ix[10][m] == 1 and ix[15][m] <= nd


@njit(cache=True, nogil=True, inline='always')
def _region_at(m, hy):
    """The region merge m heads, -2 inside one, -1 none."""
    return hy[10][m]


@njit(cache=True, nogil=True, inline='always')
def _no_region_at(m, hy):
    """Passes without regions: no merge is in one."""
    return -1


# Kernels made by a factory close over constants only (ints and booleans), never over
# another kernel: numba keys a closure's cache entry by pickling the cells, and a kernel
# pickles with a uuid drawn in each process and the signatures compiled so far, so a
# closure over a kernel misses the cache in every process and compiles again -- 24 s
# for hdca's first evaluation, 36 s for index-3's, measured before this was so
# (docs/performance.md, "Kernels that missed a full cache").  Kernels are called as
# module globals, chosen by branches on the constants, which numba prunes before typing.


def _loops(nd: int, regions: bool, leaf_blocks: bool = False):
    """The three passes' loops over a range of merges, for blocks of size ``nd``: with
    ``regions``, an articulated-body region is assembled by its recursion where its head
    merge is (merges inside it are skipped); with ``leaf_blocks`` (nd = 7, index-3) the
    matrix pass takes :func:`_merge_matrices_leaf3` where it applies."""

    @njit(cache=True, nogil=True, _nrt=False)
    def matrices_over(merges, k0, k1, ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol, hy):
        """The matrix pass over ``merges[k0:k1]``, in order (a region by its head)."""
        for k in range(k0, k1):
            m = merges[k]
            rg = _region_at(m, hy) if regions else _no_region_at(m, hy)
            if rg >= 0:
                if regions:
                    region_matrices(rg, ix, Phi, hy)
            elif rg == -2:
                continue
            elif _one_joint_merge(m, ix, nd):
                done = False
                if leaf_blocks:  # a closure constant: the other passes do not compile it
                    done = _merge_matrices_leaf3(m, ix, Phi, G, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol)
                if not done:
                    _merge_matrices_one(m, ix, Phi, G, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol, nd)
            else:
                _merge_matrices(m, ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol)

    @njit(cache=True, nogil=True, _nrt=False)
    def biases_over(merges, k0, k1, ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn, hy):
        """The bias pass over ``merges[k0:k1]``, in order."""
        for k in range(k0, k1):
            m = merges[k]
            rg = _region_at(m, hy) if regions else _no_region_at(m, hy)
            if rg >= 0:
                if regions:
                    region_biases(rg, ix, bv, G, g0, hy)
            elif rg == -2:
                continue
            elif _one_joint_merge(m, ix, nd):
                _merge_bias_one(m, ix, bv, G, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn, nd)
            else:
                _merge_bias(m, ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn)

    @njit(cache=True, nogil=True, _nrt=False)
    def down_over(merges, k0, k1, ix, Fh, G, sel, lam, Y, y0, hy):
        """The disassembly over ``merges[k0:k1]``, in reverse order."""
        for k in range(k1 - 1, k0 - 1, -1):
            m = merges[k]
            rg = _region_at(m, hy) if regions else _no_region_at(m, hy)
            if rg >= 0:
                if regions:
                    region_down(rg, ix, Fh, G, lam, hy, True)
            elif rg == -2:
                continue
            elif _one_joint_merge(m, ix, nd):
                _merge_down_one(m, ix, Fh, G, lam, Y, y0, nd)
            else:
                _merge_down(m, ix, Fh, G, sel, lam, Y, y0)

    return matrices_over, biases_over, down_over


#: the loops for 6-vectors with regions (dca, hdca) and for Euler-parameter coordinates (index-3)
_matrices_over6, _biases_over6, _down_over6 = _loops(6, True)
_matrices_over7, _biases_over7, _down_over7 = _loops(7, False, True)


def _passes(nd: int):
    """The three tree passes for blocks of size ``nd`` (6: dca, hdca; 7: index-3), a
    compile-time constant of each (a closure variable): LLVM sees the one-joint kernels'
    nd loops with constant trip counts and unrolls and vectorises them (index-3's matrix
    pass at 128 links 156 -> 94 us, dca's 1024-body evaluation 1632 -> 1211 us).  One set
    per size, so a formulation compiles only its own; merges over several joints take the
    general kernels.  The loops are :func:`_loops`'s (dca's and hdca's take the regions'
    workspace ``hy``, :meth:`TreeLayout.hybrid`)."""
    six = nd == 6

    # Each pass calls its loop once per subtree and once for the top (from
    # ``sub_start[0]`` = 0, an int64 like the subtrees' bounds: one specialisation): the
    # merge kernels are then compiled once per pass, not once in the parallel region's
    # body and again in the serial loop (compile time, docs/performance.md).

    @njit(cache=True, nogil=True, _nrt=False, parallel=True)
    def assemble_matrices(ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E, scr, eps, sgn, tol, hy=None):
        """Matrix pass, leaves to root (Phi of the leaves already filled): the independent
        subtrees in one parallel region, then the few merges above them.  ``sgn`` = +1 when
        ``G Phi G^T - eps`` is positive semi-definite (DCA, HDCA), -1 when it is negative
        definite (index-3's ``delta`` blocks)."""
        sub_start, sub_merges, top_merges = ix[21], ix[22], ix[23]
        if sub_start.shape[0] > 1:  # no parallel region at all for small trees
            for s in prange(sub_start.shape[0] - 1):
                if six:
                    _matrices_over6(sub_merges, sub_start[s], sub_start[s + 1], ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y,
                                    E, scr, eps, sgn, tol, hy)
                else:
                    _matrices_over7(sub_merges, sub_start[s], sub_start[s + 1], ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y,
                                    E, scr, eps, sgn, tol, hy)
        if six:
            _matrices_over6(top_merges, sub_start[0], top_merges.shape[0], ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E,
                            scr, eps, sgn, tol, hy)
        else:
            _matrices_over7(top_merges, sub_start[0], top_merges.shape[0], ix, Phi, G, sel, Kf, Kp, Kr, Ks, Y, E,
                            scr, eps, sgn, tol, hy)

    @njit(cache=True, nogil=True, _nrt=False, parallel=True)
    def assemble_biases(ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0, scr, sgn, hy=None):
        """Bias pass, leaves to root (the leaves' bv already filled)."""
        sub_start, sub_merges, top_merges = ix[21], ix[22], ix[23]
        if sub_start.shape[0] > 1:
            for s in prange(sub_start.shape[0] - 1):
                if six:
                    _biases_over6(sub_merges, sub_start[s], sub_start[s + 1], ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0,
                                  y0, scr, sgn, hy)
                else:
                    _biases_over7(sub_merges, sub_start[s], sub_start[s + 1], ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0,
                                  y0, scr, sgn, hy)
        if six:
            _biases_over6(top_merges, sub_start[0], top_merges.shape[0], ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0,
                          scr, sgn, hy)
        else:
            _biases_over7(top_merges, sub_start[0], top_merges.shape[0], ix, bv, G, sel, g0, Kf, Kp, Kr, Y, r0, y0,
                          scr, sgn, hy)

    @njit(cache=True, nogil=True, _nrt=False, parallel=True)
    def disassemble(ix, Fh, G, sel, lam, Y, y0, hy=None):
        """Root to leaves: every joint's multipliers and every handle's force."""
        sub_start, sub_merges, top_merges = ix[21], ix[22], ix[23]
        if six:
            _down_over6(top_merges, sub_start[0], top_merges.shape[0], ix, Fh, G, sel, lam, Y, y0, hy)
        else:
            _down_over7(top_merges, sub_start[0], top_merges.shape[0], ix, Fh, G, sel, lam, Y, y0, hy)
        if sub_start.shape[0] > 1:
            for s in prange(sub_start.shape[0] - 1):
                if six:
                    _down_over6(sub_merges, sub_start[s], sub_start[s + 1], ix, Fh, G, sel, lam, Y, y0, hy)
                else:
                    _down_over7(sub_merges, sub_start[s], sub_start[s + 1], ix, Fh, G, sel, lam, Y, y0, hy)

    return assemble_matrices, assemble_biases, disassemble


#: the passes for 6-vectors (dca, hdca) and for Euler-parameter coordinates (index-3)
assemble_matrices6, assemble_biases6, disassemble6 = _passes(6)
assemble_matrices7, assemble_biases7, disassemble7 = _passes(7)


# ------------------------------------------------------- singular configurations


def closing_merges(lay: TreeLayout, nb: int) -> np.ndarray:
    """The merges that close loops: those joining their two parts by more than one joint,
    or by one joint where both parts are already attached to ground.  (A merge that only
    eliminates a cut joint attaches a body by it -- a pendulum's conditioning, constant
    -- while the loop closes where the two paths meet.)"""
    tr = lay.tree
    grounded = np.zeros(nb + tr.n_merges, dtype=bool)
    out = []
    for m in range(tr.n_merges):
        a, b = int(tr.left[m]), int(tr.right[m])
        ga = grounded[a]
        gb = b < 0 or grounded[b]
        grounded[nb + m] = ga or gb
        if tr.if_start[m + 1] - tr.if_start[m] > 1 or (ga and gb):
            out.append(m)
    return np.array(out, dtype=np.int64)


@njit(cache=True, nogil=True, _nrt=True)
def loop_conditioning(ix, Kf, Kr, merges) -> float:
    """Smallest ``s_min / s_max`` of the Cholesky factors of the loop-closing merges'
    ``K`` (their independent part).  For the merge that closes a loop, ``K`` is the
    Gram matrix of the mass-whitened loop Jacobian, so this is the conditioning
    ``dense`` monitors (docs/derivations.md, "Singular configurations") -- the same number
    for non-redundant closures; with redundant rows, that of the independent subset the
    pivoting kept, which also vanishes at a singular configuration."""
    m_nr, m_K = ix[15], ix[16]
    worst = 1.0
    for k in range(merges.shape[0]):
        m = merges[k]
        n = m_nr[m]
        r = Kr[m]
        if r == 0:
            continue
        L = np.empty((r, r))
        for i in range(r):
            for j in range(r):
                L[i, j] = Kf[m_K[m] + i * n + j]
        s = np.linalg.svd(L)[1]
        if s[0] > 0.0 and s[r - 1] / s[0] < worst:
            worst = s[r - 1] / s[0]
    return worst


class SingularityWatch:
    """Warns when a tree-solve formulation's loops come near a singular configuration.

    The divide-and-conquer merges cannot tell which assembly branch to follow
    through a singular configuration (a parallelogram folding flat): they may
    switch branches or lose accuracy (round-off ~1/s^2).  ``monitor`` runs after
    every accepted step (rk4; adaptive solvers through ``step_bound``) on the
    factors of the latest evaluation, and records one warning each time the loop
    conditioning falls below SINGULAR_WINDOW of its initial value.
    """

    MAX_WARNINGS = 20

    def _watch_init(self, lay: TreeLayout, nb: int) -> None:
        self._closing = closing_merges(lay, nb)
        self._cond0 = None
        self._in_window = False
        self._t_warn = -np.inf
        self.warnings: list[str] = []
        self.singular_visits = 0

    def monitor(self, t, y) -> None:
        if self._closing.shape[0] == 0:
            return
        lay = self.lay
        c = loop_conditioning(lay.ix, lay.Kf, lay.Kr, self._closing)
        if self._cond0 is None:
            self._cond0 = max(c, 1e-300)
            return
        rel = c / self._cond0
        if not self._in_window and rel < config.SINGULAR_WINDOW:
            self._in_window = True
            if t - self._t_warn < config.CROSSING_TIME:
                return  # the same crossing, seen again by a large step
            self._t_warn = t
            self.singular_visits += 1
            if len(self.warnings) < self.MAX_WARNINGS:
                self.warnings.append(
                    f"t = {t:.4g} s: near a singular configuration (loop conditioning {rel:.1e} of its initial "
                    f"value); {self.name} may switch assembly branch or lose accuracy there -- the dense "
                    "formulation crosses singular configurations (docs/formulations.md)")
        elif self._in_window and rel > 2.0 * config.SINGULAR_WINDOW:
            self._in_window = False
        if self._in_window:
            self._t_warn = t

    def health(self) -> dict:
        """The loop conditioning of the latest evaluation's factors (Formulation.health)."""
        if self._closing.shape[0] == 0:
            return {}
        lay = self.lay
        return {"loop_conditioning": loop_conditioning(lay.ix, lay.Kf, lay.Kr, self._closing)}

    def step_bound(self, t, y):
        """Adaptive integrators call this before every step: watch, never bound."""
        self.monitor(t, y)
        return None

    def stats(self) -> dict:
        out = {"rhs_evaluations": self.nfev}
        if self.singular_visits:
            out["warnings"] = list(self.warnings)
            out["singular_visits"] = self.singular_visits
        return out
