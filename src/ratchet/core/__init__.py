"""The pure core: contract models, canonical digests, plans, the gate and its statistics, budget
arithmetic, the ledger's event schema and its reduction to a run's state, verify's checks, errors.

The contract: `contract.py` (with `contract_base.py`, `contract_agents.py`, `contract_llm.py`,
`contract_guardrails.py`, `contract_prompt.py`),
`contract_load.py` (validating its bytes), `unsupported.py` (what this build cannot run), `inputs.py`
(where a run reads its inputs), `jobenv.py` (the rule for a job's environment), `jobfiles.py` (the
names of a job's files). Values:
`canonical.py` (canonical JSON, digests), `vocab.py` (closed sets), `errors.py` and
`error_codes.py`. Deciding: `plan.py`, `gate.py`, `guardrails.py`, `gate_design.py`, `gate_rules.py`,
`reach.py`, `stats/`, `budget/`.
The ledger's meaning: `events.py` (one line), `payloads.py` (each kind's data), `state.py` (the fold
into a RunState), `audit.py`, `audit_budget.py` and `audit_view.py` (verify's checks).

Imports nothing effectful: no subprocess, no files, no clock (tests/core/test_purity.py).
"""
