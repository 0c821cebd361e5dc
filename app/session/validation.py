"""Validation of an edited mechanism and its topology summary.

The editor never invents its own rules: a spec is checked exactly as a file
would be -- ``spec_from_dict(spec_to_dict(spec))`` then
:func:`engine.model.build_model` -- and the engine's refusal text is shown as
is.  The JSON path in the refusal (``bodies[2].mass``) is mapped to the body,
joint or force it points at, so the editor can highlight it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from linkwork.engine.errors import MechanismError
from linkwork.engine.mechfile import MechanismSpec, spec_from_dict, spec_to_dict
from linkwork.engine.model import Model, build_model
from linkwork.engine.topology import analyze

_PATH = re.compile(r"^(bodies|joints|forces|couplings|drivers)\[(\d+)\]")


@dataclass(frozen=True)
class Target:
    """What a refusal points at: ``kind`` is "body", "joint", "force", "gear", "driver" or "mechanism"."""

    kind: str
    name: str  # body/joint name, force index as text, "" for the mechanism

    def label(self) -> str:
        if self.kind == "mechanism":
            return "mechanism"
        if self.kind == "force":
            return f"force {int(self.name) + 1}"
        return f"{self.kind} {self.name!r}"


@dataclass(frozen=True)
class TopologySummary:
    bodies: int
    joints: int
    loops: int | None = None
    dof: int | None = None
    redundant: int | None = None
    cut_joints: tuple[str, ...] = ()

    def text(self) -> str:
        def count(n, one, many):
            if n is None:
                return f"– {many}"
            return f"{n} {one if n == 1 else many}"

        dof = "–" if self.dof is None else str(self.dof)
        redundant = "–" if self.redundant is None else str(self.redundant)
        return (f"{count(self.bodies, 'body', 'bodies')} · {count(self.joints, 'joint', 'joints')} · "
                f"{count(self.loops, 'loop', 'loops')} · DOF {dof} · {redundant} redundant")


@dataclass(frozen=True)
class Validation:
    ok: bool
    message: str = ""  # the engine's refusal text (path: rule)
    path: str = ""
    rule: str = ""
    target: Target | None = None
    model: Model | None = None
    summary: TopologySummary | None = None
    warnings: tuple[str, ...] = ()


def target_of(spec: MechanismSpec, path: str) -> Target:
    """The body, joint, force or gear that a JSON path like ``joints[3].axis`` points at."""
    m = _PATH.match(path or "")
    if not m:
        return Target("mechanism", "")
    kind, idx = m.group(1), int(m.group(2))
    if kind == "bodies" and idx < len(spec.bodies):
        return Target("body", spec.bodies[idx].name)
    if kind == "joints" and idx < len(spec.joints):
        return Target("joint", spec.joints[idx].name)
    if kind == "forces" and idx < len(spec.forces):
        return Target("force", str(idx))
    if kind == "couplings" and idx < len(spec.couplings):
        return Target("gear", spec.couplings[idx].name)
    if kind == "drivers" and idx < len(spec.drivers):
        return Target("driver", spec.drivers[idx].name)
    return Target("mechanism", "")


def validate(spec: MechanismSpec, pristine: bool = False) -> Validation:
    """Check ``spec`` as the engine checks a file; never raises for a refused spec.

    The model returned is built from the spec *as a saved file would be read
    back* (``spec_from_dict(spec_to_dict(spec))``), so a run in the application
    equals ``linkwork run`` on the saved file.  ``pristine``: ``spec`` was just
    read from a file by :func:`engine.mechfile.load` -- use it as is (reading it
    back again could move a normalised axis by one ulp).
    """
    nb, nj = len(spec.bodies), len(spec.joints)
    try:
        checked = spec_from_dict(spec_to_dict(spec))
        model = build_model(spec if pristine else checked)
    except MechanismError as exc:
        return Validation(False, str(exc), exc.path, exc.rule, target_of(spec, exc.path),
                          summary=TopologySummary(nb, nj))
    except (TypeError, ValueError) as exc:  # a spec the dataclasses cannot even serialise
        return Validation(False, f"(mechanism): {exc}", "", str(exc), Target("mechanism", ""),
                          summary=TopologySummary(nb, nj))
    topo = analyze(model)
    summary = TopologySummary(nb, nj, topo.n_loops, topo.dof, topo.redundant, tuple(topo.cut_joints))
    return Validation(True, model=model, summary=summary, warnings=tuple(checked.warnings))
