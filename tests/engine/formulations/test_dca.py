"""DCA against the dense reference at random states of random mechanisms."""

import numba
import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine import threads as threads_module
from linkwork.engine.formulations import dca_chain, dca_kernels, tree_formulation
from linkwork.engine.errors import SimulationError
from linkwork.engine.formulations.base import NO_RATES
from linkwork.engine.kinematics import kin_arrays, normalize_quaternions
from linkwork.engine.mechfile import spec_from_dict, spec_to_dict
from linkwork.engine.model import FIXED, REVOLUTE, SPHERICAL, UNIVERSAL, build_model
from linkwork.engine.simulation import Settings, Simulation


def _pair(spec):
    model = build_model(spec)
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    dca = Simulation(model, Settings(formulation="dca")).formulation
    return model, dense, dca


def _conditioning(dense, y):
    """Smallest non-redundant singular value of the whitened loop Jacobian over the largest."""
    if not dense.ncr:
        return 1.0
    dense.rhs(0.0, y)
    s = np.linalg.svd(dense._whitened_K(dense._cholesky()), compute_uv=False)
    live = s[s > 1e-12 * s[0]]
    return float(live[-1] / s[0])


def _random_tree_state(model, rng):
    q = model.q_zero() + 0.0
    q += rng.normal(scale=0.6, size=model.nq)
    normalize_quaternions(kin_arrays(model), q)
    return np.concatenate([q, rng.normal(size=model.nv)])


CASES = (
    [("tree", s, dict(n_bodies=int(4 + s % 9), loops=0)) for s in range(24)]
    + [("loop", s, dict(n_bodies=7, loops=1)) for s in range(16)]
    + [("coupled", s, dict(n_bodies=8, loops=2 + s % 2)) for s in range(16)]
)


def conditioned_bound(s: float, n_rows: int) -> float:
    """The agreement bound at loop conditioning ``s`` with ``n_rows`` closure rows: 1e-9,
    or near a singular configuration (s <= 1e-2) the normal-equations round-off bound
    ``n eps / s^2`` if larger.  The tree merges form ``G Phi G^T``, so their round-off
    grows like ``gamma_n kappa^2`` with ``gamma_n ~ n eps`` (the classical bound for a
    Cholesky solve of normal equations of dimension n; docs/derivations.md, "DCA").

    An earlier bound, ``1e-16 / s^2``, had a constant below the unit round-off (1.1e-16)
    and no dimension factor: it held on one machine by the luck of its rounding and
    failed on another (coupled-14: 1.4e-6 = 2.1 u / s^2 on an AMD EPYC, the same
    before and after any change to the kernels)."""
    if s > 1e-2:
        return 1e-9
    return max(1e-9, max(n_rows, 1) * np.finfo(float).eps / s**2)


