"""Every parser facing a user, a job, an agent, a model or a scheduler, given generated bad input.

Each input must yield a value or the parser's documented refusal (a RatchetError with a code, or
the documented ValueError of a scheduler-output parser its caller turns into one): never another
exception, never a hang (ALARM_S per input). The inputs are mutations of real, valid ones (the
digits contract, an examples file, a metric line, a chat-completions body, a ledger), so they reach
the checks behind the first syntax error. The counts per parser are printed at the session's end
(conftest.py); together they are over 10,000.
"""

from __future__ import annotations

import json
import math
import signal
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ratchet.agents.command.channel import Channel
from ratchet.agents.command.limits import CHANNEL_DIR
from ratchet.agents.command.requests import REQUESTS_DIR, SLEEP_MARKER, SUBMIT_MARKER, read_leg
from ratchet.agents.llm.agent import parse_directives
from ratchet.agents.llm.client import parse_reply
from ratchet.agents.llm.edits import parse_edit_blocks, parse_solution
from ratchet.compute.slurm_states import parse_array_id, parse_duration_hms, parse_show_job
from ratchet.core.contract import Contract
from ratchet.core.contract_base import parse_duration
from ratchet.core.contract_load import parse_contract
from ratchet.core.errors import RatchetError
from ratchet.ledger.events import EventLog
from ratchet.ledger.verify import scan_events
from ratchet.targets.checks import parse_shard_output
from ratchet.targets.examples import load_examples
from ratchet.targets.metric import parse_metric

REPO = Path(__file__).resolve().parents[2]
BASE_CONTRACT = tomllib.loads((REPO / "examples" / "digits" / "ratchet.toml").read_text())
ALARM_S = 10
"""Seconds one input may take (far above any parser's cost; a loop that never ends trips it)."""



def fuzz(inputs: int) -> settings:
    """Hypothesis settings for `inputs` generated inputs: no deadline (a loaded CI machine would
    trip it; `bounded` catches a hang), fixtures per test, not per input."""
    return settings(max_examples=inputs, deadline=None, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])


@contextmanager
def bounded() -> Iterator[None]:
    """Fail the input when it runs longer than ALARM_S (SIGALRM: the parsers are pure Python)."""
    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"one input took more than {ALARM_S} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(ALARM_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused_with_a_code(exc: RatchetError) -> None:
    """A refusal must name what is wrong: a dotted code and a message."""
    assert exc.code and exc.message, exc


# --- values ---------------------------------------------------------------------------------------

scalars = st.one_of(
    st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40), st.sampled_from(["", "auto", "10m", "-1", "1e309", "nan", "../x", "/etc/passwd"]),
)
toml_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=12), inner, max_size=4)), max_leaves=8)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60), st.floats(allow_nan=False), st.text(max_size=30)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=10)


def _schema_keys(model: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of the contract's models (sections, their keys, nested tables)."""
    out = []
    for name, field in model.model_fields.items():
        path = (*prefix, field.alias or name)
        out.append(path)
        annotation = field.annotation
        for candidate in (annotation, *getattr(annotation, "__args__", ())):
            if isinstance(candidate, type) and hasattr(candidate, "model_fields") and len(path) < 4:
                out.extend(_schema_keys(candidate, path))
    return out


CONTRACT_KEYS = _schema_keys(Contract)


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        child = doc.get(key)
        if not isinstance(child, dict):
            child = doc[key] = {}
        doc = child
    if value is _DELETE:
        doc.pop(path[-1], None)
    else:
        doc[path[-1]] = value


_DELETE = object()
mutations = st.lists(st.tuples(st.one_of(st.sampled_from(CONTRACT_KEYS),
                                         st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3).map(tuple)),
                               st.one_of(toml_values, st.just(_DELETE))), min_size=1, max_size=4)


# --- the contract -----------------------------------------------------------------------------------


@fuzz(2000)
@given(mutations)
def test_a_mutated_contract_is_parsed_or_refused_with_a_code(fuzzed, changes):
    fuzzed["contract (mutated keys)"] += 1
    doc = json.loads(json.dumps(BASE_CONTRACT))
    for path, value in changes:
        _set(doc, path, value)
    try:
        text = tomli_w.dumps(doc)
    except (TypeError, ValueError):
        return  # a value TOML cannot hold: nothing to parse
    with bounded():
        try:
            contract = parse_contract(text)
        except RatchetError as exc:
            refused_with_a_code(exc)
        else:
            assert isinstance(contract, Contract)


@fuzz(800)
@given(st.text(max_size=300), st.integers(0, 2000))
def test_contract_text_with_garbage_spliced_in_is_parsed_or_refused(fuzzed, garbage, at):
    fuzzed["contract (raw text)"] += 1
    text = tomli_w.dumps(BASE_CONTRACT)
    at = min(at, len(text))
    with bounded():
        try:
            parse_contract(text[:at] + garbage + text[at:])
        except RatchetError as exc:
            refused_with_a_code(exc)


