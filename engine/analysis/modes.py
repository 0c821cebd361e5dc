"""Linear vibration modes about a rest (docs/derivations.md, "Static equilibrium and linear
modes").

About an equilibrium ``q*`` (:mod:`.equilibrium`) with multipliers ``lambda``, small motions
``dv = N z`` in the null space of the constraint Jacobian obey

    M_r z'' + C_r z' + K_r z = 0,   M_r = N^T M N,  C_r = N^T C N,
    K_r = N^T (grad^2 V + lambda . Phi_qq) N,

with ``M`` the tree-coordinate mass matrix ``sum_i J_i^T M_i J_i``, ``C = -dQ/dv`` the
dampers' (point springs' and joint springs' ``damping``) and ``K`` the Hessian of the
Lagrangian, constraint forces' geometric terms included.  The undamped modes solve
``K_r phi = omega^2 M_r phi`` with ``phi^T M_r phi = 1`` (unit modal mass); a mode's damping
ratio is its modal one, ``zeta = phi^T C_r phi / (2 omega)`` -- exact when the damping does
not couple the modes, which :attr:`Modes.coupling` measures; the damped system's own
eigenvalues are :attr:`Modes.damped_eigenvalues`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..model import Model
from .equilibrium import (NEUTRAL_TOL, Equilibrium, Statics, check_equilibrium, find_equilibrium, held_joints,
                          null_space)


@dataclass(frozen=True)
class Modes:
    """The linear modes about one rest, slowest first."""

    equilibrium: Equilibrium
    eigenvalues: np.ndarray  # (f,) omega^2 of K_r phi = omega^2 M_r phi, 1/s^2 (negative: unstable)
    neutral: np.ndarray  # (f,) bool: |omega^2| within NEUTRAL_TOL of the largest, a free motion (omega = 0)
    shapes: np.ndarray  # (nv, f) mode shapes in tree velocity coordinates, phi^T M phi = 1
    damping_ratios: np.ndarray  # (f,) modal damping ratios (NaN where omega = 0)
    damped_eigenvalues: np.ndarray  # (2f,) eigenvalues s of M_r s^2 + C_r s + K_r = 0, complex
    coupling: float  # largest |off-diagonal| / sqrt(diag_i diag_j) of the modal damping matrix
    labels: tuple[str, ...]  # names of the tree velocity coordinates (rows of ``shapes``)
    M: np.ndarray  # (nv, nv) mass matrix at rest
    K: np.ndarray  # (nv, nv) Hessian of the Lagrangian at rest
    C: np.ndarray  # (nv, nv) damping matrix at rest
    N: np.ndarray  # (nv, f) orthonormal null-space basis of the constraint Jacobian

    @property
    def omega(self) -> np.ndarray:
        """Natural circular frequencies, rad/s (0 for a neutral direction, NaN for an unstable one)."""
        w = np.full(self.eigenvalues.shape, np.nan)
        ok = self.eigenvalues >= 0
        w[ok] = np.sqrt(self.eigenvalues[ok])
        w[self.neutral] = 0.0
        return w

    @property
    def frequency_hz(self) -> np.ndarray:
        return self.omega / (2.0 * np.pi)


def linear_modes(model: Model, at_file: bool = False, hold=(), q0=None) -> Modes:
    """Modes about the rest Newton finds from the file's configuration, or (``at_file``)
    about the file's configuration itself, which must then be an equilibrium
    (:class:`~.equilibrium.EquilibriumError` otherwise)."""
    st = Statics(model, held_joints(model, hold))
    eq = check_equilibrium(model, q0, hold) if at_file else find_equilibrium(model, q0, hold, statics=st)
    return modes_at(st, eq)


def modes_at(st: Statics, eq: Equilibrium) -> Modes:
    """The modes about the equilibrium ``eq`` of ``st``'s model."""
    m = st.model
    q = eq.q
    _, A = st.constraints(q)
    N = null_space(A, m.nv)
    Q = st.generalized_force(q)
    lam = st.multipliers(Q, A)
    K = st.hessian(q, lam)
    M = st.mass_matrix(q)
    C = st.damping_matrix(q)
    Mr, Kr, Cr = (0.5 * (X + X.T) for X in (N.T @ M @ N, N.T @ K @ N, N.T @ C @ N))
    f = N.shape[1]
    if f == 0:
        empty = np.zeros(0)
        return Modes(eq, empty, np.zeros(0, bool), np.zeros((m.nv, 0)), empty, np.zeros(0, complex), 0.0,
                     tuple(st.coordinate_labels()), M, K, C, N)
    w2, Z = scipy.linalg.eigh(Kr, Mr)
    shapes = N @ Z  # phi^T M phi = z^T M_r z = 1
    for k in range(f):  # the sign: the largest component positive
        a = np.abs(shapes[:, k])
        i = int(np.flatnonzero(a >= (1.0 - 1e-9) * np.max(a))[0])
        if shapes[i, k] < 0:
            shapes[:, k] *= -1.0
            Z[:, k] *= -1.0
    Cm = Z.T @ Cr @ Z  # modal damping matrix
    omega = np.sqrt(np.maximum(w2, 0.0))
    zeta = np.full(f, np.nan)
    neutral = np.abs(w2) <= NEUTRAL_TOL * max(float(np.max(np.abs(w2))), 1e-300)
    ok = (w2 > 0) & ~neutral
    zeta[ok] = np.diag(Cm)[ok] / (2.0 * omega[ok])
    d = np.sqrt(np.abs(np.diag(Cm)))
    off = np.abs(Cm - np.diag(np.diag(Cm)))
    den = np.outer(d, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(den > 0, off / den, np.where(off > 0, np.inf, 0.0))
    coupling = float(np.max(ratio)) if f > 1 else 0.0
    # the damped system: [z'; z''] = [[0, I], [-Mr^-1 Kr, -Mr^-1 Cr]] [z; z']
    Minv = np.linalg.inv(Mr)
    S = np.block([[np.zeros((f, f)), np.eye(f)], [-Minv @ Kr, -Minv @ Cr]])
    s = np.linalg.eigvals(S)
    s = s[np.lexsort((s.imag, np.abs(s)))]
    return Modes(eq, w2, neutral, shapes, zeta, s, coupling, tuple(st.coordinate_labels()), M, K, C, N)


def poses_along(model: Model, q: np.ndarray, dv: np.ndarray, statics: Statics | None = None):
    """Body poses ``(x (nb, 3), R (nb, 3, 3))``, in file order, at the configuration ``q``
    moved by the tree-velocity increment ``dv`` (a mode shape times an amplitude) and put
    back onto the loops where it can be: what an animation of a mode draws."""
    st = statics or Statics(model)
    qn = st.retract(q, np.asarray(dv, dtype=float))
    qp, res = st.project(qn)
    st.pose(qp if res <= 1e-9 else qn)
    order = model.body_internal
    return st.x[order].copy(), st.R[order].copy()


def write_modes(modes: Modes, directory) -> list:
    """``modes.csv`` (one row per mode) and ``shapes.csv`` (one row per mode and tree
    coordinate) in ``directory`` (docs/user-guide.md, "Static equilibrium and vibration modes")."""
    from pathlib import Path

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    f = modes.eigenvalues.shape[0]
    with open(d / "modes.csv", "w", encoding="utf-8", newline="\n") as fh:
        fh.write("mode,frequency_hz,omega_rad_s,damping_ratio,eigenvalue\n")
        for k in range(f):
            row = (modes.frequency_hz[k], modes.omega[k], modes.damping_ratios[k], modes.eigenvalues[k])
            fh.write(f"{k + 1}," + ",".join(repr(float(v)) for v in row) + "\n")
    with open(d / "shapes.csv", "w", encoding="utf-8", newline="\n") as fh:
        fh.write("mode,coordinate,amplitude\n")
        for k in range(f):
            for i, label in enumerate(modes.labels):
                fh.write(f"{k + 1},{label},{float(modes.shapes[i, k])!r}\n")
    return [d / "modes.csv", d / "shapes.csv"]
