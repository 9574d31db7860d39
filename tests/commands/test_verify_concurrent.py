"""`ratchet verify` re-derives the levels of attempts that overlap from the ledger's order
(docs/gate.md, "Several attempts at once"). A real run (attempt 1 a trial, 2 no_change, 3 a trial)
has its events re-ordered, re-levelled where the rule says so, re-chained and re-signed with the
project's key, as a campaign running attempts at once would have recorded them:

- attempt 2 is decided (no_change) while attempt 1's agent still works, so 1's trial, planned
  after, claims 2's credit and 3's trial gets its base weight alone: the levels verify;
- attempt 2's decision is recorded after attempt 3's trial was planned, while 3's recorded level
  still holds 2's credit: that credit was not yet released, and verify says so."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from helpers import ratchet, use_files_agent
from repo_fixture import make_bench_repo

from ratchet.core.canonical import digest_bytes
from ratchet.core.events import GENESIS_PREV, encode_event
from ratchet.core.stats.multiplicity import campaign_weight
from ratchet.ledger.signing import SIGNED_KINDS, load_signer

pytestmark = pytest.mark.slow

ALPHA, ATTEMPTS = 0.05, 3
CONTRACT = f"\n[gate]\nunits = [8]\nholdout_units = 8\n\n[budget]\nmax_attempts = {ATTEMPTS}\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[dict[str, Any]]]:
    """A real sequential run: attempt 1 a clear loss (x = -2), 2 the champion's own tree, 3 a loss."""
    root = make_bench_repo(tmp_path_factory.mktemp("concurrent") / "p")
    use_files_agent(root, {"1-worse": "x = -2.0\n", "2-same": "x = 0.0\n", "3-worse": "x = -1.5\n"}, CONTRACT)
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    run_id = out["result"]["run_id"]
    events = [json.loads(line) for line in (root / ".ratchet/runs" / run_id / "events.jsonl").read_text().splitlines()]
    judged = {(e["data"]["attempt"], e["data"]["stage"]): e["data"] for e in events if e["kind"] == "trial.judged"}
    assert judged[2, "trial"]["reason"] == "no_change"
    assert judged[1, "trial"]["reason"] == judged[3, "trial"]["reason"] == "not_significant"  # p = 1 at any level
    return root, run_id, events


def share(*attempts: int) -> float:
    return math.fsum(ALPHA * campaign_weight(t, ATTEMPTS) for t in attempts)


def level(*attempts: int) -> float:
    """The trial's level of a share (confirmation on: its square root)."""
    return share(*attempts) ** 0.5


def write(root: Path, run_id: str, events: list[dict[str, Any]]) -> None:
    """The events as the ledger, in this order: seq renumbered, timestamps kept in place, the hash
    chain recomputed and the signed kinds signed again with the project's key."""
    signer = load_signer(root)
    stamps = sorted(e["ts"] for e in events)
    prev, lines = GENESIS_PREV, []
    for seq, (event, ts) in enumerate(zip(events, stamps, strict=True)):
        data = signer.sign(event["kind"], seq, prev, event["data"]) if event["kind"] in SIGNED_KINDS else event["data"]
        line = encode_event(seq, ts, event["kind"], prev, data)
        lines.append(line)
        prev = digest_bytes(line)
    (root / ".ratchet/runs" / run_id / "events.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def relevel(events: list[dict[str, Any]], attempt: int, new: float) -> None:
    """Attempt `attempt`'s trial planned and judged at level `new` (one look: its threshold is the
    level; p = 1 rejects at any level, so the rest of the verdict stands)."""
    for e in events:
        d = e["data"]
        if e["kind"] in ("trial.planned", "trial.judged") and d.get("attempt") == attempt and d["stage"] == "trial":
            old = d["level"]
            d["level"] = new
            if e["kind"] == "trial.judged":
                d["threshold"] = new
                d["reason_text"] = d["reason_text"].replace(f"threshold {old:.3g}", f"threshold {new:.3g}")


def moved(events: list[dict[str, Any]], pick: Any, before: Any) -> list[dict[str, Any]]:
    """`events` with those `pick` accepts moved, in order, to just before the first `before` accepts."""
    taken = [e for e in events if pick(e)]
    rest = [e for e in events if not pick(e)]
    at = next(i for i, e in enumerate(rest) if before(e))
    return rest[:at] + taken + rest[at:]


def of(attempt: int, *kinds: str) -> Any:
    return lambda e: e["kind"] in kinds and e["data"].get("attempt") == attempt


def findings(root: Path, run_id: str) -> list[dict[str, Any]]:
    code, out, err = ratchet("verify", run_id, "--dir", str(root))
    assert code in (0, 3), err
    return out["result"]["findings"]


def test_the_recorded_sequential_run_has_todays_levels(run) -> None:
    _, _, events = run
    planned = {e["data"]["attempt"]: e["data"]["level"] for e in events if e["kind"] == "trial.planned"}
    assert planned == {1: pytest.approx(level(1)), 3: pytest.approx(level(3, 2))}


def test_a_credit_released_before_an_earlier_attempts_planning_goes_to_it(run, tmp_path: Path) -> None:
    import shutil

    root, run_id, recorded = run
    copy = tmp_path / "p"
    shutil.copytree(root, copy, symlinks=True)
    events = json.loads(json.dumps(recorded))
    # attempt 2 starts while attempt 1's agent works, and is decided before 1's trial is planned
    events = moved(events, of(2, "attempt.started", "attempt.submitted", "trial.judged"), of(1, "attempt.submitted"))
    events = moved(events, of(1, "attempt.started"), of(2, "attempt.started"))
    order = [(e["kind"], e["data"].get("attempt")) for e in events if e["kind"] != "job.started"
             and e["kind"] != "job.finished"]
    assert order.index(("trial.judged", 2)) < order.index(("trial.planned", 1)) < order.index(("trial.planned", 3))
    relevel(events, 1, level(1, 2))  # 1 claims 2's credit
    relevel(events, 3, level(3))  # nothing left for 3
    write(copy, run_id, events)
    found = findings(copy, run_id)
    # report.md still quotes the head and signature of the ledger as first written
    assert {f["code"] for f in found} == {"verify.report"}, found


def test_a_level_holding_a_credit_not_yet_released_is_found(run, tmp_path: Path) -> None:
    import shutil

    root, run_id, recorded = run
    copy = tmp_path / "p"
    shutil.copytree(root, copy, symlinks=True)
    events = json.loads(json.dumps(recorded))
    # attempt 2's no_change recorded only after attempt 3's trial was planned: 3's level (base 3 +
    # 2's credit, as recorded) spends a credit that was still pending
    events = moved(events, of(2, "trial.judged"), lambda e: e["kind"] == "job.started" and e["data"]["attempt"] == 3)
    write(copy, run_id, events)
    found = findings(copy, run_id)
    levels = [f for f in found if f["code"] == "verify.level"]
    assert len(levels) == 1 and "trial of attempt 3" in levels[0]["message"], found
    assert {f["code"] for f in found} == {"verify.level", "verify.report"}, found
