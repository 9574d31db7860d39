"""Measuring a solution on examples: real git repositories, the real local executor, the real
sandbox when it works here (resolve_mode("auto")), real custom check scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ratchet.compute.base import JobSpec, SandboxSpec
from ratchet.compute.local import LocalExecutor
from ratchet.compute.sandbox import resolve_mode
from ratchet.core.contract_load import parse_contract
from ratchet.core.plan import PlannedJob
from ratchet.loop.measure import Interrupted, Runner
from ratchet.targets.checks import parse_shard_output
from ratchet.targets.examples import Example, Split, load_examples
from ratchet.targets.examples_measure import (
    EXAMPLE_OUTPUT_CAP_BYTES,
    ExampleResult,
    as_unit_result,
    from_compact,
    make_shards,
    shard_output_cap,
    shard_payload,
    shard_timeout_s,
)
from ratchet.targets.examples_target import ExamplesTarget
from ratchet.workspace.git import Git

TOKEN = "q7Zx9-expected"  # in every expected output of the leak probe, never in an input

CONTRACT = """\
[campaign]
name = "ex"

[target]
kind = "examples"
examples = "data/examples.jsonl"
solution = "solution.py"
timeout_s = {timeout_s}

[[target.checks]]
type = "exact_match"
{extra_checks}
[scope]
allowed = ["solution.py"]
hidden = ["secret/"]

[agent]
kind = "files"

[agent.files]
path = "candidates/"
"""

CUSTOM_CHECK = """
[[target.checks]]
type = "custom"
script = "checks/positive.py"
"""

POSITIVE_PY = """\
import json, sys
data = json.load(sys.stdin)
try:
    value = int(data["actual_output"])
except ValueError:
    print("not an integer", file=sys.stderr)
    sys.exit(1)
if value <= 0:
    print(f"{value} is not positive", file=sys.stderr)
    sys.exit(1)
"""

DOUBLING_PY = """\
import os, signal, sys, time
s = sys.stdin.read().strip()
if s == "crash":
    sys.exit("boom: cannot handle this input")
if s == "sleep":
    time.sleep(60)
if s == "wrong":
    print(41)
    sys.exit(0)
if s == "kill-runner":
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(60)
if s == "stop-runner":
    os.kill(os.getppid(), signal.SIGSTOP)
    sys.exit(0)
