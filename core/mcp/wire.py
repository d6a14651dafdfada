"""The MCP server's stdio, owned: every line the client sends is read here first, so that a request
whose id can be read gets exactly one answer.

``Lines`` reads the client's lines, forwards those the protocol takes (``core.mcp.protocol``) and
answers the others itself through ``Wire``, the one writer of stdout:

- a line that is not JSON: ``-32700`` (parse error), when its id can still be read;
- a frame that is not a JSON-RPC request (no ``"jsonrpc": "2.0"``, a method that is not a string,
  a batch, which MCP no longer has): ``-32600`` (invalid request);
- ``params`` that is not an object: ``-32602`` (invalid params);
- a frame nested deeper than ``MAX_DEPTH`` levels: a ``tools/call`` gets a tool error result
  (``TOOL_INVALID_ARGUMENTS``: its arguments are what nest), any other request ``-32600``;
- a frame longer than ``MAX_LINE_BYTES``: ``-32600``;
- a lone UTF-16 surrogate (``"\\ud83d"``, half an emoji a JavaScript client cut) reads as U+FFFD,
  as bytes that are not UTF-8 do.

A frame whose id cannot be read (or a notification, or a response) is answered by nobody, as
JSON-RPC has it; its problem goes to stderr as one line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import queue
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from core.agent.tool_specs import TOOL_INVALID_ARGUMENTS
from core.display import visible
from core.errors import coded_line

MAX_LINE_BYTES = 8 * 1024 * 1024
"""The longest frame read (a tool call needs a few KiB)."""
MAX_DEPTH = 32
"""The deepest a frame may nest (objects and arrays; a ``tools/call``'s arguments sit at level 3)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"?'
_TOKEN = re.compile(rf'{_STRING}|[\[\]{{}}:,]|[^\s\[\]{{}}:,"]+')
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Verdict:
    """What becomes of one line: the text forwarded to the protocol, the answers we write, a log line."""

    forward: str | None = None
    answers: list[dict[str, Any]] = field(default_factory=list)
    log: str | None = None


@dataclass
class _Outline:
    """What a quick look at a line's tokens finds, even in a line that is not JSON."""

    depth: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    """The top-level object's scalar fields among ``id``, ``method``, ``jsonrpc`` (as read)."""
    keys: set[str] = field(default_factory=set)
    """The top-level object's keys seen."""


def _outline(text: str) -> _Outline:
    """The nesting depth, and the top-level ``id``/``method``/``jsonrpc`` of a line as far as it goes."""
    found = _Outline()
    depth = 0
    key: str | None = None
    expect = "key"  # at depth 1 in the top-level object: "key", "colon", "value", "comma"
    top_is_object = text.startswith("{")
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "{[":
            depth += 1
            found.depth = max(found.depth, depth)
            if depth == 2 and expect == "value":
                expect = "comma"
            continue
        if token in "}]":
            depth -= 1
            continue
        if depth != 1 or not top_is_object:
            continue
        if token == ":":
            expect = "value" if expect == "colon" else expect
        elif token == ",":
            expect = "key"
        elif expect == "key":
            key = _scalar(token)
            if isinstance(key, str):
                found.keys.add(key)
            expect = "colon"
        elif expect == "value":
            if key in ("id", "method", "jsonrpc") and key not in found.fields:
                found.fields[key] = _scalar(token)
            expect = "comma"
    return found


def _scalar(token: str) -> Any:
    try:
        return json.loads(token)
    except ValueError:
        return None


def _readable(value: Any) -> bool:
    """Whether ``value`` is an id an answer can carry (MCP: a string or an integer)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def encode_frame(message: dict[str, Any]) -> bytes:
    """One message of ours as the line written: UTF-8 JSON, or, when it holds a lone surrogate (an id
    a client wrote as ``"\\ud83d"``), ASCII JSON that gives the client its id back escaped as it was."""
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _tool_error(request_id: Any, message: str) -> dict[str, Any]:
    text = coded_line(message, TOOL_INVALID_ARGUMENTS)
    result = {"content": [{"type": "text", "text": text}], "isError": True}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _reject(_constant: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def _whole(value: Any) -> Any:
    """``value`` with every lone surrogate (in strings and keys) read as U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {_whole(key): _whole(item) for key, item in value.items()}
    return value


def _refusal(outline: _Outline, problem: str, code: int) -> Verdict:
    """The answer to a frame that cannot be forwarded, if its id can be read; else one log line."""
    request_id = outline.fields.get("id")
    is_response = "method" not in outline.keys and bool(outline.keys & {"result", "error"})
    if not _readable(request_id) or is_response:
        return Verdict(log=f"dropped a frame whose id cannot be read: {problem}")
    return Verdict(answers=[_error(request_id, code, problem)])


def screen(line: bytes, validate: Callable[[str], object]) -> Verdict:
    """What to do with one line the client sent (``validate``: the protocol's check of a frame,
    ``core.mcp.protocol.check_frame``, raising when it cannot take it)."""
    text = line.decode("utf-8", "replace").strip()
    if not text:
        return Verdict()
    outline = _outline(text)
    if outline.depth > MAX_DEPTH:
        problem = f"the message nests deeper than {MAX_DEPTH} levels"
        if outline.fields.get("method") == "tools/call" and _readable(outline.fields.get("id")):
            refusal = _tool_error(outline.fields["id"], f"the arguments nest deeper than {MAX_DEPTH} levels")
            return Verdict(answers=[refusal])
        return _refusal(outline, problem, INVALID_REQUEST)
    try:
        message = _whole(json.loads(text, parse_constant=_reject))
    except (ValueError, RecursionError):
        return _refusal(outline, "parse error: the line is not JSON", PARSE_ERROR)
    if isinstance(message, list):
        answers = [
            _error(item["id"], INVALID_REQUEST, "batches are not supported: send one message a line")
            for item in message
            if isinstance(item, dict) and "method" in item and _readable(item.get("id"))
        ]
        return Verdict(answers=answers, log=None if answers else "dropped a batch with no request id")
    if not isinstance(message, dict):
        return Verdict(log="dropped a frame that is not a JSON object")
    forward = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        validate(forward)
    except Exception:  # whatever the check raises, the frame cannot be taken
        return _refusal(_outline_of(message), _what_is_wrong(message), _code_for(message))
    return Verdict(forward=forward)


def _outline_of(message: dict[str, Any]) -> _Outline:
    fields: dict[str, Any] = {key: message[key] for key in ("id", "method", "jsonrpc") if key in message}
    return _Outline(depth=0, fields=fields, keys={str(key) for key in message})


def _code_for(message: dict[str, Any]) -> int:
    if message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str) and "params" in message:
        return INVALID_PARAMS
    return INVALID_REQUEST


