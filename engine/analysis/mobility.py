"""Mobility from the constraint Jacobian's rank, the Grübler–Kutzbach counts beside it,
the redundant constraint equations by name, and the Grashof class of planar four-bars
(docs/derivations.md, "Mobility and the Grashof class").

In absolute coordinates every body has six freedoms (its twist ``[v_C; w]``) and every
joint removes ``nc_j`` of them (engine/constraints.py), each gear one more.  So

    mobility  M = 6 n - rank(A),          A = [Phi_z; gear rows]  (m, 6 n),
    Grübler–Kutzbach (spatial)   6 n - m,  planar (where every joint is a revolute
    about one normal n or a prismatic perpendicular to it)  3 n - 2 j_RP - n_gears,

and ``m - rank(A)`` equations are redundant.  Which ones: the rows are taken in the
file's joint order (gears last) and a row is *redundant* when it is a linear
combination of the rows before it (Gram–Schmidt with re-orthogonalisation, the
reading of an unpivoted QR of ``A^T``).  A planar four-bar in 3-D thus reports its
last joint's three out-of-plane rows.

A planar four-bar (three moving bodies, four revolutes about one normal, one loop)
also gets its Grashof class from the link lengths ``s <= p, q <= l``:
``s + l < p + q`` Grashof (shortest link grounded: double-crank / drag link;
beside the ground: crank-rocker; the coupler: Grashof double-rocker), ``s + l = p + q``
change point, ``s + l > p + q`` non-Grashof triple-rocker, and ``l > s + p + q`` no
assembly at all.  Lengths come from each body's own joint points (its body-frame
anchors), so a rough drawing whose loop does not close is classed by the links the
user drew, which is what :mod:`.assemble` needs to say why it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constraints import constraint_jacobian
from ..model import CYLINDRICAL, FIXED, PRISMATIC, REVOLUTE, SPHERICAL, UNIVERSAL, Model

#: relative size below which a row's remainder (after removing the rows before it) is zero
DEPENDENT_RTOL = 1e-9
#: |sin| between two axes below which they count as parallel (planar, four-bar detection)
PARALLEL_TOL = 1e-9
#: relative tolerance of the change-point equality s + l = p + q
CHANGE_POINT_RTOL = 1e-9
#: dependent rows named on ``linkwork info``'s text output (``--json`` names all)
SHOWN_ROWS = 12

_POINT = ("dx", "dy", "dz")
_ORIENT = ("rot.yz", "rot.zx", "rot.xy")
#: names of each joint type's rows, in :func:`~engine.constraints.joint_constraint`'s order
ROW_NAMES = {
    SPHERICAL: _POINT,
    REVOLUTE: _POINT + ("axis.u1", "axis.u2"),
    UNIVERSAL: _POINT + ("a1.a2",),
    PRISMATIC: _ORIENT + ("slide.u1", "slide.u2"),
    CYLINDRICAL: ("axis.u1", "axis.u2", "slide.u1", "slide.u2"),
    FIXED: _POINT + _ORIENT,
}


def _pose(x, R, b):
    return (np.zeros(3), np.eye(3)) if b < 0 else (x[b], R[b])


def joint_rate_row(model: Model, j: int, x: np.ndarray, R: np.ndarray) -> np.ndarray:
    """(6 nb,) row ``r`` with ``qdot_j = r . [v_C; w]`` (all bodies) for a one-freedom joint
    ``j`` (internal index), in the file's parent-to-child sense: revolute
    ``(w_b - w_a) . a``; prismatic ``d/dt (d . a)`` with ``d`` from the pred's joint point
    to the succ's and ``a`` the axis carried by the pred (engine.forces.joint_rate)."""
    row = np.zeros(6 * model.nb)
    a, b = int(model.pred[j]), int(model.succ[j])
    xa, Ra = _pose(x, R, a)
    aw = Ra @ model.axis_pred[j]
    if model.jtype[j] == REVOLUTE:
        row[6 * b + 3:6 * b + 6] += aw
        if a >= 0:
            row[6 * a + 3:6 * a + 6] -= aw
        return row
    ra = Ra @ model.anchor_pred[j]
    rb = R[b] @ model.anchor_succ[j]
    d = x[b] + rb - xa - ra
    row[6 * b:6 * b + 3] += aw
    row[6 * b + 3:6 * b + 6] += np.cross(rb, aw)
    if a >= 0:
        row[6 * a:6 * a + 3] -= aw
        row[6 * a + 3:6 * a + 6] += np.cross(aw, ra + d)
    return row


def gear_rows(model: Model, x: np.ndarray, R: np.ndarray) -> np.ndarray:
    """(ng, 6 nb) gear rows ``qdot_driver - ratio qdot_driven`` in the body twists."""
    rows = np.zeros((model.ng, 6 * model.nb))
    for i in range(model.ng):
        rows[i] = (joint_rate_row(model, int(model.g_driver[i]), x, R)
                   - model.g_ratio[i] * joint_rate_row(model, int(model.g_driven[i]), x, R))
    return rows


