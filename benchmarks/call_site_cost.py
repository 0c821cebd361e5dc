"""What one call of a kernel costs to compile when its argument is a tuple of arrays,
against the same arrays in a numba ``structref`` (one pointer).

numba passes a tuple (a namedtuple, a tuple inside a tuple) to a kernel it calls member
by member, and an array as its seven-odd fields, so a call with a layout of N arrays
is N x (5 + 2 ndim) LLVM arguments, typed, lowered and optimised at every call site.
This script writes a module with a callee that reads a tenth of N arrays and a caller
that calls it K times, and times numba's compile of each (a fresh process per case, no
cache).  The engine's kernels take ``_nrt=False`` (no reference counts), where a
structref cannot be read at all: the row ``structref, _nrt=False`` says so.

    python benchmarks/call_site_cost.py [--arrays 25,50] [--calls 1,10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

PROBE = """
import time
import numpy as np
import probe_module as m
arrs = [np.arange(20.0) for _ in range({n})]
b = m.make(arrs)
t0 = time.perf_counter()
try:
    m.callee(b, 0)
    t1 = time.perf_counter()
    m.caller(b)
    t2 = time.perf_counter()
    for _ in range(2000):
        m.caller(b)
    t3 = time.perf_counter()
    print(f"{{t1 - t0:.2f}} {{t2 - t1:.2f}} {{1e6 * (t3 - t2) / 2000:.2f}}")
except Exception as exc:
    print("refused:", type(exc).__name__)
"""


def module_source(n: int, k: int, kind: str) -> str:
    """The callee over ``n`` arrays held as ``kind`` (tuple or struct) and a caller with ``k`` calls."""
    names = [f"a{i}" for i in range(n)]
    flags = ", _nrt=False" if kind == "struct-nonrt" else ""
    lines = ["import numpy as np", "from numba import njit, types", "from numba.experimental import structref", ""]
    if kind.startswith("struct"):
        lines += textwrap.dedent(f"""
            @structref.register
            class BagType(types.StructRef):
                def preprocess_fields(self, fields):
                    return tuple((name, types.unliteral(t)) for name, t in fields)

            class Bag(structref.StructRefProxy):
                pass

            structref.define_proxy(Bag, BagType, {names!r})

            def make(arrs):
                return Bag(*arrs)
            """).splitlines()
        read = "b.a{i}"
    else:
        lines += ["def make(arrs):", "    return tuple(arrs)"]
        read = "b[{i}]"
    lines += ["", f"@njit({flags.lstrip(', ')})", "def callee(b, k):", "    s = 0.0"]
    lines += [f"    s += {read.format(i=i)}[k]" for i in range(0, n, max(1, n // 10))]
    lines += ["    return s", "", f"@njit({flags.lstrip(', ')})", "def caller(b):", "    s = 0.0"]
    lines += [f"    s += callee(b, {j})" for j in range(k)]
    lines += ["    return s", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arrays", default="25,50")
    p.add_argument("--calls", default="1,10")
    a = p.parse_args(argv)
    print("| arrays | call sites | held as | callee compile [s] | caller compile [s] | one call from Python [us] |")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in a.arrays.split(",")):
        for k in (int(x) for x in a.calls.split(",")):
            for kind in ("tuple", "struct", "struct-nonrt"):
                with tempfile.TemporaryDirectory() as d:
                    Path(d, "probe_module.py").write_text(module_source(n, k, kind))
                    out = subprocess.run([sys.executable, "-c", PROBE.format(n=n)], cwd=d, capture_output=True,
                                         text=True, env={"PYTHONPATH": d, "NUMBA_CACHE_DIR": d, "PATH": ""}).stdout
                cells = out.split() if out and not out.startswith("refused") else [out.strip() or "error", "", ""]
                label = {"tuple": "tuple", "struct": "structref", "struct-nonrt": "structref, _nrt=False"}[kind]
                print(f"| {n} | {k} | {label} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
