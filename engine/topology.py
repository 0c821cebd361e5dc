"""Topology: loops, degrees of freedom, redundant constraints, assembly tree.

Counting (docs/derivations.md, "Counting freedoms"): in absolute coordinates
with Euler parameters a mechanism of ``n`` bodies has ``7n`` coordinates and
``m + n`` equations (``m`` joint equations, ``n`` normalisations), so

    DOF = 7n - rank,   redundant = (m + n) - rank.

The normalisation rows are independent of the joint rows, and the tree
joints' rows are independent of each other, which reduces both numbers to the
rank of the loop-closure Jacobian in tree coordinates ``K = Phi_cut,v``:

    DOF = nv - rank(K),   redundant = m_cut - rank(K).

:func:`absolute_counts` computes the same numbers from the full (m, 6n)
Jacobian; the tests check that both agree.  Each gear coupling adds one
equation (a joint-space velocity row, contract section 1) to ``m`` and to the
rows whose rank is taken: ``DOF = nv - rank([K; K_g])``.

The assembly tree is a binary tree over the bodies stored as flat arrays
(conventions 3): level 0 merges every body that touches ground with ground
(eliminating its ground joints), then each level merges disjoint pairs of
adjacent subassemblies chosen by greedy matching, so chains give a balanced
tree of ceil(log2 n) levels.  A subassembly's *handles* are the joints with
exactly one end inside it.  Open chains and trees are assembled in a cheaper order
where that counts fewer operations (:func:`cheaper_tree`): tips first on one thread
(:func:`serial_assembly_tree`: every subassembly a subtree with one handle), in two
such halves on two (:func:`two_part_assembly_tree`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import config
from .constraints import constraint_jacobian, coupling_rows, coupling_twist_rows
from .kinematics import fk_positions, kin_arrays, motion_subspace
from .model import TYPE_NAME, Model


# ------------------------------------------------------------------------ counts


def _frame_at_zero(model: Model):
    x = np.zeros((model.nb, 3))
    R = np.zeros((model.nb, 3, 3))
    P = np.zeros((model.nj, 3))
    q = model.q_zero()
    fk_positions(kin_arrays(model), q, x, R, P)
    S = np.zeros((model.nv, 6))
    motion_subspace(kin_arrays(model), q, R, S)
    return x, R, P, S


def body_jacobian(model: Model, b: int, x, P, S) -> np.ndarray:
    """(6, nv) map from tree velocities to the COM twist of body ``b``."""
    J = np.zeros((6, model.nv))
    i = b
    while i >= 0:
        va, nv = model.v_adr[i], model.nv_j[i]
        l = x[b] - P[i]
        for c in range(va, va + nv):
            s = S[c]
            J[:3, c] = s[:3] + np.cross(s[3:], l)
            J[3:, c] = s[3:]
        i = model.parent[i]
    return J


def loop_jacobian(model: Model) -> np.ndarray:
    """(m_cut, nv) Jacobian of the cut joints' constraints in tree velocities, at t = 0."""
    x, R, P, S = _frame_at_zero(model)
    Jac, _, _ = constraint_jacobian(model, x, R)
    rows = []
    for j in range(model.nb, model.nj):
        r, n = model.c_adr[j], model.nc_j[j]
        K = np.zeros((n, model.nv))
        for side, b in ((0, model.pred[j]), (1, model.succ[j])):
            if b < 0:
                continue
            K += Jac[r:r + n, 6 * b:6 * b + 6] @ body_jacobian(model, b, x, P, S)
        rows.append(K)
    if not rows:
        return np.zeros((0, model.nv))
    return np.vstack(rows)


def _rank(A: np.ndarray) -> int:
    if A.size == 0:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    if s[0] == 0.0:
        return 0
    return int(np.sum(s > config.RANK_RTOL * s[0]))


def absolute_counts(model: Model) -> tuple[int, int, int, int]:
    """(coordinates, equations, DOF, redundant) from the full absolute Jacobian.

    Slow (SVD of an (m + n, 7n) matrix): for checks and small mechanisms.
    """
    x, R, P, S = _frame_at_zero(model)
    Jac, _, _ = constraint_jacobian(model, x, R)
    Jac = np.vstack([Jac, coupling_twist_rows(model, x, R, P)])
    n, m = model.nb, model.nc + model.ng
    rank = _rank(Jac) + n  # Euler-parameter normalisations: one independent row per body
    return 7 * n, m + n, 7 * n - rank, m + n - rank


# ------------------------------------------------------------------------- loops


