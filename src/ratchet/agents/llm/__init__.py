"""The llm agent (`agent.kind = "llm"`, DESIGN.md §8, issue 20): a model behind any OpenAI-compatible
chat API proposes candidates.

Modules: `agent` (LlmAgent, the Agent protocol; strategy directives), `client` (one budgeted,
retried, deadlined, recorded call), `budget` (pure reserve/settle arithmetic of the model budgets),
`records` (call records and the Journal protocol the loop implements), `evidence` (what the model
may know of the run, and the Evidence protocol the loop implements), `prompts` (templates and
fitting into the context window), `edits` (search/replace blocks and whole-solution replies).
"""
