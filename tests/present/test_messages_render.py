"""How `status` and the report read: no `interrupted (interrupted)`, the holdout shown, a budget
stop's detail, long reasons never cut silently, and an examples run's val trials counted next to
its one headline number."""

from __future__ import annotations

import io

from rich.console import Console

from ratchet.core.state import Champion, Judgment, RunState
from ratchet.present.render import render_status
from ratchet.present.report.markdown import render_report
from ratchet.present.status import status_result

HOLDOUT = Judgment("holdout", "accepted", "significant_gain", "", 0.28, (0.27, 0.29), 1.5e-5, 16, 0.05, 0,
                   champion_mean=0.6, candidate_mean=0.88)
GATE = {"alpha": 0.05, "multiplicity": "campaign", "units": [10, 20, 40], "min_effect": 0.0,
        "min_effect_rel": 0.0, "confirm": True}


def _render(status: dict) -> str:
    out = Console(file=io.StringIO(), width=200)
    render_status(out, Console(file=io.StringIO()), status)
    return out.file.getvalue()


def test_status_of_an_interrupted_run_does_not_repeat_its_state_and_shows_the_holdout():
    text = _render(status_result(RunState(run_id="r1", state="interrupted", stop_reason="interrupted"), None))
    assert "run r1: interrupted\n" in text and "interrupted (interrupted)" not in text
    assert "holdout: none (nothing was promoted: the champion is the baseline)" in text
    promoted = RunState(run_id="r2", state="stopped", stop_reason="budget_exhausted", stop_budget="max_wall",
                        stop_detail="forecast, not spent: 51 s used + ...", promotions=1,
                        champion=Champion("c" * 40, "t" * 40, 0.28, (0.27, 0.29), 3), holdout=HOLDOUT)
    text = _render(status_result(promoted, None))
    assert "run r2: stopped (budget_exhausted: max_wall)" in text and "forecast, not spent: 51 s used" in text
    assert ("holdout (final champion vs baseline, 16 units never used for selection): accepted, gain 0.28 "
            "[0.27, 0.29] (baseline 0.6 -> champion 0.88), p 1.50e-05") in text


def test_an_examples_report_counts_its_val_trials_and_names_the_test_split_the_only_headline():
    state = RunState(run_id="r3", state="stopped", stop_reason="agent_stopped", promotions=1,
                     champion=Champion("c" * 40, "t" * 40, 0.2, None, 2), holdout=HOLDOUT)
    text = render_report(status_result(state, None), campaign="c", gate=GATE, target={"kind": "examples"},
                         promotions=[], val_trials=7)
    assert "This is the run's only headline number: the test split was measured once, at the end." in text
    assert "7 val trials (candidates measured on val) all reused the same val split" in text
    assert "this run made 7 val trials" in text


def test_a_long_or_multi_line_reason_is_given_in_full_under_the_attempts_table():
    status = status_result(RunState(run_id="r4", state="stopped", stop_reason="agent_stopped"), None)
    reason = ("The candidate failed on unit 0; a failing candidate is never accepted. First failure: unit 0 "
              "(a0001-trial-u000-candidate): failed: exit code 1; stderr (last lines):\nTraceback (most recent "
              "call last):\n  x = float(params['x'])\nValueError: could not convert string to float: 'three'")
    status["attempts"] = [{"attempt": 1, "summary": "s", "verdict": "rejected", "reason": "candidate_failed",
                           "reason_text": reason, "estimate": None, "interval": None, "p_value": None,
                           "units": 0, "level": 0.01, "confirm": None}]
    text = render_report(status, campaign="c", gate=GATE, target={"kind": "benchmark"}, promotions=[])
    assert "(in full below, attempt 1)" in text
    assert f"Attempt 1:\n\n```text\n{reason}\n```" in text
