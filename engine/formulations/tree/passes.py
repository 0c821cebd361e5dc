"""The three tree passes over the assembly tree: the matrix pass, the bias pass and the
disassembly, each one parallel region over the independent subtrees
(:func:`assembly.subtree_partition`) and then the merges above them, for blocks of size
6 (``dca``, ``hdca``) and 7 (``index3``)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ...cache_locator import variant
from .merge import (merge_bias, merge_bias_one, merge_down, merge_down_one, merge_matrices, merge_matrices_leaf3,
                    merge_matrices_one)
from .regions import region_biases, region_down, region_matrices




@njit(cache=True, nogil=True, inline='always')
def one_joint_merge(m, ix, nd):
    """The merge has one interface joint with at most nd rows: the axpy kernels apply."""
    return ix.if_start[m + 1] - ix.if_start[m] == 1 and ix.m_nr[m] <= nd


@njit(cache=True, nogil=True, inline='always')
def _region_at(m, hy):
    """The region merge m heads, -2 inside one, -1 none."""
    return hy.region_of[m]


@njit(cache=True, nogil=True, inline='always')
def _no_region_at(m, hy):
    """Passes without regions: no merge is in one."""
    return -1


# Kernels made by a factory close over constants only (ints and booleans), never over
# another kernel: numba keys a closure's cache entry by pickling the cells, and a kernel
# pickles with a uuid drawn in each process and the signatures compiled so far, so a
# closure over a kernel misses the cache in every process and compiles again -- 24 s
# for hdca's first evaluation, 36 s for index-3's, measured before this was so
# (docs/compile-time.md, "Closures over constants only").  Kernels are called as
# module globals, chosen by branches on the constants, which numba prunes before typing.


def _loops(nd: int, regions: bool, leaf_blocks: bool = False):
    """The three passes' loops over a range of merges, for blocks of size ``nd``: with
    ``regions``, an articulated-body region is assembled by its recursion where its head
    merge is (merges inside it are skipped); with ``leaf_blocks`` (nd = 7, index-3) the
    matrix pass takes :func:`merge_matrices_leaf3` where it applies."""

    @njit(cache=True, nogil=True, _nrt=False)
    @variant(f"nd{nd}")
    def matrices_over(merges, k0, k1, ix, tw, eps, sgn, tol, hy):
        """The matrix pass over ``merges[k0:k1]``, in order (a region by its head)."""
        for k in range(k0, k1):
            m = merges[k]
            rg = _region_at(m, hy) if regions else _no_region_at(m, hy)
            if rg >= 0:
                if regions:
                    region_matrices(rg, ix, tw.Phi, hy)
            elif rg == -2:
                continue
            elif one_joint_merge(m, ix, nd):
                done = False
                if leaf_blocks:  # a closure constant: the other passes do not compile it
                    done = merge_matrices_leaf3(m, ix, tw, eps, sgn, tol)
                if not done:
                    merge_matrices_one(m, ix, tw, eps, sgn, tol, nd)
            else:
                merge_matrices(m, ix, tw, eps, sgn, tol)

    @njit(cache=True, nogil=True, _nrt=False)
    @variant(f"nd{nd}")
    def biases_over(merges, k0, k1, ix, tw, g0, sgn, hy):
        """The bias pass over ``merges[k0:k1]``, in order."""
        for k in range(k0, k1):
            m = merges[k]
            rg = _region_at(m, hy) if regions else _no_region_at(m, hy)
            if rg >= 0:
                if regions:
                    region_biases(rg, ix, tw.bv, tw.G, g0, hy)
            elif rg == -2:
                continue
            elif one_joint_merge(m, ix, nd):
                merge_bias_one(m, ix, tw, g0, sgn, nd)
            else:
                merge_bias(m, ix, tw, g0, sgn)

    @njit(cache=True, nogil=True, _nrt=False)
    @variant(f"nd{nd}")
    def down_over(merges, k0, k1, ix, Fh, G, sel, lam, Y, y0, hy):
        """The disassembly over ``merges[k0:k1]``, in reverse order: the six arrays of
        ``TreeWork`` it reads or writes, not the tuple (:func:`_passes`)."""
        for k in range(k1 - 1, k0 - 1, -1):
            m = merges[k]
            rg = _region_at(m, hy) if regions else _no_region_at(m, hy)
            if rg >= 0:
                if regions:
                    region_down(rg, ix, Fh, G, lam, hy, np.bool_(True))  # a bool as dca passes it, not a literal
            elif rg == -2:
                continue
            elif one_joint_merge(m, ix, nd):
                merge_down_one(m, ix, Fh, G, lam, Y, y0, nd)
            else:
                merge_down(m, ix, Fh, G, sel, lam, Y, y0)

    return matrices_over, biases_over, down_over


#: the loops for 6-vectors with regions (dca, hdca) and for Euler-parameter coordinates (index-3)
_matrices_over6, _biases_over6, _down_over6 = _loops(6, True)
_matrices_over7, _biases_over7, _down_over7 = _loops(7, False, True)


def _passes(nd: int):
    """The three tree passes for blocks of size ``nd`` (6: dca, hdca; 7: index-3), a
    compile-time constant of each (a closure variable): LLVM sees the one-joint kernels'
    nd loops with constant trip counts and unrolls and vectorises them (index-3's matrix
    pass at 128 links in 0.6 of the time with the size a variable).  One set
    per size, so a formulation compiles only its own; merges over several joints take the
    general kernels.  The loops are :func:`_loops`'s.  Each pass takes the tree's index
    ``ix``, the passes' workspace ``tw`` (:class:`~.layout.TreeWork`, ``TreeLayout.work``)
    and, dca's and hdca's, the regions' workspace ``hy`` (:meth:`TreeLayout.hybrid`).  The
    parallel loops only hand ``tw`` on to the loops they call, which write through it:
    numba may drop a write through a tuple's field made in a parallel loop's own body.
    The disassembly takes its six arrays out of ``tw`` before its loop and hands those
    on: numba passes a tuple to a kernel it calls member by member, the ones it does not
    read too, and the disassembly reads few."""
    six = nd == 6

    # Each pass calls its loop once per subtree and once for the top (from
    # ``sub_start[0]`` = 0, an int64 like the subtrees' bounds: one specialisation): the
    # merge kernels are then compiled once per pass, not once in the parallel region's
    # body and again in the serial loop (docs/compile-time.md, "What a cold compile costs, and why").

    @njit(cache=True, nogil=True, _nrt=False, parallel=True)
    @variant(f"nd{nd}")
    def assemble_matrices(ix, tw, eps, sgn, tol, hy=None):
        """Matrix pass, leaves to root (Phi of the leaves already filled): the independent
        subtrees in one parallel region, then the few merges above them.  ``sgn`` = +1 when
        ``G Phi G^T - eps`` is positive semi-definite (DCA, HDCA), -1 when it is negative
        definite (index-3's ``delta`` blocks)."""
        sub_start, sub_merges, top_merges = ix.sub_start, ix.sub_merges, ix.top_merges
        if sub_start.shape[0] > 1:  # no parallel region at all for small trees
            for s in prange(sub_start.shape[0] - 1):
                if six:
                    _matrices_over6(sub_merges, sub_start[s], sub_start[s + 1], ix, tw, eps, sgn, tol, hy)
                else:
                    _matrices_over7(sub_merges, sub_start[s], sub_start[s + 1], ix, tw, eps, sgn, tol, hy)
        if six:
            _matrices_over6(top_merges, sub_start[0], top_merges.shape[0], ix, tw, eps, sgn, tol, hy)
        else:
            _matrices_over7(top_merges, sub_start[0], top_merges.shape[0], ix, tw, eps, sgn, tol, hy)

    @njit(cache=True, nogil=True, _nrt=False, parallel=True)
    @variant(f"nd{nd}")
    def assemble_biases(ix, tw, g0, sgn, hy=None):
        """Bias pass, leaves to root (the leaves' bv already filled), for the rows' constant
        terms ``g0`` (dca, hdca: ``tw.g0``; index-3's solves bring their own)."""
        sub_start, sub_merges, top_merges = ix.sub_start, ix.sub_merges, ix.top_merges
        if sub_start.shape[0] > 1:
            for s in prange(sub_start.shape[0] - 1):
                if six:
                    _biases_over6(sub_merges, sub_start[s], sub_start[s + 1], ix, tw, g0, sgn, hy)
                else:
                    _biases_over7(sub_merges, sub_start[s], sub_start[s + 1], ix, tw, g0, sgn, hy)
        if six:
            _biases_over6(top_merges, sub_start[0], top_merges.shape[0], ix, tw, g0, sgn, hy)
        else:
            _biases_over7(top_merges, sub_start[0], top_merges.shape[0], ix, tw, g0, sgn, hy)

    @njit(cache=True, nogil=True, _nrt=False, parallel=True)
    @variant(f"nd{nd}")
    def disassemble(ix, tw, hy=None):
        """Root to leaves: every joint's multipliers and every handle's force."""
        sub_start, sub_merges, top_merges = ix.sub_start, ix.sub_merges, ix.top_merges
        Fh = tw.Fh  # out of the tuple before the parallel loop, one a line (:func:`_passes`)
        lam = tw.lam
        G, sel, Y, y0 = tw.G, tw.sel, tw.Y, tw.y0
        if six:
            _down_over6(top_merges, sub_start[0], top_merges.shape[0], ix, Fh, G, sel, lam, Y, y0, hy)
        else:
            _down_over7(top_merges, sub_start[0], top_merges.shape[0], ix, Fh, G, sel, lam, Y, y0, hy)
        if sub_start.shape[0] > 1:
            for s in prange(sub_start.shape[0] - 1):
                if six:
                    _down_over6(sub_merges, sub_start[s], sub_start[s + 1], ix, Fh, G, sel, lam, Y, y0, hy)
                else:
                    _down_over7(sub_merges, sub_start[s], sub_start[s + 1], ix, Fh, G, sel, lam, Y, y0, hy)

    return assemble_matrices, assemble_biases, disassemble


#: the passes for 6-vectors (dca, hdca) and for Euler-parameter coordinates (index-3)
assemble_matrices6, assemble_biases6, disassemble6 = _passes(6)
assemble_matrices7, assemble_biases7, disassemble7 = _passes(7)
