"""Formulation ``embedding``: Jain's graph-theoretic constraint embedding (paper 003).

State: tree coordinates ``q`` and velocities ``v`` -- the layout of ``dense``, ``dca``
and ``rcr``, so every CSV column means the same; dependent entries are slaved.

* **Aggregated bodies** (paper 003 section 4.2, Fig. 4; :func:`aggregated_bodies`):
  each constraint's sub-graph -- for a loop, the bodies of the loop minus their
  lowest common ancestor; for a joint-space row (a gear pair, section 5.1), the bodies
  between its two hinges and their common parent -- is one aggregation sub-graph S;
  sub-graphs that share a body merge (Fig. 4 ex. 3), disjoint ones stay separate
  (Fig. 4 ex. 1).  Each S hangs from one parent body p (Assumption 1), so the
  aggregated graph is a tree (Lemma 1).
* **Embedding map** (eqs. 25, 58-61): all constraint rows of S over all of S's hinge
  velocities form ``Y = [Y1 Y2]`` (dependent | independent columns); ``X = [-Y1^+ Y2; I]``
  maps the independent velocities to all of S's hinge velocities and the rate term
  ``Xdot thetadot_R = Y1^+ gamma`` (gamma: the acceleration-level remainder of the
  rows at zero hinge accelerations).  One least-squares solve per aggregated body
  over *all* its rows -- not the loop-after-loop reduction of ``rcr`` -- so coupled
  loops are one aggregated body, as the paper's aggregation condition requires.
* **Articulated-body sweeps** (eqs. 42, 50-57, section 7.3): tip to base, ordinary
  bodies take the standard AB step, an aggregated body the aggregated one with
  ``D = X^T M_S X`` (eq. 51, M_S carrying the articulated inertias of S's other
  children), then base to tip.  No constraint force enters; reactions are recovered
  at output instants only.
* **Drivers** (docs/file-format.md, "Drivers") are joint-space rows ``e_J`` too, with
  time in their right-hand sides: ``q_J - q_J0 = f(t) - f(0)``, ``v_J = f'(t)``,
  ``vdot_J = f''(t)``.  A driven hinge outside every loop is an aggregated body of its own
  with no independent velocity -- Featherstone's hybrid dynamics: its acceleration is
  known, its force computed; a driven hinge of a loop joins the loop's aggregated body
  as one more row (a rheonomic loop constraint).  The effort is minus the driver row's
  multiplier, recovered at output instants with the reactions.
* **Position closure** after every step by Newton on each aggregated body's
  constraint equations for its dependent coordinates (warm-started from the state,
  quaternion-safe increments), so ``violation.position`` stays at round-off.
* **Rank monitoring of X** (section 9): when the dependent block Y1 loses rank while
  Y keeps it (a partition singularity), the independent coordinates are re-chosen
  at that state (state layout unchanged, switches counted); when Y itself loses rank
  (a change of mobility) the run stops with exit 3 naming the time and the measure.

The sweeps, the block factorisation and the Newton step are the numba kernels of
``rcr_kernels`` (the aggregated step of section 7.3 is RCR's cluster fold, the
paper's eqs. 50-57 and paper 002's eqs. 56-71 being the same equations): embedding
brings its own aggregation, its own X (one block per aggregated body, joint-space
rows included), its partition and monitor.  Derivation: docs/embedding.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg
from numba import njit

from ..drivers import MotionArrays, motion
from ..errors import SimulationError
from ..model import Model
from . import rcr_kernels as K
from .rcr import RCRFormulation
from .rcr_layout import cut_rows_of
from .rcr_partition import (
    Partition, cols_of, loop_structure, numeric_loop_jacobian, numeric_rank, overlapping_groups,
    partition_from_choice, rows_of,
)
from .workspace import unpack


@dataclass(frozen=True)
class Aggregate:
    """One aggregated body (paper 003 section 4.2)."""

    bodies: tuple  # S: body indices, ascending (parent[i] < i)
    parent: int  # p: the body S hangs from (-1 ground)
    loops: tuple  # loop indices l (cut joint nb + l) embedded in S
    gears: tuple  # indices into the gear list embedded in S
    rows: tuple  # constraint rows of S: cut rows, then joint-space rows (numbered after the cut rows)
    cols: tuple  # hinge velocities of S


@dataclass(frozen=True)
class Gear:
    """A constant joint-space row ``q_d - mu q_n = 0`` between two one-freedom tree joints
    (paper 003 section 5.1, eq. 37): X is constant, its rate term zero, no Newton."""

    driver: int  # tree joint (= body) index
    driven: int
    ratio: float


def _path_to(parent, i, stop):
    out = []
    while i != stop and i >= 0:
        out.append(int(i))
        i = int(parent[i])
    return out


def _common_ancestor(parent, a, b):
    seen = set()
    i = a
    while i >= 0:
        seen.add(i)
        i = int(parent[i])
    i = b
    while i >= 0 and i not in seen:
        i = int(parent[i])
    return i


def aggregated_bodies(model: Model, gears=(), structure=None) -> list[Aggregate]:
    """Aggregation sub-graphs of every loop and gear pair, merged where they share a body.

    A loop's sub-graph is the smallest sub-tree holding its cut joint's two bodies
    without that sub-tree's root (section 4.2's procedure); a gear's, the bodies from
    each of its two hinges up to the common ancestor of the hinges' parents, without
    it.  Two sub-graphs that share a body are merged; the union of two path-induced
    sub-graphs with a common body again has a single parent (the higher of the two),
    so every aggregated body hangs from one body and the aggregated graph is a tree.
    """
    m = model
    lca, paths, _ = structure or loop_structure(m)
    row_adr, _ = cut_rows_of(m)
    ncr = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
    sets = [("loop", l, set(p)) for l, p in enumerate(paths)]
    for g, gear in enumerate(gears):
        top = _common_ancestor(m.parent, int(m.parent[gear.driver]), int(m.parent[gear.driven]))
        sets.append(("gear", g, set(_path_to(m.parent, gear.driver, top)) | set(_path_to(m.parent, gear.driven, top))))
    out = []
    for members in overlapping_groups([b for _, _, b in sets]):
        bodies = sorted(set().union(*(sets[k][2] for k in members)))
        loops = tuple(sorted(sets[k][1] for k in members if sets[k][0] == "loop"))
        gidx = tuple(sorted(sets[k][1] for k in members if sets[k][0] == "gear"))
        rows = [r for l in loops for r in rows_of(m, row_adr, l)] + [ncr + g for g in gidx]
        out.append(Aggregate(bodies=tuple(bodies), parent=int(m.parent[bodies[0]]) if bodies else -1, loops=loops,
                             gears=gidx, rows=tuple(rows), cols=tuple(cols_of(m, bodies))))
    out.sort(key=lambda a: a.bodies[0] if a.bodies else 10**9)
    return out


def _gear_rows(model: Model, gears, ncr: int) -> np.ndarray:
    """The joint-space rows of the gears over all tree velocities (constant)."""
    G = np.zeros((len(gears), model.nv))
    for g, gear in enumerate(gears):
        G[g, model.v_adr[gear.driver]] += 1.0
        G[g, model.v_adr[gear.driven]] -= gear.ratio
    return G


@dataclass
class EmbeddingPartition:
    """The independent coordinates of every aggregated body at one configuration."""

    part: Partition  # the kernels' layout: one block per aggregated body
    ranks: tuple  # rank of each aggregated body's rows Y (fixed at t = 0)
    independent: tuple  # per aggregated body: its independent velocity indices
    sigma_dependent: tuple  # per aggregated body: sigma_min(Y1) / sigma_max(Y), whitened
    sigma_rows: tuple  # per aggregated body: sigma_r(Y) / sigma_max(Y): 0 where S changes mobility


def embedding_partition(model: Model, q: np.ndarray, structure, aggregates, gears=(), ranks=None,
                        agg_structure=None, independent=None, jacobian=None) -> EmbeddingPartition:
    """Choose each aggregated body's independent coordinates at ``q`` (section 8, eqs. 58-60).

    Y (all of S's rows over all its hinge velocities) is whitened by ``diag(M)^-1/2``
    (revolute and prismatic speeds compared in units of kinetic energy) and factorised
    by column-pivoted QR; its ``r`` leading pivots are the dependent velocities (Y1 is
    then as well conditioned as a greedy choice gets), the rest independent.  ``r`` is
    Y's rank at t = 0 (``ranks``), kept afterwards: off the constraint manifold,
    redundant rows (a planar loop's three surplus rows in 3-D) would otherwise lift
    singular values out of round-off and change the count.  ``independent`` (one list of
    velocity indices per aggregated body) imposes a choice instead; ``jacobian``: the
    formulation's :class:`.rcr_partition.LoopJacobian` of the loops ``structure``.
    """
    m = model
    Kmat, M = numeric_loop_jacobian(m, q, structure, jacobian)
    ncr = Kmat.shape[0]
    if gears:
        Kmat = np.vstack([Kmat, _gear_rows(m, gears, ncr)])
    colscale = 1.0 / np.sqrt(np.maximum(np.diag(M), 1e-300)) if m.nv else np.zeros(0)
    Ks = Kmat * colscale[None, :] if Kmat.size else Kmat
    scale = float(np.abs(Ks).max()) if Ks.size else 1.0
    choice, rks, indep, sdep, srow = [], [], [], [], []
    for a, agg in enumerate(aggregates):
        rows, cols = list(agg.rows), list(agg.cols)
        Y = Ks[np.ix_(rows, cols)]
        s = np.linalg.svd(Y, compute_uv=False) if Y.size else np.zeros(0)
        r = int(ranks[a]) if ranks is not None else (numeric_rank(s, scale) if s.size else 0)
        if independent is not None:
            dep = [c for c in cols if c not in set(independent[a])]
        elif r:
            _, piv = scipy.linalg.qr(Y, pivoting=True, mode="r")
            dep = [cols[k] for k in piv[:r]]
        else:
            dep = []
        ind = [c for c in cols if c not in dep]
        choice.append(([(rows, cols, dep)], ind))
        rks.append(r)
        indep.append(tuple(ind))
        smax = float(s[0]) if s.size and s[0] > 0 else 1.0
        if dep:
            s1 = np.linalg.svd(Ks[np.ix_(rows, dep)], compute_uv=False)
            sdep.append(float(s1[-1] / smax))
            srow.append(float(s[r - 1] / smax))
        else:
            sdep.append(1.0)
            srow.append(1.0)
    part = partition_from_choice(m, agg_structure or structure, choice, Ks, colscale)
    if gears:  # joint-space rows are no cut-joint rows: the kernels skip them in block_rows
        row_joint = np.concatenate([part.lx.row_joint, -np.ones(len(gears), dtype=np.int64)])
        part = dataclasses.replace(part, lx=part.lx._replace(row_joint=row_joint))
    return EmbeddingPartition(part=part, ranks=tuple(rks), independent=tuple(indep), sigma_dependent=tuple(sdep),
                              sigma_rows=tuple(srow))


class Driving(NamedTuple):
    """The drivers' rows (docs/derivations.md, "Drivers") as the positions kernel sets them
    at the time ``time[0]`` (which ``_drive`` and the row loop write): driver ``i``'s law
    in ``laws`` gives row ``first + i`` its velocity right-hand side ``nu = f'(t)`` and its
    acceleration one ``gam = f''(t)`` (the dynamics never write the joint-space rows of
    ``gam``); the position residual ``q_J - q_J0 - (f(t) - f(0))`` goes through ``jr_q0``:
    ``jr_q0[entry[e]] = base[e] + f_l(t) - f0[l]``, ``l = law[e]``."""

    time: np.ndarray  # (1,)
    laws: MotionArrays
    f0: np.ndarray  # (nd,) each law at t = 0
    entry: np.ndarray  # (ne,) the drivers' entries of jr
    law: np.ndarray  # (ne,) their driver
    base: np.ndarray  # (ne,) their coordinate at t = 0
    nu: np.ndarray
    gam: np.ndarray
    first: int


@njit(cache=True, nogil=True, _nrt=False)
def _drive_rows(d, jr_q0):
    """:class:`Driving`'s rows at its time."""
    t = d.time[0]
    for i in range(d.f0.shape[0]):
        f, fd, fdd = motion(d.laws, np.int64(i), t)
        d.nu[d.first + i] = fd
        d.gam[d.first + i] = fdd
    for e in range(d.entry.shape[0]):
        law = d.law[e]
        jr_q0[d.entry[e]] = d.base[e] + motion(d.laws, law, t)[0] - d.f0[law]


@njit(cache=True, nogil=True, _nrt=False)
def _positions(desc, proto, q):
    """Kinematics at q; every aggregated body's rows Y over its hinge velocities -- loop
    rows (eqs. 58-59, from the cut joints' closure rows) and constant joint-space rows
    (eq. 37: entry k puts ``jr_val[k]`` at ``Kval[jr_k[k]]`` and adds
    ``jr_val[k] (q[jr_q[k]] - jr_q0[k])`` to the row's residual), the drivers' first set at
    the time (``drive``, :func:`_drive_rows`); the QR factors of the dependent blocks Y1
    (eq. 60).  Returns the smallest conditioning of the Y1.  Its workspace comes as one
    table and it is ``_nrt=False``, as rcr's right-hand-side kernels; the callees that
    allocate are ``_nrt=True``."""
    (mk, ca, lx, jr_k, jr_row, jr_q, jr_val, jr_q0, drive, nb, nv_j, x, R, P, S, S6, V0, GA, GB, g0, phi, colscale,
     Kval, Qf, tau, pos, lowest) = unpack(desc, proto)
    _drive_rows(drive, jr_q0)
    K.position_rows(mk, ca, lx, nb, nv_j, q, K.Poses(x, R, P, S, S6), V0, K.CutRows(GA, GB, g0, phi), Kval, pos)
    K.joint_space_rows(jr_k, jr_row, jr_q, jr_val, jr_q0, q, phi, Kval)
    return K.lowest_so_far(lowest, lx.blk_dstart, tau, K.block_qr(lx, colscale, Kval, Qf, tau))


class EmbeddingFormulation(RCRFormulation):
    """Constraint embedding on the full tree state; the step pipeline (right-hand side,
    Newton closure after each step, partition monitor, reactions at output instants) is
    the tree-coordinate pipeline of :class:`~engine.formulations.rcr.RCRFormulation`,
    driven by embedding's own aggregation, X and partition."""

    name = "embedding"
    title = "constraint embedding (Jain): loops aggregated into variable-geometry bodies"
    kind = "ode"
    parameters = ()
    summary = ("Paper 003's constraint embedding: each set of coupled loops becomes one aggregated body with "
               "an embedding map X from its independent velocities, inside the articulated-body algorithm; no "
               "multipliers, dependent coordinates restored by Newton after every step, independent "
               "coordinates re-chosen near partition singularities. Linear in the number of loops of bounded "
               "size, cubic in the size of one aggregated body.")
    singular_remedy = ("embedding stops where a loop changes mobility (a singular configuration); the dense "
                       "formulation crosses such configurations (--formulation dense).")

    honours_couplings = True
    honours_drivers = True
    _positions_entry = staticmethod(_positions)
    #: the joint-space rows' places in the blocks are the partition's too
    _per_partition = RCRFormulation._per_partition + ("jr", "_drive_entry", "_drive_law", "_drive_base")
    #: gear pairs (paper 003 section 5.1) this instance embeds besides the file's couplings
    #: (tests embed invented pairs this way)
    gears: tuple = ()

    def __init__(self, model: Model, settings, plan=None):
        m = model
        # the file's gear couplings (docs/file-format.md, "Mechanism file"): each a constant joint-space row,
        # an aggregated body with constant X (eq. 37)
        self.gears = tuple(self.gears) + tuple(
            Gear(driver=int(d), driven=int(n), ratio=float(mu))
            for d, n, mu in zip(m.g_driver[: m.ng], m.g_driven[: m.ng], m.g_ratio[: m.ng]))
        # the file's drivers, last: a joint-space row e_J each (a "gear" of the joint with
        # itself and ratio 0, whose zero entry _use skips), rheonomic (_drive)
        self.ndr = m.nd
        self._time = np.zeros(1) if m.nd else None  # the drivers' time (_drive), which the row loop writes too
        self.gears = self.gears + tuple(Gear(driver=int(j), driven=int(j), ratio=0.0) for j in m.d_joint)
        self.loops_structure = loop_structure(m)
        self.aggregates = aggregated_bodies(m, self.gears, self.loops_structure)
        self.ranks = None
        self.emb: EmbeddingPartition | None = None
        self.emb0: EmbeddingPartition | None = None
        ncr = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
        self.njr = len(self.gears)
        # the kernels' layout structure: loops and gears as (path, cluster) entries
        lca, paths, _ = self.loops_structure
        gpaths = [sorted(set(a.bodies)) for a in self.aggregates]  # one pseudo-path per aggregated body
        self.agg_structure = (lca, list(paths) + gpaths,
                              [[len(paths) + k] for k in range(len(self.aggregates))])
        self._jq0 = m.q_zero()
        super().__init__(model, settings, plan)
        if self.njr:  # the closure workspace covers the joint-space rows too
            nrow = ncr + self.njr
            self.phi = np.zeros(nrow)
            self.gam = np.zeros(nrow)
            self.zero_rows = np.zeros(nrow)
            self.nu = np.zeros(nrow)
            self.w = np.zeros(nrow)
            self._bound_kernels = None  # they gathered the arrays above replace

    # ------------------------------------------------------------- partition
    def _partition_at(self, q: np.ndarray) -> Partition:
        emb = embedding_partition(self.model, q, self.loops_structure, self.aggregates, self.gears, self.ranks,
                                  self.agg_structure, jacobian=self.loop_jacobian)
        if self.ranks is None:
            self.ranks = emb.ranks
            self.emb0 = emb
        self._pending = emb
        return emb.part

    _search_at = _partition_at  # its search lays the partition out

    def use_independent(self, independent) -> None:
        """Adopt an explicit choice of independent velocities at t = 0 (one list of tree
        velocity indices per aggregated body, as many as its freedoms) instead of the
        automatic one -- to start from a poor partition in tests and benchmarks; the
        monitor re-chooses as usual."""
        emb = embedding_partition(self.model, self.model.q_zero(), self.loops_structure, self.aggregates,
                                  self.gears, self.ranks, self.agg_structure, independent=independent)
        if any(len(a) != len(b) for a, b in zip(emb.independent, self.emb0.independent)):
            raise ValueError(f"each aggregated body needs {[len(b) for b in self.emb0.independent]} "
                             "independent velocities")
        self._pending = emb
        self._use(emb.part)

    def _use(self, part: Partition) -> bool:
        self.ncl = len(self.aggregates)
        kept = super()._use(part)
        self.emb = self._pending
        if kept:  # its joint-space rows too (_per_partition)
            return True
        # joint-space rows: their flat places in the block matrices (Kval), rows, coordinates
        m = self.model
        ncr = int(sum(m.nc_j[j] for j in range(m.nb, m.nj)))
        kofs, cstart, cols = part.lx.blk_kofs, part.lx.blk_cstart, part.lx.blk_cols
        jr = ([], [], [], [], [])
        for b, agg in enumerate(self.aggregates):
            n = cstart[b + 1] - cstart[b]
            pos = {int(c): k for k, c in enumerate(cols[cstart[b]:cstart[b + 1]])}
            for rr, r in enumerate(agg.rows):
                if r < ncr:
                    continue
                gear = self.gears[r - ncr]
                for joint, val in ((gear.driver, 1.0), (gear.driven, -gear.ratio)):
                    if val == 0.0:  # a driver's row: its one entry is the first
                        continue
                    jr[0].append(kofs[b] + rr * n + pos[int(m.v_adr[joint])])
                    jr[1].append(r)
                    jr[2].append(int(m.q_adr[joint]))
                    jr[3].append(val)
                    jr[4].append(float(self._jq0[m.q_adr[joint]]))
        self.jr = (np.asarray(jr[0], dtype=np.int64), np.asarray(jr[1], dtype=np.int64),
                   np.asarray(jr[2], dtype=np.int64), np.asarray(jr[3], dtype=np.float64),
                   np.asarray(jr[4], dtype=np.float64))
        # the drivers' entries of jr, their driver and base -- their jr_q0 moves with f(t) (_drive)
        first = ncr + len(self.gears) - self.ndr
        entries = [(k, int(r) - first) for k, r in enumerate(jr[1]) if r >= first]
        self._drive_entry = np.array([k for k, _ in entries], dtype=np.int64)
        self._drive_law = np.array([i for _, i in entries], dtype=np.int64)
        self._drive_base = np.array([jr[4][k] for k, _ in entries], dtype=float)
        return False

    def _position_rows(self) -> tuple:
        """The joint-space rows, and the drivers' laws the positions kernel sets them by."""
        m = self.model
        return (*self.jr, Driving(self._time if self._time is not None else np.zeros(1), m.d_motion, m.d_f0,
                                  self._drive_entry, self._drive_law, self._drive_base, self.nu, self.gam,
                                  self.ncr + len(self.gears) - self.ndr))

    @property
    def projects(self) -> bool:
        return self.ncr + self.njr > 0

    def evaluate(self, t, y):
        ev = super().evaluate(t, y)
        if self.ndr:  # minus the drivers' multipliers (the reactions' solve, _reactions)
            ev.extra["driver_effort"] = -self._lam[len(self._lam) - self.ndr:].copy()
        return ev

    def _repartition(self, t, y, close=True):
        """rcr's monitor (partition switch, or the stop at a change of mobility); the stop
        names the configuration: every aggregated body's hinge coordinates."""
        try:
            return super()._repartition(t, y, close)
        except SimulationError as exc:
            raise SimulationError(exc.t, f"{exc.reason}; configuration: {self.configuration(y)}") from None

    def configuration(self, y) -> str:
        """The hinge coordinates of every aggregated body in state ``y`` (one-freedom joints:
        their coordinate; others: their coordinate vector), for messages."""
        m = self.model
        parts = []
        for agg in self.aggregates:
            for i in agg.bodies:
                qa, nq = int(m.q_adr[i]), int(m.nq_j[i])
                if nq == 0:
                    continue
                vals = y[qa:qa + nq]
                parts.append(f"{m.joint_names[i]} = " + (f"{vals[0]:.6g}" if nq == 1 else
                                                         "[" + ", ".join(f"{v:.6g}" for v in vals) + "]"))
        return ", ".join(parts[:16]) + (", ..." if len(parts) > 16 else "")

    # ------------------------------------------------------------ embedding map
    def embedding_map(self, a: int) -> tuple[np.ndarray, np.ndarray]:
        """(X, Xdot thetadot_R) of aggregated body ``a`` at the last right-hand side: X is
        (n_S, n_R) over the body's hinge velocities ``aggregates[a].cols`` and the columns
        of its independent velocities ``emb.independent[a]`` (eq. 25); the rate term is
        the hinge accelerations at zero independent accelerations (eq. 34)."""
        agg = self.aggregates[a]
        lx = self.part.lx
        i0, i1 = lx.cl_istart[a], lx.cl_istart[a + 1]
        cols = list(agg.cols)
        X = self.N[: i1 - i0][:, cols].T.copy()
        return X, self.g[cols].copy()

    # ------------------------------------------------------------------ report
    def report(self) -> list[dict]:
        """Per aggregated body at t = 0: bodies, parent, embedded loops, independent
        coordinates and the smallest singular value of the dependent block (whitened,
        relative to the rows' largest) -- what ``linkwork info`` prints."""
        m = self.model
        emb = self.emb0
        out = []
        for a, agg in enumerate(self.aggregates):
            out.append({
                "bodies": [m.body_names[i] for i in agg.bodies],
                "parent": "ground" if agg.parent < 0 else m.body_names[agg.parent],
                "cut_joints": [m.joint_names[m.nb + l] for l in agg.loops],
                "hinge_velocities": len(agg.cols),
                "rank": int(emb.ranks[a]),
                "independent": [velocity_name(m, c) for c in emb.independent[a]],
                "sigma_min_dependent": emb.sigma_dependent[a],
                "sigma_min_rows": emb.sigma_rows[a],
            })
        return out

    def stats(self) -> dict:
        out = super().stats()
        if self.ncr + self.njr:
            out["aggregated_bodies"] = len(self.aggregates)
        return out


def velocity_name(model: Model, c: int) -> str:
    """A tree velocity's name: its joint's, with the freedom's index where it has several."""
    j = next(i for i in range(model.nb) if model.v_adr[i] <= c < model.v_adr[i] + model.nv_j[i])
    name = model.joint_names[j]
    return name if model.nv_j[j] == 1 else f"{name}[{c - model.v_adr[j]}]"


def aggregate_report(model: Model) -> list[dict]:
    """:meth:`EmbeddingFormulation.report` without a simulation (``linkwork info``)."""
    from ..settings import Settings

    return EmbeddingFormulation(model, Settings(formulation="embedding")).report()


#: the evaluations the row kernels do (:meth:`RCRFormulation.row_kernels`): this class's
#: is rcr's on an open tree without drivers
EmbeddingFormulation._own_evaluations = RCRFormulation._own_evaluations + (EmbeddingFormulation.evaluate,)

