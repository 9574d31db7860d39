"""What the author of a rejected change is shown when it may revise it (loop/revision.py): on an
examples target nothing measured on val, only its dev pass rate and the dev examples it failed; on a
benchmark the figures and the stderr of its failed trial jobs; and which submission of its session
an attempt was."""

from __future__ import annotations

from types import MappingProxyType

from ratchet.core.payloads import JobFinished
from ratchet.core.state import AttemptState, RunState
from ratchet.loop.revision import author_verdict, revisable, submission_number


def job(job_id: str, attempt: int, stage: str, state: str = "ok", examples: dict | None = None) -> JobFinished:
    return JobFinished(job_id=job_id, attempt=attempt, stage=stage, variant="candidate", unit=0, seed=0, state=state,
                       value=None, reason="exit code 1" if state != "ok" else "", elapsed_s=0.1, cpu_s=0.1,
                       cached=False, units_charged=1, examples=examples)


ATTEMPTS = (
    AttemptState(1, tree="a" * 40, verdict="rejected", reason="futility", reason_text="futility: val 0.41 < 0.5",
                 estimate=-0.02, interval=(-0.05, 0.01), p_value=0.8, units=16, candidate_mean=0.41),
    AttemptState(2, tree="b" * 40, verdict="rejected", reason="futility", units=16, revises=1),
    AttemptState(3, tree="c" * 40, verdict="accepted", reason="significant_gain", units=16, promoted=True, revises=2),
    AttemptState(4, gave_up="nothing to try"),
)
JOBS = {
    "dev1": job("dev1", 1, "dev", examples={"e1": [True, "ok"], "e2": [False, "ok"], "e3": [False, "timeout"]}),
    "val1": job("val1", 1, "trial", examples={"v1": [False, "ok"]}),
    "t1": job("t1", 1, "trial", state="failed"),
}
STATE = RunState(attempts=ATTEMPTS, finished_jobs=MappingProxyType(JOBS), champion_mean=0.45)


def stderr_of(job_id: str) -> str:
    return {"t1": "Traceback (most recent call last):\nValueError: window must be odd\n"}.get(job_id, "")


def test_an_examples_author_sees_its_dev_figures_and_nothing_measured_on_val():
    v = author_verdict(STATE, 1, examples=True, stderr_of=stderr_of)
    assert (v.verdict, v.reason) == ("rejected", "not_promoted"), "the reason reached on val is masked"
    text = "\n".join((*v.detail, *v.failures))
    assert "dev pass rate 0.333333" in text
    assert v.failures == ("dev example e2: failed", "dev example e3: timeout")
    assert "0.41" not in text and "v1" not in text and "ValueError" not in text and "futility" not in text


def test_a_benchmark_author_sees_the_figures_and_its_failed_jobs_stderr():
    v = author_verdict(STATE, 1, examples=False, stderr_of=stderr_of)
    assert (v.verdict, v.reason, v.tree) == ("rejected", "futility", "a" * 40)
    assert "futility: val 0.41 < 0.5" in v.detail
    assert "estimated gain -0.02, interval [-0.05, 0.01], p = 0.8 over 16 paired units" in v.detail
    assert "champion mean 0.45" in v.detail
    assert v.failures == ("t1 (failed): Traceback (most recent call last):",
                          "t1 (failed): ValueError: window must be odd")


def test_submissions_are_counted_back_along_the_revisions_and_only_unpromoted_verdicts_are_revisable():
    assert [submission_number(STATE, n) for n in (1, 2, 3)] == [1, 2, 3]
    assert [revisable(STATE.attempt(n)) for n in (1, 2, 3, 4)] == [True, True, False, False]
    assert not revisable(None)