def loop_bodies(model: Model, j: int) -> list[int]:
    """Bodies on the loop closed by cut joint ``j`` (ground shown as -1)."""
    def path(b):
        out = []
        while b >= 0:
            out.append(b)
            b = model.parent[b]
        out.append(-1)
        return out

    pa, pb = path(model.pred[j]), path(model.succ[j])
    sb = set(pb)
    lca = next(b for b in pa if b in sb)
    left = pa[: pa.index(lca) + 1]
    right = pb[: pb.index(lca)]
    return left + right[::-1]


# ----------------------------------------------------------------- assembly tree


@dataclass(frozen=True, eq=False)
class AssemblyTree:
    """Binary assembly tree in flat arrays (node = body or subassembly).

    Nodes ``0..nb-1`` are the bodies; merge ``m`` creates node ``nb + m`` from
    ``left[m]`` and ``right[m]`` (``-1`` = ground).  Merges of level ``l`` are
    ``level_start[l] .. level_start[l+1]-1`` and are independent of each other.
    """

    nb: int
    n_nodes: int
    left: np.ndarray  # (nm,)
    right: np.ndarray  # (nm,) -1 = ground
    level_start: np.ndarray  # (nlevels + 1,)
    roots: np.ndarray  # nodes never merged (one per part hanging from ground)
    node_nh: np.ndarray  # (n_nodes,) number of handles
    node_h_start: np.ndarray  # (n_nodes,) first handle slot
    node_pair_start: np.ndarray  # (n_nodes,) first (h, k) block of the node
    h_joint: np.ndarray  # (n_slots,) joint of each handle
    h_side: np.ndarray  # (n_slots,) 0 = node holds the pred end, 1 = the succ end
    h_src: np.ndarray  # (n_slots,) for merged nodes: slot of the child handle it comes from
    if_start: np.ndarray  # (nm + 1,) interface joints of merge m: if_joint[if_start[m]:...]
    if_joint: np.ndarray  # (n_if,)
    if_left: np.ndarray  # (n_if,) local handle index in the left child
    if_right: np.ndarray  # (n_if,) local handle index in the right child (-1 for ground)
    n_slots: int
    n_pairs: int
    body_sets: tuple = field(default=(), repr=False)
    #: (sub_start, sub_merges, top_merges) of :func:`treesolve.subtree_partition`'s form,
    #: set by builders that choose their own parallel parts (:func:`two_part_assembly_tree`)
    partition: tuple = field(default=(), repr=False)

    @property
    def n_levels(self) -> int:
        return len(self.level_start) - 1

    @property
    def n_merges(self) -> int:
        return len(self.left)

    def max_handles(self) -> int:
        return int(self.node_nh.max()) if len(self.node_nh) else 0


def build_assembly_tree(model: Model, extra: np.ndarray | None = None) -> AssemblyTree:
    """The assembly tree over the model's joints, and over ``extra`` (k, 2) body pairs
    (pred, succ; pred may be -1 = ground) that enter as joints ``nj .. nj + k - 1``
    (index3's force-element rows, docs/index3.md "Force elements in the tangent")."""
    mg = _Merges(model, extra)
    nb, pred, succ, handles = model.nb, mg.pred, mg.succ, mg.handles
    levels = [0]
    active: list[int] = []
    # level 0: eliminate ground joints
    for i in range(nb):
        active.append(mg.with_ground(i))
    if mg.left:
        levels.append(len(mg.left))

    def key(n):
        return min(mg.sets[n])

    while True:
        active.sort(key=key)
        owner = {}
        for n in active:
            for b in mg.sets[n]:
                owner[b] = n
        # neighbours through joints with both ends in bodies
        nbrs: dict[int, set[int]] = {n: set() for n in active}
        for j in range(len(pred)):
            if pred[j] < 0:
                continue
            a, b = owner[pred[j]], owner[succ[j]]
            if a != b:
                nbrs[a].add(b)
                nbrs[b].add(a)
        matched: set[int] = set()
        pairs = []
        for u in active:
            if u in matched:
                continue
            cands = [v for v in nbrs[u] if v not in matched]
            if not cands:
                continue

            def cost(v):
                shared = sum(1 for j in handles[u] if j in set(handles[v]))
                nh = len(handles[u]) + len(handles[v]) - 2 * shared
                return (nh, len(mg.sets[u]) + len(mg.sets[v]), key(v))

            v = min(cands, key=cost)
            matched.update((u, v))
            pairs.append((u, v) if key(u) < key(v) else (v, u))
        if not pairs:
            break
        merged_into = {}
        for u, v in pairs:
            merged_into[u] = merged_into[v] = mg.merge(u, v)
        levels.append(len(mg.left))
        active = [merged_into.get(n, n) for n in active if n not in merged_into] + sorted(
            set(merged_into.values()))
    return mg.tree(sorted(active), levels)


