"""``sessionref mcp`` inside Qwen Code and GitHub Copilot CLI, each configured with its own ``mcp add``
as docs/mcp.md says, offline against the stub: the model references the design session and the
snapshot comes back. Qwen Code defers an MCP server's tools: its model finds one with ``tool_search``
and calls it through ``tool_call``. Also ``sessionref handoff --to qwen``, whose run has the server
through an overlay of Qwen Code's settings folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.rc8 import NODE
from tests.test_agents_real import (
    COPILOT,
    QWEN,
    Script,
    _OpenAI,
    _said,
    copilot_environment,
    docs_command,
    needs_copilot,
    needs_qwen,
    offered_tools,
    qwen_environment,
    run,
    sessionref_on_path,
    setup_work,
    stub,
    tool_messages,
)
from tests.test_mcp import snapshot


class Deferred(Script):
    """The stub as a model whose MCP tools are deferred (Qwen Code): it reviews the tool with
    ``tool_search``, then calls it with ``tool_call`` (``self.call``: its name and arguments)."""

    call: tuple[str, dict[str, Any]] = ("mcp__sessionref__reference_session", {"session": "design"})

    def decide(self, users: list[str], answered: bool, tools: list[str]) -> tuple[str, str, dict[str, Any]] | None:
        results = sum(1 for m in self.requests[-1].get("messages", []) if m.get("role") == "tool")
        if "tool_call" not in tools or results > 1:
            return None
        name, arguments = self.call
        if results == 0:
            return ("call", "tool_search", {"query": f"select:{name}"})
        return ("call", "tool_call", {"name": name, "arguments": arguments})


@needs_qwen
def test_qwen_code_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    assert NODE is not None
    with stub(_OpenAI) as (port, script):
        script.__class__ = Deferred
        environment = {**qwen_environment(home, port), "PATH": path}
        run([NODE, str(QWEN), *docs_command("qwen")], work, environment)
        # docs/mcp.md's threshold, beside the server the command wrote.
        settings = home / ".qwen" / "settings.json"
        written = json.loads(settings.read_text())
        assert written["mcpServers"]["sessionref"]["trust"] is True
        settings.write_text(json.dumps({**written, "tools": {"truncateToolOutputThreshold": 200000}}))
        run([NODE, str(QWEN), "--yolo", "-p", "REFERENCE DESIGN please"], work, environment)
    reminder = " ".join(_said(m.get("content")) for m in script.requests[0]["messages"])
    for tool in ("search_sessions", "reference_session", "read_session"):
        assert f"mcp__sessionref__{tool}" in reminder  # (deferred: named to the model, not declared)
    last = script.requests[-1]["messages"]
    (_reviewed, result) = [_said(m.get("content")) for m in last if m.get("role") == "tool"]
    assert result.endswith("\n\n" + snapshot(root)), result[-300:]  # whole


@needs_copilot
def test_copilot_cli_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    # Copilot CLI keeps a tool result over about 20 KB out of the conversation (a temporary file its
    # model is pointed to): docs/mcp.md's smaller reference budget keeps the snapshot in it, whole.
    home, work = setup_work(tmp_path)
    path, _root = sessionref_on_path(tmp_path, home)
    config = home / ".config" / "sessionref" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[reference]\nmax_reference_bytes = 20000\n")
    assert COPILOT is not None
    with stub(_OpenAI) as (port, script):
        environment = {**copilot_environment(home, port), "PATH": path}
        run([str(COPILOT), *docs_command("copilot")], work, environment)
        run([str(COPILOT), "--allow-all-tools", "--no-auto-update", "-p", "REFERENCE DESIGN please"], work, environment)
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    (result,) = {_said(m.get("content")) for m in tool_messages(script)}
    assert result.startswith('Session "design" has 200 messages') and result.endswith("</referenced-sessions>")
    assert "sessionref" in json.dumps(json.loads((home / ".copilot" / "mcp-config.json").read_text()))


@needs_qwen
def test_handoff_to_qwen_code_headless(tmp_path: Path) -> None:
    from tests.test_handoff_agents import FIRST, GOAL, READ, _bin, check_first, handoff, recorded, setup

    setup(tmp_path)
    home = tmp_path / "home"
    settings = home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"general": {"checkpointing": {"enabled": False}}}))
    assert NODE is not None
    with stub(_OpenAI) as (port, script):
        script.__class__ = Deferred
        script.call = ("mcp__sessionref__read_session", READ)  # type: ignore[attr-defined]
        environment = {**qwen_environment(home, port), "PATH": _bin(tmp_path, "qwen", [NODE, str(QWEN), "--yolo"])}
        done = handoff(tmp_path, "qwen", environment)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    first = script.requests[0]["messages"]
    said = "\n".join(_said(m.get("content")) for m in first if m.get("role") == "user")
    check_first(said, [name for name in said.split('"') if name.startswith("mcp__sessionref__")])
    assert GOAL in said
    results = [_said(m.get("content")) for m in script.requests[-1]["messages"] if m.get("role") == "tool"]
    assert FIRST in results[-1]  # what the snapshot left out, read through sessionref mcp
    # Its settings stay the user's; the conversation it wrote is where Qwen Code keeps them.
    assert json.loads(settings.read_text()) == {"general": {"checkpointing": {"enabled": False}}}
    assert list((home / ".qwen" / "projects").rglob("*.jsonl"))
    recorded(tmp_path, "qwen")
