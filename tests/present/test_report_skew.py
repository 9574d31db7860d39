"""The report's warnings from the trials' recorded skewness (present.report.text.skew_warnings)."""

from __future__ import annotations

from ratchet.present.report.text import skew_warnings


def _j(attempt: int, verdict: str, skewness: float | None, units: int = 40, stage: str = "trial") -> dict:
    return {"attempt": attempt, "stage": stage, "verdict": verdict, "units": units, "skewness": skewness}


def test_an_accepted_trial_or_confirmation_with_skewed_differences_is_named():
    said = skew_warnings([_j(1, "accepted", -2.0), _j(1, "accepted", -1.8, stage="confirm"),
                          _j(2, "rejected", -2.5)])
    assert len(said) == 3 and "G1 = -2.00 as the median of 3 trials and confirmations" in said[2]
    assert said[0].startswith("the paired differences of attempt 1's accepted trial are left-skewed (G1 = -2.00")
    assert said[1].startswith("the paired differences of attempt 1's accepted confirmation are left-skewed")


def test_the_median_over_enough_trials_warns_and_rejected_trials_count_toward_it():
    judged = [_j(a, "rejected", g) for a, g in ((1, -1.6), (2, -1.4), (3, 0.2), (4, -1.3))]
    said = skew_warnings(judged)
    assert len(said) == 1 and "G1 = -1.35 as the median of 4 trials and confirmations with 20 or more units" in said[0]


def test_no_warning_for_symmetric_short_unrecorded_or_holdout_differences():
    assert skew_warnings([_j(1, "accepted", 0.4), _j(2, "rejected", -0.9), _j(3, "rejected", 0.1)]) == []
    assert skew_warnings([_j(1, "accepted", -3.0, units=10), _j(2, "accepted", None)]) == []
    assert skew_warnings([_j(1, "accepted", -3.0, stage="holdout")] * 3) == []
    assert skew_warnings([_j(a, "rejected", -2.0, units=10) for a in range(5)]) == []