class _Merges:
    """An assembly tree built one merge at a time: a node is a body or a subassembly, with
    its body set and its handles in slot order (joint, side, source slot in the merged
    children)."""

    def __init__(self, model: Model, extra: np.ndarray | None = None):
        nb, pred, succ = model.nb, model.pred, model.succ
        if extra is not None and len(extra):
            pred = np.concatenate([pred, np.asarray(extra, dtype=np.int64)[:, 0]])
            succ = np.concatenate([succ, np.asarray(extra, dtype=np.int64)[:, 1]])
        self.model, self.nb, self.pred, self.succ = model, nb, pred, succ
        incident: list[list[int]] = [[] for _ in range(nb)]  # per body: its joints
        for j in range(len(pred)):
            if pred[j] >= 0:
                incident[pred[j]].append(j)
            incident[succ[j]].append(j)
        self.sets: list[frozenset[int]] = [frozenset([i]) for i in range(nb)]
        self.handles = [sorted(set(incident[i])) for i in range(nb)]
        self.sides = [[0 if pred[j] == i else 1 for j in self.handles[i]] for i in range(nb)]
        self.srcs = [[-1] * len(self.handles[i]) for i in range(nb)]
        self.left: list[int] = []
        self.right: list[int] = []
        self.if_joint: list[int] = []
        self.if_left: list[int] = []
        self.if_right: list[int] = []
        self.if_start = [0]
        self.children: list[list[int]] = [[] for _ in range(nb)]
        for i in range(nb):
            if model.parent[i] >= 0:
                self.children[model.parent[i]].append(i)

    def merge(self, u: int, v: int) -> int:
        """Merge node u with node v (-1: ground) over the joints they share."""
        hu = self.handles[u]
        hv = self.handles[v] if v >= 0 else []
        shared = [j for j in hu if self.pred[j] < 0] if v < 0 else [j for j in hu if j in set(hv)]
        hs, sd, sr = [], [], []
        for k, j in enumerate(hu):
            if j not in shared:
                hs.append(j)
                sd.append(self.sides[u][k])
                sr.append(k)
        for k, j in enumerate(hv):
            if j not in shared:
                hs.append(j)
                sd.append(self.sides[v][k])
                sr.append(len(hu) + k)
        self.sets.append(self.sets[u] | self.sets[v] if v >= 0 else self.sets[u])
        self.handles.append(hs)
        self.sides.append(sd)
        self.srcs.append(sr)
        self.left.append(u)
        self.right.append(v)
        for j in shared:
            self.if_joint.append(j)
            self.if_left.append(hu.index(j))
            self.if_right.append(hv.index(j) if v >= 0 else -1)
        self.if_start.append(len(self.if_joint))
        return len(self.sets) - 1

    def with_ground(self, i: int) -> int:
        """Node i, merged with ground if it has ground joints."""
        return self.merge(i, -1) if any(self.pred[j] < 0 for j in self.handles[i]) else i

    def subtree(self, root: int, ground_last: bool = False) -> int:
        """The subtree of the spanning tree at body ``root``, tips first: each body (in
        decreasing index order, so its children are done) with ground if it touches it,
        then with each child's subassembly in turn.  ``ground_last``: ``root`` merges with
        ground after its children, so the subtree with its ground joints is the last
        merge (what makes a chain hanging from ground one grounded articulated-body
        region, :func:`articulated_regions`)."""
        bodies, stack = [], [root]
        while stack:
            b = stack.pop()
            bodies.append(b)
            stack += self.children[b]
        node_of = {}
        for i in sorted(bodies, reverse=True):  # parent[i] < i
            last = ground_last and i == root
            node = i if last else self.with_ground(i)
            for c in self.children[i]:
                node = self.merge(node, node_of[c])
            node_of[i] = self.with_ground(node) if last else node
        return node_of[root]

    def join_parts(self, parts: list[int]) -> list[int]:
        """Merge, pairwise, parts that still share (cut) joints."""
        while True:
            pair = next(((u, v) for a, u in enumerate(parts) for v in parts[a + 1:]
                         if set(self.handles[u]) & set(self.handles[v])), None)
            if pair is None:
                return parts
            parts = [n for n in parts if n not in pair] + [self.merge(*pair)]

    def tree(self, roots: list[int], levels: list[int] | None = None, partition: tuple = ()) -> AssemblyTree:
        """The merges so far as an :class:`AssemblyTree`: ``levels`` the first merge of each
        level (default: one merge per level); :func:`treesolve.build_layout` runs
        ``partition``'s parts in parallel when the run cuts the tree."""
        levels = list(range(len(self.left) + 1)) if levels is None else levels
        node_nh = np.array([len(h) for h in self.handles], dtype=np.int64)
        flat = lambda L: np.array([x for h in L for x in h], dtype=np.int64)  # noqa: E731
        ints = lambda L: np.array(L, dtype=np.int64)  # noqa: E731
        return AssemblyTree(
            nb=self.nb, n_nodes=len(self.sets), left=ints(self.left), right=ints(self.right),
            level_start=ints(levels), roots=ints(sorted(roots)), node_nh=node_nh,
            node_h_start=np.concatenate([[0], np.cumsum(node_nh)[:-1]]).astype(np.int64),
            node_pair_start=np.concatenate([[0], np.cumsum(node_nh**2)[:-1]]).astype(np.int64),
            h_joint=flat(self.handles), h_side=flat(self.sides), h_src=flat(self.srcs),
            if_start=ints(self.if_start), if_joint=ints(self.if_joint), if_left=ints(self.if_left),
            if_right=ints(self.if_right), n_slots=int(node_nh.sum()), n_pairs=int((node_nh**2).sum()),
            body_sets=tuple(self.sets), partition=tuple(ints(a) for a in partition),
        )


