"""The contract's guardrails (pure): `[[gate.guardrails]]` entries, further metrics a candidate must not
regress beyond their allowance (docs/gate.md, Guardrails), and the cross-section rules that tie
them to the target.

Contract errors raised here carry their own codes (`contract.guardrail_*`, docs/errors.md) through
`guardrail_error`, which `contract_load` turns into a ContractError naming the key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ratchet.core.contract_base import NAME_PATTERN, _Model, env_problem


def guardrail_error(message: str, hint: str, *, code: str) -> PydanticCustomError:
    """A validation error with its own contract error code (`contract_load._describe` keeps the code
    and the hint)."""
    return PydanticCustomError(code, message.replace("{", "{{").replace("}", "}}"), {"hint": hint})


class GuardrailSection(_Model):
    """[[gate.guardrails]]: one further metric the candidate must not regress beyond its allowance.

    metric: a key of the same JSON line as target.metric (benchmark), or a check's `name` (examples,
    whose per-check pass rate is then the guardrail); direction: which way is better; max_regression
    (metric units) and max_regression_rel (share of the baseline's mean as the preflight measured
    it): the larger applies, and it must be > 0.
    """

    metric: Annotated[str, Field(min_length=1)]
    direction: Literal["max", "min"] = "max"
    max_regression: Annotated[float, Field(ge=0)] = 0.0
    max_regression_rel: Annotated[float, Field(ge=0)] = 0.0

    @model_validator(mode="after")
    def _allowance(self) -> GuardrailSection:
        check_allowance(self.metric, self.max_regression, self.max_regression_rel)
        return self


def check_allowance(name: str, max_regression: float, max_regression_rel: float) -> None:
    """Raise `contract.guardrail_allowance` when a guardrail allows no regression (both keys 0)."""
    if max_regression == 0 and max_regression_rel == 0:
        raise guardrail_error(
            f"guardrail {name!r} allows no regression: max_regression and max_regression_rel are both 0. "
            "A zero allowance demands a significant improvement of the guardrail, and a candidate that leaves "
            "it unchanged would pass only with probability <= the trial's level",
            "set max_regression (metric units) or max_regression_rel (share of the baseline's mean) > 0: the "
            "largest regression you accept",
            code="contract.guardrail_allowance",
        )


class SuiteSection(_Model):
    """[[target.suite]]: a further benchmark command run on the same units as the primary, in the same
    job; its metric is a guardrail named `name` (docs/gate.md, Suites). The allowance keys are a
    guardrail's."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    command: Annotated[str, Field(min_length=1)]
    metric: Annotated[str, Field(min_length=1)]
    direction: Literal["max", "min"] = "max"
    seed_env: str = "RATCHET_SEED"
    timeout_s: Annotated[float, Field(gt=0)] = 600.0
    max_regression: Annotated[float, Field(ge=0)] = 0.0
    max_regression_rel: Annotated[float, Field(ge=0)] = 0.0

    @field_validator("seed_env")
    @classmethod
    def _seed_env(cls, value: str) -> str:
        problem = env_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _allowance(self) -> SuiteSection:
        check_allowance(self.name, self.max_regression, self.max_regression_rel)
        return self

    def guardrail(self) -> GuardrailSection:
        """This member as the guardrail the gate tests (named by `name`)."""
        return GuardrailSection(metric=self.name, direction=self.direction, max_regression=self.max_regression,
                                max_regression_rel=self.max_regression_rel)


def guardrail_problems(kind: str, metric: str | None, guardrails: Sequence[GuardrailSection],
                       check_names: Sequence[str | None]) -> None:
    """Raise the first cross-section problem of the guardrails (PydanticCustomError with a
    `contract.guardrail_*` code): a repeated guardrail (`contract.guardrail_duplicate`), a benchmark
    guardrail naming the primary metric (`contract.guardrail_primary`), an examples guardrail naming
    no check's `name` (`contract.guardrail_check`), or two checks with one name
    (`contract.check_name_duplicate`)."""
    names = [c for c in check_names if c is not None]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise guardrail_error(f"two [[target.checks]] share the name {twice[0]!r}", "give every check its own name",
                              code="contract.check_name_duplicate")
    seen: set[str] = set()
    for g in guardrails:
        if g.metric in seen:
            raise guardrail_error(f"two [[gate.guardrails]] name {g.metric!r}", "keep one entry per guardrail metric",
                                  code="contract.guardrail_duplicate")
        seen.add(g.metric)
        if kind == "benchmark" and g.metric == metric:
            raise guardrail_error(f"gate.guardrails metric {g.metric!r} is target.metric, the primary metric",
                                  "a guardrail is a further key of the same JSON line: name another one",
                                  code="contract.guardrail_primary")
        if kind == "examples" and g.metric not in names:
            shown = ", ".join(repr(n) for n in names) or "none"
            raise guardrail_error(f"gate.guardrails metric {g.metric!r} names no check (checks with a name: {shown})",
                                  f"for an examples target a guardrail names a check: add name = {g.metric!r} to one "
                                  "of the [[target.checks]]", code="contract.guardrail_check")
