"""The contract's keys of a prompt solution (`target.solution_kind = "prompt"`, docs/prompts.md): the
eval model `[target.model]` that answers each example under the solution's text, and the judge model
`[target.judge]` of `llm_judge` checks.

Pure, like `contract.py` (which imports these models). Both sections have one shape, the llm agent's
(`contract_llm.LlmAgentConfig`): the API key never appears here, only the NAME of the variable that
carries it (`api_key_env`); `as_client_config` turns a section into the llm agent's client settings,
so eval and judge calls go through the same OpenAI-compatible client (retries, Retry-After,
deadlines, failures as data).
"""

from __future__ import annotations

import string
from typing import Annotated

from pydantic import Field, model_validator

from ratchet.core.contract_base import _Model
from ratchet.core.contract_llm import MAX_TEMPERATURE, LlmAgentConfig, LlmPrice

MAX_SAMPLES = 100
"""The most replies `samples` may ask per example."""

DEFAULT_PROMPT_TEMPLATE = "{input}"
"""`target.prompt_template` by default: the user message is the example's input, as it is."""

SOLUTION_TEXT_CAP_BYTES = 256 * 1024
"""The largest prompt file (`target.solution`) a prompt solution may be; a larger one fails every
example of its shard (`model_error`), so a candidate cannot make a call's cost unbounded."""


class ModelSection(_Model):
    """[target.model] (the eval model) or [target.judge] (the judge model): an OpenAI-compatible chat
    endpoint (hosted, vLLM, Ollama, llama.cpp: chosen by `base_url`).

    api_key_env: the NAME of the variable holding the key ("" when the server needs none).
    temperature, max_tokens (per reply), seed (sent as is for sample 0, seed + k for sample k; None:
    not sent). samples: replies asked per example (eval model; a judge always judges each sample
    once). timeout_s: one request's overall deadline; max_retries: retries of a 429, a 5xx or an
    unreachable server; retry_max_wait_s: the longest wait between tries. context_window: the
    model's context in tokens (a reply cut off by it is a configuration error). price: USD per
    million input and output tokens (the `budget.max_eval_usd` arithmetic).
    """

    base_url: str
    model: Annotated[str, Field(min_length=1)]
    api_key_env: str = "OPENAI_API_KEY"
    temperature: Annotated[float, Field(ge=0, le=MAX_TEMPERATURE)] = 0.0
    max_tokens: Annotated[int, Field(ge=1)] = 256
    seed: Annotated[int, Field(ge=0, le=2**31 - 1 - MAX_SAMPLES)] | None = None
    samples: Annotated[int, Field(ge=1, le=MAX_SAMPLES)] = 1
    timeout_s: Annotated[float, Field(gt=0)] = 60.0
    max_retries: Annotated[int, Field(ge=0, le=20)] = 4
    retry_max_wait_s: Annotated[float, Field(ge=0)] = 60.0
    context_window: Annotated[int, Field(ge=1024)] = 8192
    price: LlmPrice = LlmPrice()

    @model_validator(mode="after")
    def _checked(self) -> ModelSection:
        if self.max_tokens >= self.context_window:
            raise ValueError(f"max_tokens ({self.max_tokens}) leaves no room for a prompt in context_window "
                             f"({self.context_window})")
        self.as_client_config()  # the llm agent's rules: an http(s) URL without credentials, a variable NAME
        return self

    def as_client_config(self, sample: int = 0) -> LlmAgentConfig:
        """The llm agent's client settings for sample `sample` (its seed: seed + sample). Raises
        ValueError (pydantic's) for a base_url or api_key_env the llm agent would refuse too, or a
        max_tokens that leaves no room in context_window."""
        return LlmAgentConfig(
            base_url=self.base_url, model=self.model, api_key_env=self.api_key_env, temperature=self.temperature,
            seed=None if self.seed is None else self.seed + sample, max_output_tokens=self.max_tokens,
            context_window=self.context_window, request_timeout_s=self.timeout_s, max_retries=self.max_retries,
            retry_max_wait_s=self.retry_max_wait_s, price=self.price,
        )

    def identity(self) -> dict[str, object]:
        """What of this section changes a reply (the reply cache's key and the run's record): the
        endpoint, the model and every sampling setting; never the key's variable, the timeouts or
        the price."""
        return {"base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "seed": self.seed}


def template_problem(template: str) -> str | None:
    """What is wrong with `target.prompt_template` (None: nothing): it must hold `{input}` and no
    other `{...}` field (write `{{` and `}}` for literal braces)."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        return f"target.prompt_template is not a valid template ({exc}); write {{{{ and }}}} for literal braces"
    other = sorted({f for f in fields if f != "input"})
    if other:
        return (f"target.prompt_template names {', '.join('{' + f + '}' for f in other)}; only {{input}} is known "
                "(write {{ and }} for literal braces)")
    if "input" not in fields:
        return "target.prompt_template must contain {input} (where the example's input goes)"
    return None
