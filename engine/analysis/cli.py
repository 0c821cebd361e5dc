"""``linkwork equilibrium`` and ``linkwork modes`` (docs/user-guide.md, "Static equilibrium
and vibration modes").

Both parse their options before importing the engine, so ``--help`` answers at once.
Exit status: 0 done; 2 refused (a file the format refuses, a force without a potential,
no rest found -- the message says how far Newton got --, ``--at-file`` on a configuration
that is not at rest), one line on stderr.
"""

from __future__ import annotations

import argparse
import sys

from ..cli_base import EXIT_OK, EXIT_REFUSED
from ..cli_base import Parser as _Parser
from ..cli_base import refuse as _refuse

#: the report lists at most this many eigenvalues and unstable or neutral directions
LIST_MAX = 12


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {n})")
    return n


def _hold_option(p) -> None:
    p.add_argument("--hold", metavar="JOINT", action="append", default=[],
                   help="hold this revolute or prismatic joint at its coordinate in the file (repeatable); "
                        "the joints the file drives are always held")


def equilibrium_report(model, eq) -> str:
    """The short report ``linkwork equilibrium`` prints."""
    import numpy as np

    from ..model import PRISMATIC, REVOLUTE
    from .equilibrium import GRADIENT_ACCEPT

    f = eq.eigenvalues.shape[0]
    lines = [f"equilibrium of {model.name or 'the mechanism'!s} ({model.nb} bodies, {f} "
             f"{'freedom' if f == 1 else 'freedoms'} at rest)",
             f"  Newton iterations     {eq.iterations}",
             f"  constraint residual   {eq.constraint_residual:.3g}",
             f"  gradient residual     {eq.gradient_residual:.3g} "
             f"(reduced; tolerance {GRADIENT_ACCEPT * eq.force_scale:.3g})",
             f"  potential energy      {eq.energy:.12g} J (file's configuration: {eq.energy_start:.12g} J)"]
    if f:
        shown = eq.eigenvalues if f <= LIST_MAX else np.r_[eq.eigenvalues[:LIST_MAX - 3], eq.eigenvalues[-3:]]
        ev = [f"{w:.6g}" for w in shown]
        if f > LIST_MAX:
            ev.insert(LIST_MAX - 3, f"... ({f - LIST_MAX} more)")
        lines.append(f"  verdict               {eq.verdict}; reduced Hessian eigenvalues {', '.join(ev)}")
    else:
        lines.append(f"  verdict               {eq.verdict}: no freedom "
                     "(the joints, gears and held joints fix every body)")
    listed = 0
    for k, w in enumerate(eq.eigenvalues):
        if w > eq.neutral_tol:
            break  # ascending: the rest are stable
        if listed == LIST_MAX:
            rest = int(np.count_nonzero(eq.eigenvalues[k:] <= eq.neutral_tol))
            lines.append(f"    ... and {rest} more unstable or neutral "
                         f"{'direction' if rest == 1 else 'directions'}")
            break
        listed += 1
        if w < -eq.neutral_tol:
            lines.append(f"    unstable direction  {eq.direction_text(k)}  (eigenvalue {w:.6g})")
        else:
            lines.append(f"    neutral direction   {eq.direction_text(k)}")
    moved = []
    for j in sorted(range(model.nb), key=lambda j: model.joint_file_index[j]):
        if model.jtype[j] in (REVOLUTE, PRISMATIC):
            unit = "m" if model.jtype[j] == PRISMATIC else "rad"
            moved.append(f"{model.joint_names[j]} {eq.q[model.q_adr[j]]:+.9g} {unit}")
    if moved:
        lines.append("  joints moved by       " + ", ".join(moved))
    return "\n".join(lines)


def cmd_equilibrium(argv: list[str]) -> int:
    p = _Parser(prog="linkwork equilibrium",
                description="The rest of a mechanism under gravity, springs and constant joint torques: "
                            "Newton's method on the potential energy over the configurations its joints allow, "
                            "from the file's configuration; the stability from the reduced Hessian. Writes the "
                            "mechanism at rest (docs/user-guide.md, \"Static equilibrium and vibration modes\").")
    p.add_argument("file", help="mechanism file (*.mech.json)")
    p.add_argument("--out", metavar="FILE.mech.json", help="write the mechanism at rest (zero velocities) here")
    _hold_option(p)
    p.add_argument("--max-iterations", type=_positive_int, default=100, metavar="N",
                   help="Newton iterations before giving up [100]")
    args = p.parse_args(argv)
    from ..errors import MechanismError
    from ..mechfile import load, save
    from ..model import build_model
    from .equilibrium import EquilibriumError, find_equilibrium, spec_at_rest

    try:
        model = build_model(load(args.file))
        eq = find_equilibrium(model, hold=args.hold, max_iterations=args.max_iterations)
    except MechanismError as exc:
        return _refuse(f"{args.file}: {exc}")
    except EquilibriumError as exc:
        return _refuse(f"{args.file}: {exc}")
    print(equilibrium_report(model, eq))
    if args.out:
        try:
            save(spec_at_rest(model, eq.q), args.out)
        except OSError as exc:
            return _refuse(f"cannot write {args.out}: {exc.strerror or exc}")
        print(f"wrote {args.out}")
    return EXIT_OK


