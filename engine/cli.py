"""The ``linkwork`` command (docs/file-format.md, "Command line"): the desktop application and the
headless sub-commands.  :data:`COMMANDS` is the one list of sub-commands; ``--help``
and the refusal of an unknown command are made from it.

Exit status: 0 success; 2 refused input (file or options), message on stderr;
3 the simulation failed (message with the simulated time on stderr; every row
computed before the failure is in the output); 130 interrupted (Ctrl-C; rows
computed so far are in the output).  A reader that closes the pipe early
(``linkwork examples | head -1``) ends the command quietly with status 0.

The engine never imports the desktop application: the commands
that need it -- the window, ``report`` and ``--selftest`` -- are *front ends* that
the ``linkwork`` launcher package hands to :func:`main` (``linkwork/cli.py``).
``python -m linkwork.engine.cli`` runs the headless commands and refuses those.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .threads import DCA_CHAIN_SERIAL_BELOW, DCA_TREE_SERIAL_BELOW, HDCA_CHAIN_SERIAL_BELOW, PARALLEL_MIN_BODIES

from .cli_base import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, Parser, float_arg
from .cli_base import int_arg as _int
from .cli_base import refuse as _refuse

#: sub-command -> (arguments, one line for ``linkwork --help``)
COMMANDS = {
    "run": ("FILE.mech.json [options]", "simulate headless and write the results CSV"),
    "info": ("FILE.mech.json [--json]", "topology, loops, coordinates, DOF, redundant constraints"),
    "report": ("FILE.mech.json [--out DIR]", "simulate without a screen: CSV, plots and pictures (PNG, GIF)"),
    "examples": ("", "list the bundled example mechanisms"),
    "study": ("NAME [--out DIR]", "reproduce a paper's study (tables and plots)"),
    "bench": ("[options]", "speed of the formulations (docs/benchmarks.md)"),
    "compile": ("[--formulations A,B] [--force]", "compile the numerical kernels ahead, so first runs start at once"),
    "sweep": ("FILE.sweep.json --out DIR [options]",
              "parameter sweep on this machine's cores or Dask: summary.parquet and every run (docs/sweeps.md)"),
    "import": ("FILE.xml|FILE.urdf [options]",
               "an MJCF or URDF model as a mechanism file (MuJoCo's compiler; docs/import.md)"),
    "export": ("FILE.mech.json --mjcf OUT.xml", "a mechanism as an MJCF model for MuJoCo (docs/import.md)"),
    "equilibrium": ("FILE.mech.json [--out FILE.mech.json]", "where springs and gravity bring it to rest; stability"),
    "modes": ("FILE.mech.json [--count N] [--out DIR]", "natural frequencies, damping and mode shapes about the rest"),
    "assemble": ("FILE.mech.json [--fix JOINT=VALUE ...] --out FILE", "close a rough drawing's loops (docs/user-guide.md)"),
}
SUBCOMMANDS = tuple(COMMANDS)

#: sub-command -> (module relative to the engine, function(argv) -> exit status)
ELSEWHERE = {
    "bench": (".studies.bench", "main"),
    "compile": (".warmup", "main"),
    "import": (".interop.cli", "cmd_import"),
    "export": (".interop.cli", "cmd_export"),
    "study": (".studies", "main"),
    "equilibrium": (".analysis.cli", "cmd_equilibrium"),
    "modes": (".analysis.cli", "cmd_modes"),
    "assemble": (".analysis.assemble_cli", "cmd_assemble"),
}


def _help_text() -> str:
    rows = [("linkwork", "open the desktop application"),
            ("linkwork FILE.mech.json", "open the application on that file")]
    rows += [(f"linkwork {name} {args}".rstrip(), what) for name, (args, what) in COMMANDS.items()]
    width = max(len(r[0]) for r in rows) + 3
    lines = ["usage: linkwork [FILE.mech.json | COMMAND ...]", "",
             "Linkwork: dynamics of mechanisms, as a desktop application and headless.", ""]
    lines += [f"  {cmd:<{width}}{what}" for cmd, what in rows]
    lines += ["", f"  {'linkwork COMMAND --help':<{width}}the options of a command",
              f"  {'linkwork --version':<{width}}the version",
              f"  {'linkwork --selftest':<{width}}check the installation: window, every formulation, 3-D view, exports",
              "",
              "Exit status: 0 success, 2 refused input (message on stderr), 3 the simulation",
              "failed (message with the simulated time; rows computed before it are kept),",
              "130 interrupted."]
    return "\n".join(lines)


def _run_parser() -> argparse.ArgumentParser:
    from . import config
    from .formulations import REGISTRY

    p = Parser(prog="linkwork run", description="Simulate a mechanism headless and write the results CSV.")
    p.add_argument("file", help="mechanism file (*.mech.json)")
    names = sorted(REGISTRY)  # only what runs: PLANNED names are refused
    p.add_argument("--formulation", metavar="NAME", help=f"{', '.join(names)} [default per mechanism]")
    p.add_argument("--integrator", metavar="NAME",
                   help="rk4, rk45, rk23, dop853, lsoda, radau, bdf; trapezoidal for index3 "
                        "[the file's settings, else the formulation's: rk4, index3 trapezoidal]")
    # dt, t-end, rtol, atol and the integrator default to the mechanism file's own
    # "settings" where it has them (docs/file-format.md, "Mechanism file"), then to these
    p.add_argument("--dt", type=float_arg, default=None, metavar="S",
                   help=f"fixed step, or output interval of adaptive integrators "
                        f"[the file's settings, else {config.DEFAULT_DT}]")
    p.add_argument("--t-end", type=float_arg, default=None, metavar="S",
                   help=f"simulated time [the file's settings, else {config.DEFAULT_T_END:g}]")
    p.add_argument("--rtol", type=float_arg, default=None, metavar="X",
                   help=f"[the file's settings, else {config.DEFAULT_RTOL}]")
    p.add_argument("--atol", type=float_arg, default=None, metavar="X",
                   help=f"[the file's settings, else {config.DEFAULT_ATOL}]")
    penalty = f"{config.DEFAULT_PENALTY:.0e}".replace("e+0", "e")  # 1e9
    p.add_argument("--penalty", type=float_arg, default=None, metavar="X",
                   help=f"index3 penalty factor alpha [{penalty} at --dt {config.DEFAULT_DT:g} or longer, "
                        f"{penalty} ({config.DEFAULT_DT:g} / dt)^2 below: the same alpha dt^2 / 4, "
                        "with exact projections at sub-steps too]")
    p.add_argument("--newton-iters", type=_int, default=config.DEFAULT_NEWTON_ITERS, metavar="N",
                   help="index3 Newton iterations [%(default)s]")
    p.add_argument("--newton-tol", type=float_arg, default=config.DEFAULT_NEWTON_TOL, metavar="X",
                   help="index3 Newton tolerance on |dq| [%(default)s]")
    p.add_argument("--threads", type=_int, metavar="N",
                   help=f"engine threads [all cores; one below {PARALLEL_MIN_BODIES} bodies, dca on an open chain "
                        f"of fewer than {DCA_CHAIN_SERIAL_BELOW} or an open tree of fewer than {DCA_TREE_SERIAL_BELOW}, "
                        f"hdca on an open chain of fewer than {HDCA_CHAIN_SERIAL_BELOW}]")
    p.add_argument("--out", metavar="FILE.csv", help="results file [stdout]")
    p.add_argument("--projection", choices=("on", "off"),
                   help="dense, dca, hdca: project positions and velocities onto the loops at every output "
                        "instant [on with loops]")
    p.add_argument("--baumgarte", nargs=2, type=float_arg, metavar=("ALPHA", "BETA"),
                   help="dca: Baumgarte stabilisation of loop closures [off]")
    p.add_argument("--tangent-hold", type=_int, default=1, metavar="N",
                   help="index3: reuse the Newton tangent for N iterations (modified Newton) [1]")
    p.add_argument("--geometric-stiffness", action="store_true",
                   help="index3: add the geometric-stiffness terms to the tangent")
    p.add_argument("--projections", choices=("exact", "penalised"), default="exact",
                   help="index3: velocity/acceleration projections exact (one more tree matrix pass per "
                        "step) or penalised as in paper 000 (reuse the Newton matrices) [exact]")
    p.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    return p


def _load(path: str):
    from .errors import MechanismError
    from .model import build_model
    from .mechfile import load

    spec = load(path)
    try:
        return build_model(spec)
    except MechanismError:
        raise


def cmd_run(argv: list[str]) -> int:
    args = _run_parser().parse_args(argv)  # before the engine's imports: --help and refusals answer at once
    from .formulations import PLANNED, REGISTRY

    if args.formulation and args.formulation not in REGISTRY:  # before numpy and the model load
        if args.formulation in PLANNED:
            return _refuse(f"formulation {args.formulation!r} is not available in this version of "
                           f"Linkwork (available: {', '.join(REGISTRY)})")
        return _refuse(f"unknown formulation {args.formulation!r} (available: {', '.join(REGISTRY)})")
    from .errors import MechanismError, SettingsError, SimulationError
    from .results import CsvWriter
    from .simulation import Simulation, file_defaults

    try:
        model = _load(args.file)
    except MechanismError as exc:
        return _refuse(f"{args.file}: {exc}")
    given = {k: getattr(args, k) for k in ("integrator", "dt", "t_end", "rtol", "atol")
             if getattr(args, k) is not None}
    settings = file_defaults(model, args.formulation).replace(
        formulation=args.formulation, **given, penalty=args.penalty, newton_iters=args.newton_iters,
        newton_tol=args.newton_tol, threads=args.threads,
        projection=None if args.projection is None else args.projection == "on",
        baumgarte=tuple(args.baumgarte) if args.baumgarte else None,
        tangent_hold=args.tangent_hold, geometric_stiffness=args.geometric_stiffness,
        exact_projections=args.projections == "exact",
    )
    try:
        sim = Simulation(model, settings)
    except SettingsError as exc:
        return _refuse(str(exc))
    verbose = not args.quiet and sys.stderr.isatty()
    for w in model.spec.warnings:
        print(f"linkwork: warning: {w}", file=sys.stderr)
    target = args.out or "standard output"
    try:
        out = open(args.out, "w", encoding="utf-8", newline="\n") if args.out else sys.stdout
    except OSError as exc:
        return _refuse(f"cannot write {target}: {exc.strerror or exc}")
    try:
        writer = CsvWriter(out, sim.columns)  # the header, flushed: a full disk or closed pipe shows here
    except BrokenPipeError as exc:
        _quiet_stdout(exc)
        return EXIT_OK
    except OSError as exc:
        _quiet_stdout(exc)
        if out is not sys.stdout:
            _close_quietly(out)
        return _refuse(f"cannot write {target}: {exc.strerror or exc}")
    status = EXIT_OK
    t_start = time.perf_counter()
    s = sim.settings
    warned = 0

    def new_warnings(stats):
        nonlocal warned
        ws = stats.get("warnings", [])
        for w in ws[warned:]:
            print(("\n" if verbose else "") + f"linkwork: warning: {w}", file=sys.stderr)
        warned = len(ws)

    try:
        for chunk in sim.run():
            writer.write_rows(chunk.rows)
            new_warnings(chunk.stats)
            if verbose:
                t = chunk.stats["t"]
                wall = time.perf_counter() - t_start
                print(f"\r  t = {t:8.3f} / {s.t_end:g} s   {100 * t / s.t_end:5.1f} %   "
                      f"wall {wall:6.1f} s", end="", file=sys.stderr, flush=True)
        form = sim.formulation
        new_warnings(sim.stats)
        if sim.stats.get("singular_visits", 0) > warned:
            print(f"linkwork: warning: near a singular configuration {sim.stats['singular_visits']} times in all",
                  file=sys.stderr)
        if sim.stats.get("unconverged_steps", 0):
            print(f"linkwork: warning: {sim.stats['unconverged_steps']} of {sim.stats.get('steps', 0)} steps ended "
                  "with the constraints not converged", file=sys.stderr)
        ini = form.initial
        if verbose:
            print("", file=sys.stderr)
            st = sim.stats
            print(f"linkwork: {s.formulation}/{s.integrator}: {st.get('rows', 0)} rows, "
                  f"{st.get('rhs_evaluations', 0)} evaluations, {st.get('wall_time', 0):.3g} s wall",
                  file=sys.stderr)
        if ini is not None and ini.correction_max > 0 and not args.quiet:
            print(f"linkwork: {ini.report()}", file=sys.stderr)
        _health_line(sim, args.quiet)
    except SimulationError as exc:
        if verbose:
            print("", file=sys.stderr)
        print(f"linkwork: {exc}", file=sys.stderr)
        _health_line(sim, args.quiet)
        status = EXIT_FAILED
    except KeyboardInterrupt:
        print("\nlinkwork: interrupted; the rows computed so far are written", file=sys.stderr)
        status = EXIT_INTERRUPTED
    except BrokenPipeError as exc:  # the reader took what it wanted (`linkwork run ... | head`)
        _quiet_stdout(exc)
    except OSError as exc:  # the results file: a full disk, a vanished mount, an I/O error
        if verbose:
            print("", file=sys.stderr)
        _quiet_stdout(exc)
        print(f"linkwork: writing {target} failed at t = {sim.stats.get('t', 0.0):.6g} s: "
              f"{exc.strerror or exc}; the rows written before it are complete", file=sys.stderr)
        status = EXIT_FAILED
    finally:
        if out is sys.stdout:
            try:
                out.flush()
            except OSError as exc:
                _quiet_stdout(exc)
        elif not _close_quietly(out) and status == EXIT_OK:
            print(f"linkwork: writing {target} failed at the end of the run", file=sys.stderr)
            status = EXIT_FAILED
        if status == EXIT_FAILED and args.out and writer.complete is not None:
            try:  # a row torn by the failed write goes; the complete ones stay
                os.truncate(args.out, writer.complete)
            except OSError:
                pass
    return status


def _close_quietly(stream) -> bool:
    """Close a results file; False if its last buffered rows could not be written (the
    file is closed all the same)."""
    try:
        stream.close()
        return True
    except OSError:
        return False


def _quiet_stdout(exc: OSError) -> None:
    """After a write to standard output failed (a pipe closed early): point it at the
    null device, so the interpreter's own flush at exit adds no second error."""
    if isinstance(exc, BrokenPipeError) or sys.stdout.closed:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass


