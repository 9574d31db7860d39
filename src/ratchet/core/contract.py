"""The contract (`ratchet.toml`): strict, frozen models for every section and key (docs/guide.md).

Pure: no file access here (validating a file's bytes: `contract_load.py`). Unknown keys are errors; a key
left out takes its default (`ratchet init` writes every key with it). Values the schema knows but this build cannot run
yet validate here and are refused by `ratchet run` (see `unsupported.py`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ratchet.core.contract_agents import (
    AGENT_TEMPLATE_FIELDS,
    AgentSection,
    CategoricalParam,
    CommandAgentConfig,
    FilesAgentConfig,
    FloatParam,
    IntParam,
    SearchAgentConfig,
    check_agent_template,
)
from ratchet.core.contract_base import (
    AGENT_RESERVED_ENV,
    CONTRACT_FILE,
    GLOB_CHARS,
    NAME_PATTERN,
    _Model,
    check_scope_path,
    env_problem,
    parse_duration,
    scope_covers,
)
from ratchet.core.contract_guardrails import GuardrailSection, SuiteSection, guardrail_problems
from ratchet.core.contract_llm import LlmAgentConfig
from ratchet.core.contract_prompt import DEFAULT_PROMPT_TEMPLATE, ModelSection, template_problem
from ratchet.core.jobenv import env_name_problem

__all__ = [
    "AGENT_RESERVED_ENV", "AGENT_TEMPLATE_FIELDS", "CONTRACT_FILE", "GLOB_CHARS", "NAME_PATTERN", "AgentSection",
    "BudgetSection", "CampaignSection", "CategoricalParam", "Check", "CommandAgentConfig", "ComputeSection",
    "Contract", "CustomCheck", "ExactMatchCheck", "FilesAgentConfig", "FloatParam", "GateSection",
    "GuardrailSection", "IntParam", "JsonEqualityCheck", "LlmAgentConfig", "LlmJudgeCheck",
    "ModelSection", "NormalizedMatchCheck", "NumericToleranceCheck", "RegexMatchCheck",
    "SandboxSection", "ScopeSection", "SearchAgentConfig", "SlurmSection", "TargetSection", "check_agent_template",
    "check_scope_path", "env_problem", "parse_duration", "scope_covers",
]


# --- [campaign] ---------------------------------------------------------------------------------


class CampaignSection(_Model):
    """[campaign]: the run's name and master seed (splits, search, unit seeds with a per-run salt)."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    seed: Annotated[int, Field(ge=0, le=2**53 - 1)] = 0


# --- [target] and its checks ---------------------------------------------------------------------


