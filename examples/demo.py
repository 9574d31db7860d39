"""`make demo`: copy the bundled digits example to a scratch directory, make it a git repository,
and run Ratchet's main job on it. Needs only what `make demo` installed; no network, no API key.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRATCH = HERE.parent / "demo-run" / "digits"


def git(*args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Ratchet demo", "-c", "user.email=demo@localhost", *args],
        cwd=SCRATCH, check=True, stdout=subprocess.DEVNULL,
    )


def main() -> int:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    shutil.copytree(HERE / "digits", SCRATCH)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "digits example: mediocre SVM baseline")
    ratchet = Path(sys.executable).parent / "ratchet"
    print(f"demo project: {SCRATCH}", flush=True)
    return subprocess.run([str(ratchet), "run", str(SCRATCH)], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
