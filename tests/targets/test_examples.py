"""Examples targets: loading (malformed, duplicates, conflicts), the seeded split, fingerprints,
val order, and what a split of a given size can detect."""

from __future__ import annotations

import json
import math
import random
import runpy
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratchet.core.canonical import digest
from ratchet.core.errors import DataError
from ratchet.core.stats.power import mde_binary
from ratchet.targets.examples import (
    Example,
    clamp_looks,
    compare_fingerprints,
    describe_change,
    example_id,
    fingerprint,
    load_examples,
    split_examples,
    split_sizes,
    split_warnings,
    target_unreachable,
    val_blocks,
    val_order,
)

COUNTRIES = Path(__file__).resolve().parents[2] / "examples" / "countries"


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def jline(input_value, expected, **extra) -> str:
    return json.dumps({"input": input_value, "expected_output": expected, **extra})


def many(n: int, prefix: str = "in") -> list[str]:
    return [jline(f"{prefix}{i}", f"out{i}") for i in range(n)]


# --- loading ------------------------------------------------------------------------------------


def test_loads_examples_with_content_ids_and_line_numbers(tmp_path):
    path = write_lines(tmp_path / "ex.jsonl", [jline("a", "A"), "", "   ", jline("b", "B")])
    loaded = load_examples(path)
    assert [(e.input, e.expected_output, e.line) for e in loaded.examples] == [("a", "A", 1), ("b", "B", 4)]
    assert loaded.examples[0].id == digest({"input": "a", "expected_output": "A"}) == example_id("a", "A")
    assert loaded.warnings == ()


def test_non_string_input_becomes_canonical_json_text_and_expected_keeps_its_json_value(tmp_path):
    path = write_lines(tmp_path / "ex.jsonl", [jline({"b": 1, "a": [1, 2.0]}, 3), jline(None, True)])
    first, second = load_examples(path).examples
    assert first.input == '{"a":[1,2],"b":1}'
    assert first.expected_output == 3 and not isinstance(first.expected_output, str)
    assert (second.input, second.expected_output) == ("null", True)


def test_the_string_3_and_the_number_3_are_different_examples(tmp_path):
    path = write_lines(tmp_path / "ex.jsonl", [jline("a", "3"), jline("b", 3)])
    first, second = load_examples(path).examples
    assert first.id == example_id("a", "3") != example_id("a", 3)


def test_optional_id_is_kept_as_name_and_does_not_change_the_content_id(tmp_path):
    path = write_lines(tmp_path / "ex.jsonl", [jline("a", "A", id="first"), jline("b", "B", id=7)])
    a, b = load_examples(path).examples
    assert (a.name, b.name) == ("first", "7")
    assert a.id == example_id("a", "A")


def test_a_bom_is_ignored(tmp_path):
    path = tmp_path / "ex.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + jline("a", "A").encode() + b"\n")
    assert len(load_examples(path)) == 1


def test_every_malformed_line_is_reported_with_its_number(tmp_path):
    path = tmp_path / "ex.jsonl"
    lines = [
        jline("ok", "OK"),                                   # 1 fine
        "{not json",                                         # 2
        "[1, 2]",                                            # 3 not an object
        json.dumps({"input": "x"}),                          # 4 missing expected_output
        jline("y", "Y", note="extra"),                       # 5 unknown key
        '{"input": NaN, "expected_output": "n"}',            # 6 NaN is not JSON
        '{"input": "d", "input": "e", "expected_output": 1}',  # 7 duplicate key
        jline("z", "Z", id=[1]),                             # 8 bad id type
    ]
    data = "".join(line + "\n" for line in lines).encode() + b'{"input": "\xff", "expected_output": "x"}\n'
    path.write_bytes(data)  # line 9 is not UTF-8
    with pytest.raises(DataError) as info:
        load_examples(path)
    err = info.value
    assert err.code == "examples.malformed"
    for number in range(2, 10):
        assert f"line {number}:" in err.message, number
    assert "line 1:" not in err.message
    assert "9 lines" not in err.message and "8 lines are malformed" in err.message
    assert "missing key 'expected_output'" in err.message
    assert "unknown key 'note'" in err.message
    assert "not UTF-8" in err.message