class _CheckBase(_Model):
    """What every check has: an optional `name` (a check's pass rate is reported under it, so two checks
    of one type stay apart, and a [[gate.guardrails]] entry may name it)."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None


class ExactMatchCheck(_CheckBase):
    """Output equals the expected string exactly (one trailing newline ignored on each side; a
    non-string expected value is a check_error). Semantics: docs/examples-checks.md."""

    type: Literal["exact_match"]


class NormalizedMatchCheck(_CheckBase):
    """Output and expected string equal after the enabled normalizations."""

    type: Literal["normalized_match"]
    lowercase: bool = True
    strip: bool = True
    collapse_whitespace: bool = True


class JsonEqualityCheck(_CheckBase):
    """The output parses as JSON and equals the expected JSON value by JSON type (`true` never
    equals `1`; a string expected value is a JSON string, not JSON text)."""

    type: Literal["json_equality"]


class RegexMatchCheck(_CheckBase):
    """The output matches `pattern` (Python `re`, full match unless `fullmatch = false`)."""

    type: Literal["regex_match"]
    pattern: str
    fullmatch: bool = True
    ignorecase: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value


class NumericToleranceCheck(_CheckBase):
    """|actual - expected| <= atol + rtol * |expected|: expected a JSON number (or a string holding
    one), the output an ASCII decimal number."""

    type: Literal["numeric_tolerance"]
    atol: Annotated[float, Field(ge=0)] = 0.0
    rtol: Annotated[float, Field(ge=0)] = 0.0


class CustomCheck(_CheckBase):
    """A script (path relative to the project root) judging one example: JSON on stdin, exit 0 pass,
    1 fail (stderr the reason), anything else an error."""

    type: Literal["custom"]
    script: str
    timeout_s: Annotated[float, Field(gt=0)] = 30.0

    @field_validator("script")
    @classmethod
    def _relative(cls, value: str) -> str:
        return check_scope_path(value)


class LlmJudgeCheck(_CheckBase):
    """The judge model `[target.judge]` scores the output against the expected one with `rubric`,
    replying JSON {"pass": bool, "reason": str}; a reply of another shape is a check error
    (docs/prompts.md). Prompt solutions only."""

    type: Literal["llm_judge"]
    rubric: Annotated[str, Field(min_length=1)]


Check = Annotated[
    ExactMatchCheck | NormalizedMatchCheck | JsonEqualityCheck | RegexMatchCheck | NumericToleranceCheck | CustomCheck
    | LlmJudgeCheck,
    Field(discriminator="type"),
]

_BENCHMARK_KEYS: tuple[str, ...] = ("command", "metric", "metric_range", "suite")
_EXAMPLES_KEYS: tuple[str, ...] = ("examples", "solution", "split", "checks")


class TargetSection(_Model):
    """[target]: what is measured. `benchmark`: a command printing a JSON metric; `examples`:
    input/output examples scored by checks."""

    kind: Literal["benchmark", "examples"]
    command: Annotated[str, Field(min_length=1)] | None = None
    metric: Annotated[str, Field(min_length=1)] | None = None
    direction: Literal["max", "min"] = "max"
    seed_env: str = "RATCHET_SEED"
    timeout_s: Annotated[float, Field(gt=0)] = 600.0
    cache: bool = True
    examples: str | None = None
    solution: str | None = None
    split: Annotated[list[float], Field(min_length=3, max_length=3)] = [0.6, 0.2, 0.2]
    checks: list[Check] = []
    metric_range: Annotated[list[float], Field(min_length=2, max_length=2)] | None = None
    """[lo, hi]: every value the metric can take (benchmark); gives gate.max_unit_loss its default hi - lo."""
    suite: list[SuiteSection] = []
    """[[target.suite]]: further benchmark commands, each a guardrail (benchmark; docs/gate.md, Suites)."""
    solution_kind: Literal["script", "prompt"] = "script"
    """examples: `script` runs `python3 solution`; `prompt`: the solution is text answered by the eval
    model `[target.model]` (docs/prompts.md)."""
    prompt_template: str = DEFAULT_PROMPT_TEMPLATE
    """prompt: the user message, the example's input put in place of `{input}`."""
    model: ModelSection | None = None
    """[target.model]: the eval model of a prompt solution."""
    judge: ModelSection | None = None
    """[target.judge]: the judge model of `llm_judge` checks."""

    @field_validator("metric_range")
    @classmethod
    def _metric_range(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not value[0] < value[1]:
            raise ValueError(f"metric_range is [lo, hi] with lo < hi (got {list(value)})")
        return value

    @field_validator("seed_env")
    @classmethod
    def _seed_env(cls, value: str) -> str:
        problem = env_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("split")
    @classmethod
    def _split(cls, value: list[float]) -> list[float]:
        if any(v < 0 for v in value) or value[1] <= 0 or value[2] <= 0:
            raise ValueError("split is [dev, val, test]: all >= 0, val and test > 0")
        if abs(sum(value) - 1.0) > 1e-9:
            raise ValueError(f"split must sum to 1 (it sums to {sum(value):g})")
        return value

    @field_validator("examples", "solution")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return None if value is None else check_scope_path(value)

    @model_validator(mode="after")
    def _kind_keys(self) -> TargetSection:
        given = self.model_fields_set
        if self.kind == "benchmark":
            required, foreign = _BENCHMARK_KEYS, _EXAMPLES_KEYS
        else:
            required, foreign = ("examples", "solution"), _BENCHMARK_KEYS
        missing = [k for k in required if k not in ("metric_range", "suite") and getattr(self, k) is None]
        if missing:
            raise ValueError(f"target.kind = {self.kind!r} requires {', '.join('target.' + k for k in missing)}")
        stray = [k for k in foreign if k in given]
        if stray:
            raise ValueError(f"{', '.join('target.' + k for k in stray)} is not used with target.kind = {self.kind!r}")
        if self.kind == "examples" and not self.checks:
            raise ValueError("target.kind = 'examples' requires at least one [[target.checks]]")
        self._prompt_keys(given)
        return self

    def _prompt_keys(self, given: set[str]) -> None:
        """The keys of a prompt solution are given together, and only with it."""
        if self.solution_kind == "prompt":
            if self.kind != "examples":
                raise ValueError("target.solution_kind = 'prompt' needs target.kind = 'examples'")
            if self.model is None:
                raise ValueError("target.solution_kind = 'prompt' requires [target.model] (base_url and model of "
                                 "the eval model)")
            problem = template_problem(self.prompt_template)
            if problem:
                raise ValueError(problem)
        else:
            stray = [k for k in ("prompt_template", "model") if k in given]
            if stray:
                raise ValueError(f"{', '.join('target.' + k for k in stray)} is only used with "
                                 "target.solution_kind = 'prompt'")
        judged = any(c.type == "llm_judge" for c in self.checks)
        if judged and self.solution_kind != "prompt":
            raise ValueError("an llm_judge check needs target.solution_kind = 'prompt' (the kernel's model calls)")
        if judged and self.judge is None:
            raise ValueError("an llm_judge check requires [target.judge] (base_url and model of the judge model)")
        if self.judge is not None and not judged:
            raise ValueError("[target.judge] is only used by an llm_judge check: add one or remove [target.judge]")


# --- [scope] ------------------------------------------------------------------------------------


class ScopeSection(_Model):
    """[scope]: the only paths a candidate may change (`allowed`), paths never changeable
    (`protected`; `ratchet.toml` always is), and paths never shown to an agent (`hidden`)."""

    allowed: Annotated[list[str], Field(min_length=1)]
    protected: list[str] = []
    hidden: list[str] = []

    @field_validator("allowed", "protected", "hidden")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        return [check_scope_path(p) for p in value]

    @model_validator(mode="after")
    def _no_overlap(self) -> ScopeSection:
        for a in self.allowed:
            if scope_covers(a, CONTRACT_FILE) or a.rstrip("/") == CONTRACT_FILE:
                raise ValueError(f"scope.allowed entry {a!r} covers {CONTRACT_FILE}, which is always protected")
            for p in self.protected:
                if scope_covers(a, p) or scope_covers(p, a):
                    raise ValueError(f"scope.allowed entry {a!r} overlaps scope.protected entry {p!r}")
        return self


# --- [gate], [budget], [compute], [sandbox] -------------------------------------------------------


class GateSection(_Model):
    """[gate]: the statistics of the gate (docs/gate.md)."""

    alpha: Annotated[float, Field(gt=0, le=0.5)] = 0.05
    multiplicity: Literal["campaign", "trial"] = "campaign"
    test: Literal["guarded_sign_flip", "sign_flip", "betting"] = "guarded_sign_flip"
    """The test of a continuous metric (docs/gate.md): guarded_sign_flip (sign-flip plus the
    harmful-tail guard), sign_flip (exact when d - margin is symmetric) or betting (the floor test:
    valid for every distribution whose units lose at most gate.max_unit_loss). Binary scores always
    use their exact tests."""
    min_effect: Annotated[float, Field(ge=0)] = 0.0
    min_effect_rel: Annotated[float, Field(ge=0)] = 0.0
    units: Annotated[list[Annotated[int, Field(gt=0)]], Field(min_length=1)] = [10, 20, 40]
    confirm: bool = True
    holdout_units: Annotated[int, Field(ge=0)] = 0
    patience: Annotated[int, Field(ge=0)] = 0
    target: float | None = None
    max_unit_loss: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    """The largest loss one unit's paired difference can show (metric units, direction-normalised:
    every d >= -max_unit_loss): the floor of gate.test = "betting" (docs/gate.md). Default: hi - lo
    of target.metric_range when that is set, else unset. A unit below the floor rejects its candidate
    (`below_floor`)."""
    guardrails: list[GuardrailSection] = []
    """[[gate.guardrails]]: further metrics a candidate must not regress beyond their allowance
    (docs/gate.md, Guardrails)."""

    @field_validator("units")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if any(b <= a for a, b in zip(value, value[1:], strict=False)):
            raise ValueError(f"units must be strictly increasing (got {list(value)})")
        return value

    @property
    def holdout_size(self) -> int:
        """Units of the final holdout: `holdout_units`, or the last entry of `units` when 0."""
        return self.holdout_units or self.units[-1]


class BudgetSection(_Model):
    """[budget]: limits enforced by the kernel; 0 means unlimited, except `max_attempts` (>= 1).
    The model budgets (llm agent) count calls, input and output tokens as the server reports them,
    and USD priced from `[agent.llm.price]`; each call reserves its worst case first."""

    max_attempts: Annotated[int, Field(ge=1)] = 20
    max_evaluations: Annotated[int, Field(ge=0)] = 0
    max_cpu_hours: Annotated[float, Field(ge=0)] = 0.0
    max_gpu_hours: Annotated[float, Field(ge=0)] = 0.0
    max_wall: str | int | float = "0"
    max_val_trials: Annotated[int, Field(ge=0)] = 0
    max_model_calls: Annotated[int, Field(ge=0)] = 0
    max_input_tokens: Annotated[int, Field(ge=0)] = 0
    max_output_tokens: Annotated[int, Field(ge=0)] = 0
    max_usd: Annotated[float, Field(ge=0)] = 0.0
    max_eval_calls: Annotated[int, Field(ge=0)] = 0
    """Prompt solutions: eval and judge model calls (a cached reply costs none)."""
    max_eval_tokens: Annotated[int, Field(ge=0)] = 0
    """Prompt solutions: input plus output tokens of eval and judge calls."""
    max_eval_usd: Annotated[float, Field(ge=0)] = 0.0
    """Prompt solutions: dollars of eval and judge calls, priced from [target.model.price] / [target.judge.price]."""

    @field_validator("max_wall")
    @classmethod
    def _duration(cls, value: str | int | float) -> str | int | float:
        parse_duration(value)
        return value

    @property
    def max_wall_s(self) -> float:
        """`max_wall` in seconds (0.0: unlimited)."""
        return parse_duration(self.max_wall)


class SlurmSection(_Model):
    """[compute.slurm]: how jobs are submitted to a Slurm cluster (`compute.backend = "slurm"`).

    partition, account, qos: passed to sbatch as `--partition`, `--account`, `--qos` (None: the
    cluster's default). extra_args: further sbatch flags, verbatim (e.g. ["--constraint=a100"]).
    time_grace_s: seconds added to a job's timeout for its `--time` (the wrapper stops the job at
    its timeout; Slurm's limit is the backstop). poll_min_s, poll_max_s: seconds between scheduler
    polls, backing off from the first to the second while nothing changes; both are kept at or
    below half the cluster's MinJobAge (`scontrol show config`; `ratchet check` warns when they
    are clamped), so a task ending between two polls is seen before the controller forgets it. python: the interpreter
    that runs each task's wrapper on the nodes (None: the kernel's own, which must be visible there).
    max_array_size: the most tasks one array may hold (None: the cluster's MaxArraySize, read once
    per executor from `scontrol show config`); a larger submit is split into consecutive arrays.
    """

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    extra_args: list[str] = []
    time_grace_s: Annotated[float, Field(ge=0)] = 60.0
    poll_min_s: Annotated[float, Field(gt=0)] = 0.5
    poll_max_s: Annotated[float, Field(gt=0)] = 15.0
    python: str | None = None
    max_array_size: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _poll_order(self) -> SlurmSection:
        if self.poll_max_s < self.poll_min_s:
            raise ValueError(f"poll_max_s ({self.poll_max_s}) must be >= poll_min_s ({self.poll_min_s})")
        return self


class ComputeSection(_Model):
    """[compute]: where jobs run and how many at once.

    cpus_per_job, memory_mb_per_job: what each job asks of a scheduler (`--cpus-per-task`, `--mem`
    in MiB; 0: the cluster's default); the local backend does not enforce them.
    gpus: the GPU devices the local backend may hand out (ids or UUIDs as CUDA_VISIBLE_DEVICES takes
    them; Slurm picks devices itself). max_concurrent_gpus: GPUs in use at once across jobs (0: all
    of `gpus` locally, unlimited on Slurm); jobs at once are capped at
    max_concurrent_gpus // gpus_per_job.
    """

    backend: Literal["local", "slurm"] = "local"
    max_parallel: Annotated[int, Field(ge=1)] = 2
    gpus_per_job: Annotated[int, Field(ge=0)] = 0
    cpus_per_job: Annotated[int, Field(ge=1)] = 1
    memory_mb_per_job: Annotated[int, Field(ge=0)] = 0
    gpus: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_:.-]{1,64}$")] | Annotated[int, Field(ge=0)]] = []
    max_concurrent_gpus: Annotated[int, Field(ge=0)] = 0
    slurm: SlurmSection = SlurmSection()

    @field_validator("gpus")
    @classmethod
    def _distinct_gpus(cls, value: list[str | int]) -> list[str | int]:
        names = [str(v) for v in value]
        if len(set(names)) != len(names):
            raise ValueError(f"gpus lists a device twice ({names})")
        return value

    @property
    def gpu_devices(self) -> tuple[str, ...]:
        """`gpus` as strings, in the order declared."""
        return tuple(str(v) for v in self.gpus)


