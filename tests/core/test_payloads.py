"""Event payloads: one model per kind, refused before anything is written when malformed; the
reducer and the index read only keys the models define."""

from __future__ import annotations

import inspect
import re
from typing import get_args

import pytest

from ratchet.core.errors import LedgerError
from ratchet.core.events import EVENT_KINDS, EventKind
from ratchet.core.payloads import PAYLOADS, check_payload
from ratchet.core.state import Folder as _Folder
from ratchet.ledger.index import Index


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


def _read_keys(source: str) -> set[str]:
    keys = set(re.findall(r'd\.get\("(\w+)"', source)) | set(re.findall(r'd\["(\w+)"\]', source))
    for args in re.findall(r"_pick\(d, ([^)]*)\)", source):
        keys |= set(re.findall(r'"(\w+)"', args))
        if "_JOB_KEYS" in args:
            from ratchet.ledger.index import _JOB_KEYS

            keys |= set(_JOB_KEYS)
    return keys


@pytest.mark.parametrize("kind", sorted(EVENT_KINDS))
def test_the_reducer_and_the_index_read_only_keys_the_payload_defines(kind):
    fields = set(PAYLOADS[kind].model_fields)
    name = kind.replace(".", "_")
    for owner, method in ((_Folder, f"on_{name}"), (Index, f"_on_{name}")):
        read = _read_keys(inspect.getsource(getattr(owner, method)))
        assert read <= fields, f"{owner.__name__}.{method} reads {sorted(read - fields)}, not in {kind}'s payload"
