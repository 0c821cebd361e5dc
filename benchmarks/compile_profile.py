"""Where a cold compile's time goes, and which kernels compile more than once.

Runs ``linkwork compile``'s warm-up (:func:`linkwork.engine.warmup.warm`: two output
steps of every bundled example at its defaults) for the formulations named, one after
another in this process, on an empty numba cache of its own, and prints

* each formulation's wall time;
* the kernels by *exclusive* compile time (numba's ``numba:compile`` events, less the
  kernels compiled inside them), with their inclusive time and how many times each was
  compiled;
* every kernel typed for more than one tuple of argument types, with the first
  argument that differs: a read-only array against a writeable one, or a literal
  against an int64, compiles a kernel again (``tests/engine/test_numba_cache.py``);
* with ``--llvm``, each compiled kernel's LLVM time (numba's ``llvm_lock`` timer,
  inclusive of the kernels compiled inside it) and the size of its final module, the
  callees it links in included: where a kernel's time goes to optimising and emitting
  its callees' code again.

    python benchmarks/compile_profile.py dca            # one formulation
    python benchmarks/compile_profile.py dense,dca,hdca,index3,rcr,embedding --top 40

The formulations share kernels: the first to call one compiles it, so a
formulation's figure depends on those before it.  Takes minutes (a cold compile).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("formulations", help="comma-separated, compiled in this order")
    p.add_argument("--top", type=int, default=25, help="kernels listed (25)")
    p.add_argument("--llvm", action="store_true", help="also each kernel's LLVM time and final module size")
    a = p.parse_args(argv)
    cache = tempfile.mkdtemp(prefix="linkwork-compile-profile-")
    os.environ["NUMBA_CACHE_DIR"] = cache  # before the engine (and numba) are imported
    try:
        from numba.core import event
        from numba.core.registry import CPUDispatcher

        from linkwork.engine.warmup import examples, warm

        rec = event.RecordingListener()
        event.register("numba:compile", rec)
        for name in a.formulations.split(","):
            t0 = time.perf_counter()
            warm(name, examples())
            print(f"{name:10s} {time.perf_counter() - t0:7.1f} s", flush=True)

        stack, incl, excl, count = [], collections.Counter(), collections.Counter(), collections.Counter()
        for ts, ev in rec.buffer:
            f = ev.data["dispatcher"].py_func
            key = f"{f.__module__.rsplit('.', 1)[-1]}.{f.__qualname__.replace('<locals>.', '')}"
            if ev.is_start:
                stack.append([key, ts, 0.0])
                continue
            key, t, inner = stack.pop()
            incl[key] += ts - t
            excl[key] += ts - t - inner
            count[key] += 1
            if stack:
                stack[-1][2] += ts - t
        print(f"\n{'exclusive s':>12} {'inclusive s':>12} {'times':>6}  kernel")
        for key, s in excl.most_common(a.top):
            print(f"{s:12.1f} {incl[key]:12.1f} {count[key]:6d}  {key}")

        print("\nkernels typed more than once (a different workspace type is by design):")
        seen = set()
        for mod in list(sys.modules.values()):
            if not getattr(mod, "__name__", "").startswith("linkwork.engine"):
                continue
            for name, f in vars(mod).items():
                if not isinstance(f, CPUDispatcher) or id(f) in seen or len(f.signatures) < 2:
                    continue
                seen.add(id(f))
                first = f.signatures[0]
                for other in f.signatures[1:]:
                    i = next(i for i in range(len(first)) if first[i] != other[i])
                    sa, sb = str(first[i]), str(other[i])
                    c = next((c for c in range(min(len(sa), len(sb))) if sa[c] != sb[c]), 0)
                    print(f"  {mod.__name__}.{name}, argument {i}: ...{sa[max(0, c - 60):c + 40]}"
                          f"  /  ...{sb[max(0, c - 60):c + 40]}")
        if a.llvm:
            _llvm_table(CPUDispatcher, a.top)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


def _llvm_table(CPUDispatcher, top: int) -> None:
    """Each compiled overload's ``llvm_lock`` seconds (inclusive) and final module: its
    defined functions and the size of its LLVM IR."""
    rows, seen = [], set()
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith("linkwork.engine"):
            continue
        for name, f in vars(mod).items():
            if not isinstance(f, CPUDispatcher) or id(f) in seen:
                continue
            seen.add(id(f))
            for cres in f.overloads.values():
                timers = (cres.metadata or {}).get("timers", {})
                final = getattr(cres.library, "_final_module", None)
                nfun = -1 if final is None else sum(1 for fn in final.functions if not fn.is_declaration)
                size = -1 if final is None else len(str(final))
                rows.append((timers.get("llvm_lock", 0.0), nfun, size, f"{mod.__name__.rsplit('.', 1)[-1]}.{name}"))
    rows.sort(reverse=True)
    print(f"\n{'LLVM s':>8} {'functions':>9} {'module kB':>10}  kernel (LLVM time inclusive of its callees' compiles)")
    for llvm, nfun, size, key in rows[:top]:
        print(f"{llvm:8.1f} {nfun:9d} {size / 1e3:10.0f}  {key}")


if __name__ == "__main__":
    sys.exit(main())
