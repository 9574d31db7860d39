"""`ratchet check`: what a run would do, computed without running anything expensive.

The result is a plain dict (the `--json` result); `render.render_check` shows it to people.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ratchet.commands.project import check_project
from ratchet.compute.base import SandboxSpec
from ratchet.core.budget import worst_case
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.inputs import uncommitted_warning, working_tree_inputs
from ratchet.core.unsupported import unsupported_settings
from ratchet.ledger.rundir import RATCHET_DIR, ensure_ratchet_dir
from ratchet.targets.examples import ExampleData
from ratchet.workspace.git import Git

CHECK_SALT = "ratchet-check"
"""The salt of the target `check` builds: it only reads looks and reserves, no unit is drawn."""


def check_report(directory: Path, preflight: bool = False) -> dict[str, Any]:
    """Load and validate the contract in `directory`, refuse what `ratchet run` would refuse (with
    the same errors: `commands.project.check_project`), and return a summary dict with keys
    contract, target, scope, agent, gate, budget, sandbox, compute
    (backend, jobs_at_once, why it is below max_parallel: `compute.factory.check_compute`), inputs,
    warnings, unsupported (always empty: an unsupported setting is refused), `scope_imports` and
    `detectable` (benchmark) or `examples` (examples), and, with `preflight`, `preflight`: the
    baseline measured once, as `ratchet run` does before spending any budget (in the sandbox when
    it is used).

    The looks and the worst-case budget are the run's own: the target is built as `ratchet run`
    builds it (an examples target's looks are clamped to the val split, its reserve is
    2 x test + dev + val, and each attempt of an agent that reads history adds |dev|).

    Raises ContractError / UnsupportedError / DataError / GitError / SandboxError (exit 2), and
    MeasurementError `preflight.no_metric` when the preflight measures nothing.
    """
    from ratchet.commands.run import load_examples_data
    from ratchet.compute.factory import check_compute
    from ratchet.loop.agents import reads_history
    from ratchet.targets.factory import make_target

    loaded, git = check_project(directory)
    contract = loaded.contract
    at_once = check_compute(contract.compute)
    data = load_examples_data(loaded)
    target = make_target(contract, loaded.root, SandboxSpec(), CHECK_SALT, data)
    looks = target.looks("trial")
    warnings = list(loaded.warnings)
    stale = uncommitted_warning(git.changed_paths(), contract)
    if stale:
        warnings.append(stale)
    if at_once.why:
        warnings.append(at_once.why)
    polls = slurm_poll_summary(contract) if contract.compute.backend == "slurm" else None
    if polls is not None and (clamped := polls.pop("warning")):
        warnings.append(clamped)
    gate = gate_summary(contract, looks)
    warnings.extend(gate.pop("warnings"))
    sandbox = sandbox_summary(contract)
    if sandbox.get("warning"):
        warnings.append(sandbox["warning"])
    environment = environment_summary(contract, sandbox["resolved"], loaded.root)
    warnings.extend(environment.pop("warnings"))
    dev = len(target.dev_jobs(0, "")) if reads_history(contract) else 0  # each candidate on dev (examples)
    worst = worst_case(looks[-1], target.confirms, target.reserve_units(), contract.budget.max_attempts, dev)
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
        extra["detectable"] = detectable_summary(loaded, git.tree_of(git.head_commit()), sandbox["resolved"])
        calibration = extra["detectable"]["calibration"] or {}
        if calibration.get("ignored"):
            warnings.append(calibration["ignored"])
        if calibration.get("skew_warning"):
            warnings.append(calibration["skew_warning"])
    if data is not None:
        extra["examples"] = examples_summary(contract, data, gate["levels"][0]["level"], looks)
        warnings.extend(extra["examples"].pop("warnings"))
    if preflight:
        extra["preflight"] = _preflight(loaded, git)
    agent = {"kind": contract.agent.kind, **_agent_detail(contract)}
    if contract.agent.kind == "command":
        agent.update(command_agent_summary(contract, preflight))
        warnings.extend(agent.pop("warnings"))
    return {
        **extra,
        "inputs": {"working_tree": list(working_tree_inputs(contract)), "head": "everything else"},
        "contract": str(loaded.path),
        "digest": loaded.digest,
        "campaign": contract.campaign.model_dump(),
        "target": contract.target.model_dump(exclude_none=True),
        "scope": {
            "allowed": list(contract.scope.allowed),
            "protected": list(contract.protected_paths),
            "hidden": list(contract.hidden_paths),
        },
        "agent": agent,
        "gate": gate,
        "budget": {**contract.budget.model_dump(), "max_wall_s": contract.budget.max_wall_s,
                   "worst_case_units": worst},
        "sandbox": sandbox,
        "compute": {"backend": contract.compute.backend, "jobs_at_once": at_once.count, "why": at_once.why,
                    **({"polls": polls} if polls is not None else {})},
        "environment": environment,
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


def detectable_summary(loaded: LoadedContract, head_tree: str, sandbox_mode: str) -> dict[str, Any]:
    """What the gate can detect on a benchmark: {"calibration": the stored calibration with the current
    gate's detectable gains (commands.calibrate.stored_calibration; None without one), "in_paired_sd":
    the detectable gains in units of the paired difference's SD (margin 0), what is known without one}."""
    from ratchet.commands.calibrate import effects_for, stored_calibration

    in_sd = effects_for(loaded.contract, 1.0, "continuous", 0.0, None)
    return {"calibration": stored_calibration(loaded, head_tree, sandbox_mode), "in_paired_sd": in_sd,
            "guardrails": guardrail_detectable(loaded.contract, in_sd)}


def guardrail_detectable(contract: Contract, in_sd: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per [[gate.guardrails]] entry: {"name", "allowance" (max_regression, metric units; None when only
    the relative allowance is set: it needs the preflight), "detectable_sd" (D: the change, in paired
    SDs of the guardrail, that the first trial's last look shows with the stated power), "max_sd"
    (allowance / D: the guardrail's paired SD up to which an unchanged guardrail is shown within its
    allowance with that power; None without an absolute allowance)}. The guardrail's test is the
    primary's shifted by the allowance, so D is the primary's detectable gain at margin 0."""
    levels = in_sd.get("levels") or []
    looks = levels[0]["looks"] if levels else []
    d = looks[-1]["detectable"] if looks else None
    out = []
    for g in contract.gate.guardrails:
        allowance = g.max_regression or None
        out.append({"name": g.metric, "allowance": allowance, "detectable_sd": d,
                    "max_sd": allowance / d if allowance and d else None})
    return out


def _preflight(loaded: LoadedContract, git: Git) -> dict[str, Any]:
    """Measure HEAD's tree once as a run's preflight would: {"commit", "state", "value", "reason"};
    on Slurm first ask the scheduler whether the jobs' shape can run (`slurm_shape_preflight`).
    Raises MeasurementError `preflight.no_metric` / `preflight.sandbox_only` when it measures
    nothing, SchedulerError `slurm.unschedulable` when no node can run a job."""
    from ratchet.commands.preflight import measure_baseline, preflight_error
    from ratchet.compute.env import sandbox_spec
    from ratchet.compute.sandbox import resolve_mode

    ensure_ratchet_dir(loaded.root)
    if loaded.contract.compute.backend == "slurm":
        slurm_shape_preflight(loaded)
    commit = git.head_commit()
    if loaded.contract.target.kind != "benchmark":
        return {"commit": commit, "state": "skipped", "value": None,
                "reason": "examples targets are checked example by example when the run starts"}
    c = loaded.contract
    sandbox = sandbox_spec(c.sandbox, resolve_mode(c.sandbox.mode), c.target.command, loaded.root)
    tree = git.tree_of(commit)
    m, tail = measure_baseline(loaded, git, tree, sandbox)
    if m.failed:
        raise preflight_error(loaded, git, tree, sandbox, m, tail)
    return {"commit": commit, "state": m.state, "value": m.value, "reason": m.reason}


def slurm_poll_summary(contract: Contract) -> dict[str, Any]:
    """The Slurm poll intervals a run will use, as the executor decides them
    (`SlurmExecutor.poll_bounds`: [compute.slurm] poll_min_s / poll_max_s kept at or below half the
    cluster's MinJobAge): {"min_s", "max_s", "min_job_age_s" (None: not read), "warning"}. The
    warning says when the contract's intervals are clamped, and why: without accounting, a task
    ending between two polls further apart than MinJobAge is forgotten by the controller before
    it is seen; or that MinJobAge could not be read (scontrol did not answer)."""
    from ratchet.compute.slurm_calls import Scheduler, SchedulerError
    from ratchet.compute.slurm_states import min_job_age_s, poll_bounds, poll_ceiling_s

    s = contract.compute.slurm
    try:
        age = min_job_age_s(Scheduler().call("config", ["scontrol", "show", "config"]))
    except SchedulerError as exc:
        return {"min_s": s.poll_min_s, "max_s": s.poll_max_s, "min_job_age_s": None,
                "warning": f"the Slurm controller's MinJobAge could not be read ({exc.message}): a run keeps "
                           "compute.slurm.poll_max_s below half of it when it can"}
    low, high = poll_bounds(s.poll_min_s, s.poll_max_s, poll_ceiling_s(age))
    warning = None
    if (low, high) != (s.poll_min_s, s.poll_max_s):
        warning = (f"compute.slurm.poll_max_s is {s.poll_max_s:g} s (poll_min_s {s.poll_min_s:g} s) but the cluster "
                   f"forgets an ended job MinJobAge = {age:g} s after it ends (no accounting is read): a task ending "
                   f"between two polls could be forgotten before it is seen, so the run polls every {high:g} s at "
                   f"most; set poll_max_s <= {high:g} to say so in the contract")
    return {"min_s": low, "max_s": high, "min_job_age_s": age, "warning": warning}


def slurm_shape_preflight(loaded: LoadedContract) -> None:
    """Ask the Slurm scheduler (`sbatch --test-only`, nothing queued) whether a job of the
    contract's shape ([compute] resources, the target's timeout, [compute.slurm]) can run.
    Raises SchedulerError `slurm.unschedulable` naming the scheduler's answer and the options."""
    from ratchet.compute.factory import job_resources
    from ratchet.compute.slurm import SchedulerError, SlurmExecutor

    c = loaded.contract
    executor = SlurmExecutor(loaded.root / RATCHET_DIR / "preflight", 1, c.compute.slurm)
    problem = executor.shape_problem(job_resources(c.compute), c.target.timeout_s)
    if problem is not None:
        raise SchedulerError(
            "slurm.unschedulable", f"the Slurm scheduler cannot run a job of this contract's shape: {problem}",
            hint="lower compute.cpus_per_job / memory_mb_per_job / gpus_per_job, or fix [compute.slurm] partition, "
                 "account, qos and extra_args (see `scontrol show partition` and `scontrol show node`)")


def command_agent_summary(contract: Contract, preflight: bool) -> dict[str, Any]:
    """A command agent's CLI as a leg will run it (agents.command.probe.program_summary): "program",
    "bound", "will_run", and with `preflight` "version" (`<program> --version` in the agent's
    sandbox: probe.version_probe); "warnings" when it will not run or the probe failed."""
    from ratchet.agents.command.probe import program_summary, version_probe

    cfg = contract.agent.command
    assert cfg is not None
    summary = program_summary(cfg, contract.sandbox.read_only)
    if preflight and summary["will_run"] is not False:
        version = summary["version"] = version_probe(cfg, contract.sandbox.read_only)
        if not version["ok"]:
            summary["warnings"].append(
                f"`{' '.join(version['argv'])}` failed in the agent's sandbox (exit code {version['exit_code']}): "
                f"{version['output'] or '(no output)'}")
    return summary


def _agent_detail(contract: Contract) -> dict[str, Any]:
    section = getattr(contract.agent, contract.agent.kind)
    return section.model_dump() if section is not None else {}


def gate_summary(contract: Contract, looks: Sequence[int]) -> dict[str, Any]:
    """The gate's settings plus, per trial, its level, what each of the `looks` (the target's trial
    looks) can stop for (`stops`: core.reach.LookStop, "futility only" for a look that cannot stop
    for efficacy) and whether the exact test can reach the level; warnings (core.reach) when trials
    can never accept, or when their first look can only stop for futility; the guarantee of the test
    in use, and what the units cannot see: the chance that a failure mode of frequency q shows on
    none of them, and the frequency they rule out at 95%; `betting_cost` (core.reach.betting_cost):
    with a floor declared and another test in use, what the floor test would need, else None."""
    from ratchet.core.reach import betting_cost, level_rows, look_stops, reach_warnings, score_kind
    from ratchet.core.stats.guarantee import guarantee, ruled_out_frequency, unseen_chance

    gate = contract.gate
    kind = score_kind(contract)
    rows = []
    schedule = level_rows(contract, looks)
    for row in schedule:
        rows.append({**row.to_json(), "stops": list(look_stops(row.level, looks, kind, gate.min_effect))})
    warnings = reach_warnings(contract, looks)
    late = [r for r in rows if r["reachable"] and not r["reachable_first"]]
    if late:
        warnings.append(
            f"from trial {late[0]['trial']} on, the first look ({looks[0]} units) is futility only: its "
            "threshold is below the smallest p-value it can produce, so those trials run at least two looks"
        )
    n = looks[-1]
    return {
        **gate.model_dump(),
        "looks": list(looks),
        "holdout_size": gate.holdout_size,
        "kind": kind,
        "guarantee": guarantee(_examples_test(contract) if kind == "binary" else gate.test),
        "unseen": {"units": n, "unseen_5pct": unseen_chance(0.05, n), "unseen_10pct": unseen_chance(0.10, n),
                   "ruled_out_95": ruled_out_frequency(n)},
        "levels": rows,
        "betting_cost": betting_cost(contract, looks, schedule[0].level) if schedule else None,
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
    if resolved == "none":  # (mode bwrap without a working bwrap was refused by check_project)
        summary["warning"] = ("jobs will run without a sandbox (no isolation from your files and network): "
                              "they can read the project's signing key (.ratchet/keys/ed25519.pem) and sign results "
                              "as this project (docs/verify.md)")
    return summary


def environment_summary(contract: Contract, resolved: str, root: Path | None = None) -> dict[str, Any]:
    """What a job's environment will be (see `core.jobenv`): {"path": PATH entries in order,
    "dropped": Ratchet's venv bin directory left out (None: none), "programs": the job's `python3`
    and the command's program as that PATH finds them, with the prefixes the sandbox binds for
    them (`compute.job_programs.JobPrograms.to_json`), "hidden_in_sandbox": PATH entries a
    sandboxed job cannot see (empty without the sandbox), "read_only", "read_only_missing",
    "pass_env": {"set", "not_set"}, "warnings"}. root: the project root (a command's first word
    relative to it)."""
    from ratchet.compute.env import default_path, passed_env, ratchet_venv_bin
    from ratchet.compute.job_programs import job_programs
    from ratchet.compute.sandbox import visible_paths
    from ratchet.core.jobenv import outside, path_entries

    s = contract.sandbox
    path = default_path(s.keep_ratchet_venv)
    entries = path_entries(path)
    programs = job_programs(contract.target.command, path, root)
    hidden = outside(entries, visible_paths([*programs.binds(), *s.read_only])) if resolved == "bwrap" else []
    missing = [p for p in s.read_only if not Path(p).exists()]
    passed = passed_env(s.pass_env)
    not_set = [n for n in s.pass_env if n not in passed]
    warnings = []
    if hidden:
        warnings.append(f"PATH entries a sandboxed job cannot see: {', '.join(hidden)} (programs a job runs from "
                        "there are not found in its sandbox, except python3 and the command's own program, whose "
                        "installs are bound; add what they need to sandbox.read_only. A command agent's own program "
                        "is found and bound by itself: see agent above)")
    if missing:
        warnings.append(f"sandbox.read_only paths that do not exist here: {', '.join(missing)}")
    for reach in programs.reaches:
        if reach.problem:
            warnings.append(f"a job's {reach.word} will not run: {reach.problem} (jobs find programs on the PATH "
                            "Ratchet was started with, less Ratchet's own venv)")
    if not_set:
        warnings.append(f"sandbox.pass_env names variables not set here (not passed): {', '.join(not_set)}")
    venv = ratchet_venv_bin()
    return {
        "path": entries,
        "dropped": venv if venv and not s.keep_ratchet_venv else None,
        "programs": programs.to_json(),
        "hidden_in_sandbox": hidden,
        "read_only": list(s.read_only),
        "read_only_missing": missing,
        "pass_env": {"set": sorted(passed), "not_set": not_set},
        "warnings": warnings,
    }


def examples_summary(contract: Contract, data: ExampleData, first_level: float,
                     looks: Sequence[int]) -> dict[str, Any]:
    """Split sizes, duplicates dropped, the looks on val (`looks`: gate.units clamped to the val
    split), `promotions_room` (how many promotions val has room for: its blocks of looks[-1]
    examples, targets.examples.val_blocks), the smallest pass-rate gain val can detect at the first
    trial's level with 80% power,
    `check_errors` (per check, the examples it can never judge: see targets.examples.never_judged),
    and warnings (small splits, an unreachable gate.target, examples that will always be a
    check_error, JSON text held in strings under json_equality)."""
    from ratchet.targets.examples import (
        MAX_LINES_LISTED,
        json_text_strings,
        never_judged,
        split_warnings,
        target_unreachable,
        val_blocks,
    )

    examples, split = data.examples, data.split
    from ratchet.core.stats.power import mde_binary

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
        "looks": list(looks), "promotions_room": len(val_blocks(split.val, contract.campaign.seed, looks[-1])),
        "mde_first_trial": None if mde == float("inf") else mde,
        "confirm_applies": False, "check_errors": check_errors, "warnings": warnings,
    }

def _lines(shown: list[int], total: int) -> str:
    text = ", ".join(str(n) for n in shown)
    return text + (f" and {total - len(shown)} more" if total > len(shown) else "")


def _examples_test(contract: Contract) -> str:
    """The test an examples gate uses: `binary` (exact McNemar), or `betting` (the floor test) on the
    pass fractions of a prompt solution asking several samples per example (docs/prompts.md)."""
    model = contract.target.model
    return "betting" if contract.target.solution_kind == "prompt" and model is not None and model.samples > 1 \
        else "binary"
