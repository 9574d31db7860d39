"""Ratchet: improvement loops that let only proven gains through.

Floors, from the command line inwards: `cli.py` (with its shell `cli_shell.py`, and `__main__.py`);
`commands/`; `loop/`; `targets/` and `agents/`; `compute/`; `ledger/`, `present/` and `workspace/`;
`core/` (pure). A module imports only from its own package or a floor further in.
"""

__version__ = "0.1.0"
