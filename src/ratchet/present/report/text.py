"""The report's sentences, shared by the markdown and the HTML report so both say the same thing.

Pure. Paragraphs use two inline marks only: `**strong**` and `` `code` `` (markdown.py prints them
as they are; html.py escapes the text first, then turns the marks into tags).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.present.render import fmt_interval, fmt_num, fmt_p

NOT_NEW_DATA = (
    "Gains are direction-normalized: positive means better. Fresh seeds on the same benchmark data are "
    "not new data: the holdout guards against selection on noise, not against overfitting the "
    "benchmark itself."
)

TEST_ONCE = (
    "The test score is honest only the first time it is looked at for this dataset: every later "
    "decision informed by it turns test into another val."
)


def samples_of(target: Mapping[str, Any]) -> int:
    """Replies per example of a prompt solution (`target.model.samples`); 1 for anything else."""
    model = target.get("model") if target.get("solution_kind") == "prompt" else None
    return int(model.get("samples") or 1) if isinstance(model, Mapping) else 1


def examples_test_words(target: Mapping[str, Any]) -> str:
    """How an examples gate tests: exact McNemar on pass/fail examples, or the floor test on pass
    fractions when a prompt solution asks several samples per example (docs/prompts.md)."""
    n = samples_of(target)
    return "exact McNemar" if n == 1 else f"the floor test on pass fractions over {n} samples"


def headline(status: Mapping[str, Any], target: Mapping[str, Any], val_trials: int | None = None) -> list[str]:
    """The holdout headline as paragraphs. `status`: the `ratchet status` result; `target`: the
    contract's target section as a dict; `val_trials`: how many candidates an examples run measured
    on val (said next to the test split's number)."""
    h = status.get("holdout")
    metric = target.get("metric") or "pass rate"
    if status["promotions"] == 0:
        return ["No candidate was promoted: the champion is still the baseline, and no holdout was needed."]
    if h is None:
        return ["The run promoted a candidate but has not measured the holdout yet (it runs when the run stops)."]
    means = holdout_means(h, "pass rate" if target.get("kind") == "examples" else metric)
    if target.get("kind") == "examples":
        return [
            f"The final champion against the original baseline on the **test split ({h['units']} examples, "
            f"never seen by any agent or trial)**: pass-rate gain **{fmt_num(h['estimate'])}**{means} "
            f"(95% interval {fmt_interval(h['interval'])}, {examples_test_words(target)} one-sided p = "
            f"{fmt_p(h['p_value'])}).",
            "This is the run's only headline number: the test split was measured once, at the end. The "
            + (f"{val_trials} val trial{'' if val_trials == 1 else 's'} (candidates measured on val)"
               if val_trials is not None else "val trials")
            + " all reused the same val split while the agents learned from their verdicts, so val pass rates "
            "and the promoted trials' estimates are biased upward.",
        ]
    return [
        f"The final champion against the original baseline on **{h['units']} fresh units** "
        f"(never used for selection): a paired gain of **{fmt_num(h['estimate'])}** {metric}{means} "
        f"(95% interval {fmt_interval(h['interval'])}, one-sided p = {fmt_p(h['p_value'])}, verdict {h['verdict']}).",
        NOT_NEW_DATA,
    ]


def holdout_means(h: Mapping[str, Any], what: str) -> str:
    """`, from baseline 0.7 to champion 0.98 accuracy on those units` (each side's raw mean), or ""
    when the holdout recorded no means (a run recorded before they were)."""
    if h.get("baseline_mean") is None and h.get("champion_mean") is None:
        return ""
    return (f", from baseline {fmt_num(h.get('baseline_mean'))} to champion {fmt_num(h.get('champion_mean'))} "
            f"{what} on those units")


def best_params(status: Mapping[str, Any]) -> str | None:
    """The champion's parameters as one sentence (a search agent's run), or None."""
    c = status["champion"]
    if not c.get("params"):
        return None
    return (f"Best parameters (the champion's, attempt {c['attempt']}): "
            + ", ".join(f"`{k} = {fmt_num(v) if isinstance(v, float) else v}`" for k, v in c["params"].items())
            + ".")


def champion_means(status: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    """The baseline's and the champion's raw means as one sentence (metric units; a pass rate for
    examples), or "" when neither was measured."""
    b, c = status["baseline"].get("mean"), status["champion"]
    if b is None and c.get("mean") is None:
        return ""
    examples = target.get("kind") == "examples"
    what = "pass rate" if examples else (target.get("metric") or "metric")
    who = f"attempt {c['attempt']}" if c.get("attempt") else "the baseline"
    return (f"Absolute values ({what}, raw means): the baseline {fmt_num(b)} "
            + ("on dev " if examples else "") + "before the first attempt; the champion "
            f"({who}) {fmt_num(c.get('mean'))} as last measured.")


def gate_settings(gate: Mapping[str, Any]) -> str:
    """One sentence listing the gate's settings (the contract's gate section as a dict)."""
    return (
        f"alpha = {gate['alpha']}, multiplicity = `{gate['multiplicity']}`, looks = {list(gate['units'])}, "
        f"min_effect = {gate['min_effect']}, min_effect_rel = {gate['min_effect_rel']}, confirm = {gate['confirm']}."
    )


def promise(gate: Mapping[str, Any]) -> str:
    """The gate's promise in one sentence (the contract's gate section as a dict)."""
    if gate["multiplicity"] == "campaign":
        return ("Promise: the probability that this run promoted any candidate no better than the margin is at "
                "most alpha, however the agents adapt (when each trial's test is valid for that candidate).")
    return ("Promise: each attempt promotes a candidate no better than the margin with probability at most "
            "alpha; over many attempts, false promotions add up.")


def guarantee(gate: Mapping[str, Any], target: Mapping[str, Any], val_trials: int | None = None) -> list[str]:
    """What the gate guarantees, as paragraphs: the multiplicity rule, then the within-trial rule
    (looks, confirmation) for benchmarks or the reuse of val for examples."""
    if gate["multiplicity"] == "campaign":
        rule = (
            "Multiplicity `campaign`: attempt t gets a share of alpha, alpha * w_t (front-loaded weights summing "
            "to 1 over budget.max_attempts), plus the share of the attempt before it when that one was promoted "
            "or decided without jobs (online fallback, Tian & Ramdas 2021: valid however the agents adapt, as "
            "shares depend only on the past). With confirmation the trial and its confirmation on fresh units "
            "are each tested at the level share^(1/2), so both pass a null with probability at most the share "
            "(a level can therefore exceed alpha); without it the trial's level is the share. So the "
            "probability that this run promoted any candidate whose true gain over the champion it faced is at "
            "most the margin is at most alpha, provided each trial's test is valid for that candidate's "
            "differences: see the test's guarantee below."
        )
    else:
        rule = (
            "Multiplicity `trial`: every attempt's share of alpha is alpha itself. False promotions accumulate "
            "over a long run: with many attempts, some promotion is likely to be noise."
        )
    test = (gate.get("test") or "guarded_sign_flip") if target.get("kind") != "examples" else "binary"
    if target.get("kind") == "examples" and samples_of(target) > 1:
        test = "betting"
    from ratchet.core.stats.guarantee import guarantee as test_guarantee

    rule += f" The test: {test_guarantee(test)}"
    if target.get("kind") == "examples":
        made = (f"this run made {val_trials} val trial{'' if val_trials == 1 else 's'} (candidates measured on "
                "val), every one" if val_trials is not None else "every trial measures")
        return [rule, (
            f"Examples: {made} on the same val split ({examples_test_words(target)}); the campaign rule above "
            "is what controls the reuse of val across trials, and agents "
            "learn from each verdict, so val estimates are optimistic. "
            "gate.confirm does not apply (there are no fresh units), so promoted estimates are those of "
            "the selecting trial, which are biased upward; the test split, measured once at the end, is "
            "the honest number."
        )]
    looks = ("Within a trial the level is spent across the looks in increments (alpha spending); a trial stops "
             "early for efficacy or futility. ")
    if gate.get("confirm"):
        return [rule, looks + (
            "Accepted candidates were re-measured on fresh units before promotion (confirmation), and the "
            "history quotes the confirmation's estimate, since the selecting trial's own estimate is "
            "biased upward."
        )]
    return [rule, looks + (
        "Confirmation was off or does not apply: promoted estimates are those of the selecting trial, "
        "which are biased upward."
    )]


MIN_TRIALS_FOR_MEDIAN = 3
"""Trials with a skewness over enough units before the report warns about their median."""


def skew_warnings(judged: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's warnings from the trials' recorded skewness (`trial.judged` data.skewness, G1 of
    the deciding look's paired differences): one per accepted trial or confirmation whose
    differences are far from symmetric (stats.skew.skew_warning), and one when the median G1 of
    all judged trials and confirmations with enough units is (at least MIN_TRIALS_FOR_MEDIAN of
    them). `judged`: per recorded verdict {attempt, stage, verdict, units, skewness (None: not
    recorded)}; holdout and preflight stages are skipped."""
    from ratchet.core.stats.skew import SKEW_MIN_UNITS, skew_warning

    rows = [j for j in judged if j.get("stage") in ("trial", "confirm") and j.get("skewness") is not None]
    out = []
    for j in rows:
        if j.get("verdict") == "accepted":
            said = skew_warning(j["skewness"], int(j.get("units") or 0),
                                f"the paired differences of attempt {j['attempt']}'s accepted "
                                + ("trial" if j["stage"] == "trial" else "confirmation"))
            if said:
                out.append(said)
    enough = sorted(float(j["skewness"]) for j in rows if int(j.get("units") or 0) >= SKEW_MIN_UNITS)
    if len(enough) >= MIN_TRIALS_FOR_MEDIAN:
        k = len(enough)
        median = enough[k // 2] if k % 2 else (enough[k // 2 - 1] + enough[k // 2]) / 2
        said = skew_warning(median, SKEW_MIN_UNITS, "the paired differences of this run's trials",
                            f"as the median of {k} trials and confirmations with {SKEW_MIN_UNITS} or more units")
        if said:
            out.append(said)
    return out


def split_gaps(splits: Mapping[str, Any]) -> str:
    """The dev - val and val - test pass-rate gaps of the final champion, or `-`."""
    rate = {k: (splits.get(k) or {}).get("rate") for k in ("dev", "val", "test")}
    gaps = []
    if rate["dev"] is not None and rate["val"] is not None:
        gaps.append(f"dev - val = {rate['dev'] - rate['val']:+.3f}")
    if rate["val"] is not None and rate["test"] is not None:
        gaps.append(f"val - test = {rate['val'] - rate['test']:+.3f} (selection on val shows up here)")
    return "; ".join(gaps) if gaps else "-"


ATTEMPTS_NOTE = (
    "Gain: the candidate's paired gain over the champion of its time (direction-normalized: positive is "
    "better). Champion mean and candidate mean: each side's raw mean over the trial's units, in metric "
    "units. Level: the significance level the trial was tested at (with confirmation, the square root "
    "of the attempt's share of alpha: see the gate below); `-` where no test ran."
)


def confirmation(c: Mapping[str, Any]) -> str:
    """`Confirmation: accepted, gain 2.79 [2.7, 2.9] (champion -8.9 -> candidate -6.1).`"""
    out = f"Confirmation: {c['verdict']}, gain {fmt_num(c['estimate'])} {fmt_interval(c['interval'])}"
    if c.get("champion_mean") is not None or c.get("candidate_mean") is not None:
        out += f" (champion {fmt_num(c.get('champion_mean'))} -> candidate {fmt_num(c.get('candidate_mean'))})"
    return out + "."


SPLIT_LABELS = (("dev", "dev"), ("val", "val"), ("test", "test"), ("test_baseline", "test (baseline)"))
"""The splits a final examples measurement records, and how the report names them."""
