"""The HTML report's smaller promises: integer attempt ticks, no `none` verdicts or `0.00e+00`
levels, a short gate paragraph with the rule folded, and a parameter importance that ranks the
parameter the metric depends on first (real matplotlib and Optuna, plain values in)."""

from __future__ import annotations

import random
import re

from ratchet.present.report.data import ReportData
from ratchet.present.report.html import render_html
from ratchet.present.report.params import importances
from ratchet.present.report.plots import champion_figure, effects_figure

GATE = {"alpha": 0.05, "multiplicity": "campaign", "units": [6, 12], "min_effect": 0.0, "min_effect_rel": 0.0,
        "confirm": True}


def _row(n: int, **changes) -> dict:
    row = {"attempt": n, "summary": f"x={n}", "verdict": "rejected", "reason": "futility", "reason_text": "futile",
           "estimate": -0.5, "interval": [-0.7, -0.3], "p_value": 0.9, "units": 6, "level": 0.143, "confirm": None,
           "champion_mean": 1.0, "candidate_mean": 0.5, "params": None, "promoted": False}
    row.update(changes)
    return row


def _status(attempts: list[dict]) -> dict:
    return {
        "run_id": "20261130-000000-abcd", "state": "stopped", "stop_reason": "budget_exhausted",
        "stop_budget": "max_attempts", "kernel_pid": None,
        "baseline": {"commit": "c" * 40, "tree": "t" * 40, "mean": 1.0},
        "champion": {"commit": "c" * 40, "tree": "t" * 40, "estimate": None, "interval": None, "attempt": None,
                     "mean": 1.0, "params": None},
        "promotions": 0, "holdout": None,
        "budget": {"used": {"attempts": len(attempts), "evaluations": 12, "cpu_hours": 0.01, "gpu_hours": 0.0,
                            "wall_s": 30.0}, "limits": {"max_attempts": 6}},
        "attempts": attempts,
    }


def test_a_one_attempt_chart_has_one_integer_tick():
    import matplotlib.pyplot as plt

    for fig in (effects_figure([_row(3)]), champion_figure([_row(3)], [], None)):
        ticks = list(fig.axes[0].get_xticks())
        plt.close(fig)
        assert ticks == [3.0] or ticks == [0.0, 1.0, 2.0, 3.0], ticks


def test_attempts_without_a_verdict_or_a_test_are_said_in_words():
    gave_up = _row(2, verdict=None, reason="gave_up", reason_text="nothing to try", estimate=None, interval=None,
                   p_value=None, units=None, level=0.0, champion_mean=None, candidate_mean=None)
    no_change = _row(3, reason="no_change", estimate=None, interval=None, p_value=None, units=0, level=0.0)
    page = render_html(ReportData(_status([_row(1), gave_up, no_change]), campaign="c", gate=GATE,
                                  target={"kind": "benchmark", "metric": "score"}))
    assert "1 gave up" in page and "2 rejected" in page
    assert not re.search(r"\b1 none\b", page) and "0.00e+00" not in page


def test_the_gate_reads_in_two_sentences_with_the_rule_folded():
    page = render_html(ReportData(_status([_row(1)]), campaign="c", gate=GATE,
                                  target={"kind": "benchmark", "metric": "score"}))
    section = page[page.index('<section id="gate">'):]
    section = section[:section.index("</section>")]
    visible = section[:section.index("<details>")]
    assert visible.count(". ") + visible.count(".</p>") <= 3, visible
    assert "Tian &amp; Ramdas" in section[section.index("<details>"):]


def test_importance_ranks_the_parameter_the_metric_depends_on_first():
    space = {"x": {"type": "float", "low": -5.0, "high": 5.0, "log": False},
             "kernel": {"type": "categorical", "choices": ["rbf", "poly"]},
             "depth": {"type": "int", "low": 1, "high": 12, "log": False}}
    draw = random.Random(1)
    rows = []
    for n in range(1, 21):
        params = {"x": draw.uniform(-5, 5), "kernel": draw.choice(["rbf", "poly"]), "depth": draw.randint(1, 12)}
        rows.append(_row(n, params=params, candidate_mean=-(params["x"] - 3.0) ** 2))
    found = importances(rows, space, "max")
    assert found is not None and list(found)[0] == "x" and found["x"] > 0.5, found
    assert abs(sum(found.values()) - 1.0) < 1e-6
    assert importances(rows[:2], space, "max") is None, "two attempts are too few to rank anything"