print(int(s) * 2)
"""


def lines(pairs: Sequence[tuple[str, str]]) -> str:
    return "".join(json.dumps({"input": i, "expected_output": o}) + "\n" for i, o in pairs)


@pytest.fixture
def sandbox() -> SandboxSpec:
    return SandboxSpec(mode=resolve_mode("auto"))


@pytest.fixture
def executor(tmp_path: Path):
    ex = LocalExecutor(tmp_path / "jobs", max_parallel=3)
    yield ex
    ex.close()


class Project:
    """A real repository with an examples target; `runner(...)` builds the one Runner on its ExamplesTarget."""

    def __init__(self, root: Path, tmp_path: Path, make_repo, pairs, solution: str, *,
                 timeout_s: float = 1.0, custom: bool = False):
        files = {
            "ratchet.toml": CONTRACT.format(timeout_s=timeout_s, extra_checks=CUSTOM_CHECK if custom else ""),
            "data/examples.jsonl": lines(pairs),
            "solution.py": solution,
            "checks/positive.py": POSITIVE_PY,
            "secret/key.txt": "do not show\n",
        }
        make_repo(root, files=files)
        self.root = root
        self.work = tmp_path / "work"
        self.contract = parse_contract(files["ratchet.toml"])
        self.git = Git(root)
        self.tree = self.git.tree_of("HEAD")
        self.examples = load_examples(root / "data/examples.jsonl").examples
        self.events: list[tuple[str, dict]] = []
        self.payloads: list = []

    def by_input(self, text: str) -> Example:
        return next(ex for ex in self.examples if ex.input == text)

    def runner(self, executor, sandbox: SandboxSpec, *, done=None, exclude=None, **kwargs) -> Runner:
        kwargs.setdefault("shard_size", 3)
        contract = self.contract
        if exclude is not None:
            scope = contract.scope.model_copy(update={"hidden": list(exclude)})
            contract = contract.model_copy(update={"scope": scope})
        split = Split(dev=(), val=tuple(self.examples), test=())
        target = ExamplesTarget(contract, sandbox, "salt", split, self.root, **kwargs)
        return Runner(git=self.git, executor=executor, target=target, work_dir=self.work, record=self._record,
                      done=done)

    def _record(self, payload) -> None:
        self.events.append((payload.kind, payload.to_data()))
        self.payloads.append(payload)

    def measure(self, runner: Runner, examples=None, variant: str = "candidate") -> dict[str, ExampleResult]:
        """Measure the HEAD tree on `examples` (all by default) as one look of attempt 1's trial;
        returns example id -> ExampleResult."""
        chosen = self.examples if examples is None else examples
        runner.target.by_id.update({ex.id: ex for ex in chosen})
        jobs = [PlannedJob(f"a0001-trial-u{i:03d}-{variant}", variant, self.tree, i, 0, 0, 0, ex.id)
                for i, ex in enumerate(chosen)]
        results = runner.measure_jobs(jobs, attempt=1, stage="trial")
        return {r.detail.example_id: r.detail for r in results.values()}

    def kinds(self, kind: str) -> list[dict]:
        return [data for k, data in self.events if k == kind]


class SpyExecutor:
    """The real executor, with the JobSpecs it was handed kept for inspection."""

    def __init__(self, inner: LocalExecutor):
        self.inner = inner
        self.specs: list[JobSpec] = []

    backend = "local"
    jobs_outlive_kernel = False
    external_ids_are_pids = True

    def probe_sandbox(self, mode):
        return self.inner.probe_sandbox(mode)

    def submit(self, specs, on_submit=None, on_result=None):
        self.specs.extend(specs)
        return self.inner.submit(specs, on_submit, on_result)

    def wait(self, batch):
        return self.inner.wait(batch)

    def reattach(self, recorded, on_result=None):
        return self.inner.reattach(recorded, on_result)

    def cancel(self, ids=None) -> None:
        self.inner.cancel(ids)

    def close(self) -> None:
        self.inner.close()


# --- end to end -----------------------------------------------------------------------------------


def test_passes_crashes_timeouts_and_wrong_outputs_are_judged_per_example(
        tmp_path, make_repo, executor, sandbox):
    pairs = [("1", "2"), ("2", "4"), ("crash", "0"), ("sleep", "0"), ("-3", "-6"), ("wrong", "42"),
             ("5", "10")]
    p = Project(tmp_path / "repo", tmp_path, make_repo, pairs, DOUBLING_PY, custom=True)
    results = p.measure(p.runner(executor, sandbox))

    assert set(results) == {ex.id for ex in p.examples}
    for text in ("1", "2", "5"):
        r = results[p.by_input(text).id]
        assert r.passed and r.status == "ok" and r.reason == "" and not r.shard_failed, r
        assert [c.type for c in r.per_check] == ["exact_match", "custom"]
    crash = results[p.by_input("crash").id]
    assert (crash.passed, crash.status, crash.per_check) == (False, "crash", ())
    assert "exit code 1" in crash.reason and "boom: cannot handle this input" in crash.reason
    timeout = results[p.by_input("sleep").id]
    assert (timeout.passed, timeout.status) == (False, "timeout") and "timed out after 1 s" in timeout.reason
    negative = results[p.by_input("-3").id]
    assert (negative.passed, negative.status) == (False, "ok")
    assert [(c.type, c.passed) for c in negative.per_check] == [("exact_match", True), ("custom", False)]
    assert negative.per_check[1].reason == "-6 is not positive"
    assert negative.reason == "custom: -6 is not positive"
    wrong = results[p.by_input("wrong").id]
    assert [(c.type, c.passed) for c in wrong.per_check] == [("exact_match", False), ("custom", True)]
    assert wrong.reason.startswith("exact_match: output '41' != expected '42'")
    assert not any(r.shard_failed for r in results.values())


def test_one_event_pair_per_shard_with_deterministic_ids_and_compact_results(
        tmp_path, make_repo, executor, sandbox):
    pairs = [(str(i), str(2 * i)) for i in range(1, 6)] + [("wrong", "42"), ("crash", "0")]
    p = Project(tmp_path / "repo", tmp_path, make_repo, pairs, DOUBLING_PY)
    results = p.measure(p.runner(executor, sandbox))

    started, finished = p.kinds("job.started"), p.kinds("job.finished")
    ids = ["a0001-trial-l0-candidate-s000", "a0001-trial-l0-candidate-s001", "a0001-trial-l0-candidate-s002"]
    assert sorted(d["job_id"] for d in started) == ids and sorted(d["job_id"] for d in finished) == ids
    assert all({"attempt", "stage", "variant", "unit", "pid"} <= set(d) for d in started)
    by_id = {d["job_id"]: d for d in finished}
    assert [by_id[i]["units_charged"] for i in ids] == [3, 3, 1]
    assert [by_id[i]["unit"] for i in ids] == [0, 1, 2]
    for i, chunk in zip(ids, make_shards(p.examples, 3), strict=True):
        d = by_id[i]
        assert d["state"] == "ok" and d["variant"] == "candidate" and d["stage"] == "trial"
        assert d["tree"] == p.tree and d["cached"] is False
        assert d["examples"] == {ex.id: [results[ex.id].passed, results[ex.id].status] for ex in chunk}
        assert d["value"] == sum(results[ex.id].passed for ex in chunk)
        json.dumps(d)  # plain JSON for the ledger
    assert sum(r.passed for r in results.values()) == 5
    assert not p.work.exists() or not any(p.work.iterdir()), "checkouts are removed after their job"


ECHO_PY = "import sys\nsys.stdout.write(sys.stdin.read())\n"


def test_outputs_holding_unicode_line_separators_are_read_whole(tmp_path, make_repo, executor, sandbox):
    odd = ["a\u2028b", "c\x85d", "e\rf", "g\u2029h\x1ci"]
    p = Project(tmp_path / "repo", tmp_path, make_repo, [(t, t) for t in odd], ECHO_PY)
    results = p.measure(p.runner(executor, sandbox, shard_size=4))
    assert all(r.passed for r in results.values()), [r.reason for r in results.values()]
    record = json.dumps({"id": "x", "status": "ok", "output": "a\u2028b", "exit_code": 0}, ensure_ascii=False)
    assert parse_shard_output(record + "\n", ["x"])["x"]["output"] == "a\u2028b"


# --- a shard that fails as a whole ----------------------------------------------------------------


def test_a_killed_runner_fails_every_example_of_its_shard_and_only_that_shard(
        tmp_path, make_repo, executor, sandbox):
    pairs = [("1", "2"), ("kill-runner", "0"), ("3", "6"), ("4", "8")]
    p = Project(tmp_path / "repo", tmp_path, make_repo, pairs, DOUBLING_PY)
    shards = make_shards(p.examples, 2)
    results = p.measure(p.runner(executor, sandbox, shard_size=2))

    doomed = next(s for s in shards if p.by_input("kill-runner") in s)
    for ex in p.examples:
        r = results[ex.id]
        if ex in doomed:
            assert (r.passed, r.status, r.shard_failed) == (False, "crash", True), r
            assert r.reason.startswith("the shard's job ended ")
        else:
            assert r.passed and not r.shard_failed, r
    finished = {d["job_id"]: d for d in p.kinds("job.finished")}
    bad = finished[f"a0001-trial-l0-candidate-s{shards.index(doomed):03d}"]
    assert bad["state"] in ("failed", "killed") and bad["value"] is None and bad["units_charged"] == 2
    assert all(passed is False for passed, _ in bad["examples"].values())


def test_a_shard_past_its_timeout_fails_every_example_as_timeout(
        tmp_path, make_repo, executor, sandbox):
    p = Project(tmp_path / "repo", tmp_path, make_repo, [("stop-runner", "0")], DOUBLING_PY, timeout_s=0.5)
    results = p.measure(p.runner(executor, sandbox, slack_s=0.5))

    [r] = results.values()
    assert (r.passed, r.status, r.shard_failed) == (False, "timeout", True), r
    [finished] = p.kinds("job.finished")
    assert finished["state"] == "timeout" and "timed out after 3.0 s" in finished["reason"]


# --- what a job can see ---------------------------------------------------------------------------

LEAK_PROBE_PY = """\
import os, sys
PROJECT = {project!r}
TOKEN = {token!r}
WALK = {walk!r}
data = sys.stdin.read()
leaks = [p for p in ("data/examples.jsonl", "data", "secret", "secret/key.txt") if os.path.lexists(p)]
if WALK:
    if os.path.lexists(PROJECT):
        leaks.append(PROJECT)
    seen = 0
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev")]
        seen += len(dirs) + len(files)
        for name in files:
            if name == "examples.jsonl":
                try:
                    with open(os.path.join(root, name), errors="replace") as fh:
                        if TOKEN in fh.read():
                            leaks.append(os.path.join(root, name))
                except OSError:
                    pass
        if seen > 600000:
            leaks.append("walk stopped after 600000 entries")
            break
