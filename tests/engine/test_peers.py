"""linkwork bench --peers (engine/studies/peers.py): the peers' models are Linkwork's mechanism.

Runs where the ``bench`` extra (Pinocchio, MuJoCo) is installed; the README's test
command does not install it (a few hundred MB), so CI skips these and ``linkwork bench
--peers`` checks the same agreement before it prints a timing."""

import numpy as np
import pytest

pytest.importorskip("pinocchio")
pytest.importorskip("mujoco")

from linkwork.engine.studies import peers as bench_peers  # noqa: E402


@pytest.mark.parametrize("kind", ["spherical", "revolute"])
def test_peers_accelerations_agree_with_dense(kind):
    """Pinocchio's aba and MuJoCo's mj_forward on models built from Linkwork's arrays give
    the body accelerations of Linkwork's dense reference, and so does dca."""
    row = bench_peers.measure(5, kind, ["dca"])
    assert set(row["agreement"]) == {"pinocchio aba", "pinocchio crba+solve (check)", "mujoco mj_forward", "dca"}
    for who, rel in row["agreement"].items():
        assert rel <= bench_peers.AGREE_RTOL, (who, rel)


def test_a_wrong_peer_model_is_caught():
    """The comparison can fail: the same chain with one body heavier in the peer's model
    disagrees far beyond the tolerance (the check is not vacuous)."""
    import pinocchio as pin

    from linkwork.engine.model import build_model
    from linkwork.engine.simulation import Settings, Simulation

    model = build_model(bench_peers.chain_spec(4, "revolute"))
    ev = Simulation(model, Settings(formulation="dense")).formulation
    e = ev.evaluate(0.0, ev.initial_state())
    pm, jid, anchor = bench_peers.pinocchio_model(model)
    pm.inertias[2] = pin.Inertia(2.0 * pm.inertias[2].mass, pm.inertias[2].lever, pm.inertias[2].inertia)
    data = pm.createData()
    q, v = pin.neutral(pm), bench_peers.peer_velocities(model, e)
    a = pin.aba(pm, data, q, v, np.zeros(pm.nv))
    acc = bench_peers.body_accelerations(pm, data, jid, model, anchor, q, v, a)
    assert bench_peers.relative_difference(acc, e.acc) > 1e-3


def test_mutual_agreement_of_the_linkwork_formulations():
    """The run also reports the largest difference between two of Linkwork's O(n)
    formulations (dense left out), the figure that stays meaningful where dense's own
    solve is the less accurate side."""
    row = bench_peers.measure(6, "revolute", ["dca", "rcr", "dense"])
    assert row["mutual"] is not None and 0.0 <= row["mutual"] <= bench_peers.AGREE_RTOL
    assert bench_peers.measure(6, "revolute", ["dca"])["mutual"] is None  # one formulation: no pair


@pytest.mark.parametrize("name", ["loop-8", "ladder-4"])
def test_lcaba_and_the_loop_formulations_agree_with_dense(name):
    """Closed loops: Pinocchio's lcaba on the model and point constraints built from
    Linkwork's arrays (engine/studies/lcaba.py), and rcr, give dense's body accelerations
    at a moving state."""
    from linkwork.engine.studies import lcaba

    row = lcaba.measure(name, ["rcr"])
    assert lcaba._worst(row) <= bench_peers.AGREE_RTOL, row["agreement"]
    assert set(row["time_s"]) == {"pinocchio lcaba", "pinocchio constraintDynamics", "rcr"}


def test_a_wrong_loop_model_is_caught():
    """The loop comparison can fail: one leg of the ladder twice as heavy in Pinocchio's
    model changes lcaba's accelerations far beyond the tolerance."""
    import pinocchio as pin

    from linkwork.engine.model import build_model
    from linkwork.engine.simulation import Settings, Simulation
    from linkwork.engine.studies import lcaba

    model = build_model(lcaba.loop_spec("ladder-2"))
    ref = Simulation(model, Settings(formulation="dense")).formulation
    ev = ref.evaluate(0.0, ref.initial_state())
    pm, jid, anchor, constraints, com = lcaba.pinocchio_loop_model(model)
    q0 = pin.neutral(pm)
    v = lcaba.pinocchio_velocities(pm, com, q0, ev.V)
    Y = pm.inertias[2]
    pm.inertias[2] = pin.Inertia(2.0 * Y.mass, Y.lever, Y.inertia)
    data = pm.createData()
    datas = pin.StdVec_RigidConstraintData([k.createData() for k in constraints])
    pin.computeJointMinimalOrdering(pm, data, constraints)
    a = pin.lcaba(pm, data, q0, v, np.zeros(pm.nv), constraints, datas, pin.ProximalSettings(*lcaba.PROX_CHECKED))
    acc = bench_peers.body_accelerations(pm, pm.createData(), jid, model, anchor, q0, v, a)
    assert bench_peers.relative_difference(acc, ev.acc) > 1e3 * bench_peers.AGREE_RTOL
