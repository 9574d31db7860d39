"""Validating `ratchet.toml` (pure): TOML parsing, validation into `Contract`, and errors that name
the key path and line (docs/guide.md). Every failure is a ContractError (exit code 2); a contract with
several invalid keys gets one error listing all of them. The file is read by the caller
(`commands/contract_file.py`), which hands its bytes in.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ratchet.core.canonical import digest_bytes
from ratchet.core.contract import CONTRACT_FILE, Contract
from ratchet.core.errors import ContractError


@dataclass(frozen=True)
class LoadedContract:
    """A validated contract with where it came from.

    root: the project root (the directory holding ratchet.toml). text: the file's text as read.
    digest: `sha256:` of the file's bytes. warnings: non-fatal findings (e.g. an allowed path that
    does not exist yet), one line each.
    """

    contract: Contract
    root: Path
    path: Path
    text: str
    digest: str
    warnings: tuple[str, ...]


def contract_from_bytes(raw: bytes, path: Path, root: Path, present: Callable[[Path], bool]) -> LoadedContract:
    """Validate `raw`, the bytes of the contract file `path` of the project at `root`.

    present(p): whether the path p under `root` exists (the caller's one effect), asked once per
    `scope.allowed` entry for the warnings. Raises ContractError with codes: contract.unreadable
    (not UTF-8), contract.toml (syntax; message has the line), contract.unknown_key,
    contract.missing_key, contract.invalid (the key path and, when found, its line).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError("contract.unreadable", f"cannot read {path}: {exc}") from None
    contract = parse_contract(text, source=str(path))
    return LoadedContract(contract, root, path, text, digest_bytes(raw), tuple(_warnings(contract, root, present)))


def parse_contract(text: str, source: str = CONTRACT_FILE) -> Contract:
    """Validate contract `text`. Raises ContractError (see contract_from_bytes)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ContractError("contract.toml", f"{source}: not valid TOML: {exc}",
                            hint="fix the syntax at that line") from None
    try:
        return Contract.model_validate(data)
    except ValidationError as exc:
        raise _contract_error(exc, text, source) from None


MAX_ERRORS_SHOWN = 20  # validation errors spelled out in one contract error message


def _contract_error(exc: ValidationError, text: str, source: str) -> ContractError:
    """Every validation error of the contract in one ContractError: the first error's code (tests
    and --json users match on it), each error's `file:line: key: what` in the message, one per
    line, and the hints of all of them."""
    found = [_describe(e, text, source) for e in exc.errors()]
    code = found[0][0]
    if len(found) == 1:
        return ContractError(code, found[0][1], hint=found[0][2])
    shown = found[:MAX_ERRORS_SHOWN]
    more = f"\n  and {len(found) - len(shown)} more" if len(found) > len(shown) else ""
    message = f"{source}: {len(found)} errors:\n" + "\n".join(f"  {m}" for _, m, _ in shown) + more
    hints = list(dict.fromkeys(h for _, _, h in shown if h))
    return ContractError(code, message, hint="; ".join(hints) or None)


def _describe(error: Any, text: str, source: str) -> tuple[str, str, str | None]:
    """(code, message, hint) of one pydantic error: the key path and, when found, its line."""
    loc = _clean_loc(error["loc"])
    key = _key_path(loc)
    line = _find_line(text, loc)
    where = f"{source}:{line}" if line else source
    kind = error["type"]
    if kind == "extra_forbidden":
        return "contract.unknown_key", f"{where}: {key} is not a known key", _did_you_mean(loc)
    if kind == "missing":
        return "contract.missing_key", f"{where}: {key} is required", "see docs/guide.md or `ratchet init`"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind.startswith("contract."):  # a rule with its own code (contract_guardrails.guardrail_error)
        return kind, f"{where}: {key or 'contract'}: {message}", (error.get("ctx") or {}).get("hint")
    return "contract.invalid", f"{where}: {key or 'contract'}: {message}", None


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union-branch tags (e.g. 'float', 'function-after[...]') from an error location."""
    keep = []
    for part in loc:
        if isinstance(part, str) and (part.startswith("function-") or part in _UNION_TAGS):
            continue
        keep.append(part)
    return tuple(keep)


_UNION_TAGS = {
    "exact_match", "normalized_match", "json_equality", "regex_match", "numeric_tolerance", "custom",
    "float", "int", "categorical", "str", "bool",
}


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _did_you_mean(loc: tuple[Any, ...]) -> str | None:
    if not loc or not isinstance(loc[-1], str):
        return None
    model: type[BaseModel] | None = Contract
    for part in loc[:-1]:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _model_of(field.annotation) if field else None
    if model is None:
        return "remove it; docs/guide.md lists the keys"
    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1)
    parent = _key_path(loc[:-1])
    if not close:
        return "remove it; docs/guide.md lists the keys"
    return f"did you mean {parent + '.' if parent else ''}{close[0]}?"


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for arg in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")


def _find_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort 1-based line of the key at `loc` (tomllib gives no positions for valid TOML)."""
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return None
    table: list[str] = []
    best: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = [p.strip().strip("\"'") for p in header.group(2).split(".")]
            if table == names:
                best = best or number
            continue
        key = _KEY.match(line)
        if key and table + [key.group(1)] == names[: len(table) + 1] and len(table) + 1 <= len(names):
            if table + [key.group(1)] == names or best is None:
                best = number
            if table + [key.group(1)] == names:
                return number
    return best


def _warnings(contract: Contract, root: Path, present: Callable[[Path], bool]) -> list[str]:
    out = []
    for entry in contract.scope.allowed:
        if not present(root / entry):
            out.append(f"scope.allowed entry {entry!r} does not exist in {root} (yet)")
    return out
