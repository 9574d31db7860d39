"""Examples targets: load the examples file, split it into dev / val / test, fingerprint the split,
order val for the sequential looks, and say what a split of this size can detect (docs/guide.md).

Pure except `load_examples`, which reads one file. Every order here derives from the campaign seed
and each example's content hash, never from line order, so reordering the file changes nothing and
editing one example moves only that example.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratchet.core.canonical import MAX_SAFE_INT, canonical_bytes, digest
from ratchet.core.errors import DataError

SPLITS = ("dev", "val", "test")
"""The split names, in cut order: `dev` (agents may see), `val` (the gate measures on), `test`
(measured once, at the end)."""

REQUIRED_KEYS = ("input", "expected_output")
OPTIONAL_KEYS = ("id",)
MIN_SPLIT_EXAMPLES = 30  # val or test below this many examples: intervals too wide to say much
MAX_REASONS_SHOWN = 50  # malformed lines whose reason is spelled out in the error message
MAX_LINES_LISTED = 20  # line numbers listed per finding of `ratchet check`
MAX_JSON_DEPTH = 64  # nesting levels (arrays and objects) one value of an examples line may have
Z95 = 1.959963984540054  # standard normal 97.5% quantile (Wilson bound of target_unreachable)


@dataclass(frozen=True)
class Example:
    """One example. `id`: `sha256:<hex>` of the canonical JSON {"input", "expected_output"} (its
    content, so it survives reordering); `input`: the text the solution reads on stdin (a string as
    given; any other JSON value as its canonical JSON text); `expected_output`: the JSON value as
    given in the file (a str, int, float, bool, None, list or dict: the checks judge by its JSON
    type, see docs/examples-checks.md); `line`: 1-based line in the examples file; `name`: the
    optional user-given "id" of the line (unique in the file), kept for display only."""

    id: str
    input: str
    expected_output: Any = field(compare=False)  # covered by `id`; a list or dict is unhashable
    line: int
    name: str | None = None


@dataclass(frozen=True)
class ExampleSet:
    """The examples of one file, duplicates dropped. `warnings`: human sentences (duplicates);
    `dropped_lines`: 1-based lines dropped as exact duplicates of an earlier line."""

    path: str
    examples: tuple[Example, ...]
    warnings: tuple[str, ...] = ()
    dropped_lines: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.examples)


@dataclass(frozen=True)
class Split:
    """Examples partitioned into `dev`, `val` and `test` (disjoint; each in seeded hash order)."""

    dev: tuple[Example, ...]
    val: tuple[Example, ...]
    test: tuple[Example, ...]

    def sizes(self) -> dict[str, int]:
        """{"dev": n, "val": n, "test": n}."""
        return {name: len(getattr(self, name)) for name in SPLITS}


# --- loading --------------------------------------------------------------------------------------


def example_id(input_text: str, expected_output: Any) -> str:
    """The content hash of an example: `sha256:<hex>` of canonical {"input", "expected_output"},
    with `expected_output` the JSON value (so the string "3" and the number 3 differ)."""
    return digest({"input": input_text, "expected_output": expected_output})


def json_text(value: Any) -> str:
    """A string as it is; any other JSON value as its canonical (RFC 8785) JSON text."""
    return value if isinstance(value, str) else canonical_bytes(value).decode()


def json_value_problem(value: Any) -> str | None:
    """Why a parsed JSON value cannot be an example's input or expected output, or None.

    Refused: integers beyond +-(2**53 - 1) (JSON readers disagree on them), integral numbers written
    with a fraction or exponent beyond it (`9007199254740993.0`: no canonical form reads back the
    same), numbers that overflow to infinity (`1e400`), nesting deeper than MAX_JSON_DEPTH. Walks
    iteratively, so any depth is safe.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int) and abs(item) > MAX_SAFE_INT:
            return (f"the integer {str(item)[:30]}{'...' if len(str(item)) > 30 else ''} is beyond 2**53 - 1, "
                    "which JSON readers cannot hold exactly (write it as a string)")
        if isinstance(item, float) and not math.isfinite(item):
            return "a number overflows to infinity (beyond about 1.8e308; write it as a string)"
        if isinstance(item, float) and item.is_integer() and abs(item) > MAX_SAFE_INT:
            return (f"the number {item!r} is a whole number beyond 2**53 - 1, which JSON readers cannot hold "
                    "exactly (write it as a string)")
        if isinstance(item, list | dict):
            if depth >= MAX_JSON_DEPTH:
                return f"a value is nested deeper than {MAX_JSON_DEPTH} levels"
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ValueError(f"duplicate key {dupes[0]!r}")
    return dict(pairs)


