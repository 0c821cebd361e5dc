"""``linkwork study NAME``: the papers' numerical studies, reproducible by one command.

:data:`STUDIES` names every study and its function ``(out, stamp, quick, repeat) ->
result``; the result's ``_report`` lines become ``<out>/<name>.md`` and the rest
``<out>/<name>/results.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

from .dca_drift import dca_drift
from .embedding import embedding
from .hdca_vs_dca import hdca_vs_dca
from .index3 import index3
from .rcr import rcr
from .report import jsonable, log
from .timing import cpu_name

STUDIES = {
    "hdca-vs-dca": (hdca_vs_dca, "paper 001 section 3: HDCA vs DCA on cases 1-3"),
    "dca-drift": (dca_drift, "DCA position drift without stabilisation, log axes"),
    "index3": (index3, "paper 000 sections 4.2-4.4, 5.2: the index-3 formulation's cases and timing"),
    "rcr": (rcr, "paper 002 sections 4.1-4.3, Fig. 11: recursive coordinate reduction"),
    "embedding": (embedding, "paper 003 section 7.3: cost of constraint embedding, growing tree and growing loop"),
}


#: where a study writes when no ``--out`` is given (relative to the current folder)
DEFAULT_OUT = Path("linkwork-studies")


def main(argv: list[str] | None = None) -> int:
    import numba

    p = argparse.ArgumentParser(prog="linkwork study", description=__doc__.split("\n\n")[0])
    p.add_argument("name", choices=sorted(STUDIES) + ["list"], help="the study, or 'list'")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="output folder [%(default)s/ in the current folder; --out docs/studies regenerates the "
                        "committed studies]")
    p.add_argument("--quick", action="store_true", help="2 s and two tolerances: a smoke test, not the study")
    p.add_argument("--repeat", type=int, default=3, help="timed repetitions per run, best kept [%(default)s]")
    args = p.parse_args(argv)
    if args.name == "list":
        for name, (_, what) in STUDIES.items():
            print(f"{name:14s} {what}")
        return 0
    if args.repeat < 1:
        print("linkwork study: --repeat must be at least 1", file=sys.stderr)
        return 2
    numba.set_num_threads(1)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    fn, _ = STUDIES[args.name]
    t0 = time.perf_counter()
    stamp = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "cpu": cpu_name()}
    result = fn(out, stamp, quick=args.quick, repeat=args.repeat)
    folder = out / args.name
    folder.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.md").write_text("\n".join(result["_report"]), encoding="utf-8")
    (folder / "results.json").write_text(json.dumps(jsonable(result), indent=1), encoding="utf-8")
    log(f"linkwork study {args.name}: {time.perf_counter() - t0:.0f} s; report {out / (args.name + '.md')}")
    return 0
