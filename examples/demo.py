"""`make demo`: copy a bundled example (default: digits) to a scratch directory, make it a git
repository, and run Ratchet's main job on it. Needs only what `make demo` installed; no network, no
API key. `python examples/demo.py countries` runs the examples-mode example instead.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = sys.argv[1] if len(sys.argv) > 1 else "digits"
SCRATCH = HERE.parent / "demo-run" / NAME


def git(*args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Ratchet demo", "-c", "user.email=demo@localhost", *args],
        cwd=SCRATCH, check=True, stdout=subprocess.DEVNULL,
    )


def main() -> int:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    if not (HERE / NAME / "ratchet.toml").is_file():
        print(f"no bundled example {NAME!r} in {HERE}", file=sys.stderr)
        return 2
    shutil.copytree(HERE / NAME, SCRATCH)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", f"{NAME} example: baseline")
    ratchet = Path(sys.executable).parent / "ratchet"
    print(f"demo project: {SCRATCH}", flush=True)
    return subprocess.run([str(ratchet), "run", str(SCRATCH)], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
