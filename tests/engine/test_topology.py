"""Topology counts against hand counts, and the assembly tree's invariants."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.mechfile import load
from linkwork.engine.model import build_model
from linkwork.engine.assembly import (_merge_ops, articulated_regions, build_assembly_tree, cheaper_tree,
                                      merge_operations, parallel_operations, serial_assembly_tree,
                                      two_part_assembly_tree)
from linkwork.engine.topology import absolute_counts, analyze

from .conftest import EXAMPLES, example_path

# Hand counts (docs/examples.md).  Absolute coordinates: n bodies -> 7n coordinates;
# equations = joint equations (revolute/prismatic 5, cylindrical/universal 4,
# spherical 3, fixed 6) + n normalisations.  DOF from mobility (planar Gruebler
# 3n - 2j for planar revolute mechanisms), redundant = equations - (7n - DOF).
HAND = {
    # name: (bodies, joints, loops, DOF, redundant)
    "spatial-double-pendulum": (2, 2, 0, 6, 0),  # 2 x 3 rotations
    "parallelogram-fourbar": (3, 4, 1, 1, 3),  # paper 000 4.3: 21 coords, 23 eqs, 3 redundant
    "fourbar-crank-rocker": (3, 4, 1, 1, 3),  # planar loop: 3 out-of-plane equations redundant
    "chain-128-spherical": (128, 128, 0, 384, 0),
    "loop-4": (4, 5, 1, 2, 3),  # 3*4 - 2*5 = 2
    "loop-8": (8, 9, 1, 6, 3),  # 3*8 - 2*9 = 6
    "double-loop-8": (8, 10, 2, 4, 6),  # 3*8 - 2*10 = 4; two planar loops
    "fivebar-redundant": (6, 8, 2, 2, 6),  # 3*6 - 2*8 = 2
    "fivebar": (4, 5, 1, 2, 3),  # 3*4 - 2*5 = 2
    "ladder-1": (3, 4, 1, 2, 2),  # 2 DOF whatever L; 14L+4 equations, rank 12L+4
    "ladder-2": (5, 7, 2, 2, 4),
    "ladder-4": (9, 13, 4, 2, 8),
    "ladder-8": (17, 25, 8, 2, 16),
    "ladder-16": (33, 49, 16, 2, 32),
    "chain-8-revolute": (8, 8, 0, 8, 0),
    "chain-6-universal-spatial": (6, 6, 0, 12, 0),
    "chain-5-spherical-spatial": (5, 5, 0, 15, 0),
    "slider-crank": (3, 4, 1, 1, 3),  # 3*3 - 2*4 = 1
    "joint-zoo": (6, 6, 0, 9, 0),  # 1 + 1 + 2 + 2 + 3 + 0
    "geared-arm": (3, 3, 0, 2, 0),  # 3 revolute freedoms - 1 gear
    "fourbar-geared": (4, 5, 1, 1, 3),  # 3*4 - 2*5 - 1 gear = 1
    "sprung-parallelogram": (3, 4, 1, 1, 3),  # the parallelogram four-bar with a torsion spring
    "slider-crank-driven": (3, 4, 1, 0, 3),  # 3*3 - 2*4 - 1 driver = 0: kinematically driven
}


def test_every_example_has_a_hand_count():
    assert sorted(p.name.replace(".mech.json", "") for p in EXAMPLES) == sorted(HAND)


@pytest.mark.parametrize("name", sorted(HAND))
def test_counts_match_hand_counts(name):
    model = build_model(load(example_path(name)))
    topo = analyze(model)
    nb, nj, loops, dof, red = HAND[name]
    assert (topo.n_bodies, topo.n_joints, topo.n_loops, topo.dof, topo.redundant) == (nb, nj, loops, dof, red)
    assert topo.coordinates == 7 * nb
    assert topo.equations == model.nc + model.ng + model.nd + nb  # one equation per gear and per driver
    if nb <= 40:
        coords, eqs, adof, ared = absolute_counts(model)
        assert (coords, eqs, adof, ared) == (7 * nb, model.nc + model.ng + model.nd + nb, dof, red)


def test_paper000_fourbar_counts_as_in_the_paper():
    topo = analyze(build_model(load(example_path("parallelogram-fourbar"))))
    assert (topo.coordinates, topo.equations, topo.dof, topo.redundant) == (21, 23, 1, 3)


@pytest.mark.parametrize("cells", range(1, 17))
def test_every_ladder_has_two_dof(cells):
    topo = analyze(build_model(gen.ladder(cells)))
    assert topo.dof == 2
    assert topo.n_bodies == 2 * cells + 1
    # paper 002: n = 4L + 2 coordinates with L phantom bodies, m = 4L independent equations
    assert topo.tree_coordinates + cells == 4 * cells + 2


@pytest.mark.parametrize("seed", range(12))
def test_reduced_and_absolute_counts_agree_on_random_mechanisms(seed):
    model = build_model(gen.random_mechanism(seed, 6, loops=seed % 4))
    topo = analyze(model)
    _, _, dof, red = absolute_counts(model)
    assert (topo.dof, topo.redundant) == (dof, red)


def _check_tree(model, tree=None):
    tree = analyze(model).assembly if tree is None else tree
    nb = model.nb
    seen_nodes = set()
    eliminated = []
    for lvl in range(tree.n_levels):
        touched = set()
        for m in range(tree.level_start[lvl], tree.level_start[lvl + 1]):
            l, r = tree.left[m], tree.right[m]
            for c in (l, r):
                if c >= 0:
                    assert c not in seen_nodes, "a node merged twice"
                    assert c not in touched, "two merges of one level share a node"
                    seen_nodes.add(c)
                    touched.add(c)
            ifj = tree.if_joint[tree.if_start[m]:tree.if_start[m + 1]]
            eliminated += list(ifj)
            node = nb + m
            hs = tree.h_joint[tree.node_h_start[node]:tree.node_h_start[node] + tree.node_nh[node]]
            assert not set(hs) & set(ifj)
    # every joint is eliminated exactly once; roots have no handles left
    assert sorted(eliminated) == list(range(model.nj))
    assert all(tree.node_nh[r] == 0 for r in tree.roots)
    # the roots together hold every body once
    bodies = sorted(b for r in tree.roots for b in tree.body_sets[r])
    assert bodies == list(range(nb))
    return tree


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 64, 100, 128])
def test_chain_tree_is_balanced(n):
    tree = _check_tree(build_model(gen.chain(n, "spherical")))
    # one ground level + ceil(log2 n) merge levels; two handles at most
    assert tree.n_levels == 1 + math.ceil(math.log2(n))
    assert tree.max_handles() <= 2


@pytest.mark.parametrize("spec", [gen.fourbar(), gen.double_loop(), gen.fivebar(3), gen.ladder(5),
                                  gen.joint_zoo()] + [gen.random_mechanism(s, 9, loops=3) for s in range(8)],
                         ids=lambda s: s.name)
def test_assembly_tree_invariants(spec):
    _check_tree(build_model(spec))


SERIAL_CASES = ([gen.chain(n, "revolute") for n in (1, 2, 7, 64)] + [gen.joint_zoo(), gen.fourbar(), gen.ladder(5)]
                + [gen.random_mechanism(s, 9, loops=s % 3) for s in range(10)])


@pytest.mark.parametrize("spec", SERIAL_CASES, ids=lambda s: s.name)
def test_serial_tree_invariants(spec):
    """The tips-first tree is a valid assembly tree (every joint eliminated once, roots
    without handles, every body in one root), one merge per level."""
    tree = _check_tree(build_model(spec), serial_assembly_tree(build_model(spec)))
    assert tree.n_levels == tree.n_merges


@pytest.mark.parametrize("n", [2, 8, 100])
def test_serial_chain_merges_have_one_external_handle(n):
    """A chain assembled tips first: each subassembly is the chain beyond one joint, so it
    has that joint as its only handle -- and its matrix pass costs fewer operations than
    the balanced tree's (whose subassemblies have two handles)."""
    model = build_model(gen.chain(n, "spherical"))
    tree = serial_assembly_tree(model)
    assert all(tree.node_nh[model.nb + m] <= 1 for m in range(tree.n_merges))
    if n > 2:  # two bodies: the two trees are the same
        assert merge_operations(tree, model.nc_j) < merge_operations(build_assembly_tree(model), model.nc_j)


