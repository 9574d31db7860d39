"""Reading a project's `ratchet.toml`: found in a project directory (or given as a path), read, and
validated by `core.contract_load`. Effects: reads the contract file and asks which `scope.allowed`
entries exist; writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from ratchet.core.contract import CONTRACT_FILE
from ratchet.core.contract_load import LoadedContract, contract_from_bytes
from ratchet.core.errors import ContractError


def resolve_contract_path(location: Path) -> Path:
    """`location` itself when it is a file, else `location/ratchet.toml`. Raises ContractError
    `contract.missing` when there is none."""
    path = location / CONTRACT_FILE if location.is_dir() else location
    if not path.is_file():
        raise ContractError(
            "contract.missing",
            f"no {CONTRACT_FILE} at {path}",
            hint=f"run `ratchet init {location}` to write one",
        )
    return path


def load_contract(location: Path) -> LoadedContract:
    """Read, parse and validate a contract from a project directory or a `ratchet.toml` path.

    Raises ContractError with codes: contract.missing, contract.unreadable (cannot be read, or not
    UTF-8), and those of `contract_from_bytes` (contract.toml, contract.unknown_key,
    contract.missing_key, contract.invalid).
    """
    path = resolve_contract_path(Path(location))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ContractError("contract.unreadable", f"cannot read {path}: {exc}") from None
    return contract_from_bytes(raw, path, path.parent.resolve(), Path.exists)
