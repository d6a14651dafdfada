"""A local OpenAI-compatible server that behaves like DeepSeek's API where context is concerned.

It counts a request's prompt tokens (by DeepSeek's published rule, 0.3 token per ASCII character and
0.6 per other, over every string of every message, plus a few tokens of framing per message, or
with any ``count`` function given, such as a real tokenizer), refuses a request larger than its
window with DeepSeek's HTTP 400 and its wording ("This model's maximum context length is N
tokens..."), and otherwise streams a short answer with DeepSeek's usage fields
(``prompt_tokens``, ``completion_tokens``, ``prompt_cache_hit_tokens``/``_miss_tokens``). A
request whose last message asks for a checkpoint gets a summary built from the request; a
``deepseek-reasoner`` request gets ``reasoning_content`` first. Every request is recorded.

It runs in a thread (``ThreadingHTTPServer``), so the app in the same process, or in another one
(tmux), can talk to it.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.agent.chat_models import SUMMARY_REQUEST_MARK

FRAMING = 3
"""Tokens of framing the server adds per message (the chat template), unknown to the client."""


def rule_tokens(text: str) -> float:
    """DeepSeek's rule of thumb: 0.3 per ASCII character, 0.6 per other."""
    ascii_count = len(text.encode("ascii", "ignore"))
    return 0.3 * ascii_count + 0.6 * (len(text) - ascii_count)


def message_strings(message: dict[str, Any]) -> list[str]:
    strings = [message.get("content") or "", message.get("reasoning_content") or ""]
    for call in message.get("tool_calls") or []:
        strings.append(json.dumps(call))
    return [value if isinstance(value, str) else json.dumps(value) for value in strings]


@dataclass
class Recorded:
    """One request the server received."""

    model: str
    prompt_tokens: int
    refused: bool
    summary: bool
    messages: int
    body: dict[str, Any] = field(repr=False)


class FakeDeepSeek:
    """The server; ``with FakeDeepSeek(window=131072) as server: server.base_url``."""

    def __init__(
        self,
        *,
        window: int = 131_072,
        count: Callable[[str], float] = rule_tokens,
        reply: str = "Noted. Here is my answer.",
        reasoning: str = "Let me think about the referenced sessions first.",
        fail_summaries: bool = False,
        delay: float = 0.0,
    ) -> None:
        self.window = window
        self.count = count
        self.reply = reply
        self.reasoning = reasoning
        self.fail_summaries = fail_summaries
        self.delay = delay
        self.requests: list[Recorded] = []
        self.keys: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeDeepSeek:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        """The server's own count of a request's messages."""
        total = 0.0
        for message in messages:
            total += FRAMING + sum(self.count(value) for value in message_strings(message))
        return math.ceil(total)

    @property
    def answered(self) -> list[Recorded]:
        with self._lock:
            return [request for request in self.requests if not request.refused]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer()  # a client that went away (a cancelled stream) is not an error

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length))
                messages = body.get("messages") or []
                tokens = server.prompt_tokens(messages)
                last = messages[-1].get("content") if messages else ""
                summary = isinstance(last, str) and SUMMARY_REQUEST_MARK in last
                refused = tokens > server.window
                with server._lock:
                    server.requests.append(
                        Recorded(str(body.get("model")), tokens, refused, summary, len(messages), body)
                    )
                    server.keys.append(self.headers.get("authorization") or "")
                if refused:
                    self._refuse(tokens)
                elif summary and server.fail_summaries:
                    self._error(500, "the summarizer is overloaded")
                else:
                    self._stream(body, messages, tokens, summary)

            def _error(self, status: int, message: str) -> None:
                payload = json.dumps(
                    {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
                ).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _refuse(self, tokens: int) -> None:
                self._error(
                    400,
                    f"This model's maximum context length is {server.window} tokens. However, you requested "
                    f"{tokens} tokens ({tokens} in the messages, 0 in the completion). Please reduce the length "
                    "of the messages or completion.",
                )

            def _stream(self, body: dict[str, Any], messages: list[dict[str, Any]], tokens: int, summary: bool) -> None:
                if summary:
                    # A checkpoint that carries the first words of every user message it condenses.
                    firsts = [
                        str(message.get("content") or "")[-120:].replace("\n", " ")
                        for message in messages[:-1]
                        if message.get("role") == "user"
                    ]
                    text = "## What the user wants\n" + "\n".join(f"- {first}" for first in firsts[-20:])
                    text += "\n\n## Decisions\n- (none)\n\n## Open questions\n- (none)"
                else:
                    text = server.reply
                pieces: list[dict[str, Any]] = []
                if body.get("model") == "deepseek-reasoner" and not summary:
                    for word in server.reasoning.split(" "):
                        pieces.append({"reasoning_content": word + " "})
                for index in range(0, len(text), 40):
                    pieces.append({"content": text[index : index + 40]})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for piece in pieces:
                    event = {"choices": [{"index": 0, "delta": piece, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    if server.delay:
                        self.wfile.flush()
                        threading.Event().wait(server.delay)
                completion = math.ceil(server.count(text))
                hit = (tokens // 2) // 64 * 64
                usage = {
                    "prompt_tokens": tokens,
                    "completion_tokens": completion,
                    "total_tokens": tokens + completion,
                    "prompt_cache_hit_tokens": hit,
                    "prompt_cache_miss_tokens": tokens - hit,
                }
                final = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}
                self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        return Handler
