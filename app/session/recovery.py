"""Autosave and crash recovery of the open document (Qt-free).

While the document has edits that are in no file, :class:`Autosave` writes it
to this process's own recovery file (:class:`RecoveryStore`) at most
:data:`MAX_DELAY` seconds after an edit: each edit restarts a short
:data:`DEBOUNCE` wait, and :data:`MAX_DELAY` after the first unsaved edit the
file is written even if editing goes on (:class:`AutosavePolicy`).  A normal
save, a normal close or discarding the edits deletes the file.

A recovery file is JSON::

    {"format": "linkwork-recovery", "version": 1,
     "owner": {"pid": ..., "host": ..., "boot_id": ..., "started": ...},
     "saved_at": <seconds since the epoch>, "original_path": "/abs/file.mech.json" | null,
     "pivots": [[x, y, z], ...],
     "mechanism": {... exactly what File > Save writes ...}}

Files are written atomically (a temporary file in the same folder, flushed and
fsynced, then ``os.replace``), so a crash never leaves half a file, and they
live in their own folder: a recovery file never overwrites the user's file.

At start-up, :meth:`RecoveryStore.orphans` lists the files whose owning
process has ended (the application crashed or was killed).  The owner is the
process id plus, where the system tells (Linux), the boot and the process's
start time, so a reused process id after a reboot is not mistaken for the
owner; a file of a process that still runs is another instance's and is left
alone.  The Qt layer offers each orphan for restoring.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from linkwork.engine.mechfile import MechanismSpec, spec_to_dict
from linkwork.engine.mechfile.spec import (BodySpec, CouplingSpec, DriverSpec, ForceSpec, JointSpec, MotionSpec,
                                           ShapeSpec)

from .document import MechanismDocument
from .events import Event
from .notifications import Notifications

FORMAT_NAME = "linkwork-recovery"
FORMAT_VERSION = 1
#: environment variable naming the folder of recovery files (tests; a portable set-up)
ENV_DIR = "LINKWORK_RECOVERY_DIR"
PREFIX = "recovery-"
SUFFIX = ".json"
#: seconds without a further edit before the recovery file is written
DEBOUNCE = 1.0
#: seconds after the first unwritten edit by which the file is written, editing or not
MAX_DELAY = 5.0


class RecoveryError(Exception):
    """A recovery file that cannot be read; the message says which and why."""


def recovery_dir(default: str | Path) -> Path:
    """The folder of recovery files: ``$LINKWORK_RECOVERY_DIR`` if set, else ``default``
    (the Qt layer passes the platform's application-data folder)."""
    env = os.environ.get(ENV_DIR, "").strip()
    return Path(env).expanduser() if env else Path(default)


# ------------------------------------------------------------------ process identity
@dataclass(frozen=True)
class Owner:
    """The process a recovery file belongs to."""

    pid: int
    host: str = ""
    boot_id: str | None = None  # Linux: /proc/sys/kernel/random/boot_id
    started: str | None = None  # Linux: start time of the process in clock ticks since boot

    def as_dict(self) -> dict:
        return {"pid": self.pid, "host": self.host, "boot_id": self.boot_id, "started": self.started}

    @classmethod
    def from_dict(cls, d: dict) -> "Owner":
        pid = d["pid"]
        if isinstance(pid, bool) or not isinstance(pid, int):
            raise ValueError(f"owner.pid must be an integer (got {pid!r})")
        return cls(pid, str(d.get("host") or ""), d.get("boot_id"), d.get("started"))


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _boot_id() -> str | None:
    t = _read_text("/proc/sys/kernel/random/boot_id")
    return t.strip() if t else None


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) of ``pid`` from /proc (Linux), None where there is no /proc entry."""
    t = _read_text(f"/proc/{pid}/stat")
    if not t:
        return None
    # the command name (field 2) is in parentheses and may contain spaces
    rest = t[t.rfind(")") + 2:].split()
    if len(rest) < 20:
        return None
    return rest[0], rest[19]  # field 3 (state), field 22 (starttime)


def this_process() -> Owner:
    pid = os.getpid()
    stat = _proc_stat(pid)
    return Owner(pid, socket.gethostname(), _boot_id(), stat[1] if stat else None)


def _pid_exists(pid: int) -> bool:
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill would terminate the process there
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5  # access denied: it exists
        try:
            code = ctypes.c_ulong()
            kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return False
    return True


def owner_alive(owner: Owner) -> bool:
    """Whether the process that owns a recovery file still runs.

    A file written on another computer (a shared home folder) counts as alive:
    this computer cannot tell, and the owner's computer will offer it."""
    if owner.host and owner.host != socket.gethostname():
        return True
    if owner.boot_id is not None:
        boot = _boot_id()
        if boot is not None and boot != owner.boot_id:
            return False  # written before the last reboot
    if not _pid_exists(owner.pid):
        return False
    stat = _proc_stat(owner.pid)
    if stat is not None:
        state, started = stat
        if state in ("Z", "X"):
            return False  # ended; only its exit status is left
        if owner.started is not None and started != owner.started:
            return False  # the process id now belongs to another process
    return True