def _health_line(sim, quiet: bool) -> None:
    """The run's health on one stderr line (also when stderr is not a terminal; never on
    stdout, which carries the CSV): worst position violation, energy drift, closest
    approach to a singular configuration, retries (engine/monitor.py)."""
    if quiet or sim.monitor is None:
        return
    from .monitor import summary

    print(f"linkwork: health: {summary(sim.stats)}", file=sys.stderr)


def _info_text(model, topo) -> str:
    d = topo.as_dict(model)
    lines = [
        f"mechanism      {model.name or '(unnamed)'}",
        f"bodies         {d['bodies']}",
        f"joints         {d['joints']}  ({', '.join(f'{n} {t}' for t, n in d['joint_types'].items())})",
        f"loops          {d['loops']}" + (f"  (cut joints: {', '.join(d['cut_joints'])})" if d['loops'] else ""),
    ]
    for k, lb in enumerate(d["loop_bodies"]):
        lines.append(f"  loop {k + 1}       {' - '.join(lb)}")
    if d["couplings"]:
        lines.append(f"couplings      {len(d['couplings'])} (one constraint equation each)")
        for c in d["couplings"]:
            lines.append(f"  {c['type']} {c['name']:<8} {c['driver']} -> {c['driven']}, ratio {c['ratio']:g} "
                         f"(q_{c['driver']} = {c['ratio']:g} q_{c['driven']})")
    lines += ["drivers        " + ", ".join("{name} on {joint}".format(**x) for x in d["drivers"])] * bool(d["drivers"])
    lines += [
        f"coordinates    {d['absolute_coordinates']} absolute (7 per body: position + Euler parameters)",
        f"equations      {d['constraint_equations']} ({d['joint_equations']} joint + "
        + (f"{d['coupling_equations']} gear + " if d["coupling_equations"] else "")
        + (f"{d['driver_equations']} driver + " if d["driver_equations"] else "")
        + f"{d['normalisation_equations']} normalisation)",
        f"DOF            {d['dof']}",
        f"redundant      {d['redundant_constraints']} constraint equations",
        f"tree coords    nq = {d['tree_coordinates']['nq']}, nv = {d['tree_coordinates']['nv']}; "
        f"loop closure: {d['loop_closure']['equations']} equations, rank {d['loop_closure']['rank']}",
        f"assembly tree  {d['assembly_tree']['nodes']} nodes, {d['assembly_tree']['levels']} levels, "
        f"at most {d['assembly_tree']['max_handles']} handles per node",
    ]
    for lvl, merges in enumerate(d["assembly_tree"]["merges"]):
        desc = "; ".join(
            f"{m['node']} = {m['left']} + {'ground' if m['right'] < 0 else m['right']}"
            + (f" [{', '.join(m['joints'])}]" if m["joints"] else "") for m in merges[:6])
        more = f"; ... ({len(merges)} merges)" if len(merges) > 6 else ""
        lines.append(f"  level {lvl}      {desc}{more}")
    ser = d["serial_assembly"]
    if ser["tips_first"]:
        lines.append(f"one thread     dca and hdca assemble tips first: {ser['levels']} levels of one merge, "
                     f"{ser['region_bodies']} of {d['bodies']} bodies by the articulated-body recursion "
                     f"(dca {ser['dca_region_bodies']}, with the joints to ground), "
                     f"{ser['operations']} operations in the matrix pass against {ser['balanced_operations']}")
    i3 = ser["index3"]
    if i3["tips_first"]:
        lines.append(f"one thread     index3 assembles tips first too: {i3['operations']} operations in the "
                     f"matrix pass against {i3['balanced_operations']} (7 x 7 blocks, merge by merge)")
    two = ser["two_threads"]
    if two["two_parts"]:
        lines.append(f"two threads    dca and hdca assemble two parts in parallel, one handle per subassembly, "
                     f"{two['region_bodies']} bodies by the recursion: {two['operations']} matrix-pass operations "
                     f"on the busier thread against {two['balanced_operations']}")
    for w in model.spec.warnings:
        lines.append(f"warning        {w}")
    return "\n".join(lines)


