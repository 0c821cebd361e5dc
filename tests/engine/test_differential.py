"""Every formulation against ``dense`` on random mechanisms: agreement, or exit 3 -- never
exit 0 with a different motion.

The mechanisms cover what unseen ones brought: branched trees carrying loops, spatial
loops closed by spherical, universal and revolute joints (and, in :data:`CUT_CASES`, by
prismatic, cylindrical and fixed ones), planar linkages (:data:`PLANAR_CASES`: revolute
joints about one axis and prismatic ones along the plane, three redundant closure rows
per loop), prismatic and cylindrical joints, springs with dampers, joint torques,
initial joint rates, cut joints the file chooses, and gears where a formulation honours
them.  Both sides run dop853 at 1e-10
for one second (an error-controlled comparison measures the formulations, not the
integrator; index3, second order, at dt = 1e-4, and where that step's truncation error
exceeds the tolerance, again at dt / 2: the error must fall to a quarter and the
Richardson extrapolation of the two agree); positions must agree to 1e-6 m.

Every random mechanism carries a point-to-point spring with a damper, a joint spring and
a joint torque when it has a joint to hold them.  Gears: every fourth mechanism of
:data:`CASES` where two one-freedom tree joints allow it, and :data:`GEAR_CASES`, built
to always have one (a geared tree, one loop, two loops); dense and embedding honour
gears, the others refuse them.  ``pytest --fuzz-long`` (tests/fuzzing.py) runs seeds
0-299 with loops 0-3 and twenty geared mechanisms.  The counts -- runs, agreements,
exit-3 stops, silent disagreements (exit 0 with a different motion: must stay 0) --
are printed after the run.
"""

import collections
import dataclasses

import numpy as np
import pytest

from linkwork.engine import generators as gen
from linkwork.engine.errors import MechanismError, SettingsError
from linkwork.engine.formulations import REGISTRY
from linkwork.engine.mechfile import CouplingSpec, spec_from_dict, spec_to_dict
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation
from linkwork.engine.topology import loop_bodies

from .. import fuzzing
from .conftest import run_to_end