def serial_assembly_tree(model: Model, ground_last: bool = False) -> AssemblyTree:
    """The assembly tree that costs least on one thread: subtrees of the spanning tree,
    tips first (docs/derivations.md, "DCA: the assembly order").

    A subassembly is a whole subtree of the spanning tree (:meth:`_Merges.subtree`), and
    its only handles are the joint to its parent and the cut joints leaving it: a
    chain's merges have one external handle each, where the balanced tree's have two,
    so each merge updates one ``Phi`` block instead of three.  Every merge is its own
    level (nothing runs in parallel); parts still sharing cut joints at the end are
    merged pairwise.  Which tree a run uses is :func:`cheaper_tree`'s choice.
    ``ground_last``: each part merges with ground last (:meth:`_Merges.subtree`).
    """
    mg = _Merges(model)
    parts = [mg.subtree(r, ground_last) for r in range(model.nb) if model.parent[r] < 0]
    return mg.tree(mg.join_parts(parts))


def two_part_assembly_tree(model: Model, share: float = 0.5) -> AssemblyTree | None:
    """For two threads: an open mechanism in two parts, each assembled with one handle per
    subassembly, and merged last (docs/derivations.md, "DCA: the assembly order").

    The parts hanging from ground are independent.  If the largest holds more than half
    the bodies, it is split: part A is the subtree at body ``b`` on its heaviest path whose
    size is nearest ``share * nb``, assembled tips first (handle: ``b``'s joint); part B is the
    rest, assembled root first along the path from the root to ``b``'s parent -- each path
    body joins the accumulated subassembly (whose only handle is the joint to that body),
    then takes in its side subtrees, each assembled tips first -- and A and B are merged
    last.  The other parts (all of them, if none is split) go whole, tips first, to the
    less loaded side.  ``tree.partition`` runs the two sides in one parallel region and the
    last merge after it.  None for a mechanism with loops or fewer than four bodies.
    """
    nb = model.nb
    if model.ncut or nb < 4:
        return None
    size = np.ones(nb, dtype=np.int64)
    for i in range(nb - 1, -1, -1):  # parent[i] < i
        if model.parent[i] >= 0:
            size[model.parent[i]] += size[i]
    mg = _Merges(model)
    order = sorted((i for i in range(nb) if model.parent[i] < 0), key=lambda r: (-size[r], r))
    sides: list[list[int]] = [[], []]
    loads = [0, 0]
    roots, top = [], []

    def on_side(k: int, make) -> int:
        first = len(mg.left)
        node = make()
        sides[k] += range(first, len(mg.left))
        return node

    big = order[0]
    if 2 * size[big] > nb and size[big] >= 4:
        order = order[1:]
        path, b, best = [big], big, None
        while mg.children[b]:
            b = max(mg.children[b], key=lambda c: size[c])
            if best is None or abs(size[b] - share * nb) < abs(size[best] - share * nb):
                best = b
            path.append(b)
        b, path = best, path[:path.index(best)]  # the root ... b's parent

        def rest_of_big() -> int:
            acc = mg.with_ground(path[0])
            for k, body in enumerate(path):
                if k:
                    acc = mg.merge(acc, body)
                nxt = path[k + 1] if k + 1 < len(path) else b
                for c in mg.children[body]:
                    if c != nxt:
                        acc = mg.merge(acc, mg.subtree(c))
            return acc

        node_a = on_side(0, lambda: mg.subtree(b))
        node_b = on_side(1, rest_of_big)
        loads = [int(size[b]), int(size[big] - size[b])]
        top.append(len(mg.left))
        roots.append(mg.merge(node_b, node_a))
    for r in order:
        k = int(np.argmin(loads))
        roots.append(on_side(k, lambda r=r: mg.subtree(r)))
        loads[k] += int(size[r])
    if not sides[0] or not sides[1]:
        return None
    partition = ([0, len(sides[0]), len(sides[0]) + len(sides[1])], sides[0] + sides[1], top)
    return mg.tree(roots, partition=partition)


