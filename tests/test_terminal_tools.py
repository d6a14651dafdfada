"""The model looks past the cut, in a real terminal (tmux): against a local OpenAI-compatible server
that streams tool calls, one turn searches, references and reads a long session, then answers; the
transcript shows the three calls and the answer, and dsh rc.8 loads the log the app wrote with the
same surface and derived messages."""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core import JsonlSessionStore
from core.agent.wire import wire_messages
from tests.conftest import say_assistant, say_user
from tests.support.rc8 import NODE, dsh
from tests.test_terminal import TMUX, Terminal, app_env
from tests.test_tool_turns import Plan

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

PLAN: Plan = [
    ("call_search", "search_sessions", '{"query": "wombat"}'),
    ("call_reference", "reference_session", '{"session": "long-design"}'),
    ("call_read", "read_session", '{"session": "long-design", "from_message": 150, "to_message": 152}'),
    "Message 150 holds the wombat decision: keep the log.",
]


def _sse(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return f"data: {json.dumps({'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]})}\n\n".encode()


class _Scripted(BaseHTTPRequestHandler):
    plan: Plan = PLAN
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).bodies.append(body)
        step = self.plan[min(len(self.bodies) - 1, len(self.plan) - 1)]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        if isinstance(step, str):
            for word in step.split(" "):
                self.wfile.write(_sse({"content": word + " "}))
            self.wfile.write(_sse({}, "stop"))
        else:
            call_id, name, arguments = step
            opening = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            self.wfile.write(_sse({"tool_calls": [opening]}))
            for start in range(0, len(arguments), 9):
                self.wfile.write(
                    _sse({"tool_calls": [{"index": 0, "function": {"arguments": arguments[start : start + 9]}}]})
                )
            self.wfile.write(_sse({}, "tool_calls"))
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *_args: Any) -> None:
        pass


def _store(root: Path) -> None:
    store = JsonlSessionStore(root)
    design = store.create("long-design", cwd="/work/app", created_at=1_790_000_000_000)
    for index in range(150):
        say_user(design, f"question {index}: " + "why a log? " * 40 + (" the wombat decision" if index == 75 else ""))
        say_assistant(design, f"answer {index}: " + "because fsync. " * 40)
    design.append("session/title", {"title": "Long design", "messageSeqs": [0], "source": "user"})
    today = store.create("today", cwd="/work/app", created_at=1_790_000_100_000)
    today.append("session/title", {"title": "Today", "messageSeqs": [], "source": "user"})
    store.close()


def test_one_turn_searches_references_and_reads_in_a_real_terminal(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _store(root)
    _Scripted.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    command = [sys.executable, "-m", "tui.cli", "--root", str(root), "--cwd", "/work/app", "--session", "today",
               "--model", "openai", "--base-url", url, "--model-name", "deepseek-chat", "--no-external"]  # fmt: skip
    terminal = Terminal(command, {**app_env(tmp_path), "DEEPSEEK_API_KEY": "sk-terminal"})
    try:
        terminal.wait_for(lambda s: "Prompt" in s and "Long design" in s)
        terminal.send("what did we decide about the wombat?", literal=True)
        terminal.send("Enter")
        screen = terminal.wait_for(lambda s: "Message 150 holds the wombat decision" in s, timeout=30)
        assert '· search_sessions · "wombat" ·' in screen
        assert re.search(r"· reference_session · Long design · 6\d\.\d KiB", screen), screen
        assert "· read_session · Long design · messages" in screen and "150–151 of 300" in screen
        terminal.quit()
    finally:
        terminal.close()
        server.shutdown()
    assert len(_Scripted.bodies) == 4 and [t["function"]["name"] for t in _Scripted.bodies[0]["tools"]] == [
        "search_sessions", "reference_session", "read_session"
    ]  # fmt: skip
    reader = JsonlSessionStore(root)
    _header, events = reader.read_log("today")
    session = reader.get("today")
    assert session is not None
    derived = session.derive_messages()
    nodes = [event.seq for event in session.surface()]
    reader.close()
    assert [e.type for e in events].count("tool/result") == 3
    assert [e.data["reason"] for e in events if e.type == "turn/end"] == [{"kind": "completed"}]
    if NODE is None:
        return
    loaded = dsh("load", root=str(root), compression="zstd", ids=["today"])["today"]
    assert loaded["inspect"]["ok"], loaded["inspect"]
    surface = dsh("surface", root=str(root), compression="zstd", id="today")
    assert surface["nodes"] == nodes
    assert [{"role": m["role"], "content": m["content"]} for m in surface["derived"]] == derived
    assert dsh("serialize", messages=surface["derived"])["messages"] == wire_messages(derived)
