"""`ratchet verify` on a 100,000-event run: how long the offline check of a large run takes.

The run is built by the real parts without running jobs: a benchmark contract (gate.units 10/20/40,
confirm), BenchmarkTarget plans (blobs, digests), `job.finished` records carrying seeded synthetic
metric values, decisions walked look by look through `core.gate.decide` as loop/trial.measure_looks walks
them, promotions, the holdout, and the signed events of a project key: a run `ratchet verify` must
pass in full (every plan re-compiled, every verdict re-derived, every signature checked). Timed as
a subprocess (`ratchet verify RUN --dir PROJECT --key PUB --json`), interpreter start included, with
`python -c pass` on the same machine in the same run as the unit of comparison.

    python benchmarks/verify_costs.py [--events 100000] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PYTHON, save, table  # noqa: E402

EVENTS = 100_000
TARGET_VERIFY_S = 10.0
RUN_ID = "20260101-000000-verify"
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CONTRACT = """\
[campaign]
name = "bench"
seed = 0

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "score"
direction = "max"

[scope]
allowed = ["params.toml"]

[agent]
kind = "search"

[agent.search]
file = "params.toml"

[agent.search.space]
x = { type = "float", low = -5.0, high = 5.0 }

[gate]
units = [10, 20, 40]

[budget]
max_attempts = 5000
"""


class Builder:
    """Appends signed events to a run directory as the kernel would (see the module docstring)."""

    def __init__(self, root: Path, seed: int):
        from ratchet.compute.base import SandboxSpec
        from ratchet.core.contract_load import parse_contract
        from ratchet.ledger.blobs import BlobStore
        from ratchet.ledger.events import EventLog
        from ratchet.ledger.rundir import RunDir
        from ratchet.ledger.signing import load_signer
        from ratchet.targets.benchmark import BenchmarkTarget

        self.run = RunDir(root, RUN_ID).create()
        self.run.contract.write_text(CONTRACT)
        self.contract = parse_contract(CONTRACT)
        self.signer = load_signer(root)
        self.log = EventLog.open(self.run.events)
        self.blobs = BlobStore(self.run.blobs)
        self.rng = random.Random(seed)
        self.salt = f"{self.rng.getrandbits(128):032x}"
        self.target = BenchmarkTarget(self.contract, SandboxSpec(mode="none", network=False), self.salt)
        self.tick = 0
        self.history: list[str] = []  # each finished attempt's outcome (multiplicity.LevelOutcome)

    def record(self, kind: str, data: dict[str, Any]) -> None:
        """Append one event as the kernel does: signed where signed, its payload checked."""
        from ratchet.core.payloads import check_payload
        from ratchet.ledger.signing import SIGNED_KINDS

        if kind in SIGNED_KINDS:
            data = self.signer.sign(kind, self.log.last_seq + 1, self.log.last_digest, data)
        check_payload(kind, data)
        self.tick += 1
        self.log.append(kind, data, START + dt.timedelta(milliseconds=10 * self.tick))  # type: ignore[arg-type]

    def tree(self) -> str:
        return f"{self.rng.getrandbits(160):040x}"

    def measure(self, plan: Any, effect: float) -> dict[str, Any]:
        """Job events for `plan` look by look, and the decision (as measure_looks reaches it)."""
        from ratchet.core.gate import decide
        from ratchet.loop.trial import settings_for, unit_scores
        from ratchet.targets.base import UnitResult

        settings = settings_for(plan, self.target, plan_level(self, plan), 0.0)
        results: dict[str, UnitResult] = {}
        for look, upto in enumerate(plan.looks):
            for job in plan.jobs_for_look(look):
                base = random.Random(job.seed).gauss(0.0, 1.0)
                value = base + (effect if job.variant == "candidate" else 0.0) + self.rng.gauss(0.0, 0.3)
                common = {"job_id": job.job_id, "attempt": plan.attempt, "stage": plan.stage,
                          "variant": job.variant, "unit": job.unit}
                self.record("job.started", {**common, "external_id": "1", "backend": "local", "pid": 1})
                self.record("job.finished", {**common, "seed": job.seed, "state": "ok", "value": value,
                                             "reason": "", "elapsed_s": 0.5, "cpu_s": 0.4, "cached": False,
                                             "units_charged": 1})
                results[job.job_id] = UnitResult(job.job_id, job.variant, job.unit, value, False, "ok", "")
            decision = decide(unit_scores(plan, results, {}, upto), settings)
            if decision.verdict != "continue":
                scores = unit_scores(plan, results, {}, upto)
                champ, _ = self.target.summary([s.champion for s in scores])
                cand, _ = self.target.summary([s.candidate for s in scores])
                data = {"attempt": plan.attempt, "stage": plan.stage, **decision.to_json(),
                        "champion_mean": champ, "candidate_mean": cand}
                self.record("trial.judged", data)
                return data
        raise AssertionError("unreachable")

    def stage(self, stage: str, attempt: int, trial: int, champion: str, candidate: str, units_used: int,
              effect: float) -> dict[str, Any]:
        plan = self.target.plan(stage, attempt, trial, champion, candidate,  # type: ignore[arg-type]
                                self.target.looks(stage, units_used))  # type: ignore[arg-type]
        blob = self.blobs.put_bytes(plan.canonical_bytes())
        self.record("trial.planned", {"attempt": attempt, "trial": trial, "stage": stage, "plan_digest": plan.digest,
                                      "plan_blob": blob, "level": plan_level(self, plan), "margin": 0.0,
                                      "looks": list(plan.looks), "jobs": len(plan.jobs)})
        return self.measure(plan, effect)


def plan_level(b: Builder, plan: Any) -> float:
    """The level loop/campaign.py grants the stage: alpha for the holdout, else the attempt's trial
    or confirmation level (stats.multiplicity.attempt_levels) from what the earlier attempts did."""
    from ratchet.core.stats.multiplicity import attempt_levels

    gate = b.contract.gate
    if plan.stage == "holdout":
        return gate.alpha
    levels = attempt_levels(gate.alpha, gate.multiplicity, plan.attempt, b.contract.budget.max_attempts,
                            b.history[:plan.attempt - 1], confirm=gate.confirm)
    return levels.confirm if plan.stage == "confirm" else levels.trial


def build_run(root: Path, n_events: int, seed: int = 0) -> dict[str, int]:
    """A verifiable run of about `n_events` events under `root`; returns counts."""
    from ratchet.core.budget import recorded_limits
    from ratchet.core.events import LEDGER_FORMAT

    b = Builder(root, seed)
    baseline = b.tree()
    b.record("run.started", {"ledger_format": LEDGER_FORMAT, "run_id": RUN_ID, "contract_digest": "sha256:" + "0" * 64,
                             "baseline": {"commit": "0" * 40, "tree": baseline}, "salt": b.salt, "sandbox": "none",
                             "target_kind": "benchmark", "direction": "max", "limits": recorded_limits(b.contract),
                             "holdout_reserve": 120, "signing_key": b.signer.public_record()})
    champion, attempt, promotions = baseline, 0, 0
    while b.log.last_seq < n_events - 400 and attempt < b.contract.budget.max_attempts:
        attempt += 1
        candidate = b.tree()
        b.record("attempt.started", {"attempt": attempt})
        b.record("attempt.submitted", {"attempt": attempt, "tree": candidate, "summary": "x",
                                       "report_blob": b.blobs.put_bytes(f"attempt {attempt}".encode()),
                                       "params": None, "invalid": None, "diff_blob": None})
        effect = 2.0 if b.rng.random() < 0.03 else b.rng.uniform(-1.0, 0.1)
        b.history.append("not_promoted")  # until promoted below
        judged = b.stage("trial", attempt, attempt, champion, candidate, 0, effect)
        if judged["verdict"] != "accepted":
            continue
        confirm = b.stage("confirm", attempt, attempt, champion, candidate, judged["units"], effect)
        if confirm["verdict"] != "accepted":
            continue
        b.history[-1] = "promoted"
        b.record("champion.promoted", {"attempt": attempt, "commit": "1" * 40, "tree": candidate,
                                       "estimate": confirm["estimate"], "interval": confirm["interval"],
                                       "mean": confirm.get("candidate_mean"), "lcb": confirm.get("candidate_lcb"),
                                       "branch": f"ratchet/{RUN_ID}/champion"})
        champion, promotions = candidate, promotions + 1
    if promotions:
        b.stage("holdout", 0, 0, baseline, champion, 0, 0.0)
    b.record("run.stopped", {"stop_reason": "budget_exhausted", "budget": "max_attempts", "detail": None})
    b.log.close()
    return {"events": b.log.last_seq + 1, "attempts": attempt, "promotions": promotions}


def median_wall_s(argv: list[str], repeats: int) -> tuple[float, float, dict[str, Any] | None]:
    """(median wall s, median CPU s (user + sys) of the child, its last JSON output) of `argv`. The
    CPU seconds are what the run costs whatever else shares the machine."""
    import resource

    walls, cpus, out = [], [], None
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if proc.stdout.strip():
            out = json.loads(proc.stdout)
    return statistics.median(walls), statistics.median(cpus), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("--quick", action="store_true", help="10,000 events, one repeat")
    args = parser.parse_args()
    n = 10_000 if args.quick else args.events
    repeats = 1 if args.quick else 3
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-verify-", dir=shm) as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        counts = build_run(root, n)
        build_s = time.perf_counter() - start
        pass_s, _, _ = median_wall_s([str(PYTHON), "-c", "pass"], 5)
        argv = [str(PYTHON.parent / "ratchet"), "verify", RUN_ID, "--dir", str(root), "--key",
                str(root / ".ratchet" / "keys" / "ed25519.pub"), "--json"]
        verify_s, verify_cpu_s, out = median_wall_s(argv, repeats)
        size_mb = (root / ".ratchet" / "runs" / RUN_ID / "events.jsonl").stat().st_size / 2**20
    if out is None or not out.get("ok"):
        raise SystemExit(f"verify did not pass on the built run: {json.dumps(out)[:2000]}")
    checked = out["result"]["checked"]
    rows = [(f"**{counts['events']:,} events** ({size_mb:.1f} MiB; {counts['attempts']:,} attempts, "
             f"{counts['promotions']} promotions)", f"{checked['plans']:,}", f"{checked['verdicts']:,}",
             f"{checked['signatures']:,}", f"**{verify_s:.2f}**", f"{verify_cpu_s:.2f}", f"{verify_s / pass_s:.0f}x",
             f"{'met' if verify_s < TARGET_VERIFY_S else 'missed'} (< {TARGET_VERIFY_S:.0f} s)")]
    body = (f"Target: a {EVENTS:,}-event run verifies in under {TARGET_VERIFY_S:.0f} s. Median of {repeats} runs; "
            f"`python -c pass` took {pass_s * 1000:.0f} ms (median of 5) on this machine in this run. The run was "
            f"built in {build_s:.0f} s by the real plan, gate and signing code (see the script's docstring).\n\n"
            + table(["run", "plans re-compiled", "verdicts re-derived", "signatures", "wall s", "CPU s",
                     "x `python -c pass`", "target"], rows))
    save("verify_costs" + ("-quick" if args.quick else ""), "`ratchet verify` on a large run", body)


if __name__ == "__main__":
    main()
