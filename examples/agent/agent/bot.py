"""A deterministic stand-in for a coding-agent CLI (no model, no network), run by Ratchet as
`python3 agent/bot.py {prompt}` in its workspace. It behaves like a coding agent through the
channel: the first time, it reads its prompt, writes an experiment script and launches it as an
array of two (two smoothing windows), then sleeps. Woken with the results, it reads them, edits
`model/smooth.py` to the better window and submits with a report.
"""

import json
import os
import re
import subprocess
import sys

CHANNEL = os.environ.get("RATCHET_CHANNEL", ".ratchet-sys")
TOOL = os.path.join(CHANNEL, "ratchet-sys")
WINDOWS = (9, 25)

EXPLORE = '''"""Experiment: the benchmark's mean score over 4 seeds with WINDOW = one of %r (by SWEEP_INDEX)."""
import contextlib, io, json, os, runpy, statistics, sys
sys.path.insert(0, os.getcwd())
import model.smooth as sm
sm.WINDOW = %r[int(os.environ["SWEEP_INDEX"])]
scores = []
for seed in range(4):
    os.environ["RATCHET_SEED"] = str(9000 + seed)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path("bench.py", run_name="__main__")
    scores.append(json.loads(out.getvalue().strip().splitlines()[-1])["score"])
with open("explore-result.json", "w") as f:
    json.dump({"window": sm.WINDOW, "scores": scores}, f)
print(json.dumps({"score": statistics.mean(scores), "window": sm.WINDOW}))
'''


def tool(*args: str) -> None:
    """Run the channel's tool; print what it says."""
    proc = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True, check=False)
    print(proc.stdout.strip() or proc.stderr.strip())
    if proc.returncode != 0:
        sys.exit(proc.returncode)


def first_leg(prompt: str) -> None:
    print("bot: read the prompt:", prompt.splitlines()[0])
    with open("model/explore.py", "w") as f:
        f.write(EXPLORE % (WINDOWS, WINDOWS))
    tool("launch", "--name", "explore", "--array", "2", "--concurrency", "2", "--minutes", "2",
         "--artifact", "explore-result.json", "--why", f"compare moving-average windows {WINDOWS}",
         "--", "python3", "model/explore.py")
    tool("sleep", "--note", f"explore: SWEEP_INDEX 0 is window {WINDOWS[0]}, 1 is window {WINDOWS[1]}")


def second_leg() -> None:
    found = []
    for i in range(len(WINDOWS)):
        path = os.path.join(CHANNEL, "results", "explore", str(i), "explore-result.json")
        with open(path) as f:
            data = json.load(f)
        found.append((sum(data["scores"]) / len(data["scores"]), data["window"]))
    best_score, best = max(found)
    print(f"bot: results {found}; best window {best}")
    with open("model/smooth.py") as f:
        source = f.read()
    with open("model/smooth.py", "w") as f:
        f.write(re.sub(r"^WINDOW = \d+", f"WINDOW = {best}", source, flags=re.M))
    os.remove("model/explore.py")
    lines = [f"Hypothesis: a moving average over {best} samples removes more noise than it blurs the signal.",
             "What ran: model/explore.py as an array of two launched jobs, windows "
             f"{WINDOWS[0]} and {WINDOWS[1]}, 4 seeds each."]
    lines += [f"Measured: window {w}: mean score {s:.5f}." for s, w in found]
    lines.append(f"Why promote: window {best} scored best ({best_score:.5f}) against no smoothing.")
    report = os.path.join(CHANNEL, "report.md")
    with open(report, "w") as f:
        f.write("\n".join(lines) + "\n")
    tool("submit", "--report-file", report, "--summary", f"moving average, window {best}")


def main() -> None:
    with open(sys.argv[1]) as f:
        prompt = f.read()
    if os.path.isdir(os.path.join(CHANNEL, "results", "explore")):
        second_leg()
    else:
        first_leg(prompt)


if __name__ == "__main__":
    main()
