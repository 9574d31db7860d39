"""The llm agent (`agent.kind = "llm"`, docs/agents-llm.md): a model behind any OpenAI-compatible
chat API proposes candidates.

Modules: `agent.py` (LlmAgent, the Agent protocol; strategy directives), `client.py` (one budgeted,
retried, deadlined, recorded call), `records.py` (call records and the Journal protocol the loop
implements), `briefing.py` (what the model may know of the run, and the Evidence protocol the loop
implements), `prompts.py` (templates and fitting into the context window), `edits.py`
(search/replace blocks and whole-solution replies), `templates/` (the built-in prompts). The model
budgets' arithmetic is in `core/budget/`.

Effects: HTTP calls to the model's API (`client.py`), each recorded through the caller's Journal;
prompt files of `[agent.llm.prompts]` read from the project.
"""
