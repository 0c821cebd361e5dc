"""The import graph of the product, read from the sources: ``linkwork/`` and the
repository's ``engine/`` and ``app/`` (installed as ``linkwork.engine`` and
``linkwork.app``).  Every import statement counts -- at the top of a module, inside a
function, relative or absolute, ``importlib.import_module`` with a constant -- so that an
import on a rarely taken path cannot hide a circle or a climb.

The rules:

- no cycles: a module never reaches itself through the modules it imports;
- the engine is a headless library: nothing under ``linkwork.engine`` imports the
  application, the launcher (``linkwork.cli``) or a GUI toolkit;
- the application's Qt-free layers (``linkwork.app.session``, ``linkwork.app.vispy``) do
  not import its widgets (``linkwork.app.qt``);
- nothing imports the folders by their repository names (``engine``, ``app``): in a
  checkout they would load a second copy of every module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: package name -> folder
PACKAGES = {"linkwork": ROOT / "linkwork", "linkwork.engine": ROOT / "engine", "linkwork.app": ROOT / "app"}
GUI_TOOLKITS = ("PySide6", "shiboken6", "pyqtgraph", "vispy")


def modules(packages: dict[str, Path] = PACKAGES) -> dict[str, tuple[Path, bool]]:
    """Every module: name -> (file, is a package's ``__init__``)."""
    out = {}
    for name, folder in packages.items():
        for py in sorted(folder.rglob("*.py")):
            rel = py.relative_to(folder).with_suffix("").parts
            if rel[-1] == "__init__":
                out[".".join((name, *rel[:-1]))] = (py, True)
            else:
                out[".".join((name, *rel))] = (py, False)
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``, which never run."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(path: Path, module: str, is_package: bool, known: set[str]) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``: relative imports resolved, and ``from P
    import X`` counted as an import of ``P.X`` where that is a module, of ``P`` otherwise."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module.split(".") if is_package else module.split(".")[:-1]
    out = []
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            out += [(node.lineno, s) for s in subs]
            if len(subs) < len(node.names):
                out.append((node.lineno, base))
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
              in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)):
            out.append((node.lineno, str(node.args[0].value)))
    return out


def graph(packages: dict[str, Path] = PACKAGES) -> dict[str, dict[str, int]]:
    """module -> {imported module of the product: first line}."""
    mods = modules(packages)
    known = set(mods)
    g = {}
    for name, (path, is_pkg) in mods.items():
        edges = {}
        for line, target in imports_of(path, name, is_pkg, known):
            # an import of a name the graph does not hold as a module: its nearest package
            while target and target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                edges.setdefault(target, line)
        g[name] = edges
    return g


def cycles(g: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def all_imports(packages: dict[str, Path] = PACKAGES):
    mods = modules(packages)
    for name, (path, is_pkg) in mods.items():
        for line, target in imports_of(path, name, is_pkg, set(mods)):
            yield name, path, line, target


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_engine_imports_neither_the_application_nor_a_gui_toolkit():
    bad = [f"{p.relative_to(ROOT)}:{line} imports {t}" for m, p, line, t in all_imports()
           if m.startswith("linkwork.engine") and (
               t.split(".")[0] in GUI_TOOLKITS or t.startswith("linkwork.app") or t in ("linkwork", "linkwork.cli"))]
    assert not bad, "\n".join(bad)


def test_the_qt_free_layers_of_the_application_import_no_widgets():
    bad = [f"{p.relative_to(ROOT)}:{line} imports {t}" for m, p, line, t in all_imports()
           if m.startswith(("linkwork.app.session", "linkwork.app.vispy")) and (t == "linkwork.app.qt" or t.startswith("linkwork.app.qt."))]
    assert not bad, "\n".join(bad)


def test_nothing_imports_the_folders_by_their_repository_names():
    bad = [f"{p.relative_to(ROOT)}:{line} imports {t}" for m, p, line, t in all_imports()
           if t.split(".")[0] in ("engine", "app")]
    assert not bad, "\n".join(bad)


def _plant(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return {"pkg": tmp_path / "pkg"}


@pytest.mark.parametrize("how", ["top", "function", "relative", "import_module", "from-package"])
def test_a_planted_cycle_is_found_in_every_form_of_import(tmp_path, how):
    """The checker itself: a circle a -> b -> a, with the way back written each way."""
    back = {"top": "import pkg.a\n",
            "function": "def later():\n    from pkg.a import f\n",
            "relative": "from .a import f\n",
            "import_module": "import importlib\nimportlib.import_module('pkg.a')\n",
            "from-package": "from . import a\n"}[how]
    pk = _plant(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from .b import g\ndef f(): pass\n",
                           "pkg/b.py": back + "def g(): pass\n"})
    assert cycles(graph(pk)) == [["pkg.a", "pkg.b"]]


def test_a_package_that_imports_its_own_modules_is_not_a_cycle(tmp_path):
    pk = _plant(tmp_path, {"pkg/__init__.py": "from .a import f\n", "pkg/a.py": "def f(): pass\n"})
    assert cycles(graph(pk)) == []
    pk = _plant(tmp_path, {"pkg/__init__.py": "from .a import f\nX = 1\n", "pkg/a.py": "from . import X\n"})
    assert cycles(graph(pk)) == [["pkg", "pkg.a"]]
