"""Ratchet: improvement loops that let only proven gains through.

Packages, from the command line inwards (imports only point inwards): `cli.py` (and `__main__.py`),
`commands/`, `loop/`, `targets/` and `agents/`, `compute/`, `ledger/`, `present/` and `workspace/`,
then `core/` (pure).
"""

__version__ = "0.1.0"
