"""The partition monitor's arithmetic in compiled code (:mod:`.rcr_partition`): the
singular values of the mass-whitened loop Jacobian that the mobility measure and the
rank are read from.

Near a singular configuration ``rcr`` samples the mobility measure after every output
interval and searches for a partition where a block's conditioning falls; numpy's
Cholesky, triangular solve and SVD cost some 40 us a sample on a four-bar, more than the
interval's right-hand sides.  The mass matrix (:class:`.rcr_partition.LoopJacobian`) is
summed here too: numpy's small products cost some 10 us a sample on a four-bar."""

from __future__ import annotations

import numpy as np
from numba import njit

from .dense_kernels import cholesky_in_place, composite_force, mass_entries
from .dense_linalg import forward


@njit(cache=True, nogil=True, _nrt=True)
def whitened_singular_values(K, M):
    """The singular values, largest first, of ``K L^-T`` with ``M = L L^T``: the loop
    Jacobian ``K`` (rows, nv) in mass-whitened speeds.  Empty where ``M`` is not positive
    definite (the caller's numpy path then says why)."""
    n = M.shape[0]
    L = M.copy()
    if not cholesky_in_place(L, n):
        return np.empty(0)
    W = np.empty((K.shape[0], n))
    for r in range(K.shape[0]):
        forward(L, K[r], W[r])
    return np.linalg.svd(W, full_matrices=False)[1]


@njit(cache=True, nogil=True, _nrt=False)
def composite_mass_matrix(parent, v_adr, nv_j, I6, S6, M, F):
    """The joint-space mass matrix into ``M`` (overwritten): the bodies' 6x6 inertias about
    the origin ``I6`` summed in place into composite ones (leaves first: a parent's index is
    below its children's), then ``M[a, b] = S_a . (I^c_i S_b)`` for every speed ``b`` of
    body ``i`` and every speed ``a`` of ``i`` and its ancestors, symmetric; ``S6`` (nv, 6):
    the speeds' motion subspaces about the origin; ``F``: (6,) scratch.  :func:`.dense_kernels.crba`
    without the shifts between body frames."""
    nb = I6.shape[0]
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            for r in range(6):
                for c in range(6):
                    I6[p, r, c] += I6[i, r, c]
    for a in range(M.shape[0]):
        for b in range(M.shape[1]):
            M[a, b] = 0.0
    for i in range(nb):
        for kb in range(v_adr[i], v_adr[i] + nv_j[i]):
            composite_force(I6[i], S6[kb], F)
            j = i
            while j >= 0:  # about the origin: F needs no shift from body to body
                mass_entries(M, S6, F, kb, v_adr[j], nv_j[j])
                j = parent[j]