def articulated_regions(model: Model, tree: AssemblyTree, partition: tuple = (),
                        grounded: bool = False) -> tuple[np.ndarray, list]:
    """The subassemblies of ``tree`` that a tree solve assembles in inertia form, by the
    articulated-body recursion, instead of merge by merge (docs/derivations.md, "The
    articulated-body regions").

    A region is a node whose bodies are a whole subtree of the spanning tree, of two
    bodies or more, touched by no cut joint, and whose only handle is the joint to the
    subtree's root: every merge under it then eliminates a tree joint between a body
    and its subtree, which the recursion does with the joint's ``nv`` freedoms where the
    merge takes its ``6 - nv`` constraint rows.  Regions are maximal, and each lies in
    one part of ``partition`` (``(sub_start, sub_merges, top)``, empty: all in one).
    With ``grounded``, a region may also be a whole subtree hanging from ground merged
    with ground over its root's joint alone (its head then has no handle): the recursion
    eliminates that joint too, ground being at rest, as the articulated-body algorithm
    does (docs/derivations.md, "The articulated-body regions").

    Returns ``region_of`` (per merge: the region it heads, -2 inside a region, -1
    outside) and each region's bodies, tips first (decreasing index: ``parent[i] < i``),
    its root last.
    """
    nb, nm = tree.nb, tree.n_merges
    region_of = np.full(nm, -1, dtype=np.int64)
    regions: list[list[int]] = []
    if nm == 0 or model.nb != nb:
        return region_of, regions
    part = np.full(nm, -1, dtype=np.int64)
    if partition:
        sub_start, sub_merges = partition[0], partition[1]
        for s in range(len(sub_start) - 1):
            part[sub_merges[sub_start[s]:sub_start[s + 1]]] = s
    size = np.ones(nb, dtype=np.int64)
    for i in range(nb - 1, -1, -1):
        if model.parent[i] >= 0:
            size[model.parent[i]] += size[i]
    touched = np.zeros(nb, dtype=bool)  # bodies at either end of a cut joint
    for j in range(nb, model.nj):
        for b in (model.pred[j], model.succ[j]):
            if b >= 0:
                touched[b] = True
    covered = np.zeros(nm, dtype=bool)
    for m in range(nm - 1, -1, -1):  # a merge's children are made before it: largest first
        if covered[m]:
            continue
        bodies = tree.body_sets[nb + m]
        if tree.node_nh[nb + m] == 1:
            slot = tree.node_h_start[nb + m]
            j = int(tree.h_joint[slot])
            if tree.h_side[slot] != 1:
                continue
        elif (grounded and tree.node_nh[nb + m] == 0 and tree.right[m] == -1
              and tree.if_start[m + 1] - tree.if_start[m] == 1):
            j = int(tree.if_joint[tree.if_start[m]])  # the merge with ground over one joint
            if j >= nb or model.parent[j] >= 0:
                continue
        else:
            continue
        if j >= nb or len(bodies) < 2 or len(bodies) != size[j] or j not in bodies:
            continue
        if touched[list(bodies)].any():
            continue
        inside, stack = [], [m]
        while stack:
            k = stack.pop()
            inside.append(k)
            stack += [c - nb for c in (tree.left[k], tree.right[k]) if c >= nb]
        if (part[inside] != part[m]).any():
            continue
        covered[inside] = True
        region_of[inside] = -2
        region_of[m] = len(regions)
        regions.append(sorted(bodies, reverse=True))
    return region_of, regions


