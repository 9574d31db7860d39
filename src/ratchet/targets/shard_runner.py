"""The shard runner: runs a solution once per example of a shard, inside the job.

Stdlib only and no ratchet imports: the kernel copies this file into the job's scratch directory
and runs `python3 shard_runner.py` in the job's checkout (under the sandbox). It reads a shard (JSON
on stdin, or from the file named by the first argument):

    {"solution": "solution.py", "timeout_s": 10, "output_cap": 1048576,
     "examples": [{"id": "sha256:...", "input": "..."}, ...]}

and runs `<python> <solution>` per example (python: the optional "python" key, else the
interpreter running this file, i.e. the job's `python3`) with the input on stdin, in its own
process group. It writes one JSON line per example to stdout, flushed as it goes:

    {"id", "status", "output", "exit_code", "stderr_tail", "elapsed_s"}

status: "ok" (exit 0), "crash" (any other exit or a signal), "timeout" (killed after timeout_s),
"output_too_large" (killed when stdout passed output_cap bytes). `output` is stdout decoded as
UTF-8 (bad bytes replaced) with ONE trailing newline ("\\n" or "\\r\\n") stripped. A crash fails
that example, not the shard. Expected outputs never reach the shard: the kernel keeps them.
Exit codes: 0 every example was run, 2 the shard itself is malformed (reason on stderr).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time

STATUSES = ("ok", "crash", "timeout", "output_too_large")
"""Record statuses: ok = exit 0; crash = non-zero exit or killed by a signal; timeout = killed
after timeout_s; output_too_large = killed once stdout passed output_cap bytes."""

STDERR_TAIL_CHARS = 2000  # characters of stderr kept per example
DRAIN_GRACE_S = 0.5  # after the solution exits, how long a descendant may keep its pipes open
CHUNK_BYTES = 65536  # bytes per read or write on a pipe
POLL_S = 0.05  # longest wait between checks of the process state
DEFAULT_OUTPUT_CAP = 1024 * 1024  # bytes of stdout when the shard gives no output_cap


class ProcessResult:
    """What one run produced: `returncode` (negative: killed by that signal), `stdout` (bytes, at
    most cap + one chunk), `stderr_tail` (bytes, the last part), `timed_out`, `over_cap`,
    `elapsed_s` (wall seconds)."""

    def __init__(self, returncode: int, stdout: bytes, stderr_tail: bytes, timed_out: bool,
                 over_cap: bool, elapsed_s: float):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr_tail = stderr_tail
        self.timed_out = timed_out
        self.over_cap = over_cap
        self.elapsed_s = elapsed_s


def _exited(proc: subprocess.Popen) -> bool:
    """True once the process has exited, WITHOUT reaping it: while it is an unreaped zombie its
    pid (and so its process group id) cannot be reused, so a later killpg hits no stranger."""
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    except (AttributeError, OSError):  # no waitid on this platform
        return proc.poll() is not None
    return info is not None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pump(proc: subprocess.Popen, stdin_data: bytes, timeout_s: float, output_cap: int) -> tuple:
    """Feed stdin and read stdout/stderr until both close or a limit is hit.
    Returns (stdout, stderr_tail, timed_out, over_cap)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # all three piped
    sel = selectors.DefaultSelector()
    out, err = bytearray(), bytearray()
    pending = memoryview(stdin_data)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)  # a full pipe must not block us while it writes
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    deadline = time.monotonic() + timeout_s
    timed_out = over_cap = False
    while sel.get_map():
        now = time.monotonic()
        if now >= deadline:
            timed_out = not _exited(proc)
            break
        if _exited(proc):
            deadline = min(deadline, now + DRAIN_GRACE_S)
        for key, _ in sel.select(min(POLL_S, max(0.0, deadline - now))):
            if key.fileobj is proc.stdin:
                try:
                    written = os.write(proc.stdin.fileno(), pending[:CHUNK_BYTES])
                except BlockingIOError:
                    written = 0
                except OSError:
                    written = len(pending)  # the solution closed its stdin: it does not want more
                pending = pending[written:]
                if not pending:
                    sel.unregister(proc.stdin)
                    proc.stdin.close()
                continue
            chunk = os.read(key.fd, CHUNK_BYTES)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            key.data.extend(chunk)
            if key.data is err and len(err) > 4 * STDERR_TAIL_CHARS:
                del err[: len(err) - 4 * STDERR_TAIL_CHARS]
            if key.data is out and len(out) > output_cap:
                over_cap = True
                sel.close()
                return bytes(out), bytes(err), timed_out, over_cap
    sel.close()
    return bytes(out), bytes(err), timed_out, over_cap


