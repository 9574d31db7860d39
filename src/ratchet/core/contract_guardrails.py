"""The contract's guardrails (pure): `[[gate.guardrails]]` entries, further metrics a candidate must not
regress beyond their allowance (docs/gate.md, Guardrails), and the cross-section rules that tie
them to the target.

Contract errors raised here carry their own codes (`contract.guardrail_*`, docs/errors.md) through
`guardrail_error`, which `contract_load` turns into a ContractError naming the key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from ratchet.core.contract_base import _Model


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
        if self.max_regression == 0 and self.max_regression_rel == 0:
            raise guardrail_error(
                f"guardrail {self.metric!r} allows no regression: max_regression and max_regression_rel are both 0. "
                "A zero allowance demands a significant improvement of the guardrail, and a candidate that leaves "
                "it unchanged would pass only with probability <= the trial's level",
                "set max_regression (metric units) or max_regression_rel (share of the baseline's mean) > 0: the "
                "largest regression you accept",
                code="contract.guardrail_allowance",
            )
        return self


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
