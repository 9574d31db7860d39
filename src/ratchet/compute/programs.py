"""Where a command's program lives, so a sandbox can show it: the executable its first word names
(resolved on the PATH the command will run with, symlinks followed), the install prefix that
executable belongs to, and the same for the interpreter of a script's `#!` line.

The install prefix of a file, walking up from its directory, is the nearest directory that
- holds `pyvenv.cfg` or `conda-meta/` (a venv, a pipx or uv tool, a conda environment), or
- is the parent of a directory named `bin` or `lib` (nvm's `~/.nvm/versions/node/vX`, pyenv's
  `~/.pyenv/versions/X`, a `pip --user` install's `~/.local`, `/usr/local`).
`/`, the operator's home and its parents are never a prefix: a program directly under them (say
`~/bin/tool`) is bound as its file alone. A version manager's shim (`~/.pyenv/shims/python3`) is
replaced by the program of the version it selects (`shim_target`). The path the command names (a symlink such as pipx's
`~/.local/bin/aider`) adds only a marked prefix (`pyvenv.cfg`: a venv's `bin/python` symlink needs
its venv); its own `bin/..` would expose more than the program (all of `~/.local`), so a symlink
outside every bound prefix is run by its resolved path instead.

Reads the filesystem (stat, realpath, the first line of a script); runs nothing.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

PREFIX_MARKERS = ("pyvenv.cfg", "conda-meta")
"""Entries whose presence makes a directory an install prefix (a venv, a conda environment)."""

PREFIX_PARENT_OF = ("bin", "lib")
"""A directory of one of these names makes its parent an install prefix."""

SHEBANG_BYTES = 256
"""Bytes of a script read for its `#!` line."""

MAX_INTERPRETERS = 4
"""Interpreters followed from one program (a script whose interpreter is a script, ...)."""


@dataclass(frozen=True)
class ProgramReach:
    """What a sandbox must show for a command's first word to run.

    word: the word as written. found: the absolute path it names (found on PATH, or the word
    itself when absolute; None when not found, or a relative path such as `agent/bot.py`, which
    runs from the working directory). resolved: `found` with every symlink followed. prefixes:
    directories to bind read-only (install prefixes, or a lone file when no prefix applies), in
    the order found; system directories (/usr) included, a sandbox skips what it already binds.
    interpreters: the `#!` interpreters followed, as written (an `env NAME` line: NAME resolved
    on PATH). exec_path: what the sandbox should run (`found` when a bound prefix covers it, else
    `resolved`; the word itself when not found). problem: why it cannot run (not found, not
    executable), or None. user_base: `~/.local` when the program is a `pip install --user` one
    (its prefix): the sandbox's HOME is not the operator's, so Python finds that install only
    through PYTHONUSERBASE; None otherwise.
    """

    word: str
    found: str | None
    resolved: str | None
    prefixes: tuple[str, ...]
    interpreters: tuple[str, ...]
    exec_path: str
    problem: str | None = None
    user_base: str | None = None

    def to_json(self) -> dict[str, object]:
        """The reach as JSON-ready values (`ratchet check --json`)."""
        return {"word": self.word, "found": self.found, "resolved": self.resolved, "prefixes": list(self.prefixes),
                "interpreters": list(self.interpreters), "exec_path": self.exec_path, "problem": self.problem,
                "user_base": self.user_base}


def _home() -> str:
    return os.path.realpath(os.path.expanduser("~"))


def _allowed(path: str, home: str) -> bool:
    """Whether `path` may be bound whole: never `/`, the home directory or one of its parents."""
    return path != "/" and path != home and not home.startswith(path.rstrip("/") + "/")


def _marked(directory: str) -> bool:
    return any(os.path.lexists(os.path.join(directory, m)) for m in PREFIX_MARKERS)


def install_prefix(path: str, markers_only: bool = False) -> str | None:
    """The install prefix of the file `path` (absolute; see the module docstring), or None when
    none applies. markers_only: only a directory holding a PREFIX_MARKERS entry counts."""
    home = _home()
    directory = os.path.dirname(os.path.abspath(path))
    while directory != "/":
        if _marked(directory) and _allowed(directory, home):
            return directory
        parent = os.path.dirname(directory)
        if not markers_only and os.path.basename(directory) in PREFIX_PARENT_OF:
            return parent if _allowed(parent, home) else None
        directory = parent
    return None


def locate(word: str, path: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The absolute path `word` names: itself when absolute, the first executable match on `path`
    (a colon-separated PATH) when it has no slash; None when not found or relative with a slash.
    A match in a version manager's `shims/` directory is replaced by the program of the version
    it selects (`shim_target`), or skipped when that cannot be told: a shim runs its manager,
    which needs state in the operator's home that a sandbox does not show."""
    if os.path.isabs(word):
        return os.path.normpath(word) if os.path.exists(word) else None
    if "/" in word:
        return None
    for entry in path.split(os.pathsep):
        candidate = os.path.join(entry or ".", word)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if os.path.basename(os.path.normpath(entry)) == "shims":
            target = shim_target(entry, word, os.environ if environ is None else environ)
            if target is None:
                continue
            return target
        return os.path.abspath(candidate)
    return None


