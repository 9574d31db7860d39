"""The run report (`report.md`): the holdout headline, the champion's history, every attempt, the
gate's settings and its multiplicity rule. Pure: plain values in, Markdown text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.core.payloads import ChampionPromoted
from ratchet.present.guardrail_text import guardrail_lines
from ratchet.present.render import fmt_interval, fmt_level, fmt_num, fmt_p
from ratchet.present.report import text
from ratchet.present.status import attempt_label


def render_report(
    status: Mapping[str, Any],
    *,
    campaign: str,
    gate: Mapping[str, Any],
    target: Mapping[str, Any],
    promotions: Sequence[ChampionPromoted],
    plots: Sequence[str] = (),
    splits: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
    val_trials: int = 0,
) -> str:
    """Markdown for one run. `status` is the `ratchet status` result; `gate` and `target` the
    contract's sections as dicts; `promotions` the champion.promoted payloads in order; `plots` paths
    relative to the report; `splits` (examples targets) the final champion's pass rates per split
    as recorded with the holdout judgment; `warnings` those recorded when the run started (trials
    that can never accept, with the fix); `val_trials` (examples) the trials measured on val."""
    lines = [f"# Ratchet report: {campaign}", "", f"Run `{status['run_id']}` — state **{status['state']}**, "
             f"stop reason **{status['stop_reason'] or '-'}**"
             + (f" ({status['stop_budget']})" if status.get("stop_budget") else "") + ".", ""]
    if status.get("stop_detail"):
        lines += [f"Why it stopped: {status['stop_detail']}.", ""]
    if warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    lines += _headline(status, target, val_trials)
    if splits:
        lines += _splits(splits)
    lines += _history(promotions, status["baseline"].get("mean"))
    lines += _attempts(status["attempts"])
    lines += _gate(gate, target, val_trials)
    lines += _budget(status["budget"])
    if plots:
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(lines) + "\n"


def _headline(status: Mapping[str, Any], target: Mapping[str, Any], val_trials: int | None) -> list[str]:
    out = ["## Headline: the holdout", ""]
    for paragraph in text.headline(status, target, val_trials):
        out += [paragraph, ""]
    for extra in (text.champion_means(status, target), text.best_params(status)):
        if extra:
            out += [extra, ""]
    holdout_guards = guardrail_lines((status.get("holdout") or {}).get("guardrails"), "- ")
    if holdout_guards:
        out += ["Guardrails of the holdout (final champion against the baseline):", "", *holdout_guards, ""]
    return out


def _history(promotions: Sequence[ChampionPromoted], baseline_mean: float | None) -> list[str]:
    out = ["## Champion history", "", "| promotion | attempt | commit | gain at promotion | interval | mean |",
           "|---|---|---|---|---|---|", f"| 0 | baseline | - | - | - | {fmt_num(baseline_mean)} |"]
    for i, p in enumerate(promotions, start=1):
        out.append(f"| {i} | {p.attempt} | `{p.commit[:10]}` | {fmt_num(p.estimate)} | {fmt_interval(p.interval)} "
                   f"| {fmt_num(p.mean)} |")
    return out + ["", "The mean is the champion's own raw mean when it was promoted (the baseline's: the "
                  "preflight's), in metric units; gains are paired and direction-normalized.", ""]


REASON_CELL_CHARS = 120
"""Characters of an attempt's reason shown in the attempts table; a longer or multi-line reason
(a failure's stderr lines) is given in full under the table."""


def _attempts(attempts: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["## Attempts", "", text.ATTEMPTS_NOTE, "",
           "| # | summary | verdict | gain | interval | champion mean | candidate mean | p | level | units | reason |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    in_full = []
    for a in attempts:
        summary = (a.get("summary") or "").replace("|", "\\|")[:60]
        full = (a.get("reason_text") or a.get("reason") or "").strip()
        reason = " ".join(full.split()).replace("|", "\\|")
        if len(reason) > REASON_CELL_CHARS or "\n" in full:
            reason = reason[:REASON_CELL_CHARS].rstrip() + f" ... (in full below, attempt {a['attempt']})"
            in_full.append((a["attempt"], full))
        if a.get("confirm"):
            reason += " " + text.confirmation(a["confirm"])
        out.append(
            f"| {attempt_label(a)} | {summary} | {a.get('verdict') or '-'} | {fmt_num(a.get('estimate'))} | "
            f"{fmt_interval(a.get('interval'))} | {fmt_num(a.get('champion_mean'))} | "
            f"{fmt_num(a.get('candidate_mean'))} | {fmt_p(a.get('p_value'))} | "
            f"{fmt_level(a.get('level'), a.get('p_value'))} | {a.get('units') or '-'} | {reason} |"
        )
    out.append("")
    guarded = [a for a in attempts if a.get("guardrails")]
    if guarded:
        out += ["### Guardrails", "", "Each guardrail's mean change (positive = better), the lower bound the gate "
                "tested against -allowance, and its status (docs/gate.md, Guardrails).", ""]
        for a in guarded:
            out += [f"- attempt {a['attempt']}: " + "; ".join(guardrail_lines(a["guardrails"]))]
        out.append("")
    if in_full:
        out += ["### Reasons in full", ""]
        for attempt, full in in_full:
            out += [f"Attempt {attempt}:", "", "```text", full.replace("```", "` ` `"), "```", ""]
    return out


def _splits(splits: Mapping[str, Any]) -> list[str]:
    out = ["## Pass rates of the final champion (Wilson 95% intervals)", "",
           "| split | passes | n | pass rate | interval |", "|---|---|---|---|---|"]
    for name, label in text.SPLIT_LABELS:
        r = splits.get(name)
        if r:
            out.append(f"| {label} | {r['passes']} | {r['n']} | {fmt_num(r['rate'])} | {fmt_interval(r['interval'])} |")
    out += ["", f"Gaps: {text.split_gaps(splits)}.", ""]
    out += _statuses(splits)
    checks = splits.get("per_check") or {}
    if checks:
        out += ["| check | pass rate |", "|---|---|"] + [f"| {k} | {fmt_num(v)} |" for k, v in checks.items()] + [""]
    return out + [text.TEST_ONCE, ""]


def _gate(gate: Mapping[str, Any], target: Mapping[str, Any], val_trials: int | None = None) -> list[str]:
    out = ["## The gate", "", text.gate_settings(gate), ""]
    for paragraph in text.guarantee(gate, target, val_trials):
        out += [paragraph, ""]
    return out


STATUS_LABELS = (("failed", "wrong output"), ("crash", "crashed"), ("timeout", "timed out"),
                 ("output_too_large", "output too large"), ("missing", "no record"),
                 ("check_error", "check_error (a check could not judge)"),
                 ("model_error", "model_error (the eval model gave no reply)"))
"""How a failed example ended, in the order the report lists them (see targets.examples.status_counts)."""


def _statuses(splits: Mapping[str, Any]) -> list[str]:
    """One line per split whose pass-rate dict carries `statuses` (targets.examples.status_counts):
    how its failed examples ended, check_error counts included."""
    out = []
    for name in ("dev", "val", "test", "test_baseline"):
        counts = (splits.get(name) or {}).get("statuses")
        if counts:
            parts = [f"{counts[key]} {label}" for key, label in STATUS_LABELS if counts.get(key)]
            out.append(f"- {name.replace('_', ' ')}: " + (", ".join(parts) if parts else "no failures"))
    return (["Failed examples, by how they ended:", ""] + out + [""]) if out else []


def _budget(budget: Mapping[str, Any]) -> list[str]:
    used, limits = budget["used"], budget["limits"]
    out = ["## Budget", "", "| budget | used | limit |", "|---|---|---|"]
    out.append(f"| attempts | {used['attempts']} | {limits.get('max_attempts', '-')} |")
    out.append(f"| job-units | {used['evaluations']} | {limits.get('max_evaluations') or 'unlimited'} |")
    out.append(f"| CPU hours | {used['cpu_hours']:.4f} | {limits.get('max_cpu_hours') or 'unlimited'} |")
    out.append(f"| wall seconds | {used['wall_s']:.1f} | {limits.get('max_wall_s') or 'unlimited'} |")
    return out + [""]
