"""Autosave and crash recovery, without Qt: the file, its owner, when it is written and deleted."""

import json
import os
import subprocess
import sys

import pytest

from linkwork.engine import generators as g
from linkwork.engine.mechfile import dumps, spec_to_dict

from linkwork.app.session import edits
from linkwork.app.session.document import MechanismDocument
from linkwork.app.session.notifications import Notifications
from linkwork.app.session.recovery import (
    ENV_DIR, Autosave, AutosavePolicy, Owner, RecoveryError, RecoveryStore, owner_alive, read_record,
    recovery_dir, this_process, write_atomic,
)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _ended_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _dead_owner() -> Owner:
    me = this_process()
    return Owner(_ended_pid(), me.host, me.boot_id, "1")


def _edited_doc(tmp_path) -> MechanismDocument:
    doc = MechanismDocument()
    path = tmp_path / "fourbar.mech.json"
    path.write_text(dumps(g.fourbar()))
    doc.open(path)
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=2.5))
    doc.edit("name", edits.set_mechanism(doc.spec, name="edited four-bar", description="after a crash"))
    doc.edit("pivot", pivots=((0.25, 0.5, 0.0),))
    return doc


# ---------------------------------------------------------------------------------- the file
def test_atomic_write_replaces_whole_file_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "f.json"
    write_atomic(p, "old")
    write_atomic(p, "new text")
    assert p.read_text() == "new text"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.json"]


def test_a_failed_atomic_write_keeps_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    write_atomic(p, "old")

    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        write_atomic(p, "new")
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.json"]


def test_record_round_trips_the_document(tmp_path):
    doc = _edited_doc(tmp_path)
    store = RecoveryStore(tmp_path / "rec")
    path = store.save(doc, when=1234.5)
    assert path.parent == tmp_path / "rec" and path.name.startswith(f"recovery-{os.getpid()}-")
    data = json.loads(path.read_text())
    assert data["mechanism"] == spec_to_dict(doc.spec)  # what File > Save writes
    assert data["original_path"] == str(tmp_path / "fourbar.mech.json")
    rec = read_record(path)
    assert rec.spec == doc.spec
    assert rec.pivots == doc.pivots
    assert rec.original_path == doc.path and rec.title == "fourbar.mech.json"
    assert rec.saved_at == 1234.5 and rec.owner == this_process()
    # the user's file is untouched
    assert (tmp_path / "fourbar.mech.json").read_text() == dumps(g.fourbar())


def test_a_mechanism_the_editor_would_not_save_round_trips_too(tmp_path):
    doc = MechanismDocument()
    doc.replace(g.fourbar())
    doc.edit("bad mass", edits.set_body(doc.spec, "B", mass=-1.0))
    doc.edit("lose a joint", edits.delete_joint(doc.spec, "J1"))
    assert not doc.validation.ok
    store = RecoveryStore(tmp_path)
    rec = read_record(store.save(doc))
    assert rec.spec == doc.spec and rec.original_path is None and rec.title == doc.spec.name


@pytest.mark.parametrize("law", [{}, {"kind": "harmonic", "amplitude": 0.3, "frequency": 1.5, "phase": 0.2,
                                      "offset": 0.1},
                                 {"kind": "table", "t": (0.0, 1.0, 3.0), "q": (0.0, 0.5, -0.25)}])
def test_drivers_round_trip(tmp_path, law):
    doc = MechanismDocument()
    doc.replace(edits.add_driver(g.fourbar(), "J1"))
    if law:
        doc.edit("law", edits.set_driver(doc.spec, "M1", **law))
    rec = read_record(RecoveryStore(tmp_path).save(doc))
    assert rec.spec == doc.spec and rec.spec.drivers


def test_damaged_files_are_named_in_the_error(tmp_path):
    p = tmp_path / "recovery-1-x.json"
    p.write_text("{not json")
    with pytest.raises(RecoveryError, match="recovery-1-x.json: not valid JSON"):
        read_record(p)
    p.write_text(json.dumps({"format": "linkwork-recovery", "version": 1, "owner": {"pid": 1}}))
    with pytest.raises(RecoveryError, match="damaged"):
        read_record(p)


def test_environment_variable_overrides_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "here"))
    assert recovery_dir("/elsewhere") == tmp_path / "here"
    monkeypatch.delenv(ENV_DIR)
    assert recovery_dir(tmp_path / "default") == tmp_path / "default"


# ---------------------------------------------------------------------------------- the owner
def test_pid_check_tells_running_from_ended_processes():
    me = this_process()
    assert owner_alive(me)
    assert not owner_alive(Owner(_ended_pid(), me.host, me.boot_id, me.started))
    if me.started is not None:  # Linux: a reused process id is not the owner
        assert not owner_alive(Owner(me.pid, me.host, me.boot_id, str(int(me.started) + 1)))
    if me.boot_id is not None:  # written before a reboot
        assert not owner_alive(Owner(me.pid, me.host, "another-boot", me.started))
    assert owner_alive(Owner(_ended_pid(), "another-computer"))  # cannot tell: not ours to take


def test_a_killed_unreaped_child_counts_as_ended():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        child = this_process().__class__(p.pid, this_process().host)
        assert owner_alive(child)
        p.kill()
        for _ in range(200):  # a zombie until reaped
            if not owner_alive(child):
                break
            import time

            time.sleep(0.01)
        assert not owner_alive(child)
    finally:
        p.wait()


