"""Help: the formulation guide (docs/formulations.md rendered) and About."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from linkwork.engine.paths import docs_dir as _docs_dir


def docs_dir() -> Path:
    return _docs_dir()


def formulations_text(path: Path | None = None) -> tuple[str, bool]:
    """(markdown, found): the guide, or a clear message and the registry's own summaries."""
    p = path or docs_dir() / "formulations.md"
    try:
        return p.read_text(encoding="utf-8"), True
    except OSError:
        from linkwork.engine.formulations import REGISTRY

        lines = ["# Formulation guide", "",
                 f"**The formulation guide was not found** (looked for `{p}`). Your installation may be "
                 "missing the `docs/` folder; the guide is also in the project's repository.", "",
                 "The formulations this version of Linkwork provides, as they describe themselves:", ""]
        for name, cls in REGISTRY.items():
            lines.append(f"- **{name}** — {getattr(cls, 'title', '')}. {getattr(cls, 'summary', '')}")
        return "\n".join(lines), False


class MarkdownDialog(QDialog):
    def __init__(self, title: str, markdown: str, parent: QWidget | None = None, base: Path | None = None):
        super().__init__(parent)
        self.setObjectName("MarkdownDialog")
        self.setWindowTitle(title)
        lay = QVBoxLayout(self)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)
        if base is not None:
            self.browser.setSearchPaths([str(base)])
        self.browser.setMarkdown(markdown)
        lay.addWidget(self.browser, 1)
        bb = QDialogButtonBox(QDialogButtonBox.Close)
        bb.rejected.connect(self.reject)
        bb.accepted.connect(self.accept)
        lay.addWidget(bb)
        self.resize(760, 620)
        self.setAttribute(Qt.WA_DeleteOnClose, False)


def formulation_guide(parent: QWidget | None = None) -> MarkdownDialog:
    text, _found = formulations_text()
    return MarkdownDialog("Formulation guide", text, parent, base=docs_dir())


def about_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    import numpy
    import pyqtgraph
    import PySide6
    import scipy
    import vispy

    def dist(name: str) -> str:
        # numba compiles the engine's kernels; its version is read from the installed
        # package's metadata, so About does not import the compiler into the GUI
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    from linkwork.engine import __version__
    from linkwork.engine.formulations import REGISTRY

    return (f"# Linkwork {__version__}\n\n"
            "Dynamics of mechanisms: build a mechanism, choose a formulation, run it and watch energy "
            "and constraint drift while it moves.\n\n"
            f"Formulations available: {', '.join(REGISTRY)}.\n\n"
            f"PySide6 {PySide6.__version__} · pyqtgraph {pyqtgraph.__version__} · vispy {vispy.__version__} · "
            f"numpy {numpy.__version__} · scipy {scipy.__version__} · "
            f"numba {dist('numba')} (llvmlite {dist('llvmlite')}), the engine's compiler\n\nMIT licence.")
