"""The measurement cache: keys over everything that affects a measurement; tolerant storage."""

from __future__ import annotations

import json

import pytest

from ratchet.compute.base import Resources
from ratchet.compute.cache import MeasurementCache, cache_key

BASE = dict(
    tree="a" * 40,
    command="python3 bench.py",
    seed=3,
    seed_env="RATCHET_SEED",
    env_set_by_ratchet={
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "RATCHET_SEED": "3",
        "RATCHET_VARIANT": "candidate",
        "RATCHET_UNIT": "u3",
    },
    sandbox_mode="bwrap",
    network=False,
    timeout_s=60.0,
    resources=Resources(),
    metric="score",
    kind="benchmark",
)


def test_key_ignores_what_differs_per_job():
    env = dict(BASE["env_set_by_ratchet"], RATCHET_JOB_ID="t9-u3", HOME="/x/scratch", TMPDIR="/x/scratch")
    assert cache_key(**BASE) == cache_key(**dict(BASE, env_set_by_ratchet=env))
    assert cache_key(**BASE) == cache_key(**dict(BASE, timeout_s=60))


@pytest.mark.parametrize(
    "change",
    [
        {"tree": "b" * 40},
        {"command": "python3 bench.py --fast"},
        {"seed": 4},
        {"seed_env": "SEED"},
        {"sandbox_mode": "none"},
        {"network": True},
        {"timeout_s": 61.0},
        {"resources": Resources(cpus=2)},
        {"metric": "loss"},
        {"kind": "examples"},
        {"env_set_by_ratchet": dict(BASE["env_set_by_ratchet"], PATH="/opt/bin")},
    ],
)
def test_key_changes_with_every_input(change):
    assert cache_key(**BASE) != cache_key(**dict(BASE, **change))


def test_put_get_round_trip_and_only_ok_is_stored(tmp_path):
    cache = MeasurementCache(tmp_path / "cache")
    key = cache_key(**BASE)
    assert cache.get(key) is None
    assert cache.put(key, {"state": "ok", "value": 0.93, "elapsed_s": 1.5})
    assert cache.get(key) == {"state": "ok", "value": 0.93, "elapsed_s": 1.5}
    other = cache_key(**dict(BASE, seed=5))
    assert not cache.put(other, {"state": "timeout", "value": None})
    assert cache.get(other) is None
    assert [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()] == [key.split(":")[1] + ".json"]


def test_corrupt_or_foreign_entries_are_misses(tmp_path):
    cache = MeasurementCache(tmp_path / "cache")
    key = cache_key(**BASE)
    cache.put(key, {"state": "ok", "value": 1.0})
    path = next((tmp_path / "cache").rglob("*.json"))
    path.write_text('{"key": "sha256:')
    assert cache.get(key) is None
    path.write_text(json.dumps({"key": cache_key(**dict(BASE, seed=9)), "measurement": {"state": "ok"}}))
    assert cache.get(key) is None
    path.write_text(json.dumps({"key": key, "measurement": {"state": "failed"}}))
    assert cache.get(key) is None
    assert cache.put(key, {"state": "ok", "value": 2.0}) and cache.get(key)["value"] == 2.0


def test_bad_keys_and_values_are_refused(tmp_path):
    cache = MeasurementCache(tmp_path / "cache")
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")
    with pytest.raises(ValueError):
        cache.put(cache_key(**BASE), {"state": "ok", "value": float("nan")})
    assert list((tmp_path / "cache").rglob("*.tmp")) == []
