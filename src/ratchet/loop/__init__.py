"""The loop: a run's attempts and their effects.

`life.py` (a run's life: open or resume, run.started, run.resumed, run.stopped, run.abandoned,
interrupts), `campaign.py` (attempts until a stop reason, promotions, the holdout), `one_shot.py`
(`ratchet compare` and `ratchet calibrate`), `kernel.py` (a run's effects: run directory, lock,
ledger, blobs, git, the executor and the agent's local executor, cache), `trial.py` (one plan
through its looks), `measure.py` (the one runner: planned jobs onto the executor), `launch.py`
(agents' own experiments), `agents.py` (the run's agent built from the contract, and its link to
the kernel), `history.py` (levels spent, val blocks, dev figures and what agents are shown of earlier
attempts), `revision.py` (submit and revise: which attempt a session may revise, and the verdict its
author is shown), `warm_start.py` (the search agent's history from earlier runs of the same search),
`audit_trail.py` (what the loop keeps so that `ratchet verify` can check the run), `crew.py`
(several attempts at once: `agent.workers` threads), `rebase.py` (a candidate re-based onto a
champion promoted since it was built, or `stale`), `promotion.py` (promotion as a compare-and-swap
on the champion branch), `recorded.py` (plans, verdicts and the preflight recorded once), `prompt_eval.py` (a prompt
solution's eval and judge calls, made by the kernel, and their reply cache).

Effects: those of a run, held by `kernel.py`: the run directory, ledger and blobs, git commits
and branches, jobs on the executor and their checkouts, the run lock, signal handlers; a prompt
solution's model calls (HTTP) and its reply cache.
"""
