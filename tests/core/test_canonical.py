"""Canonical JSON (RFC 8785) and digests."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from ratchet.core.canonical import CanonicalError, canonical_bytes, digest, is_digest


def test_key_order_and_whitespace_do_not_change_the_digest():
    assert digest({"b": 1, "a": [1.5, None]}) == digest({"a": [1.5, None], "b": 1})
    assert canonical_bytes({"b": 1, "a": True}) == b'{"a":true,"b":1}'


def test_digest_shape():
    d = digest([1, 2])
    assert is_digest(d) and d.startswith("sha256:") and len(d) == 71
    assert not is_digest("sha256:XYZ")


@pytest.mark.parametrize(
    "value, code",
    [
        (math.nan, "canonical.non_finite"),
        ({"x": [math.inf]}, "canonical.non_finite"),
        (dt.datetime(2026, 1, 1), "canonical.naive_datetime"),
        (object(), "canonical.unknown_type"),
        ({1: "a"}, "canonical.bad_key"),
        (2**60, "canonical.int_range"),
        (2.0**60, "canonical.no_round_trip"),
    ],
)
def test_values_without_a_canonical_form_are_refused(value, code):
    with pytest.raises(CanonicalError) as info:
        canonical_bytes(value)
    assert info.value.code == code


def test_aware_datetime_is_utc_text():
    t = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert canonical_bytes(t) == b'"2026-11-30T06:00:00Z"'
