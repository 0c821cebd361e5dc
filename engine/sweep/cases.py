"""A sweep's cases made ready to run: each case's mechanism document and settings,
validated through the same loader and settings check as ``linkwork run``.  A case they
refuse is reported with its index, its parameter values and their message, and is not
submitted; the others run."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .parameters import is_setting, resolve_path
from .spec import Case, SweepSpec

@dataclass(frozen=True)
class PreparedCase:
    """A case ready to submit (``refused`` is None) or refused before submission."""

    case: Case
    doc: dict  # the mechanism document with the case's values
    settings: dict  # run settings (sweep's, then the case's)
    key: str  # hash of everything that determines the result
    refused: str | None = None

    @property
    def index(self) -> int:
        return self.case.index


def _label(value: Any) -> str:
    return json.dumps(value)[:60]


def _case_key(what) -> str:
    """Hash of everything that determines a case's result (resume compares it)."""
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:20]


def build_settings(model, given: dict):
    """The :class:`Settings` of a run, exactly as ``linkwork run`` makes them: the
    mechanism file's recommended settings, then the given ones."""
    from ..simulation import file_defaults

    given = dict(given)
    if "baumgarte" in given and isinstance(given["baumgarte"], list):
        given["baumgarte"] = tuple(given["baumgarte"])
    return file_defaults(model, given.get("formulation")).replace(**given)


def prepare_case(spec: SweepSpec, case: Case) -> PreparedCase:
    """Apply a case's values and validate it with the mechanism loader and the settings
    check; a refusal names the case, the parameter values and the loader's message."""
    from ..errors import MechanismError, SettingsError
    from ..mechfile import spec_from_dict
    from ..model import build_model
    from ..simulation import resolve_settings

    doc = copy.deepcopy(spec.base)
    settings = dict(spec.settings)
    desc = ", ".join(f"{p} = {_label(v)}" for p, v in case.params)
    key = _case_key([doc, settings, list(case.params), list(spec.keep), spec.trajectories])

    def refuse(msg: str) -> PreparedCase:
        return PreparedCase(case, doc, settings, key, refused=f"case {case.index} ({desc}): {msg}")

    for path, value in case.params:
        if is_setting(path):
            settings[path] = value
            continue
        try:
            node, k = resolve_path(doc, path)
        except ValueError as exc:
            return refuse(f"bad parameter path {exc}")
        node[k] = copy.deepcopy(value)
    key = _case_key([doc, settings, list(spec.keep), spec.trajectories])
    try:
        mspec = spec_from_dict(doc)
        model = build_model(mspec)
    except MechanismError as exc:
        return refuse(str(exc))
    varied = {p for p, _ in case.params}
    for w in mspec.warnings:  # a misspelt field would be ignored by the loader: refuse it
        where = w.partition(": unknown key")[0]
        if "unknown key" in w and where in varied:
            return refuse(f"bad parameter path {where}: not a field of the mechanism format ({w})")
    try:
        resolve_settings(model, build_settings(model, settings))
    except (SettingsError, TypeError, ValueError) as exc:
        return refuse(str(exc))
    return PreparedCase(case, doc, settings, key)


def prepare_cases(spec: SweepSpec) -> list[PreparedCase]:
    return [prepare_case(spec, c) for c in spec.cases]
