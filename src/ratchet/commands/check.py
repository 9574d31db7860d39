"""`ratchet check`: what a run would do, computed without running anything expensive.

The result is a plain dict (the `--json` result); `render.render_check` shows it to people.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ratchet.compute.base import SandboxSpec
from ratchet.core.budget import worst_case
from ratchet.core.contract import Contract
from ratchet.core.contract_load import load_contract
from ratchet.core.unsupported import unsupported_settings
from ratchet.targets.examples import ExampleData

CHECK_SALT = "ratchet-check"
"""The salt of the target `check` builds: it only reads looks and reserves, no unit is drawn."""


def check_report(directory: Path) -> dict[str, Any]:
    """Load and validate the contract in `directory`; return a summary dict with keys
    contract, target, scope, agent, gate, budget, sandbox, warnings, unsupported, plus
    `scope_imports` (benchmark) or `examples` (examples).

    The looks and the worst-case budget are the run's own: the target is built as `ratchet run`
    builds it (an examples target's looks are clamped to the val split and its reserve is
    2 x test + dev + val). Raises ContractError (exit 2) for an invalid contract, DataError
    (examples.*) for a bad examples file.
    """
    from ratchet.commands.run import load_examples_data
    from ratchet.targets.factory import make_target

    loaded = load_contract(directory)
    contract = loaded.contract
    data = load_examples_data(loaded)
    target = make_target(contract, loaded.root, SandboxSpec(), CHECK_SALT, data)
    looks = target.looks("trial")
    warnings = list(loaded.warnings)
    gate = gate_summary(contract, looks)
    warnings.extend(gate.pop("warnings"))
    sandbox = sandbox_summary(contract)
    if sandbox.get("warning"):
        warnings.append(sandbox["warning"])
    worst = worst_case(looks[-1], target.confirms, target.reserve_units(), contract.budget.max_attempts)
    if contract.budget.max_evaluations and worst["per_trial"] + worst["holdout"] > contract.budget.max_evaluations:
        warnings.append(
            f"budget.max_evaluations = {contract.budget.max_evaluations} cannot fit one trial's worst case "
            f"({worst['per_trial']} job-units) plus the holdout's reserve ({worst['holdout']}): the run would stop "
            "before its first trial; raise it or use fewer gate.units"
        )
    extra: dict[str, Any] = {}
    if contract.target.kind == "benchmark":
        extra["scope_imports"] = scope_import_summary(contract, loaded.root)
        warnings.extend(_scope_import_warning(extra["scope_imports"]))
    if data is not None:
        extra["examples"] = examples_summary(contract, data, gate["levels"][0]["level"], looks)
        warnings.extend(extra["examples"].pop("warnings"))
    return {
        **extra,
        "contract": str(loaded.path),
        "digest": loaded.digest,
        "campaign": contract.campaign.model_dump(),
        "target": contract.target.model_dump(exclude_none=True),
        "scope": {
            "allowed": list(contract.scope.allowed),
            "protected": list(contract.protected_paths),
            "hidden": list(contract.hidden_paths),
        },
        "agent": {"kind": contract.agent.kind, **_agent_detail(contract)},
        "gate": gate,
        "budget": {**contract.budget.model_dump(), "max_wall_s": contract.budget.max_wall_s,
                   "worst_case_units": worst},
        "sandbox": sandbox,
        "warnings": warnings,
        "unsupported": [e.to_json() for e in unsupported_settings(contract)],
    }


def scope_import_summary(contract: Contract, root: Path) -> list[dict[str, str]]:
    """The imports of modules in `scope.allowed` by a `python FILE` benchmark (transitively):
    [{"importer", "module", "allowed"}] (see targets.imports.scope_imports)."""
    from ratchet.targets.imports import scope_imports

    found = scope_imports(contract.target.command or "", root, contract.scope.allowed)
    return [{"importer": f.importer, "module": f.module, "allowed": f.allowed} for f in found]


def _scope_import_warning(found: list[dict[str, str]]) -> list[str]:
    if not found:
        return []
    what = ", ".join(f"{f['importer']} imports {f['module']} (scope.allowed {f['allowed']!r})" for f in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return [f"the benchmark runs code a candidate may change inside its own process: {what}{more}. Scope "
            "protects files, not a process: that code can change what the benchmark prints. Run candidate "
            "code in a subprocess and compute the metric in the protected benchmark (docs/threat-model.md)"]


def _agent_detail(contract: Contract) -> dict[str, Any]:
    section = getattr(contract.agent, contract.agent.kind)
    return section.model_dump() if section is not None else {}


def gate_summary(contract: Contract, looks: Sequence[int]) -> dict[str, Any]:
    """The gate's settings plus, per trial, its level, what each of the `looks` (the target's trial
    looks) can stop for (`stops`: core.reach.LookStop, "futility only" for a look that cannot stop
    for efficacy) and whether the exact test can reach the level; warnings (core.reach) when trials
    can never accept, or when their first look can only stop for futility."""
    from ratchet.core.reach import level_rows, look_stops, reach_warnings, score_kind

    gate = contract.gate
    kind = score_kind(contract)
    rows = []
    for row in level_rows(contract, looks):
        rows.append({**row.to_json(), "stops": list(look_stops(row.level, looks, kind, gate.min_effect))})
    warnings = reach_warnings(contract, looks)
    late = [r for r in rows if r["reachable"] and not r["reachable_first"]]
    if late:
        warnings.append(
            f"from trial {late[0]['trial']} on, the first look ({looks[0]} units) is futility only: its "
            "threshold is below the smallest p-value it can produce, so those trials run at least two looks"
        )
    return {
        **gate.model_dump(),
        "looks": list(looks),
        "holdout_size": gate.holdout_size,
        "kind": kind,
        "levels": rows,
        "warnings": warnings,
    }


def sandbox_summary(contract: Contract) -> dict[str, Any]:
    """Whether bubblewrap works here and what `sandbox.mode` will resolve to."""
    from ratchet.compute.sandbox import probe_bwrap

    status = probe_bwrap()
    mode = contract.sandbox.mode
    resolved = "bwrap" if status.available and mode != "none" else "none"
    summary: dict[str, Any] = {
        "mode": mode,
        "resolved": resolved,
        "available": status.available,
        "detail": status.reason,
        "network": contract.sandbox.network,
    }
    if mode == "bwrap" and not status.available:
        summary["warning"] = (f"sandbox.mode = 'bwrap' but bubblewrap does not work here ({status.reason}): "
                              "run will refuse")
    elif mode == "none" or resolved == "none":
        summary["warning"] = "jobs will run without a sandbox (no isolation from your files and network)"
    return summary


def examples_summary(contract: Contract, data: ExampleData, first_level: float,
                     looks: Sequence[int]) -> dict[str, Any]:
    """Split sizes, duplicates dropped, the looks on val (`looks`: gate.units clamped to the val
    split), the smallest pass-rate gain val can detect at the first trial's level with 80% power,
    `check_errors` (per check, the examples it can never judge: see targets.examples.never_judged),
    and warnings (small splits, an unreachable gate.target, examples that will always be a
    check_error, JSON text held in strings under json_equality)."""
    from ratchet.targets.examples import (
        MAX_LINES_LISTED,
        json_text_strings,
        mde_binary,
        never_judged,
        split_warnings,
        target_unreachable,
    )

    examples, split = data.examples, data.split
    mde = mde_binary(looks[-1], first_level)
    warnings = list(examples.warnings) + split_warnings(split)
    unreachable = target_unreachable(contract.gate.target, len(split.val))
    if unreachable:
        warnings.append(unreachable)
    checks = contract.target.checks or []
    check_errors = never_judged(examples.examples, checks)
    for finding in check_errors:
        warnings.append(
            f"{finding['count']} example(s) will always be a check_error for check {finding['check'] + 1} "
            f"({finding['type']}; lines {_lines(finding['lines'], finding['count'])}): {finding['reason']}")
    as_strings = json_text_strings(examples.examples, checks)
    if as_strings:
        warnings.append(
            f"{len(as_strings)} expected output(s) are JSON strings holding JSON text (lines "
            f"{_lines(as_strings[:MAX_LINES_LISTED], len(as_strings))}): json_equality compares them as "
            "strings; to expect the array, object or number itself, write it without the quotes "
            "(see docs/examples-checks.md)")
    return {
        "total": len(examples), "duplicates_dropped": len(examples.dropped_lines), **split.sizes(),
        "looks": list(looks), "mde_first_trial": None if mde == float("inf") else mde,
        "confirm_applies": False, "check_errors": check_errors, "warnings": warnings,
    }


def _lines(shown: list[int], total: int) -> str:
    text = ", ".join(str(n) for n in shown)
    return text + (f" and {total - len(shown)} more" if total > len(shown) else "")
