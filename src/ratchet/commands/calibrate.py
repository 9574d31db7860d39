"""`ratchet calibrate [DIR]`: measure the champion's noise and say what the gate can detect through it.

Benchmark targets: the champion (HEAD's tree, or `--rev`) is measured on N seeds twice each, as a
run of its own kind (`run.started` data.mode `calibrate`, jobs of stage `calibrate`, `run.stopped`
stop reason `calibrated` with the result in data.calibration), never cached (a cached repeat would
show no noise). The two repeats of a seed run back to back, like the two sides of a trial's unit.
The spreads (core.stats.calibration) are kept in `.ratchet/calibration.json`, from which
`ratchet check` shows the detectable effects of the contract's current gate.

Examples targets run nothing: the val split's size fixes what the exact McNemar test can detect.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ratchet.commands.run import open_project
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import DataError
from ratchet.core.gate_design import margin_for
from ratchet.core.stats.calibration import (
    DEFAULT_POWER,
    MIN_SEEDS,
    Noise,
    aa_skewness,
    granted_trials,
    level_effects,
    units_for_effect,
)
from ratchet.core.stats.multiplicity import trial_level
from ratchet.core.stats.paired import Kind
from ratchet.core.stats.skew import skew_warning
from ratchet.ledger.files import write_exclusive
from ratchet.ledger.project_lock import sole_run
from ratchet.ledger.rundir import RATCHET_DIR
from ratchet.loop.one_shot import REPEATS, calibrate_tree
from ratchet.present.progress import CampaignUI
from ratchet.workspace.git import Git

DEFAULT_SEEDS = 8
"""Seeds measured when `--seeds` is not given (each twice)."""

MAX_SEEDS = 1000
"""The most seeds one calibration measures."""

CALIBRATION_FILE = "calibration.json"
"""The latest calibration, in the project's `.ratchet/` directory (never in a candidate's tree)."""

CALIBRATION_FORMAT = "ratchet.calibration.v1"
"""`calibration.json`'s `format`: a file of another format is not read."""

APPROXIMATION = ("sign-flip test: normal approximation of a one-sided paired t-test's power (Student t "
                 "quantiles); paired SD assumes a candidate keeps half of the champion's seed-to-seed variance")
BINARY_APPROXIMATION = "exact McNemar power, assuming the candidate breaks nothing the champion passed (a floor)"
"""How the detectable gains were computed (result `approximation`): continuous, binary scores."""


def calibrate_project(directory: Path, *, rev: str | None, seeds: int | None, effect: float | None,
                      ui: CampaignUI) -> dict[str, Any]:
    """`ratchet calibrate`: the `--json` result (see docs/calibrate.md): for a benchmark {kind, run_id,
    rev, commit, tree, metric, direction, seeds, repeats, jobs, failed, job_seconds, values, noise,
    margin, power, approximation, levels, effect, suggested_units, stored, warnings}; for examples
    {kind, val, looks, margin, power, approximation, levels, effect, suggested_units, warnings}.

    Raises DataError `calibrate.bad_seeds` / `calibrate.bad_effect`, GitError `git.bad_revision`,
    MeasurementError `calibrate.too_few_seeds` (fewer than MIN_SEEDS seeds measured twice), DataError
    `run.concurrent` while a run of the project is in progress, RatchetError `interrupted` (exit 130),
    and what `ratchet run` raises for a bad contract. seeds: None for DEFAULT_SEEDS."""
    seeds = DEFAULT_SEEDS if seeds is None else seeds
    if not MIN_SEEDS <= seeds <= MAX_SEEDS:
        raise DataError("calibrate.bad_seeds", f"--seeds must be between {MIN_SEEDS} and {MAX_SEEDS}, got {seeds}",
                        hint=f"the default is {DEFAULT_SEEDS}; more seeds give tighter spreads")
    if effect is not None and not (math.isfinite(effect) and effect > 0):
        raise DataError("calibrate.bad_effect", f"--effect must be a positive number, got {effect}",
                        hint="the smallest gain worth detecting, in the metric's units (examples: a pass rate)")
    loaded, git = open_project(directory, for_compare=True)
    if loaded.contract.target.kind == "examples":
        result = _examples(loaded, effect)
        if rev:
            result["warnings"].append(f"--rev {rev} is not used: an examples target's calibration runs nothing")
        return result
    with sole_run(loaded.root):
        return _benchmark(loaded, git, rev, seeds, effect, ui)