def _parse_line(raw: bytes, line: int) -> Example | str:
    """One non-blank line -> an Example, or the reason it is malformed."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        obj = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except ValueError as exc:  # JSONDecodeError is a ValueError; so are our hooks' refusals
        return f"not JSON ({exc})"
    except RecursionError:
        return f"nested too deeply to read (at most {MAX_JSON_DEPTH} levels)"
    if not isinstance(obj, dict):
        return f"not a JSON object (a {type(obj).__name__})"
    missing = [k for k in REQUIRED_KEYS if k not in obj]
    if missing:
        return "missing key " + ", ".join(repr(k) for k in missing)
    unknown = sorted(k for k in obj if k not in REQUIRED_KEYS + OPTIONAL_KEYS)
    if unknown:
        return "unknown key " + ", ".join(repr(k) for k in unknown) + ' (allowed: input, expected_output, id)'
    name = obj.get("id")
    if name is not None and (isinstance(name, bool) or not isinstance(name, str | int)):
        return f"'id' must be a string or an integer, not {type(name).__name__}"
    for key in REQUIRED_KEYS:
        problem = json_value_problem(obj[key])
        if problem:
            return f"{key!r}: {problem}"
    inp, exp = json_text(obj["input"]), obj["expected_output"]
    return Example(example_id(inp, exp), inp, exp, line, None if name is None else str(name))


def _name_clashes(parsed: list[Example]) -> list[tuple[int, str]]:
    """(line, reason) for every line whose user "id" an earlier line with other content holds."""
    first: dict[str, Example] = {}
    bad = []
    for ex in parsed:
        if ex.name is None:
            continue
        other = first.setdefault(ex.name, ex)
        if other is not ex and other.id != ex.id:
            bad.append((ex.line, f"id {_short(ex.name)} is already used on line {other.line}"))
    return bad


def _malformed_error(path: Path, bad: list[tuple[int, str]]) -> DataError:
    shown = "; ".join(f"line {n}: {why}" for n, why in bad[:MAX_REASONS_SHOWN])
    rest = bad[MAX_REASONS_SHOWN:]
    if rest:
        shown += f"; and {len(rest)} more on lines " + ", ".join(str(n) for n, _ in rest)
    noun = "line is" if len(bad) == 1 else "lines are"
    return DataError(
        "examples.malformed",
        f"{path}: {len(bad)} {noun} malformed: {shown}",
        hint='each non-blank line must be a JSON object {"input": ..., "expected_output": ...} '
        '(optionally "id")',
    )


def _dedupe(path: Path, parsed: list[Example]) -> ExampleSet:
    """Drop exact duplicates (with a warning); refuse one input with two expected outputs."""
    first_by_id: dict[str, Example] = {}
    first_by_input: dict[str, Example] = {}
    kept: list[Example] = []
    dropped: list[int] = []
    conflicts: list[str] = []
    for ex in parsed:
        if ex.id in first_by_id:
            dropped.append(ex.line)
            continue
        other = first_by_input.get(ex.input)
        if other is not None:
            conflicts.append(f"lines {other.line} and {ex.line} give input {_short(ex.input)} "
                             f"the outputs {_short(json_text(other.expected_output))} and "
                             f"{_short(json_text(ex.expected_output))}")
        first_by_id[ex.id] = ex
        first_by_input.setdefault(ex.input, ex)
        kept.append(ex)
    if conflicts:
        raise DataError(
            "examples.conflict",
            f"{path}: {len(conflicts)} input(s) have different expected outputs: " + "; ".join(conflicts),
            hint="keep one expected output per input (or make the inputs differ)",
        )
    warnings: tuple[str, ...] = ()
    if dropped:
        lines = ", ".join(str(n) for n in dropped)
        warnings = (f"{path}: dropped {len(dropped)} exact duplicate example(s) on line(s) {lines}",)
    return ExampleSet(str(path), tuple(kept), warnings, tuple(dropped))


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def load_examples(path: Path) -> ExampleSet:
    """Read a JSONL examples file: one {"input", "expected_output"[, "id"]} object per line.

    A non-string input becomes its canonical JSON text; the expected output keeps its JSON value.
    Blank lines are skipped; a UTF-8 BOM is ignored. Exact duplicates (same input and expected
    output) are dropped with a warning. Raises DataError: `examples.missing` (no such file),
    `examples.malformed` (every bad line with its 1-based number and reason, in one error: not
    UTF-8, not JSON, not an object, missing or unknown keys, whole numbers beyond 2**53 - 1, numbers
    overflowing to infinity, nesting deeper than MAX_JSON_DEPTH, a user "id" given to two lines of
    different content), `examples.conflict` (one input, two expected outputs: both lines listed),
    `examples.empty` (no examples).
    """
    try:
        data = Path(path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise DataError("examples.missing", f"examples file {path} does not exist or is not a file",
                        hint="set target.examples to a JSONL file in the project") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    parsed: list[Example] = []
    bad: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        result = _parse_line(raw, number)
        if isinstance(result, Example):
            parsed.append(result)
        else:
            bad.append((number, result))
    bad = sorted(bad + _name_clashes(parsed))
    if bad:
        raise _malformed_error(Path(path), bad)
    if not parsed:
        raise DataError("examples.empty", f"examples file {path} has no examples",
                        hint='add lines like {"input": "...", "expected_output": "..."}')
    return _dedupe(Path(path), parsed)


# --- what the checks can judge -------------------------------------------------------------------


def never_judged(examples: Iterable[Example], checks: Sequence[Any]) -> list[dict[str, Any]]:
    """Per check that some examples' expected values can never be judged by (every run of such an
    example is a `check_error`): [{"check": index, "type", "count", "lines": [first lines], "reason"}],
    in contract order; [] when every check can judge every example. `checks`: the contract's
    `[[target.checks]]` models. Pure."""
    from ratchet.targets.checks import unjudgeable

    out = []
    for index, check in enumerate(checks):
        lines, reason = [], None
        for ex in examples:
            why = unjudgeable(check, ex.expected_output)
            if why:
                lines.append(ex.line)
                reason = reason or why
        if lines:
            out.append({"check": index, "type": check.type, "count": len(lines),
                        "lines": sorted(lines)[:MAX_LINES_LISTED], "reason": reason})
    return out


def json_text_strings(examples: Iterable[Example], checks: Sequence[Any]) -> list[int]:
    """Lines whose expected output is a JSON string holding JSON text of another type (`"[1, 2]"`,
    `"42"`) when a json_equality check is in use: it compares that string as a string
    (CHECKS_VERSION 2), which is rarely what the author meant. [] without json_equality. Pure."""
    if not any(getattr(c, "type", None) == "json_equality" for c in checks):
        return []
    lines = []
    for ex in examples:
        if not isinstance(ex.expected_output, str):
            continue
        try:
            value = json.loads(ex.expected_output)
        except (ValueError, RecursionError):
            continue
        if not isinstance(value, str):
            lines.append(ex.line)
    return lines


def status_counts(outcomes: Iterable[tuple[bool, str]]) -> dict[str, int]:
    """How a variant's examples ended, from `(passed, status)` pairs (what `job.finished` keeps per
    example): {"passed", "failed" (ran, a check said no), "crash", "timeout", "output_too_large",
    "missing", "check_error" (a check could not judge)}, every key present."""
    counts = dict.fromkeys(("passed", "failed", "crash", "timeout", "output_too_large", "missing",
                            "check_error"), 0)
    for passed, status in outcomes:
        key = ("passed" if passed else "failed") if status == "ok" else status
        counts[key] = counts.get(key, 0) + 1
    return counts


# --- splitting ------------------------------------------------------------------------------------


def _rank(seed: int | str, example: Example, *salt: object) -> bytes:
    key = ":".join(str(part) for part in (seed, *salt, example.id))
    return hashlib.sha256(key.encode()).digest()


def split_sizes(n: int, fractions: Sequence[float]) -> tuple[int, int, int]:
    """Sizes (dev, val, test) summing to n for `fractions` (three values >= 0, summing to 1).

    Largest-remainder rounding of n * fraction (ties go to the earlier split), then every split
    with a fraction > 0 is raised to at least 1 example by taking from the largest split.
    Raises DataError `examples.too_few` when n is smaller than the number of fractions > 0.
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not math.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must be three values >= 0 summing to 1, got {list(fractions)}")
    wanted = sum(1 for f in fractions if f > 0)
    if n < wanted:
        raise DataError("examples.too_few", f"{n} example(s) cannot fill {wanted} non-empty splits",
                        hint="add examples: each of dev / val / test with a fraction > 0 needs one")
    exact = [n * f for f in fractions]
    sizes = [math.floor(x) for x in exact]
    by_remainder = sorted(range(3), key=lambda i: (-(exact[i] - sizes[i]), i))
    for i in by_remainder[: n - sum(sizes)]:
        sizes[i] += 1
    for i in range(3):
        if fractions[i] > 0 and sizes[i] == 0:
            donor = max(range(3), key=lambda j: (sizes[j], -j))
            sizes[donor] -= 1
            sizes[i] += 1
    return sizes[0], sizes[1], sizes[2]


