"""``linkwork bench --peers``: Linkwork's formulations against Pinocchio and MuJoCo.

In one process and one run (so ratios hold on a shared, noisy machine), on open chains
of spherical and of revolute joints:

* Pinocchio's ``aba`` (the articulated-body algorithm, C++) and MuJoCo's ``mj_forward``
  (joint-space: composite-rigid-body mass matrix and its sparse factorisation) at the
  same state as Linkwork's formulations;
* every Linkwork ODE formulation asked for, one right-hand side each, one thread;
* before any timing, the accelerations of all of them at that state, compared: the
  centre-of-mass accelerations and angular accelerations of every body in the world
  frame, each peer's joint accelerations pushed through Pinocchio's kinematics
  (``forwardKinematics`` with q, v, a), against Linkwork's ``dense`` reference.

The peers' models are built from Linkwork's own :class:`~engine.model.Model` (the same
masses, inertias, anchors and axes), with every joint frame parallel to the world at the
initial configuration, so the peers' neutral configuration is Linkwork's initial one and
a spherical joint's velocity is the relative angular velocity in world axes.

Pinocchio 4 allocates third-order derivative tensors of n_v^3 doubles in its ``Data``
(about 0.5 GB at 64 spherical bodies): it is timed while that fits in
``PINOCCHIO_MAX_BYTES`` and, above, its per-body cost (flat for an O(n) algorithm) is
taken from the largest size measured -- shown in brackets.  The peers are optional
(``pip install -e ".[bench]"``); without them this says how to install them.
"""

from __future__ import annotations

import time

import numpy as np

from .mujoco_model import build as build_mujoco
from .mujoco_model import world_frames
from .timing import rhs_call, time_interleaved

#: largest estimated pinocchio Data (10 n_v^3 doubles measured: 0.54 GB at n_v = 192)
PINOCCHIO_MAX_BYTES = 1.5e9
#: relative agreement required of every formulation and peer
AGREE_RTOL = 1e-9
SIZES = (16, 64, 128, 256, 512, 1024)
#: dense is O(n^3): timed up to this many bodies
DENSE_MAX_N = 256


def peers_available() -> tuple[bool, str]:
    missing = []
    for mod, pkg in (("pinocchio", "pin"), ("mujoco", "mujoco")):
        try:
            __import__(mod)
        except ImportError:
            missing.append(pkg)
    if missing:
        return False, (f"the peers are not installed ({', '.join(missing)}): "
                       'pip install -e ".[bench]"  (Pinocchio: pin, MuJoCo: mujoco)')
    return True, ""


# ------------------------------------------------------------------ the mechanism
def chain_spec(n: int, kind: str, seed: int = 0):
    """The benchmark chain with random initial joint rates, so that every formulation's
    initial state is the same physical state whatever its state variables (hdca's are
    momenta)."""
    import dataclasses

    from ..generators import chain

    spec = chain(n, "spherical" if kind == "spherical" else "revolute", planar=kind != "spherical")
    rng = np.random.default_rng(seed)
    joints = [dataclasses.replace(j, rate=tuple(rng.normal(scale=0.3, size=j.dof))) for j in spec.joints]
    return dataclasses.replace(spec, joints=tuple(joints))


def _check_tree(model):
    from ..model import TYPE_NAME

    if model.ncut:
        raise ValueError("the peers' comparison takes open chains and trees only")
    kinds = {TYPE_NAME[int(c)] for c in model.jtype[: model.nb]}
    if not kinds <= {"revolute", "spherical"}:
        raise ValueError(f"the peers' comparison takes revolute and spherical joints (got {sorted(kinds)})")


