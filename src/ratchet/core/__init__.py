"""The pure core: contract models, canonical digests, plans, the gate and its statistics, budget
arithmetic, the ledger's event schema and its reduction to a run's state, errors.

Imports nothing effectful: no subprocess, no files, no clock.
"""
