"""Real agents use ``sessionref mcp``, each pinned in ``tests/interop`` and pointed at a local stub of
its model's API:

- Codex CLI (``@openai/codex``) runs ``codex exec`` with sessionref in its ``[mcp_servers]``; the stub
  speaks the Responses API.
- Claude Code (``@anthropic-ai/claude-code``, its native binary) runs ``claude -p`` with sessionref
  from ``--mcp-config``, and from ``claude mcp add`` as the docs say; the stub speaks the Messages API.

The stub asks for a ``reference_session`` call; the agent makes it through our server and sends the
result back, which must be the snapshot ``prepare`` gives, whole."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.rc8 import INTEROP, NODE
from tests.test_mcp import _store, snapshot

REPO = Path(__file__).resolve().parent.parent
CODEX = INTEROP / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
# npm ci --ignore-scripts leaves the package's own bin a placeholder; the native binary is its
# platform package (the one that matches this machine is the one npm installed).
CLAUDE = next(iter(sorted((INTEROP / "node_modules" / "@anthropic-ai").glob("claude-code-linux-*/claude"))), None)

# SESSIONREF_REQUIRE_INTEROP=1 (CI) runs them anyway, so a missing install fails instead of skipping.
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_codex = pytest.mark.skipif(
    _OPTIONAL and (NODE is None or not CODEX.exists()), reason="the interop packages are not installed (make interop)"
)
needs_claude = pytest.mark.skipif(_OPTIONAL and CLAUDE is None, reason="Claude Code is not installed (make interop)")


class _Responses(BaseHTTPRequestHandler):
    """A Responses API model: it calls ``CALL`` (of sessionref's namespace) first, then answers DONE."""

    requests: list[dict[str, Any]] = []
    CALL = "reference_session"
    ARGUMENTS: dict[str, Any] = {"session": "design"}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).requests.append(body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        answered = any(item.get("type") == "function_call_output" for item in body.get("input", []))
        if answered:
            item: dict[str, Any] = {"type": "message", "role": "assistant", "id": "msg_1",
                                    "content": [{"type": "output_text", "text": "DONE"}]}  # fmt: skip
        else:
            item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": self.CALL,
                    "namespace": "mcp__sessionref", "arguments": json.dumps(self.ARGUMENTS)}  # fmt: skip
        number = len(self.requests)
        for kind, data in (
            ("response.created", {"response": {"id": f"resp_{number}"}}),
            ("response.output_item.done", {"item": item, "output_index": 0}),
            ("response.completed", {"response": {"id": f"resp_{number}",
                                                 "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}),
        ):  # fmt: skip
            self.wfile.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

    def log_message(self, *_args: Any) -> None:
        pass


@needs_codex
def test_codex_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _store(root)
    _Responses.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Responses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        f"""model = "stub-model"
model_provider = "stub"
tool_output_token_limit = 40000
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.stub]
name = "stub"
base_url = "http://127.0.0.1:{server.server_address[1]}/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"

[mcp_servers.sessionref]
command = {json.dumps(sys.executable)}
args = ["-m", "tui.cli", "mcp", "--root", {json.dumps(str(root))}, "--no-external"]
env = {{ PYTHONPATH = {json.dumps(str(REPO))} }}
required = true
"""
    )
    environment = {**os.environ, "CODEX_HOME": str(home), "STUB_API_KEY": "stub", "HOME": str(tmp_path)}
    assert NODE is not None
    try:
        done = subprocess.run(
            [NODE, str(CODEX), "exec", "--skip-git-repo-check", "reference the design session"],
            cwd=work, env=environment, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp: sessionref/reference_session (completed)" in done.stdout + done.stderr
    assert done.stdout.strip().endswith("DONE")
    # Codex offered our server's tools as one namespace, and sent the snapshot back as the call's output.
    offered = json.dumps(_Responses.requests[0].get("tools"))
    assert "mcp__sessionref" in offered and "reference_session" in offered
    (output,) = [item for item in _Responses.requests[-1]["input"] if item.get("type") == "function_call_output"]
    texts = [part["text"] for part in output["output"] if part.get("type") == "input_text"]
    # Whole: tool_output_token_limit lets a 64 KiB snapshot through uncut.
    assert any(text.endswith("\n\n" + snapshot(root)) for text in texts)


_CLAUDE_TOOL = "mcp__sessionref__reference_session"


class _Messages(BaseHTTPRequestHandler):
    """A Messages API model: while sessionref's tool ``TOOL`` is offered and unanswered it calls it, else DONE."""

    requests: list[dict[str, Any]] = []
    TOOL = _CLAUDE_TOOL
    ARGUMENTS: dict[str, Any] = {"session": "design"}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if "count_tokens" in self.path:
            self._send("application/json", json.dumps({"input_tokens": 10}).encode())
            return
        type(self).requests.append(body)
        call = self.call(body)
        if call is not None:
            name, arguments = call
            number = len(type(self).requests)
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{number}", "name": name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
            stop = "tool_use"
        else:
            block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": "DONE"}, "end_turn"
        events: tuple[tuple[str, dict[str, Any]], ...] = (
            ("message_start", {"message": {"id": "msg_1", "type": "message", "role": "assistant",
                                           "model": body.get("model"), "content": [], "stop_reason": None,
                                           "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ("content_block_start", {"index": 0, "content_block": block}),
            ("content_block_delta", {"index": 0, "delta": delta}),
            ("content_block_stop", {"index": 0}),
            ("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 1}}),
            ("message_stop", {}),
        )  # fmt: skip
        self._send(
            "text/event-stream",
            b"".join(
                f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode() for kind, data in events
            ),
        )

    def call(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The tool this turn calls, with its arguments; None answers DONE."""
        offered = any(tool.get("name") == self.TOOL for tool in body.get("tools", []))
        return (self.TOOL, self.ARGUMENTS) if offered and not called(body, self.TOOL) else None

    def _send(self, kind: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        pass


def called(body: dict[str, Any], name: str) -> bool:
    """Whether the conversation of a Messages request already holds a call of the tool ``name``."""
    return any(
        isinstance(part, dict) and part.get("type") == "tool_use" and part.get("name") == name
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def _claude(tmp_path: Path, port: int, *arguments: str) -> subprocess.CompletedProcess[str]:
    assert CLAUDE is not None, "no Claude Code native binary in tests/interop (make interop)"
    work, bin_folder = tmp_path / "work", tmp_path / "bin"
    work.mkdir(exist_ok=True)
    if not bin_folder.exists():  # what an install puts on PATH
        bin_folder.mkdir()
        (bin_folder / "sessionref").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m tui.cli "$@"\n')
        (bin_folder / "sessionref").chmod(0o755)
    environment = {
        **os.environ,
        "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "home" / ".local" / "share"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "stub",
        "ENABLE_TOOL_SEARCH": "false",  # offer MCP tools up front, not behind a search tool
        # Wait for the servers of the user's configuration before the first request (--mcp-config ones
        # are waited for anyway): else under load the turn starts before sessionref answers.
        "MCP_CONNECTION_NONBLOCKING": "false",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "PYTHONPATH": str(REPO),
    }
    return subprocess.run(
        [str(CLAUDE), *arguments], cwd=work, env=environment, capture_output=True, text=True, timeout=180
    )


def _claude_turn(tmp_path: Path, port: int, *configuration: str, root: Path) -> None:
    _Messages.requests = []
    done = _claude(
        tmp_path, port, "-p", "reference the design session", *configuration,
        "--allowedTools", _CLAUDE_TOOL, "--output-format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert (result["is_error"], result["result"], result["permission_denials"]) == (False, "DONE", [])
    offered = {tool["name"] for tool in _Messages.requests[0]["tools"]}
    assert {_CLAUDE_TOOL, "mcp__sessionref__search_sessions", "mcp__sessionref__read_session"} <= offered
    (answer,) = [
        part
        for part in _Messages.requests[-1]["messages"][-1]["content"]
        if isinstance(part, dict) and part.get("type") == "tool_result"
    ]
    # In the conversation, whole: anthropic/maxResultSizeChars keeps Claude Code from saving a
    # 64 KiB snapshot to a file and showing the model 2 KB of it.
    assert not answer.get("is_error")
    (text,) = [part["text"] for part in answer["content"]]
    assert text.startswith('Session "design" has 200 messages') and text.endswith("\n\n" + snapshot(root))


@needs_claude
def test_claude_code_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    _store(tmp_path / "store")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Messages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    command = {
        "command": sys.executable,
        "args": ["-m", "tui.cli", "mcp", "--root", str(tmp_path / "store"), "--no-external"],
    }
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"sessionref": command}}))
    try:
        _claude_turn(
            tmp_path, server.server_address[1], "--mcp-config", str(tmp_path / "mcp.json"), "--strict-mcp-config",
            root=tmp_path / "store",
        )  # fmt: skip
        # The docs' line exactly, with a sessionref on PATH and its default store: a plain claude -p
        # (in this project) finds the server, and references from that store.
        docs_line = re.search(
            r"^claude (mcp add sessionref -- sessionref mcp)$", (REPO / "docs" / "mcp.md").read_text(), re.M
        )
        assert docs_line is not None
        default = tmp_path / "home" / ".local" / "share" / "sessionref" / "sessions"
        _store(default)
        added = _claude(tmp_path, server.server_address[1], *docs_line.group(1).split())
        assert added.returncode == 0, added.stdout + added.stderr
        listed = _claude(tmp_path, server.server_address[1], "mcp", "get", "sessionref")
        assert "Connected" in listed.stdout and "Command: sessionref" in listed.stdout, listed.stdout + listed.stderr
        _claude_turn(tmp_path, server.server_address[1], root=default)
    finally:
        server.shutdown()


@needs_codex
def test_the_docs_codex_configuration_parses_with_codex_itself(tmp_path: Path) -> None:
    """docs/mcp.md's TOML, exactly as shown, read by ``codex mcp list``: one stdio server, sessionref mcp."""
    page = (REPO / "docs" / "mcp.md").read_text()
    (toml,) = re.findall(r"```toml\n(.*?)```", page, re.S)
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(toml)
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(CODEX), "mcp", "list", "--json"],
        env={**os.environ, "CODEX_HOME": str(home), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (server,) = json.loads(done.stdout)
    assert (server["name"], server["enabled"]) == ("sessionref", True)
    assert server["transport"] == {
        "type": "stdio", "command": "sessionref", "args": ["mcp"], "env": None, "env_vars": [], "cwd": None
    }  # fmt: skip