def run_process(argv: list[str], stdin_data: bytes, timeout_s: float, output_cap: int,
                cwd: str | None = None, env: dict[str, str] | None = None) -> ProcessResult:
    """Run `argv` in a new session (its own process group) with `stdin_data` on stdin.

    Kills the whole process group on timeout (`timeout_s` wall seconds), when stdout passes
    `output_cap` bytes, and after the process exits (descendants left behind are killed too).
    Never raises for the child's behaviour; raises OSError when `argv[0]` cannot be started.
    """
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # all three piped
    try:
        out, err, timed_out, over_cap = _pump(proc, stdin_data, timeout_s, output_cap)
    finally:
        _kill_group(proc)  # before reaping: the zombie leader keeps the group id ours
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        returncode = proc.wait()
    return ProcessResult(returncode, out, err, timed_out, over_cap, time.monotonic() - start)


def _strip_one_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def run_example(python: str, solution: str, example: dict, timeout_s: float, output_cap: int) -> dict:
    """Run the solution on one example ({"id", "input"}); returns its record (see the module doc)."""
    try:
        result = run_process([python, solution], example["input"].encode("utf-8"), timeout_s, output_cap)
    except OSError as exc:
        return {"id": example["id"], "status": "crash", "output": "", "exit_code": None,
                "stderr_tail": f"could not start {python}: {exc}", "elapsed_s": 0.0}
    if result.timed_out:
        status = "timeout"
    elif result.over_cap:
        status = "output_too_large"
    else:
        status = "ok" if result.returncode == 0 else "crash"
    output = "" if result.over_cap else _strip_one_newline(result.stdout.decode("utf-8", "replace"))
    return {
        "id": example["id"],
        "status": status,
        "output": output,
        "exit_code": result.returncode,
        "stderr_tail": result.stderr_tail.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:],
        "elapsed_s": round(result.elapsed_s, 6),
    }


def parse_shard(text: str) -> dict:
    """Validate a shard's JSON text; returns it with defaults filled. Raises ValueError."""
    shard = json.loads(text)
    if not isinstance(shard, dict):
        raise ValueError("the shard must be a JSON object")
    if not isinstance(shard.get("solution"), str) or not shard["solution"]:
        raise ValueError("'solution' must be a non-empty string")
    timeout = shard.get("timeout_s", 10)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError("'timeout_s' must be a number > 0")
    cap = shard.setdefault("output_cap", DEFAULT_OUTPUT_CAP)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ValueError("'output_cap' must be an integer >= 0")
    examples = shard.get("examples")
    if not isinstance(examples, list):
        raise ValueError("'examples' must be a list")
    for i, ex in enumerate(examples):
        if not (isinstance(ex, dict) and isinstance(ex.get("id"), str) and isinstance(ex.get("input"), str)):
            raise ValueError(f"examples[{i}] must be an object with string 'id' and 'input'")
    shard["timeout_s"] = float(timeout)
    shard.setdefault("python", sys.executable or "python3")
    return shard


def main(argv: list[str] | None = None) -> int:
    """Entry point: read the shard, run every example, print one record per line. Returns the
    exit code (0 ran, 2 malformed shard)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv:
            with open(argv[0], encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = sys.stdin.read()
        shard = parse_shard(text)
    except (OSError, ValueError) as exc:
        print(f"shard_runner: bad shard: {exc}", file=sys.stderr)
        return 2
    for example in shard["examples"]:
        record = run_example(shard["python"], shard["solution"], example,
                             shard["timeout_s"], shard["output_cap"])
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
