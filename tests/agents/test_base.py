"""The agent base: every agent kind inherits it, and an agent that declares only `start` and `wake`
gets the documented defaults of every optional hook the loop calls."""

from __future__ import annotations

import pytest

from ratchet.agents.base import Agent, AgentContext, GiveUp, LaunchResult
from ratchet.agents.command.agent import CommandAgent
from ratchet.agents.files import FilesAgent
from ratchet.agents.llm.agent import LlmAgent
from ratchet.agents.search import SearchAgent


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


def test_an_agent_without_wake_cannot_be_built():
    class StartOnly(Agent):
        def start(self, ctx: AgentContext):
            return GiveUp("x")

    with pytest.raises(TypeError, match="wake"):
        StartOnly()  # type: ignore[abstract]
