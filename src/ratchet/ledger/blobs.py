"""Content-addressed blobs of a run: `runs/<run_id>/blobs/<64 hex>` (plans, reports, diffs).

A blob's file name is the sha256 hex of its bytes and its content is exactly those bytes. Writes
are exclusive (temp file O_CREAT|O_EXCL|O_NOFOLLOW, fsync, hard link to the final name) and
idempotent; every read re-hashes the content (`ledger.blob_corrupt` on a mismatch).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ratchet.core.canonical import DIGEST_PREFIX, canonical_bytes, digest_bytes, is_digest
from ratchet.core.errors import LedgerError
from ratchet.ledger.files import fsync_dir, make_dirs, read_nofollow, write_temp


class BlobStore:
    """The blob directory `root` (`runs/<run_id>/blobs/`), created on the first put.

    Digests are `sha256:<64 lowercase hex>` strings (ratchet.core.canonical).
    """

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def path_of(self, digest: str) -> Path:
        """The file of blob `digest`. Raises LedgerError `ledger.bad_digest` for a malformed digest."""
        if not isinstance(digest, str) or not is_digest(digest):
            raise LedgerError("ledger.bad_digest", f"{digest!r} is not a sha256:<64 hex> digest")
        return self.root / digest[len(DIGEST_PREFIX) :]

    def has(self, digest: str) -> bool:
        """True when a file for `digest` exists (its content is not checked)."""
        return os.path.lexists(self.path_of(digest))

    def put_bytes(self, data: bytes) -> str:
        """Store `data` and return its digest. Idempotent: storing the same bytes twice is one
        file; an existing file whose content does not match its name is replaced. Raises OSError."""
        digest = digest_bytes(data)
        final = self.path_of(digest)
        if self._intact(final, digest):
            return digest
        make_dirs(self.root)
        tmp = write_temp(final, data)
        try:
            try:
                os.link(tmp, final)
            except FileExistsError:
                if not self._intact(final, digest):
                    os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(self.root)
        return digest

    def put_json(self, value: Any) -> str:
        """Store the canonical JSON bytes of `value`; return their digest. Raises CanonicalError."""
        return self.put_bytes(canonical_bytes(value))

    def get_bytes(self, digest: str) -> bytes:
        """The bytes of blob `digest`, re-hashed on read.

        Raises LedgerError `ledger.bad_digest`, `ledger.blob_missing` or `ledger.blob_corrupt`.
        """
        path = self.path_of(digest)
        try:
            data = read_nofollow(path)
        except FileNotFoundError:
            raise LedgerError("ledger.blob_missing", f"blob {digest} is not in {self.root}") from None
        except OSError as err:
            raise LedgerError("ledger.blob_corrupt", f"blob {path} cannot be read as a file: {err}") from None
        actual = digest_bytes(data)
        if actual != digest:
            raise LedgerError(
                "ledger.blob_corrupt",
                f"blob {path} has content {actual}, not {digest}: it was changed after it was written",
                "restore the run directory from a backup; the ledger cannot vouch for this blob",
            )
        return data

    def get_json(self, digest: str) -> Any:
        """The JSON value of blob `digest`. Raises like get_bytes, and `ledger.blob_not_json`."""
        data = self.get_bytes(digest)
        try:
            return json.loads(data)
        except ValueError:
            raise LedgerError("ledger.blob_not_json", f"blob {digest} is not JSON") from None

    def _intact(self, path: Path, digest: str) -> bool:
        try:
            return digest_bytes(read_nofollow(path)) == digest
        except OSError:
            return False