#: (seed, bodies, loops): trees, one loop and two loops on trees of 4 to 7 bodies
#: (--fuzz-long: seeds 0-299, zero to three loops)
CASES = ([(seed, 4 + seed % 4, seed // 4 % 4) for seed in range(300)] if fuzzing.LONG
         else [(seed, 4 + seed % 4, seed % 3) for seed in range(30)])
#: (seed, bodies, loops) of mechanisms built with a gear (:func:`geared_mechanism`)
GEAR_CASES = ([(1000 + k, 3 + k % 4, k % 3) for k in range(20)] if fuzzing.LONG
              else [(1000, 3, 0), (1001, 4, 1), (1002, 5, 2)])
#: the loop-closing joint types the mechanisms of CASES do not close loops with
CUT_TYPES = ("prismatic", "cylindrical", "fixed")
#: (seed, bodies, loops, the loop-closing joints' type) of :func:`cut_mechanism`
#: (--fuzz-long: sixty, one to three loops)
CUT_CASES = ([(2000 + k, 3 + k % 8, 1 + k % 3, CUT_TYPES[k % 3]) for k in range(60)] if fuzzing.LONG
             else [(2000 + k, 4 + k % 3, 1 + k // 3, CUT_TYPES[k % 3]) for k in range(6)])
#: (seed, bodies, loops) of :func:`~engine.generators.random_planar_mechanism`
#: (--fuzz-long: sixty)
PLANAR_CASES = ([(3000 + k, 3 + k % 8, 1 + k % 3) for k in range(60)] if fuzzing.LONG
                else [(3000 + k, 4 + k % 3, 1 + k // 3) for k in range(6)])
TOLERANCE = 1e-6
T_END = 1.0
#: index3's step (its trapezoidal rule is second order; see _second_order)
INDEX3_DT = 1e-4
#: one-freedom tree joints, so that a gear is always possible (geared_mechanism)
GEARABLE = ("revolute", "prismatic", "revolute", "cylindrical", "spherical")


def mechanism(seed: int, n_bodies: int, loops: int, gear: bool | None = None, joint_types=None,
              long: bool | None = None):
    """A random mechanism; with loops, seeds 4 and 28 (``long``, by default --fuzz-long:
    every even seed) have a cut joint of their own choosing (the first tree joint on the
    loop whose cut leaves every body connected), every fourth (or each with ``gear``) a
    gear between two one-freedom tree joints that are chained or siblings, where there are
    such.  A mechanism named by its seed in a test or a document is the one built without
    --fuzz-long (``long=False``), as benchmarks/differential_campaign.py builds it."""
    long = fuzzing.LONG if long is None else long
    kw = {} if joint_types is None else {"joint_types": joint_types}
    spec = gen.random_mechanism(seed, n_bodies=n_bodies, loops=loops, **kw)
    model = build_model(spec)
    joints = list(spec.joints)
    if loops and (seed % 2 == 0 if long else seed % 24 == 4) and model.nj > model.nb:
        on_loop = set(loop_bodies(model, model.nb)) - {-1}
        names = {model.body_names[b] for b in on_loop}
        for k, j in enumerate(joints[:n_bodies]):
            if j.child in names and j.parent in names | {"ground"}:
                trial = joints[:k] + [dataclasses.replace(j, cut=True)] + joints[k + 1:]
                try:
                    build_model(dataclasses.replace(spec, joints=tuple(trial)))
                except MechanismError:  # its cut would leave a body without a path to ground
                    continue
                joints = trial
                break
    couplings = ()
    if (seed % 4 == 1) if gear is None else gear:
        one = [j for j in joints[:n_bodies] if j.type in ("revolute", "prismatic") and not j.cut]
        for a in one:
            b = next((b for b in one if b is not a and (b.parent == a.child or b.parent == a.parent)), None)
            if b is not None:
                couplings = (CouplingSpec("gear", a.name, b.name, float(1.5 + seed % 3)),)
                break
    return spec_from_dict(spec_to_dict(dataclasses.replace(spec, joints=tuple(joints), couplings=couplings)))


def cut_types(model) -> list[str]:
    """The types of ``model``'s cut joints (the model chooses which joint of a loop to cut)."""
    types = {j.name: j.type for j in model.spec.joints}
    return [types[model.joint_names[j]] for j in range(model.nb, model.nj)]


def cut_mechanism(seed: int, n_bodies: int, loops: int, cut_type: str):
    """A random mechanism whose ``loops`` loops are closed by ``cut_type`` joints and cut
    there: the first of the seeds ``seed``, ``seed + 100``, ... whose model cuts only
    ``cut_type`` joints."""
    for s in range(seed, seed + 5000, 100):
        spec = gen.random_mechanism(s, n_bodies=n_bodies, loops=loops, loop_joint_types=(cut_type,))
        if set(cut_types(build_model(spec))) == {cut_type}:
            return spec
    raise AssertionError(f"no mechanism cut at {cut_type} joints only from seed {seed}")


def geared_mechanism(seed: int, n_bodies: int, loops: int):
    """A random mechanism with a gear: the first of the seeds ``seed``, ``seed + 100``, ...
    whose mechanism has two one-freedom tree joints to gear."""
    for s in range(seed, seed + 2000, 100):
        spec = mechanism(s, n_bodies, loops, gear=True, joint_types=GEARABLE)
        if spec.couplings:
            return spec
    raise AssertionError(f"no geared mechanism from seed {seed}")


def body_positions(model, columns, rows):
    """The bodies' x, y, z columns of result ``rows`` whose columns are ``columns``."""
    idx = [i for i, c in enumerate(columns)
           if c.rsplit(".", 1)[0] in model.body_names and c.rsplit(".", 1)[1] in ("x", "y", "z")]
    return rows[:, idx]


#: the error-controlled integrator of both sides (benchmarks/differential_campaign.py
#: --integrator sets it)
INTEGRATOR = "dop853"


def run_positions(model, form, dt=INDEX3_DT, tol=1e-10, penalty=None):
    """(body positions at the output instants, every 0.01 s; the error, if any; the
    simulation).  INTEGRATOR at rtol = atol = ``tol``; index3 has only its second-order
    trapezoidal rule: it runs at ``dt`` (and ``penalty``: None, the step's default) and is
    read every 0.01 s."""
    if form == "index3":
        settings = Settings(formulation=form, dt=dt, t_end=T_END, penalty=penalty)
    else:
        settings = Settings(formulation=form, integrator=INTEGRATOR, rtol=tol, atol=tol, t_end=T_END)
    sim = Simulation(model, settings)
    rows, err = run_to_end(sim)
    if form == "index3":
        rows = rows[::int(round(0.01 / dt))]
    return body_positions(model, sim.columns, rows), err, sim


def _run(model, form, dt=INDEX3_DT):
    """:func:`run_positions` without the simulation."""
    return run_positions(model, form, dt)[:2]


def verdict(ref, ref_err, pos, err) -> tuple[str, float]:
    """How a formulation's positions ``pos`` (error ``err``) compare with dense's ``ref``
    (``ref_err``), and the largest deviation: "agree" (both ran to the end, same motion),
    "exit 3" (either stopped, and the rows before the stop agree), "disagree before a
    stop", or "silent disagreement" (both ran to the end, exit 0, with different motions
    or numbers of rows)."""
    n = min(len(pos), len(ref))
    dev = float(np.abs(pos[:n] - ref[:n]).max()) if n else 0.0
    if err is not None or ref_err is not None:
        return ("exit 3" if dev < TOLERANCE else "disagree before a stop"), dev
    if len(pos) != len(ref) or not dev < TOLERANCE:
        return "silent disagreement", dev
    return "agree", dev


def _second_order(model, ref, pos, dev, counts) -> tuple[str, float]:
    """index3 off dense by more than the tolerance at INDEX3_DT: its trapezoidal rule's own
    truncation error, or a wrong motion?  At half the step a second-order method's error
    falls to a quarter (ratio between 1/5 and 1/3 here), and the Richardson extrapolation
    ``(4 q(dt/2) - q(dt)) / 3`` agrees with dense: "agree" (counted as "agree at second
    order").  Anything else stays a silent disagreement, with the deviation at dt/2."""
    half, err = _run(model, "index3", INDEX3_DT / 2)
    if err is not None or len(half) != len(ref):
        return "silent disagreement", dev
    dev_half = float(np.abs(half - ref).max())
    extrapolated = float(np.abs((4.0 * half - pos) / 3.0 - ref).max())
    if dev / 5.0 <= dev_half <= dev / 3.0 and extrapolated < TOLERANCE:
        counts["agree at second order"] += 1
        return "agree", extrapolated
    return "silent disagreement", max(dev, dev_half)


def compare_with_dense(model, counts, forms=tuple(REGISTRY)):
    """Every formulation of ``forms`` against dense on ``model``: yields ``(formulation,
    verdict, deviation, error, why refused)`` per formulation -- :func:`verdict`'s, or
    "refused" (``supports``: why) or "refused its settings" -- and counts what happened
    into ``counts``."""
    for key in ("runs", "agree", "exit 3", "refused", "silent disagreements"):
        counts[key] += 0
    counts["mechanisms"] += 1
    ref, ref_err = _run(model, "dense")
    for form in forms:
        if form == "dense":
            continue
        ok, why = REGISTRY[form].supports(model)
        if not ok:
            counts["refused"] += 1
            yield form, "refused", 0.0, None, why
            continue
        try:
            pos, err = _run(model, form)
        except SettingsError as exc:
            counts["refused"] += 1
            yield form, "refused its settings", 0.0, None, str(exc)
            continue
        counts["runs"] += 1
        what, dev = verdict(ref, ref_err, pos, err)
        if form == "index3" and what == "silent disagreement" and len(pos) == len(ref):
            what, dev = _second_order(model, ref, pos, dev, counts)
        counts["silent disagreements" if what == "silent disagreement" else what] += 1
        yield form, what, dev, err, None


def refuses_a_gear(model, why: str) -> bool:
    """Whether a formulation's refusal ``why`` of ``model`` is of its gear, the one thing a
    formulation may refuse here (only dense and embedding honour gears)."""
    return bool(model.ng) and "formulations that can" in why


def _differential(model, counts, label, forms=tuple(REGISTRY)):
    """:func:`compare_with_dense`, each formulation required to agree or stop, and to refuse
    only a gear."""
    for form, what, dev, err, why in compare_with_dense(model, counts, forms):
        if what == "refused":
            assert refuses_a_gear(model, why), (label, form, why)
        elif what != "refused its settings":
            assert what in ("agree", "exit 3"), (label, form, what, dev, err)


@pytest.mark.slow
@pytest.mark.parametrize("seed,n_bodies,loops", CASES)
def test_every_formulation_agrees_with_dense_or_stops(seed, n_bodies, loops, fuzz_counts):
    _differential(build_model(mechanism(seed, n_bodies, loops)), fuzz_counts, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed,n_bodies,loops", GEAR_CASES)
def test_geared_mechanisms_agree_with_dense_or_stop(seed, n_bodies, loops, fuzz_counts):
    model = build_model(geared_mechanism(seed, n_bodies, loops))
    assert model.ng == 1 and model.spec.forces
    fuzz_counts["geared"] += 1
    _differential(model, fuzz_counts, seed)
    assert fuzz_counts["runs"] >= 1  # embedding honours the gear: a comparison took place


@pytest.mark.slow
@pytest.mark.parametrize("seed,n_bodies,loops,cut_type", CUT_CASES)
def test_loops_closed_by_prismatic_cylindrical_and_fixed_joints_agree_with_dense_or_stop(
        seed, n_bodies, loops, cut_type, fuzz_counts):
    model = build_model(cut_mechanism(seed, n_bodies, loops, cut_type))
    assert cut_types(model) == [cut_type] * loops
    runs = fuzz_counts["runs"]
    _differential(model, fuzz_counts, seed)
    assert fuzz_counts["runs"] > runs  # no gear here: every formulation ran


@pytest.mark.slow
@pytest.mark.parametrize("seed,n_bodies,loops", PLANAR_CASES)
def test_planar_linkages_agree_with_dense_or_stop(seed, n_bodies, loops, fuzz_counts):
    model = build_model(gen.random_planar_mechanism(seed, n_bodies, loops))
    assert model.ncut == loops
    runs = fuzz_counts["runs"]
    _differential(model, fuzz_counts, seed)
    assert fuzz_counts["runs"] > runs


def test_the_differential_test_catches_a_wrong_formulation(monkeypatch):
    """A planted error -- dca's joint accelerations scaled by 1 + 1e-3 -- runs to the end
    without an error and disagrees with dense on a random mechanism with loops: the
    comparison above calls it a silent disagreement (the check, not a crash, fails it).
    Unplanted, dca agrees on the same mechanism."""
    from linkwork.engine.formulations.dca import DCAFormulation

    model = build_model(mechanism(2, 6, 2))
    rhs = DCAFormulation.rhs
    calls = []

    def wrong(self, t, y):
        calls.append(t)
        out = rhs(self, t, y)
        out[self.model.nq:] *= 1.0 + 1e-3
        return out

    ref, ref_err = _run(model, "dense")
    assert verdict(ref, ref_err, *_run(model, "dca"))[0] == "agree"
    monkeypatch.setattr(DCAFormulation, "rhs", wrong)
    pos, err = _run(model, "dca")
    what, dev = verdict(ref, ref_err, pos, err)
    assert calls and err is None and len(pos) == len(ref)
    assert what == "silent disagreement" and dev > 10 * TOLERANCE, (what, dev)
    # and the differential test itself fails on it, on its comparison
    counts = collections.Counter()
    with pytest.raises(AssertionError, match="silent disagreement"):
        _differential(model, counts, "planted", forms=("dca",))
    assert counts["silent disagreements"] == 1 and counts["runs"] == 1


@pytest.mark.parametrize("seed,n_bodies,loops", [(4058, 6, 2), (1247, 9, 3), (31208, 13, 3), (49144, 18, 5)])
def test_the_merges_drop_as_many_rows_as_the_mechanism_has_redundant(seed, n_bodies, loops):
    """Each merge's rank bound is its rows less those redundant where the loops close,
    counted on the subassemblies' Jacobians (topology.subassemblies): over the merges
    they add up to the mechanism's redundant closure equations, counted on its loop
    Jacobian in tree coordinates.  On these four (49144 on its balanced tree) a pivot test
    at the file's configuration kept one or two redundant rows (their pivots 1.1e-11 to
    2.3e-11 of the largest, 3e-5 above a nearly singular subassembly: round-off of the
    compliances below)."""
    from linkwork.engine.topology import analyze, subassemblies

    model = build_model(mechanism(seed, n_bodies, loops))
    top = analyze(model)
    for form in ("dca", "hdca"):
        lay = Simulation(model, Settings(formulation=form)).formulation.lay
        nm = lay.Kr.shape[0] // 2
        own = lay.reg[0] == -1
        assert subassemblies(model, lay.tree).redundant.sum() == top.loop_equations - top.loop_rank
        assert int((lay.ix.m_nr - lay.Kr[nm:])[own].sum()) == top.loop_equations - top.loop_rank


@pytest.mark.parametrize("seed,n_bodies,loops", [(4058, 6, 2), (1247, 9, 3), (31208, 13, 3)])
def test_hdca_agrees_with_dense_where_a_pivot_test_kept_a_redundant_row(seed, n_bodies, loops):
    """A redundant row whose pivot round-off put just above the pivot tolerance, kept by a
    rank bound from a pivot test, made hdca's momentum rates jump between nearby states
    (its pivot order chosen afresh each time): dop853 at 1e-10 crawled and stopped (exit 3
    after 0.0027 s on seed 31208, 5e-7 s on 4058).  Bounded by the mechanism's redundancy,
    hdca and dca agree with dense."""
    ref, ref_err = _run(build_model(mechanism(seed, n_bodies, loops)), "dense")
    model = build_model(mechanism(seed, n_bodies, loops))
    for form in ("dca", "hdca"):
        what, dev = verdict(ref, ref_err, *_run(model, form))
        assert what == "agree", (form, what, dev)


def test_index3_agrees_with_dense_where_a_pivot_test_kept_redundant_rows():
    """mechanism(80527, 8, 3): index3's exact solves (initial accelerations, exact
    projections) bounded no merge's rank, and a pivot test kept two redundant rows whose
    round-off pivots passed it: 1.1e-3 m off dense after 1 s at dt = 1e-4 (and 9.5e-4,
    7.0e-4 m at 2e-4, 5e-5: no order).  Bounded by the mechanism's redundancy as dca's
    merges are: 4.9e-7 m, the trapezoidal rule's own error (1.3e-7 m at dt / 2)."""
    model = build_model(mechanism(80527, 8, 3, long=False))
    ref, ref_err = _run(model, "dense")
    what, dev = verdict(ref, ref_err, *_run(model, "index3"))
    assert what == "agree", (what, dev)


def test_index3_converges_at_second_order_through_a_near_singular_pass():
    """mechanism(80566, 11, 2): its loops pass within 0.019 of a singular configuration at
    t = 0.81 s, where the accelerations rise twelvefold for 20 ms.  With a penalty fixed at
    1e9 (alpha dt^2 / 4 = 2.5 at dt = 1e-4) and each step starting from the Newton's own
    multipliers, the iterations closed the loops only to 3e-9 there (each moved the
    multipliers by 3.4 N, converging at 0.997 an iteration), and index3 ended 2.9e-6 m off
    dense, falling only by 2.1 at half the step and stopping at an eighth.  With the step's
    default penalty (settings.default_penalty) and the multipliers of the projected
    accelerations (docs/index3.md, "Reactions"): 2.1e-6 m, 5.2e-7 at dt / 2 (the
    trapezoidal rule's error through the pass), the two extrapolated within 1e-8 m of
    dense."""
    model = build_model(mechanism(80566, 11, 2, long=False))
    ref, ref_err = _run(model, "dense")
    pos, err = _run(model, "index3")
    assert ref_err is None and err is None
    counts = collections.Counter()
    what, dev = _second_order(model, ref, pos, float(np.abs(pos - ref).max()), counts)
    assert what == "agree" and counts["agree at second order"] == 1, (what, dev)


def test_a_nearly_singular_subassembly_is_assembled_otherwise_or_refused(monkeypatch):
    """mechanism(49144, 18, 5): the balanced assembly tree has a subassembly (8 bodies off
    ground, two loops inside) 2.8e-6 from a singular configuration of its own
    (topology.subassemblies), where the tips-first tree's are 0.057 from one.  Its
    compliance carries round-off of order eps / s^2 ~ 1e-5, and the merge above it
    sees a redundant row's pivot at 3e-5 of its largest.  dca and hdca assemble it tips
    first instead (no subassembly nearer than the whole) and agree with dense, at their
    defaults and with dop853.  Kept on the balanced tree, they refuse it at once: never an
    answer off dense (a rank bound from a pivot test gave rk4's default run 5.8e-5 m off
    dense with exit 0)."""
    from linkwork.engine import config
    from linkwork.engine.assembly import build_assembly_tree
    from linkwork.engine.topology import subassemblies

    model = build_model(mechanism(49144, 18, 5, long=False))
    balanced = subassemblies(model, build_assembly_tree(model)).conditioning
    assert balanced.min() < 1e-5 < config.SUBASSEMBLY_RTOL
    ref, ref_err = _run(model, "dense")
    assert ref_err is None

    def default_run(form):
        sim = Simulation(model, Settings(formulation=form, t_end=T_END))
        rows, err = run_to_end(sim)
        return body_positions(model, sim.columns, rows), err

    for form in ("dca", "hdca"):
        f = Simulation(model, Settings(formulation=form)).formulation
        assert subassemblies(model, f.tree).conditioning.min() > 1e-2
        assert verdict(ref, ref_err, *_run(model, form))[0] == "agree", form
        pos, err = default_run(form)
        assert err is None and np.abs(pos - ref).max() < 1e-6, form  # rk4's own error: 7e-8 m
    monkeypatch.setattr(config, "SUBASSEMBLY_RTOL", 0.0)
    for form in ("dca", "hdca"):
        assert Simulation(model, Settings(formulation=form)).formulation.tree.n_levels < model.nb
        pos, err = default_run(form)
        assert err is not None and "nearly singular" in str(err), form


def test_where_dense_refuses_a_near_pass_its_message_names_the_formulations_that_run_it():
    """mechanism(80144, 16, 4) stays near a singular configuration of its loops (dense's
    measure down to 1.2e-4, where its filter for crossings is widened to about the
    measure itself): the filtered solve leaves a closure residual the output check refuses,
    and the refusal says where the loops only pass near one, dca and hdca run it exactly.
    They do: without a filter they run the whole second and agree with each other."""
    model = build_model(mechanism(80144, 16, 4, long=False))
    ref, ref_err = _run(model, "dense")
    assert ref_err is not None and "dca and hdca, which have no filter" in str(ref_err)
    dca, dca_err = _run(model, "dca")
    hdca, hdca_err = _run(model, "hdca")
    assert dca_err is None and hdca_err is None
    assert np.abs(dca - hdca).max() < 1e-6
    assert np.abs(dca[:len(ref)] - ref).max() < 1e-6  # and with dense before its stop


def test_a_near_pass_is_exact_in_dca_and_hdca_and_reported_by_dense():
    """Seed 859's loops pass within 2.3e-4 of a singular configuration and cross none
    (docs/derivations.md, "What the widened filter costs a near pass"; its whole study:
    benchmarks/near_pass.py).  ``dca`` and ``hdca``, which have no filter, agree with each
    other to the integrator's tolerance.  ``dense``'s filter for crossings, widened as the
    measure falls, bends its motion there (3e-5 m at 1 s), and the run says so: the
    smallest measure at which it was widened, when, and the force's relative change
    ``(mu/s)^8`` of about 1e-3 -- in its statistics and its health line."""
    from linkwork.engine.monitor import summary

    model = build_model(mechanism(859, 8, 2, long=False))
    tree = [_run(model, form) for form in ("dca", "hdca")]
    assert all(err is None for _, err in tree)
    assert np.abs(tree[0][0] - tree[1][0]).max() < 1e-8
    _, err, sim = run_positions(model, "dense")
    assert err is None
    st = sim.stats
    assert 2e-4 < st["filtered_loop_conditioning"] < 3e-4 and 0.40 <= st["t_filtered"] <= 0.44
    assert 1e-4 < st["near_pass_error"] < 1e-2
    assert "loop solve filtered down to 0.00023 at t = 0.42 s" in summary(st)
    # and a mechanism whose loops keep clear of singular configurations reports nothing
    clear = Simulation(build_model(mechanism(2, 6, 2)), Settings(formulation="dense", t_end=0.2))
    run_to_end(clear)
    assert "filtered_loop_conditioning" not in clear.stats and "filtered" not in summary(clear.stats)
