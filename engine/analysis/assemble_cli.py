"""``linkwork assemble FILE [--fix JOINT=VALUE ...] --out FILE.mech.json`` (docs/user-guide.md,
"Assembling a rough drawing"): move a rough drawing onto its joint constraints and write it
as a closed mechanism file.

Exit status: 0 written (how far each body moved and the closure on stdout); 2 refused
(a file or option the format refuses, or loops that cannot close), one line on stderr.
"""

from __future__ import annotations

import argparse
import sys

from ..cli_base import EXIT_OK, EXIT_REFUSED
from ..cli_base import Parser as _Parser
from ..cli_base import refuse as _refuse


def _fix(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--fix wants JOINT=VALUE (got {text!r})")
    try:
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fix {name}: VALUE must be a number in rad or m (got {value!r})") \
            from None


def cmd_assemble(argv: list[str]) -> int:
    p = _Parser(prog="linkwork assemble",
                description="Move a rough drawing onto its joint constraints: the body poses nearest the "
                            "drawing (mass-weighted) that close every loop, on the drawing's branch, with the "
                            "joints given by --fix held; write the closed mechanism file.")
    p.add_argument("file", help="mechanism file, joints may carry child_anchor / child_axis (docs/file-format.md)")
    p.add_argument("--fix", action="append", type=_fix, default=[], metavar="JOINT=VALUE",
                   help="hold a revolute (rad) or prismatic (m) joint at VALUE: its coordinate measured from "
                        "the drawing, in the file's parent-to-child sense (as joint.<J>.q of linkwork run); "
                        "repeatable")
    p.add_argument("--out", required=True, metavar="FILE.mech.json", help="the assembled mechanism file")
    args = p.parse_args(argv)
    from ..errors import MechanismError
    from ..mechfile import save
    from .assemble import AssemblyError, assemble, assembled_spec, load_drawing

    fix = {}
    for name, value in args.fix:
        if name in fix:
            return _refuse(f"--fix {name}: given twice")
        fix[name] = value
    try:
        d = load_drawing(args.file)
        a = assemble(d, fix)
        out = assembled_spec(d, a)
    except MechanismError as exc:
        return _refuse(f"{args.file}: {exc}")
    except AssemblyError as exc:
        return _refuse(f"{args.file}: {exc}")
    try:
        save(out, args.out)
    except OSError as exc:
        return _refuse(f"cannot write {args.out}: {exc.strerror or exc}")
    model = d.model
    for w in d.spec.warnings:
        print(f"linkwork: warning: {w}", file=sys.stderr)
    print(f"assembled      {model.name or args.file}: {a.iterations} Newton steps; joint gaps max |Phi| "
          f"{a.gap_drawn:.3g} as drawn, closure max |Phi| {a.closure:.3g} assembled")
    for k in range(model.nb):
        i = int(model.body_internal[k])
        print(f"  {model.body_names[i]:<12} moved {a.translation[i]:.6g} m, turned {a.rotation[i]:.6g} deg")
    for name in fix:
        print(f"  held         {name} = {fix[name]:.6g} (from the drawing)")
    print(f"wrote          {args.out}")
    return EXIT_OK
