"""The report says how failed examples ended, check_error counts included (from the per-example
`(passed, status)` pairs that `job.finished` keeps)."""

from __future__ import annotations

from ratchet.present.report.markdown import _statuses
from ratchet.targets.examples import status_counts


def test_status_counts_split_ok_into_passed_and_failed_and_keep_every_key():
    counts = status_counts([(True, "ok"), (False, "ok"), (False, "check_error"), (False, "check_error"),
                            (False, "crash"), (False, "timeout")])
    assert counts == {"passed": 1, "failed": 1, "crash": 1, "timeout": 1, "output_too_large": 0, "missing": 0,
                      "check_error": 2}
    assert status_counts([]) == dict.fromkeys(counts, 0)


def test_report_lists_check_errors_and_crashes_per_split():
    splits = {"val": {"statuses": status_counts([(False, "check_error"), (False, "crash"), (True, "ok")])},
              "test": {"statuses": status_counts([(True, "ok")])}, "dev": {"rate": 1.0}}
    text = "\n".join(_statuses(splits))
    assert "- val: 1 crashed, 1 check_error (a check could not judge)" in text
    assert "- test: no failures" in text and "- dev" not in text
    assert _statuses({"val": {"rate": 0.5}}) == []
