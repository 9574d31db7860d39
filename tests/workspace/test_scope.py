"""The scope check: allowed, protected, hidden, symlinks and submodules (pure values)."""

from __future__ import annotations

from ratchet.workspace.scope import DiffEntry, check_scope

ALLOWED = ["model/", "params.toml", "src"]
PROTECTED = ["bench.py", "data/", "ratchet.toml"]
HIDDEN = ["secret/"]


def _m(path: str, new_mode: str = "100644", status: str = "M", old_mode: str = "100644") -> DiffEntry:
    return DiffEntry(status=status, path=path, old_mode=old_mode, new_mode=new_mode)


def test_changes_under_allowed_entries_pass():
    entries = [
        _m("model/w.txt"),
        _m("model/deep/x.py", status="A", old_mode="000000"),
        _m("params.toml"),
        _m("src/a.py"),
        _m("model/old.txt", new_mode="000000", status="D"),
    ]
    report = check_scope(entries, ALLOWED, PROTECTED, HIDDEN)
    assert report.ok and report.violations == ()


def test_paths_outside_allowed_are_violations_naming_path_and_rule():
    report = check_scope([_m("README.md"), _m("params.toml.bak"), _m("modelx/a")], ALLOWED, PROTECTED, HIDDEN)
    assert not report.ok
    assert len(report.violations) == 3
    assert report.violations[0].startswith("README.md: outside scope.allowed")
    assert "params.toml.bak" in report.violations[1]


def test_exact_file_entry_does_not_match_a_sibling_prefix():
    assert not check_scope([_m("params.tomlx")], ["params.toml"]).ok
    assert check_scope([_m("params.toml")], ["params.toml"]).ok


def test_protected_and_hidden_win_over_allowed():
    allowed = ["", *ALLOWED]  # everything allowed
    report = check_scope(
        [_m("bench.py"), _m("data/train.csv"), _m("secret/answers.txt")], allowed, PROTECTED, HIDDEN
    )
    assert [v.split(":")[0] for v in report.violations] == [
        "bench.py",
        "data/train.csv",
        "secret/answers.txt",
    ]
    assert "protected by scope.protected entry 'bench.py'" in report.violations[0]
    assert "scope.hidden entry 'secret/'" in report.violations[2]


def test_protected_directory_entry_without_slash_is_a_prefix():
    report = check_scope([_m("data/x/y.csv")], ["data/"], ["data/x"])
    assert not report.ok and "data/x" in report.violations[0]


def test_adding_a_symlink_anywhere_is_a_violation_even_in_scope():
    report = check_scope([_m("model/link", new_mode="120000", status="A", old_mode="000000")], ALLOWED)
    assert not report.ok
    assert report.violations == (
        "model/link: adds a symlink; candidates may not contain new or changed symlinks",
    )
    changed = check_scope([_m("model/file", new_mode="120000", status="T")], ALLOWED)
    assert "changes a symlink" in changed.violations[0]


def test_removing_a_symlink_is_only_a_scope_question():
    assert check_scope([_m("model/link", new_mode="000000", status="D", old_mode="120000")], ALLOWED).ok


def test_adding_a_submodule_is_a_violation():
    report = check_scope([_m("model/vendor", new_mode="160000", status="A", old_mode="000000")], ALLOWED)
    assert not report.ok and "submodule" in report.violations[0]


def test_a_path_breaking_several_rules_gets_one_line_per_rule():
    report = check_scope([_m("bench.py", new_mode="120000", status="T")], ALLOWED, PROTECTED)
    assert len(report.violations) == 3
    assert all(v.startswith("bench.py: ") and "\n" not in v for v in report.violations)


def test_no_changes_is_ok():
    assert check_scope([], ALLOWED, PROTECTED, HIDDEN).ok
