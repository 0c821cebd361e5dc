"""The wheel and sdist of ``python -m build``: what they carry, that everything installs
inside the ``linkwork`` package, and that an installed copy finds its resources without a
checkout.

``.ci/run`` builds them once (``make dist``) and passes the folder in ``LINKWORK_DIST``;
otherwise this module builds them into a temporary folder (about 15 s)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path]:
    given = os.environ.get("LINKWORK_DIST")
    if given:
        d = Path(given).resolve()
    else:
        d = tmp_path_factory.mktemp("dist")
        r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(d), str(ROOT)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheel = d / f"linkwork-{VERSION}-py3-none-any.whl"
    sdist = d / f"linkwork-{VERSION}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in d.iterdir())
    return wheel, sdist


def _sources(package: str) -> set[str]:
    """The modules of a top-level folder, as checkout paths."""
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py")
            if "__pycache__" not in p.parts}


def _installed(package: str) -> set[str]:
    """The modules of a top-level folder, as paths in the wheel: engine/ and app/ install
    inside linkwork/ (pyproject's package-dir)."""
    prefix = "" if package == "linkwork" else "linkwork/"
    return {prefix + s for s in _sources(package)}


def _wheel_sources() -> set[str]:
    return _installed("linkwork") | _installed("engine") | _installed("app")


def _resources() -> dict[str, str]:
    """checkout path -> path in the wheel, for every file the installed application reads."""
    out = {}
    for pattern, folder in (("resources/examples/*.mech.json", "examples"), ("resources/style/*.qss", "style"),
                            ("resources/icons/*.svg", "icons"), ("docs/images/*.png", "docs/images")):
        for f in ROOT.glob(pattern):
            out[f.relative_to(ROOT).as_posix()] = f"linkwork/engine/resources/{folder}/{f.name}"
    for name in ("formulations.md", "user-guide.md"):
        out[f"docs/{name}"] = f"linkwork/engine/resources/docs/{name}"
    return out


def test_wheel_has_every_module_and_resource_and_nothing_else(dists):
    wheel, _ = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = _wheel_sources() - names
    assert not missing, f"modules missing from the wheel: {sorted(missing)}"
    dist_info = f"linkwork-{VERSION}.dist-info/"
    outside = sorted(n for n in names if not n.startswith(("linkwork/", dist_info)))
    assert not outside, f"files outside linkwork/ in the wheel: {outside[:10]}"
    res = _resources()
    assert any(k.startswith("resources/examples/") for k in res)
    missing = {k for k, v in res.items() if v not in names}
    assert not missing, f"resources missing from the wheel: {sorted(missing)}"
    expected = _wheel_sources() | set(res.values())
    stray = {n for n in names - expected if not n.startswith(dist_info)}
    assert not stray, f"unexpected files in the wheel: {sorted(stray)}"
    assert not any(n.startswith("tests/") or "__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc"))
                   for n in names)


def test_wheel_metadata_gives_the_command_and_the_dependencies(dists):
    wheel, _ = dists
    z = zipfile.ZipFile(wheel)
    entry = z.read(f"linkwork-{VERSION}.dist-info/entry_points.txt").decode()
    line = next(ln for ln in entry.splitlines() if ln.startswith("linkwork ="))
    module = line.split("=", 1)[1].strip().split(":")[0]
    assert module.replace(".", "/") + ".py" in z.namelist() or module.replace(".", "/") + "/__init__.py" in z.namelist()
    meta = z.read(f"linkwork-{VERSION}.dist-info/METADATA").decode()
    requires = {ln.split(":", 1)[1].strip().split(">")[0].split("=")[0].split(" ")[0].split(";")[0]
                for ln in meta.splitlines() if ln.startswith("Requires-Dist:") and "extra ==" not in ln}
    assert {"PySide6-Essentials", "pyqtgraph", "vispy", "numpy", "scipy", "numba"} <= requires


def test_sdist_rebuilds_the_wheel_it_came_with(dists):
    _, sdist = dists
    top = f"linkwork-{VERSION}/"
    names = {n[len(top):] for n in tarfile.open(sdist).getnames() if n.startswith(top)}
    needed = {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md"} | set(_resources()) \
        | _sources("linkwork") | _sources("engine") | _sources("app")
    missing = needed - names
    assert not missing, f"missing from the sdist: {sorted(missing)}"
    assert not any("__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc")) for n in names)


def test_installed_wheel_finds_its_resources_without_the_checkout(dists, tmp_path):
    """The wheel unpacked as site-packages would hold it, run from elsewhere: examples and
    the icon come from linkwork/engine/resources/, not from this repository; the folder names
    ``engine`` and ``app`` are not importable."""
    wheel, _ = dists
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from linkwork.engine import paths; "
            "print(paths.examples_dir()); print(paths.docs_dir()); print(paths.resources_dir() / 'icons')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    examples, docs, icons = (Path(x) for x in r.stdout.split())
    assert examples == site / "linkwork" / "engine" / "resources" / "examples"
    assert sorted(p.name for p in examples.glob("*.mech.json")) == \
        sorted(p.name for p in (ROOT / "resources" / "examples").glob("*.mech.json"))
    assert (docs / "formulations.md").is_file() and (icons / "linkwork.svg").is_file()
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from linkwork.engine.cli import main; sys.exit(main(['examples']))", str(site)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert str(site / "linkwork" / "engine" / "resources" / "examples" / "parallelogram-fourbar.mech.json") in r.stdout
    for name in ("engine", "app"):
        r = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, sys.argv[1]); import {name}",
                            str(site)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, (name, r.stderr)
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import linkwork; "
                        "from linkwork import Settings, Simulation, examples_dir, load_model; "
                        "m = load_model(examples_dir() / 'loop-4.mech.json'); print(m.nb)", str(site)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 0 and int(r.stdout) > 0, r.stderr
