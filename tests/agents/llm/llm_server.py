"""A local HTTP server speaking the chat-completions API, for the llm agent's tests and for a
coding-agent CLI (aider, through litellm) run as a command agent.

Real HTTP on 127.0.0.1 (`http.server` in a thread). Each POST to `/v1/chat/completions` takes the
next scripted `Step` (or the `default` step when the script is empty) and records the request it
answered (its JSON body and headers). Steps:

- `reply(content, finish_reason, prompt_tokens, completion_tokens)`: a 200 chat completion, sent as
  server-sent events (one content chunk, one chunk with the finish reason and usage, `[DONE]`) when
  the request asks `"stream": true`, as litellm does by default;
- `answer(write)`: the same, its content `write(request)` (a reply that depends on the prompt);
- `status(code, message, headers)`: an error status with an OpenAI-style JSON error body;
- `hold(seconds)`: 200 headers and a Content-Length, then one space every 0.1 s and never the body:
  a connection kept alive with no content (a read timeout never fires; only a deadline does).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def _send_json(handler: BaseHTTPRequestHandler, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def _send_stream(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    """`body` (a chat completion) as server-sent events of `chat.completion.chunk` objects."""
    choice = body["choices"][0]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
    chunks = [{**base, "choices": [{"index": 0, "finish_reason": None,
                                    "delta": {"role": "assistant", "content": choice["message"]["content"]}}]},
              {**base, "choices": [{"index": 0, "finish_reason": choice["finish_reason"], "delta": {}}]}]
    if "usage" in body:
        chunks[-1]["usage"] = body["usage"]
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for chunk in chunks:
        handler.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    handler.wfile.write(b"data: [DONE]\n\n")
    handler.wfile.flush()
    handler.close_connection = True


def _send_completion(handler: BaseHTTPRequestHandler, request: dict[str, Any], body: dict[str, Any]) -> None:
    """A 200 carrying `body`: streamed when the request asked for it, else one JSON object."""
    if request.get("stream"):
        _send_stream(handler, body)
    else:
        _send_json(handler, 200, body)


def completion(content: str | None, finish_reason: str = "stop", prompt_tokens: int | None = 100,
               completion_tokens: int | None = 50) -> dict[str, Any]:
    """A chat-completions response body (usage left out when either count is None)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content}}],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
    return body


def reply(content: str | None, finish_reason: str = "stop", prompt_tokens: int | None = 100,
          completion_tokens: int | None = 50) -> Step:
    """A 200 reply carrying `content`."""
    body = completion(content, finish_reason, prompt_tokens, completion_tokens)
    return lambda handler, request: _send_completion(handler, request, body)


def answer(write: Callable[[dict[str, Any]], str]) -> Step:
    """A 200 reply whose content is `write(request)`, the request's JSON body."""
    return lambda handler, request: _send_completion(handler, request, completion(write(request)))


def status(code: int, message: str = "error", headers: dict[str, str] | None = None) -> Step:
    """An error status with `{"error": {"message": ...}}`."""
    body = {"error": {"message": message, "type": "test", "code": code}}
    return lambda handler, request: _send_json(handler, code, body, headers)


def hold(seconds: float, stop: threading.Event) -> Step:
    """200 headers, then a trickle of spaces for `seconds` (or until `stop`), never a body."""
    def step(handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end and not stop.is_set():
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass
    return step


@dataclass
class ChatServer:
    """The running server: `url` (the base_url, ending in /v1), `script` (steps, consumed in order),
    `requests` (JSON bodies answered, in order), `headers` (their headers), `default` (the step
    when the script is empty)."""

    script: list[Step] = field(default_factory=list)
    default: Step | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    url: str = ""
    _server: ThreadingHTTPServer | None = None

    def start(self) -> ChatServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/v1/chat/completions":
                    _send_json(self, 404, {"error": {"message": f"no route {self.path}"}})
                    return
                owner.requests.append(body)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                step = owner.script.pop(0) if owner.script else owner.default
                if step is None:
                    _send_json(self, 500, {"error": {"message": "the test script is empty"}})
                    return
                step(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        self.stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
