"""Canonical JSON (RFC 8785, JCS) and content digests `sha256:<64 hex>`.

Everything content-addressed in Ratchet (plans, blobs, cache keys, the ledger's hash chain) goes
through here, so equal values always have equal bytes and equal digests.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import rfc8785

from ratchet.core.errors import RatchetError

DIGEST_PREFIX = "sha256:"
MAX_SAFE_INT = 2**53 - 1
"""Largest integer JSON numbers represent exactly (IEEE 754 double); RFC 8785 refuses larger."""


class CanonicalError(RatchetError):
    """A value that has no canonical JSON form (NaN, inf, naive datetime, unknown type)."""


def _normalize(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INT:
            raise CanonicalError(
                "canonical.int_range", f"{path or 'value'} = {value} is outside JSON's exact integer range (2**53 - 1)"
            )
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise CanonicalError("canonical.non_finite", f"{path or 'value'} is {value!r}: not representable in JSON")
        if value.is_integer() and abs(value) > MAX_SAFE_INT:
            # RFC 8785 writes it as integer text, which would not read back as the same value.
            raise CanonicalError("canonical.no_round_trip", f"{path or 'value'} = {value!r} does not round-trip")
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise CanonicalError(
                "canonical.naive_datetime", f"{path or 'value'} is a naive datetime", hint="attach a timezone"
            )
        return value.astimezone(_dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise CanonicalError("canonical.bad_key", f"{path or 'value'} has a non-string key {k!r}")
            out[k] = _normalize(v, f"{path}.{k}" if path else k)
        return out
    if isinstance(value, list | tuple):
        return [_normalize(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise CanonicalError(
        "canonical.unknown_type", f"{path or 'value'} has type {type(value).__name__}, which has no JSON form"
    )


_PY_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _python_writes_rfc8785(value: Any) -> bool:
    """True when Python's compact sorted JSON of `value` is already its RFC 8785 form: only dicts
    with ASCII string keys, lists, tuples, None, bools, ASCII strings (both escape the same
    characters and sort ASCII keys alike), integers within MAX_SAFE_INT, and floats with a fraction
    whose shortest repr has no exponent (Python and ECMAScript then print the same digits). Anything
    else (a datetime, a non-ASCII string, 2.0, 1e-05, a value to refuse) answers False. A loop over
    a stack, not recursion: this runs on every plan unit draw and ledger event."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii():
                return False
        elif kind is int:
            if not -MAX_SAFE_INT <= item <= MAX_SAFE_INT:
                return False
        elif kind is dict:
            for key in item:
                if type(key) is not str or not key.isascii():
                    return False
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            if item.is_integer() or not 1e-4 <= abs(item) < 1e16:
                return False
        elif not (item is None or item is True or item is False):
            return False
    return True


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON bytes of `value` (dicts, lists/tuples, str, int, finite float, bool,
    None, timezone-aware datetimes as ISO-8601 UTC strings).

    A value on which Python's C encoder already writes RFC 8785 (_python_writes_rfc8785: plans,
    most ledger events) is encoded by it, many times faster than the pure-Python rfc8785; any other
    is normalized and encoded by rfc8785.
    Raises CanonicalError (codes canonical.non_finite / naive_datetime / unknown_type / bad_key).
    """
    if _python_writes_rfc8785(value):
        return _PY_JSON.encode(value).encode("utf-8")
    return rfc8785.dumps(_normalize(value, ""))


def digest_bytes(data: bytes) -> str:
    """`sha256:<64 lowercase hex>` of raw bytes."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """`sha256:<64 hex>` of the canonical JSON of `value`. Raises CanonicalError like canonical_bytes."""
    return digest_bytes(canonical_bytes(value))


def is_digest(text: str) -> bool:
    """True when `text` is a well-formed `sha256:<64 lowercase hex>` digest."""
    if not text.startswith(DIGEST_PREFIX) or len(text) != len(DIGEST_PREFIX) + 64:
        return False
    return all(c in "0123456789abcdef" for c in text[len(DIGEST_PREFIX):])
