"""The partition monitor's arithmetic in compiled code (:mod:`.rcr_partition`): the
singular values of the mass-whitened loop Jacobian that the mobility measure and the
rank are read from.

Near a singular configuration ``rcr`` samples the mobility measure after every output
interval and searches for a partition where a block's conditioning falls; numpy's
Cholesky, triangular solve and SVD cost some 40 us a sample on a four-bar, more than the
interval's right-hand sides.  The mass matrix stays numpy's (:class:`.rcr_partition.LoopJacobian`):
compiled sums differ from BLAS's in the last bits, and the partition's whitening with them."""

from __future__ import annotations

import numpy as np
from numba import njit

from .dense_kernels import cholesky_in_place
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
