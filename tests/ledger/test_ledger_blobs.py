"""Content-addressed blobs: round trip, idempotence, corruption detected on read."""

from __future__ import annotations

import hashlib

import pytest

from ratchet.core.canonical import canonical_bytes, digest
from ratchet.core.errors import LedgerError
from ratchet.ledger.blobs import BlobStore


@pytest.fixture
def store(run_dir) -> BlobStore:
    return BlobStore(run_dir.blobs)


def test_bytes_round_trip_under_their_sha256_name(store):
    data = b"plan bytes\x00\xff"
    blob = store.put_bytes(data)
    hexdigest = hashlib.sha256(data).hexdigest()
    assert blob == "sha256:" + hexdigest
    assert (store.root / hexdigest).read_bytes() == data
    assert store.get_bytes(blob) == data
    assert store.has(blob)


def test_json_is_stored_as_canonical_bytes(store):
    value = {"b": [1, 2.5, None], "a": "x"}
    blob = store.put_json(value)
    assert blob == digest(value)
    assert store.get_bytes(blob) == canonical_bytes(value)
    assert store.get_json(blob) == value


def test_putting_the_same_bytes_twice_is_one_file(store):
    first = store.put_bytes(b"same")
    mtime = store.path_of(first).stat().st_mtime_ns
    assert store.put_bytes(b"same") == first
    assert store.path_of(first).stat().st_mtime_ns == mtime
    assert [p.name for p in store.root.iterdir()] == [first.removeprefix("sha256:")]


def test_a_changed_blob_is_detected_on_read(store):
    blob = store.put_bytes(b"report v1")
    store.path_of(blob).write_bytes(b"report v2")
    with pytest.raises(LedgerError) as caught:
        store.get_bytes(blob)
    assert caught.value.code == "ledger.blob_corrupt"
    assert blob in caught.value.message


def test_putting_again_heals_a_corrupt_blob(store):
    blob = store.put_bytes(b"report v1")
    store.path_of(blob).write_bytes(b"garbage")
    assert store.put_bytes(b"report v1") == blob
    assert store.get_bytes(blob) == b"report v1"


def test_a_symlink_planted_at_a_blob_name_is_not_followed(store, tmp_path):
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    blob = digest({"plan": 1})
    store.root.mkdir(exist_ok=True)
    store.path_of(blob).symlink_to(outside)
    with pytest.raises(LedgerError) as caught:
        store.get_json(blob)
    assert caught.value.code == "ledger.blob_corrupt"
    store.put_json({"plan": 1})
    assert outside.read_bytes() == b"secret"
    assert not store.path_of(blob).is_symlink() and store.get_json(blob) == {"plan": 1}


def test_missing_blobs_and_bad_digests_are_reported(store):
    with pytest.raises(LedgerError) as missing:
        store.get_bytes(digest("absent"))
    assert missing.value.code == "ledger.blob_missing"
    for bad in ("sha256:abc", "md5:" + "0" * 64, "../../etc/passwd"):
        with pytest.raises(LedgerError) as caught:
            store.get_bytes(bad)
        assert caught.value.code == "ledger.bad_digest"


def test_a_blob_that_is_not_json_is_reported(store):
    blob = store.put_bytes(b"\x89PNG")
    with pytest.raises(LedgerError) as caught:
        store.get_json(blob)
    assert caught.value.code == "ledger.blob_not_json"


def test_no_temp_files_are_left_behind(store):
    for i in range(5):
        store.put_json({"i": i})
        store.put_json({"i": i})
    assert len(list(store.root.iterdir())) == 5
