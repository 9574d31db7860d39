"""`ratchet verify` on runs made by the real CLI, and on each tampering it must catch: an edited
event, an edited plan, a per-unit result edited with the hash chain re-computed, a report digest, a
signature; plus every attempt kept through `git gc --prune=now`, signed results, private run
directories, and a resume that refuses a plan re-compiling to another digest."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ratchet, rechain
from repo_fixture import git, make_bench_repo

from ratchet.core.canonical import canonical_bytes, digest_bytes
from ratchet.ledger.signing import load_signer

pytestmark = pytest.mark.slow

BUDGET = "\n[budget]\nmax_attempts = 4\n"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One real search campaign (4 attempts, promotions, a holdout) run through the CLI."""
    root = make_bench_repo(tmp_path_factory.mktemp("verify") / "p")
    (root / "ratchet.toml").write_text((root / "ratchet.toml").read_text() + BUDGET)
    git(root, "commit", "-qam", "budget")
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    assert out["result"]["promotions"] >= 1, out
    return root, out["result"]["run_id"]


@pytest.fixture
def copy(campaign: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A private copy of the campaign's project (repository and run directory) to tamper with."""
    root, run_id = campaign
    dest = tmp_path / "p"
    shutil.copytree(root, dest, symlinks=True)
    return dest, run_id


def run_dir(root: Path, run_id: str) -> Path:
    return root / ".ratchet" / "runs" / run_id


def verify(root: Path, run_id: str, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = ratchet("verify", run_id, "--dir", str(root), *extra)
    return code, out


def codes(out: dict[str, Any]) -> set[str]:
    return {f["code"] for f in out["result"]["findings"]}


def test_a_campaign_run_verifies_with_and_without_the_project_key(campaign: tuple[Path, str]):
    root, run_id = campaign
    code, out = verify(root, run_id)
    assert code == 0 and out["ok"], out
    result = out["result"]
    assert result["verified"] and result["findings"] == []
    assert result["checked"]["plans"] >= 2 and result["checked"]["promotions"] >= 1
    assert result["checked"]["signatures"] >= 3
    code, out = verify(root, run_id, "--key", str(root / ".ratchet" / "keys" / "ed25519.pub"))
    assert code == 0, out
    assert out["result"]["warnings"] == []


def test_run_started_records_the_versions_and_the_signing_key(campaign: tuple[Path, str]):
    root, run_id = campaign
    first = json.loads((run_dir(root, run_id) / "events.jsonl").read_bytes().splitlines()[0])
    versions = first["data"]["versions"]
    assert {"ratchet", "python", "platform"} <= set(versions)
    assert first["data"]["signing_key"]["public"] == load_signer(root).public_raw.hex()


def test_an_event_edited_in_place_breaks_the_chain(copy: tuple[Path, str]):
    root, run_id = copy
    events = run_dir(root, run_id) / "events.jsonl"
    lines = events.read_bytes().splitlines()
    lines[3] = lines[3].replace(b'"attempt":1', b'"attempt":9', 1)
    events.write_bytes(b"\n".join(lines) + b"\n")
    code, out = verify(root, run_id)
    assert code == 3 and not out["ok"], out
    assert out["error"]["code"] == "verify.failed"
    assert codes(out) == {"verify.chain"}
    assert out["result"]["findings"][0]["seq"] == 3


def boost(event: dict[str, Any]) -> bool:
    """A rechain edit: one candidate result of attempt 2's trial made 1000."""
    d = event["data"]
    if event["kind"] == "job.finished" and d.get("job_id") == "a0002-trial-u000-candidate":
        d["value"] = 1000.0
        return True
    return False


def test_a_per_unit_result_edited_and_rechained_fails_the_verdict(copy: tuple[Path, str]):
    root, run_id = copy
    rechain(run_dir(root, run_id) / "events.jsonl", boost)
    code, out = verify(root, run_id)
    assert code == 3, out
    assert "verify.verdict" in codes(out)
    # the chain holds, so only the re-derivation (and the signatures over the old chain) can tell
    assert "verify.chain" not in codes(out)
    assert "verify.signature" in codes(out)


def test_forked_workers_find_exactly_what_one_process_finds(copy: tuple[Path, str]):
    from ratchet.commands.verify import verify_run

    root, run_id = copy
    rechain(run_dir(root, run_id) / "events.jsonl", boost)
    alone = verify_run(root, run_id, workers=1)
    forked = verify_run(root, run_id, workers=3)
    assert "verify.verdict" in {f["code"] for f in alone["findings"]}
    assert forked["findings"] == alone["findings"] and forked["checked"] == alone["checked"]


def test_a_plan_edited_with_its_digest_and_rechained_fails_the_recompilation(copy: tuple[Path, str]):
    root, run_id = copy
    blobs = run_dir(root, run_id) / "blobs"

    def other_seed(event: dict[str, Any]) -> bool:
        d = event["data"]
        if event["kind"] != "trial.planned" or d["stage"] != "trial" or d["attempt"] != 1:
            return False
        plan = json.loads((blobs / d["plan_blob"][7:]).read_bytes())
        plan["units"][0] += 1
        for job in plan["jobs"]:
            if job["unit"] == 0:
                job["seed"] += 1
        body = {k: v for k, v in plan.items() if k != "digest"}
        plan["digest"] = digest_bytes(canonical_bytes(body))
        data = canonical_bytes(plan)
        (blobs / digest_bytes(data)[7:]).write_bytes(data)
        d["plan_blob"], d["plan_digest"] = digest_bytes(data), plan["digest"]
        return True

    rechain(run_dir(root, run_id) / "events.jsonl", other_seed)
    code, out = verify(root, run_id)
    assert code == 3
    plan_findings = [f for f in out["result"]["findings"] if f["code"] == "verify.plan"]
    assert plan_findings and "re-compiled" in plan_findings[0]["message"]


@pytest.mark.parametrize("limit, caught", [(1.0, True), (3.0, False)])
def test_gpu_hours_recorded_past_the_recorded_limit_are_caught(copy: tuple[Path, str], limit: float, caught: bool):
    root, run_id = copy
    job = {}

    def two_gpu_hours(event: dict[str, Any]) -> bool:
        d = event["data"]
        if event["kind"] == "run.started":
            d["limits"]["max_gpu_hours"] = limit
            return True
        if event["kind"] == "job.finished" and not d["cached"] and not job:
            d["gpu_s"], job["seq"] = 7200.0, event["seq"]
            return True
        return False

    rechain(run_dir(root, run_id) / "events.jsonl", two_gpu_hours)
    code, out = verify(root, run_id)
    budget = [f for f in out["result"]["findings"] if f["code"] == "verify.budget"]
    if caught:
        assert code == 3 and budget == [{"code": "verify.budget", "seq": job["seq"],
                                         "message": "max_gpu_hours: 2.000 GPU h spent, the limit is 1.000 GPU h"}], out
    else:
        assert budget == [], out


def test_a_plan_blob_edited_in_place_is_a_corrupt_blob(copy: tuple[Path, str]):
    root, run_id = copy
    events = [json.loads(line) for line in (run_dir(root, run_id) / "events.jsonl").read_bytes().splitlines()]
    planned = next(e for e in events if e["kind"] == "trial.planned")
    path = run_dir(root, run_id) / "blobs" / planned["data"]["plan_blob"][7:]
    path.write_bytes(path.read_bytes().replace(b'"stage":"trial"', b'"stage":"trial" '))
    code, out = verify(root, run_id)
    assert code == 3
    assert "verify.blob" in codes(out)
    assert any(f["seq"] == planned["seq"] for f in out["result"]["findings"] if f["code"] == "verify.blob")


def test_an_edited_report_digest_is_caught(copy: tuple[Path, str]):
    root, run_id = copy
    report = run_dir(root, run_id) / "report.md"
    text = report.read_text()
    head = text.split("Ledger head: event ", 1)[1].split("`")[1]
    report.write_text(text.replace(head, "sha256:" + "0" * 64))
    code, out = verify(root, run_id)
    assert code == 3
    assert codes(out) == {"verify.report"}


def test_an_edited_signature_is_caught(copy: tuple[Path, str]):
    root, run_id = copy

    def flip(event: dict[str, Any]) -> bool:
        sig = event["data"].get("signature")
        if event["kind"] != "champion.promoted" or not sig:
            return False
        raw = bytearray(__import__("base64").b64decode(sig["sig"]))
        raw[0] ^= 1
        sig["sig"] = __import__("base64").b64encode(bytes(raw)).decode()
        return True

    rechain(run_dir(root, run_id) / "events.jsonl", flip)
    code, out = verify(root, run_id)
    assert code == 3
    bad = [f for f in out["result"]["findings"] if f["code"] == "verify.signature"]
    assert bad and "champion.promoted" in bad[0]["message"]


def test_a_key_from_elsewhere_does_not_vouch_for_the_run(copy: tuple[Path, str], tmp_path: Path):
    root, run_id = copy
    other = tmp_path / "other"
    other.mkdir()
    load_signer(other)
    code, out = verify(root, run_id, "--key", str(other / ".ratchet" / "keys" / "ed25519.pub"))
    assert code == 3
    assert {"verify.key", "verify.signature"} <= codes(out)


def test_an_unreadable_run_exits_2(copy: tuple[Path, str]):
    root, run_id = copy
    code, out = verify(root, "20200101-000000-none")
    assert code == 2 and out["error"]["code"] == "run.not_found"
    (run_dir(root, run_id) / "contract.toml").unlink()
    code, out = verify(root, run_id)
    assert code == 2 and out["error"]["code"] == "verify.no_contract"


def test_every_attempt_survives_gc_and_reports(copy: tuple[Path, str]):
    root, run_id = copy
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    refs = git(root, "for-each-ref", "--format=%(refname)", f"refs/ratchet/{run_id}/attempts/").split()
    assert len(refs) == 4, refs
    for n in range(1, 5):
        code, out, err = ratchet("report", run_id, "--dir", str(root), "--attempt", str(n))
        assert code == 0, err
        r = out["result"]
        assert r["tree_present"] and r["ref_commit"], r
        assert r["diff"] and "params.toml" in r["diff"]
        assert r["report"] and r["stages"]["trial"]["verdict"] in ("accepted", "rejected")
        assert git(root, "cat-file", "-t", r["tree"]) == "tree"
    code, out, _ = ratchet("report", run_id, "--dir", str(root), "--attempt", "99")
    assert code == 2 and out["error"]["code"] == "attempt.not_found"


def test_run_directories_are_private_and_the_key_is_the_owners(campaign: tuple[Path, str]):
    root, run_id = campaign
    run = run_dir(root, run_id)
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    for sub in ("blobs", "jobs"):
        assert stat.S_IMODE((run / sub).stat().st_mode) == 0o700
    for path in [run / "events.jsonl", run / "contract.toml", *list((run / "blobs").iterdir())[:5]]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    key = root / ".ratchet" / "keys" / "ed25519.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert not any(p.name.endswith(".pem") for p in run.rglob("*"))
    assert b"PRIVATE KEY" not in (run / "report.md").read_bytes()


def test_verify_is_built(campaign: tuple[Path, str]):
    proc = subprocess.run([sys.executable, "-m", "ratchet", "--help"], capture_output=True, text=True)
    line = next(line for line in proc.stdout.splitlines() if "verify" in line)
    assert "not built" not in line


def test_a_resume_whose_plan_recompiles_differently_is_refused(tmp_path: Path):
    root = make_bench_repo(tmp_path / "p")
    (root / "ratchet.toml").write_text((root / "ratchet.toml").read_text() + BUDGET)
    git(root, "commit", "-qam", "budget")
    env = {**os.environ, "RATCHET_TEST_CRASH_AT": "after:trial.planned:1"}  # SIGKILL: no JSON line
    proc = subprocess.run([sys.executable, "-m", "ratchet", "run", str(root), "--json"], env=env, capture_output=True)
    assert proc.returncode == -9, proc.stderr
    run_id = next(p.name for p in (root / ".ratchet" / "runs").iterdir())

    def other_salt(event: dict[str, Any]) -> bool:
        if event["kind"] != "run.started":
            return False
        event["data"]["salt"] = "f" * 32
        return True

    rechain(run_dir(root, run_id) / "events.jsonl", other_salt)
    (run_dir(root, run_id) / "index.sqlite").unlink()
    code, out, err = ratchet("run", str(root), "--resume", run_id)
    assert code == 2, err
    assert out["error"]["code"] == "plan.digest_mismatch"
    assert "re-compiles to" in out["error"]["message"]


def test_an_error_in_a_forked_worker_reaches_the_caller_whole():
    from ratchet.commands.verify import fork_map
    from ratchet.core.errors import DataError

    def work(i: int) -> int:
        if i == 1:
            raise DataError("verify.no_contract", "worker 1 cannot read it", hint="a hint")
        return i

    with fork_map(lambda i: i * 10, 3) as calls:
        assert calls.results() == [0, 10, 20]
    with fork_map(work, 2) as calls, pytest.raises(DataError) as caught:
        calls.results()
    assert (caught.value.code, caught.value.message, caught.value.hint) == ("verify.no_contract",
                                                                             "worker 1 cannot read it", "a hint")
