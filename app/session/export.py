"""Exporters that read the result history, never the widgets."""

from __future__ import annotations

from pathlib import Path

from linkwork.engine.results import CsvWriter

from .runs import RunRecord


def export_csv(run: RunRecord, path: str | Path) -> Path:
    """Write ``run``'s rows as the results CSV (docs/file-format.md, "Results CSV").

    The same writer, columns and rows as ``linkwork run --out``: for the same
    mechanism and settings the files are byte-identical.  A write that fails (a full
    disk, a read-only folder) raises ``OSError`` and leaves nothing behind: neither a
    partial file nor the temporary one (the window shows the error; the run stays).
    The rows are read from the run's file block by block, so memory stays bounded
    however long the run.
    """
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            writer = CsvWriter(fh, list(run.columns))
            for block in run.blocks():
                writer.write_rows(block)
        tmp.replace(p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


def cli_command(run: RunRecord, mech_path: str | Path | None, out: str = "out.csv") -> str:
    """The ``linkwork run`` command line that reproduces ``run`` (for the run's details)."""
    s = run.settings
    from linkwork.engine.simulation import Settings

    d = Settings()
    args = ["linkwork", "run", str(mech_path) if mech_path else "MECHANISM.mech.json",
            "--formulation", str(s.formulation), "--integrator", str(s.integrator),
            "--dt", repr(s.dt), "--t-end", repr(s.t_end)]
    if s.integrator not in ("rk4", "trapezoidal"):
        args += ["--rtol", repr(s.rtol), "--atol", repr(s.atol)]
    if s.penalty != d.penalty:
        args += ["--penalty", repr(s.penalty)]
    if s.newton_iters != d.newton_iters:
        args += ["--newton-iters", str(s.newton_iters)]
    if s.newton_tol != d.newton_tol:
        args += ["--newton-tol", repr(s.newton_tol)]
    if s.threads is not None:
        args += ["--threads", str(s.threads)]
    if s.projection is not None:
        args += ["--projection", "on" if s.projection else "off"]
    if s.baumgarte is not None:
        args += ["--baumgarte", repr(s.baumgarte[0]), repr(s.baumgarte[1])]
    if s.tangent_hold != d.tangent_hold:
        args += ["--tangent-hold", str(s.tangent_hold)]
    if s.geometric_stiffness:
        args += ["--geometric-stiffness"]
    if not s.exact_projections:
        args += ["--projections", "penalised"]
    args += ["--out", out]
    return " ".join(args)