def test_the_cheaper_tree_is_another_only_for_open_mechanisms():
    chain = build_model(gen.chain(16, "revolute"))
    assert cheaper_tree(chain, chain.nc_j, threads=1).n_levels == chain.nb  # tips first: one merge per level
    assert cheaper_tree(chain, chain.nc_j, threads=2).partition  # two halves in parallel
    for spec in (gen.fourbar(), gen.ladder(16)):  # loops keep the balanced tree (the singularity watch's)
        model = build_model(spec)
        balanced = build_assembly_tree(model)
        for threads in (1, 2):
            assert np.array_equal(cheaper_tree(model, model.nc_j, threads=threads).left, balanced.left)
    # a bushy tree (body 0 has four children, body 1 three): tips first carries each body's
    # child joints as handles while it merges the children in turn, 6 % more operations
    bush = build_model(gen.random_mechanism(12, 9, loops=0))
    balanced = build_assembly_tree(bush)
    assert merge_operations(serial_assembly_tree(bush), bush.nc_j) > merge_operations(balanced, bush.nc_j)
    assert np.array_equal(cheaper_tree(bush, bush.nc_j, threads=1).left, balanced.left)


TWO_PART_CASES = ([gen.chain(n, "revolute") for n in (4, 9, 64, 1000)] + [gen.joint_zoo()]
                  + [gen.random_mechanism(s, 30, loops=0) for s in range(8)])


