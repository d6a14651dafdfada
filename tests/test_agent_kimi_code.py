"""Kimi Code (npm ``@moonshot-ai/kimi-code``, pinned in ``tests/interop``, on Node 24), run offline
against a local stub of an OpenAI-compatible API named by its environment (``KIMI_MODEL_*``): a plain
chat, a turn calling its ``Glob`` tool, resumed sessions (``-c``) and hostile text. sessionref lists
what it wrote with its folder, finds it by a word through ``sessionref mcp --kimicode-root`` and
references it. Then the journal's corners, in records shaped as Kimi Code writes them: a compaction, a
clear, an undo, injected reminders, a sub-agent's journal, an archived session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.kimi_code import KimiCodeSource, kimi_code_root
from tests.test_agents_real import (
    HOSTILE,
    MODULES,
    NODE24,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)

KIMI_CODE = MODULES / "@moonshot-ai" / "kimi-code" / "dist" / "main.mjs"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_kimi_code = pytest.mark.skipif(
    _OPTIONAL and not (KIMI_CODE.exists() and NODE24.exists()), reason="Kimi Code is not installed (make interop)"
)


def kimi_code(home: Path, work: Path, port: int, *arguments: str) -> str:
    environment = {
        **base_environment(home),
        "KIMI_MODEL_NAME": "stub-model",
        "KIMI_MODEL_API_KEY": "stub",
        "KIMI_MODEL_PROVIDER_TYPE": "openai",
        "KIMI_MODEL_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "KIMI_CODE_NO_AUTO_UPDATE": "1",
    }
    return run([str(NODE24), str(KIMI_CODE), *arguments], work, environment)


@needs_kimi_code
def test_kimi_code_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        kimi_code(home, work, port, "-p", "KC-MARK-1 hello, what is a wombat?")
        kimi_code(home, work, port, "-c", "-p", "KC-MARK-2 please USE A TOOL to list the files")
        kimi_code(home, work, port, "-c", "-p", f"KC-MARK-3 resumed. {HOSTILE}")
        kimi_code(home, work, port, "-p", "a second session about quokkas")
    assert tool_turn_made(script)
    folder = home / ".kimi-code"
    source = KimiCodeSource(folder)
    ids = check_sessions(source, "KC", work)
    assert len(ids) == 2
    (quokka,) = [i for i in ids if "quokkas" in str(source.surface(i).events[0].data["content"][0]["text"])]
    check_search("--kimicode-root", folder, "quokkas", quokka, tmp_path)


# -- the journal's corners -----------------------------------------------------------------------------


def _session(root: Path, name: str, records: list[dict[str, Any]], **state: object) -> Path:
    folder = root / "sessions" / "wd_proj_100fe2736d70" / name
    (folder / "agents" / "main").mkdir(parents=True)
    meta = {"id": name, "version": 2, "cwd": "/work/kc", "archived": False, "createdAt": 1_796_666_498_170, **state}
    (folder / "state.json").write_text(json.dumps(meta))
    lines = [{"type": "metadata", "protocol_version": "1.5"}, *records]
    (folder / "agents" / "main" / "wire.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def _typed(text: str) -> dict[str, Any]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "origin": {"kind": "user"}}
    return {"type": "context.append_message", "agentId": "main", "message": message, "time": 1_796_666_498_314}


def _injected(text: str) -> dict[str, Any]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "origin": {"kind": "injection"}}
    return {"type": "context.append_message", "agentId": "main", "message": message}


def _said(text: str, step: str = "s1") -> dict[str, Any]:
    event = {"type": "content.part", "stepUuid": step, "part": {"type": "text", "text": text}}
    return {"type": "context.append_loop_event", "agentId": "main", "event": event, "time": 1_796_666_498_363}


def _listed(source: KimiCodeSource) -> dict[str, list[str]]:
    return {
        r.header.id: [item.text for item in project_conversation(source.surface(r.header.id))] for r in source.listing()
    }


def test_what_kimi_code_replays_into_its_model_s_context_is_read(tmp_path: Path) -> None:
    root = tmp_path / ".kimi-code"
    thinking = {"type": "content.part", "stepUuid": "s1", "part": {"type": "think", "think": "hmm"}}
    tool = {"type": "tool.result", "output": "SECRET-TOOL-OUTPUT"}
    _session(
        root,
        "session_a",
        [
            _typed("first question"),
            _injected("<system-reminder>Today's date is…</system-reminder>"),
            {"type": "context.append_loop_event", "event": thinking},
            _said("an answer "),
            _said("in two parts"),
            {"type": "context.append_loop_event", "event": tool},
            _said("after the tool", step="s2"),
            {"type": "turn.prompt", "input": [{"type": "text", "text": "an observation, not the context"}]},
            _typed("a question taken back"),
            _said("its answer", step="s3"),
            {"type": "context.undo", "agentId": "main", "count": 1},
            {"type": "context.apply_compaction", "agentId": "main", "summary": "the summary", "compactedCount": 3},
            _typed("after the compaction"),
        ],
        title="Wombat facts",
    )
    _session(
        root, "session_b", [_typed("before a clear"), {"type": "context.clear", "agentId": "main"}, _typed("after")]
    )
    _session(root, "session_c", [_typed("archived")], archived=True)
    sub = _session(root, "session_d", [_typed("main's")])
    (sub / "agents" / "explore").mkdir()
    (sub / "agents" / "explore" / "wire.jsonl").write_text(json.dumps(_typed("a sub-agent's task")) + "\n")
    source = KimiCodeSource(root)
    assert _listed(source) == {
        "kimicode:session_a": ["the summary", "after the compaction"],
        "kimicode:session_b": ["after"],
        "kimicode:session_d": ["main's"],
    }
    assert source.title("kimicode:session_a").title == "Wombat facts"  # type: ignore[union-attr]
    assert source.title("kimicode:session_d").title == "main's"  # type: ignore[union-attr]
    (record,) = [r for r in source.listing() if r.header.id == "kimicode:session_a"]
    assert (record.header.cwd, record.header.created_at) == ("/work/kc", 1_796_666_498_170)


def test_an_undo_and_the_model_s_steps_before_a_compaction(tmp_path: Path) -> None:
    root = tmp_path / ".kimi-code"
    _session(
        root,
        "session_a",
        [
            _typed("one"),
            _said("answer one", step="s1"),
            _typed("two"),
            _said("answer two", step="s2"),
            _typed("three"),
            _said("answer three", step="s3"),
            {"type": "context.undo", "agentId": "main", "count": 2},
            "not a record",
        ],
    )
    source = KimiCodeSource(root)
    assert _listed(source) == {"kimicode:session_a": ["one", "answer one"]}
    assert source.session("kimicode:session_a").problems == 1


def test_odd_state_and_links_out_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / ".kimi-code"
    odd = _session(root, "session_odd", [_typed("still read")])
    (odd / "state.json").write_text('{"id": 7, "cwd": ["x"], "createdAt": "yesterday", "title": 3}')
    elsewhere = tmp_path / "elsewhere"
    _session(elsewhere, "session_out", [_typed("never read")])
    (root / "sessions" / "wd_linked_000000000000").symlink_to(elsewhere / "sessions" / "wd_proj_100fe2736d70")
    source = KimiCodeSource(root)
    assert _listed(source) == {"kimicode:session_odd": ["still read"]}
    (record,) = source.listing()
    assert record.header.cwd is None and record.header.created_at > 0


def test_its_folder_follows_kimi_code_s_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KIMI_CODE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kimi_code_root() == tmp_path / ".kimi-code"
    monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "k"))
    assert kimi_code_root() == tmp_path / "k"


@needs_kimi_code
def test_kimi_code_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    from tests.test_agents_real import _said, docs_block, offered_tools, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    servers = home / ".kimi-code" / "mcp.json"
    servers.parent.mkdir(parents=True, exist_ok=True)
    servers.write_text(json.dumps(docs_block('"env": {}')))  # docs/mcp.md's mcp.json, as written
    with stub(_OpenAI) as (port, script), pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", path)
        kimi_code(home, work, port, "-p", "KC-MARK-9 REFERENCE DESIGN please")
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    results = [_said(message.get("content")) for message in tool_messages(script)]
    # Kimi Code cuts each long line of a result and saves the whole to a file its model can read.
    frame = snapshot(root).split("<referenced-sessions>")[0]
    assert any(
        frame in result and "</referenced-sessions>" in result and "output_path" in result for result in results
    ), [len(result) for result in results]
