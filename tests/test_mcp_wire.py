"""``sessionref mcp`` over raw stdio: every malformed frame whose id can be read gets exactly one
answer (the JSON-RPC error it deserves, or a coded tool error), a lone surrogate reads as U+FFFD,
the wire carries no raw terminal control, and the server keeps serving after each."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from core.mcp.protocol import check_frame
from core.mcp.wire import MAX_DEPTH, MAX_LINE_BYTES, screen
from tests.test_mcp import _store
from tests.test_session_tools import frame_text

REPO = Path(__file__).resolve().parent.parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def _call(request_id: Any, arguments: Any) -> str:
    params = {"name": "search_sessions", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


class _Server:
    """``sessionref mcp`` in a child process, spoken to line by line."""

    def __init__(self, root: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "mcp", "--root", str(root), "--no-external"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(root.parent),
        )  # fmt: skip
        self._pending = b""
        self.send(json.dumps(INITIALIZE))
        assert self.answer()["id"] == "init"
        self.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()

    def answer(self, seconds: float = 20.0) -> dict[str, Any]:
        raw = self.raw_answer(seconds)
        assert raw is not None, "no answer"
        return dict(json.loads(raw))

    def raw_answer(self, seconds: float) -> bytes | None:
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + seconds
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                return None
            chunk = os.read(stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        return self.process.stderr.read().decode()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    root = tmp_path / "store"
    _store(root)
    running = _Server(root)
    yield running
    if running.process.poll() is None:
        running.process.kill()


TOOL_CODE = "TOOL_INVALID_ARGUMENTS"
MALFORMED = [
    # (what, the line, the answer's id, the error code or the tool code)
    ("params a list", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}', 1, -32602),
    ("cut short", '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_se', 2, -32700),
    ("not JSON at all, id first", '{"id": "two-b", "jsonrpc": "2.0", method: ping}', "two-b", -32700),
    ("no jsonrpc", '{"id":3,"method":"ping"}', 3, -32600),
    ("jsonrpc 1.0", '{"jsonrpc":"1.0","id":4,"method":"ping"}', 4, -32600),
    ("method a number", '{"jsonrpc":"2.0","id":5,"method":7}', 5, -32600),
    ("a batch", '[{"jsonrpc":"2.0","id":6,"method":"ping"}]', 6, -32600),
    ("NaN", '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":NaN}}', 7, -32700),
    ("arguments 200 deep", _call(8, {"query": "__DEEP__"}).replace('"__DEEP__"', _deep(200)), 8, TOOL_CODE),
    ("arguments 5000 deep", _call(9, {"query": "__DEEP__"}).replace('"__DEEP__"', _deep(5000)), 9, TOOL_CODE),
    ("another method too deep", json.dumps({"jsonrpc": "2.0", "id": 10, "method": "ping", "params": {"x": 1}}).replace(
        "1}", _deep(100) + "}"), 10, -32600),
    ("params of the wrong shape", '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":5}}', 11, -32602),
]  # fmt: skip


def test_every_malformed_frame_with_a_readable_id_gets_exactly_one_answer(server: _Server) -> None:
    for what, line, request_id, code in MALFORMED:
        server.send(line)
        answer = server.answer()
        assert answer["id"] == request_id, what
        if isinstance(code, int):
            assert answer["error"]["code"] == code, (what, answer)
        else:
            assert answer["result"]["isError"] is True, what
            assert answer["result"]["content"][0]["text"].endswith(f"({code})"), what
        # Exactly one: the next answer is the ping's.
        server.send(json.dumps({"jsonrpc": "2.0", "id": f"after-{request_id}", "method": "ping"}))
        assert server.answer() == {"jsonrpc": "2.0", "id": f"after-{request_id}", "result": {}}, what
    # Frames whose id cannot be read: nobody is waiting; one line each on stderr, and no answer.
    unreadable = (
        '{"jsonrpc":"2.0","method":"tools/call","params":[',
        "[]",
        "42",
        '{"jsonrpc":"2.0","id":1.5,"method":7}',
    )
    for line in unreadable:
        server.send(line)
    server.send('{"jsonrpc":"2.0","id":"last","method":"ping"}')
    assert server.answer()["id"] == "last"
    assert server.raw_answer(0.5) is None
    stderr = server.close()
    assert stderr.count("sessionref mcp: dropped") == 4 and "Traceback" not in stderr


def test_a_lone_surrogate_reads_as_the_replacement_character(server: _Server) -> None:
    # Half an emoji, as a JavaScript client that cut a string between its two halves writes it.
    server.send(_call("half", {"query": "wombat \ud83d"}))  # json.dumps spells it as the escape
    answer = server.answer()
    assert answer["id"] == "half" and answer["result"]["isError"] is False
    found = json.loads(frame_text(answer["result"]["content"][0]["text"], "session-search-results"))
    assert found["query"] == "wombat \ufffd"
    # Bytes that are not UTF-8 read the same way.
    server.send(_call("bytes", {"query": "wombat"}).encode().replace(b"wombat", b"wom\xffbat"))
    found = json.loads(frame_text(server.answer()["result"]["content"][0]["text"], "session-search-results"))
    assert found["query"] == "wom\ufffdbat"
    server.close()


def test_the_wire_carries_no_raw_terminal_control_or_bidi(server: _Server) -> None:
    server.send(_call("hostile", {"query": "\u009b31m \u202eevil \u2066x \u0085"}))
    raw = server.raw_answer(20.0)
    assert raw is not None
    for character in ("\u009b", "\u202e", "\u2066", "\u0085"):
        assert character.encode() not in raw
    found = json.loads(frame_text(json.loads(raw)["result"]["content"][0]["text"], "session-search-results"))
    assert found["query"] == "\u009b31m \u202eevil \u2066x \u0085"  # the same value, escaped
    server.close()


def test_a_line_over_the_bound_is_refused_by_its_id(server: _Server) -> None:
    server.send(_call("huge", {"query": "x" * (MAX_LINE_BYTES + 10)}))
    answer = server.answer(60.0)
    assert answer["id"] == "huge" and answer["error"]["code"] == -32600
    server.send('{"jsonrpc":"2.0","id":"still","method":"ping"}')
    assert server.answer()["id"] == "still"
    server.close()


def test_the_screen_forwards_what_the_protocol_takes_unchanged_in_meaning() -> None:
    validate = check_frame
    line = _call(1, {"query": "wombat", "limit": 3}).encode()
    verdict = screen(line, validate)
    assert verdict.answers == [] and verdict.forward is not None
    assert json.loads(verdict.forward) == json.loads(line)
    # The documented bound: MAX_DEPTH levels pass, one more is refused.
    arguments_at = 3  # message, params, arguments
    ok = _call(2, {"query": "__DEEP__"}).replace('"__DEEP__"', _deep(MAX_DEPTH - arguments_at))
    assert screen(ok.encode(), validate).forward is not None
    over = _call(3, {"query": "__DEEP__"}).replace('"__DEEP__"', _deep(MAX_DEPTH - arguments_at + 1))
    (refused,) = screen(over.encode(), validate).answers
    assert refused["result"]["isError"] and "TOOL_INVALID_ARGUMENTS" in refused["result"]["content"][0]["text"]
    # A response the client sends (to a request of ours) is never answered, even malformed.
    assert screen(b'{"jsonrpc":"2.0","id":4,"result":', validate).answers == []


FRAMES = [
    '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":1,"method":"ping","params":null}',
    '{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}',
    '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}',
    '{"jsonrpc":"1.0","id":1,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"method":5}',
    '{"jsonrpc":"2.0","id":1}',
    '{"jsonrpc":"2.0","id":1,"result":{}}',
    '{"jsonrpc":"2.0","id":null,"method":"ping"}',
    '{"jsonrpc":"2.0","id":true,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"error":{}}',
]


@pytest.mark.parametrize("frame", FRAMES)
def test_the_protocol_s_check_takes_what_the_official_sdk_takes(frame: str) -> None:
    # The server no longer runs the SDK (its import alone took 505 ms); its schema of a JSON-RPC
    # message is the reference. Where the two differ, neither answers: an id that is not a string or
    # an integer (the SDK reads the frame as a notification), a malformed response (nobody answers one).
    from mcp_types import jsonrpc_message_adapter

    try:
        jsonrpc_message_adapter.validate_json(frame, by_name=False)
        sdk = True
    except ValueError:
        sdk = False
    try:
        check_frame(frame)
        ours = True
    except ValueError:
        ours = False
    if ours != sdk:
        assert screen(frame.encode(), check_frame).answers == [], frame


def test_an_answer_to_an_id_with_a_lone_surrogate_gives_the_id_back_as_it_was_written() -> None:
    # Found by the fuzzer: an id written "\ud83d" could not be written back as UTF-8.
    from core.mcp.wire import encode_frame, screen

    line = b'{"jsonrpc": "2.0", "id": "a\\ud83db", "method": "tools/call" "params": {}}'
    (answer,) = screen(line, lambda frame: None).answers
    written = encode_frame(answer)
    assert b'"id":"a\\ud83db"' in written and json.loads(written) == answer
    assert encode_frame({"id": "caf\u00e9"}) == '{"id":"caf\u00e9"}\n'.encode()  # UTF-8 when it can be
