"""The kernel's reads of its own ledger: `state()` folds only when the ledger grew, `find`/`once`
see every event recorded before them, on a real run directory."""

from __future__ import annotations

from pathlib import Path

from ratchet.commands.run import open_project
from ratchet.core.payloads import AttemptGaveUp, AttemptStarted
from ratchet.core.state import fold
from ratchet.ledger.events import read_events
from ratchet.loop.campaign import start_record
from ratchet.loop.kernel import new_kernel


def test_state_is_folded_again_after_each_new_event_and_equals_a_fresh_fold(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    try:
        start_record(kernel, salt, git.head_commit(), git.tree_of("HEAD"), 0)
        first = kernel.state()
        assert kernel.state() is first  # nothing recorded in between: the same state
        kernel.record(AttemptStarted(attempt=1))
        second = kernel.state()
        assert second.last_attempt == 1 and first.last_attempt == 0
        assert second == fold(read_events(kernel.run.events))
    finally:
        kernel.close()


def test_find_and_once_see_events_recorded_after_an_earlier_find(bench_repo: Path):
    loaded, git = open_project(bench_repo)
    kernel, salt = new_kernel(loaded)
    try:
        start_record(kernel, salt, git.head_commit(), git.tree_of("HEAD"), 0)
        assert kernel.find("attempt.started", attempt=1) is None
        one = kernel.once(AttemptStarted(attempt=1), "attempt")
        assert kernel.once(AttemptStarted(attempt=1), "attempt") == one  # not recorded twice
        kernel.record(AttemptGaveUp(attempt=1, reason="first", stops_campaign=False))
        kernel.record(AttemptStarted(attempt=2))
        kernel.record(AttemptGaveUp(attempt=2, reason="second", stops_campaign=False))
        assert kernel.find("attempt.started", attempt=2).seq == one.seq + 2
        assert kernel.find("attempt.gave_up").payload.reason == "second"  # the last of its kind
        assert kernel.find("attempt.gave_up", attempt=1).payload.reason == "first"
        assert kernel.find("attempt.gave_up", attempt=3) is None
        kinds = [e.kind for e in read_events(kernel.run.events)]
        assert kinds.count("attempt.started") == 2
    finally:
        kernel.close()
