"""Closed loops per call: Linkwork's formulations against Pinocchio's loop-constrained
articulated-body algorithm (``lcaba``) and its KKT solve (``constraintDynamics``), on
loop-8 and the spatial ladders of L = 4 ... 64 cells (``linkwork bench --peers``).

The Pinocchio model is built from Linkwork's :class:`~engine.model.Model` the way
:mod:`.peers` builds its trees (frames parallel to the world at t = 0, so Pinocchio's
neutral configuration is Linkwork's initial one), with universal joints as Pinocchio's
``JointModelUniversal`` (first axis fixed in the parent, second carried by the first
rotation: fixed in the child, as Linkwork's).  Every cut joint becomes point
constraints (``RigidConstraintModel`` of type ``CONTACT_3D``) at the points of
:mod:`.closure_points`: one for a spherical cut joint, two on the axis of a revolute
one (six equations for its five; the ladders' loops are redundant anyway, L cells
close 6L equations of which 4L are independent).  Both Pinocchio solvers take
redundant constraints by proximal (augmented-Lagrangian) iterations, whose
regularisation ``mu`` trades speed for accuracy.  Measured on ladder-64 (absolute
accuracy 1e-12): ``mu = 1e-3`` converges in 22 iterations to 3.0e-9 of ``dense``,
``mu = 1e-2`` in 141 iterations to 2.0e-10, ``mu = 1e-1`` reaches 1.0e-9 after 1000.
So ``lcaba`` is *timed* with :data:`PROX_TIMED` (fast: the comparison in its favour) and
*cross-checked* with :data:`PROX_CHECKED` (accurate: the 1e-9 agreement); the table
gives both solutions' differences and iteration counts.

``constraintDynamics`` is reported as measured but does not enter the pass/fail
verdict: on these two-joint point constraints it converges (8-12 iterations) to
accelerations that satisfy the constraints but not the dynamics -- on loop-8 at rest
it gives the two ground joints zero acceleration, where ``lcaba`` and Linkwork's
``dense`` (two independent algorithms) agree to 1e-11.  Without proximal settings it
returns NaN (the redundant rows make its KKT matrix singular).

The state is the mechanism's initial one with a rate on the first joint, projected
onto the loops by Linkwork (:mod:`engine.initial`); Pinocchio's joint velocities are
the least-squares solution of its body Jacobians against Linkwork's body twists (exact:
the twists satisfy the loops).  Agreement is the body accelerations (centres of mass,
world frame) from Pinocchio's kinematics with each solver's joint accelerations,
against Linkwork's ``dense`` reference.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .closure_points import closure_points, unsupported_cuts
from .peers import AGREE_RTOL, body_accelerations, pinocchio_tree, relative_difference
from .timing import rhs_call, time_interleaved

#: the Pinocchio solvers; the second is shown but not judged (module docstring)
PEERS = ("pinocchio lcaba", "pinocchio constraintDynamics")
JUDGED = ("pinocchio lcaba",)
#: loop-8 and the ladders' cells
LADDER_CELLS = (4, 8, 16, 32, 64)
#: Pinocchio's proximal settings (absolute accuracy, mu, iteration cap): timed, cross-checked
PROX_TIMED, PROX_CHECKED = (1e-12, 1e-3, 200), (1e-12, 1e-2, 1000)


def loop_spec(name: str):
    """``loop-8`` (the bundled example) or ``ladder-L`` (the generator, any L), with a
    rate on the first tree joint so the velocity terms count."""
    from ..generators import ladder
    from ..mechfile import load
    from ..paths import examples_dir

    if name.startswith("ladder-"):
        spec = ladder(int(name.split("-")[1]))
    else:
        spec = load(examples_dir() / f"{name}.mech.json")
    first = spec.joints[0]
    rate = tuple([0.7] + [0.0] * (first.dof - 1))
    return dataclasses.replace(spec, joints=(dataclasses.replace(first, rate=rate),) + tuple(spec.joints[1:]))


def pinocchio_loop_model(model):
    """(Pinocchio model, joint id of every body, tree anchors, constraint models, COM frame ids)."""
    import pinocchio as pin

    if unsupported_cuts(model):
        raise ValueError(f"no Pinocchio constraint for {', '.join(unsupported_cuts(model))}")
    pm, jid, anchor = pinocchio_tree(model)
    com = [pm.addFrame(pin.Frame(f"C{i}", jid[i], pin.SE3(np.eye(3), model.x0[i] - anchor[i]),
                                 pin.FrameType.OP_FRAME)) for i in range(model.nb)]
    pts = closure_points(model)
    constraints = pin.StdVec_RigidConstraintModel()
    for k in range(pts.count):
        a, b = (int(x) for x in pts.body[k])
        ends = []
        for body, point in ((a, pts.point[k, 0]), (b, pts.point[k, 1])):
            origin = np.zeros(3) if body < 0 else anchor[body]
            ends += [0 if body < 0 else jid[body], pin.SE3(np.eye(3), point - origin)]
        constraints.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, *ends, pin.ReferenceFrame.LOCAL))
    return pm, jid, anchor, constraints, com


def pinocchio_velocities(pm, com, q0, V) -> np.ndarray:
    """Joint velocities whose body twists are Linkwork's ``V`` (nb, 6) = [v_C; w], world."""
    import pinocchio as pin

    data = pm.createData()
    pin.computeJointJacobians(pm, data, q0)
    pin.updateFramePlacements(pm, data)
    J = np.vstack([pin.getFrameJacobian(pm, data, f, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED) for f in com])
    v, *_ = np.linalg.lstsq(J, V.reshape(-1), rcond=None)
    return v


