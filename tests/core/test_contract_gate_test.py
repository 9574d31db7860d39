"""The contract keys of the gate's test: `gate.test`, `gate.max_unit_loss` and `target.metric_range`."""

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
        ("", 'test = "betting"', "gate.max_unit_loss"),
        ("", 'test = "betting"', "target.metric_range"),
        ("", "max_unit_loss = 0", "gate.max_unit_loss"),
        ("", "max_unit_loss = -0.5", "gate.max_unit_loss"),
        ("", "max_unit_loss = inf", "gate.max_unit_loss"),
        ("", 'max_unit_loss = "big"', "gate.max_unit_loss"),
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


def test_betting_with_only_a_floor_is_accepted_and_the_floor_defaults_to_the_range() -> None:
    from ratchet.core.gate_design import max_unit_loss_for

    c = contract("", 'test = "betting"\nmax_unit_loss = 0.1')
    assert c.gate.max_unit_loss == 0.1 and c.target.metric_range is None
    ranged = contract("metric_range = [0, 1]", 'test = "betting"')
    assert ranged.gate.max_unit_loss is None
    assert max_unit_loss_for(ranged.gate.max_unit_loss, ranged.target.metric_range) == 1.0
    both = contract("metric_range = [0, 1]", "max_unit_loss = 0.25")
    assert max_unit_loss_for(both.gate.max_unit_loss, both.target.metric_range) == 0.25
    assert max_unit_loss_for(None, None) is None


def test_max_unit_loss_is_refused_with_an_examples_target() -> None:
    text = BASE.format(target="", gate="max_unit_loss = 0.1").replace(
        'kind = "benchmark"\ncommand = "python3 bench.py"\nmetric = "accuracy"',
        'kind = "examples"\nexamples = "data/ex.jsonl"\nsolution = "solve.py"\n'
        '[[target.checks]]\ntype = "exact_match"')
    with pytest.raises(ContractError) as info:
        parse_contract(text)
    assert "gate.max_unit_loss" in info.value.message and "examples" in info.value.message