def _what_is_wrong(message: dict[str, Any]) -> str:
    if message.get("jsonrpc") != "2.0":
        return 'invalid request: "jsonrpc" must be "2.0"'
    if "method" in message and not isinstance(message["method"], str):
        return 'invalid request: "method" must be a string'
    if "params" in message and not isinstance(message["params"], dict):
        return 'invalid params: "params" must be an object'
    if "params" in message:
        return "invalid params"
    return "invalid request"


class Wire:
    """The server's stdout: whole lines, in the order sent, written by one thread of its own (a
    client that stops reading blocks that thread, not the server, nor its exit)."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._queue: queue.SimpleQueue[tuple[bytes, concurrent.futures.Future[None]]] = queue.SimpleQueue()
        self._started = False

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message, whole.

        Raises:
            OSError: the client's end is gone (``BrokenPipeError``).
        """
        if not self._started:
            self._started = True
            threading.Thread(target=self._write_all, name="mcp-out", daemon=True).start()
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._queue.put((encode_frame(message), done))
        await asyncio.wrap_future(done)

    def _write_all(self) -> None:
        while True:
            data, done = self._queue.get()
            if not done.set_running_or_notify_cancel():
                continue  # (its sender was cancelled: the server is ending)
            try:
                self._out.write(data)
                self._out.flush()
            except BaseException as error:  # handed to the sender (a broken pipe: the client went)
                done.set_exception(error)
            else:
                done.set_result(None)


class Lines:
    """The server's stdin as the protocol reads it: the frames it can take, one a line; the others
    are answered through ``wire`` (see the module docstring). A line is read when the protocol asks
    for the next one, by a thread of its own (the server may end while it waits for the client)."""

    def __init__(
        self,
        source: BinaryIO,
        wire: Wire,
        validate: Callable[[str], object],
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._source = source
        self._wire = wire
        self._validate = validate
        self._log = log if log is not None else _to_stderr
        self._wanted: queue.SimpleQueue[concurrent.futures.Future[bytes | None]] = queue.SimpleQueue()
        self._started = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await self._next()
            if line is None:
                return
            if len(line) > MAX_LINE_BYTES:
                verdict = _refusal(_outline(line[:65536].decode("utf-8", "replace")), _too_long(), INVALID_REQUEST)
            else:
                verdict = screen(line, self._validate)
            for answer in verdict.answers:
                await self._wire.send(answer)
            if verdict.log is not None:
                self._log(verdict.log)
            if verdict.forward is not None:
                yield verdict.forward + "\n"

    async def _next(self) -> bytes | None:
        if not self._started:
            self._started = True
            threading.Thread(target=self._read_all, name="mcp-in", daemon=True).start()
        line: concurrent.futures.Future[bytes | None] = concurrent.futures.Future()
        self._wanted.put(line)
        return await asyncio.wrap_future(line)

    def _read_all(self) -> None:
        while True:
            line = self._wanted.get()
            if not line.set_running_or_notify_cancel():
                continue  # (its reader was cancelled: the server is ending)
            try:
                line.set_result(self._read_line())
            except BaseException as error:  # handed to the reader
                line.set_exception(error)

    def _read_line(self) -> bytes | None:
        """The next line (``None`` at the end); a line over the bound comes back as its head, one
        byte over, with the rest read and let go."""
        line = self._source.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:
                rest = self._source.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
        return line


def _too_long() -> str:
    return f"invalid request: the message is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"


def _to_stderr(message: str) -> None:
    print(f"sessionref mcp: {visible(message)}", file=sys.stderr, flush=True)


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Take the client's pipes for the protocol: private copies of fds 0 and 1, while fd 0 reads the
    null device and fd 1 writes to stderr, so nothing else in the process (a library's print, a
    child) can read a frame or write into the wire."""
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    for descriptor in (wire_in, wire_out):
        os.set_inheritable(descriptor, False)
    return os.fdopen(wire_in, "rb", buffering=1 << 16), os.fdopen(wire_out, "wb")
