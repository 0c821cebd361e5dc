"""Fuzzing the loader: every mutated file loads or is refused with a path-named message."""

import copy
import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkwork.engine.errors import MechanismError
from linkwork.engine.mechfile import loads
from linkwork.engine.model import build_model
from linkwork.engine.topology import analyze

from ..fuzzing import examples
from .conftest import EXAMPLES

BASES = [json.loads(p.read_text()) for p in EXAMPLES if p.stat().st_size < 20000]
#: the gear examples carry ``couplings`` (docs/file-format.md, "Couplings"): the
#: fuzz mutates them too
assert sum("couplings" in b for b in BASES) >= 2

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**20, max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["ground", "A", "B", "C", "J1", "revolute", "spherical", "universal", "fixed",
                     "prismatic", "cylindrical", "rod", "box", "spring", "joint-spring", "joint-torque",
                     "gear", "motor", "elbow", "J4"]),
)
json_value = st.recursive(
    json_leaf, lambda children: st.one_of(st.lists(children, max_size=4),
                                          st.dictionaries(st.text(max_size=6), children, max_size=4)),
    max_leaves=12,
)

PATH_RE = re.compile(r"^(\(file\)|[A-Za-z_][A-Za-z0-9_]*(\[\d+\])*(\.[A-Za-z_][A-Za-z0-9_]*(\[\d+\])*)*): \S")


def _containers(node, out):
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            _containers(v, out)
    elif isinstance(node, list):
        out.append(node)
        for v in node:
            _containers(v, out)
    return out


NAMES = st.sampled_from(["ground", "A", "B", "C", "L1", "L2", "L3", "J1", "J2", "leg1", "rung1", "x", "J3", "J4",
                         "motor", "elbow", "shoulder", "gear"])
NUMBERS = st.one_of(
    st.floats(min_value=-10.0, max_value=10.0), st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-12, 1e9, 1e13]),
    st.integers(min_value=-3, max_value=3),
)


def _perturb(draw, value):
    """A value of the same JSON type, often still valid."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return draw(NUMBERS)
    if isinstance(value, str):
        return draw(NAMES)
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in value):
        out = list(value)
        i = draw(st.integers(0, len(out) - 1))
        out[i] = draw(NUMBERS)
        return out
    return draw(json_value)


@st.composite
def mutated(draw, bases=BASES, part=None):
    """A base document with 1-4 random edits (only inside ``doc[part]`` when given)."""
    doc = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 4))):
        inside = part is not None and isinstance(doc.get(part), (dict, list))
        conts = _containers(doc[part], [doc]) if inside else _containers(doc, [])
        c = draw(st.sampled_from(conts))
        op = draw(st.sampled_from(["perturb"] * 6 + ["set", "delete", "delete", "insert", "dup", "dup"]))
        if isinstance(c, dict) and c:
            key = draw(st.sampled_from(sorted(c)))
            if op == "delete":
                del c[key]
            elif op == "dup" and isinstance(c[key], list) and c[key]:
                c[key].append(copy.deepcopy(c[key][0]))
            elif op == "perturb":
                c[key] = _perturb(draw, c[key])
            else:
                c[key] = draw(json_value)
        elif isinstance(c, list) and c:
            i = draw(st.integers(0, len(c) - 1))
            if op == "delete":
                del c[i]
            elif op == "dup":
                c.append(copy.deepcopy(c[i]))
            elif op == "insert":
                c.insert(i, draw(json_value))
            elif op == "perturb":
                c[i] = _perturb(draw, c[i])
            else:
                c[i] = draw(json_value)
    return json.dumps(doc, allow_nan=True)


def _load_everything(text, counts):
    """Load, build and analyse ``text``: accepted, or refused with a message that starts
    with the JSON path of the broken rule."""
    counts["files tried"] += 1
    try:
        spec = loads(text)
        model = build_model(spec)
        analyze(model)
    except MechanismError as exc:
        counts["refused"] += 1
        assert PATH_RE.match(str(exc)), str(exc)
    else:
        counts["accepted"] += 1


@settings(max_examples=examples(2500), deadline=None, suppress_health_check=list(HealthCheck))
@given(text=mutated())
def test_mutated_files_load_or_are_refused_by_path(text, fuzz_counts):
    _load_everything(text, fuzz_counts)


GEARED = [b for b in BASES if "couplings" in b]


@settings(max_examples=examples(600), deadline=None, suppress_health_check=list(HealthCheck))
@given(text=mutated(GEARED, "couplings"))
def test_mutated_couplings_load_or_are_refused_by_path(text, fuzz_counts):
    """Edits aimed at the ``couplings`` list (and the document holding it) of the gear examples."""
    _load_everything(text, fuzz_counts)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(max_size=200))
def test_garbage_text_is_refused_cleanly(text, fuzz_counts):
    _load_everything(text, fuzz_counts)
