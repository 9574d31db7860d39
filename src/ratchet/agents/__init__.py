"""Agents: what proposes a candidate in each attempt, as legs of a conversation with the kernel.

`base.py` (the protocol: context, actions, launch results), `view.py` (what an agent may read of a
tree), `search.py` (Optuna over declared tunables), `files.py` (prepared candidates), `command/` (a
coding-agent CLI in its own workspace), `llm/` (a model behind an OpenAI-compatible API).

Effects: the search, files and llm agents build trees through the kernel's `TreeBuilder`; the command
agent runs its CLI and writes its workspace (see `command/`); the llm agent calls its model's API.
"""
