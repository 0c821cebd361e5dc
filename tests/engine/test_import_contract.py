"""Import contract of the engine (conventions 14; issue 21 item 5): no module of ``engine``
imports the desktop application or a GUI toolkit -- not at the top, not inside a function,
not by a relative import.  Checked on the sources, so that an import on a rarely taken
path (a sub-command, an error branch) cannot slip through.  The launcher package
``linkwork`` is the one place above both."""

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN = ("app", "linkwork", "PySide6", "shiboken6", "pyqtgraph", "vispy")


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in ``path``, a module of
    ``package`` (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = package.split(".")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            out.append((node.lineno, str(node.args[0].value)))
    return out


def _engine_modules():
    for py in sorted(ENGINE.rglob("*.py")):
        rel = py.relative_to(ENGINE.parent).with_suffix("")
        parts = list(rel.parts)
        package = ".".join(parts[:-1])
        yield py, package


def test_the_contract_sees_every_kind_of_import(tmp_path):
    """The checker itself: a forbidden import in each form is found."""
    f = tmp_path / "mod.py"
    f.write_text("import os\nfrom . import spatial\n\ndef later():\n    from app.main import main\n"
                 "    import PySide6.QtCore\n    from .. import app\n"
                 "    importlib.import_module('vispy.scene')\n")
    mods = {m for _, m in imported_modules(f, "engine.formulations")}
    assert mods == {"os", "engine.formulations", "app.main", "PySide6.QtCore", "engine", "vispy.scene"}


@pytest.mark.parametrize("path,package", list(_engine_modules()), ids=lambda v: str(v).split("engine/")[-1])
def test_engine_module_imports_no_app_and_no_gui_toolkit(path, package):
    bad = [(line, m) for line, m in imported_modules(path, package) if m.split(".")[0] in FORBIDDEN]
    assert not bad, f"{path.relative_to(ENGINE.parent)} imports " + ", ".join(f"{m} (line {ln})" for ln, m in bad)