@pytest.mark.parametrize("spec", TWO_PART_CASES, ids=lambda s: s.name)
def test_two_part_tree(spec):
    """Two sides of about half the bodies, every merge on exactly one of them except the
    last, which joins a split part (none when whole parts hanging from ground balance the
    sides); a chain's subassemblies keep one handle each."""
    model = build_model(spec)
    tree = _check_tree(model, two_part_assembly_tree(model))
    sub_start, sub_merges, top = tree.partition
    assert len(sub_start) == 3 and len(top) <= 1
    assert sorted(list(sub_merges) + list(top)) == list(range(tree.n_merges))
    halves = [set().union(*(tree.body_sets[model.nb + m] for m in sub_merges[sub_start[k]:sub_start[k + 1]]))
              for k in range(2)]
    assert not halves[0] & halves[1] and len(halves[0] | halves[1]) == model.nb
    assert abs(len(halves[0]) - len(halves[1])) <= model.nb // 3
    if spec.name.endswith("chain"):
        assert abs(len(halves[0]) - len(halves[1])) <= 1
        assert all(tree.node_nh[model.nb + m] <= 1 for m in range(tree.n_merges))
    # a side's merges come children first: each child is made before its parent merge;
    # the last merge joins one node of each side
    for m in top:
        assert {tree.left[m], tree.right[m]} <= {model.nb + x for x in sub_merges}
    for k in range(2):
        done = set(range(model.nb)) | {-1}
        for m in sub_merges[sub_start[k]:sub_start[k + 1]]:
            assert tree.left[m] in done and tree.right[m] in done
            done.add(model.nb + m)


def test_two_threads_take_the_two_part_tree_where_its_busier_thread_does_less():
    """The tips-first side of a two-part tree is one articulated-body region, whose
    recursion costs a revolute body 255 operations where the merges cost 1661: the
    balance puts 90 % of a revolute chain there (60 % of a spherical one, 471 against
    765), and its busier thread then does fewer operations than one thread over the
    tips-first tree -- which four threads take too, the balanced tree's regions being
    small."""
    for kind, share in (("revolute", 0.9), ("spherical", 0.6)):
        chain = build_model(gen.chain(1024, kind))
        two = cheaper_tree(chain, chain.nc_j, threads=2)
        sub_start = two.partition[0]
        assert len(sub_start) == 3
        _, regions = articulated_regions(chain, two, two.partition)
        assert [len(r) for r in regions] == [sub_start[1] + 1]  # side A's merges join its bodies
        assert abs(len(regions[0]) - share * chain.nb) <= 1
        serial = serial_assembly_tree(chain)
        assert parallel_operations(two, chain.nc_j, 2, chain) < merge_operations(serial, chain.nc_j, model=chain)
        for other in (build_assembly_tree(chain), serial, two_part_assembly_tree(chain)):
            assert parallel_operations(two, chain.nc_j, 2, chain) <= parallel_operations(other, chain.nc_j, 2, chain)
        assert np.array_equal(cheaper_tree(chain, chain.nc_j, threads=4).left, two.left)
    for spec in (gen.fourbar(), gen.ladder(40)):  # loops: the balanced tree
        assert two_part_assembly_tree(build_model(spec)) is None
        assert not cheaper_tree(build_model(spec), build_model(spec).nc_j, threads=2).partition


