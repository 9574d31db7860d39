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
