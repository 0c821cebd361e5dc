"""``dca`` on an unbranched chain on two threads: the one-region evaluation in two roles
that run beside each other, each a few bodies behind the one it needs, so that the
sequential passes along the chain overlap (docs/dca-two-threads.md, "Two threads on one chain")."""

from __future__ import annotations

import time

import numpy as np
from numba import njit, prange

from ..atomics import claim, load_acquire, store_release, wait_for
from ..forces import tree_applied_forces
from ..kinematics import position_step, subspace_step, velocity_step, qdot_from_v, second_rates
from . import tree
from .base import StateKernel
from .dca_kernels import evaluate_region
from .tree_kernels import accelerations_over, leaves_over, region_inertia, row_step
from .workspace import unpack


#: bodies per block of the two-thread chain kernel: each role publishes its progress, and
#: reads the other's, once a block -- a count written for every body would move its cache
#: line between the two cores a thousand times a pass
CHAIN_BLOCK = 16
#: how many bodies a role stays behind the last one the other has published, beyond
#: what its step needs: two blocks, so that neither it nor its core's prefetcher (which
#: reads ahead along the arrays) touches the cache lines the other core is writing --
#: a line read while it is written goes back and forth between the cores
#: (docs/dca-two-threads.md, "Two threads on one chain": 3-11 % off the two-thread time, interleaved)
CHAIN_LAG = 2 * CHAIN_BLOCK
#: how many times the first role to arrive reads the handshake before it takes the
#: whole evaluation on alone (the other thread busy elsewhere, or never coming)
CHAIN_PATIENCE = 20000
#: the progress counters (``progress``, int64), a cache line apart: the handshake; the
#: bodies whose positions are done (root first), whose twists and rows are, whose own
#: inertias are (tips first), the matrix pass's steps done, the bodies disassembled (root
#: first); and whether the rates came out finite
ROLE, POS, VEL, INERTIA, MAT, DOWN, FINITE = 0, 8, 16, 24, 32, 40, 48
CHAIN_PROGRESS = 56


@njit(cache=True, nogil=True, inline='always')
def take_role(progress):
    """Which part of the evaluation this thread does: 0 the leading role, 1 the trailing
    one, 2 all of it (the other thread did not come in ``CHAIN_PATIENCE`` reads: a thread
    that waited for a role nobody runs would wait for ever), 3 none (the first went on
    alone).  The first to arrive leads."""
    if claim(progress, ROLE, 0, 1):
        for _ in range(CHAIN_PATIENCE):
            if load_acquire(progress, ROLE) == 2:
                return 0
        if claim(progress, ROLE, 1, 3):
            return 2
        return 0
    if claim(progress, ROLE, 1, 2):
        return 1
    return 3


@njit(cache=True, nogil=True, _nrt=False)
def chain_lead(mk, fa, ix, tm, q, bw, jq, jq_ref, tw, hy, forces, progress):
    """The leading role of :func:`evaluate_chain`: positions (root first), the bodies'
    own inertias (tips first), then -- once the twists and rows are done -- the applied
    forces, the bodies' bias wrenches, the bias pass behind the matrix pass, and the
    disassembly (with the joints' forces and multipliers if ``forces``).  The workspace
    is ``evaluate_region``'s (:class:`~.dca_kernels.DCAWorkspace`)."""
    nb = ix.nb
    row_adr, rows = ix.row_adr, ix.rows
    mass, inertia = tm.mass, tm.inertia
    x, R, P = bw.x, bw.R, bw.P
    G, g0, Fh, lam = tw.G, tw.g0, tw.Fh, tw.lam
    for i0 in range(0, nb, CHAIN_BLOCK):
        i1 = min(i0 + CHAIN_BLOCK, nb)
        for i in range(i0, i1):
            position_step(i, mk, q, x, R, P)
        store_release(progress, POS, i1)
    for i1 in range(nb, 0, -CHAIN_BLOCK):
        i0 = max(i1 - CHAIN_BLOCK, 0)
        for i in range(i0, i1):
            region_inertia(i, mass, inertia, x, R, P, hy)
        store_release(progress, INERTIA, nb - i0)
    wait_for(progress, VEL, nb, 0)
    tree_applied_forces(fa, q, tm.q_adr, tm.spring_tree, tm.spring_cut, x, R, bw.V, jq, jq_ref, bw.Fext)
    leaves_over(0 * nb, nb, ix, mass, inertia, tm.inertia_inv, bw, tw.Phi, tw.bv, np.bool_(True), np.bool_(False), hy)
    done = 0
    for k in range(nb):  # body nb - 1 - k, once the matrix pass has passed it
        need = min(k + 1 + CHAIN_LAG, nb)
        if done < need:
            done = wait_for(progress, MAT, need, done)
        tree.bias_step(k, row_adr, rows, G, g0, hy)
    for k in range(nb - 1, -1, -1):  # body nb - 1 - k, root first
        tree.down_step(k, row_adr, rows, Fh, G, lam, hy, forces)
        if (nb - k) % CHAIN_BLOCK == 0 or k == 0:
            store_release(progress, DOWN, nb - k)


