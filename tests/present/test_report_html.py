"""`ratchet report RUN --html`: one self-contained page, escaped, readable at 375 px and in print,
checked in a real headless Chromium on real runs."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import repo_fixture
from helpers import events, ratchet
from repo_fixture import git

from ratchet.core.payloads import ChampionPromoted
from ratchet.present.report.data import AttemptDetail, ReportData, budget_timeline, champion_trees
from ratchet.present.report.html import render_html

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
UPDATE_SCREENSHOTS_ENV = "RATCHET_UPDATE_SCREENSHOTS"
"""Set to 1 to copy the screenshots the browser test takes into docs/img/ (docs/report.md shows them)."""

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _status(**attempt) -> dict:
    row = {"attempt": 1, "summary": HOSTILE, "verdict": "rejected", "reason": "futility", "reason_text": HOSTILE,
           "estimate": -0.5, "interval": [-0.7, -0.3], "p_value": 0.9, "units": 6, "level": 0.01, "confirm": None}
    row.update(attempt)
    return {
        "run_id": "20261130-000000-abcd", "state": "stopped", "stop_reason": "budget_exhausted",
        "stop_budget": "max_attempts", "kernel_pid": None, "baseline": {"commit": "c" * 40, "tree": "t" * 40},
        "champion": {"commit": "c" * 40, "tree": "t" * 40, "estimate": None, "interval": None, "attempt": None},
        "promotions": 0, "holdout": None,
        "budget": {"used": {"attempts": 1, "evaluations": 12, "cpu_hours": 0.01, "gpu_hours": 0.0, "wall_s": 30.0},
                   "limits": {"max_attempts": 2, "max_evaluations": 0}},
        "attempts": [row],
    }


GATE = {"alpha": 0.05, "multiplicity": "campaign", "units": [6, 12], "min_effect": 0.0, "min_effect_rel": 0.0,
        "confirm": True}
TARGET = {"kind": "benchmark", "metric": HOSTILE, "direction": "max"}


def test_every_user_supplied_string_is_escaped():
    details = {1: AttemptDetail(report=HOSTILE + "</pre>", diff="+x = '</details><script>'\n")}
    splits = {"test": {"passes": 1, "n": 2, "rate": 0.5, "interval": [0.1, 0.9]}, "per_check": {HOSTILE: 0.5}}
    page = render_html(ReportData(_status(), campaign="bench", gate=GATE, target=TARGET, splits=splits,
                                  details=details))
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("</pre>") == page.count("<pre")  # the report's own </pre> did not close the block


def test_the_page_loads_nothing_from_outside():
    status = _status(summary="x=1", reason_text="stopped for futility")
    page = render_html(ReportData(status, campaign="bench", gate=GATE, target={"kind": "benchmark", "metric": "score"}))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for needle in ("<link", "<script", " src=", "@import"):
        assert needle not in page, needle
    assert re.findall(r"url\((?!#)", page) == []  # only references to the page's own SVG elements


def test_budget_timeline_sums_like_the_reducer(finished_run):
    from ratchet.commands.runs import run_status
    from ratchet.ledger.events import read_events

    root, run_id = finished_run
    events = read_events(root / ".ratchet" / "runs" / run_id / "events.jsonl")
    rows = budget_timeline(events)
    used = run_status(root, run_id)["budget"]["used"]
    assert rows[0]["evaluations"] == 0 and [r["attempt"] for r in rows] == list(range(len(rows)))
    assert rows[-1]["evaluations"] == used["evaluations"] and rows[-1]["attempts"] == used["attempts"]
    assert rows[-1]["wall_s"] == pytest.approx(used["wall_s"])
    assert all(a["evaluations"] <= b["evaluations"] for a, b in zip(rows, rows[1:], strict=False))


def test_each_attempt_is_diffed_against_the_champion_of_its_time():
    promotions = [ChampionPromoted(attempt=n, commit="c", tree=f"T{n}", estimate=None, interval=None, mean=None,
                                   lcb=None, branch="b") for n in (2, 4)]
    assert champion_trees([1, 2, 3, 4, 5], promotions, "T0") == {1: "T0", 2: "T0", 3: "T2", 4: "T2", 5: "T4"}


WRAPPED_NUMBERS_JS = """
const wrapped = [];
for (const td of document.querySelectorAll('td.num')) {
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  const tops = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const rect of range.getClientRects()) {
      if (rect.width > 0 && !tops.some(t => Math.abs(t - rect.top) < 3)) tops.push(rect.top);
    }
  }
  if (tops.length > 1) wrapped.push(td.innerText);
}
return wrapped;
"""
"""The numeric cells whose text runs over more than one line."""

CUT_WORDS_JS = """
const canvas = document.createElement('canvas').getContext('2d');
const cut = [];
for (const td of document.querySelectorAll('td.text, td.wide')) {
  const style = getComputedStyle(td);
  const room = td.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    canvas.font = getComputedStyle(node.parentElement).font;
    for (const word of node.textContent.split(/\\s+/)) {
      if (word.length > arguments[0]) continue;
      if (canvas.measureText(word).width > room + 1) cut.push([word, room]);
    }
  }
}
return cut;
"""
"""Words (up to arguments[0] characters) wider than the text cell holding them: a column squeezed
until a word breaks mid-word."""

LONGEST_WHOLE_WORD = 16
"""Words up to this many characters must fit their cell whole; longer ones (paths, long numbers in
a reason) may wrap inside a wide cell."""


def _table_checks(driver, width: int) -> None:
    """At the current viewport: no numeric cell wraps, no word of a text cell is cut, and every
    table sits in a container that scrolls sideways (so the page itself never does)."""
    assert driver.execute_script(WRAPPED_NUMBERS_JS) == [], f"numbers wrapped at {width} px"
    cut = driver.execute_script(CUT_WORDS_JS, LONGEST_WHOLE_WORD)
    assert cut == [], f"words cut mid-word at {width} px: {cut[:5]}"
    overflow = driver.execute_script(
        "return [...document.querySelectorAll('table')].map(t => getComputedStyle(t.parentElement).overflowX)")
    assert overflow and set(overflow) == {"auto"}, overflow


def _shot(driver, shots: Path, name: str, selector: str | None = None) -> None:
    """A screenshot of the viewport, or of the element `selector` (a table section) only."""
    if selector is None:
        driver.save_screenshot(str(shots / name))
    else:
        driver.find_element("css selector", selector).screenshot(str(shots / name))


def _page_checks(driver, url: str, shots: Path, name: str, focus: str = "#attempts") -> None:
    """Open `url`; fail on console errors, a blank page, horizontal scroll at 375 px (screen and
    print), a wrapped number or a word cut mid-word at 1280 and 375 px; save screenshots of the page
    and of the `focus` section at both widths."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 1400, "deviceScaleFactor": 1, "mobile": False})
    driver.get(url)
    text = driver.execute_script("return document.body.innerText")
    assert len(text) > 500 and "Headline: the holdout" in text, f"blank or broken page: {text[:200]!r}"
    assert driver.execute_script("return document.querySelectorAll('svg').length") >= 3
    _table_checks(driver, 1280)
    _shot(driver, shots, f"{name}.png")
    _shot(driver, shots, f"{name}-{focus.strip('#')}.png", focus)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 375, "height": 800, "deviceScaleFactor": 2, "mobile": True})
    driver.get(url)
    widths = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1] == 375, f"horizontal scroll at 375 px: content {widths[0]} px wide"
    _table_checks(driver, 375)
    _shot(driver, shots, f"{name}-{focus.strip('#')}-375.png", focus)
    for details in driver.find_elements("css selector", "section#details details"):
        driver.execute_script("arguments[0].open = true", details)  # long diffs and reports must wrap too
    widths = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"horizontal scroll at 375 px with every report open: {widths}"
    driver.save_screenshot(str(shots / f"{name}-375.png"))
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    widths = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"horizontal scroll in print media at 375 px: {widths}"
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    pdf = base64.b64decode(driver.print_page())
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    errors = [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
    assert not errors, f"console errors: {errors}"


def _keep_screenshots(shots: Path, names: list[str]) -> None:
    if os.environ.get(UPDATE_SCREENSHOTS_ENV) == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copy(shots / name, DOCS_IMG / name)


@pytest.mark.slow
def test_benchmark_report_renders_cleanly_in_chromium(finished_run, chromium, tmp_path: Path):
    root, run_id = finished_run
    code, out, err = ratchet("report", run_id, "--html", "--dir", str(root))
    assert code == 0, err
    page = Path(out["result"]["report"])
    assert page.name == "report.html" and page.parent.name == run_id
    html = page.read_text()
    assert html.count('<details id="attempt-') == 6 and "+x = " in html  # each attempt's diff, folded
    _page_checks(chromium, page.as_uri(), tmp_path, "report-html")
    assert "parameters" in chromium.execute_script("return [...document.querySelectorAll('section')].map(s => s.id)")
    _keep_screenshots(tmp_path, ["report-html.png", "report-html-375.png", "report-html-attempts.png",
                                 "report-html-attempts-375.png"])


EXAMPLES_CONTRACT = (repo_fixture.EXAMPLES_CONTRACT
                     .replace('type = "exact_match"\n',
                              'type = "exact_match"\n\n[[target.checks]]\ntype = "regex_match"\n'
                              'pattern = "[A-Z0-9 ]+"\n')
                     .replace("units = [10, 27]", "units = [10, 18]").replace("max_attempts = 3", "max_attempts = 2"))
"""repo_fixture's examples contract with a second check, smaller looks and two attempts."""


@pytest.mark.slow
def test_examples_report_shows_per_check_pass_rates(chromium, tmp_path: Path):
    root = tmp_path / "words"
    (root / "data").mkdir(parents=True)
    rows = [{"input": f"word{i:03d} alpha", "expected_output": f"WORD{i:03d} ALPHA"} for i in range(60)]
    (root / "data" / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "solution.py").write_text("import sys\nprint(sys.stdin.read())\n")
    (root / "ratchet.toml").write_text(EXAMPLES_CONTRACT)
    (root / ".gitignore").write_text(".ratchet/\n")
    (root / "candidates" / "1-upper").mkdir(parents=True)
    (root / "candidates" / "1-upper" / "solution.py").write_text(  # wrong on the inputs holding a 7
        "import sys\ntext = sys.stdin.read()\nprint(text if '7' in text else text.upper())\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "baseline")
    code, out, err = ratchet("run", str(root))
    assert code == 0 and out["result"]["promotions"] == 1, err
    code, out, err = ratchet("report", "--html", "--dir", str(root))
    assert code == 0, err
    page = Path(out["result"]["report"])
    chromium.get(page.as_uri())
    checks = chromium.execute_script(
        "return [...document.querySelectorAll('#splits table')].map(t => t.innerText).join('\\n')")
    assert "exact_match" in checks and "regex_match" in checks and "test (baseline)" in checks
    rows = chromium.execute_script(
        "return [...document.querySelectorAll('#examples table')[0].querySelectorAll('tbody tr')]"
        ".map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText))")
    test_ids = {k for e in events(root, out["result"]["run_id"]) if e["kind"] == "job.finished"
                and e["data"]["stage"] == "holdout" and e["data"]["variant"] == "candidate"
                and "-holdout-dev-" not in e["data"]["job_id"] and "-holdout-val-" not in e["data"]["job_id"]
                for k in e["data"]["examples"]}
    assert len(rows) == len(test_ids) > 0, "one row per test example the holdout measured"
    for _, given_input, expected, output, per_check, result, _, baseline in rows:
        wrong = "7" in given_input
        assert re.fullmatch(r"word\d{3} alpha", given_input) and expected == given_input.upper(), given_input
        assert output == (given_input if wrong else given_input.upper()), (given_input, output)
        assert result == ("failed" if wrong else "passed") and baseline == "failed", (given_input, result)
        assert ("exact_match: fail" in per_check) == wrong and "regex_match: " in per_check, per_check
    assert [r[5] for r in rows] == sorted((r[5] for r in rows), key=lambda v: v != "failed"), "failures first"
    _page_checks(chromium, page.as_uri(), tmp_path, "report-html-examples", focus="#examples")
    _keep_screenshots(tmp_path, ["report-html-examples-examples.png", "report-html-examples-examples-375.png"])


def test_html_report_of_a_missing_run_says_so(tmp_path: Path):
    code, out, _ = ratchet("report", "20261130-000000-nope", "--html", "--dir", str(tmp_path))
    assert code == 2 and out["error"]["code"] == "run.not_found"