REGION_CASES = ([gen.chain(n, "revolute") for n in (2, 7, 64)] + [gen.joint_zoo(), gen.fourbar(), gen.ladder(5)]
                + [gen.random_mechanism(s, 12, loops=s % 3) for s in range(12)])


@pytest.mark.parametrize("spec", REGION_CASES, ids=lambda s: s.name)
def test_articulated_regions(spec):
    """Over every tree a tree solve may take, a region is a whole subtree of the spanning
    tree (two bodies or more, none at a cut joint) whose only handle is the joint to its
    root, on the root's side; its merges are exactly those under its head, all in one part
    of the tree's cut; regions are disjoint; and the merges they skip cost nothing."""
    from linkwork.engine.assembly import subtree_partition

    model = build_model(spec)
    at_cut = {b for j in range(model.nb, model.nj) for b in (model.pred[j], model.succ[j]) if b >= 0}
    trees = [build_assembly_tree(model), serial_assembly_tree(model)] + \
        [t for t in (two_part_assembly_tree(model),) if t is not None]
    for tree in trees:
        nb = tree.nb
        partition = tree.partition or subtree_partition(tree)
        part = {int(m): k for k in range(len(partition[0]) - 1)
                for m in partition[1][partition[0][k]:partition[0][k + 1]]}
        region_of, regions = articulated_regions(model, tree, partition)
        seen = set()
        for r, bodies in enumerate(regions):
            head = int(np.flatnonzero(region_of == r)[0])
            root = bodies[-1]
            subtree = {root} | {b for b in range(nb) if _is_below(model, b, root)}
            assert set(bodies) == subtree and len(bodies) >= 2 and not set(bodies) & at_cut
            assert bodies == sorted(bodies, reverse=True)  # tips first
            assert set(tree.body_sets[nb + head]) == subtree
            s0 = tree.node_h_start[nb + head]
            assert tree.node_nh[nb + head] == 1 and tree.h_joint[s0] == root and tree.h_side[s0] == 1
            under = _merges_under(tree, head)
            assert all(region_of[m] == -2 for m in under if m != head)
            assert len({part.get(m, -1) for m in under}) == 1
            assert not set(bodies) & seen
            seen |= set(bodies)
        heads = np.flatnonzero(region_of >= 0)
        assert (region_of == -2).sum() == sum(len(_merges_under(tree, int(m))) - 1 for m in heads)
        ops = _merge_ops(tree, model.nc_j, 6, model, partition)
        assert (ops[region_of == -2] == 0).all() and (ops[region_of >= 0] > 0).all()


def _is_below(model, b, root):
    while b >= 0:
        b = model.parent[b]
        if b == root:
            return True
    return False


def _merges_under(tree, m):
    out, stack = [], [m]
    while stack:
        k = stack.pop()
        out.append(k)
        stack += [c - tree.nb for c in (tree.left[k], tree.right[k]) if c >= tree.nb]
    return out


def test_a_chain_on_one_thread_is_one_region():
    """Tips first, a chain's root merges with ground, then with the rest: one region."""
    chain = build_model(gen.chain(100, "revolute"))
    tree = cheaper_tree(chain, chain.nc_j, threads=1)
    _, regions = articulated_regions(chain, tree)
    assert regions == [list(range(99, 0, -1))]


def test_info_cli_json_and_text():
    path = str(example_path("parallelogram-fourbar"))
    out = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "info", path, "--json"],
                         capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    assert (d["dof"], d["redundant_constraints"], d["absolute_coordinates"], d["constraint_equations"]) == \
        (1, 3, 21, 23)
    assert d["loops"] == 1 and len(d["cut_joints"]) == 1
    assert d["assembly_tree"]["levels"] >= 2
    text = subprocess.run([sys.executable, "-m", "linkwork.engine.cli", "info", path], capture_output=True,
                          text=True, check=True).stdout
    assert "DOF            1" in text and "redundant      3" in text


@pytest.mark.parametrize("name,tips_first", [("chain-8-revolute", True), ("random-springs", False),
                                             ("parallelogram-fourbar", False)])