print("LEAK " + repr(leaks) if leaks else data.upper() + "-" + TOKEN)
"""


def leak_project(tmp_path, make_repo, walk: bool) -> Project:
    root = tmp_path / "repo"
    probe = LEAK_PROBE_PY.format(project=str(root), token=TOKEN, walk=walk)
    pairs = [(f"probe-{i}", f"PROBE-{i}-{TOKEN}") for i in range(4)]
    return Project(root, tmp_path, make_repo, pairs, probe, timeout_s=20.0)


def test_job_checkout_has_no_examples_nor_hidden_paths_and_stdin_has_no_expected_output(
        tmp_path, make_repo, executor, sandbox):
    p = leak_project(tmp_path, make_repo, walk=False)
    spy = SpyExecutor(executor)
    results = p.measure(p.runner(spy, sandbox))

    for r in results.values():
        assert r.passed, f"the solution found something it must not see, or lost its input: {r.reason}"
    assert len(spy.specs) == 2
    for spec in spy.specs:
        shard = json.loads(spec.stdin_bytes)
        assert all(set(ex) == {"id", "input"} for ex in shard["examples"])
        visible = spec.stdin_bytes + " ".join(spec.argv).encode() + json.dumps(dict(spec.env)).encode()
        assert TOKEN.encode() not in visible and b"expected_output" not in visible
        for ex in p.examples:
            assert ex.expected_output.encode() not in visible


@pytest.mark.skipif(resolve_mode("auto") == "none", reason="bubblewrap does not work here")
def test_a_solution_walking_the_sandboxed_filesystem_finds_no_examples_file(tmp_path, make_repo, executor):
    p = leak_project(tmp_path, make_repo, walk=True)
    runner = p.runner(executor, SandboxSpec(mode="bwrap"), shard_size=4)
    results = p.measure(runner, examples=p.examples[:1])
    [r] = results.values()
    assert r.passed, f"the sandboxed solution reached the examples or the project: {r.reason}"


def test_target_examples_is_excluded_even_when_the_caller_forgets_it(
        tmp_path, make_repo, executor, sandbox):
    p = leak_project(tmp_path, make_repo, walk=False)
    runner = p.runner(executor, sandbox, exclude=("secret/",))
    assert "data/examples.jsonl" in runner.target.exclude
    results = p.measure(runner, examples=p.examples[:2])
    assert all(r.passed for r in results.values()), [r.reason for r in results.values()]


# --- resume and cancel ----------------------------------------------------------------------------


def test_resume_reuses_recorded_shards_and_runs_no_job(tmp_path, make_repo, executor, sandbox):
    pairs = [("1", "2"), ("wrong", "42"), ("crash", "0"), ("4", "8"), ("5", "10")]
    p = Project(tmp_path / "repo", tmp_path, make_repo, pairs, DOUBLING_PY)
    first = p.measure(p.runner(executor, sandbox, shard_size=2))
    done = {f.job_id: f for f in p.payloads if f.kind == "job.finished"}
    p.events.clear()

    again = p.measure(p.runner(executor, sandbox, shard_size=2, done=done))
    assert p.events == [], "a resume records nothing and starts no job"
    def verdicts(results):
        return {i: (r.passed, r.status) for i, r in results.items()}

    assert verdicts(again) == verdicts(first)


def test_resume_reruns_only_a_shard_whose_examples_changed(tmp_path, make_repo, executor, sandbox):
    pairs = [("1", "2"), ("2", "4"), ("3", "6"), ("4", "8"), ("5", "10")]
    p = Project(tmp_path / "repo", tmp_path, make_repo, pairs, DOUBLING_PY)
    p.measure(p.runner(executor, sandbox, shard_size=2))
    done = {f.job_id: f for f in p.payloads if f.kind == "job.finished"}
    p.events.clear()

    changed = list(p.examples[:4]) + [Example("sha256:" + "0" * 64, "7", "14", 99)]
    results = p.measure(p.runner(executor, sandbox, shard_size=2, done=done), examples=changed)
    assert [d["job_id"] for d in p.kinds("job.started")] == ["a0001-trial-l0-candidate-s002"]
    assert all(r.passed for r in results.values())


def test_a_cancelled_executor_raises_interrupted_and_records_no_finish(
        tmp_path, make_repo, executor, sandbox):
    p = Project(tmp_path / "repo", tmp_path, make_repo, [("1", "2"), ("2", "4")], DOUBLING_PY)
    executor.cancel()
    with pytest.raises(Interrupted):
        p.measure(p.runner(executor, sandbox))
    assert p.kinds("job.finished") == []
    assert not any(p.work.iterdir()), "checkouts are removed even when interrupted"


def test_bad_settings_are_refused(tmp_path, make_repo, executor, sandbox):
    p = Project(tmp_path / "repo", tmp_path, make_repo, [("1", "2")], DOUBLING_PY)
    with pytest.raises(ValueError, match="shard_size"):
        p.runner(executor, sandbox, shard_size=0)
    with pytest.raises(ValueError, match="given twice"):
        p.measure(p.runner(executor, sandbox), examples=[p.examples[0], p.examples[0]])
    assert p.measure(p.runner(executor, sandbox), examples=[]) == {}
    assert p.events == []


# --- pure pieces ----------------------------------------------------------------------------------


def ex(i: int) -> Example:
    return Example(f"sha256:{i:064x}", f"in{i}", f"out{i}", i)


def test_shards_are_consecutive_chunks_in_the_given_order():
    examples = [ex(i) for i in range(7)]
    assert [[e.line for e in s] for s in make_shards(examples, 3)] == [[0, 1, 2], [3, 4, 5], [6]]


def test_shard_limits_scale_with_the_shard():
    assert shard_timeout_s(3, 10.0, slack_s=30.0) == 3 * (10.0 + 2.0) + 30.0
    worst_record = 6 * EXAMPLE_OUTPUT_CAP_BYTES
    assert shard_output_cap(100) > 100 * worst_record
    payload = json.loads(shard_payload([ex(1), ex(2)], "solution.py", 5.0))
    assert payload == {"solution": "solution.py", "timeout_s": 5.0, "output_cap": EXAMPLE_OUTPUT_CAP_BYTES,
                       "examples": [{"id": ex(1).id, "input": "in1"}, {"id": ex(2).id, "input": "in2"}]}


def test_scores_are_binary_and_only_a_failed_shard_is_a_measurement_failure():
    cases = [
        (ExampleResult("a", True, "ok"), (1.0, False)),
        (ExampleResult("b", False, "crash", reason="exit code 1"), (0.0, False)),
        (ExampleResult("c", False, "timeout"), (0.0, False)),
        (ExampleResult("d", False, "crash", reason="shard", shard_failed=True), (None, True)),
    ]
    for result, expected in cases:
        r = as_unit_result("j", "champion", 0, result)
        assert (r.value, r.failed) == expected, result
        assert r.detail is result


def test_recorded_results_are_reused_only_for_the_same_tree_and_examples():
    shard = (ex(1), ex(2))
    data = {"tree": "t1", "state": "ok", "examples": {ex(1).id: [True, "ok"], ex(2).id: [False, "crash"]}}
    got = from_compact("j", data, "t1", shard)
    assert got is not None and got[ex(1).id].passed and got[ex(2).id].status == "crash"
    assert from_compact("j", data, "t2", shard) is None
    assert from_compact("j", data, "t1", (ex(1),)) is None
    malformed = {**data, "examples": {ex(1).id: [True, "ok"], ex(2).id: [1, "ok"]}}
    assert from_compact("j", malformed, "t1", shard) is None
    failed = from_compact("j", {**data, "state": "timeout"}, "t1", shard)
    assert failed is not None and all(r.shard_failed and not r.passed for r in failed.values())
