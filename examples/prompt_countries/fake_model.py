"""A stand-in chat model for the prompt_countries example, on 127.0.0.1 (standard library only).

It speaks the OpenAI chat-completions API (`POST /v1/chat/completions`) and "knows" every country
of data/examples.jsonl, but how it answers depends on the system prompt it is given, with seeded
sampling noise, so a better prompt is measurably better:

- a prompt saying "only the two-letter code" gets a bare code on about 90% of inputs (a sentence
  around it otherwise); any other prompt gets a bare code on about 30% of them;
- a prompt saying "lowercase" gets the code in lower case.

The noise is a hash of the system prompt, the user message, the request's seed and temperature:
the same request always gets the same reply, and another seed another draw.

    python3 fake_model.py --port 8808      # then base_url = "http://127.0.0.1:8808/v1"
"""

from __future__ import annotations

import argparse
import hashlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "examples.jsonl"
INSTRUCTION = "only the two-letter code"
FOLLOWS, IGNORES = 0.9, 0.3  # chance of a bare code with / without the instruction


def load_table(path: Path = DATA) -> dict[str, str]:
    """input -> ISO code, from an examples file."""
    table = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            table[row["input"]] = row["expected_output"]
    return table


def draw(*parts: Any) -> float:
    """A uniform number in [0, 1) from a hash of `parts`."""
    h = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def reply_for(table: dict[str, str], system: str, user: str, seed: Any = None, temperature: Any = 0.0) -> str:
    """What the stand-in model answers to (system, user)."""
    name = user.strip().splitlines()[-1] if user.strip() else ""
    code = table.get(user) or table.get(name)
    if code is None:
        return "I do not know that country."
    rules = system.lower()
    if "lowercase" in rules:
        code = code.lower()
    chance = FOLLOWS if INSTRUCTION in rules else IGNORES
    if draw(system, user, seed, temperature) < chance:
        return code
    return f"The ISO 3166-1 alpha-2 code of {name.strip()} is {code}."


def completion(content: str, request: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions response body with usage (about 4 bytes per token)."""
    prompt = sum(len(str(m.get("content", "")).encode()) for m in request.get("messages", [])) // 4 + 1
    used = len(content.encode()) // 4 + 1
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": request.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": used, "total_tokens": prompt + used}}


def answer(table: dict[str, str], request: dict[str, Any]) -> str:
    """The reply's content for a chat-completions request body."""
    messages = request.get("messages", [])
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    return reply_for(table, system, user, request.get("seed"), request.get("temperature", 0.0))


def make_server(port: int = 0, table: dict[str, str] | None = None) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:`port` (0: any free port), not yet serving."""
    known = load_table() if table is None else table

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                code, out = 404, {"error": {"message": f"no route {self.path}"}}
            else:
                code, out = 200, completion(answer(known, body), body)
            data = json.dumps(out).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8808)
    args = parser.parse_args()
    server = make_server(args.port)
    print(f"serving on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
