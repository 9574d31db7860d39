"""The `[agent.llm]` section of the contract: a model behind an OpenAI-compatible chat API (docs/agents-llm.md).

Pure, like `contract.py` (which imports these models). The API key never appears here: the contract
holds only the NAME of the environment variable that carries it (`api_key_env`), read at call time.
The model budgets (`max_model_calls`, `max_input_tokens`, `max_output_tokens`, `max_usd`) live in
`[budget]`; the price table that turns tokens into dollars lives here, in `[agent.llm.price]`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ratchet.core.contract_base import check_scope_path

MAX_TEMPERATURE = 2.0
"""The largest `temperature` OpenAI-compatible servers accept."""

MOVED_KEYS = {"max_calls": "budget.max_model_calls", "max_tokens": "budget.max_output_tokens"}
"""Keys `[agent.llm]` refuses, each with the `[budget]` key its error names instead."""

PROMPT_KINDS = ("system", "repository", "examples", "strategy")
"""The prompts an `[agent.llm.prompts]` table may override, one file each."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class LlmPrice(_Model):
    """[agent.llm.price]: USD per million tokens, input (prompt) and output (completion). Turns the
    token counts of a call into the dollars `budget.max_usd` limits."""

    input_usd_per_mtok: Annotated[float, Field(ge=0)] = 0.0
    output_usd_per_mtok: Annotated[float, Field(ge=0)] = 0.0


class LlmPrompts(_Model):
    """[agent.llm.prompts]: files (relative to the project root, read when the run starts) replacing
    the built-in prompt templates; a key left out keeps the built-in one."""

    system: str | None = None
    repository: str | None = None
    examples: str | None = None
    strategy: str | None = None

    @field_validator("system", "repository", "examples", "strategy")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        return None if value is None else check_scope_path(value)


class LlmAgentConfig(_Model):
    """[agent.llm]: a model behind an OpenAI-compatible chat API: hosted, vLLM,
    Ollama or llama.cpp, chosen by `base_url`.

    api_key_env: the NAME of the variable holding the key ("" when the server needs none).
    max_output_tokens: per call (the request's `max_tokens`); context_window: the model's context in
    tokens (prompts are fitted into it and a reply cut off by it is a configuration error).
    request_timeout_s: one request's overall deadline, even when the server holds the connection
    open; max_retries: retries of a 429 or 5xx. strategy: one strategy call per round writing
    `directives` directives, each becoming one attempt.
    """

    base_url: str
    model: Annotated[str, Field(min_length=1)]
    api_key_env: str = "OPENAI_API_KEY"
    temperature: Annotated[float, Field(ge=0, le=MAX_TEMPERATURE)] = 0.2
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    max_output_tokens: Annotated[int, Field(ge=1)] = 4096
    context_window: Annotated[int, Field(ge=1024)] = 32768
    request_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    max_retries: Annotated[int, Field(ge=0, le=20)] = 4
    retry_max_wait_s: Annotated[float, Field(ge=0)] = 60.0
    strategy: bool = False
    directives: Annotated[int, Field(ge=1, le=16)] = 3
    price: LlmPrice = LlmPrice()
    prompts: LlmPrompts = LlmPrompts()

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for old, new in MOVED_KEYS.items():
                if old in data:
                    raise ValueError(f"agent.llm.{old} has moved: set {new} in [budget]")
        return data

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{value!r} is not an http(s) URL (e.g. 'https://api.openai.com/v1')")
        if parts.username or parts.password:
            raise ValueError("base_url must not carry credentials; put the key in the variable api_key_env names")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if value and not _ENV_NAME.fullmatch(value):
            raise ValueError(  # the value is not echoed: it may be a pasted key
                "this is not an environment variable name: api_key_env is the NAME of the variable "
                "holding the key (e.g. OPENAI_API_KEY), never the key itself"
            )
        return value

    @model_validator(mode="after")
    def _room_to_reply(self) -> LlmAgentConfig:
        if self.max_output_tokens >= self.context_window:
            raise ValueError(
                f"max_output_tokens ({self.max_output_tokens}) leaves no room for a prompt in "
                f"context_window ({self.context_window})"
            )
        return self
