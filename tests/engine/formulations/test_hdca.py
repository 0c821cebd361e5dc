"""HDCA against an independent Hamiltonian reference built from ``dense``."""

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.kinematics import kin_arrays, normalize_quaternions
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation

from .hamiltonian import DenseHamiltonian
from .test_dca import CASES, _conditioning, conditioned_bound, random_case


def _hdca(model):
    return Simulation(model, Settings(formulation="hdca")).formulation


def _cut_impulses(model, hd):
    """The cut joints' impulses in dense's row order and sign (the tree solve's
    impulses act on the successor with the opposite sign)."""
    row, n = hd.lay.ix.row_adr, model.nc_j
    parts = [-hd.sigma[row[j]:row[j] + n[j]] for j in range(model.nb, model.nj)]
    return np.concatenate(parts) if parts else np.zeros(0)


def _random_state(model, ref, rng, closed_start):
    """Random (q, p*): trees anywhere, loops at their closed start; velocities random and
    closed (K v = 0), impulses random, p* = M v + K^T sigma (eq. H1)."""
    q = closed_start[: model.nq].copy()
    if model.ncut == 0:
        q += rng.normal(scale=0.6, size=model.nq)
        normalize_quaternions(kin_arrays(model), q)
    M, K = ref.mass_and_loops(q)
    if K.shape[0]:
        _, s, Vt = np.linalg.svd(K)
        N = Vt[int((s > 1e-10 * s[0]).sum()):].T
        v = N @ rng.normal(size=N.shape[1])
        p = M @ v + K.T @ rng.normal(size=K.shape[0])
    else:
        p = M @ rng.normal(size=model.nv)
    return np.concatenate([q, p])


