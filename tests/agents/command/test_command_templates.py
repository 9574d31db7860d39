"""The CLI's command line: templates render to an argv without a shell; the documented templates
for Claude Code, Codex and aider validate and render."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from ratchet.agents.command.template import read_cli_report, render_argv
from ratchet.core.contract import CommandAgentConfig
from ratchet.core.errors import ContractError

DOC = Path(__file__).resolve().parents[3] / "docs" / "agents-command.md"
VALUES = {"prompt": "/w/.ratchet-sys/prompt.md", "prompt_text": "say \"hi\"; $(rm -rf /) `x`",
          "workspace": "/w", "channel": "/w/.ratchet-sys", "session": "abc-123"}


def _documented() -> dict[str, CommandAgentConfig]:
    text = DOC.read_text()
    blocks = re.findall(r"^(Claude Code|Codex|aider):\n\n```toml\n(.*?)```", text, flags=re.M | re.S)
    return {name: CommandAgentConfig(**tomllib.loads(body)["agent"]["command"]) for name, body in blocks}


def test_each_documented_template_renders_to_an_argv():
    configs = _documented()
    assert set(configs) == {"Claude Code", "Codex", "aider"}
    for name, cfg in configs.items():
        argv = render_argv(cfg.command, VALUES)
        assert argv[0] in ("claude", "codex", "aider"), name
        assert VALUES["prompt_text"] in argv or VALUES["prompt"] in argv, name
        if cfg.wake_command:
            assert "abc-123" in render_argv(cfg.wake_command, VALUES), name


def test_a_prompt_full_of_shell_syntax_stays_one_inert_argument():
    argv = render_argv("agent --prompt {prompt_text} --in {workspace}", VALUES)
    assert argv == ["agent", "--prompt", VALUES["prompt_text"], "--in", "/w"]


def test_unknown_placeholders_and_session_outside_wake_are_refused_by_the_contract():
    with pytest.raises(ValidationError, match="unknown placeholder"):
        CommandAgentConfig(command="agent {home}")
    with pytest.raises(ValidationError, match="unknown placeholder"):
        CommandAgentConfig(command="agent --resume {session}")
    with pytest.raises(ValidationError, match="set by Ratchet"):
        CommandAgentConfig(command="agent", pass_env=["SWEEP_INDEX"])
    with pytest.raises(ValidationError, match="not an environment variable name"):
        CommandAgentConfig(command="agent", pass_env=["A B"])


def test_an_unbalanced_template_is_a_contract_error():
    with pytest.raises(ContractError) as err:
        render_argv("agent 'unclosed", VALUES)
    assert err.value.code == "contract.agent_template"


def test_the_cli_report_gives_the_session_and_tokens_of_the_last_json_line():
    out = b'noise\n{"type": "result", "session_id": "s-1", "usage": {"input_tokens": 10, "output_tokens": 3}}\n'
    report = read_cli_report(out)
    assert report.session_id == "s-1" and report.tokens == {"input_tokens": 10, "output_tokens": 3}
    assert read_cli_report(b"plain text\n").session_id is None


def test_sweep_index_is_a_reserved_name_for_the_seed_variable():
    from ratchet.core.contract import TargetSection

    with pytest.raises(ValidationError, match="reserved"):
        TargetSection(kind="benchmark", command="x", metric="m", seed_env="SWEEP_INDEX")
