"""The command agent: any coding-agent CLI in its own workspace, talking to the kernel through the
channel `.ratchet-sys/` (docs/agents-command.md).

Modules: `limits.py` (the kernel's limits), `workspace.py` (seeding and harvesting), `channel.py`
(hardened file access), `requests.py` (validation of what the agent asks), `artifacts.py` (results
and artifacts delivered into the channel), `messages.py` (prompt, wake and verdict texts, fenced
data), `template.py` (the CLI's argv), `tool.py` (the `ratchet-sys` program, stdlib only),
`factory.py` (the agent built from a contract), `legs.py` (one leg as a job and as an `agent.leg`
record), `output.py` (each leg's command line and output kept as blobs), `program.py` (the leg's
program found, sandboxed, judged started), `submission.py` (a session that exits with changes: its
report from REPORT.md or its output), `probe.py` (what `ratchet check` says of the CLI: where it is
found, its `--version`), `queue.py` (the channel's state files: what `ratchet-sys queue` and
`launches` show, and the watcher refreshing the queue while a leg runs), `agent.py`
(`CommandAgent`).

Effects: creates and harvests a git workspace outside the project, reads and writes its channel, runs
the agent's CLI (under bubblewrap when the sandbox is used), reads each leg's output files.
"""

from ratchet.agents.command.agent import CommandAgent, CommandSetup
from ratchet.agents.command.messages import TaskView
from ratchet.agents.command.workspace import Harvest, ScopeRules, create_workspace, harvest

__all__ = ["CommandAgent", "CommandSetup", "Harvest", "ScopeRules", "TaskView", "create_workspace", "harvest"]
