"""Initial velocities: body velocities + joint rates, combined and projected (docs/file-format.md,
"Initial velocities")."""

import numpy as np

from linkwork.engine import generators as gen
from linkwork.engine.constraints import constraint_jacobian
from linkwork.engine.initial import initial_state, joint_subspace
from linkwork.engine.mechfile import spec_from_dict, spec_to_dict
from linkwork.engine.model import build_model


def _with_rate(spec, joint, rate):
    d = spec_to_dict(spec)
    for j in d["joints"]:
        if j["name"] == joint:
            j["rate"] = rate
    return spec_from_dict(d)


def _rel_rate(model, ini, name):
    j = model.joint_index(name)
    a, b = model.pred[j], model.succ[j]
    P = ini.x[b] + ini.R[b] @ model.anchor_succ[j]
    Vb = np.r_[ini.V[b, :3] + np.cross(ini.V[b, 3:], P - ini.x[b]), ini.V[b, 3:]]
    Va = np.zeros(6) if a < 0 else np.r_[ini.V[a, :3] + np.cross(ini.V[a, 3:], P - ini.x[a]), ini.V[a, 3:]]
    return joint_subspace(model, j, ini.R) @ (Vb - Va)


def test_tree_rate_moves_outboard_bodies_without_correction():
    model = build_model(_with_rate(gen.chain(4, "revolute"), "J1", 2.0))
    ini = initial_state(model)
    assert ini.correction_max == 0.0
    for i in range(4):
        assert np.allclose(ini.V[i, 3:], [0, 0, 2.0])
    assert np.isclose(_rel_rate(model, ini, "J1")[0], 2.0)
    assert np.isclose(_rel_rate(model, ini, "J3")[0], 0.0)


def test_loop_projection_keeps_given_rate_and_satisfies_constraints():
    model = build_model(_with_rate(gen.fourbar(), "J1", 1.5))
    ini = initial_state(model)
    Jac, _, _ = constraint_jacobian(model, ini.x, ini.R)
    assert np.abs(Jac @ ini.V.reshape(-1)).max() < 1e-12
    assert np.isclose(_rel_rate(model, ini, "J1")[0], 1.5)
    # parallelogram: the other crank turns at the same rate, the coupler translates
    assert np.allclose(ini.V[model.body_index("B"), 3:], 0.0, atol=1e-12)
    assert ini.correction_max > 0 and "projected" in ini.report()
    # the warning says what was kept and what changed
    assert "J1 were kept exactly" in ini.report() and "other velocities were changed" in ini.report()


def test_body_velocities_are_projected_mass_orthogonally():
    d = spec_to_dict(gen.fourbar())
    d["bodies"][1]["velocity"] = [0.0, 1.0, 0.0]  # coupler pushed upwards: not consistent alone
    model = build_model(spec_from_dict(d))
    ini = initial_state(model)
    Jac, _, _ = constraint_jacobian(model, ini.x, ini.R)
    assert np.abs(Jac @ ini.V.reshape(-1)).max() < 1e-12
    assert 0 < ini.correction_ratio < 1
    # mass-orthogonality: the correction is M-orthogonal to every admissible motion
    M = np.zeros(6 * model.nb)
    for i in range(model.nb):
        M[6 * i:6 * i + 3] = model.mass[i]
        M[6 * i + 3:6 * i + 6] = np.diag(ini.R[i] @ model.inertia[i] @ ini.R[i].T)  # diagonal inertia here
    _, _, Vt = np.linalg.svd(Jac)
    null = Vt[np.linalg.matrix_rank(Jac):]
    dV = (ini.V - ini.V_combined).reshape(-1)
    assert np.abs(null @ (M * dV)).max() < 1e-10


def test_incompatible_rates_are_reported():
    spec = _with_rate(_with_rate(gen.fourbar(), "J1", 1.0), "J4", 3.0)
    ini = initial_state(build_model(spec))
    assert ini.rate_residual > 0.1 and "incompatible" in ini.report()
    assert "were not all kept" in ini.report()
