"""`ratchet watch` started before its run can be read (a `ratchet run` still starting up) waits for
it, at most a bounded time, saying so; a new run that is starting is waited for instead of showing
the previous one."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import ratchet, set_contract
from repo_fixture import make_bench_repo
from rich.console import Console

from ratchet.commands.watch import _RunWaiter, await_run, ready_run, run_facts
from ratchet.core.errors import DataError
from ratchet.ledger.lock import RunLock
from ratchet.ledger.project_lock import ACTIVE_DIR

WAIT_S = 120.0
"""How long a test lets watch wait for a real `ratchet run` to appear (a generous bound, not a timing claim)."""


def _console() -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, width=200), text


def _project_lock(root: Path) -> RunLock:
    active = root / ".ratchet" / ACTIVE_DIR
    active.mkdir(parents=True, exist_ok=True)
    return RunLock(active)


@pytest.mark.slow
def test_live_watch_started_before_the_run_waits_for_it_then_shows_it(tmp_path: Path, small_run: str):
    root = make_bench_repo(tmp_path / "repo")
    set_contract(root, append=small_run + '\n[sandbox]\nmode = "none"\n')
    console, text = _console()
    found: dict = {}
    waiter = threading.Thread(target=lambda: found.update(run=await_run(root, None, console, WAIT_S)))
    waiter.start()
    run = None
    try:
        while "waiting for a run to start" not in text.getvalue():
            assert waiter.is_alive(), text.getvalue()
            waiter.join(0.05)
        run = subprocess.Popen([sys.executable, "-m", "ratchet", "run", str(root), "--json"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        waiter.join(WAIT_S)
        assert not waiter.is_alive() and found.get("run") is not None, text.getvalue()
        assert run_facts(found["run"])["target_kind"] == "benchmark"  # it waited for run.started too
    finally:
        if run is not None:
            run.terminate()
            run.wait(60)
    assert str(root) in text.getvalue()


def test_live_watch_gives_up_after_its_wait_with_run_not_found(tmp_path: Path):
    console, text = _console()
    with pytest.raises(DataError) as info:
        await_run(tmp_path, None, console, 1.5)
    assert info.value.code == "run.not_found" and "within 1.5 s" in info.value.message
    assert "ratchet run" in (info.value.hint or "") and "waiting up to 1.5 s" in text.getvalue()


def test_a_run_starting_is_waited_for_instead_of_the_previous_one(finished_run, tmp_path: Path):
    root, old = finished_run
    shutil.copytree(root / ".ratchet", tmp_path / ".ratchet")
    assert ready_run(tmp_path, None).run_id == old  # nothing starting: the latest run is shown
    lock = _project_lock(tmp_path)
    with lock:  # what a `ratchet run` holds while it checks the project, before its run directory exists
        assert ready_run(tmp_path, None) is None
        assert ready_run(tmp_path, old).run_id == old  # asked by id: that run
        code, out, _ = ratchet("watch", "--once", "--dir", str(tmp_path))  # --once reads what is there
        assert code == 0 and out["result"]["run_id"] == old
    assert ready_run(tmp_path, None).run_id == old


def test_the_wait_ends_when_the_starting_run_gave_up_before_its_run_appeared(tmp_path: Path):
    waiter = _RunWaiter(tmp_path, None)
    lock = _project_lock(tmp_path)
    with lock:
        assert waiter() is None
    with pytest.raises(DataError) as info:
        waiter()
    assert info.value.code == "run.not_found" and "ended before its run started" in info.value.message


def test_watch_on_a_missing_directory_says_so_at_once(tmp_path: Path):
    code, out, _ = ratchet("watch", "--dir", str(tmp_path / "nope"))
    assert code == 2 and out["error"]["code"] == "project.no_dir"