def cmd_info(argv: list[str]) -> int:
    p = Parser(prog="linkwork info",
                description="Topology, loops, coordinates, DOF and redundant constraints of a mechanism.")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    args = p.parse_args(argv)
    from .errors import MechanismError
    from .topology import analyze

    try:
        model = _load(args.file)
    except MechanismError as exc:
        return _refuse(f"{args.file}: {exc}")
    topo = analyze(model)
    emb = _embedding_info(model)
    from .analysis.mobility import mobility
    mob = mobility(model)
    if args.json:
        d = topo.as_dict(model) | {"mobility": mob.as_dict()}
        d["warnings"] = list(model.spec.warnings)
        d["embedding"] = emb
        d["threads"] = {name: {"threads": p.threads, "layout": p.layout, "why": p.why}
                        for name, p in _thread_plans(model).items()}
        print(json.dumps(d, indent=2))
    else:
        print(_info_text(model, topo) + "\n" + "\n".join(mob.lines()))
        for k, (name, plan) in enumerate(_thread_plans(model).items()):
            print(f"{'threads' if k == 0 else '':<15}{name:<10} {plan.describe()}")
        for k, a in enumerate(emb.get("aggregated_bodies", [])):
            print(f"aggregated {k + 1:<3d}  {' + '.join(a['bodies'])} on {a['parent']}: independent "
                  f"{', '.join(a['independent']) or '(none)'}; sigma_min of X's dependent block "
                  f"{a['sigma_min_dependent']:.3g}")
        if "error" in emb:
            print(f"aggregated     {emb['error']}")
    return EXIT_OK


