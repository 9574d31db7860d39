"""The one place a run's Target is built from the contract (`target.kind`)."""

from __future__ import annotations

from pathlib import Path

from ratchet.compute.base import SandboxSpec
from ratchet.core.contract import Contract
from ratchet.targets.base import Target
from ratchet.targets.examples import ExampleData
from ratchet.targets.prompt_solution import Judge


def make_target(contract: Contract, root: Path, sandbox: SandboxSpec, salt: str,
                data: ExampleData | None = None, judge: Judge | None = None) -> Target:
    """The target of a run: a benchmark, or examples on `data` (required for kind examples), answered
    by a script or, for a prompt solution, by the eval model (`judge`: its llm_judge checks' judge).
    Raises ValueError when an examples target has no data."""
    if contract.target.kind == "examples":
        from ratchet.targets.examples_target import ExamplesTarget

        if data is None:
            raise ValueError("an examples target needs its loaded examples")
        if contract.target.solution_kind == "prompt":
            from ratchet.targets.prompt_solution import PromptTarget

            return PromptTarget(contract, sandbox, salt, data.split, root, judge=judge)
        return ExamplesTarget(contract, sandbox, salt, data.split, root)
    from ratchet.targets.benchmark import BenchmarkTarget

    return BenchmarkTarget(contract, sandbox, salt)