def shim_target(shims: str, word: str, environ: Mapping[str, str]) -> str | None:
    """The program a pyenv-style shim `shims/word` runs: `<root>/versions/<v>/bin/word` for the
    first version `v` named by PYENV_VERSION (colon-separated) or `<root>/version` (one per line),
    `system` skipped; None when there is none (`root` is the parent of `shims`)."""
    root = os.path.dirname(os.path.abspath(shims))
    named = environ.get("PYENV_VERSION", "")
    if named:
        versions = named.split(":")
    else:
        try:
            with open(os.path.join(root, "version"), encoding="utf-8") as f:
                versions = f.read().split()
        except OSError:
            versions = []
    for version in versions:
        program = os.path.join(root, "versions", version, "bin", word)
        if version != "system" and os.path.isfile(program) and os.access(program, os.X_OK):
            return program
    return None


def shebang(path: str, search_path: str) -> str | None:
    """The interpreter of the script `path` as its `#!` line names it (for `#!/usr/bin/env [-S] NAME`,
    NAME located on `search_path`); None when `path` is no script or the interpreter is not found."""
    try:
        with open(path, "rb") as f:
            head = f.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    if not words:
        return None
    if os.path.basename(words[0]) != "env":
        return words[0]
    names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return locate(names[0], search_path) if names else None


def program_reach(word: str, path: str) -> ProgramReach:
    """What a sandbox must bind for the command word `word` to run with PATH `path` (see
    ProgramReach and the module docstring). Never raises: a program that is not found or not
    executable has a `problem`."""
    found = locate(word, path)
    if found is None:
        problem = None if "/" in word and not os.path.isabs(word) else (
            f"{word} is not found on the PATH the agent runs with ({path})" if "/" not in word
            else f"{word} does not exist")
        return ProgramReach(word, None, None, (), (), word, problem)
    prefixes: list[str] = []
    interpreters: list[str] = []
    _visit(found, path, prefixes)
    resolved = os.path.realpath(found)
    current = resolved
    for _ in range(MAX_INTERPRETERS):
        interpreter = shebang(current, path)
        if interpreter is None or not os.path.isabs(interpreter):
            break
        interpreters.append(interpreter)
        if not os.path.exists(interpreter):
            break
        _visit(interpreter, path, prefixes)
        current = os.path.realpath(interpreter)
    problem = None
    if not os.access(resolved, os.X_OK) or os.path.isdir(resolved):
        problem = f"{found} is not an executable file"
    elif interpreters and not os.path.exists(interpreters[-1]):
        problem = f"{found} names the interpreter {interpreters[-1]}, which does not exist"
    covered = any(found == p or found.startswith(p.rstrip("/") + "/") for p in prefixes)
    user_base = os.path.join(_home(), ".local")
    return ProgramReach(word, found, resolved, tuple(prefixes), tuple(interpreters),
                        found if covered else resolved, problem, user_base if user_base in prefixes else None)


def _visit(literal: str, path: str, prefixes: list[str]) -> None:
    """Add the prefixes `literal` (a path as a command or a `#!` line names it) needs: the marked
    prefix of its own location, and the prefix of its resolved file (or that file alone)."""
    resolved = os.path.realpath(literal)
    for prefix in (install_prefix(literal, markers_only=True), install_prefix(resolved) or resolved):
        if prefix is not None and prefix not in prefixes:
            prefixes.append(prefix)
