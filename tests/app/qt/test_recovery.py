"""Autosave in the window, and the offer to restore after the application was killed."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from linkwork.engine import generators as g
from linkwork.engine.mechfile import dumps, spec_to_dict
from linkwork.engine.paths import examples_dir

from linkwork.app.session import edits
from linkwork.app.session.recovery import Owner, RecoveryStore, read_record, spec_from_record, this_process

#: the application, started as the ``linkwork`` command starts it, edited while it runs:
#: one edit every 0.4 s for 3 s (name, masses, a joint's rate, ground pivots), then it
#: prints what the document holds and waits to be killed
DRIVER = textwrap.dedent("""
    import json, sys, time
    from linkwork.app.threads import configure_environment
    configure_environment()
    import linkwork.app.qt
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    from linkwork.app import main as app_main
    from linkwork.app.session import edits
    from linkwork.engine.mechfile import spec_to_dict

    app = QApplication([sys.argv[0]])
    step = [0]

    def edit():
        try:
            step_edit()
        except BaseException:
            import os, traceback
            traceback.print_exc()
            os._exit(1)

    def step_edit():
        wins = [w for w in app.topLevelWidgets() if type(w).__name__ == "MainWindow"]
        if not wins:
            QTimer.singleShot(100, edit)
            return
        doc = wins[0].session.document
        k = step[0]
        step[0] += 1
        if k == 0:
            doc.edit("name", edits.set_mechanism(doc.spec, name="crashed four-bar"))
        elif k < 4:
            doc.edit("mass", edits.set_body(doc.spec, "B", mass=1.0 + k))
        elif k == 4:
            doc.edit("rate", edits.set_joint(doc.spec, "J1", rate=(2.5,)))
        else:
            doc.edit("pivot", pivots=doc.pivots + ((0.1 * k, -0.5, 0.0),))
        if k < 7:
            QTimer.singleShot(400, edit)
            return
        print(json.dumps({"last_edit": time.time(), "path": str(doc.path), "dirty": doc.dirty,
                          "mechanism": spec_to_dict(doc.spec), "pivots": [list(p) for p in doc.pivots]}),
              flush=True)

    QTimer.singleShot(0, edit)
    sys.exit(app_main.main([sys.argv[1]]))
