"""The refusals `ratchet run`, `ratchet compare` and `ratchet check` share, so `check` never passes
what `run` then refuses: a contract that does not validate, a setting this build cannot run, a folder
that is not the top of a git repository (a project in a subfolder of one included), a repository
without a commit, a path the contract names that is missing or out of place
(`contract_paths.check_contract_paths`), a `sandbox.mode = "bwrap"` whose sandbox does not work here,
a files agent whose candidates folder is missing, a budget the agent kind cannot enforce
(`core.budget.agent_kinds.unenforceable_budgets`).
"""

from __future__ import annotations

from pathlib import Path

from ratchet.commands.contract_file import load_contract
from ratchet.commands.contract_paths import check_contract_paths
from ratchet.compute.factory import check_compute
from ratchet.compute.sandbox import resolve_mode
from ratchet.core.budget.agent_kinds import unenforceable_budgets
from ratchet.core.contract import Contract
from ratchet.core.contract_load import LoadedContract
from ratchet.core.errors import ContractError, DataError
from ratchet.core.unsupported import refuse_unsupported
from ratchet.workspace.git import Git


def check_project(directory: Path, for_compare: bool = False) -> tuple[LoadedContract, Git]:
    """Load the contract in `directory` and refuse what a run would refuse (see the module
    docstring; the agent's settings only when not `for_compare`). Writes nothing.

    Raises ContractError (`contract.*`), UnsupportedError (`unsupported.*`), DataError /
    GitError `git.not_a_repo` (also for a project in a subfolder of a repository), GitError
    `git.no_commits`, ContractError `contract.path_missing` / `contract.path_scope` /
    `contract.agent_not_found` (a command agent's program not found; not for compare), SandboxError
    `sandbox.unavailable`, DataError from the files agent's folder,
    ContractError `contract.unenforceable_budget` (not for compare, which runs no agent); all exit 2."""
    loaded = load_contract(directory)
    refuse_unsupported(loaded.contract, agent=not for_compare)
    if not for_compare:
        refuse_unenforceable_budgets(loaded.contract)
    check_compute(loaded.contract.compute)
    if not Git.is_repo(loaded.root):
        raise DataError("git.not_a_repo", f"{loaded.root} is not a git repository",
                        hint="run `git init && git add -A && git commit -m baseline` first")
    git = Git(loaded.root)  # raises git.not_a_repo for a subfolder of a repository
    git.head_commit()  # raises git.no_commits with a hint
    check_contract_paths(loaded, git, agent=not for_compare)
    resolve_mode(loaded.contract.sandbox.mode)  # raises sandbox.unavailable for a bwrap that does not work
    if not for_compare:
        refuse_missing_agent_program(loaded.contract)
    files = loaded.contract.agent.files
    if not for_compare and loaded.contract.agent.kind == "files" and files is not None:
        from ratchet.agents.files import list_candidates

        list_candidates(loaded.root / files.path)
    return loaded, git


def refuse_missing_agent_program(contract: Contract) -> None:
    """Raise ContractError `contract.agent_not_found` (exit 2) when a command agent's program, found
    as each leg finds it (`agents.command.program.agent_program`), is not there or not executable: every
    attempt would end `start_failed`. A path relative to the workspace is known only there: not refused."""
    command = contract.agent.command
    if contract.agent.kind != "command" or command is None:
        return
    from ratchet.agents.command.probe import first_word
    from ratchet.agents.command.program import agent_program

    reach = agent_program(first_word(command.command))
    if reach.problem:
        raise ContractError("contract.agent_not_found", f"agent.command.command: {reach.problem}",
                            hint="install the CLI where the PATH Ratchet runs with finds it, or name it by its "
                                 "absolute path (`ratchet check` shows where it was looked for)")


def refuse_unenforceable_budgets(contract: Contract) -> None:
    """Raise ContractError `contract.unenforceable_budget` (exit 2) naming the first limited budget
    the contract's agent kind cannot enforce (`unenforceable_budgets`), if any."""
    refused = unenforceable_budgets(contract)
    if refused:
        first = refused[0]
        others = [f"budget.{r.budget}" for r in refused[1:]]
        also = f" (also: {', '.join(others)})" if others else ""
        raise ContractError("contract.unenforceable_budget",
                            f"budget.{first.budget} = {getattr(contract.budget, first.budget):g} cannot be enforced: "
                            f"{first.why}{also}", hint=first.hint)
