"""The partition monitor's arithmetic (:mod:`linkwork.engine.formulations.rcr_mobility`,
:mod:`linkwork.engine.formulations.rcr_partition`) and what the row loop does while it
tracks a near-singular pass."""

import numpy as np
import pytest
import scipy.linalg

from linkwork.engine import generators as gen
from linkwork.engine import row_loop
from linkwork.engine.errors import SimulationError
from linkwork.engine.formulations.rcr_mobility import whitened_singular_values
from linkwork.engine.formulations.rcr_partition import (LoopJacobian, build_partition, loop_structure,
                                                        search_partition)
from linkwork.engine.kinematics import fk_positions, fk_velocities, kin_arrays, motion_subspace, normalize_quaternions
from linkwork.engine.model import build_model, load_model
from linkwork.engine.simulation import Settings, Simulation

from ..conftest import example_path

SPECS = (gen.fivebar(), gen.ladder(3), gen.random_mechanism(3, n_bodies=9, loops=3),
         gen.random_mechanism(11, n_bodies=7, loops=2))


def _random_state(model, rng):
    q = model.q_zero() + 0.3 * rng.standard_normal(model.nq)
    normalize_quaternions(kin_arrays(model), q)
    return q, rng.standard_normal(model.nv)


def _kinetic_energy(model, q, v) -> float:
    """Sum over the bodies of 1/2 (m |v_C|^2 + w^T R J R^T w), from the kinematics alone."""
    mk = kin_arrays(model)
    x, R, P = np.zeros((model.nb, 3)), np.zeros((model.nb, 3, 3)), np.zeros((model.nj, 3))
    S, V, c = np.zeros((model.nv, 6)), np.zeros((model.nb, 6)), np.zeros((model.nb, 6))
    fk_positions(mk, q, x, R, P)
    motion_subspace(mk, q, R, S)
    fk_velocities(mk, x, P, S, v, V, c)
    T = 0.0
    for i in range(model.nb):
        w = V[i, 3:]
        T += 0.5 * (model.mass[i] * V[i, :3] @ V[i, :3] + w @ R[i] @ model.inertia[i] @ R[i].T @ w)
    return T


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_loop_jacobians_mass_matrix_gives_the_bodies_kinetic_energy(spec):
    """:class:`LoopJacobian`'s mass matrix, whose diagonal whitens the searches' and the
    mobility measure's loop Jacobian: 1/2 v^T M v is the bodies' kinetic energy at random
    configurations and speeds."""
    model = build_model(spec)
    jac = LoopJacobian(model, loop_structure(model))
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, v = _random_state(model, rng)
        _, M = jac(q)
        T = _kinetic_energy(model, q, v)
        assert 0.5 * v @ M @ v == pytest.approx(T, rel=1e-12), spec.name
        assert np.abs(M - M.T).max() <= 1e-15 * np.abs(M).max()  # a diagonal block's sums are its transpose's


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_whitened_singular_values_are_numpys(spec):
    """The compiled Cholesky, forward substitution and SVD give LAPACK's singular values of
    K L^-T to round-off."""
    model = build_model(spec)
    jac = LoopJacobian(model, loop_structure(model))
    rng = np.random.default_rng(3)
    for _ in range(5):
        K, M = jac(_random_state(model, rng)[0])
        ref = np.linalg.svd(scipy.linalg.solve_triangular(np.linalg.cholesky(M), K.T, lower=True).T,
                            compute_uv=False)
        s = whitened_singular_values(K, M)
        assert s.shape == ref.shape and np.abs(s - ref).max() <= 1e-13 * ref[0], spec.name
    assert whitened_singular_values(K, -M).size == 0  # not positive definite: the caller's numpy says why


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_a_search_reports_the_partition_it_lays_out(spec):
    """A search's key and conditioning, read before the layout is made, are those of the
    partition it lays out."""
    model = build_model(spec)
    structure = loop_structure(model)
    rng = np.random.default_rng(4)
    for _ in range(5):
        q = _random_state(model, rng)[0]
        found = search_partition(model, q, structure)
        part = build_partition(model, q, structure)
        assert found.key() == part.key() == found.partition().key()
        assert found.conditioning == part.conditioning


def test_the_row_loop_leaves_a_tracked_near_singular_pass_to_python_without_trying(monkeypatch):
    """Where rcr samples the mobility measure after every interval (the parallelogram
    folding flat), its kernels would hand each interval back at its first step: the row
    loop does not enter them for those intervals."""
    entered = []
    enter = row_loop.RowLoop._entry

    def spy(self, y, stages):
        entered.append(bool(self.form._sing_samples))
        return enter(self, y, stages)

    monkeypatch.setattr(row_loop.RowLoop, "_entry", spy)
    sim = Simulation(load_model(example_path("parallelogram-fourbar")), Settings(formulation="rcr", t_end=2.0))
    with pytest.raises(SimulationError, match="singular configuration"):
        sim.run_all()
    assert len(entered) > 2 and not any(entered)
