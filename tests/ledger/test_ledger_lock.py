"""The run lock: one writer per run, held across processes, released by death (real processes)."""

from __future__ import annotations

import os
import signal

import pytest

from ratchet.core.errors import LedgerError
from ratchet.ledger.lock import RunLock, acquire_lock, is_locked

HOLDER = """
import sys, time
from ratchet.ledger.lock import acquire_lock
lock = acquire_lock(sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""


def start_holder(spawn, run_dir):
    child = spawn(HOLDER, str(run_dir.root))
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_writer_is_refused_naming_the_holder_pid(run_dir, spawn):
    child = start_holder(spawn, run_dir)
    with pytest.raises(LedgerError) as caught:
        acquire_lock(run_dir.root)
    assert caught.value.code == "ledger.locked"
    assert f"pid {child.pid}" in caught.value.message
    assert f"kill {child.pid}" in caught.value.hint
    assert run_dir.lock_pid.read_text() == f"{child.pid}\n"


def test_status_probe_reports_the_holder_without_taking_the_lock(run_dir, spawn):
    child = start_holder(spawn, run_dir)
    for _ in range(20):
        assert is_locked(run_dir.root) == child.pid
    with pytest.raises(LedgerError):
        acquire_lock(run_dir.root)
    assert child.poll() is None


def test_the_lock_is_released_when_its_holder_is_killed(run_dir, spawn):
    child = start_holder(spawn, run_dir)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert is_locked(run_dir.root) is None
    with acquire_lock(run_dir.root) as lock:
        assert lock.held
        assert is_locked(run_dir.root) == os.getpid()
        assert run_dir.lock_pid.read_text() == f"{os.getpid()}\n"
    assert not run_dir.lock_pid.exists()
    assert is_locked(run_dir.root) is None


def test_two_locks_in_one_process_exclude_each_other(run_dir):
    first = RunLock(run_dir.root).acquire()
    with pytest.raises(LedgerError) as caught:
        RunLock(run_dir.root).acquire()
    assert caught.value.code == "ledger.locked"
    assert f"pid {os.getpid()}" in caught.value.message
    first.release()
    first.release()  # a second release is a no-op
    RunLock(run_dir.root).acquire().release()


def test_a_run_never_locked_is_not_locked(run_dir):
    assert is_locked(run_dir.root) is None
    assert not run_dir.lock.exists()


def test_a_held_lock_with_an_unreadable_pid_is_still_held(run_dir):
    with acquire_lock(run_dir.root):
        run_dir.lock_pid.unlink()
        assert is_locked(run_dir.root) == 0