def test_many_malformed_lines_all_have_their_numbers_in_the_message(tmp_path):
    path = write_lines(tmp_path / "ex.jsonl", ["garbage"] * 120)
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert "120 lines are malformed" in info.value.message
    assert "120" in info.value.message.split("more on lines")[1]


def test_numbers_json_readers_cannot_hold_and_deep_nesting_are_malformed_lines(tmp_path):
    deep = '{"input": ' + "[" * 100_000 + "]" * 100_000 + ', "expected_output": "x"}'
    lines = [
        jline("ok", "OK"),                                            # 1 fine
        '{"input": "big", "expected_output": 9007199254740993}',      # 2 beyond 2**53 - 1
        '{"input": "huge", "expected_output": 1e400}',                # 3 overflows to inf
        deep,                                                         # 4 RecursionError in json
        '{"input": "deep", "expected_output": ' + "[" * 65 + "]" * 65 + "}",  # 5 65 levels
        '{"input": [-9007199254740992], "expected_output": "y"}',     # 6 in the input
        jline("edge", 9007199254740991),                              # 7 fine: 2**53 - 1
        '{"input": "float", "expected_output": 9007199254740993.0}',  # 8 whole, beyond, as a float
    ]
    path = write_lines(tmp_path / "ex.jsonl", lines)
    with pytest.raises(DataError) as info:
        load_examples(path)
    message = info.value.message
    assert info.value.code == "examples.malformed" and str(path) in message
    assert "6 lines are malformed" in message, message
    for number in (2, 3, 4, 5, 6, 8):
        assert f"line {number}:" in message, (number, message)
    assert "line 1:" not in message and "line 7:" not in message
    assert "beyond 2**53 - 1" in message and "infinity" in message and "nested" in message


def test_lines_sharing_one_user_id_are_each_reported(tmp_path):
    lines = [jline(f"in{i}", f"out{i}", id="same") for i in range(40)] + [jline("solo", "S", id="other")]
    path = write_lines(tmp_path / "ex.jsonl", lines)
    with pytest.raises(DataError) as info:
        load_examples(path)
    message = info.value.message
    assert "39 lines are malformed" in message
    assert "line 2: id 'same' is already used on line 1" in message
    for number in range(2, 41):
        assert f"line {number}:" in message or f" {number}," in message or message.endswith(f" {number}")
    assert "line 41" not in message


def test_an_exact_duplicate_line_with_its_id_is_dropped_not_refused(tmp_path):
    path = write_lines(tmp_path / "ex.jsonl", [jline("a", "A", id="x"), jline("a", "A", id="x")])
    assert load_examples(path).dropped_lines == (2,)


def test_exact_duplicates_are_dropped_with_a_warning(tmp_path):
    lines = [jline("a", "A"), jline("b", "B"), jline("a", "A"), jline("a", "A")]
    path = write_lines(tmp_path / "ex.jsonl", lines)
    loaded = load_examples(path)
    assert [e.line for e in loaded.examples] == [1, 2]
    assert loaded.dropped_lines == (3, 4)
    assert len(loaded.warnings) == 1
    assert "dropped 2 exact duplicate" in loaded.warnings[0] and "3, 4" in loaded.warnings[0]


def test_one_input_with_two_expected_outputs_is_a_conflict_listing_both_lines(tmp_path):
    lines = [jline("a", "A"), jline("b", "B"), jline("a", "Z"), jline("c", "C")]
    path = write_lines(tmp_path / "ex.jsonl", lines)
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert info.value.code == "examples.conflict"
    assert "lines 1 and 3" in info.value.message


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_a_file_without_examples_is_empty(tmp_path, content):
    path = tmp_path / "ex.jsonl"
    path.write_text(content)
    with pytest.raises(DataError) as info:
        load_examples(path)
    assert info.value.code == "examples.empty"


def test_a_missing_file_is_reported(tmp_path):
    with pytest.raises(DataError) as info:
        load_examples(tmp_path / "nope.jsonl")
    assert info.value.code == "examples.missing"


# --- splitting ----------------------------------------------------------------------------------


