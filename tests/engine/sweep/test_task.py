"""One case as a task (engine/sweep/task.py): a simulation failure is a result."""

from linkwork.engine.sweep.cases import prepare_cases
from linkwork.engine.sweep.spec import sweep_from_dict
from linkwork.engine.sweep.task import run_case

from .conftest import doc


def test_a_failed_simulation_is_a_result_not_an_error():
    s = sweep_from_dict(doc(cases=[{"formulation": "dca", "dt": 0.05, "t_end": 2.0,
                                    "forces[0].stiffness": 1e9}]))
    pc = prepare_cases(s)[0]
    assert pc.refused is None
    res = run_case(pc.doc, pc.settings, s.keep)
    assert res["status"] == "failed" and res["exit_status"] == 3
    assert res["message"].startswith("simulation failed at t = ")
    assert 0 < res["rows"] == res["data"].shape[0] and res["t_final"] < 2.0