def _benchmark(loaded: LoadedContract, git: Git, rev: str | None, seeds: int, effect: float | None,
               ui: CampaignUI) -> dict[str, Any]:
    c = loaded.contract
    commit = git.rev_parse_commit(rev) if rev else git.head_commit()
    tree = git.tree_of(commit)
    cal = calibrate_tree(loaded, commit, tree, seeds, rev or "HEAD", ui)
    failed = sum(v is None for v in cal.values)
    stored = {
        "format": CALIBRATION_FORMAT, "run_id": cal.run_id, "recorded_at": cal.recorded_at,
        "rev": rev or "HEAD", "commit": commit, "tree": tree, "target": target_settings(c, cal.sandbox),
        "seeds": seeds, "repeats": REPEATS, "jobs": cal.jobs, "failed": failed,
        "job_seconds": sum(cal.job_seconds) / len(cal.job_seconds) if cal.job_seconds else None,
        "values": cal.table, "noise": cal.noise.to_json(), "skewness": cal.skewness,
    }
    path = loaded.root / RATCHET_DIR / CALIBRATION_FILE
    write_exclusive(path, (json.dumps(stored, indent=1) + "\n").encode())
    warnings = [_failures_warning(failed, seeds)] if failed else []
    skewed = skew_warning(cal.skewness, seeds - failed, AA_DIFFERENCES)
    if skewed:
        warnings.append(skewed)
    return {"kind": "benchmark", **{k: v for k, v in stored.items() if k not in ("format", "target")},
            "metric": c.target.metric, "direction": c.target.direction,
            **gate_effects(c, cal.noise, effect), "stored": str(path), "warnings": warnings}


AA_DIFFERENCES = "the calibration's A/A differences (each seed's second measurement minus its first)"
"""What a calibration's skewness is of, as its warning names it."""


def stored_skewness(values: object, direction: str) -> tuple[float | None, int]:
    """G1 of a stored calibration's A/A differences (`calibration.aa_skewness`) recomputed from its
    `values` rows ({unit, seed, values: [first, second] or null}), and the seeds it is over; (None, 0)
    for rows that do not read as pairs of numbers."""
    pairs = []
    for row in values if isinstance(values, list) else []:
        pair = row.get("values") if isinstance(row, dict) else None
        if isinstance(pair, list) and len(pair) == REPEATS and all(
                isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in pair):
            pairs.append((float(pair[0]), float(pair[1])))
    return aa_skewness(pairs, direction), len(pairs)


def _failures_warning(failed: int, seeds: int) -> str:
    return (f"{failed} of {seeds} seeds had a failed measurement and were left out; in a campaign a failed "
            "candidate job rejects the candidate, a failed champion job is retried once")


def target_settings(contract: Contract, sandbox_mode: str) -> dict[str, Any]:
    """What a calibration's spreads depend on besides the tree: the command, metric, seed variable,
    timeout and sandbox. A stored calibration measured with other settings is not shown."""
    t = contract.target
    return {"command": t.command, "metric": t.metric, "seed_env": t.seed_env, "timeout_s": t.timeout_s,
            "sandbox": sandbox_mode, "network": contract.sandbox.network}


def gate_effects(contract: Contract, noise: Noise | None, effect: float | None, looks: Sequence[int] | None = None
                 ) -> dict[str, Any]:
    """What the contract's gate detects through `noise` (a benchmark's; None: an examples target,
    binary scores on `looks`, the val looks): see `effects_for`."""
    g = contract.gate
    if noise is None:
        return effects_for(contract, 0.0, "binary", margin_for(g.min_effect, 0.0, 0.0), effect, looks)
    return effects_for(contract, noise.paired_sd, "continuous", margin_for(g.min_effect, g.min_effect_rel, noise.mean),
                       effect, looks)