def test_split_is_stable_across_runs_and_independent_of_line_order(tmp_path):
    lines = many(200)

    def split_of(name: str, content: list[str]):
        loaded = load_examples(write_lines(tmp_path / name, content))
        return split_examples(loaded.examples, [0.6, 0.2, 0.2], 7)

    first, again = split_of("a.jsonl", lines), split_of("a.jsonl", lines)
    shuffled = lines[:]
    random.Random(3).shuffle(shuffled)
    other = split_of("b.jsonl", shuffled)
    assert fingerprint(first) == fingerprint(again) == fingerprint(other)
    assert [e.id for e in first.val] == [e.id for e in other.val]
    assert first.sizes() == {"dev": 120, "val": 40, "test": 40}


def test_split_depends_on_the_seed_and_is_a_partition(tmp_path):
    examples = load_examples(write_lines(tmp_path / "a.jsonl", many(100))).examples
    a, b = split_examples(examples, [0.6, 0.2, 0.2], 0), split_examples(examples, [0.6, 0.2, 0.2], 1)
    assert fingerprint(a) != fingerprint(b)
    ids = [e.id for part in (a.dev, a.val, a.test) for e in part]
    assert sorted(ids) == sorted(e.id for e in examples)


def test_editing_one_example_is_described_per_split(tmp_path):
    lines = many(100)
    old = split_examples(load_examples(write_lines(tmp_path / "a.jsonl", lines)).examples, [0.6, 0.2, 0.2], 0)
    new_examples = load_examples(write_lines(tmp_path / "a.jsonl", lines)).examples
    edited_id = old.val[0].id
    new_examples = tuple(
        e if e.id != edited_id else Example(example_id(e.input, "changed"), e.input, "changed", e.line)
        for e in new_examples
    )
    new = split_examples(new_examples, [0.6, 0.2, 0.2], 0)
    changes = compare_fingerprints(fingerprint(old), fingerprint(new))
    assert changes["val"] >= 1
    assert 1 <= sum(changes.values()) <= 3  # the edited example, plus at most a shift at each cut
    text = describe_change(changes)
    assert text.startswith("dev:") or "val: " in text
    assert "example" in text


def test_unchanged_and_explicit_changes_are_described():
    assert describe_change({"dev": 0, "val": 0, "test": 0}) == "no examples changed"
    text = describe_change({"dev": 0, "val": 3, "test": 1})
    assert text == "val: 3 examples changed, test: 1 example changed"
    old = {"dev": ["a", "b"], "val": ["c"], "test": ["d"]}
    new = {"dev": ["a", "b"], "val": ["x", "y"], "test": []}
    assert compare_fingerprints(old, new) == {"dev": 0, "val": 2, "test": 1}


def test_split_sizes_round_and_give_every_positive_fraction_an_example():
    assert split_sizes(10, [0.6, 0.2, 0.2]) == (6, 2, 2)
    assert split_sizes(3, [0.98, 0.01, 0.01]) == (1, 1, 1)
    assert split_sizes(7, [0.0, 0.5, 0.5]) == (0, 4, 3)
    with pytest.raises(DataError) as info:
        split_sizes(2, [0.6, 0.2, 0.2])
    assert info.value.code == "examples.too_few"
    with pytest.raises(ValueError):
        split_sizes(10, [0.5, 0.5, 0.5])


@given(
    n=st.integers(min_value=3, max_value=5000),
    weights=st.tuples(st.integers(0, 100), st.integers(1, 100), st.integers(1, 100)),
)
def test_split_sizes_sum_to_n_and_stay_near_the_fractions(n, weights):
    total = sum(weights)
    fractions = [w / total for w in weights]
    sizes = split_sizes(n, fractions)
    assert sum(sizes) == n
    for size, fraction in zip(sizes, fractions, strict=True):
        if fraction > 0:
            assert size >= 1
        assert abs(size - n * fraction) <= 3, (sizes, fractions)


def test_val_order_is_seeded_per_trial_and_independent_of_input_order(tmp_path):
    val = list(load_examples(write_lines(tmp_path / "a.jsonl", many(50))).examples)
    first = val_order(val, seed=0, trial=1)
    assert [e.id for e in first] == [e.id for e in val_order(list(reversed(val)), seed=0, trial=1)]
    assert [e.id for e in first] != [e.id for e in val_order(val, seed=0, trial=2)]
    assert sorted(e.id for e in first) == sorted(e.id for e in val)


