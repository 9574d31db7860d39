"""The ledger reader's fast canonical check (ledger/verify._LineReader) agrees with RFC 8785: a line
it accepts is exactly `canonical_bytes` of what it read (hypothesis, real orjson and rfc8785)."""

from __future__ import annotations

import json

import orjson
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from ratchet.core.canonical import CanonicalError, canonical_bytes
from ratchet.ledger.verify import _LineReader

finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(
    st.none() | st.booleans() | finite | st.integers(-(2**60), 2**60) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=3000, deadline=None)
@given(finite)
def test_orjson_writes_a_float_as_rfc8785_whenever_it_writes_no_exponent_and_it_is_not_integral(x):
    written = orjson.dumps(x)
    if b"e" not in written and not x.is_integer():
        assert written == rfc8785.dumps(x)


@settings(max_examples=1500, deadline=None)
@given(values)
def test_a_line_the_reader_calls_canonical_is_the_rfc8785_form_of_what_it_read(value):
    for text in (json.dumps({"data": value}, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
                 json.dumps({"data": value}, sort_keys=True, separators=(",", ":"))):
        line = text.encode("utf-8", "surrogatepass")
        reader = _LineReader()
        try:
            obj = reader.loads(line)
            canonical = reader.is_canonical(obj, line)
        except (ValueError, CanonicalError):  # no canonical form (an integer beyond 2**53, a lone surrogate)
            continue
        try:
            expected = canonical_bytes(obj) == line
        except (ValueError, CanonicalError):
            expected = False
        assert canonical == expected
        assert obj == json.loads(line)
