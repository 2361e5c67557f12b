"""A small local server that speaks the OpenAI chat-completions and embeddings APIs.

Tests drive the real `openai` client against it (fakes only at the network edge). Script the
answers in order with `fake.reply(...)`; each request pops the next one:
- a dict or list: returned as JSON message content (JSON mode);
- a str: returned as plain message content;
- `tool_calls([("extract_entities", {...}), ...])`: returned as tool calls;
- an int HTTP status (429, 500, 503...): returned as an error response;
- `hang(seconds)`: the server sleeps before answering (timeouts).
With nothing scripted, chat answers `{}`. Requests are recorded in `fake.requests`.
Embeddings are deterministic pseudo-random unit vectors of the requested `dimensions`; a
request holding one of `fake.failing_embeddings` is refused (400, which is not retried).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ToolCalls:
    calls: list[tuple[str, dict[str, Any]]]


@dataclass
class Hang:
    seconds: float


def tool_calls(calls: list[tuple[str, dict[str, Any]]]) -> ToolCalls:
    return ToolCalls(calls)


def hang(seconds: float) -> Hang:
    return Hang(seconds)


def fake_vector(text: str, dimensions: int) -> list[float]:
    values = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{text}:{counter}".encode()).digest()
        values.extend((byte - 127.5) / 127.5 for byte in digest)
        counter += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


class FakeOpenAI:
    def __init__(self) -> None:
        self.answers: deque[Any] = deque()
        self.requests: list[dict[str, Any]] = []
        self.failing_embeddings: set[str] = set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # shutdown() waits for the loop's next poll: 0.5 s by default, at every test's teardown
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(self, *answers: Any) -> None:
        self.answers.extend(answers)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "body": body})
                if self.path.endswith("/embeddings"):
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    if fake.failing_embeddings.intersection(inputs):
                        self._send(400, {"error": {"message": "scripted failure"}})
                    else:
                        self._send(200, fake._embeddings(body))
                elif self.path.endswith("/chat/completions"):
                    answer = fake.answers.popleft() if fake.answers else {}
                    if isinstance(answer, Hang):
                        time.sleep(answer.seconds)
                        answer = fake.answers.popleft() if fake.answers else {}
                    if isinstance(answer, int):
                        self._send(
                            answer, {"error": {"message": "scripted failure", "type": "fake"}}
                        )
                    else:
                        self._send(200, fake._completion(body, answer))
                else:
                    self._send(404, {"error": {"message": "unknown path"}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _completion(self, body: dict[str, Any], answer: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        if isinstance(answer, ToolCalls):
            finish = "tool_calls"
            message["tool_calls"] = [
                {
                    "id": f"call_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                for index, (name, arguments) in enumerate(answer.calls)
            ]
        elif isinstance(answer, str):
            message["content"] = answer
        else:
            message["content"] = json.dumps(answer)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dimensions = int(body.get("dimensions") or 384)
        return {
            "object": "list",
            "model": body.get("model", "fake"),
            "data": [
                {"object": "embedding", "index": index, "embedding": fake_vector(text, dimensions)}
                for index, text in enumerate(inputs)
            ],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