def effects_for(contract: Contract, sd: float, kind: Kind, margin: float, effect: float | None,
                looks: Sequence[int] | None = None) -> dict[str, Any]:
    """{margin, power, approximation, levels, effect, suggested_units} for a paired SD `sd`
    (continuous) or binary scores, on `looks` (default gate.units). levels: `level_effects` as JSON
    at the levels granted (trial 1's and, under campaign multiplicity, the last trial's).
    suggested_units: {"trial_<t>": looks or None} for `effect` (looks in the proportions of
    gate.units whose last look detects it; None: none up to MAX_SUGGESTED_UNITS), None without
    `effect`."""
    g, b = contract.gate, contract.budget
    levels = level_effects(sd, alpha=g.alpha, multiplicity=g.multiplicity, max_attempts=b.max_attempts,
                           looks=tuple(looks or g.units), kind=kind, margin=margin)
    suggested = None
    if effect is not None:
        suggested = {
            f"trial_{t}": _list(units_for_effect(effect, sd, g.units, trial_level(g.alpha, g.multiplicity, t,
                                                                                  b.max_attempts), kind, margin))
            for t in granted_trials(g.multiplicity, b.max_attempts)}
    return {"margin": margin, "power": DEFAULT_POWER,
            "approximation": APPROXIMATION if kind == "continuous" else BINARY_APPROXIMATION,
            "levels": [level.to_json() for level in levels], "effect": effect, "suggested_units": suggested}


def _list(looks: tuple[int, ...] | None) -> list[int] | None:
    return None if looks is None else list(looks)


def _examples(loaded: LoadedContract, effect: float | None) -> dict[str, Any]:
    from ratchet.targets.examples import clamp_looks, load_examples, split_examples

    c = loaded.contract
    data = load_examples(loaded.root / (c.target.examples or ""))
    n_val = len(split_examples(data.examples, c.target.split, c.campaign.seed).val)
    if n_val == 0:
        raise DataError("calibrate.no_val", "the val split is empty: the gate has nothing to measure on",
                        hint="add examples or raise the val share of target.split")
    if effect is not None and effect >= 1.0:
        raise DataError("calibrate.bad_effect", f"--effect is a pass-rate gain for an examples target, below 1; "
                        f"got {effect}", hint="e.g. --effect 0.05 for five more examples passed in a hundred")
    looks = clamp_looks(c.gate.units, n_val)
    result = gate_effects(c, None, effect, looks)
    warnings = []
    if c.gate.min_effect_rel > 0:
        warnings.append("gate.min_effect_rel is not included: the champion's pass rate is measured when a run starts")
    needed = [v[-1] for v in (result["suggested_units"] or {}).values() if v]
    if needed and max(needed) > n_val:
        warnings.append(f"detecting {effect} needs up to {max(needed)} val examples; val has {n_val}: add examples "
                        "or raise the val share of target.split")
    return {"kind": "examples", "val": n_val, "looks": list(looks), **result, "warnings": warnings}


def stored_calibration(loaded: LoadedContract, head_tree: str | None, sandbox_mode: str) -> dict[str, Any] | None:
    """The latest calibration of the project (`.ratchet/calibration.json`) with the current gate's
    detectable effects: {run_id, recorded_at, commit, tree, seeds, noise, head_changed, skewness (G1 of
    its A/A differences, recomputed from its values: `stored_skewness`), skew_warning (skew.skew_warning,
    None when the differences are near symmetric or too few), **gate_effects};
    {"ignored": why} when it was measured with other target settings or cannot be read; None when
    there is none."""
    path = loaded.root / RATCHET_DIR / CALIBRATION_FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"ignored": f"{path} cannot be read ({exc}); run `ratchet calibrate` again"}
    try:
        if data.get("format") != CALIBRATION_FORMAT or not isinstance(data.get("target"), dict):
            raise ValueError(f"format {data.get('format')!r}")
        noise = Noise.from_json(data["noise"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"ignored": f"{path} is not a calibration ({exc}); run `ratchet calibrate` again"}
    settings = target_settings(loaded.contract, sandbox_mode)
    changed = sorted(k for k in settings if data["target"].get(k) != settings[k])
    if changed:
        return {"ignored": f"the stored calibration ({data.get('run_id')}) measured other target settings "
                           f"({', '.join(changed)} changed since); run `ratchet calibrate` again"}
    skewness, pairs = stored_skewness(data.get("values"), loaded.contract.target.direction)
    return {"run_id": data.get("run_id"), "recorded_at": data.get("recorded_at"), "commit": data.get("commit"),
            "tree": data.get("tree"), "seeds": data.get("seeds"), "noise": noise.to_json(),
            "head_changed": head_tree is not None and data.get("tree") != head_tree,
            "skewness": skewness, "skew_warning": skew_warning(skewness, pairs, AA_DIFFERENCES),
            **gate_effects(loaded.contract, noise, None)}
