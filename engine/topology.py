"""Topology: loops, degrees of freedom, redundant constraints.

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
equation (a joint-space velocity row, docs/file-format.md, "Mechanism file") to ``m`` and to the
rows whose rank is taken: ``DOF = nv - rank([K; K_g])``; so does each driver (its row
``e_J``, docs/file-format.md, "Drivers"): a mechanism whose drivers leave DOF = 0 is
kinematically driven.

The assembly tree the tree formulations solve over is :mod:`.assembly`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import config
from .constraints import (all_constraints, con_arrays, constraint_jacobian, coupling_rows, coupling_twist_rows,
                          driver_twist_rows)
from .kinematics import fk_positions, kin_arrays, motion_subspace
from .assembly import (AssemblyTree, articulated_regions, build_assembly_tree, cheaper_tree, index3_tree,
                       merge_operations, parallel_operations, serial_assembly_tree, stiff_elements,
                       subtree_partition)
from .model import TYPE_NAME, Model
from .threads import run_threads


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
    Jac = np.vstack([Jac, coupling_twist_rows(model, x, R, P), driver_twist_rows(model, x, R, P)])
    n, m = model.nb, model.nc + model.ng + model.nd
    rank = _rank(Jac) + n  # Euler-parameter normalisations: one independent row per body
    return 7 * n, m + n, 7 * n - rank, m + n - rank


class Subassemblies(NamedTuple):
    """What :func:`subassemblies` counts per merge of an assembly tree."""

    #: (n_merges,) the merge's interface rows that depend on the rows merged below it
    redundant: np.ndarray
    #: (n_merges,) the subassembly the merge makes: its distance from a singular
    #: configuration of its own, the least over its merges of their rows' smallest kept
    #: singular value on the motions their parts still have, over the rows' scale
    conditioning: np.ndarray


def subassemblies(model: Model, tree: AssemblyTree) -> Subassemblies:
    """Each merge's redundant rows and its subassembly's conditioning, at the file's
    configuration (where every loop closes).

    A merge's interface rows act on the motions its two children still have: with ``N``
    an orthonormal basis of those (the null space of the children's joint rows on their
    bodies' twists; 6 x 6 identity for a body), the rows' Jacobian there is ``A = G N``.
    Its rank -- singular values over ``config.RANK_RTOL`` of the rows' own scale, their
    largest norm (relative to ``A``'s largest singular value, round-off would count as rank
    where every row of a merge is redundant) -- is the rank
    of the merge's ``G Phi G^T`` (the same rows on the same motions, weighted by a
    positive definite compliance), its rows less that rank are the merge's redundant
    rows, and ``N V_0`` (``V_0`` the right singular vectors of the zero singular values)
    is the merged subassembly's own basis.  The ranks of the merges add up to the rank of
    the mechanism's joint rows, so the redundant rows to the mechanism's redundant closure
    equations.  The rank bound of ``dca``'s and ``hdca``'s merges (docs/derivations.md,
    "Redundant rows"): the merges' ``G Phi G^T`` carry the round-off of the compliances
    below them, which a pivot test cannot tell from a row that is nearly, not exactly,
    dependent.  A merge's conditioning is the smallest kept singular value of ``A`` over
    the rows' scale, and a subassembly's the least of its merges': its distance from a
    singular configuration of its own."""
    nb, nm = tree.nb, tree.n_merges
    red, cond = np.zeros(nm, dtype=np.int64), np.ones(nm)
    if not model.ncut:
        return Subassemblies(red, cond)
    x, R, _, _ = _frame_at_zero(model)
    Ga, Gb = np.zeros((model.nc, 6)), np.zeros((model.nc, 6))
    all_constraints(con_arrays(model), x, R, np.zeros((nb, 6)), np.zeros(model.nc), Ga, Gb, np.zeros(model.nc))
    bodies: list = [[b] for b in range(nb)] + [None] * nm
    basis: list = [np.eye(6) for _ in range(nb)] + [None] * nm
    worst = np.ones(nb + nm)
    for m in range(nm):  # merges level by level: a merge's children are made before it
        left, right = tree.left[m], tree.right[m]
        node = nb + m
        parts = [left] if right < 0 else [left, right]
        bodies[node] = [b for p in parts for b in bodies[p]]
        at = {b: k for k, b in enumerate(bodies[node])}
        N = basis[left] if right < 0 else _block_diagonal(basis[left], basis[right])
        joints = tree.if_joint[tree.if_start[m]:tree.if_start[m + 1]]
        joints = joints[joints < model.nj]  # index3's force elements' rows (joints nj..): compliant, never redundant
        A = np.zeros((int(model.nc_j[joints].sum()), N.shape[1]))
        scale, r = 0.0, 0  # the largest row's norm on the bodies' twists: the rows' own scale
        for j in joints:
            rows = slice(model.c_adr[j], model.c_adr[j] + model.nc_j[j])
            out = slice(r, r + model.nc_j[j])
            A[out] += Gb[rows] @ N[6 * at[model.succ[j]]:6 * at[model.succ[j]] + 6]
            lengths = (Gb[rows] ** 2).sum(axis=1)
            if model.pred[j] >= 0:
                A[out] += Ga[rows] @ N[6 * at[model.pred[j]]:6 * at[model.pred[j]] + 6]
                lengths += (Ga[rows] ** 2).sum(axis=1)
            scale = max(scale, float(np.sqrt(lengths.max(initial=0.0))))
            r += model.nc_j[j]
        if A.size:
            _, sv, vt = np.linalg.svd(A, full_matrices=True)
            rank = int(np.sum(sv > config.RANK_RTOL * scale))
            basis[node] = N @ vt[rank:].T
        else:  # no rows (a free joint), or nothing left to move
            sv, rank, basis[node] = np.ones(1), 0, N
        red[m] = A.shape[0] - rank
        worst[node] = min(sv[rank - 1] / scale if rank else 1.0, worst[left], worst[right] if right >= 0 else 1.0)
        cond[m] = worst[node]
        for p in parts:  # each basis is merged once
            basis[p] = None
    return Subassemblies(red, cond)


def _block_diagonal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros((a.shape[0] + b.shape[0], a.shape[1] + b.shape[1]))
    out[:a.shape[0], :a.shape[1]] = a
    out[a.shape[0]:, a.shape[1]:] = b
    return out


def well_conditioned_tree(model: Model, chosen: AssemblyTree, ground_last: bool = False):
    """(the tree ``dca`` and ``hdca`` assemble over, its :func:`subassemblies` or None
    without loops): ``chosen`` (:func:`cheaper_tree`'s), unless a subassembly of it is
    nearer than ``config.SUBASSEMBLY_RTOL`` to a singular configuration of its own and the
    tips-first tree's (:func:`serial_assembly_tree`, ``ground_last`` as there) are ten
    times further: its compliance would carry round-off of order eps / s^2 into the merge
    above it (docs/formulations.md, hdca, "nearly singular subassemblies")."""
    if not model.ncut:
        return chosen, None
    sub = subassemblies(model, chosen)
    worst = float(sub.conditioning.min())
    if worst >= config.SUBASSEMBLY_RTOL:
        return chosen, sub
    tips_first = serial_assembly_tree(model, ground_last)
    alt = subassemblies(model, tips_first)
    if float(alt.conditioning.min()) >= 10.0 * worst:
        return tips_first, alt
    return chosen, sub


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
    drivers: int = 0  # driver equations (one per driver)

    def _assembly_orders(self, model: Model) -> dict:
        """Which trees ``dca`` and ``hdca`` assemble over on one and on two threads
        (:func:`cheaper_tree`), how many bodies their articulated-body regions hold (on one
        thread ``dca``'s take in their joints to ground: ``dca_region_bodies``), and
        the operation counts of the matrix pass (on two threads: of its busiest thread)
        against the balanced tree's; ``index3``: whether it assembles tips first on one
        thread (:func:`assembly.index3_tree`), and its counts (7-blocks)."""
        def region_bodies(tree, grounded=False):
            partition = tree.partition or subtree_partition(tree)
            return sum(len(r) for r in articulated_regions(model, tree, partition, grounded)[1])

        def tree(threads, ground_last=False):
            return well_conditioned_tree(model, cheaper_tree(model, model.nc_j, threads=threads,
                                                             balanced=self.assembly, ground_last=ground_last),
                                         ground_last)[0]

        serial = tree(1)
        dca_serial = tree(1, ground_last=True)
        # below PARALLEL_MIN_BODIES a run has one thread whatever the settings
        parallel = run_threads(model.nb, 2) > 1
        two = tree(2) if parallel else serial
        ends = stiff_elements(model)[1]  # with these rows index3 keeps the balanced tree
        i3 = self.assembly if len(ends) else index3_tree(model, ends, 1, self.assembly)
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
            "joint_equations": self.equations - self.n_bodies - self.couplings - self.drivers,
            "coupling_equations": self.couplings,
            "driver_equations": self.drivers,
            "normalisation_equations": self.n_bodies,
            "dof": self.dof,
            "redundant_constraints": self.redundant,
            "tree_coordinates": {"nq": self.tree_parameters, "nv": self.tree_coordinates},
            "loop_closure": {"equations": self.loop_equations, "rank": self.loop_rank},
            "couplings": [{"name": c.name, "type": c.type, "driver": c.driver, "driven": c.driven,
                           "ratio": c.ratio} for c in model.spec.couplings],
            "drivers": [{"name": d.name, "joint": d.joint, "motion": d.motion.kind} for d in model.spec.drivers],
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
    # and so do the drivers' rows e_J
    Kd = np.zeros((model.nd, model.nv))
    Kd[np.arange(model.nd), model.v_adr[model.d_joint]] = 1.0
    rank = (_rank(np.vstack([K, coupling_rows(model, model.q_zero())[1], Kd])) if model.ng or model.nd
            else loop_rank)
    n = model.nb
    m = model.nc + model.ng + model.nd
    loops = []
    for j in range(model.nb, model.nj):
        loops.append(tuple("ground" if b < 0 else model.body_names[b] for b in loop_bodies(model, j)))
    return Topology(
        n_bodies=n, n_joints=model.nj, n_loops=model.ncut,
        cut_joints=tuple(model.joint_names[j] for j in range(model.nb, model.nj)),
        loops=tuple(loops),
        coordinates=7 * n, equations=m + n, dof=model.nv - rank, redundant=m_cut + model.ng + model.nd - rank,
        tree_coordinates=model.nv, tree_parameters=model.nq, loop_equations=m_cut, loop_rank=loop_rank,
        assembly=build_assembly_tree(model), couplings=model.ng, drivers=model.nd,
    )
