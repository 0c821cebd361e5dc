"""``linkwork import`` and ``linkwork export`` (docs/import.md): MJCF and URDF in, MJCF out.

Both parse their options before importing anything heavy, so ``--help`` answers at once.
Exit status: 0 done (warnings, one per kind of element left out, on stderr); 2 refused
(MuJoCo missing, a file MuJoCo cannot read, a model that is no mechanism, a mechanism MJCF
cannot say), one line on stderr.
"""

from __future__ import annotations

import argparse
import sys

from ..cli_base import EXIT_OK, EXIT_REFUSED
from ..cli_base import Parser as _Parser
from ..cli_base import refuse as _refuse


def _warn(warnings) -> None:
    for w in warnings:
        print(f"linkwork: warning: {w}", file=sys.stderr)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def mujoco_missing() -> bool:
    """Whether MuJoCo (the ``import`` extra) cannot be imported."""
    try:
        import mujoco  # noqa: F401
    except ImportError:
        return True
    return False


def cmd_import(argv: list[str]) -> int:
    p = _Parser(prog="linkwork import",
                description="Read an MJCF (.xml) or URDF (.urdf) model with MuJoCo's compiler and write it as a "
                            "mechanism file, at the model's initial pose (qpos0, or a keyframe). What has no "
                            "counterpart in Linkwork is named on stderr, one warning per kind (docs/import.md).")
    p.add_argument("file", help="MJCF or URDF model")
    p.add_argument("--out", metavar="FILE.mech.json", help="mechanism file to write [stdout]")
    p.add_argument("--keyframe", metavar="NAME", help="start from this keyframe's qpos and qvel [qpos0, at rest]")
    args = p.parse_args(argv)
    from .common import INSTALL_HINT

    if mujoco_missing():
        return _refuse(f"linkwork import needs MuJoCo: {INSTALL_HINT}")
    from ..mechfile import dumps
    from .common import InteropError
    from .mjcf_import import import_file

    try:
        result = import_file(args.file, keyframe=args.keyframe)
    except InteropError as exc:
        return _refuse(f"{args.file}: {exc}")
    _warn(result.warnings)
    text = dumps(result.spec)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            return _refuse(f"cannot write {args.out}: {exc.strerror or exc}")
    else:
        sys.stdout.write(text)
    s = result.spec
    loops = sum(1 for j in s.joints if j.cut)
    print(f"linkwork: {args.file}: {_count(len(s.bodies), 'body', 'bodies')}, {_count(len(s.joints), 'joint')} "
          f"({loops} closing loops), {_count(len(s.couplings), 'gear')}, {_count(len(s.forces), 'force element')}"
          + (f" -> {args.out}" if args.out else ""), file=sys.stderr)
    return EXIT_OK


def cmd_export(argv: list[str]) -> int:
    p = _Parser(prog="linkwork export",
                description="Write a mechanism as an MJCF model for MuJoCo: a spanning tree of nested bodies, "
                            "loops as connect/weld equalities, gears as joint equalities (docs/import.md).")
    p.add_argument("file", help="mechanism file (*.mech.json)")
    p.add_argument("--mjcf", required=True, metavar="OUT.xml", help="MJCF file to write")
    args = p.parse_args(argv)
    from ..errors import MechanismError
    from ..mechfile import load
    from .common import InteropError
    from .mjcf_export import export_mjcf

    try:
        spec = load(args.file)
        result = export_mjcf(spec)
    except (MechanismError, InteropError) as exc:
        return _refuse(f"{args.file}: {exc}")
    _warn(result.warnings)
    try:
        with open(args.mjcf, "w", encoding="utf-8") as fh:
            fh.write(result.xml)
    except OSError as exc:
        return _refuse(f"cannot write {args.mjcf}: {exc.strerror or exc}")
    print(f"linkwork: {args.file} -> {args.mjcf}", file=sys.stderr)
    return EXIT_OK
