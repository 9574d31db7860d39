"""Signed results: the project's Ed25519 key pair and the signature some ledger events carry.

The key pair lives under `.ratchet/keys/` of the project (never in a run directory, a report or a
job checkout): `ed25519.pem` (the private key, PKCS#8 PEM, mode 0600) and `ed25519.pub` (the public
key, SubjectPublicKeyInfo PEM). It is created on first use.

The events of SIGNED_KINDS carry `data.signature`:
`{"alg": "ed25519", "key_id", "data_digest", "sig"}` where `data_digest` is the digest of the
event's canonical data without its `signature` key and `sig` (base64) signs the canonical JSON of
`["ratchet.signature.v1", kind, seq, prev, data_digest]`: the event and the chain head it extends.
A holder of the private key can sign anything; see docs/verify.md for what a signature proves.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ratchet.core.canonical import canonical_bytes, digest, digest_bytes
from ratchet.core.errors import DataError
from ratchet.ledger.files import make_dirs, read_nofollow, write_temp

SIGNED_KINDS = frozenset({"trial.judged", "champion.promoted", "run.stopped"})
"""The event kinds that carry a signature (the results someone else relies on)."""

SIGNATURE_KEY = "signature"
"""The data key holding an event's signature."""

SIGNATURE_FORMAT = "ratchet.signature.v1"
ALGORITHM = "ed25519"
KEYS_DIR = Path(".ratchet") / "keys"
PRIVATE_NAME = "ed25519.pem"
PUBLIC_NAME = "ed25519.pub"
PRIVATE_MODE = 0o600
"""The private key's permissions: readable by its owner only."""


def key_id(public_raw: bytes) -> str:
    """The id of a public key: `sha256:<hex>` of its 32 raw bytes."""
    return digest_bytes(public_raw)


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def signed_message(kind: str, seq: int, prev: str, data_digest: str) -> bytes:
    """The bytes an event's signature covers: the canonical JSON of
    `[SIGNATURE_FORMAT, kind, seq, prev, data_digest]`."""
    return canonical_bytes([SIGNATURE_FORMAT, kind, seq, prev, data_digest])


def unsigned(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` without its signature (what `data_digest` covers)."""
    return {k: v for k, v in data.items() if k != SIGNATURE_KEY}


@dataclass(frozen=True)
class Signer:
    """Signs ledger events with the project's private key. Build with `load_signer`."""

    private: Ed25519PrivateKey

    @property
    def public_raw(self) -> bytes:
        """The public key's 32 raw bytes."""
        return _raw(self.private.public_key())

    def public_record(self) -> dict[str, str]:
        """What `run.started` records of the key: {"alg", "key_id", "public" (hex)}."""
        raw = self.public_raw
        return {"alg": ALGORITHM, "key_id": key_id(raw), "public": raw.hex()}

    def sign(self, kind: str, seq: int, prev: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """`data` with its `signature` for an event of `kind` appended as `seq` after the line whose
        digest is `prev`. Raises CanonicalError for data without a canonical form."""
        body = unsigned(data)
        data_digest = digest(body)
        sig = self.private.sign(signed_message(kind, seq, prev, data_digest))
        return {**body, SIGNATURE_KEY: {"alg": ALGORITHM, "key_id": key_id(self.public_raw),
                                        "data_digest": data_digest, "sig": base64.b64encode(sig).decode()}}


def check_signature(public_raw: bytes, kind: str, seq: int, prev: str, data: Mapping[str, Any]) -> str | None:
    """Why the signature of an event (kind, seq, prev, data) does not hold for the key `public_raw`,
    or None when it does: a missing or malformed signature, another key, a data digest that is not
    the data's, or a signature that does not verify."""
    sig = data.get(SIGNATURE_KEY)
    if not isinstance(sig, Mapping):
        return "the event carries no signature"
    if sig.get("alg") != ALGORITHM:
        return f"signature algorithm {sig.get('alg')!r} is not {ALGORITHM}"
    if sig.get("key_id") != key_id(public_raw):
        return f"signed by key {sig.get('key_id')}, not by {key_id(public_raw)}"
    actual = digest(unsigned(data))
    if sig.get("data_digest") != actual:
        return f"the signed data digest {sig.get('data_digest')} is not the data's ({actual}): the data changed"
    try:
        raw_sig = base64.b64decode(str(sig.get("sig")), validate=True)
        Ed25519PublicKey.from_public_bytes(public_raw).verify(raw_sig, signed_message(kind, seq, prev, actual))
    except (InvalidSignature, ValueError, binascii.Error):
        return "the signature does not verify for this event and chain head"
    return None


def load_signer(project_root: str | os.PathLike[str]) -> Signer:
    """The project's signer, creating the key pair under `.ratchet/keys/` on first use (private key
    0600, written exclusively). Raises DataError `keys.unreadable` for a key file that is not an
    Ed25519 PEM private key, or whose permissions let others read it."""
    keys = Path(project_root) / KEYS_DIR
    private_path = keys / PRIVATE_NAME
    if not private_path.exists():
        _create(keys)
    if os.stat(private_path).st_mode & 0o077:
        raise DataError("keys.unreadable", f"{private_path} can be read by other users",
                        hint=f"chmod 600 {private_path}")
    try:
        key = serialization.load_pem_private_key(read_nofollow(private_path), password=None)
    except (ValueError, TypeError, OSError) as exc:
        raise DataError("keys.unreadable", f"{private_path} is not a readable private key: {exc}",
                        hint="restore it from a backup, or move it away to create a new key pair") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise DataError("keys.unreadable", f"{private_path} is not an Ed25519 private key")
    return Signer(key)


def _create(keys: Path) -> None:
    make_dirs(keys)
    os.chmod(keys, 0o700)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    for name, data, mode in ((PRIVATE_NAME, pem, PRIVATE_MODE), (PUBLIC_NAME, public, 0o644)):
        tmp = write_temp(keys / name, data)
        os.chmod(tmp, mode)
        try:
            os.link(tmp, keys / name)  # never replaces a key another process created meanwhile
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)


def read_public_key(path: str | os.PathLike[str]) -> bytes:
    """The raw 32 bytes of the Ed25519 public key in the file at `path`: a PEM public key (as in
    `.ratchet/keys/ed25519.pub`) or 64 hex digits. Raises DataError `keys.bad_public_key`."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DataError("keys.bad_public_key", f"cannot read public key {path}: {exc}") from None
    text = data.strip()
    try:
        if text.startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(text)
            if not isinstance(key, Ed25519PublicKey):
                raise ValueError("not an Ed25519 key")
            return _raw(key)
        raw = bytes.fromhex(text.decode("ascii"))
        Ed25519PublicKey.from_public_bytes(raw)
        return raw
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError("keys.bad_public_key", f"{path} is not an Ed25519 public key: {exc}",
                        hint="pass the project's .ratchet/keys/ed25519.pub (PEM) or 64 hex digits") from None
