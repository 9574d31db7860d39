"""A command agent's legs as the reports show them (`ratchet report --attempt`, its `--json`, the HTML
report): per leg its command line, how its process ended, its tokens and charge, the requests it made through
the channel and the last lines of its stdout and stderr, read from the blobs its `agent.leg` names.

Pure: blobs come in through a `read_blob` function (digest -> bytes, None when the blob cannot be
read) and their file names through `blob_file`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ratchet.core.payloads import AgentLeg, given

LEG_TAIL_LINES = 20
"""Lines of the end of a leg's stdout and of its stderr shown."""

LEG_TAIL_CHARS = 4_000
"""Characters of those lines shown at most (a CLI may print its whole answer as one JSON line)."""

ARG_SHOWN_CHARS = 160
"""Characters of one argument of a leg's command line shown (a `{prompt_text}` argument holds the
whole prompt); the rest is cut with a note."""

ReadBlob = Callable[[str], bytes | None]
"""A blob's bytes by digest, or None when it is missing or damaged (`ratchet verify` names it)."""


def tail_lines(data: bytes, lines: int = LEG_TAIL_LINES, chars: int = LEG_TAIL_CHARS) -> str:
    """The last `lines` lines of `data` (UTF-8, undecodable bytes replaced), at most their last
    `chars` characters."""
    text = data.decode("utf-8", "replace")
    kept = "\n".join(text.splitlines()[-lines:])
    return kept[-chars:] if len(kept) > chars else kept


def shown_arg(arg: str) -> str:
    """One argument of a command line as shown: whole up to ARG_SHOWN_CHARS, else cut with a note."""
    if len(arg) <= ARG_SHOWN_CHARS:
        return arg
    return arg[:ARG_SHOWN_CHARS] + f"… ({len(arg) - ARG_SHOWN_CHARS:,} more characters)"


def leg_views(legs: Sequence[AgentLeg], read_blob: ReadBlob, blob_file: Callable[[str], str]) -> list[dict[str, Any]]:
    """One JSON-ready dict per leg, in order: {"leg", "kind", "outcome", "problem", "state",
    "exit_code", "elapsed_s", "session_id", "tokens", "cost_usd" (the cost the CLI reported, None:
    none), "charged" (what the leg was charged against the model budgets, None: its use is unknown
    or not recorded), "command" (the argv, each argument cut by
    `shown_arg`; None when not recorded), "argv_blob", "message_blob", "requests" (the recorded
    requests: launches, sleep, submit, notices; None when none were read), "stdout", "stderr"}.
    Each stream: {"blob", "file", "bytes" (written by the leg), "kept" (bytes in the blob),
    "truncated", "tail" (tail_lines), "missing" (the blob cannot be read)}, or None when the run
    recorded no output for the leg (it predates output blobs, or no output file was left)."""
    out = []
    for leg in legs:
        argv = _json(given(leg.argv_blob), read_blob)
        requests = _json(leg.requests_blob, read_blob)
        out.append({
            "leg": leg.leg, "kind": leg.leg_kind, "outcome": leg.outcome, "problem": leg.problem,
            "state": leg.state, "exit_code": leg.exit_code, "elapsed_s": leg.elapsed_s,
            "session_id": leg.session_id, "tokens": dict(leg.tokens or {}), "cost_usd": given(leg.cost_usd),
            "charged": dict(charged) if (charged := given(leg.charged)) is not None else None,
            "command": [shown_arg(str(a)) for a in argv] if isinstance(argv, list) else None,
            "argv_blob": given(leg.argv_blob), "message_blob": leg.message_blob,
            "requests": {k: requests.get(k) for k in ("launches", "sleep", "submit", "notices")}
            if isinstance(requests, dict) else None,
            "stdout": _stream(given(leg.stdout_blob), given(leg.stdout_bytes), given(leg.stdout_truncated),
                              read_blob, blob_file),
            "stderr": _stream(given(leg.stderr_blob), given(leg.stderr_bytes), given(leg.stderr_truncated),
                              read_blob, blob_file),
        })
    return out


def _json(digest: str | None, read_blob: ReadBlob) -> Any:
    data = read_blob(digest) if digest else None
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _stream(digest: str | None, written: int | None, truncated: bool | None, read_blob: ReadBlob,
            blob_file: Callable[[str], str]) -> dict[str, Any] | None:
    if digest is None:
        return None
    data = read_blob(digest)
    return {"blob": digest, "file": blob_file(digest), "bytes": written,
            "kept": len(data) if data is not None else None, "truncated": bool(truncated),
            "tail": tail_lines(data) if data is not None else None, "missing": data is None}


def request_lines(requests: Mapping[str, Any] | None) -> list[str]:
    """The requests of one leg (a `leg_views` "requests" value) as short lines: each launch (name,
    array, minutes, command), the sleep and its note, the submit and its summary, each notice."""
    if not requests:
        return []
    out = []
    for r in requests.get("launches") or []:
        array = f" x{r.get('array')}" if (r.get("array") or 1) > 1 else ""
        out.append(f"launch {r.get('name')}{array} ({r.get('minutes', 0):g} min): {shown_arg(str(r.get('command')))}")
    sleep = requests.get("sleep")
    if sleep is not None:
        out.append("sleep" + (f": {shown_arg(str(sleep['note']))}" if sleep.get("note") else ""))
    submit = requests.get("submit")
    if submit is not None:
        out.append("submit" + (f": {shown_arg(str(submit['summary']))}" if submit.get("summary") else ""))
    out += [f"notice: {shown_arg(str(n))}" for n in requests.get("notices") or []]
    return out


def leg_heading(leg: Mapping[str, Any]) -> str:
    """One line for a leg: its number, kind and outcome, how its process ended, seconds, tokens, the
    charge."""
    parts = [f"leg {leg['leg']} {leg['kind']} -> {leg['outcome']}"]
    if leg.get("state") is not None:
        exit_code = leg.get("exit_code")
        parts.append(f"{leg['state']}, exit {exit_code if exit_code is not None else '-'}")
    if leg.get("elapsed_s") is not None:
        parts.append(f"{float(leg['elapsed_s']):.1f} s")
    tokens = leg.get("tokens") or {}
    if tokens:
        parts.append("tokens " + ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                                           for k, v in tokens.items()))
    charged = leg.get("charged") or {}
    if charged:
        parts.append("charged " + ", ".join(f"{k} {v:,.4f}" if k == "usd" else f"{k} {v:,.0f}"
                                            for k, v in charged.items()))
    if leg.get("problem"):
        parts.append(str(leg["problem"]))
    return "; ".join(parts)


def stream_heading(name: str, stream: Mapping[str, Any] | None) -> str:
    """How much of a stream a leg wrote and what is kept: `stdout: 1,234 bytes, last 20 lines:`,
    `stdout: 600,000 bytes, only the last 262,144 kept, last 20 lines:`, `stdout: (empty)`, `stdout:
    not recorded` or the blob named as missing."""
    if stream is None:
        return f"{name}: not recorded"
    if stream.get("missing"):
        return f"{name}: blob {stream['blob']} missing or damaged (ratchet verify names it)"
    written = stream.get("bytes")
    if not stream.get("kept"):
        return f"{name}: (empty)"
    size = f"{written:,} bytes" if isinstance(written, int) else f"{stream['kept']:,} bytes kept"
    cut = f", only the last {stream['kept']:,} kept" if stream.get("truncated") else ""
    return f"{name}: {size}{cut}, last {LEG_TAIL_LINES} lines:"