def _thread_plans(model) -> dict:
    """Each formulation that runs ``model``: the thread plan of a run left automatic
    (engine/threads.py)."""
    from .formulations import REGISTRY
    from .threads import plan

    out = {}
    for name in REGISTRY:
        cls = REGISTRY[name]
        if cls.supports(model)[0]:
            out[name] = plan(model, cls, None)
    return out


def _embedding_info(model) -> dict:
    """Formulation ``embedding``'s aggregated bodies at t = 0 (paper 003 section 4.2): bodies,
    parent, embedded cut joints, independent velocities and the smallest singular value of
    the dependent block Y1 of its rows (whitened, over the rows' largest) -- the block whose
    inverse X carries (eq. 60)."""
    if model.ncut == 0:
        return {"aggregated_bodies": []}
    from .errors import SimulationError
    from .formulations.embedding import aggregate_report

    try:
        return {"aggregated_bodies": aggregate_report(model)}
    except SimulationError as exc:
        return {"aggregated_bodies": [], "error": f"no embedding at t = 0: {exc}"}


def cmd_examples(argv: list[str]) -> int:
    from .paths import examples_dir
    from .mechfile import load

    Parser(prog="linkwork examples", description="List the bundled example mechanisms.").parse_args(argv)
    d = examples_dir()
    for f in sorted(d.glob("*.mech.json")):
        spec = load(f)
        print(f"{f}\n    {spec.name}: {spec.description}")
    return EXIT_OK


