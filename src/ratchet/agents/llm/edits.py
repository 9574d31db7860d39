"""What a model's reply proposes: search/replace edit blocks (repository targets) or one whole
solution file (examples targets), plus the prose around them as the attempt's report.

Pure: files are read through a function the caller passes. An edit block:

    path/to/file.py
    <<<<<<< SEARCH
    lines to find (exactly once in the file; empty: create the file)
    =======
    lines to put instead
    >>>>>>> REPLACE

A block that does not parse, does not apply (its SEARCH text is absent or ambiguous) or names a
path out of scope is an error text the model gets back for its one reformat retry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ratchet.agents.base import MAX_REPORT_CHARS, MAX_SUMMARY_CHARS
from ratchet.core.contract import check_scope_path, scope_covers

_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SUMMARY = re.compile(r"^\s*(?:\*\*)?summary(?:\*\*)?\s*:\s*(.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class EditBlock:
    """One search/replace block: `path`, the text to find (`search`, "" to create the file) and the
    text to put instead (`replace`), each with a final newline unless empty; `number` is 1-based."""

    number: int
    path: str
    search: str
    replace: str


@dataclass(frozen=True)
class ParsedReply:
    """A parsed reply: the blocks (or the solution text), the prose as `report` and its `summary`,
    and `errors` (empty when everything parsed)."""

    blocks: tuple[EditBlock, ...]
    report: str
    summary: str
    errors: tuple[str, ...]
    solution: str | None = None


@dataclass(frozen=True)
class Scope:
    """Where a model may write: `allowed` paths and directories, minus `protected` and `hidden`."""

    allowed: tuple[str, ...]
    protected: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    def refusal(self, path: str) -> str | None:
        """Why `path` may not be written, or None when it may."""
        try:
            check_scope_path(path)
        except ValueError as exc:
            return str(exc)
        if any(scope_covers(p, path) for p in (*self.protected, *self.hidden)):
            return f"{path} is protected"
        if not any(scope_covers(a, path) for a in self.allowed):
            return f"{path} is out of scope (scope.allowed: {', '.join(self.allowed)})"
        return None


def _text(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _path_of(line: str) -> str:
    """The file path written on the line before a block (tolerating backticks, `#`, `File:`)."""
    text = line.strip().strip("`*").strip()
    text = re.sub(r"^(?:#+\s*|file\s*:\s*|path\s*:\s*)", "", text, flags=re.IGNORECASE).strip("`*").strip()
    return text


def parse_edit_blocks(reply: str) -> ParsedReply:
    """The edit blocks of `reply`, its prose (report) and the parse errors (numbered by block)."""
    lines = reply.splitlines()
    blocks: list[EditBlock] = []
    errors: list[str] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            prose.append(lines[i])
            i += 1
            continue
        number = len(blocks) + len(errors) + 1
        path = _block_path(prose)
        end, block, error = _read_block(lines, i, number, path)
        if error:
            errors.append(error)
        elif block:
            blocks.append(block)
        i = end
    if not blocks and not errors:
        errors.append("the reply has no edit blocks: write each change as `path`, `<<<<<<< SEARCH`, the "
                      "lines to find, `=======`, the new lines, `>>>>>>> REPLACE`")
    report, summary = report_of(prose)
    return ParsedReply(tuple(blocks), report, summary, tuple(errors))


def _block_path(prose: list[str]) -> str:
    """Take the path line (the last non-blank, non-fence line) out of the prose before a block."""
    while prose and (not prose[-1].strip() or _FENCE.match(prose[-1])):
        prose.pop()
    return _path_of(prose.pop()) if prose else ""


def _read_block(lines: list[str], start: int, number: int, path: str) -> tuple[int, EditBlock | None, str]:
    """Read the block opening at `start`: (index after it, block or None, error or "")."""
    divider = next((j for j in range(start + 1, len(lines)) if _DIVIDER.match(lines[j])), None)
    if divider is None:
        return len(lines), None, f"block {number}: no ======= line after <<<<<<< SEARCH"
    close = next((j for j in range(divider + 1, len(lines)) if _REPLACE.match(lines[j])), None)
    if close is None:
        return len(lines), None, f"block {number}: no >>>>>>> REPLACE line after ======= (was the reply cut off?)"
    if not path:
        return close + 1, None, f"block {number}: no file path on the line before <<<<<<< SEARCH"
    block = EditBlock(number, path, _text(lines[start + 1 : divider]), _text(lines[divider + 1 : close]))
    return close + 1, block, ""


def report_of(prose: Sequence[str]) -> tuple[str, str]:
    """(report, summary) from the prose of a reply: fences dropped, capped; the summary is the text
    after a `SUMMARY:` line, else the first non-blank line."""
    kept = [line for line in prose if not _FENCE.match(line)]
    report = "\n".join(kept).strip()[:MAX_REPORT_CHARS]
    summary = next((m.group(1) for m in map(_SUMMARY.match, kept) if m), None)
    if summary is None:
        summary = next((line.strip() for line in kept if line.strip()), "")
    return report, summary.strip()[:MAX_SUMMARY_CHARS]


def apply_edit_blocks(blocks: Sequence[EditBlock], read: Callable[[str], bytes | None],
                      scope: Scope) -> tuple[dict[str, bytes], list[str]]:
    """Apply `blocks` in order to the files `read(path)` gives (None: absent). Returns (new contents
    by path, errors); any error means the edit set must not be used."""
    current: dict[str, str | None] = {}
    errors: list[str] = []
    for block in blocks:
        refusal = scope.refusal(block.path)
        if refusal:
            errors.append(f"block {block.number}: {refusal}")
            continue
        if block.path not in current:
            raw = read(block.path)
            try:
                current[block.path] = None if raw is None else raw.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(f"block {block.number}: {block.path} is not a UTF-8 text file")
                continue
        text, error = apply_block(current[block.path], block)
        if error:
            errors.append(f"block {block.number} ({block.path}): {error}")
        else:
            current[block.path] = text
    files = {path: text.encode("utf-8") for path, text in current.items() if text is not None}
    return files, errors


def apply_block(content: str | None, block: EditBlock) -> tuple[str | None, str]:
    """(new content, "") or (None, why the block does not apply). Matching is exact; when the exact
    text is absent, lines are compared without trailing whitespace."""
    if not block.search.strip():
        if content is not None and content.strip():
            return None, "the SEARCH part is empty but the file exists: quote the lines to replace"
        return block.replace, ""
    if content is None:
        return None, "the file does not exist (to create it, leave the SEARCH part empty)"
    count = content.count(block.search)
    if count == 1:
        return content.replace(block.search, block.replace, 1), ""
    if count > 1:
        return None, f"the SEARCH text occurs {count} times: include more lines so it occurs once"
    return _apply_loose(content, block)


def _apply_loose(content: str, block: EditBlock) -> tuple[str | None, str]:
    lines = content.splitlines(keepends=True)
    want = [line.rstrip() for line in block.search.splitlines()]
    have = [line.rstrip() for line in lines]
    starts = [i for i in range(len(have) - len(want) + 1) if have[i : i + len(want)] == want]
    if len(starts) == 1:
        i = starts[0]
        return "".join(lines[:i]) + block.replace + "".join(lines[i + len(want) :]), ""
    if len(starts) > 1:
        return None, f"the SEARCH text occurs {len(starts)} times: include more lines so it occurs once"
    first = next((line for line in want if line.strip()), "")
    return None, f"the SEARCH text is not in the file (its first line: {first[:120]!r}); copy it exactly"


_CODE_BLOCK = re.compile(r"^\s*(```|~~~)[^\n]*\n(.*?)^\s*\1\s*$", re.MULTILINE | re.DOTALL)


def parse_solution(reply: str, solution: str) -> ParsedReply:
    """The whole solution file from `reply`: exactly one fenced code block; the rest is the report."""
    found = list(_CODE_BLOCK.finditer(reply))
    prose = _CODE_BLOCK.sub("", reply).splitlines()
    report, summary = report_of(prose)
    if len(found) != 1:
        what = "no fenced code block" if not found else f"{len(found)} fenced code blocks"
        error = f"the reply has {what}: write the whole of {solution} in exactly one ``` block"
        return ParsedReply((), report, summary, (error,))
    code = found[0].group(2)
    if not code.strip():
        return ParsedReply((), report, summary, (f"the code block for {solution} is empty",))
    return ParsedReply((), report, summary, (), solution=code)
