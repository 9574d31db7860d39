"""The agent base: every agent kind inherits it, an agent that declares only `start` and `wake`
gets the documented defaults of every optional hook the loop calls, and what the agents make of an
examples history (dev pass rates, no val figure)."""

from __future__ import annotations

import pytest

from ratchet.agents.base import Agent, AgentContext, GiveUp, LaunchResult, PastAttempt
from ratchet.agents.command.agent import CommandAgent
from ratchet.agents.command.messages import history_text
from ratchet.agents.files import FilesAgent
from ratchet.agents.llm.agent import LlmAgent
from ratchet.agents.search import SearchAgent, value_of


class MinimalAgent(Agent):
    def start(self, ctx: AgentContext):
        return GiveUp("nothing to propose")

    def wake(self, ctx: AgentContext, results: tuple[LaunchResult, ...]):
        return GiveUp("never launches")


def test_every_agent_kind_inherits_the_base():
    for kind in (SearchAgent, FilesAgent, CommandAgent, LlmAgent):
        assert issubclass(kind, Agent), kind.__name__


def test_an_agent_with_only_start_and_wake_gets_the_defaults_of_every_hook():
    agent = MinimalAgent()
    assert agent.resume(AgentContext(1, "tree", 0), [{"attempt": 1, "outcome": "launch"}], bytes.fromhex) is False
    assert agent.budget_stop() is None
    assert agent.stopped_by_budget is None
    assert agent.reads_history is True  # an agent may learn from earlier results unless it says not


def test_only_the_files_agent_reads_no_history():
    assert [kind.reads_history for kind in (SearchAgent, FilesAgent, CommandAgent, LlmAgent)] == [
        True, False, True, True]


def test_an_examples_history_feeds_the_search_agent_its_dev_pass_rates_and_the_command_agent_shows_them():
    examples = PastAttempt(1, "t", {"x": 1.0}, "rejected", "not_promoted", None, dev_mean=0.75)
    bench = PastAttempt(2, "u", {"x": 2.0}, "rejected", "futility", 3.5)
    assert (value_of(examples), value_of(bench)) == (0.75, 3.5)
    text = history_text([examples, bench])
    assert "attempt 1: rejected (not_promoted), dev pass rate 0.75" in text
    assert "attempt 2: rejected (futility), candidate mean 3.5" in text


def test_an_agent_without_wake_cannot_be_built():
    class StartOnly(Agent):
        def start(self, ctx: AgentContext):
            return GiveUp("x")

    with pytest.raises(TypeError, match="wake"):
        StartOnly()  # type: ignore[abstract]