@pytest.mark.parametrize("kind,seed,kw", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_velocities_and_momentum_rates_agree_with_reference(kind, seed, kw):
    """Velocities from momenta and momentum derivatives agree to 1e-9 relative.

    The reference's momentum rates use finite differences along the exact flow
    (truncation and round-off ~1e-12 relative); near-singular random loops get the
    conditioning-dependent bound of the DCA test.
    """
    e = random_state_errors(kind, seed, kw)
    bound = conditioned_bound(e["conditioning"], e["closure_rows"])
    assert e["v"] < bound
    assert e["impulse"] < bound  # with redundant closure rows only K^T sigma is unique
    assert e["pdot"] < bound


def random_state_errors(kind, seed, kw) -> dict:
    """Relative errors of hdca's velocities, impulses (as K^T sigma) and momentum rates
    against the dense Hamiltonian reference at the case's random state, and the loop
    conditioning there (also printed by benchmarks/agreement.py)."""
    model = build_model(random_case(kind, seed, kw))
    ref, hd = DenseHamiltonian(model), _hdca(model)
    y = _random_state(model, ref, np.random.default_rng(seed), hd.initial_state())
    q, p = y[: model.nq], y[model.nq:]
    out = hd.rhs(0.0, y)
    v_ref, _ = ref.velocities(q, p)
    sigma = _cut_impulses(model, hd)
    M, K = ref.mass_and_loops(q)
    imp = np.abs(K.T @ sigma - (p - M @ v_ref)).max() / max(1.0, np.abs(p).max()) if model.ncut else 0.0
    pdot_ref = ref.momentum_rates(q, v_ref, sigma)
    return {"conditioning": _conditioning(ref.dense, np.concatenate([q, v_ref])), "closure_rows": ref.dense.ncr,
            "v": np.abs(hd.v - v_ref).max() / max(1.0, np.abs(v_ref).max()), "impulse": imp,
            "pdot": np.abs(out[model.nq:] - pdot_ref).max() / max(1.0, np.abs(pdot_ref).max())}


def test_initial_momenta_are_mass_times_velocity():
    """Section 2.1: sigma = 0 at the start, so p* = M v0."""
    model = build_model(gen.double_loop())
    model_v = build_model(gen.double_loop())
    dense = Simulation(model_v, Settings(formulation="dense", projection=False)).formulation
    y_v = dense.initial_state()
    y_v[model.nq:] = 0.0
    ref = DenseHamiltonian(model)
    hd = _hdca(model)
    y = hd.initial_state()
    M, _ = ref.mass_and_loops(y[: model.nq])
    np.testing.assert_allclose(y[model.nq:], M @ dense.initial_state()[model.nq:], atol=1e-13)
    hd.rhs(0.0, y)
    np.testing.assert_allclose(hd.v, dense.initial_state()[model.nq:], atol=1e-13)


@pytest.mark.parametrize("spec", [gen.double_loop(), gen.joint_zoo(), gen.chain(5, "spherical", planar=False)],
                         ids=lambda s: s.name)
def test_momenta_are_the_mass_matrix_times_the_velocities(spec):
    """The impulse reset's p* = M v (the compiled kernel both the Python projection and the
    row loop's post-step call) against the dense mass matrix, at a configuration away
    from the file's and random velocities."""
    model = build_model(spec)
    hd = _hdca(model)
    rng = np.random.default_rng(3)
    y = hd.initial_state()
    q = y[: model.nq] + 0.3 * rng.standard_normal(model.nq)
    normalize_quaternions(kin_arrays(model), q)
    v = rng.standard_normal(model.nv)
    hd.rhs(0.0, np.concatenate([q, np.zeros(model.nv)]))  # the workspace's kinematics at q
    M, _ = DenseHamiltonian(model).mass_and_loops(q)
    np.testing.assert_allclose(hd.momenta(v), M @ v, rtol=0, atol=1e-12 * max(1.0, np.abs(M @ v).max()))


@pytest.mark.parametrize("spec", [gen.chain(6, "universal", planar=False), gen.joint_zoo(), gen.ladder(3),
                                  gen.double_loop(), gen.slider_crank(), gen.random_mechanism(7, 6, loops=0)],
                         ids=lambda s: s.name)
def test_reactions_agree_with_dense(spec):
    """Section 3.4: lambda = sigma_dot from the factorised tree; unique reactions agree
    with dense's, and the body accelerations everywhere."""
    from linkwork.engine.topology import analyze

    model = build_model(spec)
    dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
    hd = _hdca(model)
    y = dense.initial_state()
    y[model.nq:] = 0.0 if model.ncut else np.random.default_rng(1).normal(size=model.nv)
    yh = hd.initial_state()
    M, _ = DenseHamiltonian(model).mass_and_loops(y[: model.nq])
    yh[model.nq:] = M @ y[model.nq:]
    ed, eh = dense.evaluate(0.0, y), hd.evaluate(0.0, yh)
    np.testing.assert_allclose(eh.acc, ed.acc, atol=1e-9 * max(1.0, np.abs(ed.acc).max()))
    np.testing.assert_allclose(eh.V, ed.V, atol=1e-12 * max(1.0, np.abs(ed.V).max()))
    if analyze(model).redundant == 0:
        np.testing.assert_allclose(eh.reactions, ed.reactions, atol=1e-9 * max(1.0, np.abs(ed.reactions).max()))


def test_rk4_converges_to_the_dense_solution_at_fourth_order():
    """HDCA integrates a different ODE (q, p*) from dense's (q, v), with the same
    solution: rk4's error against a tight dop853 dense solution falls ~16x per halving."""
    model = build_model(gen.chain(3, "universal", planar=False))

    def positions(formulation, dt, **kw):
        cols, rows = Simulation(model, Settings(formulation=formulation, t_end=1.0, dt=dt, **kw)).run_all()
        idx = [cols.index(f"{b.name}.{c}") for b in model.spec.bodies for c in "xyz"]
        return rows[:: int(round(0.1 / dt)), idx]

    exact = positions("dense", 0.1, integrator="dop853", rtol=1e-13, atol=1e-13, projection=False)
    err = [np.abs(positions("hdca", dt, integrator="rk4") - exact).max() for dt in (2e-3, 1e-3, 5e-4)]
    assert err[0] / err[1] > 12 and err[1] / err[2] > 12, err


@pytest.mark.parametrize("n", [100, 256])
def test_threads_give_identical_results_on_one_tree(n, monkeypatch):
    """The per-body passes run in parallel from 64 bodies with two threads, serially with
    one (and the tree is cut only from 256); over the same (balanced) tree the result does
    not depend on it.  (A chain on one thread is assembled tips first:
    test_dca.py::test_the_serial_tree_agrees_with_the_balanced_one.)"""
    import numba

    from .test_dca import _balanced_tree_always

    _balanced_tree_always(monkeypatch)
    model = build_model(gen.chain(n, "spherical", planar=False))
    old = numba.get_num_threads()
    try:
        out = []
        for th in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            form = Simulation(model, Settings(formulation="hdca", threads=th)).formulation
            y = form.initial_state()
            y[model.nq:] = np.random.default_rng(3).normal(size=model.nv)
            out.append(form.rhs(0.0, y))
        assert np.array_equal(out[0], out[1])
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("stem", ["loop-4", "loop-8", "double-loop-8"])
@pytest.mark.parametrize("integrator", ["rk45", "lsoda", "rk23"])
def test_paper_cases_keep_symmetry_and_velocity_constraints(stem, integrator):
    """Paper 001 cases 1-3 over 10 s keep their mirror symmetry to 1e-9 and
    HDCA's velocity-level violation stays at round-off (< 1e-10)."""
    from linkwork.engine.studies import case_model as _case_model, mirror_pairs, run_case

    model = _case_model(stem)
    form = _hdca(model)
    pairs, x_mid = mirror_pairs(model, form.evaluate(0.0, form.initial_state()).x)
    assert len(pairs) == model.nb // 2  # no body on the plane of symmetry
    r = run_case(model, "hdca", integrator, 1e-6, 10.0, 0.05, pairs, x_mid)
    assert r["failure"] is None
    assert r["symmetry"].max() < 1e-9
    assert r["violation_velocity"].max() < 1e-10


def test_mirror_pairs_refuses_an_asymmetric_start():
    from linkwork.engine.studies import mirror_pairs

    model = build_model(gen.fourbar(crank=0.4, coupler=1.2, rocker=0.9, ground=1.0))
    form = _hdca(model)
    with pytest.raises(ValueError, match="no mirror image"):
        mirror_pairs(model, form.evaluate(0.0, form.initial_state()).x)


def _rough(monkeypatch):
    """A right-hand side rough at round-off's scale, for the crawl guard: no bound on the
    merges' ranks, a pivot test alone.  On the differential tests' ``mechanism(4058, 6, 2)``
    that keeps a redundant row whose pivot is 1.9e-11 of its largest, just above the pivot
    tolerance, now and then, and hdca's momentum rates then change by 1e-3 to 1e-1 for a
    1e-14 change of the state."""
    from linkwork.engine.formulations.tree.layout import TreeLayout

    monkeypatch.setattr(TreeLayout, "cap_ranks", lambda self, redundant: None)


def test_where_the_rates_are_rough_an_adaptive_run_stops_instead_of_crawling(monkeypatch):
    """rk45 at 1e-10 on a right-hand side rough at round-off's scale (:func:`_rough`) holds
    its steps near 1.5e-8 s, 1.5e-6 of the output interval: above the collapse's ratio, a
    run of hours. The crawl guard ends it with exit 3 within the first output interval, in
    the compiled rows (which hand the interval to Python) as in Python."""
    from linkwork.engine import config
    from linkwork.engine.errors import SimulationError

    from ..test_differential import mechanism

    _rough(monkeypatch)
    sim = Simulation(build_model(mechanism(4058, 6, 2, long=False)),
                     Settings(formulation="hdca", integrator="rk45", rtol=1e-10, atol=1e-10, t_end=0.01))
    with pytest.raises(SimulationError, match=f"steps collapsed .* shorter than {config.CRAWL_RATIO:g} of") as info:
        sim.run_all()
    assert info.value.t < 0.01
    assert sim.stats["rhs_evaluations"] < 30 * config.CRAWL_STEPS


def test_where_short_steps_are_broken_by_longer_ones_the_compiled_rows_stop_the_crawl_too(monkeypatch):
    """The same rough rates with rk45 at 1e-8: steps near 1e-6 s, CRAWL_RATIO of the output
    interval, some just below it and some above, so no CRAWL_STEPS short steps come in a
    row: minutes per simulated second, each output interval inside one compiled call.
    The crawl's blocks (CRAWL_STEPS steps that advance less than CRAWL_STEPS *
    CRAWL_RATIO output intervals) end it with exit 3 within 0.1 s, and it is the
    compiled rows' count that hands the interval to Python, where the same step raises.
    Run in a thread: the compiled rows without the blocks would not come back."""
    import threading

    from linkwork.engine.errors import SimulationError

    from ..test_differential import mechanism

    _rough(monkeypatch)
    sim = Simulation(build_model(mechanism(4058, 6, 2, long=False)),
                     Settings(formulation="hdca", integrator="rk45", rtol=1e-8, atol=1e-8, t_end=0.1))
    assert sim.row_loop() is not None
    out = {}

    def run():
        try:
            sim.run_all()
        except SimulationError as exc:
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(300.0)
    assert not worker.is_alive(), "the run crawled on"
    err = out["error"]
    assert "steps averaged" in err.reason and err.t < 0.1