def _region_body_ops(nv: int) -> int:
    """Operations of the articulated-body recursion for one body below a region's root
    (docs/derivations.md, "The articulated-body regions"): ``U = I S`` and ``D = S^T U``
    (sparse: a joint axis has three nonzero entries, a spherical joint's unit axes one),
    ``D^-1``, ``I - U D^-1 U^T`` on the symmetric 6 x 6, and its shift to the parent's
    joint point (three 3 x 3 products with a cross-product matrix, 135 operations) added
    to the parent's."""
    if nv == 0:
        return 135 + 21
    nz = 1 if nv == 3 else 3  # nonzeros per axis: spherical axes are unit vectors
    return 2 * 6 * nz * nv + 2 * nz * nv * nv + nv**3 + 2 * 6 * nv * nv + 21 * 2 * nv + 135 + 21


def _merge_ops(tree: AssemblyTree, rows: np.ndarray, nd: int = 6, model: Model | None = None,
               partition: tuple = ()) -> np.ndarray:
    """:func:`merge_operations`, merge by merge; with ``model``, a tree solve's (``dca``,
    ``hdca``): a merge inside an articulated-body region (:func:`articulated_regions` over
    ``partition``, by default the tree's own or its cut, as :func:`treesolve.build_layout`
    takes them) costs nothing, and the merge heading it the region's recursion plus
    the factorisation and inverse of its root's 6 x 6 articulated inertia (288)."""
    rows = np.asarray(rows, dtype=np.int64)
    ops = np.zeros(tree.n_merges, dtype=np.int64)
    for m in range(tree.n_merges):
        r = int(rows[tree.if_joint[tree.if_start[m]:tree.if_start[m + 1]]].sum())
        e = int(tree.node_nh[tree.nb + m])
        sides = 2 if tree.right[m] >= 0 else 1
        ops[m] = sides * 2 * r * r * nd + r**3 // 3 + e * 2 * r * nd * (nd + r) + e * (e + 1) // 2 * 2 * r * nd * nd
    if model is not None:
        from .formulations.treesolve import subtree_partition

        region_of, regions = articulated_regions(model, tree, partition or tree.partition or subtree_partition(tree))
        ops[region_of == -2] = 0
        for m in np.flatnonzero(region_of >= 0):
            bodies = regions[region_of[m]]
            ops[m] = 288 + sum(_region_body_ops(int(model.nv_j[b])) for b in bodies[:-1])
    return ops


def merge_operations(tree: AssemblyTree, rows: np.ndarray, nd: int = 6, model: Model | None = None) -> int:
    """Floating-point operations of one matrix pass over ``tree`` with ``rows[j]``
    constraint rows per joint, merge by merge (docs/derivations.md, "DCA: the assembly
    order"): with ``r`` interface rows and ``e`` external handles, ``K`` (``2 r^2 nd``
    per side), its factorisation (``r^3 / 3``), ``E`` and ``Y = K^-1 E`` for each
    handle (``2 r nd (nd + r)``), and the ``e (e + 1) / 2`` block updates
    ``Phi -= E^T Y`` (``2 r nd^2`` each).  Dense counts: zero-skipping is ignored.
    With ``model``: a tree solve's count, articulated-body regions included
    (:func:`_merge_ops`)."""
    return int(_merge_ops(tree, rows, nd, model).sum())


def parallel_operations(tree: AssemblyTree, rows: np.ndarray, threads: int, model: Model | None = None,
                        nd: int = 6) -> int:
    """The matrix pass's operations on the busiest of ``threads`` threads: its parallel
    parts (``tree.partition``, else :func:`treesolve.subtree_partition`'s) dealt largest
    first to the least loaded thread, then the merges above them.  With ``model``: a
    tree solve's count, articulated-body regions included (:func:`_merge_ops`); ``nd``:
    the block size."""
    from .formulations.treesolve import subtree_partition

    partition = tree.partition or subtree_partition(tree)
    ops = _merge_ops(tree, rows, nd, model, partition)
    sub_start, sub_merges, top = partition
    parts = sorted((int(ops[sub_merges[sub_start[k]:sub_start[k + 1]]].sum()) for k in range(len(sub_start) - 1)),
                   reverse=True)
    load = [0] * max(threads, 1)
    for p in parts:
        load[load.index(min(load))] += p
    return max(load) + int(ops[top].sum())


