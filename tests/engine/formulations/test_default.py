"""The default formulation per mechanism (docs/formulations.md, "Default")."""

from linkwork.engine import generators as gen
from linkwork.engine.formulations import DENSE_DEFAULT_MAX_NV, default_formulation
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation


def test_trees_default_to_dca():
    for spec in (gen.chain(8, "revolute", planar=True), gen.spatial_double_pendulum(), gen.joint_zoo()):
        model = build_model(spec)
        if model.ncut == 0:
            assert default_formulation(model) == "dca", spec.name


def test_small_loops_default_to_dense_and_large_ones_to_hdca():
    small = build_model(gen.fourbar())
    assert small.ncut > 0 and default_formulation(small) == "dense"
    n = DENSE_DEFAULT_MAX_NV + 10
    large = build_model(gen.closed_loop(n))
    assert large.ncut > 0 and large.nv > DENSE_DEFAULT_MAX_NV
    assert default_formulation(large) == "hdca"


def test_simulation_resolves_the_default():
    model = build_model(gen.chain(4, "spherical", planar=False))
    assert Simulation(model, Settings()).settings.formulation == "dca"


def test_an_integrator_only_index3_takes_picks_index3():
    model = build_model(gen.fourbar())
    assert Simulation(model, Settings(integrator="trapezoidal")).settings.formulation == "index3"
    assert Simulation(model, Settings(integrator="rk45")).settings.formulation == "dense"