def modes_table(md, count: int | None = None) -> str:
    """The table ``linkwork modes`` prints."""
    import numpy as np

    f = md.eigenvalues.shape[0] if count is None else min(count, md.eigenvalues.shape[0])
    rows = [f"{'mode':>4}  {'frequency [Hz]':>15}  {'omega [rad/s]':>14}  {'damping ratio':>13}  shape"]
    for k in range(f):
        w2 = md.eigenvalues[k]
        d = md.shapes[:, k]
        big = float(np.max(np.abs(d))) or 1.0
        shape = ", ".join(f"{md.labels[i]} {d[i] / big:+.3g}" for i in range(d.size) if abs(d[i]) >= 0.05 * big)
        if w2 < 0 and not md.neutral[k]:
            rows.append(f"{k + 1:>4}  {'unstable':>15}  {'':>14}  {'':>13}  {shape}  "
                        f"(grows as exp({np.sqrt(-w2):.6g} t))")
            continue
        z = md.damping_ratios[k]
        zs = "-" if np.isnan(z) else f"{z:.6g}"
        note = "  (neutral: moves freely)" if md.neutral[k] else ""
        rows.append(f"{k + 1:>4}  {md.frequency_hz[k]:>15.9g}  {md.omega[k]:>14.9g}  {zs:>13}  {shape}{note}")
    return "\n".join(rows)


def cmd_modes(argv: list[str]) -> int:
    p = _Parser(prog="linkwork modes",
                description="Natural frequencies, damping ratios and mode shapes of the small motions about the "
                            "mechanism's rest (found first, as linkwork equilibrium does; or the file's own "
                            "configuration with --at-file). Writes modes.csv and shapes.csv (docs/user-guide.md, "
                            "\"Static equilibrium and vibration modes\").")
    p.add_argument("file", help="mechanism file (*.mech.json)")
    p.add_argument("--count", type=_positive_int, default=None, metavar="N", help="the N slowest modes [all]")
    p.add_argument("--out", metavar="DIR", help="write modes.csv and shapes.csv into this folder")
    p.add_argument("--at-file", action="store_true",
                   help="linearise at the file's configuration, which must be a rest (refused otherwise)")
    _hold_option(p)
    args = p.parse_args(argv)
    from ..errors import MechanismError
    from ..mechfile import load
    from ..model import build_model
    from .equilibrium import EquilibriumError
    from .modes import linear_modes, write_modes

    try:
        model = build_model(load(args.file))
        md = linear_modes(model, at_file=args.at_file, hold=args.hold)
    except MechanismError as exc:
        return _refuse(f"{args.file}: {exc}")
    except EquilibriumError as exc:
        hint = " (without --at-file the rest is found first)" if args.at_file else ""
        return _refuse(f"{args.file}: {exc}{hint}")
    eq = md.equilibrium
    where = "the file's configuration" if args.at_file else f"the rest ({eq.iterations} Newton iterations)"
    print(f"modes of {model.name or 'the mechanism'} about {where}: {eq.verdict}, "
          f"{md.eigenvalues.shape[0]} {'freedom' if md.eigenvalues.shape[0] == 1 else 'freedoms'}")
    if md.eigenvalues.shape[0]:
        print(modes_table(md, args.count))
    if md.coupling > 1e-3:
        print(f"note: the damping couples the modes (largest modal off-diagonal ratio {md.coupling:.3g}); "
              "the ratios are the modal ones")
    if args.out:
        keep = slice(None) if args.count is None else slice(0, args.count)
        from dataclasses import replace

        part = replace(md, eigenvalues=md.eigenvalues[keep], neutral=md.neutral[keep], shapes=md.shapes[:, keep],
                       damping_ratios=md.damping_ratios[keep])
        try:
            written = write_modes(part, args.out)
        except OSError as exc:
            return _refuse(f"cannot write into {args.out}: {exc.strerror or exc}")
        print("wrote " + ", ".join(str(w) for w in written))
    return EXIT_OK