# ------------------------------------------------------------------ writing
def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that it holds either the old or the new text, even
    across a crash or power cut: temporary file in the same folder, flush, fsync,
    ``os.replace``, fsync of the folder.  Raises OSError (the old file untouched)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        try:
            fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def record_dict(doc: MechanismDocument, owner: Owner, saved_at: float) -> dict:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "owner": owner.as_dict(),
        "saved_at": saved_at,
        "original_path": str(doc.path) if doc.path is not None else None,
        "pivots": [[float(x) for x in p] for p in doc.pivots],
        "mechanism": spec_to_dict(doc.spec),
    }


# ------------------------------------------------------------------ reading
def _t(v) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


def _shape(d: dict) -> ShapeSpec:
    k = d["kind"]
    if k == "rod":
        return ShapeSpec(k, p_from=_t(d["from"]), p_to=_t(d["to"]), radius=float(d["radius"]))
    if k == "box":
        return ShapeSpec(k, size=_t(d["size"]))
    if k == "sphere":
        return ShapeSpec(k, radius=float(d["radius"]))
    if k == "cylinder":
        return ShapeSpec(k, radius=float(d["radius"]), length=float(d["length"]), axis=_t(d["axis"]))
    return ShapeSpec(k, path=d["path"], scale=float(d["scale"]))


def _inertia(v) -> tuple:
    if len(v) == 3 and not isinstance(v[0], list):  # the diagonal
        a, b, c = (float(x) for x in v)
        return ((a, 0.0, 0.0), (0.0, b, 0.0), (0.0, 0.0, c))
    return tuple(_t(row) for row in v)


def _force(d: dict) -> ForceSpec:
    t = d["type"]
    if t == "spring":
        rest = d.get("rest_length")
        return ForceSpec(t, body1=d["body1"], point1=_t(d["point1"]), body2=d["body2"], point2=_t(d["point2"]),
                         stiffness=float(d["stiffness"]), damping=float(d["damping"]),
                         rest_length=None if rest is None else float(rest))
    if t == "joint-spring":
        return ForceSpec(t, joint=d["joint"], stiffness=float(d["stiffness"]), damping=float(d["damping"]),
                         rest=float(d["rest"]))
    v = d["value"]
    return ForceSpec(t, joint=d["joint"], value=_t(v) if isinstance(v, list) else (float(v),))


def spec_from_record(d: dict) -> MechanismSpec:
    """The spec exactly as :func:`~engine.mechfile.spec_to_dict` wrote it.

    Unlike a mechanism file, a recovery file may hold a mechanism the editor would
    not save yet (a body not joined to anything, a zero mass being typed): it is
    read back as it was, and the document's validation says what is wrong, as it
    did before the crash."""
    bodies = tuple(
        BodySpec(b["name"], float(b["mass"]), _inertia(b["inertia"]), _t(b["position"]), _t(b["orientation"]),
                 _t(b["velocity"]), _t(b["angular_velocity"]),
                 _shape(b["shape"]) if b.get("shape") is not None else None)
        for b in d["bodies"])
    joints = []
    for j in d["joints"]:
        rate = j.get("rate")
        joints.append(JointSpec(
            j["name"], j["type"], j["parent"], j["child"], _t(j["anchor"]),
            _t(j["axis"]) if "axis" in j else None,
            (_t(j["axes"][0]), _t(j["axes"][1])) if "axes" in j else None,
            None if rate is None else (_t(rate) if isinstance(rate, list) else (float(rate),)),
            bool(j.get("cut", False))))
    couplings = tuple(CouplingSpec(c["name"], c["driver"], c["driven"], float(c["ratio"]), c["type"])
                      for c in d.get("couplings", ()))
    drivers = tuple(DriverSpec(m["name"], m["joint"], _motion(m["motion"]), m["type"]) for m in d.get("drivers", ()))
    return MechanismSpec(
        bodies=bodies, joints=tuple(joints), forces=tuple(_force(f) for f in d["forces"]),
        gravity=_t(d["gravity"]), name=d.get("name", ""), description=d.get("description", ""),
        settings=tuple(d.get("settings", {}).items()), couplings=couplings, drivers=drivers)