def cheaper_tree(model: Model, rows: np.ndarray, threads: int, balanced: AssemblyTree | None = None,
                 ground_last: bool = False, nd: int = 6, regions: bool = True) -> AssemblyTree:
    """The assembly tree a tree solve on ``threads`` threads runs over: the balanced one
    (:func:`build_assembly_tree`), unless an open mechanism has a cheaper one.

    On one thread that is :func:`serial_assembly_tree` when its matrix pass costs fewer
    operations (:func:`merge_operations`).  On chains that is 40-47 % fewer; on a bushy
    tree, whose bodies carry their child joints as handles while they merge their
    children in turn, it can be more (a quarter of random 5- to 40-body trees, up to
    28 %).  On more threads it is :func:`two_part_assembly_tree` when its busiest
    thread does fewer operations than the balanced tree's (:func:`parallel_operations`):
    chains on two threads.  Loops keep the balanced tree whatever the thread count: the
    singularity watch measures its closing merges, whose thresholds were set and tested
    on it (docs/formulations.md, "Singular configurations"), and on loops the serial
    order saves little (paper 001's loop of 8 bodies: 17 % more operations, the 16-cell
    ladder 2 % fewer).  ``balanced``: that tree, when the caller has built it;
    ``ground_last``: the one-thread tree merges each part with ground last
    (:func:`serial_assembly_tree`).  ``nd``, ``regions``: the tree solve's block size and
    whether it assembles articulated-body regions (``dca``, ``hdca``: 6 and yes;
    ``index3``: 7 and no, counted merge by merge)."""
    balanced = build_assembly_tree(model) if balanced is None else balanced
    if model.ncut or model.nb < 2:
        return balanced
    counted = model if regions else None
    if threads <= 1:
        tips_first = serial_assembly_tree(model, ground_last)
        cost = [merge_operations(t, rows, nd, counted) for t in (tips_first, balanced)]
        return tips_first if cost[0] < cost[1] else balanced
    candidates = [balanced, serial_assembly_tree(model)]
    candidates += [t for t in (two_part_assembly_tree(model, share) for share in TWO_PART_SHARES) if t is not None]
    cost = [parallel_operations(t, rows, threads, counted, nd) for t in candidates]
    return candidates[int(np.argmin(cost))]


#: the fractions of the bodies :func:`cheaper_tree` tries in the tips-first part of a
#: two-part tree: that part is an articulated-body region, cheaper per body than the
#: root-first part's merges, so the balance of work puts more than half the bodies there
TWO_PART_SHARES = (0.5, 0.6, 0.7, 0.8, 0.9)


# ---------------------------------------------------------------------- summary


