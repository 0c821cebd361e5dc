"""The main window's File › Import… and Export › Mechanism as MJCF… (docs/import.md): file
dialogs and the keyframe choice, over :mod:`linkwork.app.session.interop`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QInputDialog

from linkwork.app.session.interop import IMPORT_FILTER, ImportRefused, export_mjcf, import_into, keyframes

#: the keyframe choice's first item: the model's reference configuration
REFERENCE_POSE = "qpos0 (the model's reference pose)"


def import_dialog(window) -> bool:
    """Ask for an MJCF or URDF file (and, if it has keyframes, the pose to start from) and
    import it into the window's session; True if the document was replaced."""
    if window._busy_refusal() or not window.confirm_discard():
        return False
    notes = window.session.notifications
    start = str(window.settings.value("paths/import_dir", str(Path.home())))
    path, _ = QFileDialog.getOpenFileName(window, "Import MJCF or URDF model", start, IMPORT_FILTER)
    if not path:
        return False
    window.settings.setValue("paths/import_dir", str(Path(path).parent))
    try:
        keys = keyframes(path)
    except ImportRefused as exc:
        notes.error(str(exc), source="import")
        return False
    keyframe = None
    if keys:
        choice, ok = QInputDialog.getItem(window, "Initial pose", "Start the mechanism from:",
                                          [REFERENCE_POSE] + keys, 0, False)
        if not ok:
            return False
        keyframe = None if choice == REFERENCE_POSE else choice
    try:
        import_into(window.session, path, keyframe)
    except ImportRefused as exc:
        notes.error(str(exc), source="import")
        return False
    return True


def export_mjcf_dialog(window) -> bool:
    """Ask where to write the open mechanism as MJCF, and write it; True if written."""
    doc = window.session.document
    notes = window.session.notifications
    stem = (doc.path.name.split(".")[0] if doc.path else (doc.spec.name or "mechanism")).replace(" ", "-")
    start = Path(window.settings.value("paths/export_dir", str(Path.home()))) / f"{stem}.xml"
    path, _ = QFileDialog.getSaveFileName(window, "Export mechanism as MJCF", str(start),
                                          "MJCF (*.xml);;All files (*)")
    if not path:
        return False
    window.settings.setValue("paths/export_dir", str(Path(path).parent))
    try:
        p = export_mjcf(window.session, path)
    except ImportRefused as exc:
        notes.error(str(exc), source="export")
        return False
    except OSError as exc:
        notes.error(f"Cannot write {path}: {exc.strerror or exc}", source="export")
        return False
    notes.info(f"Wrote {p.name}.", source="export")
    return True