@pytest.mark.parametrize("kind,seed,kw", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_accelerations_agree_with_dense_at_random_states(kind, seed, kw):
    """Joint accelerations agree to 1e-9 relative.

    Trees get fully random (q, v); loops their random, closed initial configuration with
    random velocities projected onto the constraints.  A random loop can land close to a
    singular configuration (loop Jacobian conditioning s << 1); there the DCA's Schur
    complements, like any normal-equations solve, amplify round-off by ~1/s^2, so for
    those draws the bound is :func:`conditioned_bound`.
    """
    s, rel, n_rows = random_state_error(kind, seed, kw)
    assert rel < conditioned_bound(s, n_rows), f"rel {rel:.2e}, conditioning {s:.1e}, {n_rows} closure rows"


def random_case(kind, seed, kw):
    return gen.random_mechanism(1000 * (kind == "coupled") + 500 * (kind == "loop") + seed, **kw)


def random_state_error(kind, seed, kw):
    """(loop conditioning, relative joint-acceleration error of dca against dense, number
    of closure rows) at the case's random state (also printed by benchmarks/agreement.py)."""
    model, dense, dca = _pair(random_case(kind, seed, kw))
    y = dense.initial_state()
    if kind == "tree":
        y = _random_tree_state(model, np.random.default_rng(seed))
    s = _conditioning(dense, y)
    a_ref = dense.rhs(0.0, y)[model.nq:]
    a = dca.rhs(0.0, y)[model.nq:]
    return s, np.abs(a - a_ref).max() / max(1.0, np.abs(a_ref).max()), dense.ncr


def test_most_random_loops_are_well_conditioned():
    """The agreement test above is mostly at the strict 1e-9 bound."""
    strict = 0
    for kind, seed, kw in CASES:
        if kind == "tree":
            continue
        model, dense, _ = _pair(random_case(kind, seed, kw))
        strict += _conditioning(dense, dense.initial_state()) > 1e-2
    assert strict >= 26  # of 32


@pytest.mark.parametrize("spec", [gen.chain(6, "universal", planar=False), gen.joint_zoo(), gen.ladder(3),
                                  gen.double_loop(), gen.random_mechanism(7, 6, loops=0)],
                         ids=lambda s: s.name)
def test_reactions_agree_with_dense(spec):
    """Same constraint wrenches where they are unique; where closure equations are redundant
    (planar loops in 3-D) only their resultant on each body is unique."""
    from linkwork.engine.topology import analyze

    model, dense, dca = _pair(spec)
    y = dense.initial_state()
    ed, ec = dense.evaluate(0.0, y), dca.evaluate(0.0, y)
    np.testing.assert_allclose(ec.acc, ed.acc, atol=1e-9 * max(1.0, np.abs(ed.acc).max()))
    if analyze(model).redundant == 0:
        scale = max(1.0, np.abs(ed.reactions).max())
        np.testing.assert_allclose(ec.reactions, ed.reactions, atol=1e-9 * scale)


def test_inconsistent_redundant_closure_is_not_a_silent_answer():
    """A weld closing a loop leaves one dependent closure equation; with velocities that
    violate the loop its right-hand side is inconsistent, and no multiplier can satisfy
    it: the DCA drops the dependent pivot and reports the residual instead of answering."""
    model, dense, dca = _pair(gen.random_mechanism(1, 7, loops=1))
    y = dca.initial_state()
    y[model.nq:] = np.random.default_rng(0).normal(size=model.nv)
    with pytest.raises(SimulationError, match="loop-closure"):
        dca.evaluate(0.0, y)
    with pytest.raises(SimulationError, match="loop-closure"):
        dense.evaluate(0.0, y)
    dca.evaluate(0.0, dca.initial_state())  # the consistent initial state is fine


def test_redundant_fivebar_solves_with_zero_multipliers_for_dependent_rows():
    model, dense, dca = _pair(gen.fivebar(3))
    y = dense.initial_state()
    a_ref = dense.rhs(0.0, y)[model.nq:]
    a = dca.rhs(0.0, y)[model.nq:]
    assert np.abs(a - a_ref).max() < 1e-10 * max(1.0, np.abs(a_ref).max())
    nm = dca.lay.ix.m_nr.shape[0]
    assert (dca.lay.Kr[:nm] < dca.lay.ix.m_nr).any()  # some merge saw dependent rows
    assert (dca.lay.Kr[nm:] < dca.lay.ix.m_nr).any()  # and bounds its rank by them


def test_baumgarte_reduces_drift():
    """DCA's drift with and without Baumgarte stabilisation, both measured: without the
    projection at output instants and the pipeline's monitor, which hold the loop or stop
    the run -- the drift is what is compared here."""
    model = build_model(gen.closed_loop(4))
    runs = {}
    for bg in (None, (10.0, 10.0)):
        sim = Simulation(model, Settings(formulation="dca", integrator="rk45", rtol=1e-6, atol=1e-6, t_end=3.0,
                                         dt=0.05, baumgarte=bg, monitor=False, projection=False))
        cols, rows = sim.run_all()
        runs[bg] = rows[:, cols.index("violation.position")].max()
    assert runs[(10.0, 10.0)] < 0.1 * runs[None]


def _balanced_tree_always(monkeypatch):
    """Make dca and hdca assemble over the balanced tree whatever the thread count."""
    from linkwork.engine.assembly import build_assembly_tree

    monkeypatch.setattr(tree_formulation, "cheaper_tree",
                        lambda model, rows, threads, balanced=None, ground_last=False: build_assembly_tree(model))


def _merges_only(monkeypatch):
    """Make dca and hdca assemble every node merge by merge (no articulated-body region)."""
    from linkwork.engine.formulations.tree_formulation import TreeFormulation

    monkeypatch.setattr(TreeFormulation, "articulated_regions", False)


@pytest.mark.parametrize("n", [100, 256])
def test_threads_give_identical_results_on_one_tree(n, monkeypatch):
    """One thread: plain body loops, and below 256 bodies an uncut tree (no parallel
    region); two: parallel loops over a cut tree.  Over the same (balanced) tree the
    arithmetic is the same.  (A chain on one thread is assembled over another tree, tips
    first: test_the_serial_tree_agrees_with_the_balanced_one.)"""
    _balanced_tree_always(monkeypatch)
    model = build_model(gen.chain(n, "spherical", planar=False))
    old = numba.get_num_threads()
    try:
        out = []
        for th in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            sim = Simulation(model, Settings(formulation="dca", threads=th))
            y = sim.formulation.initial_state()
            y[model.nq:] = np.random.default_rng(3).normal(size=model.nv)
            out.append(sim.formulation.rhs(0.0, y))
        assert np.array_equal(out[0], out[1])
    finally:
        numba.set_num_threads(old)


SERIAL_TREES = ([gen.chain(n, kind, planar=False) for n, kind in ((100, "spherical"), (40, "revolute"))]
                + [gen.joint_zoo()] + [gen.random_mechanism(s, 12, loops=0) for s in range(12)])


@pytest.mark.parametrize("form", ["dca", "hdca"])
@pytest.mark.parametrize("spec", SERIAL_TREES, ids=lambda s: s.name)
def test_the_serial_tree_agrees_with_the_balanced_one(form, spec, monkeypatch):
    """On one thread an open mechanism is assembled tips first when that costs fewer
    operations (assembly.cheaper_tree): another order of the same eliminations, so the
    same right-hand side up to round-off, at a random state.  Merges only: the regions
    assemble in another form (test_articulated_regions_agree_with_the_merges)."""
    from linkwork.engine.assembly import build_assembly_tree

    _merges_only(monkeypatch)
    model = build_model(spec)
    serial = Simulation(model, Settings(formulation=form, threads=1)).formulation
    _balanced_tree_always(monkeypatch)
    balanced = Simulation(model, Settings(formulation=form, threads=1)).formulation
    assert np.array_equal(balanced.tree.left, build_assembly_tree(model).left)
    y = _random_tree_state(model, np.random.default_rng(7))
    a, b = serial.rhs(0.0, y), balanced.rhs(0.0, y)
    assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max())


