"""``sessionref handoff`` to the real agents pinned in ``tests/interop``, each against a local stub of
its model's API: the first request the agent sends holds the briefing (the goal and the snapshot's
frame) and offers the sessionref tools; the stub then calls ``read_session`` for the oldest
messages, which the snapshot left out, and gets them back through ``sessionref mcp``.

Headless (``claude -p``, ``codex exec``, ``gemini -p``, ``opencode run``) here; interactively in
tmux in ``test_handoff_terminal.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core.folder.jsonl_store import JsonlSessionStore
from core.handoff.record import HANDOFF_EVENT
from tests import test_agents_mcp as mcp_stubs
from tests.support.rc8 import NODE
from tests.test_agents_mcp import CLAUDE, CODEX
from tests.test_agents_real import (
    GEMINI,
    OPENCODE,
    Script,
    _Gemini,
    _OpenAI,
    _said,
    gemini_environment,
    gemini_responses,
    needs_copilot,
)
from tests.test_agents_real import stub as agent_stub
from tests.test_mcp import say_assistant, say_user

REPO = Path(__file__).resolve().parent.parent
GOAL = "HANDOFF-GOAL finish the fsync decision"
FRAME = "<referenced-sessions>"
FIRST = "question 0: why a log?"
"""The oldest message: left out of the snapshot, read back with read_session."""
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"


def seed(root: Path, folder: Path) -> None:
    """A long session (200 messages, over its 64 KiB budget) in ``folder``, with a key in it."""
    store = JsonlSessionStore(root)
    design = store.create("design", cwd=str(folder), created_at=3)
    for index in range(100):
        say_user(design, f"question {index}: " + "why a log? " * 40)
        say_assistant(design, f"answer {index}: " + "because fsync. " * 40)
    say_user(design, "the key is sk-ant-api03-" + "a1B2c3D4e5" * 9 + "AA, keep it")
    design.append("session/title", {"title": "Storage design", "messageSeqs": [0], "source": "user"})
    store.close()


def _bin(tmp_path: Path, name: str, command: list[str]) -> str:
    """A folder with ``name`` on it running ``command`` (what an install puts on PATH); the PATH."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def handoff(tmp_path: Path, to: str, environment: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "handoff", "design", "--to", to, "--root", str(tmp_path / "store"),
         "--no-external", "--goal", GOAL, "--yes", "--headless", *more],
        cwd=work, env={**environment, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def setup(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    seed(tmp_path / "store", work)
    return work


def recorded(tmp_path: Path, to: str, headless: bool = True) -> None:
    """The source session's log notes the hand-off (an event dsh skips), its conversation unchanged."""
    store = JsonlSessionStore(tmp_path / "store")
    try:
        _header, events = store.read_log("design")
    finally:
        store.close()
    (note,) = [event for event in events if event.type == HANDOFF_EVENT]
    assert note.ignorable and note.surface_op is None
    assert (note.data["to"], note.data["goal"], note.data["headless"]) == (to, GOAL, headless)


def check_first(text: str, offered: list[str]) -> None:
    assert GOAL in text and FRAME in text and "</referenced-sessions>" in text
    assert "sk-ant-api03" not in text and "[redacted: anthropic-key]" in text
    assert FIRST not in text  # the oldest messages are past the budget
    for tool in ("search_sessions", "reference_session", "read_session"):
        assert any(name.endswith(tool) for name in offered), offered


# -- Codex: the Responses API ------------------------------------------------------------------------


READ = {"session": "design", "from_message": 0, "to_message": 2}
"""The stub's call: the oldest messages, which the snapshot left out."""


class _Responses(mcp_stubs._Responses):
    """Calls sessionref's ``read_session`` for the first messages, then answers DONE."""

    requests: list[dict[str, Any]] = []
    CALL = "read_session"
    ARGUMENTS = READ


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


def codex_home(tmp_path: Path, port: int) -> dict[str, str]:
    """The user's own Codex configuration: the stub as its provider, no sessionref in it."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"""model = "stub-model"
model_provider = "stub"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.stub]
name = "stub"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"
"""
    )
    assert NODE is not None
    path = _bin(tmp_path, "codex", [NODE, str(CODEX)])
    return {**os.environ, "PATH": path, "CODEX_HOME": str(home), "STUB_API_KEY": "stub", "HOME": str(tmp_path)}


@pytest.mark.skipif(_OPTIONAL and (NODE is None or not CODEX.exists()), reason="Codex is not installed (make interop)")
def test_handoff_to_codex_headless(tmp_path: Path) -> None:
    setup(tmp_path)
    _Responses.requests = []
    with serving(_Responses) as port:
        environment = codex_home(tmp_path, port)
        before = (tmp_path / "codex-home" / "config.toml").read_text()
        done = handoff(tmp_path, "codex", environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("DONE")
    codex_saw(_Responses.requests)
    assert (tmp_path / "codex-home" / "config.toml").read_text() == before  # the user's configuration, untouched
    recorded(tmp_path, "codex")


def codex_saw(requests: list[dict[str, Any]]) -> None:
    """Codex's model got the briefing with sessionref's tools first, and the omitted messages last."""
    first = requests[0]
    offered = _codex_tools(first)
    check_first(json.dumps(first["input"]), offered)
    assert any(name.startswith("mcp__sessionref") for name in offered), offered
    (output,) = [item for item in requests[-1]["input"] if item.get("type") == "function_call_output"]
    assert FIRST in json.dumps(output)  # what the snapshot left out, read through sessionref mcp


def _codex_tools(body: dict[str, Any]) -> list[str]:
    """Every tool name offered, namespaced ones (``mcp__sessionref`` holds ours) with their namespace."""
    names: list[str] = []

    def walk(value: Any, namespace: str) -> None:
        if isinstance(value, dict):
            name = value.get("name")
            if isinstance(name, str):
                names.append(f"{namespace}{name}")
            inner = f"{name}__" if isinstance(name, str) and value.get("type") == "namespace" else namespace
            for item in value.values():
                walk(item, inner)
        elif isinstance(value, list):
            for item in value:
                walk(item, namespace)

    walk(body.get("tools") or [], "")
    return names


# -- Claude Code: the Messages API --------------------------------------------------------------------


class _Messages(mcp_stubs._Messages):
    """Calls sessionref's ``read_session`` for the first messages while unanswered, else DONE."""

    requests: list[dict[str, Any]] = []
    TOOL = "mcp__sessionref__read_session"
    ARGUMENTS = READ


def claude_environment(tmp_path: Path, port: int) -> dict[str, str]:
    assert CLAUDE is not None
    return {
        **os.environ,
        "PATH": _bin(tmp_path, "claude", [str(CLAUDE)]),
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "stub",
        "ENABLE_TOOL_SEARCH": "false",
        "MCP_CONNECTION_NONBLOCKING": "false",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def claude_first(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """The first request that carries the conversation (Claude Code may ask for a title first)."""
    return next(body for body in requests if any(t.get("name") == _Messages.TOOL for t in body.get("tools", [])))


def read_back(body: dict[str, Any]) -> None:
    """The Messages request's last tool result is ``read_session``'s, with what the snapshot left out."""
    results = [
        part
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "tool_result"
    ]
    assert results and not results[-1].get("is_error") and FIRST in json.dumps(results[-1])


@pytest.mark.skipif(_OPTIONAL and CLAUDE is None, reason="Claude Code is not installed (make interop)")
def test_handoff_to_claude_code_headless(tmp_path: Path) -> None:
    setup(tmp_path)
    _Messages.requests = []
    with serving(_Messages) as port:
        done = handoff(tmp_path, "claude", claude_environment(tmp_path, port))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("DONE"), done.stdout + done.stderr
    first = claude_first(_Messages.requests)
    check_first(_said(first["messages"][0]["content"]), [tool["name"] for tool in first["tools"]])
    read_back(_Messages.requests[-1])
    assert (
        not (tmp_path / "home" / ".claude.json").exists()
        or "sessionref" not in (tmp_path / "home" / ".claude.json").read_text()
    )  # nothing of the user's configuration names our server
    recorded(tmp_path, "claude")


# -- Gemini CLI and opencode ----------------------------------------------------------------------------


class _Reader(Script):
    """Calls ``read_session`` for the first messages once it is offered, then answers."""

    def decide(self, users: list[str], answered: bool, tools: list[str]) -> tuple[str, str, dict[str, Any]] | None:
        reader = next((name for name in tools if name.endswith("read_session")), None)
        if reader is not None and not answered:
            return ("call", reader, READ)
        return None


@contextmanager
def reading(handler: type[_OpenAI]) -> Iterator[tuple[int, Script]]:
    with agent_stub(handler) as (port, script):
        script.__class__ = _Reader
        yield port, script


def gemini_saw(requests: list[dict[str, Any]]) -> None:
    """Gemini CLI's model got the briefing with sessionref's tools first, and the omitted messages."""
    first = requests[0]
    users = [
        _said([p for p in c.get("parts", []) if "text" in p]) for c in first["contents"] if c.get("role") == "user"
    ]
    offered = [d.get("name", "") for t in first.get("tools", []) for d in t.get("functionDeclarations", [])]
    check_first("\n".join(users), offered)
    assert FIRST in json.dumps(gemini_responses(requests))


def opencode_saw(requests: list[dict[str, Any]]) -> None:
    """opencode's model got the briefing with sessionref's tools, and the omitted messages."""
    first = next(body for body in requests if body.get("tools"))
    users = [_said(m.get("content")) for m in first["messages"] if m.get("role") == "user"]
    check_first("\n".join(users), [t.get("function", {}).get("name", "") for t in first["tools"]])
    results = [m for body in requests for m in body.get("messages", []) if m.get("role") == "tool"]
    assert FIRST in json.dumps(results)


def gemini_with_stub(tmp_path: Path, port: int) -> dict[str, str]:
    """The user's Gemini CLI (HOME in ``tmp_path``) on the stub, ``gemini`` on PATH."""
    environment = gemini_environment(tmp_path / "home", port)
    assert NODE is not None
    environment["PATH"] = _bin(tmp_path, "gemini", [NODE, str(GEMINI), "-m", "gemini-2.5-flash"])
    return environment


def opencode_with_stub(tmp_path: Path, work: Path, port: int) -> dict[str, str]:
    """The user's opencode (HOME in ``tmp_path``, its configuration naming the stub) in ``work``,
    ``opencode`` on PATH."""
    from tests.test_agents_real import opencode_config, opencode_environment

    home = tmp_path / "home"
    opencode_config(home, port)
    environment = opencode_environment(home, work)
    environment["PATH"] = _bin(tmp_path, "opencode", [str(OPENCODE)])
    return environment


@pytest.mark.skipif(_OPTIONAL and (NODE is None or not GEMINI.exists()), reason="Gemini CLI is not installed")
def test_handoff_to_gemini_cli_headless(tmp_path: Path) -> None:
    setup(tmp_path)
    home = tmp_path / "home"
    with reading(_Gemini) as (port, script):
        environment = gemini_with_stub(tmp_path, port)
        before = (home / ".gemini" / "settings.json").read_text()
        done = handoff(tmp_path, "gemini", environment)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    gemini_saw(script.requests)
    assert (home / ".gemini" / "settings.json").read_text() == before
    recorded(tmp_path, "gemini")


@pytest.mark.skipif(_OPTIONAL and OPENCODE is None, reason="opencode is not installed (make interop)")
def test_handoff_to_opencode_headless(tmp_path: Path) -> None:
    work = setup(tmp_path)
    home = tmp_path / "home"
    with reading(_OpenAI) as (port, script):
        environment = opencode_with_stub(tmp_path, work, port)
        before = (home / ".config" / "opencode" / "opencode.json").read_text()
        done = handoff(tmp_path, "opencode", environment)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    opencode_saw(script.requests)
    # opencode itself adds "$schema" to a configuration that lacks it; nothing of ours is in it.
    after = json.loads((home / ".config" / "opencode" / "opencode.json").read_text())
    after.pop("$schema", None)
    assert after == json.loads(before) and "sessionref" not in json.dumps(after)
    recorded(tmp_path, "opencode")


@needs_copilot
def test_handoff_to_copilot_cli_headless(tmp_path: Path) -> None:
    from tests.test_agents_real import COPILOT, copilot_environment

    setup(tmp_path)
    home = tmp_path / "home"
    with reading(_OpenAI) as (port, script):
        environment = copilot_environment(home, port)
        assert COPILOT is not None
        environment["PATH"] = _bin(tmp_path, "copilot", [str(COPILOT), "--no-auto-update"])
        done = handoff(tmp_path, "copilot", environment)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    opencode_saw(script.requests)  # (Chat Completions too: the same checks)
    # The server was this run's only: nothing of it in Copilot CLI's own configuration.
    assert "sessionref" not in "".join(p.read_text(errors="replace") for p in (home / ".copilot").rglob("*.json"))
    recorded(tmp_path, "copilot")
