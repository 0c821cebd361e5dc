"""File › Import… (MJCF, URDF) and Export › Mechanism as MJCF… without Qt (docs/import.md).

The engine does the work (:mod:`linkwork.engine.interop`); here the imported mechanism
replaces the session's document -- as an unsaved mechanism in no file yet, so Save asks
where to write it -- and every warning goes to the notification sink.
"""

from __future__ import annotations

from pathlib import Path

from linkwork.engine.interop.common import INSTALL_HINT, InteropError

#: the file dialog's filter for Import…
IMPORT_FILTER = "MuJoCo and URDF models (*.xml *.mjcf *.urdf);;All files (*)"


class ImportRefused(Exception):
    """The model cannot be imported; the message says why in one line."""


def mujoco_available() -> tuple[bool, str]:
    """Whether MuJoCo (the ``import`` extra) can be imported, and if not what to install."""
    try:
        import mujoco  # noqa: F401
    except ImportError:
        return False, f"Importing MJCF and URDF needs MuJoCo: {INSTALL_HINT}"
    return True, ""


def keyframes(path: str | Path) -> list[str]:
    """The names of the model's keyframes (its initial poses besides ``qpos0``)."""
    ok, why = mujoco_available()
    if not ok:
        raise ImportRefused(why)
    import mujoco

    from linkwork.engine.interop.mjcf_import import compile_file

    try:
        m = compile_file(path)
    except InteropError as exc:
        raise ImportRefused(str(exc)) from None
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_KEY, k) for k in range(m.nkey)]
    return [n for n in names if n]


def import_into(session, path: str | Path, keyframe: str | None = None):
    """Import ``path`` into ``session``'s document (module docstring); returns the spec.

    Raises :class:`ImportRefused` (the document unchanged) with the reason."""
    ok, why = mujoco_available()
    if not ok:
        raise ImportRefused(why)
    from linkwork.engine.errors import MechanismError
    from linkwork.engine.interop.mjcf_import import import_file
    from linkwork.engine.model import build_model

    p = Path(path)
    try:
        result = import_file(p, keyframe=keyframe)
        build_model(result.spec)  # what only the model refuses (an impossible loop) refuses here too
    except (InteropError, MechanismError) as exc:
        raise ImportRefused(f"Cannot import {p.name}: {exc}") from None
    session.document.restore(result.spec, None)
    for w in result.warnings:
        session.notifications.warning(f"{p.name}: {w}", source="import")
    pose = f"keyframe {keyframe!r}" if keyframe else "its reference pose (qpos0)"
    session.notifications.info(f"Imported {p.name} at {pose}: {len(result.spec.bodies)} bodies, "
                               f"{len(result.spec.joints)} joints; save it as a mechanism file to keep it.",
                               source="import")
    return result.spec


def export_mjcf(session, path: str | Path) -> Path:
    """Write the document's mechanism as MJCF to ``path`` (atomically); the export's
    warnings go to the notification sink.  Raises :class:`ImportRefused` where MJCF cannot
    say the mechanism, ``OSError`` where the file cannot be written (nothing is left behind)."""
    from linkwork.engine.interop.mjcf_export import export_mjcf as to_mjcf

    v = session.document.validation
    if not v.ok:
        raise ImportRefused(f"The mechanism is refused: {v.message}")
    try:
        result = to_mjcf(session.document.spec)
    except InteropError as exc:
        raise ImportRefused(f"Cannot export as MJCF: {exc}") from None
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    try:
        tmp.write_text(result.xml, encoding="utf-8")
        tmp.replace(p)
    finally:
        if tmp.exists():
            tmp.unlink()
    for w in result.warnings:
        session.notifications.warning(f"{p.name}: {w}", source="export")
    return p
