"""What an agent asks through the channel, re-validated by the kernel.

A leg's requests are files the `ratchet-sys` tool wrote: `requests/*.json` (one `launch` each) and
the markers `sleep.json` and `submit.json` at the channel's top. The kernel trusts none of them:
each is read through `Channel.read` (regular files only, size-capped), removed whether valid or not,
and validated by a strict model (unknown keys, wrong types, a bool where an int belongs, oversized
fields, traversal or absolute artifact paths, a report of only whitespace are refused). Arrays and
minutes are clamped; a launch's `why` is folded to one line. Every refusal and clamp becomes a
notice the agent reads at its next wake.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ratchet.agents.base import MAX_REPORT_CHARS, MAX_SUMMARY_CHARS
from ratchet.agents.command.channel import Channel, ChannelError
from ratchet.agents.command.limits import (
    MAX_ARRAY,
    MAX_ARTIFACTS,
    MAX_COMMAND_CHARS,
    MAX_LAUNCH_MINUTES,
    MAX_LAUNCHES_PER_SLEEP,
    MAX_NAME_CHARS,
    MAX_NOTE_CHARS,
    MAX_REQUEST_FILES,
    MAX_WHY_CHARS,
    REQUEST_CAP_BYTES,
)
from ratchet.compute.artifacts import check_artifact_path
from ratchet.core.vocab import LegOutcome

REQUESTS_DIR = "requests"
SLEEP_MARKER = "sleep.json"
SUBMIT_MARKER = "submit.json"

NAME_RE = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_NAME_CHARS}}}")


class _Request(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class LaunchRequest(_Request):
    """`ratchet-sys launch`: run `command` (shell) `array` times (SWEEP_INDEX = 0..array-1), at
    most `concurrency` at once, each for at most `minutes`, copying `artifacts` back."""

    kind: Literal["launch"]
    name: Annotated[str, Field(pattern=NAME_RE.pattern)]
    command: Annotated[str, Field(min_length=1, max_length=MAX_COMMAND_CHARS)]
    minutes: Annotated[float, Field(gt=0)] = 10.0
    artifacts: Annotated[list[str], Field(max_length=MAX_ARTIFACTS)] = []
    array: Annotated[int, Field(ge=1)] = 1
    concurrency: Annotated[int, Field(ge=1)] | None = None
    why: Annotated[str, Field(max_length=MAX_WHY_CHARS)] = ""

    @field_validator("artifacts")
    @classmethod
    def _artifacts(cls, value: list[str]) -> list[str]:
        return [check_artifact_path(p) for p in value]

    @field_validator("why", mode="before")
    @classmethod
    def _why(cls, value: Any) -> Any:
        return fold_line(value) if isinstance(value, str) else value

    def clamped(self) -> tuple[LaunchRequest, list[str]]:
        """This request with `array`, `minutes` and `concurrency` clamped to the limits, and one
        notice per clamp."""
        notes = []
        array, minutes = min(self.array, MAX_ARRAY), min(self.minutes, MAX_LAUNCH_MINUTES)
        concurrency = min(self.concurrency or array, array)
        if array != self.array:
            notes.append(f"launch {self.name}: array {self.array} clamped to {MAX_ARRAY}")
        if minutes != self.minutes:
            notes.append(f"launch {self.name}: {self.minutes:g} minutes clamped to {MAX_LAUNCH_MINUTES:g}")
        return self.model_copy(update={"array": array, "minutes": minutes, "concurrency": concurrency}), notes


class SleepRequest(_Request):
    """`ratchet-sys sleep`: end the leg; wake me when my launches finished."""

    kind: Literal["sleep"]
    note: Annotated[str, Field(max_length=MAX_NOTE_CHARS)] = ""


class SubmitRequest(_Request):
    """`ratchet-sys submit`: my workspace is the candidate; `report` says why."""

    kind: Literal["submit"]
    report: Annotated[str, Field(min_length=1, max_length=MAX_REPORT_CHARS)]
    summary: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS)] = ""

    @field_validator("report")
    @classmethod
    def _report(cls, value: str) -> str:
        if not value.strip():  # the tool refuses it too; a hand-written submit.json is refused here
            raise ValueError("the report holds only whitespace; say what ran, what it measured and why")
        return value


def fold_line(text: str) -> str:
    """`text` on one line: every run of whitespace (newlines included) becomes one space, and the
    ends are stripped (a launch's `why`, as the tool folds it)."""
    return " ".join(text.split())


@dataclass
class LegRequests:
    """What one leg asked, after validation. launches: accepted (clamped) launch requests, in file
    name order. sleep / submit: the markers, when valid. notices: one line per refusal or clamp,
    for the wake message. seen: every file read (name, size, accepted), for the record."""

    launches: list[LaunchRequest] = field(default_factory=list)
    sleep: SleepRequest | None = None
    submit: SubmitRequest | None = None
    notices: list[str] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The record of this leg's requests (JSON-ready)."""
        return {
            "launches": [r.model_dump() for r in self.launches],
            "sleep": self.sleep.model_dump() if self.sleep else None,
            "submit": self.submit.model_dump() if self.submit else None,
            "notices": list(self.notices), "seen": list(self.seen),
        }


def read_leg(channel: Channel, taken_names: set[str]) -> LegRequests:
    """Read, remove and validate every request and marker of one leg. taken_names: launch names
    used earlier in the attempt (a name is used once: it names `results/<name>/`)."""
    leg = LegRequests()
    names = [n for n in channel.listdir([REQUESTS_DIR]) if not n.startswith(".")]
    for extra in names[MAX_REQUEST_FILES:]:
        channel.remove([REQUESTS_DIR, extra])
    if len(names) > MAX_REQUEST_FILES:
        leg.notices.append(f"{len(names) - MAX_REQUEST_FILES} request files beyond the first "
                           f"{MAX_REQUEST_FILES} were removed unread")
    for name in names[:MAX_REQUEST_FILES]:
        request = _take(channel, [REQUESTS_DIR, name], LaunchRequest, leg)
        if request is not None:
            _accept_launch(request, leg, taken_names)
    leg.sleep = _take(channel, [SLEEP_MARKER], SleepRequest, leg, optional=True)
    leg.submit = _take(channel, [SUBMIT_MARKER], SubmitRequest, leg, optional=True)
    return leg


def _accept_launch(request: LaunchRequest, leg: LegRequests, taken_names: set[str]) -> None:
    if request.name in taken_names:
        leg.notices.append(f"launch {request.name}: refused, this name was already used in this attempt")
        return
    if len(leg.launches) >= MAX_LAUNCHES_PER_SLEEP:
        leg.notices.append(f"launch {request.name}: refused, at most {MAX_LAUNCHES_PER_SLEEP} launches per sleep")
        return
    clamped, notes = request.clamped()
    leg.notices += notes
    leg.launches.append(clamped)
    taken_names.add(request.name)


def _take(channel: Channel, path: list[str], model: type[_Request], leg: LegRequests,
          optional: bool = False) -> Any:
    """Read, remove and validate one request file; None (with a notice) when it is refused."""
    where = "/".join(path)
    try:
        raw = channel.read(path, REQUEST_CAP_BYTES)
    except ChannelError as exc:
        if not (optional and exc.code == "channel.missing"):
            leg.notices.append(f"{where}: refused: {exc.message}")
            leg.seen.append({"file": where, "accepted": False, "problem": exc.code})
        channel.remove(path)
        return None
    channel.remove(path)
    try:
        value = model.model_validate(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problem = f"not UTF-8 JSON ({exc})"
    except ValidationError as exc:
        problem = describe_errors(exc)
    else:
        leg.seen.append({"file": where, "bytes": len(raw), "accepted": True})
        return value
    leg.notices.append(f"{where}: refused: {problem}")
    leg.seen.append({"file": where, "bytes": len(raw), "accepted": False, "problem": problem[:500]})
    return None


def describe_errors(exc: ValidationError, limit: int = 5) -> str:
    """A pydantic error as one line per problem (field: message), without echoing large inputs."""
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(x) for x in err["loc"]) or "(request)"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


SLEPT: tuple[LegOutcome, ...] = ("launch", "checkpoint")
"""Leg outcomes that end in a sleep: each costs one of MAX_SLEEPS_PER_ATTEMPT, and the loop wakes the
agent after it (with the launches' results, or at once after a checkpoint)."""


def leg_outcome(requests: LegRequests) -> LegOutcome:
    """How a leg that ran ended, from what it asked: a submit, launches, a sleep alone, or nothing."""
    if requests.submit is not None:
        return "submit"
    if requests.launches:
        return "launch"
    return "checkpoint" if requests.sleep is not None else "none"
