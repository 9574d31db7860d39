"""The channel under attack: whatever the agent plants in `.ratchet-sys/`, the kernel never follows
a symlink, never blocks on a FIFO, never writes through an existing inode, and refuses (with a
message for the agent) every request that breaks a rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.agents.command.limits import MAX_ARRAY, MAX_LAUNCH_MINUTES, MAX_LAUNCHES_PER_SLEEP, REQUEST_CAP_BYTES
from ratchet.agents.command.requests import read_leg


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / ".ratchet-sys" / "requests").mkdir(parents=True)
    return tmp_path / "ws"


def _request(ws: Path, name: str, payload) -> Path:
    path = ws / ".ratchet-sys" / "requests" / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


LAUNCH = {"kind": "launch", "name": "probe", "command": "python3 bench.py", "minutes": 5}


def _leg(ws: Path, names: set[str] | None = None):
    with Channel(ws) as channel:
        return read_leg(channel, set() if names is None else names)


def test_a_symlinked_channel_is_refused_and_its_target_untouched(tmp_path: Path):
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (elsewhere / "wake.md").write_text("precious\n")
    (ws / ".ratchet-sys").symlink_to(elsewhere)
    with pytest.raises(ChannelError) as err:
        Channel(ws)
    assert err.value.code == "channel.symlink"
    assert (elsewhere / "wake.md").read_text() == "precious\n"


def test_a_fifo_in_place_of_a_request_does_not_block_and_is_removed(ws: Path):
    fifo = ws / ".ratchet-sys" / "requests" / "0001-probe.json"
    os.mkfifo(fifo)
    leg = _leg(ws)
    assert leg.launches == [] and not fifo.exists() and not fifo.is_symlink()
    assert any("not a regular file" in n for n in leg.notices)


def test_a_fifo_in_place_of_a_marker_does_not_block(ws: Path):
    os.mkfifo(ws / ".ratchet-sys" / "sleep.json")
    os.mkfifo(ws / ".ratchet-sys" / "submit.json")
    leg = _leg(ws)
    assert leg.sleep is None and leg.submit is None
    assert sum("not a regular file" in n for n in leg.notices) == 2
    assert not (ws / ".ratchet-sys" / "sleep.json").exists()


def test_a_symlinked_request_is_not_followed(ws: Path, tmp_path: Path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(LAUNCH))
    (ws / ".ratchet-sys" / "requests" / "0001-probe.json").symlink_to(secret)
    leg = _leg(ws)
    assert leg.launches == [] and secret.exists()
    assert any("not a regular file" in n for n in leg.notices)


def test_a_hard_link_at_the_temporary_name_is_never_written_through(ws: Path, tmp_path: Path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.link(victim, ws / ".ratchet-sys" / ".wake.md.guessed.tmp")
    os.link(victim, ws / ".ratchet-sys" / "wake.md")
    with Channel(ws, tokens=iter(["guessed", "fresh"])) as channel:
        channel.write(["wake.md"], b"the wake message\n")
    assert victim.read_text() == "precious\n"
    assert (ws / ".ratchet-sys" / "wake.md").read_text() == "the wake message\n"
    assert os.stat(victim).st_nlink == 2  # the planted link at the temp name stays; wake.md is a new inode


def test_a_symlink_where_a_results_folder_belongs_is_replaced_not_followed(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".ratchet-sys" / "results").symlink_to(outside)
    with Channel(ws) as channel:
        channel.write(["results", "probe", "0", "result.json"], b"{}")
    assert list(outside.iterdir()) == []
    assert (ws / ".ratchet-sys" / "results" / "probe" / "0" / "result.json").read_bytes() == b"{}"


def test_an_oversized_request_is_refused_unread_and_removed(ws: Path):
    path = _request(ws, "0001-big.json", {**LAUNCH, "why": "x" * (REQUEST_CAP_BYTES + 10)})
    leg = _leg(ws)
    assert leg.launches == [] and not path.exists()
    assert any("larger than" in n for n in leg.notices)


def test_unknown_keys_wrong_types_and_oversized_fields_are_refused_with_a_message(ws: Path):
    _request(ws, "0001-a.json", {**LAUNCH, "name": "a", "priority": "high"})
    _request(ws, "0002-b.json", {**LAUNCH, "name": "b", "array": True})
    _request(ws, "0003-c.json", {**LAUNCH, "name": "c", "command": "x" * 2001})
    _request(ws, "0004-d.json", {**LAUNCH, "name": "d", "why": "y" * 201})
    _request(ws, "0005-e.json", "{not json")
    leg = _leg(ws)
    assert leg.launches == []
    text = "\n".join(leg.notices)
    assert "priority: Extra inputs are not permitted" in text
    assert "array: Input should be a valid integer" in text
    assert "command: String should have at most 2000 characters" in text
    assert "why: String should have at most 200 characters" in text
    assert "not UTF-8 JSON" in text
    assert os.listdir(ws / ".ratchet-sys" / "requests") == []  # every request removed, valid or not


def test_an_array_of_ten_thousand_and_long_minutes_are_clamped(ws: Path):
    _request(ws, "0001-sweep.json", {**LAUNCH, "name": "sweep", "array": 10_000, "minutes": 10_000})
    (launch,) = _leg(ws).launches
    assert launch.array == MAX_ARRAY and launch.minutes == MAX_LAUNCH_MINUTES and launch.concurrency == MAX_ARRAY


def test_artifact_paths_with_traversal_or_absolute_are_refused(ws: Path):
    _request(ws, "0001-a.json", {**LAUNCH, "name": "a", "artifacts": ["../../etc/passwd"]})
    _request(ws, "0002-b.json", {**LAUNCH, "name": "b", "artifacts": ["/etc/passwd"]})
    leg = _leg(ws)
    assert leg.launches == []
    assert sum("artifacts" in n for n in leg.notices) == 2


def test_more_than_eight_launches_per_sleep_and_reused_names_are_refused(ws: Path):
    for i in range(MAX_LAUNCHES_PER_SLEEP + 2):
        _request(ws, f"{i:04d}-l{i}.json", {**LAUNCH, "name": f"l{i}"})
    _request(ws, "9999-old.json", {**LAUNCH, "name": "old"})
    leg = _leg(ws, names={"old"})
    assert [r.name for r in leg.launches] == [f"l{i}" for i in range(MAX_LAUNCHES_PER_SLEEP)]
    assert sum("at most 8 launches per sleep" in n for n in leg.notices) == 2
    assert any("old: refused, this name was already used" in n for n in leg.notices)


def test_a_submit_needs_a_report_within_the_limit(ws: Path):
    (ws / ".ratchet-sys" / "submit.json").write_text(json.dumps({"kind": "submit", "report": "r" * 8001}))
    leg = _leg(ws)
    assert leg.submit is None and any("report" in n for n in leg.notices)
    (ws / ".ratchet-sys" / "submit.json").write_text(json.dumps({"kind": "submit", "report": "fine"}))
    assert _leg(ws).submit.report == "fine"


def test_a_report_of_only_whitespace_is_refused_by_the_kernel_too(ws: Path):
    (ws / ".ratchet-sys" / "submit.json").write_text(json.dumps({"kind": "submit", "report": " \n\t \n"}))
    leg = _leg(ws)
    assert leg.submit is None
    assert any(n.startswith("submit.json: refused: report: ") and "only whitespace" in n for n in leg.notices), \
        leg.notices
    assert not (ws / ".ratchet-sys" / "submit.json").exists()


def test_a_launchs_why_is_folded_to_one_line_by_the_kernel(ws: Path):
    _request(ws, "0001-a.json", {**LAUNCH, "name": "a", "why": "  compare\n\nwindows\t 5 and 9 \n"})
    (launch,) = _leg(ws).launches
    assert launch.why == "compare windows 5 and 9"


def test_a_symlink_planted_at_the_agents_home_is_replaced_not_followed(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".ratchet-sys" / "home").symlink_to(outside)
    with Channel(ws) as channel:
        channel.ensure_dir(["home", "config"])
    assert list(outside.iterdir()) == []
    assert (ws / ".ratchet-sys" / "home" / "config").is_dir() and not (ws / ".ratchet-sys" / "home").is_symlink()


def test_what_one_leg_may_ask_the_kernel_runs_whole():
    from ratchet.agents.base import MAX_JOBS_PER_LAUNCH, MAX_LAUNCH_TIMEOUT_S
    from ratchet.agents.command.limits import MAX_JOBS_PER_LEG

    assert MAX_JOBS_PER_LEG <= MAX_JOBS_PER_LAUNCH, "a full leg of launches would lose jobs to the kernel's cap"
    assert MAX_LAUNCH_MINUTES * 60.0 == MAX_LAUNCH_TIMEOUT_S
