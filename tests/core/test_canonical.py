"""Canonical JSON (RFC 8785) and digests."""

from __future__ import annotations

import datetime as dt
import math

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

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


_json_leaves = (
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not (f.is_integer() and abs(f) > 2**53 - 1))
    | st.text(max_size=12) | st.text(alphabet=st.characters(max_codepoint=127), max_size=12)
)
_json_values = st.recursive(_json_leaves, lambda inner: st.lists(inner, max_size=4)
                            | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(value=_json_values)
def test_the_fast_encoder_writes_exactly_rfc8785(value):
    assert canonical_bytes(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("value", [2.0, -0.0, 1e-05, 1e-07, 5e-05, 1e15, 0.0001, "é", {"ß": 1}, "\x7f\x01\n"])
def test_values_python_and_rfc8785_write_differently_still_get_rfc8785(value):
    assert canonical_bytes({"v": value}) == rfc8785.dumps({"v": value})