@njit(cache=True, nogil=True, _nrt=False)
def chain_trail(mk, ix, tm, q, v, bw, tw, out, hy, progress):
    """The trailing role of :func:`evaluate_chain`: motion subspaces, twists and the
    joints' rows behind the positions, the matrix pass behind the bodies' own inertias,
    the coordinates' rates (if ``out`` is to have them) while the disassembly starts, the
    accelerations behind it.  ``mk`` is the trailing role's own (``DCAWorkspace.mk_trail``)."""
    nb = ix.nb
    row_adr = ix.row_adr
    perp_pred = tm.perp_pred
    x, R, P, S, V, c = bw.x, bw.R, bw.P, bw.S, bw.V, bw.c
    G, g0 = tw.G, tw.g0
    done = 0
    for i0 in range(0, nb, CHAIN_BLOCK):
        i1 = min(i0 + CHAIN_BLOCK, nb)
        done = wait_for(progress, POS, min(i1 + CHAIN_LAG, nb), done)
        for i in range(i0, i1):
            subspace_step(i, mk, q, R, S)
            velocity_step(i, mk, x, P, S, v, V, c)
            row_step(i, mk, perp_pred, R, S, c, G[0], G[1], g0, row_adr)
        store_release(progress, VEL, i1)
    T = hy.LA[0]
    done = 0
    for k in range(nb):  # body nb - 1 - k into its parent, both bodies' own inertias set
        need = min(k + 2 + CHAIN_LAG, nb)
        if done < need:
            done = wait_for(progress, INERTIA, need, done)
        tree.matrix_step(k, T, hy)
        if (k + 1) % CHAIN_BLOCK == 0 or k == nb - 1:
            store_release(progress, MAT, k + 1)
    if out.shape[0] == q.shape[0] + v.shape[0]:
        qdot_from_v(mk, q, v, out)
    done = 0
    for i0 in range(0, nb, CHAIN_BLOCK):
        i1 = min(i0 + CHAIN_BLOCK, nb)
        done = wait_for(progress, DOWN, min(i1 + CHAIN_LAG, nb), done)
        for phase in range(2):  # a joint's acceleration needs its parent's body's: in this block or before
            accelerations_over(phase, i0, i1, ix, mk, tm.mass, bw, tw.Fh, hy)