def pinocchio_tree(model):
    """Pinocchio model of a Linkwork spanning tree -- joint frames parallel to the world at
    t = 0, revolute, universal (``JointModelUniversal``: first axis fixed in the parent,
    second carried by the first rotation, as Linkwork's) and spherical joints: (model,
    joint id of every body, tree anchors)."""
    import pinocchio as pin

    from ..model import REVOLUTE, SPHERICAL, TYPE_NAME, UNIVERSAL

    wf = world_frames(model)
    pm = pin.Model()
    pm.gravity.linear = np.asarray(model.gravity, dtype=float)
    jid = [0] * model.nb
    for i in range(model.nb):
        p, jt = int(model.parent[i]), int(model.jtype[i])
        pa = np.zeros(3) if p < 0 else wf.anchor[p]
        if jt == SPHERICAL:
            jm = pin.JointModelSpherical()
        elif jt == REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(wf.axis[i])
        elif jt == UNIVERSAL:
            jm = pin.JointModelUniversal(wf.axis[i], wf.axis2[i])
        else:
            raise ValueError(f"Pinocchio's model takes revolute, universal and spherical tree joints "
                             f"(got {TYPE_NAME[jt]})")
        jid[i] = pm.addJoint(0 if p < 0 else jid[p], jm, pin.SE3(np.eye(3), wf.anchor[i] - pa), f"J{i}")
        pm.appendBodyToJoint(jid[i], pin.Inertia(float(model.mass[i]), model.x0[i] - wf.anchor[i], wf.inertia[i]),
                             pin.SE3.Identity())
    return pm, jid, wf.anchor


def pinocchio_model(model):
    """Pinocchio model of a Linkwork tree of revolute and spherical joints (:func:`pinocchio_tree`)."""
    _check_tree(model)
    return pinocchio_tree(model)


def mujoco_model(model):
    """MuJoCo model of a Linkwork tree (:func:`.mujoco_model.build`: the same frames as
    :func:`pinocchio_model`, no contacts, no armature or damping)."""
    _check_tree(model)
    return build_mujoco(model).mj


def peer_velocities(model, ev) -> np.ndarray:
    """The peers' joint velocities of a Linkwork state (from its world twists ``ev.V``):
    a revolute joint's rate about its world axis, a spherical joint's relative angular
    velocity in world axes (its frame is parallel to the world at the neutral configuration)."""
    from ..model import SPHERICAL

    axis = world_frames(model).axis
    v = []
    for i in range(model.nb):
        p = model.parent[i]
        w_rel = ev.V[i, 3:] - (ev.V[p, 3:] if p >= 0 else 0.0)
        if int(model.jtype[i]) == SPHERICAL:
            v.extend(w_rel)
        else:
            v.append(float(w_rel @ axis[i]))
    return np.array(v)


def body_accelerations(pm, pdata, jid, model, anchor, q, v, a) -> np.ndarray:
    """(nb, 6) world [a_C; alpha] of every body for joint accelerations ``a`` (Pinocchio's
    kinematics: the common yardstick of the comparison)."""
    import pinocchio as pin

    pin.forwardKinematics(pm, pdata, q, v, a)
    out = np.empty((model.nb, 6))
    for i in range(model.nb):
        m = pin.getFrameClassicalAcceleration(pm, pdata, jid[i], pin.SE3(np.eye(3), model.x0[i] - anchor[i]),
                                              pin.LOCAL_WORLD_ALIGNED)
        out[i, :3] = m.linear
        out[i, 3:] = m.angular
    return out


