"""The contract keys of the gate's test: `gate.test` and `target.metric_range`."""

from __future__ import annotations

import pytest

from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import ContractError

BASE = """\
[campaign]
name = "t"

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "accuracy"
{target}

[scope]
allowed = ["model/"]

[agent]
kind = "files"
[agent.files]
path = "candidates/"

[gate]
{gate}
"""


def contract(target: str = "", gate: str = ""):
    return parse_contract(BASE.format(target=target, gate=gate))


def test_gate_test_defaults_to_guarded_sign_flip_and_range_is_optional() -> None:
    c = contract()
    assert c.gate.test == "guarded_sign_flip" and c.target.metric_range is None


def test_betting_with_a_metric_range_is_accepted() -> None:
    c = contract("metric_range = [0, 1]", 'test = "betting"')
    assert c.gate.test == "betting" and list(c.target.metric_range) == [0, 1]


@pytest.mark.parametrize(
    "target,gate,needle",
    [
        ("", 'test = "betting"', "metric_range"),
        ("metric_range = [1, 0]", "", "lo < hi"),
        ("metric_range = [0.5, 0.5]", "", "lo < hi"),
        ("metric_range = [0]", "", "metric_range"),
        ("", 'test = "t_test"', "gate.test"),
    ],
)
def test_bad_gate_test_or_range_is_refused_with_the_key(target: str, gate: str, needle: str) -> None:
    with pytest.raises(ContractError) as info:
        contract(target, gate)
    assert needle in info.value.message
