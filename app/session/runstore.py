"""Runs on disk, bounded in memory (no Qt).

Every run streams its rows to a folder of its own while it runs, so a run of any
length costs the application a fixed amount of memory (:data:`RUN_MEMORY_BUDGET`)
and a run killed half-way is still there, up to its last complete chunk, when the
application starts again.

A run folder holds three files::

    run.json    what ran: format, version, owner process, created, label, status,
                error, stats, the settings and the mechanism (as File > Save writes it);
                rewritten atomically when the status changes
    rows.f64    the rows, append-only: a header, then float64 rows back to back
    rows.idx    one 16-byte record per chunk appended to rows.f64

``rows.f64`` starts with an 8-byte magic ``LWROWS01``, the header length ``H``
and the number of columns (two little-endian uint32), then the column names as a
JSON list padded with spaces to ``H`` bytes (``H`` a multiple of 8).  From byte
``H`` on, the rows follow each other as little-endian float64, ``ncols`` values a
row, so the complete rows of a run are one ``(n, ncols)`` array that can be
memory-mapped.  A chunk is written to ``rows.f64`` and flushed first; only then
is its record appended to ``rows.idx`` (and flushed): the row count after the
chunk (uint64), the CRC-32 of the chunk's bytes (uint32) and the CRC-32 of the
record's first 12 bytes (uint32), all little-endian.  A process killed at any
moment therefore leaves at most one partial record at the end of ``rows.idx``
and rows beyond the last record at the end of ``rows.f64``; :func:`read_rows`
keeps the chunks whose records are whole, whose rows are all in ``rows.f64``
and whose bytes match their checksum, in order, and stops at the first that
does not.

In memory a run keeps only an :class:`Overview` -- for every column the minimum
and maximum of each of a fixed number of buckets of consecutive rows, merged
pairwise as the run grows, so a spike one row wide still shows in the plots --
and reads rows on demand from the file.

:class:`RunStore` is the folder of run folders: it lists them oldest first, keeps
their total size under a cap (the oldest go first; never a run whose process
still runs it), and clears them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: bytes one run may hold in memory, whatever its length: its overview for the plots
#: takes at most half (the rest: the chunk being written, rows read for the 3-D view)
RUN_MEMORY_BUDGET = 200 * 2**20
#: most buckets of an overview (a plot is rarely wider than this many pixel columns)
MAX_BUCKETS = 2048
#: bytes of run folders kept on disk; beyond it the oldest runs are removed
HISTORY_BYTES = 4 * 2**30
#: a growing run checks the cap again each time it has written this much more
CAP_CHECK_BYTES = 64 * 2**20
#: environment variable naming the folder of run folders (tests; a portable set-up)
ENV_DIR = "LINKWORK_RUNS_DIR"

FORMAT_NAME = "linkwork-run"
FORMAT_VERSION = 1
MAGIC = b"LWROWS01"
META = "run.json"
ROWS = "rows.f64"
INDEX = "rows.idx"
_RECORD = struct.Struct("<QII")
#: rows read at a time when a run is exported or its overview rebuilt
READ_BLOCK_BYTES = 8 * 2**20


class RunFileError(Exception):
    """A run folder that cannot be read; the message says which and why."""


def runs_dir(default: str | Path) -> Path:
    """The folder of run folders: ``$LINKWORK_RUNS_DIR`` if set, else ``default``
    (the Qt layer passes ``runs/`` in the platform's application-data folder)."""
    env = os.environ.get(ENV_DIR, "").strip()
    return Path(env).expanduser() if env else Path(default)


def row_bytes(ncols: int) -> int:
    return 8 * ncols


def expected_rows(t_end: float, dt: float) -> int:
    """Rows of a fixed-output run from 0 to ``t_end`` every ``dt`` (t = 0 included)."""
    if dt <= 0 or t_end < 0:
        return 1
    return int(np.floor(t_end / dt + 1e-9)) + 1


def file_size(n_rows: int, columns) -> int:
    """Bytes of ``rows.f64`` and ``rows.idx`` for ``n_rows`` rows (records not counted)."""
    return _header_len(list(columns)) + n_rows * row_bytes(len(columns))


# ------------------------------------------------------------------ writing
def _header(columns: list[str]) -> bytes:
    names = json.dumps(list(columns)).encode("utf-8")
    h = 16 + len(names)
    h += (-h) % 8
    return MAGIC + struct.pack("<II", h, len(columns)) + names.ljust(h - 16, b" ")


def _header_len(columns: list[str]) -> int:
    return len(_header(columns))


class RowsWriter:
    """Appends chunks of rows to a run folder (the module docstring's format)."""

    def __init__(self, folder: str | Path, columns):
        self.folder = Path(folder)
        self.columns = list(columns)
        self.ncols = len(self.columns)
        head = _header(self.columns)
        self.header_len = len(head)
        self.n_rows = 0
        self._rows = open(self.folder / ROWS, "wb")
        self._idx = open(self.folder / INDEX, "wb")
        self._rows.write(head)
        self._rows.flush()

    def append(self, rows: np.ndarray) -> None:
        a = np.ascontiguousarray(rows, dtype="<f8")
        if a.ndim != 2 or a.shape[1] != self.ncols:
            raise ValueError(f"rows of shape {a.shape} do not match {self.ncols} columns")
        if a.shape[0] == 0:
            return
        buf = memoryview(a).cast("B")
        self._rows.write(buf)
        self._rows.flush()
        self.n_rows += a.shape[0]
        rec = struct.pack("<QI", self.n_rows, zlib.crc32(buf))
        self._idx.write(rec + struct.pack("<I", zlib.crc32(rec)))
        self._idx.flush()

    def close(self, sync: bool = True) -> None:
        """Flush (and with ``sync`` fsync) and close; a write that fails now (a full disk)
        loses nothing already indexed, so it is not raised."""
        for f in (self._rows, self._idx):
            if f.closed:
                continue
            try:
                f.flush()
                if sync:
                    os.fsync(f.fileno())
            except OSError:
                pass
            finally:
                try:
                    f.close()
                except OSError:
                    pass

    @property
    def closed(self) -> bool:
        return self._rows.closed


# ------------------------------------------------------------------ reading
@dataclass(frozen=True)
class RowsFile:
    """The readable part of a run folder's rows."""

    path: Path  # rows.f64
    columns: tuple[str, ...]
    header_len: int
    n_rows: int  # rows in complete, verified chunks
    chunks: int
    intact: bool  # False: something after the last complete chunk was cut off or damaged

    @property
    def ncols(self) -> int:
        return len(self.columns)

    def memmap(self, n: int | None = None) -> np.ndarray:
        """The first ``n`` rows (all complete ones by default), memory-mapped read-only."""
        return map_rows(self.path, self.header_len, self.ncols, self.n_rows if n is None else n)

    def blocks(self, n: int | None = None, block_bytes: int = READ_BLOCK_BYTES):
        """Yield the first ``n`` rows in consecutive blocks read from the file (nothing
        mapped, so memory stays at one block however long the run)."""
        return iter_blocks(self.path, self.header_len, self.ncols, self.n_rows if n is None else n,
                           block_bytes)


def map_rows(path: Path, header_len: int, ncols: int, n: int) -> np.ndarray:
    if n <= 0:
        a = np.zeros((0, ncols))
    else:
        a = np.memmap(path, dtype="<f8", mode="r", offset=header_len, shape=(n, ncols))
    a.setflags(write=False)
    return a


def iter_blocks(path: Path, header_len: int, ncols: int, n: int, block_bytes: int = READ_BLOCK_BYTES):
    per = max(1, block_bytes // row_bytes(ncols))
    with open(path, "rb") as f:
        f.seek(header_len)
        done = 0
        while done < n:
            k = min(per, n - done)
            a = np.fromfile(f, dtype="<f8", count=k * ncols)
            if a.size != k * ncols:
                raise RunFileError(f"{path}: ends after {done + a.size // ncols} of {n} rows")
            yield a.reshape(k, ncols)
            done += k


def read_header(path: Path) -> tuple[tuple[str, ...], int]:
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) < 16 or head[:8] != MAGIC:
            raise RunFileError(f"{path}: not a Linkwork rows file")
        h, ncols = struct.unpack("<II", head[8:])
        names = f.read(h - 16)
    try:
        cols = json.loads(names.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise RunFileError(f"{path}: damaged header") from None
    if len(names) != h - 16 or not isinstance(cols, list) or len(cols) != ncols:
        raise RunFileError(f"{path}: damaged header")
    return tuple(str(c) for c in cols), h


def read_rows(folder: str | Path, verify: str = "last") -> RowsFile:
    """The complete chunks of a run folder's rows.

    ``verify``: ``"all"`` checks every chunk's checksum, ``"last"`` (default) the last
    complete one only (a kill can only damage the end), ``"none"`` trusts the index.
    """
    folder = Path(folder)
    path = folder / ROWS
    cols, h = read_header(path)
    ncols = len(cols)
    size = path.stat().st_size
    try:
        idx = (folder / INDEX).read_bytes()
    except FileNotFoundError:
        idx = b""
    ends = []
    crcs = []
    prev = 0
    intact = len(idx) % _RECORD.size == 0
    for k in range(len(idx) // _RECORD.size):
        end, crc, rcrc = _RECORD.unpack_from(idx, k * _RECORD.size)
        if (zlib.crc32(idx[k * _RECORD.size:k * _RECORD.size + 12]) != rcrc or end <= prev
                or h + end * 8 * ncols > size):
            intact = False
            break
        ends.append(end)
        crcs.append(crc)
        prev = end
    starts = [0] + ends[:-1]
    good = len(ends)
    with open(path, "rb") as f:
        def ok(k):
            f.seek(h + starts[k] * 8 * ncols)
            return zlib.crc32(f.read((ends[k] - starts[k]) * 8 * ncols)) == crcs[k]

        if verify == "all":
            for k in range(len(ends)):
                if not ok(k):
                    good = k
                    break
        elif verify == "last":
            while good and not ok(good - 1):
                good -= 1
    if good < len(ends):
        intact = False
    n = ends[good - 1] if good else 0
    if size > h + n * 8 * ncols:
        intact = False
    return RowsFile(path, cols, h, n, good, intact)


# ----------------------------------------------------------------- overview
class Overview:
    """Minimum and maximum of every column over buckets of consecutive rows.

    At most ``n_buckets`` buckets of ``width`` rows each (``width`` 1 at first: the
    rows themselves); when they are all full, neighbours merge pairwise and the
    width doubles.  The rows of an unfinished bucket are kept as its running
    minimum and maximum.  NaN values are ignored (a bucket of NaN only stays NaN).
    """

    def __init__(self, ncols: int, budget: int = RUN_MEMORY_BUDGET // 2, max_buckets: int = MAX_BUCKETS):
        nb = min(max_buckets, max(16, budget // (2 * 8 * max(1, ncols) + 16)))
        self.n_buckets = nb - nb % 2
        self.ncols = ncols
        self.width = 1
        self.n = 0  # full buckets
        self.lo = np.empty((self.n_buckets, ncols))
        self.hi = np.empty((self.n_buckets, ncols))
        self.t0 = np.empty(self.n_buckets)  # time of each bucket's first row
        self._plo = np.full(ncols, np.nan)  # the unfinished bucket
        self._phi = np.full(ncols, np.nan)
        self._pt0 = 0.0
        self._pn = 0
        self.rows = 0
        self.first: np.ndarray | None = None
        self.last: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return self.lo.nbytes + self.hi.nbytes + self.t0.nbytes

    def add(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, float)
        k = rows.shape[0]
        if k == 0:
            return
        if self.first is None:
            self.first = rows[0].copy()
        self.last = rows[-1].copy()
        i = 0
        while i < k:
            w = self.width
            if self._pn == 0 and k - i >= w:
                m = min((k - i) // w, self.n_buckets - self.n)
                blk = rows[i:i + m * w].reshape(m, w, self.ncols)
                self.lo[self.n:self.n + m] = np.fmin.reduce(blk, axis=1)
                self.hi[self.n:self.n + m] = np.fmax.reduce(blk, axis=1)
                self.t0[self.n:self.n + m] = blk[:, 0, 0]
                self.n += m
                i += m * w
            else:
                take = min(w - self._pn, k - i)
                part = rows[i:i + take]
                if self._pn == 0:
                    self._pt0 = float(part[0, 0])
                    self._plo[:] = np.fmin.reduce(part, axis=0)
                    self._phi[:] = np.fmax.reduce(part, axis=0)
                else:
                    np.fmin(self._plo, np.fmin.reduce(part, axis=0), out=self._plo)
                    np.fmax(self._phi, np.fmax.reduce(part, axis=0), out=self._phi)
                self._pn += take
                i += take
                if self._pn == w:
                    self.lo[self.n] = self._plo
                    self.hi[self.n] = self._phi
                    self.t0[self.n] = self._pt0
                    self.n += 1
                    self._pn = 0
            if self.n == self.n_buckets:
                self._merge()
        self.rows += k

    def _merge(self) -> None:
        h = self.n // 2
        np.fmin(self.lo[0:2 * h:2], self.lo[1:2 * h:2], out=self.lo[:h])
        np.fmax(self.hi[0:2 * h:2], self.hi[1:2 * h:2], out=self.hi[:h])
        self.t0[:h] = self.t0[0:2 * h:2]
        self.n = h
        self.width *= 2

    def buckets(self, col: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first time, minimum, maximum) of every bucket of column ``col``, the unfinished
        one last."""
        t0, lo, hi = self.t0[:self.n], self.lo[:self.n, col], self.hi[:self.n, col]
        if self._pn:
            t0 = np.append(t0, self._pt0)
            lo = np.append(lo, self._plo[col])
            hi = np.append(hi, self._phi[col])
        return t0, lo, hi

    def series(self, col: int) -> tuple[np.ndarray, np.ndarray]:
        """Points for a curve of column ``col``: the rows themselves while a bucket is one
        row; else each bucket's minimum and maximum at its first time (a vertical stroke,
        so a spike inside a bucket stays drawn)."""
        t0, lo, hi = self.buckets(col)
        if self.width == 1:
            return t0.copy(), lo.copy()
        return np.repeat(t0, 2), np.column_stack([lo, hi]).ravel()

    def column_range(self, cols) -> tuple[np.ndarray, np.ndarray]:
        """Minimum and maximum over all rows of the columns ``cols``."""
        cols = np.asarray(cols, dtype=np.int64)
        lo = np.fmin.reduce(self.lo[:self.n][:, cols], axis=0) if self.n else np.full(len(cols), np.nan)
        hi = np.fmax.reduce(self.hi[:self.n][:, cols], axis=0) if self.n else np.full(len(cols), np.nan)
        if self._pn:
            lo = np.fmin(lo, self._plo[cols])
            hi = np.fmax(hi, self._phi[cols])
        return lo, hi


# -------------------------------------------------------------------- store
def write_meta(folder: Path, meta: dict, durable: bool = True) -> None:
    """Write ``run.json`` atomically (``durable``: fsynced, as autosave's files)."""
    from .recovery import write_atomic

    text = json.dumps(meta, indent=1, default=_jsonable)
    if durable:
        write_atomic(Path(folder) / META, text)
    else:
        tmp = Path(folder) / f".{META}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, Path(folder) / META)


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def read_meta(folder: Path) -> dict:
    p = Path(folder) / META
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFileError(f"{folder}: no {META}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunFileError(f"{p}: {exc}") from None
    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        raise RunFileError(f"{p}: not a Linkwork run")
    if d.get("version", 0) > FORMAT_VERSION:
        raise RunFileError(f"{p}: written by a newer Linkwork (run format {d.get('version')})")
    return d


def folder_size(folder: Path) -> int:
    total = 0
    for p in Path(folder).iterdir():
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


class RunStore:
    """A folder of run folders, oldest first, at most ``cap_bytes`` on disk together."""

    def __init__(self, folder: str | Path, cap_bytes: int = HISTORY_BYTES, temporary: bool = False):
        self.folder = Path(folder)
        self.cap_bytes = int(cap_bytes)
        #: the folder is this process's scratch space: a run's folder goes with its record
        self.temporary = temporary

    def new_folder(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime())
        while True:
            p = self.folder / f"run-{stamp}-{os.getpid()}-{secrets.token_hex(3)}"
            try:
                p.mkdir()
                return p
            except FileExistsError:
                continue

    def folders(self) -> list[Path]:
        """Run folders, oldest first (by creation time in their ``run.json``)."""
        if not self.folder.is_dir():
            return []
        found = []
        for p in self.folder.iterdir():
            if p.is_dir() and p.name.startswith("run-") and (p / META).exists():
                try:
                    created = float(read_meta(p).get("created", 0.0))
                except RunFileError:
                    created = p.stat().st_mtime
                found.append((created, p.name, p))
        return [p for _, _, p in sorted(found)]

    def total_bytes(self) -> int:
        return sum(folder_size(p) for p in self.folders())

    def in_use(self, folder: Path) -> bool:
        """Whether a live process (this one or another) is writing ``folder``'s run."""
        from .recovery import Owner, owner_alive, this_process

        try:
            meta = read_meta(folder)
        except RunFileError:
            return False
        if meta.get("status") not in ("pending", "compiling", "running", "paused"):
            return False
        owner = meta.get("owner")
        if not isinstance(owner, dict):
            return False
        try:
            o = Owner.from_dict(owner)
        except (KeyError, ValueError):
            return False
        me = this_process()
        if (o.pid, o.host, o.started) == (me.pid, me.host, me.started):
            return True
        return owner_alive(o)

    def enforce_cap(self, keep=()) -> list[Path]:
        """Remove the oldest run folders until the rest fit in ``cap_bytes``; never one in
        ``keep`` or one a live process writes.  Returns the removed folders."""
        keep = {Path(k).resolve() for k in keep}
        folders = self.folders()
        sizes = {p: folder_size(p) for p in folders}
        total = sum(sizes.values())
        removed = []
        for p in folders:
            if total <= self.cap_bytes:
                break
            if p.resolve() in keep or self.in_use(p):
                continue
            remove_folder(p)
            total -= sizes[p]
            removed.append(p)
        return removed

    def clear(self, keep=()) -> list[Path]:
        """Remove every run folder but those in ``keep`` and those a live process writes."""
        keep = {Path(k).resolve() for k in keep}
        removed = []
        for p in self.folders():
            if p.resolve() in keep or self.in_use(p):
                continue
            remove_folder(p)
            removed.append(p)
        return removed


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


_scratch: RunStore | None = None


def scratch_store() -> RunStore:
    """This process's temporary run folder (runs of a session that keeps no history:
    tests, the report command); removed at exit."""
    global _scratch
    if _scratch is None:
        import atexit
        import tempfile

        _scratch = RunStore(tempfile.mkdtemp(prefix="linkwork-runs-"), cap_bytes=2**62, temporary=True)
        atexit.register(shutil.rmtree, _scratch.folder, True)
    return _scratch
