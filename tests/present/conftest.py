"""Fixtures for the presentation tests: a headless Chromium driven through Selenium, and real runs.

Chromium and its driver are Debian's `chromium` and `chromium-driver` (`.ci/run` installs them);
without them the browser tests are skipped with that reason. Chromium runs as root here, so it needs
`--no-sandbox`, and a fresh profile per driver.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ratchet, set_contract
from repo_fixture import make_bench_repo

CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")
"""Flags for Chromium as root in a container, with nothing phoning home."""

SMALL_RUN = """
[gate]
units = [6, 12]
holdout_units = 12

[budget]
max_attempts = 6
max_evaluations = 400
"""


def _binaries() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture
def chromium() -> Iterator:
    """A started headless Chromium WebDriver (browser log captured), quit afterwards."""
    binaries = _binaries()
    if binaries is None:
        pytest.skip("chromium and chromedriver are not installed (`.ci/run` installs Debian's "
                    "chromium and chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extras")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ratchet-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binaries[0]
    for arg in (*CHROMIUM_ARGS, f"--user-data-dir={profile}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=binaries[1]))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def small_run() -> str:
    """The [gate] and [budget] sections of a small real campaign (6 attempts, two looks)."""
    return SMALL_RUN


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> tuple[Path, str]:
    """A real benchmark campaign (search agent, 6 attempts, promotions and a holdout), run once per
    session (tests only read it; one that changes it works on a copy): (project root, run id)."""
    root = make_bench_repo(tmp_path_factory.mktemp("present") / "repo")
    set_contract(root, append=SMALL_RUN)
    code, out, err = ratchet("run", str(root))
    assert code == 0, err
    return root, out["result"]["run_id"]
