"""Examples mode in the campaign (DESIGN.md §6): trials on the val split with exact McNemar looks,
and the final measurement on the test split.

The examples file is split once per run (campaign seed, content hashes: independent of line order);
its fingerprint is kept as a blob named in `run.started`, so a resume refuses a changed dataset.
Only aggregate pass rates leave this module: per-example results stay in the ledger's compact form
and expected outputs stay with the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ratchet.core.canonical import digest
from ratchet.core.contract import Contract
from ratchet.core.errors import DataError
from ratchet.core.gate import GateSettings, UnitScore, decide
from ratchet.core.stats.paired import wilson_interval
from ratchet.loop.kernel import Kernel
from ratchet.loop.trial import TrialOutcome
from ratchet.targets.examples import (
    Example,
    ExampleSet,
    Split,
    clamp_looks,
    compare_fingerprints,
    describe_change,
    fingerprint,
    load_examples,
    split_examples,
    val_order,
)
from ratchet.targets.examples_measure import ExampleResult, ExamplesRunner, paired_binary_scores


@dataclass(frozen=True)
class ExampleData:
    """The run's examples: the loaded set (with its warnings) and its dev/val/test split."""

    examples: ExampleSet
    split: Split

    @property
    def fingerprint(self) -> dict[str, list[str]]:
        """Per-split sorted example ids (content hashes)."""
        return fingerprint(self.split)


def load_split(root: Path, contract: Contract) -> ExampleData:
    """Load `target.examples` under the project `root` and split it with the campaign seed.
    Raises DataError (examples.*) for bad data."""
    examples = load_examples(root / (contract.target.examples or ""))
    return ExampleData(examples, split_examples(examples.examples, contract.target.split, contract.campaign.seed))


def check_same_dataset(recorded: dict[str, list[str]], data: ExampleData) -> None:
    """Refuse a resume whose dataset changed. Raises DataError `examples.changed` saying how many
    examples changed in which split."""
    changes = compare_fingerprints(recorded, data.fingerprint)
    if any(changes.values()):
        raise DataError("examples.changed", f"the examples changed since the run started: {describe_change(changes)}",
                        hint="restore the examples file, or start a new run")


def pass_rate(results: Sequence[ExampleResult]) -> dict[str, Any]:
    """{"passes", "n", "rate", "interval"} with the Wilson 95% interval (Wilson 1927)."""
    n = len(results)
    passes = sum(r.passed for r in results)
    low, high = wilson_interval(passes, n)
    return {"passes": passes, "n": n, "rate": passes / n if n else None, "interval": [low, high]}


def per_check_rates(results: Sequence[ExampleResult]) -> dict[str, float]:
    """Pass rate of each check type over the examples where the checks ran."""
    counts: dict[str, list[int]] = {}
    for r in results:
        for check in r.per_check:
            c = counts.setdefault(check.type, [0, 0])
            c[0] += bool(check.passed)
            c[1] += 1
    return {name: passed / n for name, (passed, n) in counts.items() if n}


