"""The peers' models of a bundled mechanism (engine/studies/mujoco_model.py,
exudyn_model.py) and the closure points every engine is measured at
(engine/studies/closure_points.py)."""

import numpy as np
import pytest

from linkwork.engine.model import load_model
from linkwork.engine.paths import resources_dir


def _model(stem):
    return load_model(resources_dir() / "examples" / f"{stem}.mech.json")


def _initial(model, formulation="dense"):
    from linkwork.engine.simulation import Settings, Simulation

    form = Simulation(model, Settings(formulation=formulation, threads=1)).formulation
    return form.evaluate(0.0, form.initial_state())


def test_closure_points_coincide_at_the_start_and_see_a_loop_that_opens():
    """The four-bar's cut revolute gives two point pairs on its axis; at the file's
    configuration each pair coincides, and moving one body by 1 mm shows as 1 mm (the
    measure is not vacuous)."""
    from linkwork.engine.results import columns
    from linkwork.engine.studies.closure_points import closure_error_rows, closure_points

    model = _model("fourbar-crank-rocker")
    pts = closure_points(model)
    assert pts.count == 2 and set(pts.joint) == {model.nb}
    assert np.max(np.abs(pts.point[:, 0] - pts.point[:, 1])) < 1e-9
    cols = columns(model)
    row = np.zeros(len(cols))
    for b, name in enumerate(model.body_names):
        for k, f in enumerate("xyz"):
            row[cols.index(f"{name}.{f}")] = model.x0[b, k]
        for k in range(4):
            row[cols.index(f"{name}.q{k}")] = model.quat0[b, k]
    moved = row.copy()
    succ = model.body_names[int(model.succ[model.nb])]
    moved[cols.index(f"{succ}.x")] += 1e-3
    err = closure_error_rows(model, pts, cols, np.array([row, moved]))
    assert err[0] < 1e-9
    assert err[1] == pytest.approx(1e-3, rel=1e-9)


def test_mujoco_four_bar_has_its_loop_as_two_connects_closed_at_the_start():
    """fourbar-crank-rocker: three bodies on three hinges, the cut revolute as two
    connect equalities between sites on its axis; at Linkwork's initial state the sites
    of each pair coincide and the velocities are Linkwork's."""
    pytest.importorskip("mujoco")
    from linkwork.engine.studies import mujoco_model as mm

    model = _model("fourbar-crank-rocker")
    mech = mm.build(model, dt=0.01)
    m = mech.mj
    assert (m.nbody, m.njnt, m.nv) == (model.nb + 1, 3, 3)
    assert m.neq == 2 and mech.equalities == {"connect": 2, "weld": 0, "joint": 0}
    assert mech.sites.shape == (2, 2)
    assert m.opt.timestep == 0.01 and m.opt.integrator == 1  # mjINT_RK4
    assert mm.not_comparable(model) == []
    d, residual = mm.initial_data(mech, _initial(model).V)
    assert residual < 1e-12
    assert mm.closure_error(mech, d) < 1e-12


def test_mujoco_takes_linkworks_initial_velocities_on_a_branched_tree():
    """slider-crank: the crank and the slider hang from the ground, the rod from the crank,
    so MuJoCo's depth-first body numbering is not Linkwork's breadth-first one; the
    initial joint velocities still reproduce every body's twist."""
    pytest.importorskip("mujoco")
    from linkwork.engine.studies import mujoco_model as mm

    model = _model("slider-crank")
    mech = mm.build(model, dt=0.01)
    assert list(mech.body_id) != list(range(1, model.nb + 1))
    d, residual = mm.initial_data(mech, _initial(model).V)
    assert residual < 1e-12
    assert mm.closure_error(mech, d) < 1e-12


def test_mujoco_accelerations_of_an_open_mechanism_are_linkworks():
    """joint-zoo (every joint type, joint springs and torques, a point spring, initial
    rates): MuJoCo's mj_forward gives dense's body accelerations to 1e-9 relative."""
    pytest.importorskip("mujoco")
    from linkwork.engine.studies import mujoco_model as mm

    model = _model("joint-zoo")
    assert model.ncut == 0
    ev = _initial(model)
    mech = mm.build(model)
    assert mech.mj.nv == model.nv
    d, residual = mm.initial_data(mech, ev.V)
    assert residual < 1e-12
    acc = mm.body_accelerations(mech, d, model.nb)
    rel = np.max(np.abs(acc - ev.acc)) / np.max(np.abs(ev.acc))
    assert rel <= 1e-9, rel
    # the check can fail: without the joint torques MuJoCo's accelerations differ
    d.qfrc_applied[:] = 0.0
    import mujoco

    mujoco.mj_forward(mech.mj, d)
    acc = mm.body_accelerations(mech, d, model.nb)
    assert np.max(np.abs(acc - ev.acc)) / np.max(np.abs(ev.acc)) > 1e-4


def test_exudyn_closes_a_planar_loop_with_its_independent_axes():
    """The planar four-bar's cut revolute constrains in Exudyn only the in-plane
    translations (the tree already holds the rest); a short index-3 run keeps the loop
    closed."""
    pytest.importorskip("exudyn")
    from linkwork.engine.studies.exudyn_model import ExudynMechanism, cut_joint_axes, not_comparable

    model = _model("fourbar-crank-rocker")
    axes = cut_joint_axes(model)
    assert list(axes) == [model.nb] and sum(axes[model.nb][1]) == 2
    assert not_comparable(model) == []
    assert "gears" in "; ".join(not_comparable(_model("geared-arm")))
    mech = ExudynMechanism(model, _initial(model).V, dt=0.01, t_end=0.2)
    wall, closure, failure = mech.run(0.2, record=True)
    assert failure is None and closure < 1e-8
