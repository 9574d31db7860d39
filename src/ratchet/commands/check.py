"""`ratchet check`: what a run would do, computed without running anything expensive.

The result is a plain dict (the `--json` result); `render.render_check` shows it to people.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet.core.budget import worst_case_units
from ratchet.core.contract import Contract
from ratchet.core.contract_load import load_contract
from ratchet.core.unsupported import unsupported_settings


def check_report(directory: Path) -> dict[str, Any]:
    """Load and validate the contract in `directory`; return a summary dict with keys
    contract, target, scope, agent, gate, budget, sandbox, warnings, unsupported, plus
    `scope_imports` (benchmark) or `examples` (examples).

    Raises ContractError (exit 2) for an invalid contract.
    """
    loaded = load_contract(directory)
    contract = loaded.contract
    warnings = list(loaded.warnings)
    gate = gate_summary(contract)
    warnings.extend(gate.pop("warnings"))
    sandbox = sandbox_summary(contract)
    if sandbox.get("warning"):
        warnings.append(sandbox["warning"])
    worst = worst_case_units(contract)
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
    if contract.target.kind == "examples":
        extra["examples"] = examples_summary(contract, loaded.root, gate["levels"][0]["level"])
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
                   "worst_case_units": worst_case_units(contract)},
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


def gate_summary(contract: Contract) -> dict[str, Any]:
    """The gate's settings plus each trial's level and whether the exact test can reach it."""
    from ratchet.core.stats.multiplicity import level_schedule

    gate = contract.gate
    kind = "binary" if contract.target.kind == "examples" else "continuous"
    rows = [r.to_json() for r in level_schedule(
        gate.alpha, gate.multiplicity, contract.budget.max_attempts, tuple(gate.units), kind, gate.min_effect)]
    warnings = []
    unreachable = [r for r in rows if not r["reachable"]]
    if unreachable:
        first = unreachable[0]
        warnings.append(
            f"from trial {first['trial']} on, the level ({first['level']:.2g}) is below the smallest p-value "
            f"the exact test can produce with gate.units = {list(gate.units)} "
            f"({first['min_p_last']:.2g}): those trials can never accept; add units or lower budget.max_attempts"
        )
    late = [r for r in rows if r["reachable"] and not r["reachable_first"]]
    if late:
        warnings.append(
            f"from trial {late[0]['trial']} on, the first look ({gate.units[0]} units) cannot stop for efficacy "
            "(its threshold is below the smallest p-value it can produce): those trials run at least two looks"
        )
    return {
        **gate.model_dump(),
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
        summary["warning"] = ("jobs will run without a sandbox (no isolation from your files and network): "
                              "they can read the project's signing key (.ratchet/keys/ed25519.pem) and sign results "
                              "as this project (docs/verify.md)")
    return summary


def examples_summary(contract: Contract, root: Path, first_level: float) -> dict[str, Any]:
    """Split sizes, duplicates dropped, the smallest pass-rate gain val can detect at the first
    trial's level with 80% power, `check_errors` (per check, the examples it can never judge: see
    targets.examples.never_judged), and warnings (small splits, an unreachable gate.target,
    examples that will always be a check_error, JSON text held in strings under json_equality).
    Raises DataError (examples.*) for a bad examples file."""
    from ratchet.targets.examples import (
        MAX_LINES_LISTED,
        clamp_looks,
        json_text_strings,
        load_examples,
        mde_binary,
        never_judged,
        split_examples,
        split_warnings,
        target_unreachable,
    )

    data = load_examples(root / (contract.target.examples or ""))
    split = split_examples(data.examples, contract.target.split, contract.campaign.seed)
    looks = clamp_looks(contract.gate.units, len(split.val))
    mde = mde_binary(looks[-1], first_level)
    warnings = list(data.warnings) + split_warnings(split)
    unreachable = target_unreachable(contract.gate.target, len(split.val))
    if unreachable:
        warnings.append(unreachable)
    checks = contract.target.checks or []
    check_errors = never_judged(data.examples, checks)
    for finding in check_errors:
        warnings.append(
            f"{finding['count']} example(s) will always be a check_error for check {finding['check'] + 1} "
            f"({finding['type']}; lines {_lines(finding['lines'], finding['count'])}): {finding['reason']}")
    as_strings = json_text_strings(data.examples, checks)
    if as_strings:
        warnings.append(
            f"{len(as_strings)} expected output(s) are JSON strings holding JSON text (lines "
            f"{_lines(as_strings[:MAX_LINES_LISTED], len(as_strings))}): json_equality compares them as "
            "strings; to expect the array, object or number itself, write it without the quotes "
            "(see docs/examples-checks.md)")
    return {
        "total": len(data), "duplicates_dropped": len(data.dropped_lines), **split.sizes(),
        "looks": list(looks), "mde_first_trial": None if mde == float("inf") else mde,
        "confirm_applies": False, "check_errors": check_errors, "warnings": warnings,
    }


def _lines(shown: list[int], total: int) -> str:
    text = ", ".join(str(n) for n in shown)
    return text + (f" and {total - len(shown)} more" if total > len(shown) else "")
