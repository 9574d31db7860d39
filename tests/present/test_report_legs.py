"""A command agent's legs as the reports show them (present/report/legs.py): the end of each
stream, long arguments cut, and legs of runs recorded before their output was kept."""

from __future__ import annotations

from ratchet.core.canonical import canonical_bytes, digest_bytes
from ratchet.core.payloads import AgentLeg
from ratchet.present.report.legs import (
    ARG_SHOWN_CHARS,
    LEG_TAIL_LINES,
    leg_heading,
    leg_views,
    request_lines,
    stream_heading,
    tail_lines,
)


def test_the_tail_is_the_last_lines_and_at_most_its_last_characters():
    data = "".join(f"line {i}\n" for i in range(100)).encode()
    assert tail_lines(data).splitlines() == [f"line {i}" for i in range(100 - LEG_TAIL_LINES, 100)]
    assert tail_lines(b"x" * 10_000 + b"\nend", chars=50) == "x" * 46 + "\nend"
    assert tail_lines(b"\xff\xfeok") == "\ufffd\ufffdok"


def test_a_leg_recorded_before_outputs_were_kept_shows_as_not_recorded():
    old = AgentLeg(attempt=1, leg=1, leg_kind="start", outcome="none", state="ok", exit_code=0, elapsed_s=1.5)
    (view,) = leg_views([old], lambda d: None, str)
    assert view["stdout"] is None and view["command"] is None and view["requests"] is None
    assert stream_heading("stdout", view["stdout"]) == "stdout: not recorded"
    assert leg_heading(view) == "leg 1 start -> none; ok, exit 0; 1.5 s"


def test_a_leg_shows_its_command_requests_output_and_a_missing_blob():
    blobs: dict[str, bytes] = {}

    def put(data: bytes) -> str:
        blobs[digest_bytes(data)] = data
        return digest_bytes(data)

    argv = ["claude", "-p", "p" * 1000]
    requests = {"launches": [{"name": "x", "command": "python3 x.py", "array": 3, "minutes": 2.0}],
                "sleep": {"kind": "sleep", "note": "wait"}, "submit": None, "notices": ["launch y refused"]}
    leg = AgentLeg(attempt=1, leg=2, leg_kind="wake", outcome="launch", state="failed", exit_code=1, elapsed_s=3,
                   tokens={"input_tokens": 1200, "output_tokens": 30}, argv_blob=put(canonical_bytes(argv)),
                   requests_blob=put(canonical_bytes(requests)), stdout_blob=put(b"a\nb\n"),
                   stderr_blob="sha256:" + "0" * 64, stdout_bytes=300_000, stderr_bytes=10,
                   stdout_truncated=True, stderr_truncated=False)
    (view,) = leg_views([leg], blobs.get, lambda d: f"blobs/{d[7:]}")
    assert view["command"][:2] == ["claude", "-p"]
    assert view["command"][2] == "p" * ARG_SHOWN_CHARS + f"… ({1000 - ARG_SHOWN_CHARS:,} more characters)"
    assert request_lines(view["requests"]) == ["launch x x3 (2 min): python3 x.py", "sleep: wait",
                                               "notice: launch y refused"]
    assert view["stdout"] == {"blob": leg.stdout_blob, "file": f"blobs/{str(leg.stdout_blob)[7:]}", "bytes": 300_000,
                              "kept": 4, "truncated": True, "tail": "a\nb", "missing": False}
    assert stream_heading("stdout", view["stdout"]) == "stdout: 300,000 bytes, only the last 4 kept, last 20 lines:"
    assert view["stderr"]["missing"] and "missing or damaged" in stream_heading("stderr", view["stderr"])
    assert leg_heading(view) == ("leg 2 wake -> launch; failed, exit 1; 3.0 s; "
                                 "tokens input_tokens 1,200, output_tokens 30")


def test_a_charged_leg_shows_its_cost_and_charge():
    leg = AgentLeg(attempt=1, leg=1, leg_kind="start", outcome="launch", state="ok", exit_code=0, elapsed_s=2,
                   tokens={"input_tokens": 4_200_000, "output_tokens": 900}, cost_usd=2.5,
                   charged={"input_tokens": 4_200_000, "output_tokens": 900, "usd": 2.5})
    (view,) = leg_views([leg], lambda d: None, str)
    assert view["cost_usd"] == 2.5 and view["charged"] == {"input_tokens": 4_200_000, "output_tokens": 900, "usd": 2.5}
    assert leg_heading(view).endswith("; charged input_tokens 4,200,000, output_tokens 900, usd 2.5000")
    (unknown,) = leg_views([AgentLeg(attempt=1, leg=1, leg_kind="start", outcome="none")], lambda d: None, str)
    assert unknown["charged"] is None and unknown["cost_usd"] is None
