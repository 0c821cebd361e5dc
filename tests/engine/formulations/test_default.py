"""The default formulation per mechanism (docs/formulations.md, "Default")."""

from linkwork.engine import generators as gen
from linkwork.engine.formulations import HDCA_LEAD, default_costs, default_formulation, loop_rows
from linkwork.engine.mechfile.spec import CouplingSpec
from linkwork.engine.model import build_model
from linkwork.engine.simulation import Settings, Simulation


def test_trees_default_to_dca():
    for spec in (gen.chain(8, "revolute", planar=True), gen.spatial_double_pendulum(), gen.joint_zoo()):
        model = build_model(spec)
        if model.ncut == 0:
            assert default_formulation(model) == "dca", spec.name


def test_small_loops_default_to_dense_and_large_ones_to_hdca():
    for spec in (gen.fourbar(), gen.double_loop(), gen.ladder(2), gen.ladder(4), gen.closed_loop(32)):
        model = build_model(spec)
        assert model.ncut > 0 and default_formulation(model) == "dense", spec.name
    for spec in (gen.ladder(6), gen.ladder(8), gen.ladder(16), gen.closed_loop(310)):
        model = build_model(spec)
        assert model.ncut > 0 and default_formulation(model) == "hdca", spec.name


def test_the_cost_model_counts_every_row_dense_adds():
    slider = build_model(gen.slider_crank())
    driven = build_model(gen.driven_slider_crank())
    assert loop_rows(slider) == int(slider.nc_j[slider.is_cut].sum()) > 0
    assert loop_rows(driven) == loop_rows(slider) + driven.nd
    ladder = [build_model(gen.ladder(n)) for n in (2, 4, 8)]
    dense, hdca = zip(*(default_costs(m) for m in ladder))
    # dense's system grows faster than hdca's passes: the ratio falls with every cell
    assert dense[0] / hdca[0] < dense[1] / hdca[1] < dense[2] / hdca[2]


def test_a_geared_loop_keeps_dense_at_any_size():
    ladder = gen.ladder(8)
    model = build_model(ladder.with_(couplings=(CouplingSpec("gear", "R1a", "R2a", 2.0),)))
    dense, hdca = default_costs(model)
    assert hdca < HDCA_LEAD * dense  # hdca's size, but it cannot honour the gear
    assert model.ng and default_formulation(model) == "dense"


def test_simulation_resolves_the_default():
    model = build_model(gen.chain(4, "spherical", planar=False))
    assert Simulation(model, Settings()).settings.formulation == "dca"


def test_an_integrator_only_index3_takes_picks_index3():
    model = build_model(gen.fourbar())
    assert Simulation(model, Settings(integrator="trapezoidal")).settings.formulation == "index3"
    assert Simulation(model, Settings(integrator="rk45")).settings.formulation == "dense"
