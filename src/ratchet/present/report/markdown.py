"""The run report (`report.md`): the holdout headline, the champion's history, every attempt, the
gate's settings and its multiplicity rule. Pure: plain values in, Markdown text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.present.render import fmt_interval, fmt_num, fmt_p


def render_report(
    status: Mapping[str, Any],
    *,
    campaign: str,
    gate: Mapping[str, Any],
    target: Mapping[str, Any],
    promotions: Sequence[Mapping[str, Any]],
    plots: Sequence[str] = (),
    splits: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
    val_trials: int = 0,
) -> str:
    """Markdown for one run. `status` is the `ratchet status` result; `gate` and `target` the
    contract's sections as dicts; `promotions` the champion.promoted data in order; `plots` paths
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
    lines += _headline(status, gate, target, val_trials)
    if splits:
        lines += _splits(splits)
    lines += _history(promotions)
    lines += _attempts(status["attempts"])
    lines += _gate(gate, status, target, val_trials)
    lines += _budget(status["budget"])
    if plots:
        lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(lines) + "\n"


def _headline(status: Mapping[str, Any], gate: Mapping[str, Any], target: Mapping[str, Any],
              val_trials: int) -> list[str]:
    out = ["## Headline: the holdout", ""]
    h = status.get("holdout")
    metric = target.get("metric") or "pass rate"
    if status["promotions"] == 0:
        out += ["No candidate was promoted: the champion is still the baseline, and no holdout was needed.", ""]
        return out
    if h is None:
        out += ["The run promoted a candidate but has not measured the holdout yet (it runs when the run stops).", ""]
        return out
    if target.get("kind") == "examples":
        out += [
            f"The final champion against the original baseline on the **test split ({h['units']} examples, "
            f"never seen by any agent or trial)**: pass-rate gain **{fmt_num(h['estimate'])}** "
            f"(95% interval {fmt_interval(h['interval'])}, exact McNemar one-sided p = {fmt_p(h['p_value'])}).",
            "",
            f"This is the run's only headline number: the test split was measured once, at the end. The "
            f"{_val_trials_text(val_trials)} all reused the same val split while the agents learned from their "
            "verdicts, so val pass rates and the promoted trials' estimates are biased upward.",
            "",
        ]
        return out
    out += [
        f"The final champion against the original baseline on **{h['units']} fresh units** "
        f"(never used for selection): **{fmt_num(h['estimate'])}** {metric} "
        f"(95% interval {fmt_interval(h['interval'])}, one-sided p = {fmt_p(h['p_value'])}, verdict {h['verdict']}).",
        "",
        "Gains are direction-normalized: positive means better. Fresh seeds on the same benchmark data are "
        "not new data: the holdout guards against selection on noise, not against overfitting the "
        "benchmark itself.",
        "",
    ]
    return out