def _motion(d: dict) -> MotionSpec:
    numbers = {k: float(d[k]) for k in ("rate", "amplitude", "frequency", "phase", "offset") if k in d}
    return MotionSpec(d["kind"], t=_t(d.get("t", ())), q=_t(d.get("q", ())), **numbers)


@dataclass(frozen=True)
class RecoveryRecord:
    """A recovery file read back."""

    file: Path
    owner: Owner
    saved_at: float  # seconds since the epoch
    original_path: Path | None
    spec: MechanismSpec
    pivots: tuple[tuple[float, float, float], ...] = ()

    @property
    def title(self) -> str:
        """The original file's name, or the mechanism's name for one never saved."""
        if self.original_path is not None:
            return self.original_path.name
        return self.spec.name or "untitled"


def read_record(path: str | Path) -> RecoveryRecord:
    """Read a recovery file; raises :class:`RecoveryError` naming the file and the fault."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecoveryError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecoveryError(f"{p}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    except json.JSONDecodeError as exc:
        raise RecoveryError(f"{p}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise RecoveryError(f"{p}: not a Linkwork recovery file")
    if data.get("version") != FORMAT_VERSION:
        raise RecoveryError(f"{p}: recovery format version {data.get('version')!r}; this Linkwork reads "
                            f"version {FORMAT_VERSION}")
    try:
        orig = data["original_path"]
        return RecoveryRecord(
            p, Owner.from_dict(data["owner"]), float(data["saved_at"]),
            Path(orig) if orig else None, spec_from_record(data["mechanism"]),
            tuple(tuple(float(x) for x in q) for q in data.get("pivots", ())))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise RecoveryError(f"{p}: damaged ({type(exc).__name__}: {exc})") from None


# ------------------------------------------------------------------ the folder
class RecoveryStore:
    """The folder of recovery files, seen from one process.

    ``path`` is this process's own file (``recovery-<pid>-<random>.json``); the
    folder is created on the first write, never before."""

    def __init__(self, folder: str | Path, owner: Owner | None = None):
        self.folder = Path(folder)
        self.owner = owner or this_process()
        self.path = self.folder / f"{PREFIX}{self.owner.pid}-{secrets.token_hex(4)}{SUFFIX}"

    def save(self, doc: MechanismDocument, when: float | None = None) -> Path:
        """Write ``doc`` to this process's recovery file; raises OSError."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(record_dict(doc, self.owner, time.time() if when is None else when), indent=1)
        write_atomic(self.path, text + "\n")
        return self.path

    def discard(self) -> None:
        """Delete this process's recovery file (nothing to do if there is none)."""
        _unlink(self.path)

    def files(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.glob(f"{PREFIX}*{SUFFIX}") if p.is_file())
        except OSError:
            return []

    def orphans(self) -> tuple[list[RecoveryRecord], list[RecoveryError]]:
        """Recovery files whose owner has ended, newest first, and the files that
        cannot be read (left in place: they may be a newer Linkwork's)."""
        found, bad = [], []
        for p in self.files():
            if p == self.path:
                continue
            try:
                rec = read_record(p)
            except RecoveryError as exc:
                if p.exists():
                    bad.append(exc)
                continue
            if rec.owner.pid == self.owner.pid and rec.owner.host in ("", self.owner.host):
                continue  # held by this process (an offer it showed)
            if not owner_alive(rec.owner):
                found.append(rec)
        found.sort(key=lambda r: r.saved_at, reverse=True)
        return found, bad

    def claim(self, rec: RecoveryRecord) -> RecoveryRecord | None:
        """Make ``rec``'s file this process's while it is offered, so another instance
        starting now does not offer it too; None if it is gone or another process has
        claimed it.  If this process ends without deciding, the file is offered again."""
        try:
            cur = read_record(rec.file)
        except RecoveryError:
            return None
        if cur.owner != rec.owner and owner_alive(cur.owner):
            return None
        data = json.loads(rec.file.read_text(encoding="utf-8"))
        data["owner"] = self.owner.as_dict()
        write_atomic(rec.file, json.dumps(data, indent=1) + "\n")
        return RecoveryRecord(rec.file, self.owner, cur.saved_at, cur.original_path, cur.spec, cur.pivots)

    def delete(self, rec: RecoveryRecord) -> None:
        _unlink(rec.file)
        _unlink(rec.file.with_name(f".{rec.file.name}.tmp"))


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except FileNotFoundError:
        pass


