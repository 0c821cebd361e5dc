"""The partition monitor's arithmetic in compiled code (:mod:`.rcr_partition`): the
joint-space mass matrix of :class:`~.rcr_partition.LoopJacobian` and the singular values
of the mass-whitened loop Jacobian that the mobility measure and the rank are read from.

Near a singular configuration ``rcr`` samples the mobility measure after every output
interval and searches for a partition where a block's conditioning falls; in numpy each
sample cost some 60 us of small-array calls on a four-bar, more than the interval's
right-hand sides."""

from __future__ import annotations

import numpy as np
from numba import njit

from .dense_kernels import cholesky_in_place
from .dense_linalg import forward


@njit(cache=True, nogil=True, _nrt=False)
def joint_space_inertia(parent, v_adr, nv_j, I6, S6, F, M):
    """The joint-space mass matrix ``M`` (nv x nv) from each body's spatial inertia about
    the origin ``I6`` (summed into its parent's in place: the composite inertias) and the
    tree speeds' motion subspace columns ``S6`` (nv, 6): ``M[cj, ci] = S_j^T I^c_i S_i``
    for each body ``i`` and every ``j`` on its path to ground, and the transpose (the
    diagonal blocks as that transpose).  ``F``: (6, at least the largest nv_j) scratch."""
    nb = parent.shape[0]
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            for a in range(6):
                for b in range(6):
                    I6[p, a, b] += I6[i, a, b]
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            M[r, c] = 0.0
    for i in range(nb):
        ci, ni = v_adr[i], nv_j[i]
        for a in range(6):
            for c in range(ni):
                s = 0.0
                for b in range(6):
                    s += I6[i, a, b] * S6[ci + c, b]
                F[a, c] = s
        j = i
        while j >= 0:
            cj, nj = v_adr[j], nv_j[j]
            for r in range(nj):
                for c in range(ni):
                    s = 0.0
                    for a in range(6):
                        s += S6[cj + r, a] * F[a, c]
                    M[ci + c, cj + r] = s
                    if j != i:
                        M[cj + r, ci + c] = s
            j = parent[j]


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