def measure(name: str, forms: list[str]) -> dict:
    """One mechanism: agreement of both Pinocchio solvers and every Linkwork formulation
    with ``dense``, then every one of them timed in turns, one thread."""
    import numba
    import pinocchio as pin

    from ..model import build_model
    from ..simulation import Settings, Simulation

    model = build_model(loop_spec(name))
    ref = Simulation(model, Settings(formulation="dense", threads=1)).formulation
    ev = ref.evaluate(0.0, ref.initial_state())
    pm, jid, anchor, constraints, com = pinocchio_loop_model(model)
    q0 = pin.neutral(pm)
    v = pinocchio_velocities(pm, com, q0, ev.V)
    tau = np.zeros(pm.nv)
    row = {"mechanism": name, "nb": model.nb, "nv": model.nv, "cut_points": len(constraints),
           "time_s": {}, "agreement": {}, "iterations": {}}

    def difference(a) -> float:
        return relative_difference(body_accelerations(pm, pm.createData(), jid, model, anchor, q0, v, a), ev.acc)

    def lcaba_call(settings):
        data = pm.createData()
        datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
        pin.computeJointMinimalOrdering(pm, data, constraints)
        prox = pin.ProximalSettings(*settings)
        return prox, lambda: pin.lcaba(pm, data, q0, v, tau, constraints, datas, prox)

    def kkt_call(settings):
        data = pm.createData()
        datas = pin.StdVec_RigidConstraintData([c.createData() for c in constraints])
        pin.initConstraintDynamics(pm, data, constraints, datas)
        prox = pin.ProximalSettings(*settings)
        return prox, lambda: pin.constraintDynamics(pm, data, q0, v, tau, constraints, datas, prox)

    calls = {}
    for label, make in (("pinocchio lcaba", lcaba_call), ("pinocchio constraintDynamics", kkt_call)):
        prox, call = make(PROX_CHECKED)
        row["agreement"][label] = difference(np.array(call(), copy=True))
        row["iterations"][label] = int(prox.iter)
        prox, call = make(PROX_TIMED)
        row["agreement"][label + " (timed)"] = difference(np.array(call(), copy=True))
        row["iterations"][label + " (timed)"] = int(prox.iter)
        calls[label] = call

    numba.set_num_threads(1)
    for f in forms:
        try:
            form = Simulation(model, Settings(formulation=f, threads=1)).formulation
        except Exception as exc:  # noqa: BLE001 - a refusal is a cell of the table
            row.setdefault("refused", {})[f] = str(exc).splitlines()[0][:100]
            continue
        y = form.initial_state()
        row["agreement"][f] = relative_difference(form.evaluate(0.0, y).acc, ev.acc)
        calls[f] = rhs_call(form, 0.0, y)
    row["time_s"] = time_interleaved(calls)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return row