class ExamplesTrials:
    """Measures examples-mode trials and the final test measurement for one kernel."""

    def __init__(self, kernel: Kernel, data: ExampleData, salt: str, progress=None):
        self.k = kernel
        self.data = data
        self.salt = salt
        self.progress = progress

    def _runner(self) -> ExamplesRunner:
        k = self.k
        return ExamplesRunner(git=k.git, executor=k.executor, target=k.contract.target, project_root=k.loaded.root,
                              sandbox=k.sandbox, work_dir=k.run.root / "work", record=k.record,
                              done=k.state().finished_jobs, exclude=k.contract.hidden_paths, progress=self.progress)

    def final_units(self) -> int:
        """Job-units the final measurement spends: baseline and champion on test, the champion on
        dev and val (reserved from the start, like a benchmark's holdout)."""
        sizes = self.data.split.sizes()
        return 2 * sizes["test"] + sizes["dev"] + sizes["val"]

    def looks(self) -> tuple[int, ...]:
        """gate.units clamped to the val size."""
        return clamp_looks(self.k.contract.gate.units, len(self.data.split.val))

    def _plan(self, stage: str, attempt: int, trial: int, trees: tuple[str, str], order: Sequence[Example],
              looks: tuple[int, ...], level: float) -> None:
        body = {"format": "ratchet.examples-plan/1", "stage": stage, "attempt": attempt, "trial": trial,
                "champion_tree": trees[0], "candidate_tree": trees[1], "looks": list(looks),
                "examples": [e.id for e in order]}
        blob = self.k.blobs.put_json(body)
        self.k.once("trial.planned", {"attempt": attempt, "trial": trial, "stage": stage, "plan_digest": digest(body),
                                      "plan_blob": blob, "level": level, "looks": list(looks),
                                      "jobs": 2 * len(order)}, "attempt", "stage")

    def _first(self, attempt: int, look: int) -> str:
        """Which variant runs first at a look: drawn from the run's salt, never chosen by anyone."""
        bit = int(digest(["ratchet.examples-order", self.salt, attempt, look])[-1], 16) & 1
        return "champion" if bit == 0 else "candidate"

    def trial(self, stage: str, attempt: int, trial: int, champion_tree: str, candidate_tree: str,
              level: float, margin: float) -> TrialOutcome:
        """One paired trial on val, looks of `gate.units` (clamped), exact McNemar through the gate."""
        order = val_order(self.data.split.val, self.k.contract.campaign.seed, trial)
        looks = self.looks()
        self._plan(stage, attempt, trial, (champion_tree, candidate_tree), order[: looks[-1]], looks, level)
        settings = GateSettings(looks=looks, level=level, margin=margin, kind="binary", direction="max",
                                seed=trial)
        trees = {"champion": champion_tree, "candidate": candidate_tree}
        results: dict[str, dict[str, ExampleResult]] = {"champion": {}, "candidate": {}}
        runner, start, retried = self._runner(), 0, set()
        for look, upto in enumerate(looks):
            first = self._first(attempt, look)
            for variant in (first, "candidate" if first == "champion" else "champion"):
                results[variant].update(runner.measure(trees[variant], order[start:upto],
                                                       job_prefix=f"a{attempt:04d}-{stage}-l{look}-{variant}",
                                                       attempt=attempt, stage=stage, variant=variant))
            ids = [e.id for e in order[:upto]]
            decision = decide(self._scores(results, ids, retried), settings)
            if decision.verdict == "continue" and decision.reason == "champion_retry":
                again = [order[u] for u in decision.retry_units]
                prefix = f"a{attempt:04d}-{stage}-l{look}-retry"
                results["champion"].update(runner.measure(champion_tree, again, job_prefix=prefix,
                                                          attempt=attempt, stage=stage, variant="champion"))
                retried |= set(decision.retry_units)
                decision = decide(self._scores(results, ids, retried), settings)
            if decision.verdict != "continue":
                used = order[:upto]
                champ = pass_rate([results["champion"][e.id] for e in used])
                cand = pass_rate([results["candidate"][e.id] for e in used])
                return TrialOutcome(decision, tuple(self._scores(results, ids, retried)), champ["rate"], cand["rate"],
                                    champ["interval"][0], cand["interval"][0])
            start = upto
        raise AssertionError("the gate returned `continue` at the last look")

    @staticmethod
    def _scores(results: dict[str, dict[str, ExampleResult]], ids: list[str], retried: set[int]) -> list[UnitScore]:
        scores = paired_binary_scores(results["champion"], results["candidate"], ids)
        return [replace(s, champion_retried=True) if s.unit in retried else s for s in scores]

    def final(self, baseline_tree: str, champion_tree: str, alpha: float) -> tuple[TrialOutcome, dict[str, Any]]:
        """The final champion against the baseline on test (measured once), plus the champion's
        pass rates on dev, val and test and its per-check rates (for the report)."""
        test = list(self.data.split.test)
        runner = self._runner()
        self._plan("holdout", 0, 0, (baseline_tree, champion_tree), test, (len(test),), alpha)
        base = runner.measure(baseline_tree, test, job_prefix="a0000-holdout-test-baseline", attempt=0,
                              stage="holdout", variant="champion")
        champ = runner.measure(champion_tree, test, job_prefix="a0000-holdout-test-champion", attempt=0,
                               stage="holdout", variant="candidate")
        ids = [e.id for e in test]
        settings = GateSettings(looks=(len(test),), level=alpha, margin=0.0, kind="binary", direction="max", seed=0)
        decision = decide(paired_binary_scores(base, champ, ids), settings)
        splits: dict[str, Any] = {"test": pass_rate([champ[i] for i in ids]),
                                  "test_baseline": pass_rate([base[i] for i in ids])}
        everything = list(champ.values())
        for name in ("dev", "val"):
            part = list(getattr(self.data.split, name))
            if not part:
                continue
            res = runner.measure(champion_tree, part, job_prefix=f"a0000-holdout-{name}-champion", attempt=0,
                                 stage="holdout", variant="candidate")
            splits[name] = pass_rate([res[e.id] for e in part])
            everything += list(res.values())
        splits["per_check"] = per_check_rates(everything)
        outcome = TrialOutcome(decision, (), splits["test_baseline"]["rate"], splits["test"]["rate"])
        return outcome, splits