class SandboxSection(_Model):
    """[sandbox]: `auto` uses bubblewrap when it works, `bwrap` requires it, `none` runs bare.
    `read_only`: extra absolute paths bound read-only into the sandbox (e.g. a conda or pyenv
    install under $HOME). `pass_env`: names of variables passed to every job with the value they
    have where Ratchet runs (reserved names refused; the values enter the cache key).
    `keep_ratchet_venv`: keep the virtual environment Ratchet runs from on the jobs' PATH (first)."""

    mode: Literal["auto", "bwrap", "none"] = "auto"
    network: bool = False
    read_only: list[str] = []
    pass_env: list[str] = []
    keep_ratchet_venv: bool = False

    @field_validator("read_only")
    @classmethod
    def _read_only(cls, value: list[str]) -> list[str]:
        for path in value:
            if not path.startswith("/") or path.rstrip("/") == "":
                raise ValueError(f"{path!r} must be an absolute path other than / (it is bound read-only)")
            if any(part in (".", "..") for part in path.split("/")):
                raise ValueError(f"{path!r} has a '.' or '..' component")
        if len(set(value)) != len(value):
            raise ValueError("read_only lists a path twice")
        return value

    @field_validator("pass_env")
    @classmethod
    def _pass_env(cls, value: list[str]) -> list[str]:
        for name in value:
            problem = env_name_problem(name)
            if problem:
                raise ValueError(problem)
        if len(set(value)) != len(value):
            raise ValueError("pass_env names a variable twice")
        return value


