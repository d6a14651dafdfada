"""Continue's CLI (``cn``, ``@continuedev/cli``, pinned in ``tests/interop``), run offline against a
local stub of an OpenAI-compatible API named in its ``config.yaml``: a plain chat, a turn with a tool
call, resumes and hostile text, then its own compaction. sessionref lists what it wrote with its
folder, finds it by a word through ``sessionref mcp --continue-root`` and references it. ``cn`` also
runs ``sessionref mcp`` itself, configured as docs/mcp.md says. Then the format's corners, with files
shaped as ``cn`` writes them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from core import project_conversation
from core.sessions.sources.continue_cli import SESSION_BYTES, ContinueSource, continue_root
from tests.support.rc8 import INTEROP, NODE
from tests.test_agents_real import (
    HOSTILE,
    REPO,
    _OpenAI,
    _said,
    base_environment,
    check_search,
    check_sessions,
    offered_tools,
    run,
    sessionref_on_path,
    setup_work,
    stub,
    tool_messages,
    tool_turn_made,
)
from tests.test_mcp import snapshot

CN = INTEROP / "node_modules" / "@continuedev" / "cli" / "dist" / "cn.js"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_cn = pytest.mark.skipif(
    _OPTIONAL and (NODE is None or not CN.exists()), reason="Continue's CLI is not installed (make interop)"
)


def cn(home: Path, work: Path, port: int, *arguments: str, more: dict[str, Any] | None = None, path: str = "") -> str:
    """``cn`` with ``config.yaml`` naming the stub as its one model (``more``: other keys)."""
    assert NODE is not None
    config = home / ".continue" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    model: dict[str, Any] = {
        "name": "Stub",
        "provider": "openai",
        "model": "stub-model",
        "apiBase": f"http://127.0.0.1:{port}/v1",
        "apiKey": "stub",
        "roles": ["chat", "edit", "apply"],
        "capabilities": ["tool_use"],
        **(more or {}).get("model", {}),
    }
    others = {key: value for key, value in (more or {}).items() if key != "model"}
    config.write_text(yaml.safe_dump({"name": "Stub", "version": "1.0.0", "schema": "v1", "models": [model], **others}))
    environment = {**base_environment(home), "CONTINUE_TELEMETRY_ENABLED": "0"}
    if path:
        environment["PATH"] = path
    return run([NODE, str(CN), "--config", str(config), "--auto", *arguments], work, environment)


@needs_cn
def test_continue_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        cn(home, work, port, "-p", "CN-MARK-1 hello, what is a wombat?")
        cn(home, work, port, "--resume", "-p", "CN-MARK-2 please USE A TOOL to list the files")
        cn(home, work, port, "--resume", "-p", f"CN-MARK-3 resumed. {HOSTILE}")
        cn(home, work, port, "-p", "a second session about quokkas")
    assert tool_turn_made(script)
    folder = home / ".continue"
    source = ContinueSource(folder)
    ids = check_sessions(source, "CN", work)
    assert len(ids) == 2
    (quokka,) = [i for i in ids if source.session(i).title == "a second session about quokkas"]
    check_search("--continue-root", folder, "quokkas", quokka, tmp_path)


@needs_cn
def test_continue_s_own_compaction_is_a_checkpoint(tmp_path: Path) -> None:
    # A 6,000-token window: the second prompt's 3,000 words make cn compact its history, asking the
    # stub for the summary; the history is then the summary and what follows.
    home, work = setup_work(tmp_path)
    window = {"model": {"defaultCompletionOptions": {"contextLength": 6000, "maxTokens": 100}}}
    with stub(_OpenAI) as (port, _script):
        cn(home, work, port, "-p", "CC-MARK-1 hello", more=window)
        cn(home, work, port, "--resume", "-p", "CC-MARK-2 " + "wombat burrow " * 1500, more=window)
        cn(home, work, port, "--resume", "-p", "CC-MARK-3 after the summary", more=window)
    source = ContinueSource(home / ".continue")
    (record,) = source.listing()
    (written,) = (home / ".continue" / "sessions").glob("*-*.json")
    history = json.loads(written.read_text())["history"]
    assert "conversationSummary" in history[0]
    events = source.surface(record.header.id).events
    assert events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    said = [event.data["content"][0]["text"] for event in events]
    assert said[0] == history[0]["conversationSummary"] and said[-2:] == [
        "CC-MARK-3 after the summary",
        "ANSWER CC-MARK-3",
    ]
    assert not any("CC-MARK-2" in text for text in said)  # (compacted away, as cn itself sends it)


def docs_yaml(needle: str) -> dict[str, Any]:
    """The YAML block of docs/mcp.md that holds ``needle``, parsed as written."""
    page = (REPO / "docs" / "mcp.md").read_text()
    (block,) = [text for text in re.findall(r"```yaml\n(.*?)```", page, re.S) if needle in text]
    parsed: dict[str, Any] = yaml.safe_load(block)
    return parsed


@needs_cn
def test_continue_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    with stub(_OpenAI) as (port, script):
        out = cn(home, work, port, "-p", "REFERENCE DESIGN please", more=docs_yaml("mcpServers"), path=path)
    assert "ANSWER" in out
    offered = offered_tools(script)
    assert "reference_session" in offered, offered
    results = tool_messages(script)
    # cn passes an MCP result on as the JSON of its content blocks: the snapshot is inside, whole.
    blocks = [json.loads(_said(m.get("content"))) for m in results]
    assert any(block[0]["text"].endswith("\n\n" + snapshot(root)) for block in blocks)


# -- the format's corners -------------------------------------------------------------------------------

SID = "28ab63df-f623-41a0-a4b0-6276f0fb0313"


def _item(role: str, text: str, **more: Any) -> dict[str, Any]:
    return {"message": {"role": role, "content": text}, "contextItems": [], **more}


def _session(root: Path, history: list[Any], *, index: list[Any] | None = None, **more: Any) -> Path:
    folder = root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    session = {"sessionId": SID, "title": "Untitled Session", "workspaceDirectory": "/work/cn", "history": history}
    path = folder / f"{SID}.json"
    path.write_text(json.dumps({**session, **more}))
    if index is not None:
        (folder / "sessions.json").write_text(json.dumps(index))
    return path


def test_the_index_gives_time_and_folder_a_file_uri_is_a_path_and_a_placeholder_is_no_title(tmp_path: Path) -> None:
    # The IDE extensions write a folder as a file:// URI; sessions.json's dateCreated is text.
    entry = {
        "sessionId": SID,
        "title": "x",
        "dateCreated": "1796573547961",
        "workspaceDirectory": "file:///work/my%20app",
    }
    history = [
        _item("system", "you are an agent"),
        {"message": {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "imageUrl"}]}},
        _item("thinking", "hmm"),
        _item("assistant", "", toolCalls=[{"id": "c", "type": "function"}]),
        _item("tool", "SECRET-TOOL-OUTPUT"),
        _item("assistant", "the answer"),
    ]
    _session(tmp_path, history, index=[entry])
    source = ContinueSource(tmp_path)
    (record,) = source.listing()
    assert (record.header.cwd, record.header.created_at) == ("/work/my app", 1796573547961)
    assert [item.text for item in project_conversation(source.surface(record.header.id))] == ["first", "the answer"]
    assert source.session(record.header.id).title == "first"


def test_a_session_missing_from_the_index_is_read_from_its_file_and_odd_ones_are_problems(tmp_path: Path) -> None:
    path = _session(tmp_path, [_item("user", "unindexed"), "not an item", {"message": 5}], title="Named")
    (tmp_path / "sessions" / "sessions.json").write_text('[1, {"sessionId": 3}]')  # (nothing usable)
    (tmp_path / "sessions" / "broken.json").write_text("{")
    source = ContinueSource(tmp_path)
    (record,) = source.listing()
    session = source.session(record.header.id)
    assert session.title == "Named" and session.problems == 2
    assert [event.data["content"][0]["text"] for event in session.events] == ["unindexed"]
    assert record.header.created_at == path.stat().st_mtime_ns // 1_000_000
    assert [problem.path.name for problem in source.problems] == ["broken.json"]


def test_an_oversized_file_is_its_own_problem_and_no_link_is_followed(tmp_path: Path) -> None:
    big = tmp_path / "sessions" / "big.json"
    big.parent.mkdir(parents=True)
    with open(big, "wb") as handle:
        handle.truncate(SESSION_BYTES + 1)  # (sparse: a file of zeros past the bound)
    outside = _session(tmp_path / "elsewhere", [_item("user", "outside")])
    (tmp_path / "sessions" / "linked.json").symlink_to(outside)
    source = ContinueSource(tmp_path)
    assert source.listing() == []
    assert sorted(problem.path.name for problem in source.problems) == ["big.json", "linked.json"]


def test_its_folder_follows_continue_s_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert continue_root() == tmp_path / ".continue"
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(tmp_path / "cont"))
    assert continue_root() == tmp_path / "cont"