def _sweep_parser() -> argparse.ArgumentParser:
    p = Parser(prog="linkwork sweep",
                description="Run a parameter sweep (*.sweep.json, docs/sweeps.md) on this machine's cores, on a "
                            "Dask LocalCluster (--dask) or on the Dask scheduler given.  Writes DIR/summary.parquet (one row "
                            "per case, as cases finish) and DIR/runs/ (each case's results); running the same "
                            "command again resumes, computing only the cases not complete.")
    p.add_argument("file", help="sweep file (*.sweep.json)")
    p.add_argument("--out", required=True, metavar="DIR", help="results directory (created; resumed if present)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler (tcp://HOST:PORT) [run the cases on this machine]")
    p.add_argument("--dask", action="store_true",
                   help="start a Dask LocalCluster (and its dashboard) for the cases instead of running them "
                        "from this process (a few seconds more to start)")
    p.add_argument("--workers", type=_int, metavar="N",
                   help="cases run at once on this machine [cores / threads per worker]")
    p.add_argument("--threads-per-worker", type=_int, default=1, metavar="N",
                   help="numba threads for each worker's case (NUMBA_NUM_THREADS in the worker "
                        "environment; each worker runs one case at a time) [%(default)s]")
    p.add_argument("--case-timeout", type=_seconds_or_none, default=argparse.SUPPRESS, metavar="SECONDS",
                   help="stop a case after this many seconds of wall time (numba's compiling not counted) and "
                        "record it failed; 'none': no limit [the sweep file's case_timeout, else none]")
    p.add_argument("--inject-fault", action="append", type=_injection, default=[], metavar="CASE:KIND",
                   help="make case CASE stall ('stall'), kill its process ('kill') or its Dask worker "
                        "('kill-worker': with --dask or --scheduler) halfway through its run, to check how a deployment handles faults "
                        "(docs/sweeps.md, 'Faults'); repeatable")
    p.add_argument("--restart", action="store_true", help="compute every case again, ignoring DIR's results")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary on stderr")
    return p