REGION_CASES = (SERIAL_TREES + [gen.chain(n, kind, planar=False, inertia=(0.1, 0.1, 0.1))
                                 for n, kind in ((100, "spherical"), (40, "revolute"))]
                + [gen.random_mechanism(s, 14, loops=1) for s in range(4)])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("spec", REGION_CASES, ids=lambda s: s.name)
def test_articulated_regions_agree_with_the_merges(spec, threads, monkeypatch):
    """A tree solve assembles each articulated-body region (assembly.articulated_regions:
    every open chain on one thread is one) by the recursion in inertia form instead of
    merge by merge, over the same tree: the same right-hand side to 1e-12 relative, at a
    random state (loops: their closed initial state).  On the slender rods of the
    generator's chains (2222 times more compliant about their axis than across) the
    regions are also no less accurate than the merges, measured against ``rcr`` (an
    independent recursion in joint coordinates)."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs two numba threads")
    model = build_model(spec)
    moments = [np.linalg.eigvalsh(np.array(b.inertia)) for b in spec.bodies]
    slender = min(m[0] / m[-1] for m in moments) < 1e-2
    old = numba.get_num_threads()
    try:
        for form in ("dca", "hdca"):
            with_regions = Simulation(model, Settings(formulation=form, threads=threads)).formulation
            with monkeypatch.context() as mp:
                _merges_only(mp)
                merges = Simulation(model, Settings(formulation=form, threads=threads)).formulation
            assert np.array_equal(merges.tree.left, with_regions.tree.left)
            if not model.ncut:
                assert with_regions.lay.n_regions >= 1
            y = merges.initial_state() if model.ncut else _random_tree_state(model, np.random.default_rng(13))
            a, b = with_regions.rhs(0.0, y), merges.rhs(0.0, y)
            scale = max(1.0, np.abs(b).max())
            assert np.abs(a - b).max() <= 1e-12 * scale, form
            if slender and form == "dca":
                ref = Simulation(model, Settings(formulation="rcr")).formulation.rhs(0.0, y)
                assert np.abs(a - ref).max() <= np.abs(b - ref).max() + 1e-12 * scale
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("spec", SERIAL_TREES, ids=lambda s: s.name)
def test_dca_takes_the_joints_to_ground_into_its_regions(spec, monkeypatch):
    """On one thread ``dca``'s tips-first tree merges each part hanging from ground with
    ground last, and a part of two bodies or more is then one grounded region: its head
    is that merge, with no handle left, and the recursion eliminates the joint to ground
    too (assembly.articulated_regions).  ``hdca``'s regions stop short of ground.  Over
    the same tree the merges give the same right-hand side and joint multipliers."""
    from linkwork.engine.assembly import build_assembly_tree, serial_assembly_tree

    model = build_model(spec)
    dca = Simulation(model, Settings(formulation="dca", threads=1)).formulation
    hdca = Simulation(model, Settings(formulation="hdca", threads=1)).formulation
    nb = model.nb

    def grounded_parts(f):
        tree, (_, reg_start, reg_body, reg_head) = f.tree, f.lay.reg[:4]
        return sorted(tuple(sorted(reg_body[reg_start[r]:reg_start[r + 1]])) for r in range(len(reg_head))
                      if tree.node_nh[nb + reg_head[r]] == 0)

    assert grounded_parts(hdca) == []
    if not np.array_equal(dca.tree.left, serial_assembly_tree(model, ground_last=True).left):
        assert np.array_equal(dca.tree.left, build_assembly_tree(model).left)  # the balanced tree was cheaper
        assert grounded_parts(dca) == []
        return
    subtree = {r: [r] for r in range(nb) if model.parent[r] < 0}
    for b in range(nb):
        r = b
        while model.parent[r] >= 0:
            r = model.parent[r]
        if b != r:
            subtree[r].append(b)
    assert grounded_parts(dca) == sorted(tuple(sorted(s)) for s in subtree.values() if len(s) >= 2)
    y = _random_tree_state(model, np.random.default_rng(13))
    a = dca.rhs(0.0, y)
    dca._solve(0.0, y)  # the multipliers: a one-region kernel's rates call leaves them out
    la = dca.lay.lam.copy()
    _merges_only(monkeypatch)
    merges = Simulation(model, Settings(formulation="dca", threads=1)).formulation
    assert np.array_equal(merges.tree.left, dca.tree.left) and merges.lay.n_regions == 0
    b = merges.rhs(0.0, y)
    merges._solve(0.0, y)
    lb = merges.lay.lam
    assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max())
    assert np.abs(la - lb).max() <= 1e-12 * max(1.0, np.abs(lb).max())


@pytest.mark.parametrize("spec", SERIAL_TREES + [gen.chain(2, "revolute", planar=False),
                                                 gen.chain(1, "spherical", planar=False), gen.ladder(4)],
                         ids=lambda s: s.name)
def test_one_region_called_directly_is_the_passes(spec, monkeypatch):
    """When the whole tree is one grounded region, ``dca`` runs a kernel that calls that
    region's passes and the serial body loops directly (``_evaluate_region``): exactly
    what the tree passes do, so the right-hand side and the multipliers are the same bit
    for bit.  It is taken exactly when the tree is one region hanging from ground."""
    from linkwork.engine.formulations import dca as dca_module
    from linkwork.engine.formulations import tree
    from linkwork.engine.assembly import serial_assembly_tree

    model = build_model(spec)
    direct = Simulation(model, Settings(formulation="dca", threads=1)).formulation
    _, reg_start, reg_body, reg_head = direct.lay.reg[:4]
    whole = (len(reg_head) == 1 and direct.tree.node_nh[model.nb + reg_head[0]] == 0
             and reg_start[1] == model.nb == len(set(reg_body)))
    assert direct.lay.one_region == whole
    assert (direct._kernel.kernel is dca_kernels.evaluate_region) == whole
    roots = int((model.parent[:model.nb] < 0).sum())
    if model.nj == model.nb and roots == 1 and model.nb >= 2:  # open, one joint to ground
        assert whole == np.array_equal(direct.tree.left, serial_assembly_tree(model, ground_last=True).left)
    monkeypatch.setattr(tree.TreeLayout, "one_region", False)  # through the tree passes
    passes = Simulation(model, Settings(formulation="dca", threads=1)).formulation
    assert passes._kernel.kernel is dca_kernels.evaluate
    y = _random_tree_state(model, np.random.default_rng(5)) if model.nj == model.nb else direct.initial_state()
    a, b = direct.rhs(0.0, y), passes.rhs(0.0, y)
    direct._solve(0.0, y)  # the multipliers: the direct kernel's rates call leaves them out
    passes._solve(0.0, y)
    assert np.array_equal(a, b) and np.array_equal(direct.lay.lam, passes.lay.lam)
    assert np.array_equal(direct.A, passes.A) and np.array_equal(direct.vdot, passes.vdot)


@pytest.mark.parametrize("n, kind, inertia", [(6, "spherical", None), (6, "revolute", None),
                                              (20, "spherical", (0.1, 0.1, 0.1)), (12, "universal", None)])
def test_dca_accelerations_against_a_40_digit_reference(n, kind, inertia):
    """``dca``'s joint accelerations on one thread (one grounded region) against ``M qdd =
    -C`` solved in 40-digit arithmetic from dca's own float64 kinematics
    (benchmarks/region_accelerations.py): the error of the solve alone, on slender rods
    (2222 times more compliant about their axis) and round links, at a random state."""
    from benchmarks.region_accelerations import reference

    model = build_model(gen.chain(n, kind, planar=False, inertia=inertia))
    y = _random_tree_state(model, np.random.default_rng(13))
    f = Simulation(model, Settings(formulation="dca", threads=1)).formulation
    assert f.lay.n_regions == 1
    qdd = f.rhs(0.0, y)[model.nq:]
    ref = reference(model, y[model.nq:], f.x, f.R, f.P, f.S)
    assert np.abs(qdd - ref).max() <= 1e-11 * np.abs(ref).max()


TWO_PART_TREES = ([gen.chain(n, kind, planar=False) for n, kind in ((100, "spherical"), (257, "revolute"))]
                  + [gen.random_mechanism(s, 70, loops=0) for s in range(3)])


@pytest.mark.parametrize("form", ["dca", "hdca"])
@pytest.mark.parametrize("spec", TWO_PART_TREES, ids=lambda s: s.name)
def test_the_two_part_tree_agrees_with_the_balanced_one(form, spec, monkeypatch):
    """On two threads an open mechanism is assembled in two halves, in parallel, when its
    busier thread does fewer operations (assembly.cheaper_tree): the same right-hand side
    as over the balanced tree, up to round-off (merges only, as above).  ``dca`` runs an
    unbranched chain in two roles over the one-thread tree instead (``_evaluate_chain``):
    here it takes the two halves, which it still does on branched trees."""
    from linkwork.engine.formulations import dca as dca_module

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two numba threads")
    _merges_only(monkeypatch)
    monkeypatch.setattr(dca_module.DCAFormulation, "layout_threads", classmethod(lambda cls, model, threads: threads))
    model = build_model(spec)
    old = numba.get_num_threads()
    try:
        two = Simulation(model, Settings(formulation=form, threads=2)).formulation
        if not two.tree.partition:
            pytest.skip("the balanced tree is the cheaper one here")
        assert two.lay.ix.sub_start.shape[0] == 3  # the two halves, one parallel region
        _balanced_tree_always(monkeypatch)
        balanced = Simulation(model, Settings(formulation=form, threads=2)).formulation
        y = _random_tree_state(model, np.random.default_rng(11))
        a, b = two.rhs(0.0, y), balanced.rhs(0.0, y)
        assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(b).max())
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("form", ["dca", "hdca"])
def test_automatic_threads_keep_a_short_chain_on_one_thread(form):
    """Left automatic, dca and hdca run an unbranched chain shorter than
    ``DCA_CHAIN_SERIAL_BELOW`` (hdca: ``HDCA_CHAIN_SERIAL_BELOW``) on one thread, over
    the tree and layout of ``--threads 1``; dca also an open branched tree shorter than
    ``DCA_TREE_SERIAL_BELOW`` (engine/threads.py).  A longer chain, hdca's branched tree and
    any thread count the user set keep every thread asked for (docs/performance.md,
    "Automatic threads")."""
    from linkwork.engine.formulations import REGISTRY
    from linkwork.engine.threads import DCA_CHAIN_SERIAL_BELOW as CHAIN_PARALLEL_MIN_BODIES
    from linkwork.engine.threads import plan, run_threads

    def threads_of(cls, model, settings):
        return plan(model, cls, settings.threads).threads

    cls = REGISTRY[form]
    cores = run_threads(CHAIN_PARALLEL_MIN_BODIES, None)  # every numba thread
    short = build_model(gen.chain(128, "revolute", planar=True))
    long = build_model(gen.chain(CHAIN_PARALLEL_MIN_BODIES, "spherical", planar=False))
    tree = build_model(gen.random_mechanism(0, 128, loops=0))
    assert (tree.parent[: tree.nb] < 0).sum() > 1 or np.bincount(tree.parent[tree.parent >= 0]).max() > 1
    assert threads_of(cls, short, Settings(formulation=form)) == 1
    assert threads_of(cls, short, Settings(formulation=form, threads=2)) == min(2, cores)
    assert threads_of(cls, long, Settings(formulation=form)) == (cores if form == "dca" else 1)
    if form == "hdca":
        from linkwork.engine.threads import HDCA_CHAIN_SERIAL_BELOW as HDCA_CHAIN

        longer = build_model(gen.chain(HDCA_CHAIN, "revolute", planar=True))
        assert threads_of(cls, longer, Settings(formulation=form)) == cores
        assert threads_of(cls, long, Settings(formulation=form, threads=2)) == min(2, cores)
    assert threads_of(cls, tree, Settings(formulation=form)) == (1 if form == "dca" else cores)
    assert threads_of(cls, tree, Settings(formulation=form, threads=2)) == min(2, cores)
    assert threads_of(REGISTRY["index3"], short, Settings(formulation="index3")) == cores
    old = numba.get_num_threads()
    try:
        auto = Simulation(short, Settings(formulation=form))
        assert numba.get_num_threads() == 1
        one = Simulation(short, Settings(formulation=form, threads=1)).formulation
        assert np.array_equal(auto.formulation.tree.left, one.tree.left)
        assert np.array_equal(auto.formulation.lay.ix.sub_start, one.lay.ix.sub_start)  # no parallel parts
        assert auto.formulation.lay.ix.body_parallel_from == one.lay.ix.body_parallel_from  # no parallel body loops
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("name", ["parallelogram-fourbar", "fourbar-crank-rocker", "loop-8", "slider-crank"])
def test_loop_conditioning_is_the_dense_measure(name):
    """With one loop, the closing merge's K is J M^-1 J^T, so its Cholesky factor has the
    singular values of dense's mass-whitened loop Jacobian: the two singularity measures
    are the same number, computed two independent ways, at perturbed configurations.
    (With redundant closure rows the pivoting keeps an independent subset of rows, whose
    conditioning is a comparable but different number.)"""
    from linkwork.engine.formulations.tree import loop_conditioning
    from linkwork.engine.model import load_model
    from linkwork.engine.paths import examples_dir

    model = load_model(examples_dir() / f"{name}.mech.json")
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    dca = Simulation(model, Settings(formulation="dca")).formulation
    rng = np.random.default_rng(5)
    y0 = dense.initial_state()
    for _ in range(5):
        y = y0.copy()
        y[: model.nq] += rng.normal(scale=0.2, size=model.nq)
        y[model.nq:] = 0.0  # K depends on positions only; zero rates keep the solve consistent
        normalize_quaternions(kin_arrays(model), y[: model.nq])
        dca.rhs(0.0, y)
        lay = dca.lay
        c = loop_conditioning(lay.ix, lay.Kf, lay.Kr, dca._closing)
        assert c == pytest.approx(dense.singularity(y), rel=1e-8)


@pytest.mark.parametrize("form", ["dca", "hdca"])
def test_singular_configurations_are_reported(form):
    """The parallelogram folds flat about every 0.9 s; the symmetric 8-loop never comes close.

    2.5 s (two crossings): at dt = 1e-3 dca leaves the branch at its third crossing
    (2.63 s), where the pipeline's monitor now stops the run (tests/engine/test_monitor.py)."""
    from linkwork.engine.model import load_model
    from linkwork.engine.paths import examples_dir

    visits = {}
    for name in ("parallelogram-fourbar", "loop-8"):
        sim = Simulation(load_model(examples_dir() / f"{name}.mech.json"),
                         Settings(formulation=form, t_end=2.5, dt=1e-3))
        sim.run_all()
        visits[name] = sim.stats.get("singular_visits", 0)
        assert len(sim.stats.get("warnings", [])) == visits[name]
    assert visits["loop-8"] == 0
    assert visits["parallelogram-fourbar"] >= 2


