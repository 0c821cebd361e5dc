"""The tree solve's flat data: :class:`TreeIndex` (the assembly tree and the constraint
rows as the passes read them), :class:`Regions` (the articulated-body regions' workspace),
:class:`TreeWork` (the passes' workspace) and :class:`TreeLayout` (all of them), built by
:func:`build_layout`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ...assembly import AssemblyTree, SUBTREES, articulated_regions, subtree_partition
from ...model import Model
from ...threads import body_parallel_from, cuts_tree


class TreeIndex(NamedTuple):
    """The assembly tree and the constraint rows, flat, as the tree passes read them
    (``TreeLayout.ix``; :class:`~linkwork.engine.assembly.AssemblyTree` says what each
    tree array holds)."""

    nb: np.int64  # bodies: nodes 0..nb-1; merge m makes node nb + m
    left: np.ndarray  # (nm,) the merge's children
    right: np.ndarray  # (nm,) (-1: ground)
    level_start: np.ndarray  # (n_levels + 1,) merges level by level
    node_nh: np.ndarray  # (n_nodes,) handles per node
    node_h_start: np.ndarray  # (n_nodes,) first handle slot of the node
    node_pair_start: np.ndarray  # (n_nodes,) first (handle, handle) block of the node's Phi
    h_joint: np.ndarray  # (n_slots,) the handle's joint
    h_side: np.ndarray  # (n_slots,) 0: the node holds the joint's pred end, 1: its succ end
    h_src: np.ndarray  # (n_slots,) the child handle slot it comes from (-1: a leaf's)
    if_start: np.ndarray  # (nm + 1,) the merge's interface joints
    if_joint: np.ndarray  # interface joints
    if_left: np.ndarray  # their handle slot on the left child
    if_right: np.ndarray  # on the right child (-1: ground)
    if_roff: np.ndarray  # their first row within the merge's K
    m_nr: np.ndarray  # (nm,) interface rows of the merge (K is m_nr x m_nr)
    m_K: np.ndarray  # (nm,) offset of the merge's K in Kf, Ks
    m_R: np.ndarray  # (nm,) offset of its rows in Kp, r0, y0
    m_E: np.ndarray  # (nm,) offset of its E, Y blocks
    row_adr: np.ndarray  # (nj,) each joint's first constraint row
    rows: np.ndarray  # (nj,) its row count
    sub_start: np.ndarray  # independent subtrees of the parallel passes (assembly.subtree_partition)
    sub_merges: np.ndarray  # their merges, children first
    top_merges: np.ndarray  # the merges above them, run serially
    body_parallel_from: np.int64  # per-body loops open a parallel region from this many bodies


class Regions(NamedTuple):
    """The articulated-body regions' workspace and index arrays, as the passes read them
    (:meth:`TreeLayout.hybrid`; docs/derivations.md, "The articulated-body regions")."""

    S: np.ndarray  # (nv, 6) motion subspace columns (the formulation's)
    P: np.ndarray  # (nj, 3) joint points (the formulation's)
    IA: np.ndarray  # (nb, 6, 6) articulated inertia about the joint point
    W: np.ndarray  # (nb, 6) its bias wrench
    U: np.ndarray  # (nv, 6) I S per freedom
    Dinv: np.ndarray  # (nb, 3, 3) (S^T I S)^-1
    sz: np.ndarray  # (nv,) S^T (W - I c)
    cperp: np.ndarray  # (nb, 6) the joint's constant term
    xa: np.ndarray  # (nb, 6) handle quantity at the joint point
    LA: np.ndarray  # (n_regions, 6, 6) Cholesky factor of each region root's inertia
    region_of: np.ndarray  # (nm,) the region a merge heads (-1 none, -2 inside one)
    reg_start: np.ndarray  # (n_regions + 1,) the regions' bodies, tips first
    reg_body: np.ndarray
    reg_head: np.ndarray  # (n_regions,) head merge of each region
    parent: np.ndarray  # (nb,) parent body
    slot_in: np.ndarray  # (nb,) handle slot of the body's joint to its parent, on itself
    slot_out: np.ndarray  # (nb,) on the parent
    va: np.ndarray  # (nb,) the joint's first freedom
    nvj: np.ndarray  # (nb,) its freedom count
    in_region: np.ndarray  # (nb,) the body's region (-1 none)
    unit_first: np.ndarray  # (nb,) the joint's rows are e_0, e_1, e_2 first (TreeLayout.unit_first)


class TreeWork(NamedTuple):
    """The tree solve's workspace, grouped by pass, as the passes read and write it
    (``TreeLayout.work``, built once with the layout: its arrays are the layout's).  ``nd``
    is the block size; ``n_pairs``, ``n_slots`` the nodes' handle pairs and handles
    (:class:`~linkwork.engine.assembly.AssemblyTree`); a merge has ``nr`` interface rows
    and ``ne`` external handles (``TreeIndex.m_nr``, ``node_nh``)."""

    Phi: np.ndarray  # (n_pairs, nd, nd) node blocks, filled by the leaf kernel + matrix pass
    bv: np.ndarray  # (n_slots, nd) node biases, leaf kernel + bias pass
    Fh: np.ndarray  # (n_slots, nd) handle forces, disassembly
    G: np.ndarray  # (2, n_rows, nd) constraint rows on the pred (0) and succ (1) ends, formulation
    #: (n_rows,) constant term of each constraint row, formulation (dca, hdca; index-3's
    #: solves bring their own to the bias pass)
    g0: np.ndarray
    lam: np.ndarray  # (n_rows,) multipliers, disassembly
    #: (2 sum nr^2,) pivoted Cholesky factor of each merge's K, matrix pass; then, for a
    #: factor of lower rank, its null space and the Cholesky factor of that space's Gram matrix (null_factor)
    Kf: np.ndarray
    Kp: np.ndarray  # (sum nr,) its pivot order, matrix pass
    #: (2 nm,) its rank, matrix pass; then each merge's rank bound: its rows less those that
    #: depend on the rows merged below it where the loops close (:meth:`TreeLayout.cap_ranks`),
    #: its row count until then.
    #: The pivoting keeps at most that many pivots, so redundant rows stay dropped off the closure too.
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


@dataclass(eq=False)
class TreeLayout:
    """Flat index arrays (``ix``) and workspace (``work``) of one tree solve."""

    nd: int
    ix: TreeIndex
    n_rows: int  # total constraint rows (all joints)
    tree: AssemblyTree
    work: TreeWork  # the passes' workspace (also by name: ``lay.Phi`` is ``lay.work.Phi``)
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
    #: zero linear halves after them: its passes skip their zeros (bias_step, down_step).
    #: Set by the formulation when it knows its rows' structure; False is always safe.
    unit_first: np.ndarray

    def cap_ranks(self, redundant: np.ndarray) -> None:
        """Bound each merge's rank, from now on, by its interface rows less ``redundant``
        (:func:`topology.subassemblies`: the rows that depend on the rows merged below
        it where the loops close).  Redundant closure rows are dependent there (a planar
        loop's three out-of-plane rows); off the closure -- a Runge-Kutta stage, a drifted
        position -- they become independent by ~d, and a pivot test alone would then keep
        one as a constraint that is not the mechanism's (docs/derivations.md, "Redundant
        rows").  Called once, by the formulation, before any pass."""
        nm = self.Kr.shape[0] // 2
        self.Kr[nm:] = self.ix.m_nr - redundant

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

    def hybrid(self, S: np.ndarray, P: np.ndarray) -> Regions:
        """The passes' last argument ``hy``: the regions' workspace with the formulation's
        motion subspaces ``S`` and joint points ``P`` (arrays it writes in place), their
        index arrays (:func:`_region_arrays`) and ``unit_first``.  Apart from the layout's
        ``ix``: index-3's kernels, which take ``ix`` everywhere, compile without them."""
        return Regions(S, P, self.IA, self.W, self.U, self.Dinv, self.sz, self.cperp, self.xa, self.LA, *self.reg,
                       self.unit_first)

    @property
    def GA(self) -> np.ndarray:  # view: rows on the pred end
        return self.G[0]

    @property
    def GB(self) -> np.ndarray:  # view: rows on the succ end
        return self.G[1]

    # the workspace's arrays by name (:class:`TreeWork` says what each holds)
    Phi = property(lambda self: self.work.Phi)
    bv = property(lambda self: self.work.bv)
    Fh = property(lambda self: self.work.Fh)
    G = property(lambda self: self.work.G)
    g0 = property(lambda self: self.work.g0)
    lam = property(lambda self: self.work.lam)
    Kf = property(lambda self: self.work.Kf)
    Kp = property(lambda self: self.work.Kp)
    Kr = property(lambda self: self.work.Kr)
    Ks = property(lambda self: self.work.Ks)
    Y = property(lambda self: self.work.Y)
    E = property(lambda self: self.work.E)
    r0 = property(lambda self: self.work.r0)
    y0 = property(lambda self: self.work.y0)
    scr = property(lambda self: self.work.scr)
    sel = property(lambda self: self.work.sel)


def build_layout(model: Model, tree: AssemblyTree, nd: int, rows_per_joint: np.ndarray,
                 threads: int | None = None, regions: bool = False, grounded: bool = False) -> TreeLayout:
    """Index arrays for ``tree`` with ``rows_per_joint[j]`` constraint rows per joint,
    for a run with the settings' ``threads`` (:func:`body_parallel_from`); ``regions``:
    assemble the articulated-body regions (:func:`topology.articulated_regions`) in
    inertia form -- for 6-vector handles whose tree-joint rows are ``G_succ = T^T``,
    ``G_pred = -T^T`` with ``T`` orthonormal and ``T^T S = 0`` (dca, hdca); ``grounded``:
    regions may take in their root's joint to ground (dca)."""
    nb, nm = tree.nb, tree.n_merges
    # a copy of its own: the model's row counts are read-only, which numba types apart from
    # a writeable array (index3's), and every merge kernel compiled twice
    rows = np.array(rows_per_joint, dtype=np.int64)
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
        # writeable copies like the other index arrays (the tree's own are read-only): numba
        # types the two apart, and every merge kernel compiled twice
        sub_start, sub_merges, top_merges = (np.array(a) for a in tree.partition)
    else:
        sub_start, sub_merges, top_merges = subtree_partition(tree, SUBTREES if cut else nm + 1)
    # regions lie in the parts of the cut tree whether or not this run cuts it: the same
    # tree then gives the same arithmetic on any number of threads
    region_of, regions_list = (articulated_regions(model, tree, tree.partition or subtree_partition(tree), grounded)
                               if regions and nd == 6 else (np.full(nm, -1, dtype=np.int64), []))
    ix = TreeIndex(
        np.int64(nb), tree.left, tree.right, tree.level_start, tree.node_nh, tree.node_h_start,
        tree.node_pair_start, tree.h_joint, tree.h_side, tree.h_src, tree.if_start, tree.if_joint,
        tree.if_left, tree.if_right, if_roff, m_nr, m_K, m_R, m_E, row_adr, rows,
        sub_start, sub_merges, top_merges, body_parallel_from(nb, threads),
    )
    nv = int(model.nv_j[:nb].sum()) if regions_list else 0
    nbr = nb if regions_list else 0
    work = TreeWork(
        Phi=np.zeros((tree.n_pairs, nd, nd)), bv=np.zeros((tree.n_slots, nd)),
        Fh=np.zeros((tree.n_slots, nd)), G=np.zeros((2, n_rows, nd)),
        g0=np.zeros(n_rows), lam=np.zeros(n_rows), Kf=np.zeros(2 * nK), Kp=np.zeros(nR, dtype=np.int64),
        Kr=np.concatenate([np.zeros(nm, dtype=np.int64), m_nr.astype(np.int64)]), Ks=np.zeros(nK),
        Y=np.zeros((nE, nd)), E=np.zeros((nE, nd)),
        r0=np.zeros(nR), y0=np.zeros(nR),
        scr=np.zeros((max(nm, 1), nd + 3 * int(m_nr.max(initial=0)) + nd * nd)),
        sel=np.full(n_rows, -1, dtype=np.int64),
    )
    return TreeLayout(
        nd=nd, ix=ix, n_rows=n_rows, tree=tree, work=work,
        IA=np.zeros((nbr, 6, 6)), W=np.zeros((nbr, 6)), U=np.zeros((nv, 6)), Dinv=np.zeros((nbr, 3, 3)),
        sz=np.zeros(nv), cperp=np.zeros((nbr, 6)), xa=np.zeros((nbr, 6)), LA=np.zeros((len(regions_list), 6, 6)),
        reg=_region_arrays(model, tree, region_of, regions_list), unit_first=np.zeros(nbr, dtype=np.bool_),
    )


def _region_arrays(model: Model, tree: AssemblyTree, region_of: np.ndarray, regions: list) -> tuple:
    """The regions' index arrays of :class:`Regions` (:meth:`TreeLayout.hybrid`): per merge
    the region it heads (-1 none, -2 inside one); the regions'
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