def labelled_jacobian(model: Model, x: np.ndarray, R: np.ndarray):
    """The constraint rows in the body twists in the file's joint order, gears last:
    ``(A (m, 6 nb), names (m,))`` with names like ``J4.dz`` or ``G1.gear``."""
    Jac, _, _ = constraint_jacobian(model, x, R)
    blocks, names = [], []
    for k in range(model.nj):
        j = int(model.joint_internal[k])
        r, n = int(model.c_adr[j]), int(model.nc_j[j])
        blocks.append(Jac[r:r + n])
        names += [f"{model.joint_names[j]}.{s}" for s in ROW_NAMES[int(model.jtype[j])]]
    if model.ng:
        blocks.append(gear_rows(model, x, R))
        names += [f"{g}.gear" for g in model.g_names]
    A = np.vstack(blocks) if blocks else np.zeros((0, 6 * model.nb))
    return A, names


def dependent_rows(A: np.ndarray, rtol: float = DEPENDENT_RTOL) -> tuple[int, list[int]]:
    """``(rank, dependent)``: the indices of the rows of ``A`` that are linear combinations
    of the rows before them (Gram–Schmidt, twice per row)."""
    basis = np.zeros((0, A.shape[1]))
    dep = []
    for i, row in enumerate(A):
        norm = np.linalg.norm(row)
        r = row.copy()
        for _ in range(2):
            r -= basis.T @ (basis @ r)
        rn = np.linalg.norm(r)
        if norm == 0.0 or rn <= rtol * norm:
            dep.append(i)
        else:
            basis = np.vstack([basis, r / rn])
    return basis.shape[0], dep


def planar_normal(model: Model, x: np.ndarray, R: np.ndarray) -> np.ndarray | None:
    """The common normal when every joint is a revolute about it or a prismatic
    perpendicular to it (at least one revolute), else None."""
    n = None
    slides = []
    for j in range(model.nj):
        t = int(model.jtype[j])
        if t not in (REVOLUTE, PRISMATIC):
            return None
        a = _pose(x, R, int(model.pred[j]))[1] @ model.axis_pred[j]
        if t == PRISMATIC:
            slides.append(a)
        elif n is None:
            n = a / np.linalg.norm(a)
        elif np.linalg.norm(np.cross(n, a)) > PARALLEL_TOL:
            return None
    if n is None or any(abs(n @ s) > PARALLEL_TOL for s in slides):
        return None
    return n


@dataclass(frozen=True)
class FourBar:
    """A planar four-bar's links (``(body, length)``; ground's length is the distance of
    its two pivots) and its Grashof numbers."""

    ground: float
    crank: tuple[str, float]  # the moving link on the first ground joint (file order)
    coupler: tuple[str, float]
    rocker: tuple[str, float]  # the moving link on the second ground joint

    @property
    def lengths(self) -> dict[str, float]:
        return {"ground": self.ground, self.crank[0]: self.crank[1], self.coupler[0]: self.coupler[1],
                self.rocker[0]: self.rocker[1]}

    def numbers(self) -> dict[str, float]:
        """``s, l, p, q`` (shortest, longest, the other two in link order)."""
        v = sorted(self.lengths.values())
        return {"s": v[0], "l": v[3], "p": v[1], "q": v[2]}

    @property
    def shortest(self) -> str:
        ls = self.lengths
        return min(ls, key=ls.get)

    @property
    def cls(self) -> str:
        """``impossible``, ``crank-rocker``, ``double-crank``, ``double-rocker``
        (Grashof), ``change-point`` or ``triple-rocker`` (non-Grashof)."""
        g = self.numbers()
        s, l, p, q = g["s"], g["l"], g["p"], g["q"]
        if l > s + p + q:
            return "impossible"
        if abs((s + l) - (p + q)) <= CHANGE_POINT_RTOL * l:
            return "change-point"
        if s + l > p + q:
            return "triple-rocker"
        sh = self.shortest
        if sh == "ground":
            return "double-crank"
        if sh == self.coupler[0]:
            return "double-rocker"
        return "crank-rocker"

    def describe(self) -> str:
        """One line: the class and the Grashof numbers behind it."""
        g = self.numbers()
        s, l, p, q = g["s"], g["l"], g["p"], g["q"]
        links = ", ".join(f"{k} {v:.6g}" for k, v in self.lengths.items())
        c = self.cls
        if c == "impossible":
            return (f"no four-bar closes: the longest link is longer than the other three together "
                    f"(l = {l:.6g} > s + p + q = {s + p + q:.6g}; links {links} m)")
        rel = "=" if c == "change-point" else (">" if s + l > p + q else "<")
        nums = f"s + l = {s:.6g} + {l:.6g} = {s + l:.6g} {rel} p + q = {p:.6g} + {q:.6g} = {p + q:.6g}"
        what = {
            "crank-rocker": f"crank-rocker (Grashof; crank {self.shortest}, it turns fully)",
            "double-crank": "double-crank / drag link (Grashof; shortest link grounded, both side links turn fully)",
            "double-rocker": f"double-rocker (Grashof; shortest link the coupler {self.coupler[0]}, "
                             "which turns fully; the side links rock)",
            "change-point": "change point (s + l = p + q: the links can fold flat and switch branch)",
            "triple-rocker": "triple-rocker (non-Grashof: no link turns fully)",
        }[c]
        return f"{what}: {nums}; links {links} m"

    def as_dict(self) -> dict:
        return {"class": self.cls, **self.numbers(), "links": self.lengths,
                "crank": self.crank[0], "coupler": self.coupler[0], "rocker": self.rocker[0]}


