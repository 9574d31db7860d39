"""`ratchet verify` on an examples campaign (val trials, the test split measured once at the end)
and on a `ratchet compare` run, both made by the real CLI; and a test example slipped into a trial's
plan (re-digested and re-chained) is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ratchet
from repo_fixture import git, make_bench_repo, make_examples_repo
from test_verify import codes, rechain, run_dir, verify

from ratchet.core.canonical import canonical_bytes, digest_bytes

pytestmark = pytest.mark.slow



def test_an_examples_campaign_verifies_and_a_test_example_in_a_trial_is_caught(tmp_path: Path):
    root = make_examples_repo(tmp_path / "r", words=60)
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    assert out["result"]["promotions"] == 1
    run_id = out["result"]["run_id"]
    code, out = verify(root, run_id, "--key", str(root / ".ratchet" / "keys" / "ed25519.pub"))
    assert code == 0, out
    assert out["result"]["checked"]["plans"] >= 3  # two or three trials and the holdout

    events = [json.loads(line) for line in (run_dir(root, run_id) / "events.jsonl").read_bytes().splitlines()]
    holdout = next(e for e in events if e["kind"] == "trial.planned" and e["data"]["stage"] == "holdout")
    blobs = run_dir(root, run_id) / "blobs"
    test_id = json.loads((blobs / holdout["data"]["plan_blob"][7:]).read_bytes())["units"][0]

    def peek_at_test(event: dict[str, Any]) -> bool:
        d = event["data"]
        if event["kind"] != "trial.planned" or d["stage"] != "trial" or d["attempt"] != 2:
            return False
        plan = json.loads((blobs / d["plan_blob"][7:]).read_bytes())
        old = plan["units"][0]
        plan["units"][0] = test_id
        for job in plan["jobs"]:
            if job.get("key") == old:
                job["key"] = test_id
        plan["digest"] = digest_bytes(canonical_bytes({k: v for k, v in plan.items() if k != "digest"}))
        data = canonical_bytes(plan)
        (blobs / digest_bytes(data)[7:]).write_bytes(data)
        d["plan_blob"], d["plan_digest"] = digest_bytes(data), plan["digest"]
        return True

    rechain(run_dir(root, run_id) / "events.jsonl", peek_at_test)
    code, out = verify(root, run_id)
    assert code == 3
    assert {"verify.plan", "verify.holdout"} <= codes(out), out["result"]["findings"]


def test_a_compare_run_verifies(tmp_path: Path):
    root = make_bench_repo(tmp_path / "p")
    (root / "params.toml").write_text("x = 2.0\n")
    git(root, "commit", "-qam", "closer")
    code, out, err = ratchet("compare", "HEAD~1", "HEAD", "--dir", str(root))
    assert code == 0, err
    code, out = verify(root, out["result"]["run_id"])
    assert code == 0, out
