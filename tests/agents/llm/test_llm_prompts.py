"""Prompt pieces: fencing, fair file budgets, truncation with a note, overrides from the contract."""

from __future__ import annotations

import pytest

from ratchet.agents.llm.prompts import fence, files_text, load_templates, truncate_middle
from ratchet.core.contract_llm import LlmPrompts
from ratchet.core.errors import ContractError


def test_a_fence_is_longer_than_any_backtick_run_inside():
    assert fence("a ```` b").startswith("`````\n") and fence("a ```` b").endswith("\n`````")


def test_a_large_file_keeps_head_and_tail_with_a_note():
    text = "".join(f"line {i}\n" for i in range(1000))
    cut = truncate_middle(text, 400)
    assert cut.startswith("line 0\n") and cut.endswith("line 999\n")
    assert "lines omitted to fit the context window" in cut and len(cut) < 600


def test_small_files_are_shown_whole_and_large_ones_share_what_is_left():
    small = ("small.py", b"A = 1\n")
    big = ("big.py", b"".join(f"row {i}\n".encode() for i in range(5000)))
    out = files_text([big, small], 3000)
    assert "A = 1" in out and "row 0" in out and "row 4999" in out and "omitted" in out
    assert len(out) < 3600


def test_binary_files_are_listed_not_shown():
    assert "binary, 4 bytes, not shown" in files_text([("w.bin", b"\0\1\2\3")], 1000)


def test_prompt_overrides_are_read_from_the_project(tmp_path):
    (tmp_path / "my_system.md").write_text("Be bold.")
    templates = load_templates(LlmPrompts(system="my_system.md"), tmp_path)
    assert templates.render("system") == "Be bold."
    assert "$objective" in templates.texts["repository"]
    with pytest.raises(ContractError) as err:
        load_templates(LlmPrompts(strategy="missing.md"), tmp_path)
    assert err.value.code == "contract.prompt_unreadable" and "agent.llm.prompts.strategy" in err.value.message