@pytest.mark.parametrize("spec,threads,cut,parallel_loops", [
    (gen.chain(63, "revolute"), 2, False, False),  # below PARALLEL_MIN_BODIES: one thread whatever the settings
    (gen.chain(64, "revolute"), 1, False, False),
    (gen.chain(256, "revolute"), 1, False, False),  # one thread: tips first, one merge per level, nothing to cut
    (gen.ladder(100), 1, False, False),  # 201 bodies: loops keep the balanced tree, uncut below 256 bodies
    (gen.ladder(128), 1, True, False),  # one thread, but the merges compile faster in a region's body
    (gen.chain(64, "revolute"), 2, False, False),  # a chain on two threads: the one-thread layout, in two roles
    (gen.random_mechanism(0, 64, loops=0), 2, True, True),
], ids=["chain-63-2", "chain-64-1", "chain-256-1", "ladder-201-1", "ladder-257-1", "chain-64-2", "tree-64-2"])
def test_parallel_regions_follow_the_runs_threads(spec, threads, cut, parallel_loops):
    """The layout carries the run's thread count: ``ix.body_parallel_from`` (body loops) and the subtree
    cut of the tree passes (``threads.cuts_tree``) -- but an unbranched chain on two
    threads keeps the one-thread layout, which ``_evaluate_chain`` runs in two roles."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs two numba threads")
    f = Simulation(build_model(spec), Settings(formulation="dca", threads=threads)).formulation
    ix = f.lay.ix
    assert (ix.sub_start.shape[0] > 1) == cut
    assert (ix.nb >= ix.body_parallel_from) == parallel_loops


@pytest.mark.parametrize("name", ["dca", "hdca", "rcr", "embedding"])
def test_a_non_finite_right_hand_side_is_refused(name):
    """rhs checks its output in the same kernel that writes it (kinematics.ode_rates)."""
    from linkwork.engine.errors import SingularSystemError

    model = build_model(gen.chain(5, "spherical", planar=False))
    f = Simulation(model, Settings(formulation=name)).formulation
    y = f.initial_state()
    assert np.isfinite(f.rhs(0.0, y)).all()
    y[-1] = np.nan
    with pytest.raises(SingularSystemError):
        f.rhs(0.0, y)


def test_state_kernel_calls_the_entry_point_only_for_the_state_type_it_was_compiled_for():
    """base.StateKernel: bound after the first call with a plain state and output; a
    strided or read-only state is compiled for once and called through its own entry
    point, with the same result."""
    from linkwork.engine.formulations import workspace
    from linkwork.engine.formulations.base import StateKernel
    from linkwork.engine.formulations.workspace import unpack

    @numba.njit
    def kernel(desc, proto, y, out):
        w, seen = unpack(desc, proto)
        for i in range(y.shape[0]):
            out[i] = w[i] * y[i]
        seen[0] += 1.0
        return out.shape[0] == y.shape[0]

    w, seen = np.arange(8.0), np.zeros(1)
    k = StateKernel(kernel, (w, seen))
    y = np.arange(8.0)
    out = np.empty(8)
    assert k(y, out)
    assert k.entry is not None
    expected = out.copy()
    strided = np.zeros((8, 2))
    strided[:, 0] = y
    ro = y.copy()
    ro.flags.writeable = False
    for state in (strided[:, 0], ro):
        out[:] = 0.0
        assert k(state, out)
        assert np.array_equal(out, expected)
        assert k(state, out)  # again: through the entry point bound for its type
        assert np.array_equal(out, expected)
    assert seen[0] == 5
    assert len(kernel.overloads) == 3  # the plain one, the strided one, the read-only one
    # each found again by its arguments' keys, without typing them
    assert sum(1 for dispatcher, _ in workspace._OVERLOADS if dispatcher is kernel) == 3


@pytest.mark.parametrize("name, call", [(n, "rhs") for n in ("dca", "hdca", "rcr", "embedding")]
                         + [(n, "close") for n in ("rcr", "embedding")])
def test_a_copied_formulation_evaluates_into_its_own_arrays(name, call):
    """The kernels' workspace table holds addresses (formulations.workspace): a deep copy
    or a pickle of a formulation must evaluate into the copy's arrays, not the original's
    -- its right-hand side, and ``rcr``'s and ``embedding``'s closure after a step
    (``_close``: Newton's steps and eq. (34) in one kernel, whose table holds the address
    of the positions kernel's table)."""
    import copy
    import pickle

    model = build_model(gen.ladder(2))
    f = Simulation(model, Settings(formulation=name)).formulation
    y = f.initial_state()
    if call == "rhs":
        y[model.nq:] += 0.1
    else:
        y[: model.nq] += 1e-3  # off the loops: Newton has steps to take

    def go(form):
        return form.rhs(0.0, y) if call == "rhs" else form._close(0.0, y)

    first = go(f)
    x0 = f.x.copy()
    for g in (copy.deepcopy(f), pickle.loads(pickle.dumps(f))):
        f.x[:] = np.nan  # the original's workspace, poisoned
        assert np.array_equal(go(g), first)
        assert np.array_equal(g.x, x0)
        assert np.isnan(f.x).all()
        go(f)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("name", ["dense", "dca", "hdca", "index3", "rcr", "embedding"])
def test_a_copied_formulation_compiles_nothing(name, how):
    """A copy's arrays must have the types of the original's: numba types a read-only
    array apart from a writeable one, and numpy's copies and unpickled arrays are
    writeable.  The model's arrays lost their read-only flag and the regions held
    read-only views of them, so a copied dca compiled every kernel again (57 s)."""
    import copy
    import pickle

    from numba.core import event

    model = build_model(gen.ladder(2))
    f = Simulation(model, Settings(formulation=name)).formulation
    y = f.initial_state()
    # index3 steps (paper 000's Newton iteration), the others give a right-hand side
    go = (lambda h: h.step(0.0, y.copy(), 1e-3)) if name == "index3" else (lambda h: h.rhs(0.0, y))
    first = go(f)  # compiled or loaded here, before counting
    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", Count()):
        g = copy.deepcopy(f) if how == "deepcopy" else pickle.loads(pickle.dumps(f))
        assert np.array_equal(go(g), first)
    assert compiled == []
    assert not g.model.jtype.flags.writeable


@pytest.mark.parametrize("name", ["dca", "hdca"])
def test_dca_and_hdca_bind_their_kernel_on_the_first_right_hand_side(name):
    model = build_model(gen.chain(5, "spherical", planar=False))
    f = Simulation(model, Settings(formulation=name)).formulation
    y = f.initial_state()
    first = f.rhs(0.0, y)
    assert f._kernel.entry is not None
    assert np.array_equal(f.rhs(0.0, y), first)


TWO_ROLE_CHAINS = [gen.joint_zoo(), gen.chain(2, "revolute", planar=False), gen.chain(17, "spherical", planar=False),
                   gen.chain(33, "universal", planar=False), gen.chain(40, "revolute", planar=False),
                   gen.chain(100, "spherical", planar=False), gen.chain(50, "revolute")]


@pytest.mark.parametrize("spec", TWO_ROLE_CHAINS, ids=lambda s: f"{s.name} {len(s.bodies)}")
def test_two_roles_on_a_chain_are_the_one_thread_kernel(spec, monkeypatch):
    """On two threads an unbranched chain hanging from ground keeps the one-thread tree
    and runs ``_evaluate_chain``: the one-thread kernel's steps, in two roles beside one
    another, so the rates, the multipliers and the accelerations are those of one thread
    bit for bit -- with the rates and without (the workspace only), at random states,
    across block boundaries (17, 33, 100 bodies) and with every joint kind and force
    element (the joint zoo).  Right-hand sides take the two copies of what the roles
    hand over (``CHAIN_TWIN``) in turn: each is checked, at a state of its own every call.
    With numba on one thread the first role waits for the other in vain and does it all."""
    from linkwork.engine.formulations import dca as dca_module
    from linkwork.engine.formulations import tree

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two cores")
    monkeypatch.setattr(threads_module, "PARALLEL_MIN_BODIES", 1)  # two threads on the short chains too
    model = build_model(spec)
    old = numba.get_num_threads()
    try:
        one = Simulation(model, Settings(formulation="dca", threads=1)).formulation
        two = Simulation(model, Settings(formulation="dca", threads=2)).formulation
        assert two.threads == 2 and two._kernel.kernel is dca_chain.evaluate_chain
        assert one._kernel.kernel is dca_kernels.evaluate_region
        assert np.array_equal(two.tree.left, one.tree.left)
        assert set(two.twin) == set(dca_chain.CHAIN_TWIN) and not one.twin
        assert not any(np.shares_memory(b, a) for b, a in zip(two.twin.values(), two._chain_twin()))
        rng = np.random.default_rng(11)
        for _ in range(4):
            for _ in range(2):  # the second copy, then the first
                y = _random_tree_state(model, rng)
                numba.set_num_threads(1)
                a, acc = one.rhs(0.0, y), one.A.copy()
                numba.set_num_threads(2)
                b = two.rhs(0.0, y)
                used = two.twin if two.nfev & 1 else {"A": two.A}
                assert np.array_equal(a, b) and np.array_equal(acc, used["A"])
            numba.set_num_threads(1)
            one._solve(0.0, y)  # the multipliers too
            numba.set_num_threads(2)
            two._roles[1](y, NO_RATES)  # on the second copy
            assert np.array_equal(one.lay.lam, two.twin["lam"]) and np.array_equal(one.vdot, two.twin["vdot"])
            two.vdot[:] = np.nan
            two._solve(0.0, y)  # on the first
            assert np.array_equal(two.vdot, one.vdot) and np.array_equal(two.lay.lam, one.lay.lam)
        numba.set_num_threads(1)
        two.vdot[:] = np.nan
        assert np.array_equal(two.rhs(0.0, y), a)
    finally:
        numba.set_num_threads(old)


def test_two_roles_give_way_to_one_thread_where_it_is_faster(monkeypatch):
    """``rhs`` times the two roles against the one-thread kernel at its 16th right-hand
    side and every 1024th after (``_choose_kernels``) and takes the faster for the calls
    up to the next choice; the rates are one thread's either way."""
    from linkwork.engine.formulations import dca as dca_module
    from linkwork.engine.formulations import tree

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two cores")
    monkeypatch.setattr(threads_module, "PARALLEL_MIN_BODIES", 1)
    model = build_model(gen.chain(40, "revolute", planar=False))
    old = numba.get_num_threads()
    try:
        one = Simulation(model, Settings(formulation="dca", threads=1)).formulation
        two = Simulation(model, Settings(formulation="dca", threads=2)).formulation
        assert one._alone is None and two._alone is not None
        assert two._alone.kernel is dca_kernels.evaluate_region and two._roles == two._rhs_kernels
        slow = {"roles": 2.0, "alone": 1.0}  # seconds a timed call takes, as _choose_kernels sees it
        monkeypatch.setattr(dca_module, "seconds",
                            lambda k, y: slow["alone"] if k is two._alone else slow["roles"])
        rng = np.random.default_rng(3)
        for n in range(1, 21):
            y = _random_tree_state(model, rng)
            numba.set_num_threads(1)
            a = one.rhs(0.0, y)
            numba.set_num_threads(2)
            assert np.array_equal(two.rhs(0.0, y), a)
            alone = two._rhs_kernels == (two._alone, two._alone)
            assert alone == (n >= dca_chain.CHAIN_RETIME_AT), n
        assert [c[0] for c in two.kernel_choices] == [dca_chain.CHAIN_RETIME_AT]
        slow.update(roles=0.5)  # the two roles faster at the next choice
        two.nfev = dca_chain.CHAIN_RETIME_MASK + dca_chain.CHAIN_RETIME_AT - 1
        assert np.array_equal(two.rhs(0.0, y), a)
        assert two._rhs_kernels == (two._alone, two._alone)  # no choice at this call
        assert np.array_equal(two.rhs(0.0, y), a)  # the 1040th: a choice
        assert two._rhs_kernels is two._roles and len(two.kernel_choices) == 2
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("name", ["dca", "hdca"])
@pytest.mark.parametrize("spec", [gen.joint_zoo(), gen.random_mechanism(3, 12, 0), gen.random_mechanism(8, 12, 2),
                                  gen.chain(40, "revolute", planar=False)], ids=["zoo", "tree", "loops", "chain"])
def test_tree_rows_are_each_joints_constraint_space_after_any_evaluation(spec, name):
    """The rows of every tree joint, of which a layout writes the state-independent
    entries once and each evaluation the others (``tree_row_constants``, ``_tree_rows``):
    after evaluations at random states they annihilate the joint's motion subspace
    (T^T S = 0), span with it all six directions, and GA = -GB -- an entry left unwritten
    or stale would break one of these."""
    model = build_model(spec)
    f = Simulation(model, Settings(formulation=name, threads=1)).formulation
    row_adr, rows = f.lay.ix.row_adr, f.lay.ix.rows
    GA, GB = f.lay.G[0], f.lay.G[1]
    rng = np.random.default_rng(2)
    for _ in range(3):
        f.rhs(0.0, _random_tree_state(model, rng))
        for j in range(model.nb):
            T = GB[row_adr[j]:row_adr[j] + rows[j]]
            S = f.S[model.v_adr[j]:model.v_adr[j] + model.nv_j[j]]
            assert T.shape[0] + S.shape[0] == 6
            assert np.abs(T @ S.T).max(initial=0.0) < 1e-12
            assert np.linalg.matrix_rank(np.vstack([T, S]), tol=1e-9) == 6
            assert np.array_equal(GA[row_adr[j]:row_adr[j] + rows[j]], -T)


@pytest.mark.parametrize("name", ["dca", "hdca"])
@pytest.mark.parametrize("spec", [gen.joint_zoo(), gen.random_mechanism(8, 12, 2),
                                  gen.random_mechanism(101, 30, 1, joint_types=("prismatic", "revolute"))],
                         ids=["zoo", "loops", "prismatic"])
def test_unit_first_marks_exactly_the_joints_whose_rows_are_unit_then_angular(spec, name):
    """The bias and disassembly steps take a marked joint's first three rows as e_0, e_1,
    e_2 and its other rows' linear halves as zero (``TreeLayout.unit_first``): after
    evaluations at random states the rows of every marked joint are so, and every joint
    whose rows are so and that has a revolute, universal, spherical or fixed type is
    marked (a prismatic joint's rows never are)."""
    model = build_model(spec)
    f = Simulation(model, Settings(formulation=name, threads=1)).formulation
    marks = f.lay.unit_first
    assert marks.shape == (model.nb,)
    row_adr, rows = f.lay.ix.row_adr, f.lay.ix.rows
    rng = np.random.default_rng(4)
    kinds = set()
    for _ in range(3):
        f.rhs(0.0, _random_tree_state(model, rng))
        for j in range(model.nb):
            T = f.lay.G[1][row_adr[j]:row_adr[j] + rows[j]]
            shaped = T.shape[0] >= 3 and np.array_equal(T[:3], np.eye(3, 6)) and not T[3:, :3].any()
            if marks[j]:
                assert shaped, (spec.name, j)
                kinds.add(int(model.jtype[j]))
            else:
                assert not shaped or model.jtype[j] not in (REVOLUTE, UNIVERSAL, SPHERICAL, FIXED), (spec.name, j)
    assert kinds, "no joint marked"


def test_two_roles_only_on_unbranched_chains(monkeypatch):
    """``_evaluate_chain`` is taken on two threads for an unbranched open chain only: a
    branched tree, a loop and a chain on one thread keep their kernels."""
    from linkwork.engine.formulations import dca as dca_module
    from linkwork.engine.formulations import tree

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two cores")
    monkeypatch.setattr(threads_module, "PARALLEL_MIN_BODIES", 1)
    old = numba.get_num_threads()
    try:
        for spec, threads, unbranched, chain in [(gen.chain(20, "spherical", planar=False), 2, True, True),
                                                 (gen.chain(20, "spherical", planar=False), 1, True, False),
                                                 (gen.random_mechanism(0, 12, loops=0), 2, False, False),
                                                 (gen.ladder(3), 2, False, False), (gen.fourbar(), 2, False, False)]:
            model = build_model(spec)
            f = Simulation(model, Settings(formulation="dca", threads=threads)).formulation
            assert tree_formulation.unbranched_chain(model) == unbranched, spec.name
            assert (f._kernel.kernel is dca_chain.evaluate_chain) == chain, spec.name
    finally:
        numba.set_num_threads(old)
