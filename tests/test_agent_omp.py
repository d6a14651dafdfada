"""oh-my-pi (npm ``@oh-my-pi/pi-coding-agent``, pi's fork, pinned in ``tests/interop``, run on the bun
npm serves as ``@oven/bun-linux-x64``), offline against a local stub of an OpenAI-compatible API named
in its ``models.yml``: a plain chat, a turn with a tool call, resumes (``--continue``) and hostile text.
sessionref lists what it wrote with its folder, finds it by a word through ``sessionref mcp
--omp-root`` and references it. Then its one difference from pi's files: the padded title line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core import project_conversation
from core.sessions.sources.pi import OhMyPiSource, omp_root
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

OMP = MODULES / "@oh-my-pi" / "pi-coding-agent" / "dist" / "cli.js"
BUN = MODULES / "bun-linux-x64" / "bin" / "bun"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_omp = pytest.mark.skipif(
    _OPTIONAL and not (OMP.exists() and BUN.exists()), reason="oh-my-pi is not installed (make interop)"
)


def omp(home: Path, work: Path, port: int, *arguments: str) -> str:
    agent = home / ".omp" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.yml").write_text(
        "providers:\n  stub:\n"
        f"    baseUrl: http://127.0.0.1:{port}/v1\n    apiKey: stub\n    api: openai-completions\n"
        "    models:\n      - id: stub-model\n        name: Stub\n"
    )
    environment = {**base_environment(home), "PI_OFFLINE": "1"}
    return run([str(BUN), str(OMP), "--provider", "stub", "--model", "stub-model", *arguments], work, environment)


@needs_omp
def test_oh_my_pi_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        omp(home, work, port, "-p", "OM-MARK-1 hello, what is a wombat?")
        omp(home, work, port, "--continue", "-p", "OM-MARK-2 please USE A TOOL to list the files")
        omp(home, work, port, "--continue", "-p", f"OM-MARK-3 resumed. {HOSTILE}")
    assert tool_turn_made(script)
    folder = home / ".omp" / "agent"
    (session_id,) = check_sessions(OhMyPiSource(folder), "OM", work)
    check_search("--omp-root", folder, "wombat", session_id, tmp_path)


def test_the_padded_title_line_names_the_session(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "-work-om-"
    folder.mkdir(parents=True)
    lines = [
        {"type": "title", "v": 1, "title": "Wombat facts", "updatedAt": "2026-12-07T18:02:43.083Z", "pad": " " * 64},
        {"type": "session", "version": 3, "id": "01a2", "timestamp": "2026-12-07T18:02:43.083Z", "cwd": "/work/om"},
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "a question"}},
    ]
    (folder / "2026-12-07T18-02-43-083Z_01a2.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    untitled = [{**lines[0], "title": ""}, {**lines[1], "id": "01a3"}, lines[2]]
    (folder / "2026-12-07T18-03-00-000Z_01a3.jsonl").write_text("".join(json.dumps(line) + "\n" for line in untitled))
    source = OhMyPiSource(tmp_path)
    listed = {r.header.id: r.header.cwd for r in source.listing()}
    assert listed == {"omp:01a2": "/work/om", "omp:01a3": "/work/om"}
    assert [item.text for item in project_conversation(source.surface("omp:01a2"))] == ["a question"]
    assert source.title("omp:01a2").title == "Wombat facts"  # type: ignore[union-attr]
    assert source.title("omp:01a3").title == "a question"  # type: ignore[union-attr]


def test_its_folder_follows_oh_my_pi_s_layout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert omp_root() == tmp_path / ".omp" / "agent"
    (tmp_path / "data" / "omp").mkdir(parents=True)
    assert omp_root() == tmp_path / "data" / "omp" / "agent"


@needs_omp
def test_oh_my_pi_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    # oh-my-pi makes an MCP server's tools devices: its model writes a call's arguments to xd://<tool>.
    import json

    from tests.test_agents_real import _said, docs_block, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    servers = home / ".omp" / "agent" / "mcp.json"
    servers.parent.mkdir(parents=True, exist_ok=True)
    servers.write_text(json.dumps(docs_block('"args": ["mcp"], "enabled": true')))  # docs/mcp.md's, as written
    with stub(_OpenAI) as (port, script), pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", path)
        omp(home, work, port, "-p", "OM-MARK-9 REFERENCE DESIGN please")
    written = [
        json.loads(call["function"]["arguments"])
        for body in script.requests
        for message in body.get("messages", [])
        for call in message.get("tool_calls") or []
        if call.get("function", {}).get("name") == "write"
    ]
    assert any(str(call.get("path")).endswith("reference_session") for call in written), written
    results = [_said(message.get("content")) for message in tool_messages(script)]
    # oh-my-pi shows its model the first lines and the end of a long result (the snapshot's JSON is one
    # line, cut in its middle) and keeps the whole as an artifact the model can read.
    frame = snapshot(root).split("<referenced-sessions>")[0]
    assert any(
        frame in result and "</referenced-sessions>" in result and "artifact://" in result for result in results
    ), [len(result) for result in results]
