"""The command agent's limits (docs/agents-command.md), kernel-enforced. `tool.py` repeats them for fast
feedback to the agent; these are the truth: the kernel re-validates every request against them.
The limits of every agent (a launched job's time, a submit's report and summary) are in
`agents.base`.
"""

from __future__ import annotations

from ratchet.agents.base import MAX_LAUNCH_TIMEOUT_S, MAX_LAUNCHES_PER_ATTEMPT
from ratchet.compute.artifacts import (  # noqa: F401  (the collector's limits, listed here with the others)
    ARTIFACT_CAP_BYTES,
    MAX_ARTIFACT_PATH_CHARS,
    MAX_ARTIFACTS,
)

CHANNEL_DIR = ".ratchet-sys"
"""The channel folder at the top of an agent's workspace (never part of a candidate tree)."""

TOOL_NAME = "ratchet-sys"
"""The stdlib-only program the kernel copies into the channel at each leg."""

MAX_LAUNCHES_PER_SLEEP = 8
"""Launch requests honoured per sleep (per leg); more are refused with a message."""

MAX_SLEEPS_PER_ATTEMPT = MAX_LAUNCHES_PER_ATTEMPT
"""Legs ending in a sleep (with launches, or a checkpoint without) one attempt may take; one more ends
the attempt `gave_up`."""

MAX_ARRAY = 16
"""Jobs of one launch (its array); a larger array is clamped to this."""

MAX_JOBS_PER_LEG = MAX_LAUNCHES_PER_SLEEP * MAX_ARRAY
"""Jobs one `Launch` action of the command agent may carry (8 launches of 16)."""

MAX_COMMAND_CHARS = 2000
"""Characters of a launched command."""

MAX_WHY_CHARS = 200
"""Characters of a launch's `why`."""

MAX_NOTE_CHARS = 2000
"""Characters of a sleep's note."""

MAX_LAUNCH_MINUTES = MAX_LAUNCH_TIMEOUT_S / 60.0
"""Minutes one launched job may run (the kernel's MAX_LAUNCH_TIMEOUT_S in the channel's unit); more
is clamped to this."""

MAX_NAME_CHARS = 64
"""Characters of a launch's name ([A-Za-z0-9_.-])."""

REQUEST_CAP_BYTES = 64 * 1024
"""Bytes of one request or marker file the kernel reads; a larger file is refused unread."""

MAX_REQUEST_FILES = 64
"""Files of `requests/` read per leg; the others are removed unread, with a message."""

OUTPUT_TAIL_CHARS = 2000
"""Characters of a launched job's stdout and stderr tails shown in a wake message."""

NUDGES_PER_ATTEMPT = 1
"""Times an agent that exits without a request is woken again before its attempt ends `gave_up`."""

LEG_OUTPUT_CAP_BYTES = 256 * 1024
"""Bytes of a leg's stdout, and separately of its stderr, kept with the run: the end of the stream
(its last bytes, where a CLI says how it ended); a leg that wrote more is recorded as truncated,
with the count of bytes it wrote."""

START_GRACE_S = 1.0
"""Seconds within which a leg that failed (a non-zero exit code) with nothing done (no request, no file of the workspace
changed) is read as a CLI that did not start (`start_failed`), not as an agent that chose to stop."""

STDERR_TAIL_CHARS = 1000
"""Characters of the CLI's stderr tail kept in a `start_failed` leg's problem and its attempt's reason."""

REPORT_FILE = "REPORT.md"
"""The file at the top of the workspace a session ending with changes writes its report to
(`agent.command.submit = "on_exit"`); never taken into a candidate tree."""

EXIT_REPORT_TAIL_CHARS = 4000
"""Characters of the end of the CLI's stdout taken as the report of an `on_exit` submission whose
session wrote no REPORT.md."""

MAX_DIFF_CHARS = 20000
"""Characters of a submitted change's diff shown to a revision leg that starts a fresh session."""