@fuzz(400)
@given(st.one_of(st.text(max_size=20), st.integers(-10**12, 10**12), st.floats()))
def test_a_duration_is_seconds_or_a_value_error(fuzzed, value):
    fuzzed["contract durations"] += 1
    with bounded():
        try:
            seconds = parse_duration(value)
        except ValueError:
            return
        assert isinstance(seconds, float) and not math.isnan(seconds)


# --- examples files ------------------------------------------------------------------------------

example_lines = st.one_of(
    json_values.map(lambda v: json.dumps(v)),
    st.fixed_dictionaries({"input": json_values, "expected_output": json_values},
                          optional={"id": json_values, "extra": json_values}).map(json.dumps),
    st.text(max_size=60),
    st.sampled_from(['{"input": "a", "expected_output": 1e999}', '{"input": "a"', "\ufeff", "[" * 200 + "]" * 200,
                     '{"input": "x", "expected_output": 9007199254740993}']),
)


@fuzz(1500)
@given(st.lists(example_lines, max_size=8), st.binary(max_size=20))
def test_an_examples_file_is_loaded_or_refused_with_a_code(fuzzed, tmp_path, lines, tail):
    fuzzed["examples files"] += 1
    path = tmp_path / "examples.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + tail)
    with bounded():
        try:
            examples = load_examples(path)
        except RatchetError as exc:
            refused_with_a_code(exc)
            assert exc.code.startswith("examples."), exc.code
        else:
            assert len(examples.examples) >= 1


# --- what jobs print -------------------------------------------------------------------------------

metric_lines = st.one_of(
    st.text(max_size=80),
    st.dictionaries(st.sampled_from(["accuracy", "loss", "x"]), json_values, max_size=3).map(json.dumps),
    st.sampled_from(['{"accuracy": NaN}', '{"accuracy": Infinity}', '{"accuracy": "0.9"}', '{"accuracy": true}',
                     '{"accuracy": 1e400}', '{"accuracy":', '{"accuracy": [0.9]}', "{" * 500]),
)


@fuzz(1500)
@given(st.lists(metric_lines, max_size=6), st.text(max_size=60))
def test_a_jobs_stdout_gives_a_metric_reading_never_an_exception(fuzzed, lines, stderr):
    fuzzed["metric lines"] += 1
    with bounded():
        reading = parse_metric("\n".join(lines), "accuracy", stderr)
    if reading.value is not None:
        assert isinstance(reading.value, float) and math.isfinite(reading.value)
    else:
        assert reading.reason


shard_records = st.one_of(
    st.fixed_dictionaries({"id": st.sampled_from(["a", "b", "c", 3]), "status": st.text(max_size=8)},
                          optional={"output": json_values, "exit_code": json_values, "elapsed_s": json_values,
                                    "stderr_tail": json_values}).map(json.dumps),
    st.text(max_size=60),
)


@fuzz(1000)
@given(st.lists(shard_records, max_size=8))
def test_shard_output_gives_one_record_per_asked_id(fuzzed, lines):
    fuzzed["examples shard output"] += 1
    with bounded():
        records = parse_shard_output("\n".join(lines), ["a", "b"])
    assert set(records) == {"a", "b"}


# --- agents and models ------------------------------------------------------------------------------

channel_bodies = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(st.sampled_from(["name", "jobs", "note", "command", "timeout_s", "summary", "seconds", "x"]),
                    json_values, max_size=4).map(lambda d: json.dumps(d).encode()),
    st.fixed_dictionaries({"name": st.text(max_size=12), "jobs": st.lists(st.dictionaries(
        st.sampled_from(["command", "timeout_s", "artifacts", "name"]), json_values, max_size=3), max_size=3)}
    ).map(lambda d: json.dumps(d).encode()),
)


@fuzz(700)
@given(st.lists(st.tuples(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1,
                                  max_size=12),
                          channel_bodies), max_size=4),
       st.one_of(st.none(), channel_bodies), st.one_of(st.none(), channel_bodies))
def test_channel_requests_are_read_as_data(fuzzed, tmp_path_factory, requests, sleep, submit):
    fuzzed["channel requests and markers"] += 1
    workspace = tmp_path_factory.mktemp("ws")
    with Channel(workspace) as channel:
        channel_dir = workspace / CHANNEL_DIR
        (channel_dir / REQUESTS_DIR).mkdir(exist_ok=True)
        for name, body in requests:
            if name in (".", ".."):
                continue
            (channel_dir / REQUESTS_DIR / name).write_bytes(body)
        for marker, body in ((SLEEP_MARKER, sleep), (SUBMIT_MARKER, submit)):
            if body is not None:
                (channel_dir / marker).write_bytes(body)
        with bounded():
            try:
                leg = read_leg(channel, set())
            except RatchetError as exc:
                refused_with_a_code(exc)
                return
    json.dumps(leg.to_json())  # the record of what the leg asked is JSON
    left = [p.name for p in (channel_dir / REQUESTS_DIR).iterdir() if not p.name.startswith(".")]
    assert not left, f"request files not taken: {left}"  # a dot name is a tool's temporary, left alone