def _history(promotions: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["## Champion history", "", "| promotion | attempt | commit | gain at promotion | interval |",
           "|---|---|---|---|---|", "| 0 | baseline | - | - | - |"]
    for i, p in enumerate(promotions, start=1):
        out.append(f"| {i} | {p['attempt']} | `{str(p['commit'])[:10]}` | {fmt_num(p.get('estimate'))} | "
                   f"{fmt_interval(p.get('interval'))} |")
    return out + [""]


def _val_trials_text(n: int) -> str:
    return f"{n} val trial{'' if n == 1 else 's'} (candidates measured on val)"


REASON_CELL_CHARS = 120
"""Characters of an attempt's reason shown in the attempts table; a longer or multi-line reason
(a failure's stderr lines) is given in full under the table."""


def _attempts(attempts: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["## Attempts", "", "| # | summary | verdict | estimate | interval | p | level | units | reason |",
           "|---|---|---|---|---|---|---|---|---|"]
    in_full = []
    for a in attempts:
        summary = (a.get("summary") or "").replace("|", "\\|")[:60]
        text = (a.get("reason_text") or a.get("reason") or "").strip()
        reason = " ".join(text.split()).replace("|", "\\|")
        if len(reason) > REASON_CELL_CHARS or "\n" in text:
            reason = reason[:REASON_CELL_CHARS].rstrip() + f" ... (in full below, attempt {a['attempt']})"
            in_full.append((a["attempt"], text))
        if a.get("confirm"):
            c = a["confirm"]
            reason += f" Confirmation: {c['verdict']}, {fmt_num(c['estimate'])} {fmt_interval(c['interval'])}."
        out.append(
            f"| {a['attempt']} | {summary} | {a.get('verdict') or '-'} | {fmt_num(a.get('estimate'))} | "
            f"{fmt_interval(a.get('interval'))} | {fmt_p(a.get('p_value'))} | {fmt_p(a.get('level'))} | "
            f"{a.get('units') or '-'} | {reason} |"
        )
    out.append("")
    if in_full:
        out += ["### Reasons in full", ""]
        for attempt, text in in_full:
            out += [f"Attempt {attempt}:", "", "```text", text.replace("```", "` ` `"), "```", ""]
    return out


def _splits(splits: Mapping[str, Any]) -> list[str]:
    out = ["## Pass rates of the final champion (Wilson 95% intervals)", "",
           "| split | passes | n | pass rate | interval |", "|---|---|---|---|---|"]
    for name, label in (("dev", "dev"), ("val", "val"), ("test", "test"), ("test_baseline", "test (baseline)")):
        r = splits.get(name)
        if r:
            out.append(f"| {label} | {r['passes']} | {r['n']} | {fmt_num(r['rate'])} | {fmt_interval(r['interval'])} |")
    rate = {k: (splits.get(k) or {}).get("rate") for k in ("dev", "val", "test")}
    gaps = []
    if rate["dev"] is not None and rate["val"] is not None:
        gaps.append(f"dev - val = {rate['dev'] - rate['val']:+.3f}")
    if rate["val"] is not None and rate["test"] is not None:
        gaps.append(f"val - test = {rate['val'] - rate['test']:+.3f} (selection on val shows up here)")
    out += ["", "Gaps: " + ("; ".join(gaps) if gaps else "-") + ".", ""]
    out += _statuses(splits)
    checks = splits.get("per_check") or {}
    if checks:
        out += ["| check | pass rate |", "|---|---|"] + [f"| {k} | {fmt_num(v)} |" for k, v in checks.items()] + [""]
    out += ["The test score is honest only the first time it is looked at for this dataset: every later "
            "decision informed by it turns test into another val.", ""]
    return out


STATUS_LABELS = (("failed", "wrong output"), ("crash", "crashed"), ("timeout", "timed out"),
                 ("output_too_large", "output too large"), ("missing", "no record"),
                 ("check_error", "check_error (a check could not judge)"))
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


def _gate(gate: Mapping[str, Any], status: Mapping[str, Any], target: Mapping[str, Any],
          val_trials: int) -> list[str]:
    out = ["## The gate", ""]
    out.append(
        f"alpha = {gate['alpha']}, multiplicity = `{gate['multiplicity']}`, looks = {list(gate['units'])}, "
        f"min_effect = {gate['min_effect']}, min_effect_rel = {gate['min_effect_rel']}, confirm = {gate['confirm']}."
    )
    out.append("")
    if gate["multiplicity"] == "campaign":
        out.append(
            "Multiplicity `campaign`: trial t is tested at level alpha * w_t with front-loaded weights "
            "summing to at most 1 over budget.max_attempts (a Bonferroni-type allocation, valid under any "
            "dependence between trials), so the probability that this run promoted anything false is at "
            "most alpha."
        )
    else:
        out.append(
            "Multiplicity `trial`: every trial is tested at alpha. False promotions accumulate over a long "
            "run: with many attempts, some promotion is likely to be noise."
        )
    out.append("")
    if target.get("kind") == "examples":
        out.append(
            f"Examples: this run made {_val_trials_text(val_trials)}, every one on the same val split "
            "(exact McNemar on the discordant examples); the campaign rule above is what controls the reuse "
            "of val across trials, and agents learn from each verdict, so val estimates are optimistic. "
            "gate.confirm does not apply (there are no fresh units), so promoted estimates are those of "
            "the selecting trial, which are biased upward; the test split, measured once at the end, is "
            "the honest number."
        )
        return out + [""]
    out.append(
        "Within a trial the level is spent across the looks (alpha spending); a trial stops early for "
        "efficacy or futility. Accepted candidates were re-measured on fresh units before promotion "
        "(confirmation), and the history above quotes the confirmation's estimate, since the selecting "
        "trial's own estimate is biased upward."
        if gate.get("confirm") else
        "Within a trial the level is spent across the looks (alpha spending); a trial stops early for "
        "efficacy or futility. Confirmation was off or does not apply: promoted estimates are those of "
        "the selecting trial, which are biased upward."
    )
    return out + [""]


def _budget(budget: Mapping[str, Any]) -> list[str]:
    used, limits = budget["used"], budget["limits"]
    out = ["## Budget", "", "| budget | used | limit |", "|---|---|---|"]
    out.append(f"| attempts | {used['attempts']} | {limits.get('max_attempts', '-')} |")
    out.append(f"| job-units | {used['evaluations']} | {limits.get('max_evaluations') or 'unlimited'} |")
    out.append(f"| CPU hours | {used['cpu_hours']:.4f} | {limits.get('max_cpu_hours') or 'unlimited'} |")
    out.append(f"| wall seconds | {used['wall_s']:.1f} | {limits.get('max_wall_s') or 'unlimited'} |")
    return out + [""]
