"""Fuzzing the sweep file (docs/sweeps.md): mutated and generated ``*.sweep.json`` files are
read by :func:`~linkwork.engine.sweep.load_sweep` -- what ``linkwork sweep`` reads them
with -- and their cases prepared by :func:`~linkwork.engine.sweep.prepare_case` (the
loader and settings check a sweep applies before submitting anything).  A file is
accepted or refused with ``PATH: rule`` naming a place in the file; a case is prepared
or refused with a message naming it; never a traceback.  Dask is never started.

Integers stay below a few hundred: the format puts no bound on ``num`` or ``random.n``, so
a file asking for 10^20 cases is not refused but takes that long to list.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkwork.engine.paths import examples_dir

from ..fuzzing import examples
from .test_fuzz import _containers

sweep = pytest.importorskip("linkwork.engine.sweep")

SWEEPS = Path(__file__).resolve().parents[2] / "resources" / "sweeps"
MECHANISMS = [str(examples_dir() / f"{n}.mech.json") for n in ("slider-crank", "fourbar-geared")]
TOP = {"format", "version", "name", "mechanism", "settings", "grid", "cases", "random", "keep", "trajectories",
       "case_timeout", "(file)"}
#: how many cases of an accepted file are prepared (each one builds its model)
PREPARED = 12


def _absolute(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["mechanism"] = str((SWEEPS / doc["mechanism"]).resolve())
    return doc


_BUNDLED = [_absolute(json.loads(p.read_text())) for p in sorted(SWEEPS.glob("*.sweep.json"))]
BASES = _BUNDLED + [
    {"format": "linkwork-sweep", "version": 1, "mechanism": MECHANISMS[0], "settings": {"t_end": 0.1},
     "cases": [{"joints[0].rate": 3.0, "formulation": "dca"}, {"forces[0].damping": 0.5, "dt": 0.005}],
     "trajectories": "none", "case_timeout": 30},
    {"format": "linkwork-sweep", "version": 1, "mechanism": MECHANISMS[1], "name": "gears",
     "random": {"n": 4, "seed": 7, "parameters": {"couplings[0].ratio": {"uniform": [-6.0, -2.0]},
                                                   "bodies[0].mass": {"loguniform": [0.1, 10.0]},
                                                   "integrator": {"choice": ["rk45", "dop853"]}}},
     "keep": ["final_state", "max:crank.x", "wall_time"]},
]
assert len(_BUNDLED) >= 2

PATHS = ["joints[0].rate", "bodies[1].mass", "bodies[0].inertia[0][0]", "forces[0].stiffness", "couplings[0].ratio",
         "gravity[1]", "bodies[99].mass", "joints.rate", "joints[0]", "[0]", "bodies[1].masss", "", "x..y", "dt",
         "t_end", "formulation", "integrator", "rtol", "threads", "baumgarte", "projection", "newton_iters"]
WORDS = ["linkwork-sweep", "uniform", "normal", "loguniform", "choice", "start", "stop", "num", "log", "n", "seed",
         "parameters", "csv", "parquet", "none", "final_state", "energy_drift", "max:slider.x", "mean:", "dense",
         "dca", "rk4", "radau", MECHANISMS[0], MECHANISMS[1], "../examples/slider-crank.mech.json", "missing.json"]
leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 300), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.sampled_from(PATHS + WORDS),
)
value = st.recursive(leaf, lambda c: st.one_of(st.lists(c, max_size=4),
                                               st.dictionaries(st.sampled_from(PATHS + WORDS) | st.text(max_size=5),
                                                               c, max_size=4)), max_leaves=10)


@st.composite
def mutated_sweeps(draw):
    """A sweep document with 1-4 edits: a value changed or replaced, a key renamed
    (grid and random keys are parameter paths), an entry deleted, inserted or repeated."""
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        c = draw(st.sampled_from(_containers(doc, [])))
        op = draw(st.sampled_from(["set", "set", "rekey", "rekey", "delete", "insert", "dup"]))
        if isinstance(c, dict) and c:
            key = draw(st.sampled_from(sorted(c)))
            if op == "delete":
                del c[key]
            elif op == "rekey":
                c[draw(st.sampled_from(PATHS + WORDS + sorted(TOP)))] = c.pop(key)
            elif op == "dup" and isinstance(c[key], list) and c[key]:
                c[key].append(copy.deepcopy(c[key][0]))
            else:
                c[key] = draw(value)
        elif isinstance(c, list) and c:
            i = draw(st.integers(0, len(c) - 1))
            if op == "delete":
                del c[i]
            elif op in ("insert", "dup"):
                c.insert(i, copy.deepcopy(c[i]) if op == "dup" else draw(value))
            else:
                c[i] = draw(value)
    return json.dumps(doc, allow_nan=True)


@st.composite
def generated_sweeps(draw):
    """A sweep document made from its parts: a grid, cases or random samples over drawn
    parameter paths, drawn settings, keep list and limits (the header and the mechanism are
    right: the mutations above break those)."""
    doc = {"format": "linkwork-sweep", "version": 1, "mechanism": draw(st.sampled_from(MECHANISMS))}
    numbers = st.one_of(st.floats(-10, 10), st.sampled_from([0.0, -1.0, 1e-3, 1e9]))
    if draw(st.booleans()):
        doc["settings"] = draw(st.dictionaries(st.sampled_from(sweep.RUN_SETTINGS + ("bogus",)),
                                               st.one_of(numbers, st.sampled_from(WORDS), st.booleans()),
                                               max_size=3))
    kinds = draw(st.sets(st.sampled_from(["grid", "cases", "random"]), min_size=1))
    axis = st.one_of(st.lists(numbers | st.sampled_from(WORDS), min_size=1, max_size=3),
                     st.fixed_dictionaries({"start": numbers, "stop": numbers, "num": st.integers(0, 4)},
                                           optional={"log": st.booleans()}))
    if "grid" in kinds:
        doc["grid"] = draw(st.dictionaries(st.sampled_from(PATHS), axis, min_size=1, max_size=2))
    if "cases" in kinds:
        doc["cases"] = draw(st.lists(st.dictionaries(st.sampled_from(PATHS), numbers | st.sampled_from(WORDS),
                                                     max_size=2), max_size=3))
    if "random" in kinds:
        dist = st.one_of(st.dictionaries(st.sampled_from(["uniform", "normal", "loguniform"]),
                                         st.lists(numbers, min_size=1, max_size=3), min_size=1, max_size=1),
                         st.fixed_dictionaries({"choice": st.lists(numbers | st.sampled_from(WORDS), max_size=3)}))
        doc["random"] = {"n": draw(st.integers(-1, 4)), "seed": draw(st.integers(-1, 9)),
                         "parameters": draw(st.dictionaries(st.sampled_from(PATHS), dist, min_size=1, max_size=2))}
    if draw(st.booleans()):
        doc["keep"] = draw(st.lists(st.sampled_from(WORDS + list(sweep.STANDARD_KEEP)), max_size=3))
    if draw(st.booleans()):
        doc["case_timeout"] = draw(st.one_of(st.none(), numbers, st.sampled_from(["10", True])))
    return json.dumps(doc, allow_nan=True)


def _names_a_place(path: str, text: str) -> bool:
    """``path`` is ``(file)``, or starts at a key of the format or of the document itself
    (an unknown key is named as it is spelt)."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    heads = TOP | (set(doc) if isinstance(doc, dict) else set())
    return any(path == k or path.startswith((k + ".", k + "[")) for k in heads)


