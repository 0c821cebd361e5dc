"""Formulations come from the engine's registry; new ones appear without GUI changes."""

import pytest

from linkwork.engine import formulations as forms
from linkwork.engine import generators as g
from linkwork.engine.formulations.dense import DenseFormulation
from linkwork.engine.model import build_model

from linkwork.app.session.solver import SolverModel, available_formulations, parameter_info


class LoopsOnly(DenseFormulation):
    name = "loopsonly"
    title = "test formulation"
    summary = "only closed loops"
    parameters = ("projection", "tangent_hold")

    @classmethod
    def supports(cls, model):
        return (model.ncut > 0, "this test formulation needs a closed loop")


@pytest.fixture
def extra_formulation(monkeypatch):
    monkeypatch.setitem(forms.REGISTRY, "loopsonly", LoopsOnly)
    yield LoopsOnly


def test_registry_is_read_every_time(extra_formulation):
    tree = build_model(g.chain(3))
    infos = {f.name: f for f in available_formulations(tree)}
    assert set(forms.REGISTRY) == set(infos)
    assert not infos["loopsonly"].ok and "closed loop" in infos["loopsonly"].reason
    loop = build_model(g.fourbar())
    assert {f.name: f for f in available_formulations(loop)}["loopsonly"].ok


def test_unsupported_formulation_is_replaced_by_a_supported_default(extra_formulation):
    m = SolverModel()
    m.set_model(build_model(g.fourbar()), reset=True)
    m.update(formulation="loopsonly")
    assert m.settings.formulation == "loopsonly"
    tree = build_model(g.chain(2))
    m.set_model(tree)
    assert m.settings.formulation == forms.default_formulation(tree)


def test_settings_resolve_with_the_engines_reason_in_the_panels_words():
    """The engine's refusal names command-line flags; the panel names its own rows."""
    m = SolverModel()
    m.set_model(build_model(g.fourbar()), reset=True)
    m.update(dt=0.5, t_end=0.1)
    s, why = m.resolved()
    assert s is None and why == "Step dt (0.5 s) is longer than the end time (0.1 s)."
    m.update(dt=0.01, t_end=1.0, rtol=-1.0, integrator="rk45")
    s, why = m.resolved()
    assert s is None and why == "Relative tolerance must be a positive number (got -1.0)"


def test_panel_wording_of_the_engines_messages():
    from linkwork.app.session.solver import panel_wording

    assert panel_wording("--dt (5) must not exceed --t-end (1)") == \
        "Step dt (5 s) is longer than the end time (1 s)."
    assert panel_wording("--t-end / --dt exceeds 1e8 output rows") == \
        "End time / step dt gives more than 1e8 output rows: lengthen the step or shorten the end time."
    assert panel_wording("--newton-iters must be an integer >= 1 (got 0)") == \
        "Newton iterations must be an integer >= 1 (got 0)"
    assert panel_wording("tangent_hold must be >= 1") == "Tangent hold must be >= 1"
    # messages without flags pass unchanged (but for a capital)
    assert panel_wording("formulation 'dca' cannot simulate this mechanism: it has loops") == \
        "Formulation 'dca' cannot simulate this mechanism: it has loops"


def test_parameter_editors_for_known_and_unknown_fields():
    assert parameter_info("penalty").kind == "auto"
    assert parameter_info("projection").kind == "tristate"
    assert parameter_info("geometric_stiffness").kind == "bool"
    assert parameter_info("baumgarte").kind == "pair"
    with pytest.raises(KeyError):
        parameter_info("no_such_field")


def test_defaults_are_sensible_for_the_mechanism():
    m = SolverModel()
    m.set_model(build_model(g.paper000_chain(128)), reset=True)
    assert m.settings.t_end == 1.0
    m.set_model(build_model(g.fourbar()), reset=True)
    assert m.settings.t_end == 10.0 and m.settings.integrator == "rk4"


def test_a_geared_mechanism_offers_only_the_formulations_that_honour_gears():
    from linkwork.engine import generators as gen
    from linkwork.engine.model import build_model

    from linkwork.app.session.solver import available_formulations

    infos = {i.name: i for i in available_formulations(build_model(gen.geared_arm()))}
    assert infos["dense"].ok
    for name in ("dca", "hdca", "index3", "rcr"):
        assert not infos[name].ok and "'reduction'" in infos[name].reason and "dense" in infos[name].reason


def test_automatic_threads_take_the_engines_choice_where_it_is_fewer(monkeypatch):
    """Left automatic, the panel gives the engine every core but one -- and one thread to
    dca on a chain shorter than threads.DCA_CHAIN_SERIAL_BELOW and on an open tree
    shorter than threads.DCA_TREE_SERIAL_BELOW, which the engine runs on one thread
    (engine/threads.py)."""
    import linkwork.app.session.solver as solver
    from linkwork.engine.threads import run_threads

    monkeypatch.setattr(solver, "cpu_count", lambda: 8)
    m = SolverModel()
    m.set_model(build_model(g.chain(128, "revolute", planar=True)), reset=True)
    m.update(formulation="dca")
    assert m.resolved()[0].threads == 1
    m.set_model(build_model(g.random_mechanism(0, 128, loops=0)), reset=True)
    m.update(formulation="dca")
    assert m.resolved()[0].threads == 1
    m.update(formulation="hdca")
    assert m.resolved()[0].threads == min(7, run_threads(128, None))
