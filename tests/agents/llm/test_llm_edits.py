"""Edit blocks and whole-solution replies: parsing, applying, scope."""

from __future__ import annotations

from ratchet.agents.llm.edits import Scope, apply_edit_blocks, parse_edit_blocks, parse_solution

SCOPE = Scope(allowed=("src/", "params.toml"), protected=("src/vendored/",), hidden=("src/secret.py",))
FILES = {"src/a.py": b"def f():\n    return 1\n\ndef g():\n    return 1\n", "params.toml": b"x = 0\n"}


def apply(reply: str):
    parsed = parse_edit_blocks(reply)
    files, errors = apply_edit_blocks(parsed.blocks, FILES.get, SCOPE)
    return parsed, files, list(parsed.errors) + errors


def test_blocks_apply_in_order_and_the_prose_is_the_report():
    reply = ("SUMMARY: return two\nBecause two is better.\n\n```\nsrc/a.py\n<<<<<<< SEARCH\ndef f():\n    return 1\n"
             "=======\ndef f():\n    return 2\n>>>>>>> REPLACE\n```\n\n`params.toml`\n<<<<<<< SEARCH\nx = 0\n=======\n"
             "x = 1\n>>>>>>> REPLACE\n")
    parsed, files, errors = apply(reply)
    assert errors == []
    assert files["src/a.py"].startswith(b"def f():\n    return 2\n") and files["params.toml"] == b"x = 1\n"
    assert parsed.summary == "return two" and "Because two is better." in parsed.report


def test_an_ambiguous_search_asks_for_more_context():
    _, _, errors = apply("src/a.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 3\n>>>>>>> REPLACE\n")
    assert errors == ["block 1 (src/a.py): the SEARCH text occurs 2 times: include more lines so it occurs once"]


def test_trailing_whitespace_differences_still_match_once():
    _, files, errors = apply("params.toml\n<<<<<<< SEARCH\nx = 0   \n=======\nx = 5\n>>>>>>> REPLACE\n")
    assert errors == [] and files["params.toml"] == b"x = 5\n"


def test_an_empty_search_creates_a_new_file_but_never_overwrites_one():
    _, files, errors = apply("src/new.py\n<<<<<<< SEARCH\n=======\nX = 1\n>>>>>>> REPLACE\n")
    assert errors == [] and files["src/new.py"] == b"X = 1\n"
    _, _, errors = apply("src/a.py\n<<<<<<< SEARCH\n=======\nX = 1\n>>>>>>> REPLACE\n")
    assert "the SEARCH part is empty but the file exists" in errors[0]


def test_scope_refuses_protected_hidden_outside_and_escaping_paths():
    for path, why in [("src/vendored/x.py", "protected"), ("src/secret.py", "protected"),
                      ("README.md", "out of scope"), ("../etc/passwd", "'..'"), (".git/config", ".git")]:
        _, _, errors = apply(f"{path}\n<<<<<<< SEARCH\n=======\nX\n>>>>>>> REPLACE\n")
        assert len(errors) == 1 and why in errors[0], (path, errors)


def test_a_block_without_a_path_or_markers_is_a_parse_error():
    assert apply("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n")[2] == [
        "block 1: no file path on the line before <<<<<<< SEARCH"]
    assert "no >>>>>>> REPLACE" in apply("src/a.py\n<<<<<<< SEARCH\na\n=======\nb\n")[2][0]


def test_a_whole_solution_is_the_one_fenced_block():
    parsed = parse_solution("SUMMARY: s\nwhy\n```python\nprint(1)\n```\n", "solution.py")
    assert parsed.solution == "print(1)\n" and parsed.summary == "s" and parsed.errors == ()
    two = parse_solution("```\na\n```\n```\nb\n```\n", "solution.py")
    assert two.solution is None and "2 fenced code blocks" in two.errors[0]
