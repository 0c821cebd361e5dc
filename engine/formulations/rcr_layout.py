"""The layout of an ``rcr`` partition as its kernels read it (:mod:`.rcr_kernels`).

A partition (:mod:`.rcr_partition`) splits the loop speeds of every loop cluster into
independent and dependent ones, block by block.  The kernels take that choice as flat
``int64`` arrays -- compressed-row (CSR) lists of clusters, their bodies and independent
speeds, and of blocks, their rows, columns and dependent columns -- gathered in one
:class:`PartitionLayout` (``lx``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model import Model


class PartitionLayout(NamedTuple):
    """A partition for the kernels (every field an ``int64`` array; ``ncl`` clusters,
    ``nblk`` blocks).  Built by :func:`partition_layout`."""

    body_cl: np.ndarray  # (nb,) cluster of the body's tree joint, -1 outside loops
    cl_base: np.ndarray  # (ncl,) loop base body 0_i of the cluster (-1 ground)
    cl_first: np.ndarray  # (ncl,) smallest body index of the cluster
    cl_bstart: np.ndarray  # (ncl+1,) CSR into cl_bodies
    cl_bodies: np.ndarray  # cluster bodies, ascending
    cl_istart: np.ndarray  # (ncl+1,) CSR into ind_cols: independent speeds per cluster
    ind_cols: np.ndarray  # global velocity index of each independent speed
    cl_kstart: np.ndarray  # (ncl+1,) CSR into the blocks, in solve order
    blk_rstart: np.ndarray  # (nblk+1,) CSR into blk_rows
    blk_rows: np.ndarray  # cut-joint constraint rows of each block
    blk_cstart: np.ndarray  # (nblk+1,) CSR into blk_cols
    blk_cols: np.ndarray  # velocity indices the block's rows touch (loop path columns)
    blk_dstart: np.ndarray  # (nblk+1,) CSR into blk_dep
    blk_dep: np.ndarray  # local positions (in blk_cols) of the block's dependent speeds
    blk_kofs: np.ndarray  # (nblk+1,) offsets of the block matrices in Kval (m x n)
    blk_qofs: np.ndarray  # (nblk+1,) offsets of the dependent QR factors in Qf (m x r)
    row_joint: np.ndarray  # (rows,) cut joint of each row (negative: a row that is not a cut joint's)
    row_adr: np.ndarray  # (nj,) first cut row of a cut joint (tree joints: 0)
    lca: np.ndarray  # (nj,) loop base of cut joint j: common ancestor of its bodies
    col_joint: np.ndarray  # (nv,) tree joint of each velocity


def cut_rows_of(model: Model):
    """(first cut row of each joint, cut joint of each cut row)."""
    m = model
    row_adr = np.zeros(m.nj, dtype=np.int64)
    row_joint = []
    r = 0
    for j in range(m.nb, m.nj):
        row_adr[j] = r
        row_joint += [j] * int(m.nc_j[j])
        r += int(m.nc_j[j])
    return row_adr, np.asarray(row_joint, dtype=np.int64)


def partition_layout(model: Model, structure, choice) -> PartitionLayout:
    """The kernels' :class:`PartitionLayout` for ``choice``: per cluster (blocks,
    independent speeds), a block being (cut rows, path columns, dependent columns);
    ``structure``: :func:`.rcr_partition.loop_structure`'s (loop bases, loop paths,
    clusters)."""
    m = model
    lca, paths, clusters = structure
    row_adr, row_joint = cut_rows_of(m)
    body_cl = np.full(m.nb, -1, dtype=np.int64)
    cl_base, cl_first, cl_bstart, cl_bodies = [], [], [0], []
    cl_istart, ind_cols, cl_kstart = [0], [], [0]
    blk_rstart, blk_rows, blk_cstart, blk_cols, blk_dstart, blk_dep = [0], [], [0], [], [0], []
    blk_kofs, blk_qofs = [0], [0]
    for ci, (loops, (blocks, indep)) in enumerate(zip(clusters, choice)):
        bodies = sorted(set(i for l in loops for i in paths[l]))
        for i in bodies:
            body_cl[i] = ci
        cl_base.append(int(m.parent[bodies[0]]) if bodies else -1)
        cl_first.append(bodies[0] if bodies else -1)
        cl_bodies += bodies
        cl_bstart.append(len(cl_bodies))
        ind_cols += sorted(indep)
        cl_istart.append(len(ind_cols))
        for rows, cols, dep in blocks:
            blk_rows += rows
            blk_rstart.append(len(blk_rows))
            blk_cols += cols
            blk_cstart.append(len(blk_cols))
            pos = {c: k for k, c in enumerate(cols)}
            blk_dep += [pos[c] for c in dep]
            blk_dstart.append(len(blk_dep))
            blk_kofs.append(blk_kofs[-1] + len(rows) * len(cols))
            blk_qofs.append(blk_qofs[-1] + len(rows) * len(dep))
        cl_kstart.append(len(blk_rstart) - 1)
    col_joint = np.zeros(m.nv, dtype=np.int64)
    for i in range(m.nb):
        col_joint[m.v_adr[i]:m.v_adr[i] + m.nv_j[i]] = i
    i64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
    return PartitionLayout(
        body_cl, i64(cl_base), i64(cl_first), i64(cl_bstart), i64(cl_bodies), i64(cl_istart), i64(ind_cols),
        i64(cl_kstart), i64(blk_rstart), i64(blk_rows), i64(blk_cstart), i64(blk_cols), i64(blk_dstart),
        i64(blk_dep), i64(blk_kofs), i64(blk_qofs), row_joint, row_adr, lca, col_joint)
