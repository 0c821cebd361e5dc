"""The sweep file's parser (engine/sweep/spec.py, docs/sweeps.md): grids, cases and
random samples, and the refusals naming the JSON path."""

import json

import pytest

from linkwork.engine.sweep.spec import SweepError, load_sweep, sweep_from_dict

from .conftest import doc


def test_grid_is_the_product_of_its_axes_in_order():
    s = sweep_from_dict(doc(grid={"joints[0].rate": {"start": 2, "stop": 4, "num": 3},
                                  "forces[0].stiffness": [100, 300]}))
    assert s.parameters == ("joints[0].rate", "forces[0].stiffness")
    assert [c.params for c in s.cases] == [
        (("joints[0].rate", a), ("forces[0].stiffness", k)) for a in (2.0, 3.0, 4.0) for k in (100, 300)]
    assert [c.index for c in s.cases] == list(range(6))


def test_cases_and_random_follow_the_grid_and_random_is_seeded():
    d = doc(grid={"bodies[2].mass": [1.0, 2.0]}, cases=[{"dt": 0.02}],
            random={"n": 4, "seed": 7, "parameters": {"forces[0].stiffness": {"uniform": [100, 200]},
                                                      "formulation": {"choice": ["dca", "index3"]}}})
    a, b = sweep_from_dict(d), sweep_from_dict(d)
    assert [c.origin for c in a.cases] == ["grid", "grid", "cases"] + ["random"] * 4
    assert a.cases == b.cases  # same seed, same samples
    ks = [dict(c.params)["forces[0].stiffness"] for c in a.cases[3:]]
    assert all(100 <= k <= 200 for k in ks) and len(set(ks)) == 4
    other = sweep_from_dict({**d, "random": {**d["random"], "seed": 8}})
    assert [dict(c.params)["forces[0].stiffness"] for c in other.cases[3:]] != ks


def test_bad_path_in_a_grid_refuses_the_file_naming_it():
    with pytest.raises(SweepError) as e:
        sweep_from_dict(doc(grid={"bodies[99].mass": [1, 2]}))
    assert str(e.value) == ("grid.bodies[99].mass: bad parameter path bodies[99].mass: bodies[99] does not exist "
                            "(bodies has 3 elements, indices 0..2)")


@pytest.mark.parametrize("bad, message", [
    ({"format": "x", "cases": [{}]}, 'format: is required and must be "linkwork-sweep"'),
    ({"settings": {"dtt": 1}, "cases": [{}]}, "settings.dtt: unknown run setting"),
    ({"grid": {"dt": {"start": 1, "stop": 2}}}, "grid.dt.num: is required"),
    ({"keep": ["max:slider.x", "peak"], "cases": [{}]}, "keep[1]: unknown quantity 'peak'"),
    ({"random": {"n": 3, "parameters": {"dt": {"uniform": [0.01, 0.02]}}}}, "random.seed: is required"),
    ({"mechanism": "nowhere.mech.json", "cases": [{}]}, "mechanism: no such file"),
    ({}, "(file): no cases"),
    # more cases than a sweep may hold: refused before any is listed
    ({"grid": {"dt": {"start": 0.01, "stop": 0.02, "num": 10**20}}}, "grid.dt.num: must be at most 1,000,000"),
    ({"grid": {"dt": {"start": 0.01, "stop": 0.02, "num": 2000}, "t_end": {"start": 1, "stop": 2, "num": 2000}}},
     "grid: asks for 4,000,000 cases"),
    ({"random": {"n": 10**20, "seed": 1, "parameters": {"dt": {"uniform": [0.01, 0.02]}}}},
     "random.n: must be at most 1,000,000"),
])
def test_refused_sweep_files_name_the_path(bad, message):
    with pytest.raises(SweepError) as e:
        sweep_from_dict(doc(**bad))
    assert str(e.value).startswith(message)


def test_unreadable_sweep_and_mechanism_files_are_refused_with_the_path(tmp_path):
    """The sweep file and the base mechanism it names are read the same way: a file that is
    not JSON is refused naming where it was met and the file."""
    bad = tmp_path / "bad.sweep.json"
    bad.write_text("{not json")
    with pytest.raises(SweepError, match=r"\(file\).*bad\.sweep\.json is not valid JSON \(line 1"):
        load_sweep(bad)
    (tmp_path / "m.mech.json").write_text("[1, 2")
    s = tmp_path / "s.sweep.json"
    s.write_text(json.dumps({"format": "linkwork-sweep", "version": 1, "mechanism": "m.mech.json", "cases": [{}]}))
    with pytest.raises(SweepError, match=r"mechanism.*m\.mech\.json is not valid JSON"):
        load_sweep(s)