class Contract(_Model):
    """The whole `ratchet.toml`."""

    campaign: CampaignSection
    target: TargetSection
    scope: ScopeSection
    agent: AgentSection
    gate: GateSection = GateSection()
    budget: BudgetSection = BudgetSection()
    compute: ComputeSection = ComputeSection()
    sandbox: SandboxSection = SandboxSection()

    @model_validator(mode="after")
    def _cross_section(self) -> Contract:
        floor = self.gate.max_unit_loss is not None or self.target.metric_range is not None
        if self.gate.test == "betting" and (self.target.kind != "benchmark" or not floor):
            raise ValueError(
                "gate.test = 'betting' needs a benchmark target with gate.max_unit_loss (the largest loss one "
                "unit can show) or target.metric_range = [lo, hi] (examples targets are pass/fail and always "
                "use their exact tests)"
            )
        if self.gate.max_unit_loss is not None and self.target.kind != "benchmark":
            raise ValueError("gate.max_unit_loss is not used with target.kind = 'examples' (pass/fail scores use "
                             "their exact tests)")
        if self.target.examples is not None:
            for a in self.scope.allowed:
                if scope_covers(a, self.target.examples) or scope_covers(self.target.examples, a):
                    raise ValueError(
                        f"scope.allowed entry {a!r} overlaps target.examples {self.target.examples!r}, "
                        "which is always protected"
                    )
        guardrail_problems(self.target.kind, self.target.metric,
                           [*self.gate.guardrails, *(m.guardrail() for m in self.target.suite)],
                           [c.name for c in self.target.checks])
        llm = self.agent.llm if self.agent.kind == "llm" else None
        unpriced = llm is not None and llm.price.input_usd_per_mtok == llm.price.output_usd_per_mtok == 0
        if unpriced and self.budget.max_usd > 0:
            raise ValueError(
                "budget.max_usd needs prices: set [agent.llm.price] input_usd_per_mtok and output_usd_per_mtok"
            )
        self._eval_budgets()
        return self

    def _eval_budgets(self) -> None:
        """The eval budgets limit a prompt solution's calls, and dollars need its prices."""
        b, t = self.budget, self.target
        given = [k for k in ("max_eval_calls", "max_eval_tokens", "max_eval_usd") if getattr(b, k)]
        if given and t.solution_kind != "prompt":
            raise ValueError(f"{', '.join('budget.' + k for k in given)} limits a prompt solution's model calls: "
                             "set target.solution_kind = 'prompt' or remove it")
        models = [(name, m) for name, m in (("target.model", t.model), ("target.judge", t.judge)) if m is not None]
        unpriced = [name for name, m in models if m.price.input_usd_per_mtok == m.price.output_usd_per_mtok == 0]
        if b.max_eval_usd > 0 and unpriced:
            raise ValueError(f"budget.max_eval_usd needs prices: set [{unpriced[0]}.price] input_usd_per_mtok and "
                             "output_usd_per_mtok")

    @property
    def protected_paths(self) -> tuple[str, ...]:
        """`scope.protected` plus what is always protected: ratchet.toml and target.examples."""
        extra = [CONTRACT_FILE] + ([self.target.examples] if self.target.examples else [])
        return tuple(dict.fromkeys([*self.scope.protected, *extra]))

    @property
    def hidden_paths(self) -> tuple[str, ...]:
        """Paths never present in an agent's workspace: scope.hidden plus target.examples."""
        extra = [self.target.examples] if self.target.examples else []
        return tuple(dict.fromkeys([*self.scope.hidden, *extra]))
