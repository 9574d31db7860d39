"""The refusals `ratchet run`, `ratchet compare` and `ratchet check` share, so `check` never passes
what `run` then refuses: a contract that does not validate, a setting this build cannot run, a folder
that is not the top of a git repository (a project in a subfolder of one included), a repository
without a commit, a `sandbox.mode = "bwrap"` whose sandbox does not work here, a files agent whose
candidates folder is missing.
"""

from __future__ import annotations

from pathlib import Path

from ratchet.commands.contract_file import load_contract
from ratchet.compute.factory import check_compute
from ratchet.compute.sandbox import resolve_mode
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import DataError
from ratchet.core.unsupported import refuse_unsupported
from ratchet.workspace.git import Git


def check_project(directory: Path, for_compare: bool = False) -> tuple[LoadedContract, Git]:
    """Load the contract in `directory` and refuse what a run would refuse (see the module
    docstring; the agent's settings only when not `for_compare`). Writes nothing.

    Raises ContractError (`contract.*`), UnsupportedError (`unsupported.*`), DataError /
    GitError `git.not_a_repo` (also for a project in a subfolder of a repository), GitError
    `git.no_commits`, SandboxError `sandbox.unavailable`, DataError from the files agent's folder;
    all exit 2."""
    loaded = load_contract(directory)
    refuse_unsupported(loaded.contract, agent=not for_compare)
    check_compute(loaded.contract.compute)
    if not Git.is_repo(loaded.root):
        raise DataError("git.not_a_repo", f"{loaded.root} is not a git repository",
                        hint="run `git init && git add -A && git commit -m baseline` first")
    git = Git(loaded.root)  # raises git.not_a_repo for a subfolder of a repository
    git.head_commit()  # raises git.no_commits with a hint
    resolve_mode(loaded.contract.sandbox.mode)  # raises sandbox.unavailable for a bwrap that does not work
    files = loaded.contract.agent.files
    if not for_compare and loaded.contract.agent.kind == "files" and files is not None:
        from ratchet.agents.files import list_candidates

        list_candidates(loaded.root / files.path)
    return loaded, git
