"""What pyproject.toml cannot say: the package list, and the resources in the wheel.

The repository's ``engine/`` and ``app/`` install as ``linkwork.engine`` and
``linkwork.app`` (pyproject's ``package-dir``); :func:`packages` names their
sub-packages under those names.

``resources/`` (examples, style sheet, icons) and the help pages of ``docs/`` live at
the top of the repository, outside the packages, so a plain wheel would lose them.
When it builds a wheel, ``build_py`` copies them into ``linkwork/engine/resources/``,
where :mod:`engine.paths` looks in an installed copy.  A checkout and an editable install
keep using the top-level folders.  The list of files is :data:`RESOURCES`;
``MANIFEST.in`` puts the same files into the sdist.
"""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: (glob under the repository, folder under engine/resources/)
RESOURCES = [
    ("resources/examples/*.mech.json", "examples"),
    ("resources/style/*.qss", "style"),
    ("resources/icons/*.svg", "icons"),
    ("docs/formulations.md", "docs"),
    ("docs/user-guide.md", "docs"),
    ("docs/images/*.png", "docs/images"),
]


def packages() -> list[str]:
    """``linkwork`` and every package under ``engine/`` and ``app/``, named inside it."""
    out = ["linkwork"]
    for folder in ("engine", "app"):
        out += [f"linkwork.{folder}"] + [f"linkwork.{folder}.{p}" for p in find_packages(str(HERE / folder))]
    return out


class BuildPyWithResources(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own folders
        dest = Path(self.build_lib) / "linkwork" / "engine" / "resources"
        for pattern, folder in RESOURCES:
            files = sorted(HERE.glob(pattern))
            if not files:
                raise FileNotFoundError(f"no resource matches {pattern} under {HERE}")
            (dest / folder).mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copy2(f, dest / folder / f.name)


setup(packages=packages(), cmdclass={"build_py": BuildPyWithResources})
