"""CodeBuddy Code (the ``codebuddy`` CLI inside npm ``@tencent-ai/agent-sdk``, pinned in
``tests/interop``), run offline against a local stub of an OpenAI-compatible API named in
``~/.codebuddy/models.json``: a plain chat, a continued turn calling its ``Glob`` tool, a continued
turn with hostile text, a second session, then its own ``/compact``. sessionref lists what it wrote
with its folder, finds it by a word through ``sessionref mcp --codebuddy-root`` and references it.
Then the file's corners, in items shaped as CodeBuddy writes them: titles, a sidechain, injected
reminders, odd values, links out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.codebuddy import CodeBuddySource, codebuddy_root
from tests.support.rc8 import NODE
from tests.test_agents_real import (
    HOSTILE,
    MODULES,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)

CODEBUDDY = MODULES / "@tencent-ai" / "agent-sdk" / "cli" / "bin" / "codebuddy"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_codebuddy = pytest.mark.skipif(
    _OPTIONAL and not (CODEBUDDY.exists() and NODE is not None), reason="CodeBuddy Code is not installed (make interop)"
)


def codebuddy(home: Path, work: Path, port: int, *arguments: str, path: str | None = None) -> str:
    models = home / ".codebuddy" / "models.json"
    models.parent.mkdir(parents=True, exist_ok=True)
    model = {
        "id": "stub-model",
        "name": "Stub",
        "vendor": "OpenAI",
        "apiKey": "stub",
        "maxInputTokens": 100000,
        "maxOutputTokens": 4096,
        "url": f"http://127.0.0.1:{port}/v1/chat/completions",
        "supportsToolCall": True,
    }
    models.write_text(json.dumps({"models": [model]}))
    environment = base_environment(home) | ({"PATH": path} if path is not None else {})
    return run([str(NODE), str(CODEBUDDY), "-p", "--model", "stub-model", *arguments], work, environment)


def _texts(source: CodeBuddySource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_codebuddy
def test_codebuddy_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        codebuddy(home, work, port, "CB-MARK-1 hello, what is a wombat?")
        codebuddy(home, work, port, "-c", "-y", "CB-MARK-2 please USE A TOOL to list the files")
        codebuddy(home, work, port, "-c", f"CB-MARK-3 continued. {HOSTILE}")
        codebuddy(home, work, port, "a second session about quokkas")
    assert tool_turn_made(script)
    folder = home / ".codebuddy"
    source = CodeBuddySource(folder)
    ids = check_sessions(source, "CB", work)
    assert len(ids) == 2
    (quokka,) = [i for i in ids if "quokkas" in _texts(source, i)[0]]
    check_search("--codebuddy-root", folder, "quokkas", quokka, tmp_path)


@needs_codebuddy
def test_codebuddy_s_own_compaction_is_a_checkpoint(tmp_path: Path) -> None:
    # /compact asks the model for a summary (the stub answers "ANSWER CB-MARK-2"), written as a
    # message pair of its "compact" agent.
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, _script):
        codebuddy(home, work, port, "CB-MARK-1 a first turn")
        codebuddy(home, work, port, "-c", "CB-MARK-2 a second turn")
        codebuddy(home, work, port, "-c", "/compact")
        codebuddy(home, work, port, "-c", "CB-MARK-3 after the compaction")
    source = CodeBuddySource(home / ".codebuddy")
    (record,) = source.listing()
    snapshot = source.surface(record.header.id)
    compacted = [e for e in snapshot.events if e.data.get("source") == {"kind": "plugin", "plugin": "compact"}]
    assert len(compacted) == 1 and snapshot.events[0] is compacted[0]
    assert _texts(source, record.header.id)[1:] == ["CB-MARK-3 after the compaction", "ANSWER CB-MARK-3"]


# -- the file's corners ------------------------------------------------------------------------------------

SESSION = "68e9aa44-3330-40f8-a46e-891b3d63d571"


def _item(role: str, text: str, agent: str = "cli", **more: Any) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"id": "c1", "timestamp": 1_796_671_228_813, "type": "message", "role": role,
            "content": [{"type": kind, "text": text}], "providerData": {"agent": agent},
            "sessionId": SESSION, "cwd": "/work/cb", **more}  # fmt: skip


def _session(root: Path, items: list[Any], name: str = SESSION) -> Path:
    path = root / "projects" / "work-cb" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def test_what_codebuddy_wrote_is_read_in_order(tmp_path: Path) -> None:
    root = tmp_path / ".codebuddy"
    _session(
        root,
        [
            _item("user", "first question"),
            {"type": "file-history-snapshot", "id": "s", "snapshot": {}, "cwd": "/work/cb"},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<system-reminder>x</system-reminder>"}],
            },
            {"type": "function_call", "id": "c1", "name": "Glob", "arguments": "{}"},
            {"type": "function_call_result", "name": "Glob", "output": {"type": "text", "text": "SECRET-TOOL-OUTPUT"}},
            {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "hmm"}]},
            _item("assistant", "an answer", timestamp=1_796_671_229_000),
            _item("user", "a sidechain's prompt", isSidechain=True),
            {"type": "ai-title", "aiTitle": "Wombat facts", "sessionId": SESSION},
            "not an item",
            {"type": 5},
            _item("user", "second question", timestamp="noon"),
            _item("assistant", "second answer"),
        ],
    )
    source = CodeBuddySource(root)
    (record,) = source.listing()
    assert record.header.id == f"codebuddy:{SESSION}" and record.header.cwd == "/work/cb"
    assert record.header.created_at == 1_796_671_228_813
    assert _texts(source, record.header.id) == ["first question", "an answer", "second question", "second answer"]
    assert source.title(record.header.id).title == "Wombat facts"  # type: ignore[union-attr]


def test_titles_custom_first_and_links_out_are_not_read(tmp_path: Path) -> None:
    root = tmp_path / ".codebuddy"
    _session(
        root,
        [
            _item("user", "first question"),
            {"type": "custom-title", "customTitle": "Renamed by the user"},
            {"type": "ai-title", "aiTitle": "A model's title"},
        ],
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f6c2f1d4-0000-4000-8000-000000000000.jsonl").write_text(json.dumps(_item("user", "SECRET")) + "\n")
    (root / "projects" / "linked").symlink_to(outside)
    (root / "projects" / "work-cb" / "f6c2f1d4-0000-4000-8000-000000000001.jsonl").symlink_to(
        outside / "f6c2f1d4-0000-4000-8000-000000000000.jsonl"
    )
    source = CodeBuddySource(root)
    (record,) = source.listing()
    assert source.title(record.header.id).title == "Renamed by the user"  # type: ignore[union-attr]


def test_codebuddy_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODEBUDDY_CONFIG_DIR", str(tmp_path / "cb"))
    assert codebuddy_root() == tmp_path / "cb"
    monkeypatch.delenv("CODEBUDDY_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert codebuddy_root() == tmp_path / ".codebuddy"


@needs_codebuddy
def test_codebuddy_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    # CodeBuddy Code defers an MCP server's tools: its model runs one through DeferExecuteTool.
    from tests.test_agents_real import _said, docs_block, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    block = docs_block('"mcpServers": { "sessionref": { "type": "stdio"')  # docs/mcp.md's, as written
    (home / ".codebuddy.json").write_text(json.dumps(block))
    with stub(_OpenAI) as (port, script):
        codebuddy(home, work, port, "-y", "CB-MARK-9 REFERENCE DESIGN please", path=path)
    called = [
        json.loads(call["function"]["arguments"])
        for body in script.requests
        for message in body.get("messages", [])
        for call in message.get("tool_calls") or []
        if call.get("function", {}).get("name") == "DeferExecuteTool"
    ]
    assert any(str(call.get("toolName")).endswith("reference_session") for call in called), called
    results = [_said(message.get("content")) for message in tool_messages(script)]
    assert any(snapshot(root) in result for result in results), [(len(r), r[:200]) for r in results]
