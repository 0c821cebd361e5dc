"""The assembly tree: the binary tree over the bodies that the tree formulations
(``dca``, ``hdca``, ``index3``) solve over, its partition into independent subtrees for
the parallel passes, its articulated-body regions, and the operation counts that choose
between trees.

The assembly tree is a binary tree over the bodies stored as flat arrays:
level 0 merges every body that touches ground with ground
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

from .model import F_JOINT_SPRING, F_SPRING, Model


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
    #: (sub_start, sub_merges, top_merges) of :func:`subtree_partition`'s form,
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
        level (default: one merge per level); :func:`tree.build_layout` runs
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
    ``partition``, by default the tree's own or its cut, as :func:`tree.build_layout`
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
    parts (``tree.partition``, else :func:`subtree_partition`'s) dealt largest
    first to the least loaded thread, then the merges above them.  With ``model``: a
    tree solve's count, articulated-body regions included (:func:`_merge_ops`); ``nd``:
    the block size."""
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



# ------------------------------------------------------- index-3's extra rows


def _element_ends(m: Model, e: int) -> tuple[int, int]:
    """(pred, succ) bodies of force element ``e``'s tangent row: a joint spring's joint
    ends; a spring's bodies, the ground end (-1) first (the tree's succ is a body)."""
    if m.f_type[e] == F_JOINT_SPRING:
        j = m.f_joint[e]
        return int(m.pred[j]), int(m.succ[j])
    b1, b2 = int(m.f_body[e, 0]), int(m.f_body[e, 1])
    return (b2, b1) if b2 < 0 else (b1, b2)


def stiff_elements(m: Model) -> tuple[np.ndarray, np.ndarray]:
    """The force elements with stiffness or damping, which enter the Newton tangent as rows
    of the tree (kernels.stiffness_rows) between their two bodies: their indices and their
    ends (k, 2), pred first (:func:`_element_ends`)."""
    s_elem = np.flatnonzero(((m.f_type == F_SPRING) | (m.f_type == F_JOINT_SPRING))
                            & ((m.f_params[:, 0] > 0.0) | (m.f_params[:, 1] > 0.0))).astype(np.int64)
    return s_elem, np.array([_element_ends(m, e) for e in s_elem], dtype=np.int64).reshape(-1, 2)


def index3_tree(m: Model, ends: np.ndarray, threads: int, balanced=None):
    """The tree ``index3`` solves over for a run on ``threads`` threads: the
    balanced tree over the joints and the stiff elements' rows ``ends`` (``balanced``,
    when the caller has built it); on one thread an open mechanism without such rows is
    assembled tips first where that counts fewer operations (one ``Phi`` block per merge
    instead of three; docs/index3.md, "Timing").  The elements' rows are extra joints
    across the tree: those keep the balanced tree."""
    tree = build_assembly_tree(m, extra=ends) if balanced is None else balanced
    if not len(ends) and threads == 1:
        tree = cheaper_tree(m, m.nc_j, 1, balanced=tree, nd=7, regions=False)
    return tree


