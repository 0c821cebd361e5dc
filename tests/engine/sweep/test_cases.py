"""The per-case validation (engine/sweep/cases.py): a refused case names its index, its
values and the loader's message; the others keep their values."""

from linkwork.engine.sweep.cases import prepare_cases
from linkwork.engine.sweep.spec import load_sweep, sweep_from_dict

from .conftest import BUNDLED, doc


def test_each_refused_case_is_reported_with_its_index_and_the_loaders_message_others_kept():
    s = sweep_from_dict(doc(cases=[{"bodies[2].mass": 2.5}, {"bodies[99].mass": 1.0},
                                   {"bodies[2].mass": "heavy"}, {"bodies[2].mass": -1.0},
                                   {"bodies[2].mas": 3.0}, {"formulation": "nope"}, {"dt": 0.02}]))
    got = [pc.refused for pc in prepare_cases(s)]
    assert got == [
        None,
        "case 1 (bodies[99].mass = 1.0): bad parameter path bodies[99].mass: bodies[99] does not exist "
        "(bodies has 3 elements, indices 0..2)",
        'case 2 (bodies[2].mass = "heavy"): bodies[2].mass: must be a number (got a string)',
        "case 3 (bodies[2].mass = -1.0): bodies[2].mass: must be > 0 (got -1)",
        "case 4 (bodies[2].mas = 3.0): bad parameter path bodies[2].mas: not a field of the mechanism format "
        "(bodies[2].mas: unknown key, ignored)",
        "case 5 (formulation = \"nope\"): unknown formulation 'nope' "
        "(available: dense, dca, hdca, index3, rcr, embedding)",
        None,
    ]


def test_the_bundled_sweep_has_fifty_valid_cases():
    s = load_sweep(BUNDLED)
    assert len(s.cases) == 50 and not [pc for pc in prepare_cases(s) if pc.refused]


def test_case_values_reach_the_mechanism_and_settings():
    s = sweep_from_dict(doc(cases=[{"forces[0].stiffness": 321.0, "dt": 0.02, "joints[0].rate": 4.5}]))
    pc = prepare_cases(s)[0]
    assert pc.doc["forces"][0]["stiffness"] == 321.0 and pc.doc["joints"][0]["rate"] == 4.5
    assert pc.settings == {"t_end": 0.2, "dt": 0.02}
    assert s.base["forces"][0]["stiffness"] == 200.0  # the base document is not modified