@njit(cache=True, nogil=True, _nrt=False)
def chain_role(desc, proto, y, out):
    """One thread's part of :func:`evaluate_chain`: the role it takes (:func:`take_role`),
    run.  The workspace is unpacked here, inside the parallel region, rather than passed
    into it: numba's parallel regions cannot take the named tuples (``ix``, ``hy``) that
    :func:`unpack` makes."""
    mk, ca, fa, tm, ix, bw, tw, hy, jq, jq_ref, phi, bg, tol, mk_trail, progress, at_row = unpack(desc, proto)
    nq = y.shape[0] - bw.vdot.shape[0]
    q = y[:nq]
    v = y[nq:]
    role = take_role(progress)
    if role == 0:
        chain_lead(mk, fa, ix, tm, q, bw, jq, jq_ref, tw, hy, out.shape[0] != y.shape[0], progress)
    elif role == 1:
        chain_trail(mk_trail, ix, tm, q, v, bw, tw, out, hy, progress)
    elif role == 2:
        progress[FINITE] = evaluate_region(desc, proto, y, out)


@njit(cache=True, nogil=True, _nrt=False, parallel=True)
def evaluate_chain(desc, proto, y, out):
    """``evaluate_region`` on two threads, for an unbranched chain hanging from ground
    (docs/dca-two-threads.md, "Two threads on one chain"): the same steps in the same order
    for each body -- the same result bit for bit -- in two roles that run beside each
    other, each recursion ``CHAIN_LAG`` bodies or more behind the one it needs (:func:`chain_lead`,
    :func:`chain_trail`), so that the passes along the chain, sequential each, overlap.
    The body order is the region's: body ``i``'s parent is ``i - 1`` and the matrix pass's
    step ``k`` is body ``nb - 1 - k`` (``DCAFormulation`` checks).  When the other thread
    does not come (numba set to one thread, or the second core busy elsewhere), the first
    does it all as ``evaluate_region`` after ``CHAIN_PATIENCE`` reads (:func:`take_role`)."""
    mk, ca, fa, tm, ix, bw, tw, hy, jq, jq_ref, phi, bg, tol, mk_trail, progress, at_row = unpack(desc, proto)
    vdot = bw.vdot
    for k in range(0, CHAIN_PROGRESS, 8):
        progress[k] = 0
    for _ in prange(2):
        chain_role(desc, proto, y, out)
    if progress[ROLE] == 3:  # one thread did it all
        return progress[FINITE] != 0
    if out.shape[0] != y.shape[0]:
        return True
    return second_rates(y[y.shape[0] - vdot.shape[0]:], vdot, out)


#: a chain's ``rhs`` on two threads chooses its kernels (``DCAFormulation._choose_kernels``) at
#: the right-hand sides whose count ``nfev`` has ``nfev & CHAIN_RETIME_MASK == CHAIN_RETIME_AT``:
#: the 16th, then every 1024th.  Six extra calls a choice: about 0.6 % more work
CHAIN_RETIME_MASK = 1023
CHAIN_RETIME_AT = 16


def seconds(kernel: StateKernel, y: np.ndarray) -> float:
    """Wall seconds of one rates call of ``kernel`` at ``y``."""
    t0 = time.perf_counter()
    kernel.rates(y)
    return time.perf_counter() - t0


#: the arrays one role of ``evaluate_chain`` writes and the other reads, kept in two
#: copies that right-hand sides use in turn (``DCAFormulation._rhs_two_roles``).  Where a role
#: writes a cache line the other core read in the previous call, each store waits for
#: that core to give its copy up: on a 1024-body revolute chain the trailing role's
#: root-first loop took 69-72 us instead of 38.  With two copies the lines a call writes
#: were last touched two calls before (docs/dca-two-threads.md, "Two copies of what the roles
#: hand over").
CHAIN_TWIN = ("x", "R", "P", "S", "V", "c", "Fext", "G", "g0", "Fh", "lam", "rhs_body", "A", "vdot",
              "IA", "W", "U", "Dinv", "sz", "xa")


def swapped(values: tuple, old: list, new: list) -> tuple:
    """``values`` (a workspace, nested tuples) with each array of ``old``, wherever it
    occurs, replaced by the array of ``new`` at the same place."""
    by_id = {id(a): b for a, b in zip(old, new)}

    def walk(v):
        if isinstance(v, tuple):
            items = [walk(w) for w in v]
            return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
        return by_id.get(id(v), v) if isinstance(v, np.ndarray) else v

    return walk(values)
