"""Canonical JSON (RFC 8785, JCS) and content digests `sha256:<64 hex>`.

Everything content-addressed in Ratchet (plans, blobs, cache keys, the ledger's hash chain) goes
through here, so equal values always have equal bytes and equal digests.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
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


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical JSON bytes of `value` (dicts, lists/tuples, str, int, finite float, bool,
    None, timezone-aware datetimes as ISO-8601 UTC strings).

    Raises CanonicalError (codes canonical.non_finite / naive_datetime / unknown_type / bad_key).
    """
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