def test_orphans_are_files_of_ended_processes_only(tmp_path):
    doc = _edited_doc(tmp_path)
    running = RecoveryStore(tmp_path / "rec")  # this process: another instance still running
    running.save(doc, when=10.0)
    crashed_early = RecoveryStore(tmp_path / "rec", owner=_dead_owner())
    crashed_early.save(doc, when=20.0)
    crashed_late = RecoveryStore(tmp_path / "rec", owner=_dead_owner())
    crashed_late.save(doc, when=30.0)
    (tmp_path / "rec" / "recovery-9-bad.json").write_text("{")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _offer_from_another_running_process(tmp_path, doc, running, crashed_early, crashed_late,
                                            RecoveryStore(tmp_path / "rec", owner=Owner(child.pid, running.owner.host)))
    finally:
        child.kill()
        child.wait()


def _offer_from_another_running_process(tmp_path, doc, running, crashed_early, crashed_late, starting):
    found, bad = starting.orphans()
    assert [r.file for r in found] == [crashed_late.path, crashed_early.path]  # newest first
    assert len(bad) == 1 and "recovery-9-bad.json" in str(bad[0])
    # claimed by the process that offers it: nobody else offers it while it runs
    claimed = starting.claim(found[0])
    assert claimed.owner == starting.owner and claimed.spec == doc.spec and claimed.saved_at == 30.0
    other = RecoveryStore(tmp_path / "rec")
    assert crashed_late.path not in [r.file for r in other.orphans()[0]]
    starting.delete(claimed)
    assert not crashed_late.path.exists()


# ---------------------------------------------------------------------------------- when
def test_policy_debounces_but_writes_within_the_upper_bound():
    p = AutosavePolicy(debounce=1.0, max_delay=5.0)
    assert p.deadline() is None
    p.edited(0.0)
    assert p.deadline() == 1.0
    p.edited(0.8)  # each edit restarts the wait ...
    assert p.deadline() == 1.8
    for t in (1.6, 2.4, 3.2, 4.0, 4.8):  # ... but continuous editing is written at 5 s
        p.edited(t)
    assert p.deadline() == 5.0
    p.clear()
    assert p.deadline() is None and not p.pending


def _autosave(tmp_path, doc=None):
    doc = doc or MechanismDocument()
    clock = Clock()
    notes = Notifications()
    auto = Autosave(doc, RecoveryStore(tmp_path / "rec"), notes, clock=clock)
    wakes = []
    auto.wake_requested.connect(wakes.append)
    return doc, auto, clock, notes, wakes


def test_autosave_writes_after_an_edit_and_deletes_on_save(tmp_path):
    doc, auto, clock, _, wakes = _autosave(tmp_path)
    path = tmp_path / "m.mech.json"
    doc.replace(g.fourbar(), path)
    doc.save(path)
    wakes.clear()
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=3.0))
    assert wakes[-1] == pytest.approx(1.0)
    auto.tick()  # too early: asks again
    assert not auto.store.path.exists() and wakes[-1] == pytest.approx(1.0)
    clock.t += 1.0
    auto.tick()
    assert read_record(auto.store.path).spec == doc.spec
    doc.save()  # a normal save
    assert not auto.store.path.exists()


def test_autosave_deletes_on_close_and_on_discarded_edits(tmp_path):
    doc, auto, clock, _, _ = _autosave(tmp_path)
    doc.replace(g.fourbar())
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=3.0))
    assert auto.save_now() and auto.store.path.exists()
    doc.undo_stack.undo()  # back at the loaded state: nothing to recover
    assert not auto.store.path.exists()
    doc.undo_stack.redo()
    clock.t += 5.0
    auto.tick()
    assert auto.store.path.exists()
    doc.replace(g.chain(2, "revolute"))  # another mechanism, the edits discarded
    assert not auto.store.path.exists()
    doc.edit("mass", edits.set_body(doc.spec, doc.spec.bodies[0].name, mass=3.0))
    auto.save_now()
    auto.close()  # a normal close
    assert not auto.store.path.exists()
    doc.edit("mass", edits.set_body(doc.spec, doc.spec.bodies[0].name, mass=4.0))
    assert not auto.store.path.exists()  # closed: no more writes


def test_a_failed_autosave_warns_once_and_loses_nothing(tmp_path):
    doc, auto, clock, notes, _ = _autosave(tmp_path)
    (tmp_path / "rec").write_text("a file where the folder should be")
    doc.replace(g.fourbar())
    for mass in (2.0, 3.0, 4.0):
        doc.edit("mass", edits.set_body(doc.spec, "A", mass=mass))
        clock.t += 5.0
        auto.tick()
    warnings = [n for n in notes.log if n.level == "warning"]
    assert len(warnings) == 1 and "Autosave failed" in warnings[0].text
    assert str(tmp_path / "rec") in warnings[0].text
    assert doc.spec.body("A").mass == 4.0 and doc.dirty
    (tmp_path / "rec").unlink()  # the folder can be written again
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=5.0))
    clock.t += 5.0
    auto.tick()
    assert read_record(auto.store.path).spec.body("A").mass == 5.0


def test_restore_gives_a_modified_document_that_saves_to_the_original(tmp_path):
    edited = _edited_doc(tmp_path)
    rec = read_record(RecoveryStore(tmp_path / "rec", owner=_dead_owner()).save(edited))
    doc = MechanismDocument()
    doc.restore(rec.spec, rec.original_path, rec.pivots)
    assert doc.dirty and doc.spec == edited.spec and doc.pivots == edited.pivots
    assert doc.path == tmp_path / "fourbar.mech.json"
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=7.0))
    doc.undo_stack.undo()
    assert doc.dirty  # the restored state is in no file
    doc.save()
    assert not doc.dirty and (tmp_path / "fourbar.mech.json").read_text() == dumps(edited.spec)