def run(forms: list[str], mechanisms=None) -> dict:
    """The closed-loop table, printed as it is measured."""
    mechanisms = mechanisms or ["loop-8"] + [f"ladder-{L}" for L in LADDER_CELLS]
    peers = list(PEERS)
    cols = peers + forms
    print("closed loops: microseconds per forward-dynamics call, one thread (lcaba with its fast proximal "
          "settings); relative difference of the body accelerations from dense (required <= "
          f"{AGREE_RTOL:g} of Linkwork's formulations and of lcaba with its accurate settings); lcaba's "
          "differences and proximal iterations with both settings; constraintDynamics' difference")
    print(f"{'mechanism':10s} {'nv':>4s}" + "".join(f" {c.replace('pinocchio ', 'pin '):>22s}" for c in cols)
          + f" {'worst diff':>10s} {'lcaba timed':>17s} {'lcaba checked':>17s} {'KKT diff':>9s}")
    rows = []
    for name in mechanisms:
        r = measure(name, forms)
        rows.append(r)
        cells = [f"{r['time_s'][c] * 1e6:.1f}" if c in r["time_s"] else "-" for c in cols]
        worst = _worst(r)
        timed = f"{r['agreement'][PEERS[0] + ' (timed)']:.1e} ({r['iterations'][PEERS[0] + ' (timed)']} it)"
        checked = f"{r['agreement'][PEERS[0]]:.1e} ({r['iterations'][PEERS[0]]} it)"
        print(f"{name:10s} {r['nv']:4d}" + "".join(f" {c:>22s}" for c in cells)
              + f" {worst:10.1e} {timed:>17s} {checked:>17s} {r['agreement'][PEERS[1]]:9.1e}",
              flush=True)
    last = rows[-1]
    ours = {f: last["time_s"][f] for f in forms if f in last["time_s"]}
    if ours and "pinocchio lcaba" in last["time_s"]:
        best = min(ours, key=ours.get)
        print(f"  {last['mechanism']}: fastest Linkwork formulation {best} "
              f"{ours[best] / last['time_s']['pinocchio lcaba']:.2f}x lcaba's time")
    return {"rows": rows, "columns": cols, "agree_rtol": AGREE_RTOL}


def _worst(row: dict) -> float:
    """Largest difference from dense of Linkwork's formulations and the judged peers."""
    return max(v for k, v in row["agreement"].items() if not k.startswith("pinocchio") or k in JUDGED)


def worst(result: dict) -> float:
    return max(_worst(r) for r in result["rows"])


def markdown(result: dict, cpu: str, date: str) -> str:
    """The closed-loop table as Markdown, with how it was measured."""
    cols = result["columns"]
    out = [f"## Closed loops: Pinocchio's lcaba, {date}", "", f"CPU: {cpu}; one thread; microseconds per "
           "forward-dynamics call (best of interleaved rounds); `linkwork bench --peers`.", "",
           "| mechanism | nv | " + " | ".join(cols)
           + " | worst diff (judged) | lcaba timed: diff (iterations) | lcaba checked | KKT diff |",
           "|" + "---|" * (len(cols) + 6)]
    for r in result["rows"]:
        cells = [f"{r['time_s'][c] * 1e6:.1f}" if c in r["time_s"] else "-" for c in cols]
        timed, checked = (f"{r['agreement'][k]:.1e} ({r['iterations'][k]})" for k in (PEERS[0] + " (timed)", PEERS[0]))
        out.append(f"| {r['mechanism']} | {r['nv']} | " + " | ".join(cells)
                   + f" | {_worst(r):.1e} | {timed} | {checked} | {r['agreement'][PEERS[1]]:.1e} |")
    last = result["rows"][-1]
    ours = {c: last["time_s"][c] for c in cols if c not in PEERS and c in last["time_s"]}
    if ours:
        best = min(ours, key=ours.get)
        out += ["", f"At {last['mechanism']} the fastest Linkwork formulation, `{best}`, takes "
                    f"{ours[best] / last['time_s'][PEERS[0]]:.2f}x lcaba's time."]
    out += ["", "Differences: the largest relative difference of every body's centre-of-mass and angular "
                "acceleration from Linkwork's `dense` (required: 1e-9 for Linkwork's formulations and "
                f"`lcaba` with its accurate proximal settings, mu = {PROX_CHECKED[1]:g}; timed with "
                f"mu = {PROX_TIMED[1]:g}, its faster setting). `constraintDynamics` is shown, not judged: on two-joint point constraints it "
                "converges to accelerations that violate the dynamics (engine/studies/lcaba.py).", ""]
    return "\n".join(out)