def _read_and_prepare(tmp_path, text, counts):
    path = tmp_path / "fuzz.sweep.json"
    path.write_text(text, encoding="utf-8")
    counts["files tried"] += 1
    try:
        spec = sweep.load_sweep(path)
    except sweep.SweepError as exc:
        counts["refused"] += 1
        assert str(exc) == (f"{exc.path}: {exc.rule}" if exc.path else exc.rule), str(exc)
        assert exc.rule.strip() and _names_a_place(exc.path, text), str(exc)
        return
    counts["accepted"] += 1
    assert spec.cases
    for case in spec.cases[:PREPARED]:
        pc = sweep.prepare_case(spec, case)
        counts["cases prepared"] += 1
        if pc.refused is not None:
            counts["cases refused"] += 1
            assert pc.refused.startswith(f"case {case.index} ("), pc.refused


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(text=mutated_sweeps())
def test_mutated_sweep_files_load_or_are_refused_by_path(text, tmp_path, fuzz_counts):
    _read_and_prepare(tmp_path, text, fuzz_counts)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck))
@given(text=generated_sweeps())
def test_generated_sweep_files_load_or_are_refused_by_path(text, tmp_path, fuzz_counts):
    _read_and_prepare(tmp_path, text, fuzz_counts)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.one_of(st.text(max_size=120), st.sampled_from(["", "{", "[]", "null", '{"format": 1}', "\ufeff{}"])))
def test_garbage_sweep_text_is_refused_cleanly(text, tmp_path, fuzz_counts):
    _read_and_prepare(tmp_path, text, fuzz_counts)


def test_the_bundled_sweeps_are_accepted_and_their_cases_prepared(tmp_path):
    """The bases of the mutations are themselves good files: the fuzz starts from accepted
    documents, so a refusal is the edit's doing."""
    counts = {"files tried": 0, "accepted": 0, "refused": 0, "cases prepared": 0, "cases refused": 0}
    for doc in BASES:
        _read_and_prepare(tmp_path, json.dumps(doc), counts)
    assert counts["accepted"] == len(BASES) and counts["cases refused"] == 0, counts


@pytest.mark.parametrize("dist,rule", [
    ({"uniform": [2.0, 1.0]}, "low <= high"), ({"loguniform": [2.0, 1.0]}, "low <= high"),
    ({"normal": [0.0, -1.0]}, "standard deviation must be >= 0"),
    ({"uniform": [-1e308, 1e308]}, "high - low must be a finite number"),
    ({"uniform": [0, 10 ** 400]}, "two finite numbers"),
])
def test_random_distributions_numpy_cannot_draw_are_refused_by_path(dist, rule):
    """Found by the fuzz above: numpy raised (ValueError, OverflowError) on these, and
    ``linkwork sweep`` printed its traceback."""
    doc = {"format": "linkwork-sweep", "version": 1, "mechanism": MECHANISMS[0],
           "random": {"n": 2, "seed": 0, "parameters": {"joints[0].rate": dist}}}
    with pytest.raises(sweep.SweepError) as exc:
        sweep.sweep_from_dict(doc)
    assert exc.value.path == f"random.parameters.joints[0].rate.{next(iter(dist))}" and rule in exc.value.rule


def test_a_zero_range_with_a_negative_zero_is_drawn():
    """``[0.0, -0.0]`` is an empty range, not a reversed one (numpy's check sees the sign)."""
    doc = {"format": "linkwork-sweep", "version": 1, "mechanism": MECHANISMS[0],
           "random": {"n": 2, "seed": 0, "parameters": {"joints[0].rate": {"uniform": [0.0, -0.0]},
                                                         "forces[0].damping": {"normal": [0.5, -0.0]}}}}
    spec = sweep.sweep_from_dict(doc)
    assert [dict(c.params) for c in spec.cases] == [{"joints[0].rate": 0.0, "forces[0].damping": 0.5}] * 2
