"""Several attempts at once (`agent.workers` = N > 1): N worker threads, each running whole
attempts (the agent's legs, the submission, the trial, the confirmation, the promotion) with its
own agent, all judged against one champion, all recording to one kernel.

An attempt is numbered when it starts (`attempt.started` with data.worker, recorded under the
kernel's lock), so numbers follow start order. Before starting one, a worker checks the stop
conditions with the worst case of every attempt in flight reserved (`Campaign._stop_reason`); a
worker whose accepted candidate could not be promoted because another attempt was promoted first
starts its re-base attempt (data.rebases) at once. A resume hands each unfinished attempt back to
the worker recorded with it. Ctrl-C or SIGTERM stops every worker (the kernel's handler cancels the
executor; each worker's measurement raises Interrupted); an error in one worker cancels the jobs
of all, and is re-raised once they stopped.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from msgspec import UNSET

from ratchet.core.payloads import AttemptStarted
from ratchet.loop.measure import Interrupted
from ratchet.loop.revision import revisable

if TYPE_CHECKING:
    from ratchet.loop.campaign import Campaign

JOIN_POLL_S = 0.5
"""Seconds between checks of the workers by the main thread (which alone receives signals)."""


class Crew:
    """The workers of one campaign. `run()` returns the campaign's (stop reason, budget name)."""

    def __init__(self, campaign: Campaign):
        self.c = campaign
        self.k = campaign.k
        self.stop: tuple[str, str | None] | None = None
        self.error: BaseException | None = None
        self.busy: set[int] = set()
        """Attempts a worker is running now (under the kernel's lock)."""

    def run(self) -> tuple[str, str | None]:
        """Run the workers until each finds no attempt to start; the first stop found, or
        `interrupted`. Re-raises the first error a worker met (the others stopped first)."""
        threads = [threading.Thread(target=self._work, args=(w,), name=f"ratchet-worker-{w}", daemon=True)
                   for w in range(1, self.c.workers + 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(JOIN_POLL_S)
                if self.k.interrupted:  # the signal handler cancelled the jobs; the agents' legs stop too
                    self.k.agent_executor.cancel()
        if self.error is not None:
            raise self.error
        if self.k.interrupted:
            return "interrupted", None
        return self.stop or ("interrupted", None)

    def _work(self, worker: int) -> None:
        self.c.as_worker(worker)
        try:
            number = self._claim(worker)
            while number is not None:
                outcome = self.c._attempt(number)
                with self.k.guard:
                    self.busy.discard(number)
                    self._ended(outcome)
                number = self._rebase(worker, number) if outcome == "superseded" else self._claim(worker)
        except Interrupted:
            self.k.interrupted = True
        except BaseException as exc:  # stop the siblings (their jobs are cancelled), then re-raise it
            with self.k.guard:
                if self.error is None:
                    self.error = exc
            self.k.executor.cancel()
            self.k.agent_executor.cancel()

    def _ended(self, outcome: str) -> None:
        """After an attempt: the agent's own stop becomes the run's (other attempts finish first)."""
        agent = self.c.agent
        if outcome == "agent_stopped" and self.stop is None:
            self.stop = ("agent_stopped", None)
        elif outcome == "budget_exhausted" and agent.stopped_by_budget is not None and self.stop is None:
            self.stop = self.c._budget_stop(agent.stopped_by_budget)

    def _halted(self) -> bool:
        return self.error is not None or self.k.interrupted

    def _claim(self, worker: int) -> int | None:
        """The attempt worker `worker` runs next: an unfinished one recorded with it (a resume),
        else a new one, numbered now; None when the run stops (a stop reason, an error, a signal)."""
        with self.k.guard:
            if self._halted():
                return None
            state = self.k.state()
            for a in state.attempts:
                if a.attempt in self.busy or (a.worker or 1) != worker or self.c._attempt_done(a):
                    continue
                self.busy.add(a.attempt)
                return a.attempt
            if self.stop is not None:
                return None
            if any(a.gave_up is not None and a.stops_campaign for a in state.attempts):
                self.stop = ("agent_stopped", None)  # recorded before a kill: start nothing more
                return None
            stop = self.c._stop_reason(state, in_flight=len(self.busy))
            if stop is not None:
                self.stop = stop
                return None
            return self._start(worker, state.last_attempt + 1, self._revises(worker), None)

    def _rebase(self, worker: int, original: int) -> int | None:
        """The re-base attempt of `original` (accepted, not promoted: the champion moved), started
        now unless the run stops first (a budget, an error, a signal; not the agent's own stop: the
        candidate is the kernel's to measure)."""
        with self.k.guard:
            if self._halted():
                return None
            state = self.k.state()
            stop = self.c._stop_reason(state, in_flight=len(self.busy))
            if stop is not None:
                self.stop = self.stop or stop
                return None
            return self._start(worker, state.last_attempt + 1, None, original)

    def _start(self, worker: int, number: int, revises: int | None, rebases: int | None) -> int:
        self.k.record(AttemptStarted(attempt=number, worker=worker, revises=UNSET if revises is None else revises,
                                     rebases=UNSET if rebases is None else rebases))
        self.busy.add(number)
        return number

    def _revises(self, worker: int) -> int | None:
        """The worker's own last attempt when its agent's session may revise it, else None."""
        state = self.k.state()
        mine = [a for a in state.attempts if a.worker == worker and a.rebases is None]
        last = mine[-1] if mine else None
        if last is not None and revisable(last) and self.c.agent.can_revise(last.attempt):
            return last.attempt
        return None
