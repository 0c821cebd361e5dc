"""``dca``'s evaluation kernel: one right-hand side -- kinematics, applied forces, leaves,
rows, the three tree passes, accelerations -- in one call (docs/derivations.md, "DCA")."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..cache_locator import variant
from ..constraints import ConArrays
from ..forces import ForceArrays, tree_applied_forces
from ..kinematics import KinArrays, fk_positions, fk_velocities, motion_subspace, ode_rates
from . import tree
from .tree import Regions, TreeIndex, TreeWork
from .tree_kernels import (Baumgarte, BodyWork, TreeModel, accelerations, accelerations_over, cut_rows, leaves,
                           leaves_over, tree_rows)
from .workspace import unpack


class DCAWorkspace(NamedTuple):
    """Everything one ``dca`` evaluation reads and writes, gathered once by
    :meth:`DCAFormulation._workspace` and handed to the kernel as one table
    (:mod:`.workspace`): the model's arrays, the layout's, and the formulation's, each
    allocated once and only ever written in place."""

    mk: KinArrays  # the kinematic kernels' model arrays
    ca: ConArrays  # the constraint kernels' model arrays
    fa: ForceArrays  # the force kernels' model arrays
    tm: TreeModel  # the tree kernels' model arrays
    ix: TreeIndex  # the assembly tree and the rows, flat
    bw: BodyWork  # the bodies' poses, twists, loads and accelerations
    tw: TreeWork  # the tree solve's workspace (the layout's)
    hy: Regions  # the articulated-body regions
    jq: np.ndarray  # (nj,) joint coordinates of the springs, tree_applied_forces
    jq_ref: np.ndarray  # (nj,) their reference (the branch they are on), DCAFormulation.evaluate
    phi: np.ndarray  # (n_rows,) closure residuals of the cut joints, cut_rows
    bg: Baumgarte  # Baumgarte's terms in the cut joints' rows ((0, 0): none)
    tol: float  # pivot tolerance of the merges' factors
    mk_trail: KinArrays  # the trailing role's kinematic arrays (scratch of its own; dca_chain)
    progress: np.ndarray  # the two roles' counters (dca_chain)
    #: (1,) not 0 while the row loop makes an output instant's evaluation with the rates
    #: (``RowKernels.at_row``): ``evaluate_region`` then makes the multipliers too
    at_row: np.ndarray


def _evaluator(direct: bool):
    """The evaluation kernel; ``direct``, a compile-time constant (numba prunes the other
    branch before typing it), for a tree that is one grounded region on one thread."""

    @njit(cache=True, nogil=True, _nrt=False)
    @variant("region" if direct else "tree")
    def evaluate(desc, proto, y, out):
        """One DCA evaluation: every pass, in one call (docs/derivations.md, "DCA").

        The workspace comes as one table (``desc``, ``proto``: :mod:`.workspace`,
        :class:`DCAWorkspace` lists it): unboxing its ~120 arrays one by one
        cost about 1.8 us a call whatever the size (docs/performance.md, "The workspace
        as one argument").  Compiled without reference counting (``_nrt=False``)
        although some passes allocate scratch (those are ``_nrt=True`` themselves and
        free it before they return; none returns an array): the workspace's arrays are
        plain views.

        ``direct`` (``evaluate_region``): the whole tree is one grounded region on one
        thread (``TreeLayout.one_region``: an open tree hanging from ground by one joint,
        so no cut joint either), and the region's three passes and the serial body loops
        are called directly.  Through the tree passes each call layer passes ``ix`` and
        ``hy`` on, some 400 words, and the six layers skipped cost about 1 us a
        right-hand side (docs/performance.md, "One region, called directly").  The same
        arithmetic in the same order: the same result bit for bit.  A kernel of its own,
        chosen when the formulation is built: as a branch at run time the extra call
        sites made every other mechanism's right-hand side about 1 us slower.

        ``y`` = (q, v) is the state.  The right-hand side (qdot, vdot) goes to ``out`` if
        it is as long as ``y``; an empty ``out`` (``NO_RATES``) fills the workspace only.
        With the rates, ``direct`` leaves the joints' forces and multipliers out of the
        disassembly: a region's accelerations come from its recursion, and nothing in the
        rates reads them (docs/performance.md, "The rates without the multipliers"); the
        formulation's readers of them evaluate without rates (``_solve``), and the row
        loop's evaluation at an output instant, whose rates are the next step's first,
        asks for both (``at_row``).
        The rates are computed here (:func:`~engine.kinematics.ode_rates`): as a second
        kernel call they cost 1 us a right-hand side.  Returns whether v and vdot are all
        finite."""
        mk, ca, fa, tm, ix, bw, tw, hy, jq, jq_ref, phi, bg, tol, mk_trail, progress, at_row = unpack(desc, proto)
        nb = ix.nb
        row_adr = ix.row_adr
        x, R, P, S, V, c = bw.x, bw.R, bw.P, bw.S, bw.V, bw.c
        G = tw.G
        g0 = tw.g0
        vdot = bw.vdot
        nq = y.shape[0] - vdot.shape[0]
        q = y[:nq]
        v = y[nq:]
        fk_positions(mk, q, x, R, P)
        motion_subspace(mk, q, R, S)
        fk_velocities(mk, x, P, S, v, V, c)
        tree_applied_forces(fa, q, tm.q_adr, tm.spring_tree, tm.spring_cut, x, R, V, jq, jq_ref, bw.Fext)
        tree_rows(mk, tm.perp_pred, R, S, c, G[0], G[1], g0, row_adr)
        if direct:
            leaves_over(0 * nb, nb, ix, tm.mass, tm.inertia, tm.inertia_inv, bw, tw.Phi, tw.bv, np.bool_(True),
                        np.bool_(True), hy)
            rg = 0 * nb  # an int64, not the literal 0: one compiled copy of each region kernel
            tree.region_matrices(rg, ix, tw.Phi, hy)
            tree.region_biases(rg, ix, tw.bv, G, g0, hy)
            tree.region_down(rg, ix, tw.Fh, G, tw.lam, hy, out.shape[0] != y.shape[0] or at_row[0] != 0.0)
            for phase in range(2):
                accelerations_over(phase, 0 * nb, nb, ix, mk, tm.mass, bw, tw.Fh, hy)
        else:
            if tm.ncut > 0:
                cut_rows(ca, nb, x, R, V, P, G[0], G[1], g0, phi, row_adr, bg)
            leaves(ix, tm.mass, tm.inertia, tm.inertia_inv, bw, tw.Phi, tw.bv, np.bool_(True), np.bool_(True), hy)
            tree.assemble_matrices6(ix, tw, 0.0, 1.0, tol, hy)
            tree.assemble_biases6(ix, tw, g0, 1.0, hy)
            tree.disassemble6(ix, tw, hy)
            accelerations(ix, mk, tm.mass, bw, tw.Fh, hy)
        if out.shape[0] != y.shape[0]:
            return True
        return ode_rates(mk, q, v, vdot, out)

    return evaluate


#: the evaluation kernel, and the one for a tree that is one grounded region on one thread
evaluate = _evaluator(False)
evaluate_region = _evaluator(True)
