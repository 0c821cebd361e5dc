"""The divide-and-conquer machinery shared by ``dca``, ``hdca`` and ``index3``: the tree solve.

Every node of the binary assembly tree (:class:`~linkwork.engine.assembly.AssemblyTree`)
is a set of bodies with *handles* -- the joints with one end inside it.  Each
formulation brings, per node, the linear relation between the forces applied
at its handles and a handle quantity ``x`` (spatial acceleration for DCA,
spatial velocity for HDCA, position increment for index-3):

    x_h = sum_k Phi[h, k] F_k + b_h                                   (1)

with ``nd x nd`` blocks (``nd`` = 6, or 7 for Euler-parameter coordinates),
and, per joint ``j``, its constraint rows on both ends

    G_pred,j x_pred + G_succ,j x_succ + g0_j = eps * Lambda_j,        (2)
    F on pred = G_pred,j^T Lambda_j,   F on succ = G_succ,j^T Lambda_j.

Merging children A and B over their shared (interface) joints eliminates the
interface multipliers:  with ``E_e`` the rows of ``G Phi`` coupling interface
constraints to external handle ``e`` and

    K = sum_sides G Phi G^T - eps 1,     r0 = sum_sides G b + g0,
    Y_e = K^-1 E_e,   y0 = K^-1 r0,
    Lambda = -(sum_e Y_e F_e + y0)                                    (3)

the merged node obeys (1) with

    Phi^C[e, f] = [e, f on one side] Phi^X[e, f] - E_e^T Y_f,   b^C_e = b^X_e - Y_e^T r0.   (4)

For DCA/HDCA these are Featherstone's formulas (paper 001 eqs. 26-36);
for index-3 with ``Phi = delta`` and ``eps = 1/alpha`` they are paper 000's
eqs. (35)-(39) (``C = -K^-1``).  ``K`` is factorised by Cholesky with diagonal
pivoting: dependent rows (redundant closure equations) show as vanishing
pivots and get zero multipliers -- a valid solution, since a force in the null
space of ``G Phi G^T`` moves nothing (docs/derivations.md, "DCA").

The matrix pass (``Phi^C``, ``K``, ``Y``) and the bias pass (``r0``, ``y0``,
``b^C``) are separate kernels: index-3's modified Newton iterations and
projections rerun only the bias pass.  Merges of one level are independent; the
passes cut the tree into independent subtrees (:func:`assembly.subtree_partition`) so each
pass opens a single parallel region -- a few fork/joins per evaluation, which
matters on loaded machines -- and run the few merges above the cut serially.
The passes exist once per block size (``assemble_matrices6`` ... for dca/hdca,
``...7`` for index-3), with the size a compile-time constant.

The modules, in the order the data flows:

- :mod:`.layout` -- the flat data the kernels read: :class:`TreeIndex`, :class:`Regions`,
  :class:`TreeWork` (the passes' workspace), :class:`TreeLayout` and :func:`build_layout`;
- :mod:`.factor` -- one merge's pivoted Cholesky factor (:class:`~.factor.Factor`) and its solves;
- :mod:`.merge` -- eqs. (3)-(4) for one merge: matrix, bias and disassembly kernels;
- :mod:`.regions` -- articulated-body regions assembled by their recursion;
- :mod:`.passes` -- the three passes over the whole tree, for blocks of 6 and of 7;
- :mod:`.singular` -- where the loops close, and the watch for singular configurations.
"""

from .layout import Regions, TreeIndex, TreeLayout, TreeWork, build_layout
from .passes import (assemble_biases6, assemble_biases7, assemble_matrices6, assemble_matrices7, disassemble6,
                     disassemble7)
from .regions import bias_step, down_step, matrix_step, region_biases, region_down, region_matrices
from .singular import SingularityWatch, closing_merges, loop_conditioning

__all__ = [
    "Regions", "SingularityWatch", "TreeIndex", "TreeLayout", "TreeWork", "assemble_biases6", "assemble_biases7",
    "assemble_matrices6", "assemble_matrices7", "bias_step", "build_layout", "closing_merges", "disassemble6",
    "disassemble7", "down_step", "loop_conditioning", "matrix_step", "region_biases", "region_down",
    "region_matrices",
]