@dataclass(frozen=True)
class Topology:
    n_bodies: int
    n_joints: int
    n_loops: int
    cut_joints: tuple[str, ...]
    loops: tuple[tuple[str, ...], ...]
    coordinates: int  # absolute: 7 n
    equations: int  # joint equations + normalisations
    dof: int
    redundant: int
    tree_coordinates: int  # nv
    tree_parameters: int  # nq
    loop_equations: int
    loop_rank: int
    assembly: AssemblyTree
    couplings: int = 0  # gear equations (one per gear)

    def _assembly_orders(self, model: Model) -> dict:
        """Which trees ``dca`` and ``hdca`` assemble over on one and on two threads
        (:func:`cheaper_tree`), how many bodies their articulated-body regions hold (on one
        thread ``dca``'s take in their joints to ground: ``dca_region_bodies``), and
        the operation counts of the matrix pass (on two threads: of its busiest thread)
        against the balanced tree's; ``index3``: whether it assembles tips first on one
        thread (:func:`formulations.index3.assembly_tree`), and its counts (7-blocks)."""
        from .formulations.index3 import assembly_tree, stiff_elements
        from .formulations.treesolve import run_threads, subtree_partition

        def region_bodies(tree, grounded=False):
            partition = tree.partition or subtree_partition(tree)
            return sum(len(r) for r in articulated_regions(model, tree, partition, grounded)[1])

        serial = cheaper_tree(model, model.nc_j, threads=1, balanced=self.assembly)
        dca_serial = cheaper_tree(model, model.nc_j, threads=1, balanced=self.assembly, ground_last=True)
        # below PARALLEL_MIN_BODIES a run has one thread whatever the settings
        parallel = run_threads(model.nb, 2) > 1
        two = cheaper_tree(model, model.nc_j, threads=2, balanced=self.assembly) if parallel else serial
        ends = stiff_elements(model)[1]  # with these rows index3 keeps the balanced tree
        i3 = self.assembly if len(ends) else assembly_tree(model, ends, 1, self.assembly)
        i3_tips = i3 is not self.assembly
        return {"tips_first": serial is not self.assembly,
                "index3": {"tips_first": i3_tips,
                           "operations": merge_operations(i3, model.nc_j, 7) if i3_tips else None,
                           "balanced_operations": merge_operations(self.assembly, model.nc_j, 7) if i3_tips
                           else None},
                "levels": serial.n_levels, "max_handles": serial.max_handles(),
                "region_bodies": region_bodies(serial),
                "dca_region_bodies": region_bodies(dca_serial, grounded=True),
                "operations": merge_operations(serial, model.nc_j, model=model),
                "balanced_operations": merge_operations(self.assembly, model.nc_j, model=model),
                "two_threads": {"two_parts": bool(two.partition),
                                "region_bodies": region_bodies(two),
                                "operations": parallel_operations(two, model.nc_j, 2, model),
                                "balanced_operations": parallel_operations(self.assembly, model.nc_j, 2, model)}}

    def as_dict(self, model: Model) -> dict:
        tree = self.assembly

        def node_name(n):
            if n < 0:
                return "ground"
            return "+".join(model.body_names[b] for b in sorted(tree.body_sets[n]))

        levels = []
        for l in range(tree.n_levels):
            ms = range(tree.level_start[l], tree.level_start[l + 1])
            levels.append([
                {"node": tree.nb + m, "left": int(tree.left[m]), "right": int(tree.right[m]),
                 "bodies": node_name(tree.nb + m),
                 "joints": [model.joint_names[j]
                            for j in tree.if_joint[tree.if_start[m]:tree.if_start[m + 1]]]}
                for m in ms
            ])
        return {
            "name": model.name,
            "bodies": self.n_bodies,
            "joints": self.n_joints,
            "joint_types": {t: int(np.sum(model.jtype == c)) for c, t in TYPE_NAME.items()
                            if np.any(model.jtype == c)},
            "loops": self.n_loops,
            "cut_joints": list(self.cut_joints),
            "loop_bodies": [list(l) for l in self.loops],
            "absolute_coordinates": self.coordinates,
            "constraint_equations": self.equations,
            "joint_equations": self.equations - self.n_bodies - self.couplings,
            "coupling_equations": self.couplings,
            "normalisation_equations": self.n_bodies,
            "dof": self.dof,
            "redundant_constraints": self.redundant,
            "tree_coordinates": {"nq": self.tree_parameters, "nv": self.tree_coordinates},
            "loop_closure": {"equations": self.loop_equations, "rank": self.loop_rank},
            "couplings": [{"name": c.name, "type": c.type, "driver": c.driver, "driven": c.driven,
                           "ratio": c.ratio} for c in model.spec.couplings],
            "body_order": list(model.body_names),
            "parent": [("ground" if p < 0 else model.body_names[p]) for p in model.parent],
            "serial_assembly": self._assembly_orders(model),
            "assembly_tree": {
                "nodes": int(tree.n_nodes),
                "levels": tree.n_levels,
                "max_handles": tree.max_handles(),
                "roots": [int(r) for r in tree.roots],
                "level_start": [int(v) for v in tree.level_start],
                "left": [int(v) for v in tree.left],
                "right": [int(v) for v in tree.right],
                "merges": levels,
            },
        }


def analyze(model: Model) -> Topology:
    K = loop_jacobian(model)
    loop_rank = _rank(K)
    m_cut = K.shape[0]
    # gear rows join the closure rows in the rank (DOF, redundancy)
    rank = _rank(np.vstack([K, coupling_rows(model, model.q_zero())[1]])) if model.ng else loop_rank
    n = model.nb
    m = model.nc + model.ng
    loops = []
    for j in range(model.nb, model.nj):
        loops.append(tuple("ground" if b < 0 else model.body_names[b] for b in loop_bodies(model, j)))
    return Topology(
        n_bodies=n, n_joints=model.nj, n_loops=model.ncut,
        cut_joints=tuple(model.joint_names[j] for j in range(model.nb, model.nj)),
        loops=tuple(loops),
        coordinates=7 * n, equations=m + n, dof=model.nv - rank, redundant=m_cut + model.ng - rank,
        tree_coordinates=model.nv, tree_parameters=model.nq, loop_equations=m_cut, loop_rank=loop_rank,
        assembly=build_assembly_tree(model), couplings=model.ng,
    )
