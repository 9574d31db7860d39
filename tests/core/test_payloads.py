"""Event payloads: one model per kind, refused before anything is written when malformed, written
as the writers wrote them and read back as written."""

from __future__ import annotations

from typing import get_args

import pytest

from ratchet.core.errors import LedgerError
from ratchet.core.events import EVENT_KINDS, EventKind
from ratchet.core.payloads import PAYLOADS, check_payload


def test_every_event_kind_has_a_payload_model():
    assert set(PAYLOADS) == set(EVENT_KINDS) == set(get_args(EventKind))


@pytest.mark.parametrize("kind, data, problem", [
    ("attempt.started", {"attempt": True}, "attempt"),                      # a bool is not an int
    ("attempt.started", {"attempt": "1"}, "attempt"),                       # nor is a string
    ("attempt.started", {}, "attempt: Field required"),
    ("attempt.started", {"attempt": 1, "surprise": 2}, "surprise"),         # unknown keys are refused
    ("run.stopped", {"stop_reason": "bored", "budget": None, "detail": None}, "stop_reason"),
    ("job.started", {"job_id": "j", "attempt": 1, "stage": "lunch", "variant": "champion", "unit": 0}, "stage"),
])
def test_malformed_payloads_are_refused_with_what_is_wrong(kind, data, problem):
    with pytest.raises(LedgerError) as caught:
        check_payload(kind, data)
    assert caught.value.code == "ledger.bad_payload"
    assert problem in caught.value.message and kind in caught.value.message


def test_a_float_field_takes_an_int_because_json_cannot_tell_them_apart():
    check_payload("run.resumed", {"pid": 12})
    check_payload("trial.planned", {"attempt": 1, "trial": 1, "stage": "trial", "plan_digest": "d", "plan_blob": "b",
                                    "level": 0, "looks": [2], "jobs": 4})


def test_a_payload_is_written_as_today_unset_keys_left_out_and_none_as_null():
    from ratchet.core.payloads import AttemptSubmitted, JobStarted

    campaign = AttemptSubmitted(attempt=2, tree="t", summary="s", report_blob="b", params=None, invalid=None,
                                diff_blob=None)
    compare = AttemptSubmitted(attempt=1, tree="t", summary="s", report_blob=None, params=None)
    assert campaign.to_data() == {"attempt": 2, "tree": "t", "summary": "s", "report_blob": "b", "params": None,
                                  "invalid": None, "diff_blob": None}
    assert compare.to_data() == {"attempt": 1, "tree": "t", "summary": "s", "report_blob": None, "params": None}
    started = JobStarted(job_id="j", attempt=1, stage="trial", variant="champion", unit=0, external_id="9", backend="x")
    assert "pid" not in started.to_data() and started.to_data()["external_id"] == "9"


def test_a_number_reads_back_as_written():
    from ratchet.core.payloads import read_payload

    planned = read_payload("trial.planned", {"attempt": 1, "trial": 1, "stage": "trial", "plan_digest": "d",
                                             "plan_blob": "b", "level": 0, "looks": [2], "jobs": 4})
    assert planned.to_data()["level"] == 0 and type(planned.to_data()["level"]) is int


def test_an_old_key_is_ignored_on_read_but_refused_on_write():
    from ratchet.core.payloads import RunAbandoned, read_payload

    assert read_payload("run.abandoned", {"pid": 3, "state_before": "interrupted"}) == RunAbandoned(pid=3)
    with pytest.raises(LedgerError, match="state_before: unknown key"):
        check_payload("run.abandoned", {"pid": 3, "state_before": "interrupted"})