def relative_difference(a, b) -> float:
    """Largest absolute difference of ``a`` from ``b`` over the largest magnitude in ``b``."""
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ------------------------------------------------------------------ one size
def measure(n: int, kind: str, forms: list[str], max_pin_bytes: float = PINOCCHIO_MAX_BYTES) -> dict:
    import mujoco
    import numba
    import pinocchio as pin

    from ..model import build_model
    from ..simulation import Settings, Simulation

    model = build_model(chain_spec(n, kind))
    ref = Simulation(model, Settings(formulation="dense", threads=1)).formulation
    y0 = ref.initial_state()
    ev = ref.evaluate(0.0, y0)
    acc_ref = ev.acc
    v = peer_velocities(model, ev)
    row = {"chain": kind, "n": n, "nv": model.nv, "time_s": {}, "agreement": {}}
    calls = {}

    # Pinocchio: agreement on a model whose Data fits, then timing while it fits
    pm, jid, anchor = pinocchio_model(model)
    pin_bytes = 10 * 8 * float(pm.nv) ** 3
    try:
        mm = mujoco_model(model)
    except ValueError as exc:  # MuJoCo 4 refuses trees deeper than its signature limit (1024 links)
        mm, row["mujoco_refused"] = None, str(exc).splitlines()[0]
    if mm is not None:
        md = mujoco.MjData(mm)
        md.qvel[:] = v
        mujoco.mj_forward(mm, md)
        qacc_mj = md.qacc.copy()
    q0 = pin.neutral(pm)
    if pin_bytes <= max_pin_bytes:
        pdata = pm.createData()
        tau = np.zeros(pm.nv)
        a_pin = pin.aba(pm, pdata, q0, v, tau).copy()
        row["agreement"]["pinocchio aba"] = relative_difference(
            body_accelerations(pm, pdata, jid, model, anchor, q0, v, a_pin), acc_ref)
        if mm is not None:
            row["agreement"]["mujoco mj_forward"] = relative_difference(
                body_accelerations(pm, pdata, jid, model, anchor, q0, v, qacc_mj), acc_ref)
        # Pinocchio's own joint-space solve (CRBA mass matrix, nonlinear effects), as a
        # cross-check of its aba: the two differ where aba loses accuracy
        M = pin.crba(pm, pdata, q0)
        M = np.triu(M) + np.triu(M, 1).T
        a_crba = np.linalg.solve(M, tau - pin.nonLinearEffects(pm, pdata, q0, v))
        row["agreement"]["pinocchio crba+solve (check)"] = relative_difference(
            body_accelerations(pm, pdata, jid, model, anchor, q0, v, a_crba), acc_ref)
        calls["pinocchio aba"] = lambda: pin.aba(pm, pdata, q0, v, tau)
    if mm is not None:
        calls["mujoco mj_forward"] = lambda: mujoco.mj_forward(mm, md)

    numba.set_num_threads(1)
    accs = {}
    for f in forms:
        if f == "dense" and n > DENSE_MAX_N:
            continue
        form = Simulation(model, Settings(formulation=f, threads=1)).formulation
        y = form.initial_state()
        accs[f] = form.evaluate(0.0, y).acc
        row["agreement"][f] = relative_difference(accs[f], acc_ref)
        calls[f] = rhs_call(form, 0.0, y)
    # every entry of the row timed in turns, so that a slow window of the shared machine
    # does not fall on one of them only
    row["time_s"].update(time_interleaved(calls))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    # the O(n) formulations against each other, a check that does not go through dense
    on = [f for f in accs if f != "dense"]
    row["mutual"] = max((relative_difference(accs[a], accs[b]) for i, a in enumerate(on) for b in on[i + 1:]),
                        default=None)
    return row


PEERS = ("pinocchio aba", "pinocchio crba+solve (check)", "mujoco mj_forward")


def linkwork_worst(row: dict) -> float:
    """Largest relative difference of a Linkwork formulation from dense in ``row``."""
    vals = [v for k, v in row["agreement"].items() if k not in PEERS]
    return max(vals) if vals else float("nan")


def run(forms: list[str], sizes=SIZES) -> dict:
    """The peers' table (every size and chain kind), printed as it is measured."""
    ok, why = peers_available()
    if not ok:
        raise RuntimeError(why)
    rows = []
    cols = ["pinocchio aba", "mujoco mj_forward"] + forms
    print("peers: microseconds per forward-dynamics call, one thread (Pinocchio in brackets: its per-body "
          "cost at the largest size its Data fits, times n); then the relative difference of the body "
          "accelerations from dense: Pinocchio aba, Pinocchio crba+solve, MuJoCo, worst Linkwork formulation; "
          "and the largest difference between two Linkwork O(n) formulations")
    print(f"{'chain':10s} {'n':>5s}" + "".join(f" {c:>17s}" for c in cols)
          + f" {'d aba':>8s} {'d crba':>8s} {'d mujoco':>8s} {'d linkwork':>10s} {'mutual':>8s}")
    aba_per_body = {}
    for kind in ("spherical", "revolute"):
        for n in sizes:
            t0 = time.perf_counter()
            r = measure(n, kind, forms)
            r["wall_s"] = time.perf_counter() - t0
            if "pinocchio aba" in r["time_s"]:
                aba_per_body[kind] = r["time_s"]["pinocchio aba"] / n
                r["aba_s"], r["aba_measured"] = r["time_s"]["pinocchio aba"], True
            elif kind in aba_per_body:
                r["aba_s"], r["aba_measured"] = aba_per_body[kind] * n, False
            rows.append(r)
            cells = []
            for c in cols:
                if c == "pinocchio aba" and not r.get("aba_measured", True) and "aba_s" in r:
                    cells.append(f"({r['aba_s'] * 1e6:.1f})")
                elif c in r["time_s"]:
                    cells.append(f"{r['time_s'][c] * 1e6:.1f}")
                else:
                    cells.append("-")
            agree = [r["agreement"].get(k) for k in PEERS]
            print(f"{kind:10s} {n:5d}" + "".join(f" {c:>17s}" for c in cells)
                  + "".join(f" {a:8.1e}" if a is not None else f" {'-':>8s}" for a in agree)
                  + f" {linkwork_worst(r):10.1e}" + _cell(r.get("mutual"), 9), flush=True)
    return {"rows": rows, "columns": cols, "agree_rtol": AGREE_RTOL}