""")


def _copy_example(tmp_path, name="parallelogram-fourbar.mech.json"):
    p = tmp_path / name
    p.write_bytes((examples_dir() / name).read_bytes())
    return p


def _ended_owner() -> Owner:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    me = this_process()
    return Owner(p.pid, me.host, me.boot_id, "1")


def test_killed_application_offers_every_edit_back(make_window, qtbot, tmp_path, _recovery_dir):
    """Edit a mechanism, kill -9 the process 6 s after the last edit, restart: the restore
    offer appears and restores every edit."""
    original = _copy_example(tmp_path)
    before = original.read_bytes()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(original)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 180)  # start-up and the edits
        assert ready, "the application printed nothing in 180 s"
        line = proc.stdout.readline()
        assert line, f"the application ended early: {proc.stderr.read()[-2000:]}"
        edited = json.loads(line)
        assert edited["dirty"] and edited["path"] == str(original.resolve())
        time.sleep(max(0.0, edited["last_edit"] + 6.0 - time.time()))
        assert proc.poll() is None, "the application ended by itself"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    files = list(_recovery_dir.glob("recovery-*.json"))
    assert len(files) == 1, files
    assert original.read_bytes() == before  # the user's file was never touched

    win = make_window(gl=False)
    from linkwork.app.qt.recovery import offer_recovery

    dlg = offer_recovery(win)
    assert dlg is not None and dlg.isVisible() and dlg.isModal()
    qtbot.waitExposed(dlg)
    head = dlg.findChild(QLabel, "recoveryHeadline")
    details = dlg.findChild(QLabel, "recoveryDetails")
    saved = time.strftime("%H:%M:%S", time.localtime(read_record(files[0]).saved_at))
    assert "did not close normally" in head.text() and original.name in head.text()
    assert saved in details.text() and re.search(r"\(\d+ s ago\)", details.text())
    assert original.name in details.text() and str(original.resolve().parent) in details.text()
    assert str(files[0]) in dlg.findChild(QLabel, "recoveryFile").text()
    assert read_record(files[0]).owner == this_process()  # claimed while it is offered

    qtbot.mouseClick(dlg.restore_button, Qt.LeftButton)
    doc = win.session.document
    assert doc.spec == spec_from_record(edited["mechanism"])  # every edit ...
    assert doc.pivots == tuple(tuple(p) for p in edited["pivots"])  # ... including the unsaved pivots
    assert doc.spec.name == "crashed four-bar" and doc.spec.body("B").mass == 4.0
    assert doc.spec.joint("J1").rate == (2.5,) and len(doc.pivots) == 3
    assert doc.dirty and win.isWindowModified() and "[*]" in win.windowTitle()
    assert doc.path == original.resolve()
    assert not files[0].exists()  # the crashed copy is gone ...
    assert read_record(win.autosave.store.path).spec == doc.spec  # ... now held by this process

    assert win.save()  # Save goes to the original file
    assert original.read_text() == dumps(spec_from_record(edited["mechanism"]))
    assert not doc.dirty and not win.isWindowModified()
    assert list(_recovery_dir.glob("recovery-*.json")) == []


def test_autosave_in_the_window_and_deleted_on_discarding_close(make_window, qtbot, tmp_path, _recovery_dir,
                                                                monkeypatch):
    win = make_window(gl=False)
    assert win.open_file(_copy_example(tmp_path))
    store = win.autosave.store
    assert store.folder == _recovery_dir
    doc = win.session.document
    t0 = time.monotonic()
    doc.edit("mass", edits.set_body(doc.spec, "A", mass=3.0))
    qtbot.waitUntil(store.path.exists, timeout=5000)
    assert time.monotonic() - t0 < 5.0
    assert read_record(store.path).spec.body("A").mass == 3.0
    # continuous editing is still written within 5 s of the first edit
    t0 = time.monotonic()
    for k in range(14):
        doc.edit("mass", edits.set_body(doc.spec, "A", mass=4.0 + k))
        qtbot.wait(400)
        if read_record(store.path).spec.body("A").mass > 3.0:
            break
    assert time.monotonic() - t0 < 5.5 and read_record(store.path).spec.body("A").mass > 3.0
    from PySide6.QtWidgets import QMessageBox

    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Discard)
    assert win.close()  # "Discard" in the unsaved-changes prompt
    assert not store.path.exists()


def test_offer_discard_deletes_and_a_running_instance_is_left_alone(make_window, qtbot, tmp_path, _recovery_dir):
    doc_file = _copy_example(tmp_path, "loop-4.mech.json")
    from linkwork.app.session.document import MechanismDocument

    edited = MechanismDocument()
    edited.open(doc_file)
    edited.edit("name", edits.set_mechanism(edited.spec, name="left by a crash"))
    crashed = RecoveryStore(_recovery_dir, owner=_ended_owner())
    crashed.save(edited)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        running = RecoveryStore(_recovery_dir, owner=Owner(child.pid, this_process().host))
        running.save(edited)
        win = make_window(gl=False)
        from linkwork.app.qt.recovery import offer_recovery

        dlg = offer_recovery(win)
        assert dlg is not None and dlg.record.file == crashed.path
        qtbot.mouseClick(dlg.discard_button, Qt.LeftButton)
        assert not crashed.path.exists()
        assert running.path.exists()  # another instance's: not offered, not touched
        assert win.session.document.is_empty and not win.session.document.dirty
        assert offer_recovery(win) is None
    finally:
        child.kill()
        child.wait()


def test_a_failed_autosave_warns_once_without_a_dialog(make_window, qtbot, tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x")
    monkeypatch.setenv("LINKWORK_RECOVERY_DIR", str(blocked / "recovery"))
    win = make_window(gl=False)
    win.session.document.replace(g.fourbar())
    doc = win.session.document
    for mass in (2.0, 3.0):
        doc.edit("mass", edits.set_body(doc.spec, "A", mass=mass))
        qtbot.waitUntil(lambda: win.autosave.autosave.failed_once, timeout=5000)
        qtbot.wait(1200)
    warnings = [n for n in win.session.notifications.log if n.source == "autosave"]
    assert len(warnings) == 1 and "Autosave failed" in warnings[0].text
    assert "Autosave failed" in win.message_bar.text()
    assert doc.spec.body("A").mass == 3.0 and doc.dirty
