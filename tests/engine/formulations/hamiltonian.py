"""Slow, independent reference for ``hdca``: the same Hamiltonian equations built
from ``dense``'s mass matrix and loop Jacobian (docs/derivations.md, section 8).

* velocities and impulses: ``v = N (N^T M N)^-1 N^T p*`` with ``N`` an orthonormal
  basis of ``null(K)`` (so redundant closure rows need no special care), then
  ``K^T sigma = p* - M v`` by least squares;
* momentum rates: ``p*_dot = M_dot v - h + K_dot^T sigma``, with ``h`` from dense's
  recursive Newton-Euler pass and ``M_dot``, ``K_dot`` by 4th-order central
  differences of ``M(q(s))``, ``K(q(s))`` along the exact flow of ``q`` at constant
  ``v`` (quaternions rotated, not added to).

Nothing here shares code with the divide-and-conquer passes.
"""

from __future__ import annotations

import numpy as np

from linkwork.engine.kinematics import fk_positions, kin_arrays, normalize_quaternions, qdot_from_v
from linkwork.engine.simulation import Settings, Simulation

FD_STEP = 1e-3  # flow length; truncation ~FD_STEP^4, round-off ~1e-16 / FD_STEP


class DenseHamiltonian:
    def __init__(self, model):
        self.model = model
        self.dense = Simulation(model, Settings(formulation="dense", projection=False)).formulation
        self.mk = kin_arrays(model)

    def mass_and_loops(self, q):
        m = self.model
        self.dense._cut_phi_K(q, np.zeros(m.nv))
        return self.dense.M.copy(), self.dense.K.copy()

    def velocities(self, q, p):
        """(v, sigma) of eq. (H2); sigma is the minimum-norm one."""
        M, K = self.mass_and_loops(q)
        if K.shape[0] == 0:
            return np.linalg.solve(M, p), np.zeros(0)
        _, s, Vt = np.linalg.svd(K)
        rank = int((s > 1e-10 * s[0]).sum())
        N = Vt[rank:].T
        v = N @ np.linalg.solve(N.T @ M @ N, N.T @ p)
        sigma = np.linalg.lstsq(K.T, p - M @ v, rcond=None)[0]
        return v, sigma

    def momentum_rates(self, q, v, sigma):
        m = self.model
        self.dense._dynamics(0.0, np.concatenate([q, v]))
        h = self.dense.h.copy()

        def at(s):
            return self.mass_and_loops(self.dense._apply_increment(q, s * v))

        e = FD_STEP / max(1.0, np.abs(v).max())  # joint motion of ~FD_STEP rad or m
        pts = [at(2 * e), at(e), at(-e), at(-2 * e)]
        Mdot = (-pts[0][0] + 8 * pts[1][0] - 8 * pts[2][0] + pts[3][0]) / (12 * e)
        pdot = Mdot @ v - h
        if m.ncut:
            Kdot = (-pts[0][1] + 8 * pts[1][1] - 8 * pts[2][1] + pts[3][1]) / (12 * e)
            pdot += Kdot.T @ sigma
        return pdot

    def rhs(self, t, y):
        m = self.model
        q, p = y[: m.nq], y[m.nq:]
        v, sigma = self.velocities(q, p)
        qd = np.empty(m.nq)
        qdot_from_v(self.mk, q, v, qd)
        return np.concatenate([qd, self.momentum_rates(q, v, sigma)])

    def rk4_positions(self, y0, dt, t_end):
        """Body COM positions (internal order) at every step of rk4 (the integrator of
        engine.integrators.rk4, quaternions renormalised after each step)."""
        m = self.model
        n = int(round(t_end / dt))
        x = np.zeros((m.nb, 3))
        R = np.zeros((m.nb, 3, 3))
        P = np.zeros((m.nj, 3))
        out = np.zeros((n + 1, m.nb, 3))
        y = y0.copy()
        fk_positions(self.mk, y[: m.nq], x, R, P)
        out[0] = x
        for k in range(1, n + 1):
            t = (k - 1) * dt
            k1 = self.rhs(t, y)
            k2 = self.rhs(t + dt / 2, y + dt / 2 * k1)
            k3 = self.rhs(t + dt / 2, y + dt / 2 * k2)
            k4 = self.rhs(t + dt, y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            normalize_quaternions(self.mk, y[: m.nq])
            fk_positions(self.mk, y[: m.nq], x, R, P)
            out[k] = x
        return out