def test_info_says_which_tree_index3_assembles_on_one_thread(name, tips_first):
    """``linkwork info``'s index3 entry is the tree the formulation builds on one thread:
    tips first on an open chain, with its operation counts; balanced on a loop, and on an
    open tree whose springs and dampers put tangent rows across the tree."""
    from linkwork.engine.assembly import stiff_elements
    from linkwork.engine.formulations.index3 import Index3Formulation
    from linkwork.engine.simulation import Settings, Simulation

    spec = gen.random_mechanism(3, n_bodies=8) if name == "random-springs" else load(example_path(name))
    model = build_model(spec)
    if name == "random-springs":
        assert model.ncut == 0 and len(stiff_elements(model)[0]) > 0
    d = analyze(model).as_dict(model)["serial_assembly"]["index3"]
    f = Index3Formulation(model, Simulation(model, Settings(formulation="index3", threads=1)).settings)
    balanced = build_assembly_tree(model, extra=stiff_elements(model)[1])
    tips = not (np.array_equal(f.tree.left, balanced.left) and np.array_equal(f.tree.right, balanced.right))
    assert d["tips_first"] == tips == tips_first
    if tips:
        assert (f.tree.node_nh[f.tree.nb:] <= 1).all()  # a chain: one handle per merge
        assert d["operations"] == merge_operations(f.tree, model.nc_j, 7)
        assert d["balanced_operations"] == merge_operations(balanced, model.nc_j, 7)


def _subassembly_redundancy(model, tree):
    """The reference of :func:`topology.subassemblies`' count: each subassembly's redundant
    rows from an SVD of its joints' full absolute Jacobian on its bodies' columns, a merge's
    those of its subassembly less its children's (slow: a dense SVD per merge)."""
    from linkwork.engine import config
    from linkwork.engine.constraints import constraint_jacobian
    from linkwork.engine.topology import _frame_at_zero

    x, R, _, _ = _frame_at_zero(model)
    jac = constraint_jacobian(model, x, R)[0]
    nb, nm = tree.nb, tree.n_merges
    bodies, joints = [[b] for b in range(nb)] + [None] * nm, [[] for _ in range(nb)] + [None] * nm
    red, out = np.zeros(nb + nm, dtype=np.int64), np.zeros(nm, dtype=np.int64)
    for m in range(nm):
        left, right, node = tree.left[m], tree.right[m], nb + m
        parts = [left] if right < 0 else [left, right]
        bodies[node] = [b for p in parts for b in bodies[p]]
        joints[node] = [j for p in parts for j in joints[p]] + list(tree.if_joint[tree.if_start[m]:tree.if_start[m + 1]])
        rows = [r for j in joints[node] for r in range(model.c_adr[j], model.c_adr[j] + model.nc_j[j])]
        cols = [6 * b + c for b in bodies[node] for c in range(6)]
        sv = np.linalg.svd(jac[np.ix_(rows, cols)], compute_uv=False) if rows else np.zeros(0)
        red[node] = len(rows) - int(np.sum(sv > config.RANK_RTOL * sv[0])) if len(sv) else 0
        out[m] = red[node] - sum(red[p] for p in parts)
    return out


@pytest.mark.parametrize("seed", range(40000, 40060))
def test_each_merges_redundant_rows_are_those_of_the_full_jacobians(seed):
    """topology.subassemblies counts each merge's redundant rows on the motions its parts
    still have (an SVD of the interface rows alone); the full absolute Jacobians of the
    subassemblies count the same, on the balanced and on the tips-first tree, and they
    add up to the mechanism's redundant closure equations.  (A tolerance relative to the
    interface rows' own largest singular value counted round-off as rank where every row
    of a merge is redundant, as on seed 40038's tips-first tree.)"""
    from linkwork.engine.assembly import serial_assembly_tree
    from linkwork.engine.topology import subassemblies

    model = build_model(gen.random_mechanism(seed, n_bodies=4 + seed % 17, loops=1 + seed % 5))
    top = analyze(model)
    for tree in (build_assembly_tree(model), serial_assembly_tree(model)):
        counted = subassemblies(model, tree).redundant
        assert np.array_equal(counted, _subassembly_redundancy(model, tree))
        assert counted.sum() == top.loop_equations - top.loop_rank