def _seconds_or_none(text: str) -> float | None:
    if text.strip().lower() == "none":
        return None
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds (or 'none'): {text!r}") from None
    if not (v > 0 and v < float("inf")):
        raise argparse.ArgumentTypeError(f"must be > 0 seconds (or 'none'): {text!r}")
    return v


#: the faults ``--inject-fault`` knows (engine/sweep/runner.py ``INJECTIONS``; listed here so
#: that parsing the options does not import the sweep package)
_INJECTIONS = ("stall", "kill", "kill-worker")


def _injection(text: str) -> tuple[int, str]:
    case, _, kind = text.partition(":")
    try:
        index = int(case)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CASE:KIND with CASE a case index: {text!r}") from None
    if kind not in _INJECTIONS:
        raise argparse.ArgumentTypeError(f"unknown fault {kind!r} in {text!r} (one of: {', '.join(_INJECTIONS)})")
    return index, kind


def _duration(s: float | None) -> str:
    if s is None:
        return "--:--"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def cmd_sweep(argv: list[str]) -> int:
    args = _sweep_parser().parse_args(argv)  # before Dask's import: --help answers at once
    if args.workers is not None and args.workers < 1:
        return _refuse(f"--workers must be >= 1 (got {args.workers})")
    if args.threads_per_worker < 1:
        return _refuse(f"--threads-per-worker must be >= 1 (got {args.threads_per_worker})")
    try:
        from . import sweep
    except ImportError as exc:  # pragma: no cover - the extra is missing
        return _refuse(f"linkwork sweep needs the sweep extra: pip install 'linkwork[sweep]' ({exc})")
    try:
        if args.dask or args.scheduler:
            import distributed  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        return _refuse(f"linkwork sweep needs the sweep extra: pip install 'linkwork[sweep]' ({exc.name} is missing)")
    try:
        spec = sweep.load_sweep(args.file)
    except sweep.SweepError as exc:
        return _refuse(f"{args.file}: {exc}")
    inject = dict(args.inject_fault)
    bad = sorted(i for i in inject if not 0 <= i < len(spec.cases))
    if bad:
        return _refuse(f"--inject-fault: no case {bad[0]} (the sweep has cases 0..{len(spec.cases) - 1})")
    if "kill-worker" in inject.values() and not (args.dask or args.scheduler):
        return _refuse("--inject-fault ...:kill-worker kills a Dask worker: add --dask (or --scheduler)")
    if args.dask and args.scheduler:
        return _refuse("--dask starts a LocalCluster; --scheduler uses a running one: give one of them")
    case_timeout = getattr(args, "case_timeout", spec.case_timeout)  # the option, else the file
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return _refuse(f"--out {out}: not a directory")
    verbose = not args.quiet
    tty = sys.stderr.isatty()
    t0 = time.perf_counter()

    def on_start(executor, cases, to_compute):
        if not verbose:
            return
        refused = [pc for pc in cases if pc.refused]
        for pc in refused:
            print(f"linkwork: refused {pc.refused}", file=sys.stderr)
        done_before = len(cases) - len(refused) - to_compute
        print(f"linkwork: sweep {spec.name or args.file}: {len(cases)} cases, {len(refused)} refused, "
              f"{done_before} complete from an earlier run, {to_compute} to compute", file=sys.stderr)
        if executor is not None and to_compute:
            print(f"linkwork: {executor.describe()}", file=sys.stderr)

    last_line = [0.0, -1]

    def progress(p):
        if not verbose:
            return
        now = time.perf_counter()
        finished = p.done == p.to_compute
        line = (f"{p.done}/{p.to_compute} done, {p.failed} failed, {p.running} running, "
                f"ETA {_duration(p.eta)}")
        if tty:
            width = 24
            fill = int(width * p.done / max(p.to_compute, 1))
            print(f"\r  [{'#' * fill}{'.' * (width - fill)}] {line}   ", end="\n" if finished else "",
                  file=sys.stderr, flush=True)
        elif finished or (p.done != last_line[1] and now - last_line[0] >= 5.0):
            last_line[:] = [now, p.done]
            print(f"linkwork: {line}", file=sys.stderr, flush=True)

    client = None
    try:
        if args.scheduler:
            from distributed import Client

            try:
                client = Client(args.scheduler, timeout="10s")
            except (OSError, TimeoutError, ValueError) as exc:
                return _refuse(f"cannot connect to the Dask scheduler at {args.scheduler}: {exc}")
        df = sweep.run_sweep(spec, client=client, out=out, cluster="dask" if args.dask else "local",
                             workers=args.workers,
                             threads_per_worker=args.threads_per_worker, resume=not args.restart,
                             progress=progress, on_start=on_start, case_timeout=case_timeout, inject=inject)
    except KeyboardInterrupt:
        print(f"\nlinkwork: interrupted; finished cases are in {out / 'summary.parquet'} "
              "(the same command resumes)", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if client is not None:
            client.close()
    counts = df["status"].value_counts().to_dict()
    if verbose:
        print(f"linkwork: {len(df)} cases: " + ", ".join(f"{counts.get(k, 0)} {k}" for k in sweep.STATUSES)
              + f"; {time.perf_counter() - t0:.1f} s wall; {out / 'summary.parquet'}", file=sys.stderr)
        for _, row in df[df["status"].isin(("failed", "error"))].iterrows():
            print(f"linkwork: case {row['case']} {row['status']}: {row['message']}", file=sys.stderr)
    return EXIT_OK if counts.get("ok", 0) == len(df) else EXIT_FAILED


#: the front ends a launcher may provide: the window, ``report``, ``--selftest``
FRONT_ENDS = ("gui", "report", "selftest")


def _front_end(front_ends, name: str, argv: list[str]) -> int:
    """Run front end ``name`` (one of :data:`FRONT_ENDS`) given by the launcher."""
    fn = (front_ends or {}).get(name)
    if fn is None:
        what = {"gui": "the desktop application", "report": "linkwork report",
                "selftest": "linkwork --selftest"}[name]
        return _refuse(f"{what} is started by the 'linkwork' command (python -m linkwork), "
                       "not by the engine's command line")
    return fn(argv)


def cmd_gui(argv: list[str], front_ends=None) -> int:
    if argv and not argv[0].startswith("-") and not Path(argv[0]).exists():
        return _refuse(f"cannot open {argv[0]}: no such file")
    return _front_end(front_ends, "gui", argv)


def _looks_like_file(arg: str) -> bool:
    return arg.endswith(".json") or os.sep in arg or Path(arg).exists()


def _dispatch(argv: list[str], front_ends=None) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(_help_text())
        return EXIT_OK
    if argv and argv[0] == "--selftest":  # the whole product end to end (app/selftest.py)
        return _front_end(front_ends, "selftest", argv[1:])
    if argv and argv[0] == "--version":
        from . import __version__

        print(f"linkwork {__version__}")
        return EXIT_OK
    cmd = argv[0] if argv else None
    if cmd == "run":
        return cmd_run(argv[1:])
    if cmd == "info":
        return cmd_info(argv[1:])
    if cmd == "examples":
        return cmd_examples(argv[1:])
    if cmd == "sweep":
        return cmd_sweep(argv[1:])
    if cmd in ELSEWHERE:  # commands kept in their own modules, imported on use
        import importlib

        module, function = ELSEWHERE[cmd]
        return getattr(importlib.import_module(module, __package__), function)(argv[1:])
    if cmd == "report":  # the application's exporters, on Qt's offscreen platform
        return _front_end(front_ends, "report", argv[1:])
    if cmd is not None and not cmd.startswith("-") and not _looks_like_file(cmd):
        return _refuse(f"unknown command {cmd!r} (commands: {', '.join(COMMANDS)}; "
                       "or a FILE.mech.json to open in the application; linkwork --help)")
    return cmd_gui(argv, front_ends)


def _quiet_broken_pipe() -> int:
    """The reader closed our stdout (``| head -1``): stop quietly.  Python would
    print a traceback when it flushes stdout at exit, so point stdout at
    /dev/null first (the recipe of Python's signal documentation)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
        pass
    return EXIT_OK


def main(argv: list[str] | None = None, front_ends: dict | None = None) -> int:
    """The command line; ``front_ends``: {name in :data:`FRONT_ENDS`: function(argv) -> status},
    given by the launcher (``linkwork/cli.py``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _dispatch(argv, front_ends)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_REFUSED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
