"""A campaign on the real one-node Slurm cluster decides as the local backend does: two copies of
one project, the same run salt (so the same unit seeds), the cache off, one run per backend."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import events, ratchet, set_contract


def _cluster_problem() -> str | None:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "Slurm client commands not found (run `make slurm-up`)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo did not answer: {exc}"
    if proc.returncode != 0 or not any(s.startswith(("idle", "mix", "alloc")) for s in proc.stdout.splitlines()):
        return "no Slurm cluster reachable (run `make slurm-up`)"
    return None


PROBLEM = _cluster_problem()
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.skipif(PROBLEM is not None, reason=PROBLEM or "")]

SETTINGS = ("[gate]\nunits = [4, 8]\nholdout_units = 4\n\n[budget]\nmax_attempts = 2\n\n"
            "[compute]\nbackend = \"{backend}\"\nmax_parallel = 2\n{slurm}")
SALT = "0123456789abcdef0123456789abcdef"


def _decisions(root: Path, backend: str) -> list[tuple]:
    slurm = "[compute.slurm]\npoll_min_s = 0.2\npoll_max_s = 2.0\n" if backend == "slurm" else ""
    set_contract(root, replace={"timeout_s = 60": "timeout_s = 60\ncache = false"},
                 append=SETTINGS.format(backend=backend, slurm=slurm))
    code, out, err = ratchet("run", str(root), env={"RATCHET_TEST_SALT": SALT}, timeout=900)
    assert code == 0, err
    evs = events(root, out["result"]["run_id"])
    started = [e["data"] for e in evs if e["kind"] == "job.started"]
    assert started and all(d["backend"] == backend for d in started)
    return [(d["attempt"], d["stage"], d["verdict"], d["reason"], d["units"], round(d["estimate"] or 0.0, 9))
            for d in (e["data"] for e in evs if e["kind"] == "trial.judged")]


def test_the_same_campaign_decides_the_same_on_slurm_and_locally(make_repo, tmp_path: Path):
    local = _decisions(make_repo(tmp_path / "local"), "local")
    on_slurm = _decisions(make_repo(tmp_path / "slurm"), "slurm")
    assert local and on_slurm == local


SHAPE = ("[compute]\nbackend = \"slurm\"\n{compute}\n[compute.slurm]\npoll_min_s = 0.2\npoll_max_s = 2.0\n{slurm}\n"
         "[sandbox]\nmode = \"none\"\n")


def test_check_preflight_names_a_job_shape_the_cluster_cannot_run(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, append=SHAPE.format(compute="cpus_per_job = 64", slurm=""))
    code, out, err = ratchet("check", str(root), "--preflight", timeout=120)
    assert code == 2 and out["error"]["code"] == "slurm.unschedulable", err
    assert "--cpus-per-task=64" in out["error"]["message"] and "not available" in out["error"]["message"]
    code, out, err = ratchet("check", str(root), timeout=120)
    assert code == 0, "without --preflight the scheduler is not asked"


def test_a_run_whose_jobs_can_never_start_stops_with_the_reason(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    # one node: --nodes=2 is accepted (EnforcePartLimits=NO) and would pend with PartitionNodeLimit forever
    set_contract(root, append=SHAPE.format(compute="", slurm="extra_args = [\"--nodes=2\"]"))
    code, out, err = ratchet("run", str(root), timeout=180)
    assert code == 2 and "PartitionNodeLimit" in out["error"]["message"], (code, out, err)
    assert "compute.cpus_per_job" in out["error"]["hint"]
    finished = [e["data"] for e in events(root, sorted((root / ".ratchet" / "runs").iterdir())[-1].name)
                if e["kind"] == "job.finished"]
    assert finished and finished[0]["state"] == "unschedulable" and "PartitionNodeLimit" in finished[0]["reason"]


def test_check_says_when_polls_are_clamped_below_min_job_age(make_repo, tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    set_contract(root, append=SHAPE.format(compute="", slurm="").replace("poll_max_s = 2.0", "poll_max_s = 150.0"))
    code, out, err = ratchet("check", str(root), timeout=120)
    assert code == 0, err
    report = out["result"]
    age = report["compute"]["polls"]["min_job_age_s"]
    assert age and report["compute"]["polls"]["max_s"] == age / 2, report["compute"]
    assert any("MinJobAge" in w and "forgotten before it is seen" in w for w in report["warnings"]), report["warnings"]
