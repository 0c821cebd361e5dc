"""A long run in the desktop application's session: memory, its file, Export CSV, a kill.

Runs a mechanism (default: the ``chain-128-spherical`` example, dt = 1 ms) through
the session API the application's run worker uses (``Session.prepare_run``,
``simulation_items``, ``RunRecord.append``; no window) in a child process, and
reports

- the child's peak resident memory (``ru_maxrss``) after the run and after
  Export › CSV, and the run's overview size;
- whether the run's file is complete (every chunk's checksum verified);
- whether Export › CSV equals ``linkwork run``'s CSV for the same settings byte
  for byte (``cmp``);
- a second child killed with SIGKILL at about half of the rows, and what a new
  session over the same folder lists: its status, its rows, and whether they equal
  the complete run's first rows bit for bit.

    NUMBA_CACHE_DIR=/tmp/nbc_shared .venv/bin/python benchmarks/run_memory.py \\
        --t-end 100 --work /tmp/run-memory [--reference existing.csv]

The table goes to stdout and to ``benchmarks/results/run-memory.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kB


def child(args) -> None:
    """Run the mechanism in this process, as the application's worker does."""
    from linkwork.app.session import Session
    from linkwork.app.session.export import cli_command, export_csv
    from linkwork.app.session.runstore import RunStore
    from linkwork.app.session.simulate import RunControl, simulation_items
    from linkwork.engine.simulation import ResultChunk

    s = Session(run_store=RunStore(args.folder, cap_bytes=2**62))
    s.document.open(args.mech)
    run = s.prepare_run(overrides={"dt": args.dt, "t_end": args.t_end})
    print(json.dumps({"path": str(run.path), "expected": run.expected_rows,
                      "columns": len(run.columns)}), flush=True)
    t0 = time.perf_counter()
    for item in simulation_items(run.model, run.settings, RunControl()):
        if isinstance(item, ResultChunk):
            run.append(item.rows, item.stats)
    run.set_status("finished")
    out = {"rows": run.n_rows, "run_s": time.perf_counter() - t0, "rss_run_mb": _maxrss_mb(),
           "overview_mb": run.overview.nbytes / 2**20,
           "cli": cli_command(run, args.mech, args.csv), "label": run.label}
    if args.csv:
        t0 = time.perf_counter()
        export_csv(run, args.csv)
        out["export_s"] = time.perf_counter() - t0
        out["rss_export_mb"] = _maxrss_mb()
    print(json.dumps(out), flush=True)