def four_bar(model: Model, x: np.ndarray | None = None, R: np.ndarray | None = None) -> FourBar | None:
    """The four-bar's links when ``model`` is a planar four-bar (else None), lengths from
    each body's joint points in its own frame, measured across the common normal."""
    if x is None:
        x, R = model.x0, model.R0_body
    if model.nb != 3 or model.nj != 4 or model.ng or np.any(model.jtype != REVOLUTE):
        return None
    n = planar_normal(model, x, R)
    if n is None:
        return None
    ends: dict[int, list[np.ndarray]] = {b: [] for b in range(3)}  # body -> its joint points (body frame)
    pivots, grounded = [], []
    for k in range(4):
        j = int(model.joint_internal[k])
        a, b = int(model.pred[j]), int(model.succ[j])
        ends[b].append(model.anchor_succ[j])
        if a < 0:
            pivots.append(model.anchor_pred[j])
            grounded.append(b)
        else:
            ends[a].append(model.anchor_pred[j])
    if len(pivots) != 2 or len(set(grounded)) != 2 or any(len(e) != 2 for e in ends.values()):
        return None

    def length(p0, p1, Rb):
        d = Rb @ (p1 - p0)
        return float(np.linalg.norm(d - (d @ n) * n))

    L = {b: length(*ends[b], R[b]) for b in range(3)}
    coupler = ({0, 1, 2} - set(grounded)).pop()
    name = model.body_names
    return FourBar(ground=length(pivots[0], pivots[1], np.eye(3)),
                   crank=(name[grounded[0]], L[grounded[0]]), coupler=(name[coupler], L[coupler]),
                   rocker=(name[grounded[1]], L[grounded[1]]))


@dataclass(frozen=True)
class Mobility:
    """Mobility from the rank, the Grübler–Kutzbach counts and the redundant rows."""

    bodies: int
    equations: int  # joint equations + gears
    rank: int
    mobility: int  # 6 n - rank
    grubler_spatial: int  # 6 n - equations
    grubler_planar: int | None  # 3 n - 2 j - gears where the mechanism is planar
    redundant: tuple[str, ...]  # names of the dependent rows (file order, gears last)
    four_bar: FourBar | None

    def as_dict(self) -> dict:
        return {"mobility": self.mobility, "rank": self.rank, "equations": self.equations,
                "grubler_spatial": self.grubler_spatial, "grubler_planar": self.grubler_planar,
                "planar": self.grubler_planar is not None, "redundant_rows": list(self.redundant),
                "grashof": self.four_bar.as_dict() if self.four_bar is not None else None}

    def lines(self) -> list[str]:
        """``linkwork info``'s lines (label padded to 15 columns)."""
        n, m = self.bodies, self.equations
        g = f"Grübler–Kutzbach spatial 6*{n} - {m} = {self.grubler_spatial}"
        if self.grubler_planar is not None:
            g += f", planar 3*{n} - {3 * n - self.grubler_planar} = {self.grubler_planar}"
        out = [f"{'mobility':<15}{self.mobility} = 6*{n} - rank {self.rank} of the constraint Jacobian; {g}"]
        if self.redundant:
            shown = ", ".join(self.redundant[:SHOWN_ROWS])
            if len(self.redundant) > SHOWN_ROWS:
                shown += f", ... ({len(self.redundant)} in all; --json lists them)"
            out.append(f"{'  dependent':<15}{shown} (each a combination of the rows before it, file order)")
        if self.four_bar is not None:
            out.append(f"{'four-bar':<15}{self.four_bar.describe()}")
        return out


def mobility(model: Model, x: np.ndarray | None = None, R: np.ndarray | None = None) -> Mobility:
    """Mobility of ``model`` at the poses ``x``, ``R`` (default: the file's, t = 0)."""
    if x is None:
        x, R = model.x0, model.R0_body
    A, names = labelled_jacobian(model, x, R)
    rank, dep = dependent_rows(A)
    n, m = model.nb, A.shape[0]
    planar = None
    if planar_normal(model, x, R) is not None:
        planar = 3 * n - 2 * model.nj - model.ng
    return Mobility(bodies=n, equations=m, rank=rank, mobility=6 * n - rank, grubler_spatial=6 * n - m,
                    grubler_planar=planar, redundant=tuple(names[i] for i in dep),
                    four_bar=four_bar(model, x, R))
