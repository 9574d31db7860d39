"""The command agent: any coding-agent CLI in its own workspace, talking to the kernel through the
channel `.ratchet-sys/` (DESIGN.md §8, docs/agents-command.md).

Modules: `limits` (the kernel's limits), `workspace` (seeding and harvesting), `channel` (hardened
file access), `requests` (validation of what the agent asks), `artifacts` (delivered into the channel),
`messages` (prompt and wake texts, fenced data), `template` (the CLI's argv), `tool` (the
`ratchet-sys` program, stdlib only), `agent` (`CommandAgent`).
"""

from ratchet.agents.command.agent import CommandAgent, CommandSetup
from ratchet.agents.command.messages import TaskView
from ratchet.agents.command.workspace import Harvest, ScopeRules, create_workspace, harvest

__all__ = ["CommandAgent", "CommandSetup", "Harvest", "ScopeRules", "TaskView", "create_workspace", "harvest"]