edit_replies = st.lists(st.one_of(
    st.text(max_size=40),
    st.sampled_from(["<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "path/to/file.py", "```python", "```",
                     "../../etc/passwd", "```json", "[", "]"]),
), max_size=20).map("\n".join)


@fuzz(1200)
@given(edit_replies)
def test_a_model_reply_parses_into_edits_and_errors(fuzzed, reply):
    fuzzed["model replies (edits)"] += 1
    with bounded():
        parsed = parse_edit_blocks(reply)
        whole = parse_solution(reply, "solution.py")
    for result in (parsed, whole):
        assert isinstance(result.errors, list | tuple)


@fuzz(600)
@given(st.one_of(json_values.map(json.dumps), edit_replies), st.integers(0, 6))
def test_a_strategy_reply_gives_at_most_count_directives(fuzzed, reply, count):
    fuzzed["model replies (directives)"] += 1
    with bounded():
        directives = parse_directives(reply, count)
    assert len(directives) <= count


chat_bodies = st.one_of(
    st.binary(max_size=100),
    st.fixed_dictionaries({"choices": st.one_of(json_values, st.lists(st.fixed_dictionaries(
        {"message": st.one_of(json_values, st.fixed_dictionaries({"content": json_values}))},
        optional={"finish_reason": json_values}), max_size=2))},
        optional={"usage": st.one_of(json_values, st.fixed_dictionaries(
            {}, optional={"prompt_tokens": json_values, "completion_tokens": json_values}))}
    ).map(lambda d: json.dumps(d).encode()),
)


@fuzz(800)
@given(chat_bodies)
def test_a_chat_completions_body_is_a_reply_or_none(fuzzed, raw):
    fuzzed["model response bodies"] += 1
    with bounded():
        parsed = parse_reply(raw)
    if parsed is not None:
        reply, (prompt, completion) = parsed
        for count in (prompt, completion):
            assert count is None or (isinstance(count, int) and count >= 0)


# --- the ledger -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ledger_bytes(tmp_path_factory) -> bytes:
    """A real three-event ledger, as bytes."""
    path = tmp_path_factory.mktemp("ledger") / "events.jsonl"
    log = EventLog.open(path)
    for seq in range(3):
        log.append("run.resumed", {}, f"2026-12-02T00:00:0{seq}Z")
    log.close()
    return path.read_bytes()


@fuzz(1000)
@given(st.integers(0, 2000), st.binary(max_size=120), st.integers(0, 3))
def test_a_damaged_ledger_is_read_or_refused_with_a_code(fuzzed, ledger_bytes, at, garbage, action):
    fuzzed["ledger lines"] += 1
    at = min(at, len(ledger_bytes))
    raw = [ledger_bytes[:at] + garbage, ledger_bytes[:at] + garbage + ledger_bytes[at:],
           ledger_bytes[:at], ledger_bytes[:at] + garbage + b"\n"][action]
    with bounded():
        try:
            events, torn = scan_events(raw)
        except RatchetError as exc:
            refused_with_a_code(exc)
            assert exc.code.startswith("ledger."), exc.code
        else:
            assert [e.seq for e in events] == list(range(len(events)))


# --- the scheduler's output ----------------------------------------------------------------------

show_job_lines = st.lists(st.one_of(
    st.text(max_size=60),
    st.lists(st.tuples(st.sampled_from(["ArrayTaskId", "JobState", "Reason", "ExitCode", "RunTime", "Restarts",
                                        "JobId", "ArrayJobId", "JobName", "x"]),
                       st.one_of(st.text(st.characters(blacklist_characters=" \n"), max_size=14),
                                 st.sampled_from(["1-5%2", "3", "0-999", "RUNNING", "COMPLETED", "0:0", "1:15",
                                                  "00:01:02", "2-00:00:00", "BadConstraints", "4294967295",
                                                  "0-99999999999", "¹", "3-¹"]))),
             max_size=8).map(lambda kv: " ".join(f"{k}={v}" for k, v in kv)),
), max_size=6).map("\n".join)


@fuzz(800)
@given(show_job_lines)
def test_scontrol_show_job_output_gives_task_records(fuzzed, text):
    fuzzed["slurm show job"] += 1
    with bounded():
        records = parse_show_job(text)
    assert all(isinstance(index, int) and index >= 0 for index in records)


@fuzz(400)
@given(st.one_of(st.text(max_size=30), st.sampled_from(["12345", "12345;cluster", " 7\n", "Submitted batch job 9"])))
def test_sbatch_output_is_a_job_id_or_a_value_error(fuzzed, stdout):
    fuzzed["slurm sbatch output"] += 1
    with bounded():
        try:
            job_id = parse_array_id(stdout)
        except ValueError:
            return
    assert job_id.isdigit()


@fuzz(400)
@given(st.one_of(st.text(max_size=20), st.sampled_from(["1-00:00:00", "59:59", "00:00:01", "x-1:2", "1:2:3:4"])))
def test_a_slurm_duration_is_seconds(fuzzed, value):
    fuzzed["slurm durations"] += 1
    with bounded():
        seconds = parse_duration_hms(value)
    assert seconds >= 0.0