def _spawn(args, folder: Path, csv: str = "") -> subprocess.Popen:
    cmd = [sys.executable, __file__, "--child", "--mech", args.mech, "--dt", repr(args.dt),
           "--t-end", repr(args.t_end), "--folder", str(folder)]
    if csv:
        cmd += ["--csv", csv]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def _indexed_rows(folder: Path) -> int:
    """Rows in complete chunks so far, from the last whole record of rows.idx."""
    try:
        data = (folder / "rows.idx").read_bytes()
    except FileNotFoundError:
        return 0
    n = len(data) // 16
    return struct.unpack_from("<Q", data, (n - 1) * 16)[0] if n else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mech", default=str(ROOT / "resources/examples/chain-128-spherical.mech.json"))
    ap.add_argument("--dt", type=float, default=0.001)
    ap.add_argument("--t-end", type=float, default=100.0)
    ap.add_argument("--folder", default="")
    ap.add_argument("--csv", default="")
    ap.add_argument("--work", default="/tmp/run-memory", help="folder for the runs and the CSV files")
    ap.add_argument("--reference", default="", help="an existing `linkwork run` CSV of the same settings")
    ap.add_argument("--kill-at", type=float, default=0.5, help="fraction of the rows at which to kill")
    ap.add_argument("--no-kill", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    import numpy as np

    from linkwork.app.session import Session
    from linkwork.app.session.runstore import RunStore, read_rows

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    full_dir, kill_dir = work / "full", work / "killed"
    app_csv = str(work / "app.csv")
    p = _spawn(args, full_dir, app_csv)
    start = json.loads(p.stdout.readline())
    res = json.loads(p.stdout.readline())
    p.wait()
    f = read_rows(start["path"], verify="all")
    ref = args.reference
    cli_s = None
    if not ref:
        ref = str(work / "cli.csv")
        cmd = [str(ROOT / ".venv/bin/linkwork")] + res["cli"].split()[1:-1] + [ref]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        cli_s = time.perf_counter() - t0
    same = subprocess.run(["cmp", app_csv, ref]).returncode == 0

    rows_table = [
        ("mechanism", Path(args.mech).name),
        ("settings", f"{res['label']}, t_end = {args.t_end:g} s"),
        ("rows × columns", f"{res['rows']:,} × {start['columns']:,} (expected {start['expected']:,})"),
        ("run file", f"{(Path(start['path']) / 'rows.f64').stat().st_size / 2**30:.2f} GiB, "
                     f"{f.chunks} chunks, all checksums verified: {f.intact and f.n_rows == res['rows']}"),
        ("run wall time", f"{res['run_s']:.0f} s"),
        ("peak RSS after the run", f"{res['rss_run_mb']:.0f} MiB (overview {res['overview_mb']:.0f} MiB)"),
        ("Export › CSV", f"{res['export_s']:.0f} s, {Path(app_csv).stat().st_size / 2**30:.2f} GiB"),
        ("peak RSS after Export › CSV", f"{res['rss_export_mb']:.0f} MiB"),
        ("`linkwork run` CSV", (f"{cli_s:.0f} s" if cli_s is not None else f"given: {ref}")),
        ("`cmp` app CSV vs `linkwork run` CSV", "identical" if same else "DIFFERENT"),
    ]

    if not args.no_kill:
        k = _spawn(args, kill_dir)
        kstart = json.loads(k.stdout.readline())
        target = int(args.kill_at * kstart["expected"])
        kp = Path(kstart["path"])
        while _indexed_rows(kp) < target and k.poll() is None:
            time.sleep(0.2)
        os.kill(k.pid, signal.SIGKILL)
        k.wait()
        at_kill = _indexed_rows(kp)
        size_at_kill = (kp / "rows.f64").stat().st_size
        t0 = time.perf_counter()
        again = Session(run_store=RunStore(kill_dir, cap_bytes=2**62))
        listed = [r for r in again.history.runs if r.path == kp]
        restart_s = time.perf_counter() - t0
        r = listed[0] if listed else None
        equal = False
        if r is not None:
            full = read_rows(start["path"])
            equal = all(np.array_equal(a.view(np.uint64), b.view(np.uint64))
                        for a, b in zip(r.blocks(), full.blocks(r.n_rows)))
        rows_table += [
            ("killed run (SIGKILL)", f"at {at_kill:,} indexed rows of {kstart['expected']:,}; "
                                     f"rows.f64 {size_at_kill / 2**30:.2f} GiB"),
            ("after a restart", "not listed" if r is None else
             f"listed, status `{r.status}`, {r.n_rows:,} rows, t = {r.t_last:g} s "
             f"(new session in {restart_s:.1f} s)"),
            ("recovered rows = complete run's first rows, bit for bit", str(equal)),
        ]

    text = ["| measure | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows_table]
    cmd = " ".join(["NUMBA_CACHE_DIR=/tmp/nbc_shared .venv/bin/python benchmarks/run_memory.py"]
                   + sys.argv[1:])
    md = ["# A long run in the application's session: memory, file, Export CSV, kill", "",
          f"`{cmd}`", "", f"{os.cpu_count()} cores, shared with other work while it ran.", ""] + text + [""]
    print("\n".join(text))
    out = ROOT / "benchmarks/results/run-memory.md"
    out.write_text("\n".join(md), encoding="utf-8")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