def test_val_blocks_are_disjoint_seeded_and_as_many_as_full_blocks_fit(tmp_path):
    val = list(load_examples(write_lines(tmp_path / "a.jsonl", many(50))).examples)
    blocks = val_blocks(val, seed=0, size=20)
    assert [len(b) for b in blocks] == [20, 20]  # floor(50 / 20); the last 10 examples are never measured
    assert not set(blocks[0]) & set(blocks[1])
    assert val_blocks(list(reversed(val)), seed=0, size=20) == blocks
    assert val_blocks(val, seed=1, size=20) != blocks
    assert len(val_blocks(val, seed=0, size=50)) == 1
    with pytest.raises(ValueError):
        val_blocks(val, seed=0, size=51)


def test_looks_are_clamped_to_the_val_size():
    assert clamp_looks([50, 100, 200], 187) == (50, 100, 187)
    assert clamp_looks([50, 100, 200], 60) == (50, 60)
    assert clamp_looks([10, 20], 500) == (10, 20)


# --- what a split can say -----------------------------------------------------------------------


def test_mde_binary_decreases_with_n_and_grows_with_a_stricter_level():
    values = [mde_binary(n, 0.05) for n in (20, 50, 100, 200, 400)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False)), values
    assert mde_binary(100, 0.01) > mde_binary(100, 0.05)
    assert mde_binary(100, 0.05, discordance=0.3) > mde_binary(100, 0.05)
    assert 0.0 < values[-1] < 0.05


def test_mde_binary_matches_the_no_regression_case_by_hand():
    # level 0.05 on 10 pairs: b >= 5 wins needed (0.5**5 < 0.05 < 0.5**4); with no regressions
    # b ~ Binom(10, delta), so the MDE solves P(Binom(10, delta) >= 5) = 0.8.
    delta = mde_binary(10, 0.05)
    tail = sum(math.comb(10, k) * delta**k * (1 - delta) ** (10 - k) for k in range(5, 11))
    assert tail == pytest.approx(0.8, abs=2e-3)


def test_mde_binary_is_infinite_when_nothing_is_detectable():
    assert mde_binary(0, 0.05) == math.inf
    assert mde_binary(4, 0.05) == math.inf  # 0.5**4 > 0.05
    with pytest.raises(ValueError):
        mde_binary(10, 1.5)


def test_small_splits_are_warned_about(tmp_path):
    examples = load_examples(write_lines(tmp_path / "a.jsonl", many(60))).examples
    warnings = split_warnings(split_examples(examples, [0.6, 0.2, 0.2], 0))
    assert any(w.startswith("val has only 12") for w in warnings)
    assert any(w.startswith("test has only 12") for w in warnings)
    big = load_examples(write_lines(tmp_path / "b.jsonl", many(400))).examples
    assert split_warnings(split_examples(big, [0.6, 0.2, 0.2], 0)) == []
    assert any("dev is empty" in w for w in split_warnings(split_examples(big, [0.0, 0.5, 0.5], 0)))


def test_target_unreachable_uses_the_wilson_bound_of_a_perfect_score():
    assert target_unreachable(None, 10) is None
    assert target_unreachable(0.95, 100) is None  # 100 / (100 + 1.96**2) = 0.963
    message = target_unreachable(0.95, 50)  # 50 / (50 + 1.96**2) = 0.929
    assert message is not None and "0.929" in message and "73 val examples" in message
    assert "no number" in target_unreachable(1.0, 10_000)


# --- the bundled countries example --------------------------------------------------------------


def test_bundled_countries_examples_load_and_split():
    loaded = load_examples(COUNTRIES / "data" / "examples.jsonl")
    assert 600 <= len(loaded) <= 1200
    assert loaded.warnings == ()
    split = split_examples(loaded.examples, [0.6, 0.2, 0.2], 0)
    assert split_warnings(split) == []


def test_bundled_countries_data_matches_its_generator():
    pytest.importorskip("pycountry")
    build = runpy.run_path(str(COUNTRIES / "make_data.py"))["build"]  # writes no __pycache__ there
    lines = [json.loads(line) for line in (COUNTRIES / "data" / "examples.jsonl").read_text().splitlines()]
    assert build() == lines, "regenerate with python3 examples/countries/make_data.py"
