"""Layer boundaries (conventions 14), checked in fresh interpreters."""

import subprocess
import sys

import pytest

QT_MODULES = ("PySide6", "pyqtgraph", "vispy")


def _imports(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


@pytest.mark.parametrize("package", ["linkwork.engine", "linkwork.engine.simulation", "linkwork.engine.cli", "linkwork.app.session",
                                     "linkwork.app.session.session", "linkwork.app.session.sketch", "linkwork.app.session.export",
                                     "linkwork.app.session.video"])
def test_qt_free_layers_import_no_gui_toolkit(package):
    mods = _imports(f"import {package}")
    bad = sorted(m for m in mods if m.split(".")[0] in QT_MODULES)
    assert not bad, f"{package} imports {bad[:5]}"


def test_session_layer_sources_do_not_mention_qt():
    from pathlib import Path

    from linkwork.app import session

    root = Path(session.__file__).parent
    for f in root.glob("*.py"):
        text = f.read_text()
        for m in QT_MODULES:
            assert f"import {m}" not in text and f"from {m}" not in text, f"{f.name} imports {m}"