# ------------------------------------------------------------------ when to write
class AutosavePolicy:
    """When the next autosave is due: :data:`DEBOUNCE` after the last edit, but no later
    than :data:`MAX_DELAY` after the first edit not yet written (pure; times in seconds
    of a monotonic clock)."""

    def __init__(self, debounce: float = DEBOUNCE, max_delay: float = MAX_DELAY):
        if not 0 < debounce <= max_delay:
            raise ValueError("need 0 < debounce <= max_delay")
        self.debounce = debounce
        self.max_delay = max_delay
        self._first: float | None = None
        self._last: float | None = None

    def edited(self, now: float) -> None:
        if self._first is None:
            self._first = now
        self._last = now

    def clear(self) -> None:
        """Everything is written (or there is nothing to write)."""
        self._first = self._last = None

    @property
    def pending(self) -> bool:
        return self._first is not None

    def deadline(self) -> float | None:
        if self._first is None:
            return None
        return min(self._last + self.debounce, self._first + self.max_delay)


class Autosave:
    """Keeps the document's recovery file up to date.

    Subscribes to the document; the clock that wakes it is the caller's: it emits
    ``wake_requested(delay)`` (seconds, or None to cancel) and expects
    :meth:`tick` to be called after that delay (the Qt layer uses a single-shot
    ``QTimer``; tests call :meth:`tick` themselves).  A failed write posts one
    warning to ``notifications`` and the application goes on; the next edit tries
    again, and the warning is posted again only after a write has succeeded."""

    def __init__(self, document: MechanismDocument, store: RecoveryStore,
                 notifications: Notifications | None = None, clock: Callable[[], float] = time.monotonic,
                 policy: AutosavePolicy | None = None):
        self.document = document
        self.store = store
        self.notifications = notifications
        self.clock = clock
        self.policy = policy or AutosavePolicy()
        self.wake_requested = Event("wake_requested")
        #: (path) after each successful write
        self.saved = Event("saved")
        self.failed_once = False
        self._written = False
        document.state_changed.connect(self._on_state)
        document.dirty_changed.connect(self._on_dirty)

    @property
    def has_file(self) -> bool:
        return self._written

    def _needs_file(self) -> bool:
        d = self.document
        return d.dirty and not (d.is_empty and d.path is None and not d.pivots)

    def _on_state(self, _state) -> None:
        self.policy.edited(self.clock())
        self._request()

    def _on_dirty(self, dirty: bool) -> None:
        if dirty:
            self.policy.edited(self.clock())
            self._request()
        else:  # saved, or back at the saved state, or another mechanism loaded
            self.policy.clear()
            self.wake_requested.emit(None)
            self._discard()

    def _request(self) -> None:
        dl = self.policy.deadline()
        self.wake_requested.emit(None if dl is None else max(0.0, dl - self.clock()))

    def tick(self) -> None:
        """Write the file if it is due; otherwise ask to be woken when it is."""
        dl = self.policy.deadline()
        if dl is None:
            return
        if self.clock() + 1e-3 >= dl:
            self.save_now()
        else:
            self._request()

    def save_now(self) -> bool:
        """Write the recovery file now (or delete it if there is nothing to recover)."""
        self.policy.clear()
        self.wake_requested.emit(None)
        if not self._needs_file():
            self._discard()
            return True
        try:
            path = self.store.save(self.document)
        except OSError as exc:
            if not self.failed_once and self.notifications is not None:
                self.notifications.warning(
                    f"Autosave failed: cannot write the recovery copy in {self.store.folder} "
                    f"({exc.strerror or exc}). Your edits are only in memory: save them to a file.",
                    source="autosave")
            self.failed_once = True
            return False
        self.failed_once = False
        self._written = True
        self.saved.emit(path)
        return True

    def _discard(self) -> None:
        if self._written or self.store.path.exists():
            try:
                self.store.discard()
            except OSError:
                pass  # a read-only folder: the owner check keeps it from being offered while we run
            self._written = False

    def close(self) -> None:
        """Normal end: stop and delete this process's recovery file."""
        self.document.state_changed.disconnect(self._on_state)
        self.document.dirty_changed.disconnect(self._on_dirty)
        self.policy.clear()
        self.wake_requested.emit(None)
        self._discard()