def split_examples(examples: Iterable[Example], fractions: Sequence[float], seed: int) -> Split:
    """Partition examples into dev / val / test, deterministically from `seed` and content.

    Examples are sorted by sha256("<seed>:<example id>") and cut, in that order, into dev, val and
    test of `split_sizes(n, fractions)`. Line order plays no part. Raises DataError
    `examples.too_few` (see split_sizes) and ValueError on bad fractions.
    """
    ordered = sorted(examples, key=lambda ex: _rank(seed, ex))
    n_dev, n_val, _ = split_sizes(len(ordered), fractions)
    return Split(
        dev=tuple(ordered[:n_dev]),
        val=tuple(ordered[n_dev: n_dev + n_val]),
        test=tuple(ordered[n_dev + n_val:]),
    )


def val_order(val: Sequence[Example], seed: int, trial: int) -> list[Example]:
    """A seeded order of the val examples for one trial's sequential looks: look k measures the
    first `units[k]` of this list. Sorted by sha256("<seed>:val:<trial>:<example id>"), so each
    trial gets its own order and the input order plays no part."""
    return sorted(val, key=lambda ex: _rank(seed, ex, "val", trial))


def val_blocks(val: Sequence[Example], seed: int, size: int) -> list[tuple[Example, ...]]:
    """The val examples cut into disjoint blocks of `size` examples: max(1, floor(len(val) / size))
    blocks, in an order sorted by sha256("<seed>:val-blocks:<example id>"), fixed by the split and
    the campaign seed before any trial. Block b holds positions b * size to (b + 1) * size - 1; the
    examples past the last full block are never measured by a trial. The trials between two
    promotions all measure one block, each in its own order (`val_order`); a promotion moves the
    run to the next (docs/gate.md, "Examples targets and adaptive agents"). Raises ValueError for
    size < 1 or size > len(val)."""
    if size < 1 or size > len(val):
        raise ValueError(f"a val block needs 1 to {len(val)} examples, got {size}")
    order = sorted(val, key=lambda ex: _rank(seed, ex, "val-blocks"))
    return [tuple(order[b * size: (b + 1) * size]) for b in range(max(1, len(order) // size))]


def clamp_looks(units: Sequence[int], n_val: int) -> tuple[int, ...]:
    """`gate.units` for an examples target: each look counts val examples, clamped to `n_val`;
    looks made equal by the clamp are merged (the result stays strictly increasing)."""
    return tuple(sorted({min(u, n_val) for u in units if min(u, n_val) > 0}))


# --- fingerprints ---------------------------------------------------------------------------------


def fingerprint(split: Split) -> dict[str, list[str]]:
    """{"dev": [ids], "val": [ids], "test": [ids]}, ids sorted: what a resume compares."""
    return {name: sorted(ex.id for ex in getattr(split, name)) for name in SPLITS}


def compare_fingerprints(old: dict[str, list[str]], new: dict[str, list[str]]) -> dict[str, int]:
    """Changed examples per split: {"dev": n, "val": n, "test": n}, where n is the larger of the
    ids only in `old` and the ids only in `new` (an edited example counts once). All 0: unchanged."""
    changes = {}
    for name in SPLITS:
        before, after = set(old.get(name, ())), set(new.get(name, ()))
        changes[name] = max(len(before - after), len(after - before))
    return changes


def describe_change(changes: dict[str, int]) -> str:
    """A sentence for compare_fingerprints' result, e.g. "val: 3 examples changed, test: 1 example
    changed"; "no examples changed" when all counts are 0."""
    counts = [(name, changes.get(name, 0)) for name in SPLITS]
    parts = [f"{name}: {n} example{'s' if n != 1 else ''} changed" for name, n in counts if n]
    return ", ".join(parts) if parts else "no examples changed"


# --- what a split can say -------------------------------------------------------------------------


def split_warnings(split: Split) -> list[str]:
    """Sentences warning that a split is too small to say much: val or test under
    MIN_SPLIT_EXAMPLES examples (a perfect score's 95% interval is then wider than ~0.1)."""
    out = []
    for name, role in (("val", "the gate measures candidates on it"), ("test", "the final holdout")):
        n = len(getattr(split, name))
        if n < MIN_SPLIT_EXAMPLES:
            out.append(f"{name} has only {n} example(s) ({role}); under {MIN_SPLIT_EXAMPLES} the "
                       "pass-rate intervals are too wide to say much: add examples or raise its fraction")
    if not split.dev:
        out.append("dev is empty: agents see no examples to learn from")
    return out


def target_unreachable(target: float | None, n_val: int) -> str | None:
    """A warning when `gate.target` cannot be reached: even a perfect val score (n_val of n_val)
    has a Wilson lower bound n / (n + z**2) (z = 1.96) below the target. None when reachable or
    no target. Source: Wilson (1927), JASA 22:209-212, at p = 1."""
    if target is None:
        return None
    bound = n_val / (n_val + Z95 * Z95) if n_val > 0 else 0.0
    if bound >= target:
        return None
    if target >= 1.0:
        need = "no number of val examples reaches it (a lower bound is always < 1)"
    else:
        need = f"it needs at least {math.ceil(target * Z95 * Z95 / (1.0 - target))} val examples"
    return (f"gate.target = {target:g} is unreachable: a perfect score on {n_val} val examples has a "
            f"95% Wilson lower bound of {bound:.3f}; {need}")


# --- a run's examples -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExampleData:
    """A run's examples: the loaded set (with its warnings) and its dev/val/test split."""

    examples: ExampleSet
    split: Split

    @property
    def fingerprint(self) -> dict[str, list[str]]:
        """Per-split sorted example ids (content hashes)."""
        return fingerprint(self.split)


def load_split(root: Path, examples_path: str, fractions: Sequence[float], seed: int) -> ExampleData:
    """Load `examples_path` under the project `root` and split it with the campaign `seed`.
    Raises DataError (examples.*) for bad data."""
    examples = load_examples(root / examples_path)
    return ExampleData(examples, split_examples(examples.examples, fractions, seed))


def check_same_dataset(recorded: dict[str, list[str]], data: ExampleData) -> None:
    """Refuse a resume whose dataset changed. Raises DataError `examples.changed` saying how many
    examples changed in which split."""
    changes = compare_fingerprints(recorded, data.fingerprint)
    if any(changes.values()):
        raise DataError("examples.changed", f"the examples changed since the run started: {describe_change(changes)}",
                        hint="restore the examples file, or start a new run")


def split_from_fingerprint(recorded: Mapping[str, Any], seed: int) -> Split:
    """The split a run recorded as its fingerprint ({"dev", "val", "test"}: example ids), each part in
    the order `split_examples` gives it, as id-only Examples (no input, no expected output): enough to
    re-compile a run's plans offline (`ratchet verify`). Raises DataError `examples.bad_fingerprint`."""
    parts = {}
    for name in SPLITS:
        ids = recorded.get(name)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DataError("examples.bad_fingerprint", f"the recorded fingerprint has no list of {name} ids")
        stubs = [Example(i, "", None, 0) for i in ids]
        parts[name] = tuple(sorted(stubs, key=lambda ex: _rank(seed, ex)))
    return Split(**parts)