def _cell(x, width: int = 0) -> str:
    return f"{x:{width}.1e}" if x is not None else f"{'-':>{width}s}"


def markdown(result: dict, cpu: str, date: str) -> str:
    """``benchmarks/results/peers.md``: µs per call, µs per body, ratio to ``aba``, agreement."""
    forms = [c for c in result["columns"] if c not in ("pinocchio aba", "mujoco mj_forward")]
    out = [f"# Linkwork against Pinocchio and MuJoCo ({date})", "",
           f"`linkwork bench --peers`, one run, one thread, on {cpu}.", "",
           "Microseconds per forward-dynamics call (Linkwork: one ODE right-hand side); per body in "
           "brackets after it; ratio to Pinocchio's `aba` after `x`.  Pinocchio's figure in brackets is "
           "its measured per-body cost at the largest size whose Data fits in memory, times n.  Each "
           "figure is the best of five rounds in which every entry of its row was timed in turn "
           "(one batch of >= 50 ms each).", "",
           "| chain | n | pinocchio aba | mujoco mj_forward | " + " | ".join(forms) + " | difference: aba | "
           "crba+solve | mj_forward | worst Linkwork | Linkwork mutual |",
           "|---|---|---|---|" + "---|" * len(forms) + "---|---|---|---|---|"]
    for r in result["rows"]:
        aba = r.get("aba_s")
        cells = []
        if aba is None:
            cells.append("-")
        else:
            cells.append(f"{aba * 1e6:.1f}" if r.get("aba_measured") else f"({aba * 1e6:.1f})")
        for c in ["mujoco mj_forward"] + forms:
            t = r["time_s"].get(c)
            if t is None:
                cells.append("-")
            else:
                s = f"{t * 1e6:.1f} ({t / r['n'] * 1e6:.2f}/body)"
                if aba:
                    s += f" x{t / aba:.2f}"
                cells.append(s)
        agree = [r["agreement"].get(k) for k in PEERS]
        out.append(f"| {r['chain']} | {r['n']} | " + " | ".join(cells) + " | "
                   + " | ".join(f"{a:.1e}" if a is not None else "-" for a in agree)
                   + f" | {linkwork_worst(r):.1e} | {_cell(r.get('mutual')).strip()} |")
    refused = {r["n"]: r["mujoco_refused"] for r in result["rows"] if "mujoco_refused" in r}
    if refused:
        out += ["", "MuJoCo refused to compile the chains of " + ", ".join(map(str, sorted(refused)))
                + f" bodies: `{next(iter(refused.values()))}`."]
    out += ["", "Differences: the largest relative difference of every body's centre-of-mass and angular "
                "acceleration (world frame) from Linkwork's `dense`, the peers' joint accelerations pushed "
                "through Pinocchio's kinematics; the peers are compared where Pinocchio's Data fits "
                f"(required: {AGREE_RTOL:g}; `dense` refines its Cholesky solve by one Newton-Euler "
                "residual step, so the mass matrix's condition, 5.5e9 at 1024 spherical bodies, does not "
                "limit it).  Linkwork mutual: the largest such difference between two of Linkwork's O(n) "
                "formulations.", ""]
    return "\n".join(out)
