"""The contract's `[agent]` section (pure): the agent kinds and their settings (search, files,
command; the llm agent's in `contract_llm.py`)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ratchet.core.contract_base import _Model, check_scope_path, env_problem
from ratchet.core.contract_llm import LlmAgentConfig, LlmPrice

# --- [agent] ------------------------------------------------------------------------------------

MAX_WORKERS = 64
"""The most attempts `agent.workers` may keep in flight at once."""


class FloatParam(_Model):
    """A float tunable in [low, high]; `log` samples on a log scale (then low > 0)."""

    type: Literal["float"]
    low: float
    high: float
    log: bool = False

    @model_validator(mode="after")
    def _bounds(self) -> FloatParam:
        return _check_bounds(self)


class IntParam(_Model):
    """An integer tunable in [low, high]; `log` samples on a log scale (then low > 0)."""

    type: Literal["int"]
    low: int
    high: int
    log: bool = False

    @model_validator(mode="after")
    def _bounds(self) -> IntParam:
        return _check_bounds(self)


class CategoricalParam(_Model):
    """A tunable taking one of `choices` (>= 1 distinct values)."""

    type: Literal["categorical"]
    choices: Annotated[list[str | int | float | bool], Field(min_length=1)]


def _check_bounds(param: FloatParam | IntParam) -> Any:
    if not param.low < param.high:
        raise ValueError(f"low ({param.low}) must be < high ({param.high})")
    if param.log and param.low <= 0:
        raise ValueError(f"log = true needs low > 0 (low is {param.low})")
    return param


Param = Annotated[FloatParam | IntParam | CategoricalParam, Field(discriminator="type")]


class SearchAgentConfig(_Model):
    """[agent.search]: Optuna over `space`, written into the params `file` (.toml or .json)."""

    file: str
    sampler: Literal["tpe", "random"] = "tpe"
    space: Annotated[dict[str, Param], Field(min_length=1)]

    @field_validator("file")
    @classmethod
    def _file(cls, value: str) -> str:
        check_scope_path(value)
        if not value.endswith((".toml", ".json")):
            raise ValueError(f"{value!r}: the params file must end in .toml or .json")
        return value


class FilesAgentConfig(_Model):
    """[agent.files]: prepared candidates (subdirectories or .patch files), one per attempt."""

    path: str

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return check_scope_path(value)


AGENT_TEMPLATE_FIELDS = ("prompt", "prompt_text", "workspace", "channel", "session")
"""Placeholders of `agent.command.command` / `wake_command`: the prompt file's path, the prompt's
text (one argument), the workspace, the channel folder, the session id the CLI reported (wake only)."""

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def check_agent_template(value: str, allow_session: bool) -> str:
    """Validate a command template: non-empty, only known `{placeholders}` (see
    AGENT_TEMPLATE_FIELDS; `{session}` only in `wake_command`). Raises ValueError."""
    if not value.strip():
        raise ValueError("the command template is empty")
    for name in _PLACEHOLDER.findall(value):
        if name not in AGENT_TEMPLATE_FIELDS or (name == "session" and not allow_session):
            known = ", ".join("{" + f + "}" for f in AGENT_TEMPLATE_FIELDS if allow_session or f != "session")
            raise ValueError(f"unknown placeholder {{{name}}} (known: {known})")
    return value


class CommandAgentConfig(_Model):
    """[agent.command]: an external coding-agent CLI run in its own workspace under the sandbox,
    talking to the kernel through the channel (docs/agents-command.md).

    command: argv template for a fresh start (placeholders AGENT_TEMPLATE_FIELDS but {session}).
    wake_command: argv template for a CLI that resumes its session by id (None: each wake is a fresh
    start of `command` with the wake message as its prompt). pass_env: names of variables copied
    from the operator's environment (the model's credentials); nothing else of it reaches the agent.
    network: the agent's sandbox shares the host's network. timeout_s: seconds per leg (also capped
    by what budget.max_wall leaves). brief: a file of the project holding the user's brief.
    price: USD per million input and output tokens (`[agent.command.price]`, the names of
    `[agent.llm.price]`), pricing the tokens the CLI reports when it reports no cost of its own.
    submit: how a session submits. "on_exit" (default): a CLI that exits by itself (exit code 0)
    with changes in scope and no request has its workspace harvested as the submission, its report
    read from REPORT.md (or its last output); a request through the channel still wins. "channel":
    only `ratchet-sys submit` submits; such an exit is reminded once, then the attempt ends.
    max_submits: submissions one session may make: after a verdict that did not promote, the same
    session is woken with it and may revise and submit again (each revision is the next attempt);
    1: every attempt is a fresh session.
    """

    command: str
    wake_command: str | None = None
    pass_env: list[str] = []
    network: bool = False
    timeout_s: Annotated[float, Field(gt=0)] = 3600.0
    brief: str | None = None
    price: LlmPrice = LlmPrice()
    submit: Literal["channel", "on_exit"] = "on_exit"
    max_submits: Annotated[int, Field(ge=1, le=20)] = 3

    @field_validator("command")
    @classmethod
    def _command(cls, value: str) -> str:
        return check_agent_template(value, allow_session=False)

    @field_validator("wake_command")
    @classmethod
    def _wake(cls, value: str | None) -> str | None:
        return None if value is None else check_agent_template(value, allow_session=True)

    @field_validator("pass_env")
    @classmethod
    def _pass_env(cls, value: list[str]) -> list[str]:
        for name in value:
            problem = env_problem(name)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("brief")
    @classmethod
    def _brief(cls, value: str | None) -> str | None:
        return None if value is None else check_scope_path(value)


class AgentSection(_Model):
    """[agent]: who proposes candidates; the subsection named by `kind` is required.
    max_idle_attempts: attempts in a row whose agent did not work (failed to start, timed out,
    returned nothing usable, its server did not answer) after which the run stops
    `agent_unresponsive`; 0: never. workers: attempts in flight at once (1..MAX_WORKERS), each
    with its own agent instance, all judged against one champion (docs/workers.md)."""

    kind: Literal["search", "files", "command", "llm"]
    max_idle_attempts: Annotated[int, Field(ge=0)] = 3
    workers: Annotated[int, Field(ge=1, le=MAX_WORKERS)] = 1
    search: SearchAgentConfig | None = None
    files: FilesAgentConfig | None = None
    command: CommandAgentConfig | None = None
    llm: LlmAgentConfig | None = None

    @model_validator(mode="after")
    def _subsection(self) -> AgentSection:
        if getattr(self, self.kind) is None:
            raise ValueError(f"agent.kind = {self.kind!r} requires an [agent.{self.kind}] section")
        return self


