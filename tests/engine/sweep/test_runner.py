"""The runner's clock (engine/sweep/runner.py): the per-case time limit counts the case's
run and not numba's compiling.  A stand-in runner process speaks the runner's protocol
with chosen durations, so the test takes seconds whatever the numba cache holds."""

import textwrap

import pytest

from linkwork.engine.sweep import runner

FAKE = textwrap.dedent('''
    import time
    from multiprocessing.connection import Connection

    import numpy as np


    def serve(fd_in, fd_out, parent):
        inbox, outbox = Connection(fd_in, writable=False), Connection(fd_out, readable=False)
        outbox.send(("ready", 0))
        while True:
            try:
                case = inbox.recv()
            except EOFError:
                return
            outbox.send(("columns", ["t"], 1.0))
            outbox.send(("rows", np.array([[0.0], [0.25]])))
            outbox.send(("compiling", True))
            time.sleep(case["compile"])
            outbox.send(("compiling", False))
            time.sleep(case["run"])
            outbox.send(("rows", np.array([[0.5]])))
            outbox.send(("result", {"status": "ok"}))
''')


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """Runners started from now on run ``fake_runner.serve`` instead of the engine's."""
    (tmp_path / "fake_runner.py").write_text(FAKE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(runner, "__name__", "fake_runner")
    made = []
    yield lambda: made.append(runner.Runner()) or made[-1]
    for r in made:
        r.close()


def test_compiling_does_not_count_against_the_time_limit(stand_in):
    out = stand_in().run({"compile": 2.5, "run": 0.1}, limit=1.0)
    assert out.kind == "result" and out.t_reached == 0.5


def test_the_run_does_count_and_the_rows_before_the_stop_are_kept(stand_in):
    r = stand_in()
    out = r.run({"compile": 0.0, "run": 3.0}, limit=1.0)
    assert out.kind == "timeout" and not r.alive
    assert out.columns == ["t"] and out.t_reached == 0.25


def test_in_a_runner_a_case_gives_what_it_gives_in_this_process():
    """A simulation failure, a success and a refusal: the same status, message, rows and
    CSV from a runner as from :func:`run_case` here."""
    import copy

    from linkwork.engine.sweep import prepare_cases, run_case, run_isolated, sweep_from_dict

    from .conftest import doc

    s = sweep_from_dict(doc(cases=[{"formulation": "dca", "dt": 0.05, "t_end": 2.0, "forces[0].stiffness": 1e9},
                                   {"forces[0].stiffness": 200.0}]))
    cases = [(pc.doc, pc.settings) for pc in prepare_cases(s)]
    bad = copy.deepcopy(cases[1][0])
    bad["bodies"][0]["mass"] = -1.0
    cases.append((bad, cases[1][1]))
    try:
        for mech, settings in cases:
            here = run_case(mech, settings, s.keep, "csv")
            there = run_isolated(mech, settings, s.keep, "csv", case_timeout=120.0)
            assert (there["status"], there["exit_status"], there["message"], there["rows"]) == (
                here["status"], here["exit_status"], here["message"], here["rows"])
            assert there.get("csv") == here.get("csv") and there["fault"] is None
        assert [run_case(m, st, s.keep)["status"] for m, st in cases] == ["failed", "ok", "refused"]
    finally:
        runner._POOL.close()
