"""Claude Code and Codex sessions in the real app: badges, mixed-tool groups, references, read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import JsonlSessionStore
from core.sessions.sources.claude import CLAUDE_PREFIX, ClaudeCodeSource
from core.sessions.sources.codex import CODEX_PREFIX, CodexSource
from tests.support.app_harness import SIZE, open_app, open_picker, picker_ids, picker_rows, settle, type_text, until
from tests.support.external_fixtures import CLAUDE_UUID, CODEX_UUID, seed_external, tree_state
from tui.app.sessionref_app import SessionRefApp
from tui.widgets.sidebar import SessionSidebar

CLAUDE_ID = CLAUDE_PREFIX + CLAUDE_UUID
CODEX_ID = CODEX_PREFIX + CODEX_UUID


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    seed_external(claude, codex)
    return claude, codex


def mixed_app(demo_template: Path, tmp_path: Path, roots: tuple[Path, Path]) -> tuple[SessionRefApp, JsonlSessionStore]:
    claude, codex = roots
    return open_app(demo_template, tmp_path / "store", external=(ClaudeCodeSource(claude), CodexSource(codex)))


async def test_sidebar_and_picker_group_other_tools_sessions_by_cwd_with_a_badge(
    demo_template: Path, tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    app, _store = mixed_app(demo_template, tmp_path, roots)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)
        rows = [sidebar.row_text(i) for i in range(len(sidebar.rows))]
        assert rows[0] == "This folder (5)"
        assert rows[1].startswith("  CC Flaky lock test fix")  # the newest, in the same cwd
        assert any(row.startswith("  CX Make the hero image load") for row in rows[rows.index("Elsewhere (2)") :])
        await open_picker(pilot)
        ids = picker_ids(app)
        assert ids[0] == CLAUDE_ID and ids[-1] == CODEX_ID  # this folder first, elsewhere last
        shown = picker_rows(app)
        assert shown[1].startswith("CC Flaky lock test fix")
        assert any(row.startswith("CX Make the hero image") for row in shown)


async def test_referencing_a_claude_code_session_bakes_its_conversation_without_tool_output(
    demo_template: Path, tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    before = {**tree_state(roots[0]), **tree_state(roots[1])}
    app, store = mixed_app(demo_template, tmp_path, roots)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "what caused it in ")
        await open_picker(pilot, "wombat")  # said only in the Claude Code session's answer
        await until(pilot, lambda: picker_ids(app) == [CLAUDE_ID])
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
    store.close()
    events = JsonlSessionStore(tmp_path / "store").get("today").events
    prompt = next(event for event in events if event.type == "user/message")
    assert prompt.data["envelope"]["displayContent"][0]["text"] == "what caused it in @Flaky lock test fix "
    assert prompt.data["envelope"]["prefixContexts"][0]["meta"]["references"][0]["sessionId"] == CLAUDE_ID
    context = prompt.data["content"][0]["text"]
    assert "Why does the lock test flake on CI?" in context and "before the wombat fixture" in context
    assert "SECRET TOOL OUTPUT" not in context and "look at the timeout" not in context
    assert {**tree_state(roots[0]), **tree_state(roots[1])} == before  # never written


async def test_another_tools_session_cannot_become_the_target(
    demo_template: Path, tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    app, _store = mixed_app(demo_template, tmp_path, roots)
    notes: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        original = app.notify
        app.notify = lambda message, **kwargs: notes.append(message) or original(message, **kwargs)  # type: ignore[method-assign]
        app.chat.switch_to(CODEX_ID)
        await pilot.pause()
        assert app.workspace.session.id == "today"
        assert notes and "Codex CLI sessions are read-only here" in notes[-1]


async def test_an_unreadable_claude_code_file_is_listed_as_unreadable_and_the_rest_works(
    demo_template: Path, tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    broken = roots[0] / "projects" / "-home-demo-projects-sessionref" / "0000dead-0000-4000-8000-000000000000.jsonl"
    broken.write_text("not json\n{\n")
    app, _store = mixed_app(demo_template, tmp_path, roots)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)
        rows = [sidebar.row_text(i) for i in range(len(sidebar.rows))]
        assert "Unreadable (1)" in rows
        assert any("✖ 0000dead-0000-4000" in row for row in rows)  # the file, cut to the sidebar
        await open_picker(pilot)
        assert CLAUDE_ID in picker_ids(app) and not any("0000dead" in sid for sid in picker_ids(app))


async def test_gemini_cli_and_opencode_sessions_show_their_badges_and_are_referenced_by_a_word_said(
    demo_template: Path, tmp_path: Path
) -> None:
    import json
    import sqlite3

    from core.sessions.sources.gemini import GeminiCliSource
    from core.sessions.sources.opencode import OpenCodeSource
    from tui.cli.demo import DEMO_OTHER, DEMO_PROJECT, DEMO_START

    gemini = tmp_path / "gemini"
    chats = gemini / "tmp" / "sessionref" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(DEMO_PROJECT)
    started = _iso_seconds(DEMO_START + 6 * 60_000 + 40_000) + ".000Z"
    lines = [
        {"sessionId": "gm-1", "projectHash": "0" * 64, "startTime": started, "kind": "main"},
        {"id": "u1", "type": "user", "timestamp": started, "content": [{"text": "Gemini: is the quokka cache warm?"}]},
        {"id": "r1", "type": "gemini", "timestamp": started, "content": "Warm since the deploy."},
    ]
    (chats / "session-x-gm1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    database = tmp_path / "opencode" / "opencode.db"
    database.parent.mkdir()
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(
        "CREATE TABLE session (id text, parent_id text, directory text, title text, time_created integer,"
        " time_updated integer);"
        "CREATE TABLE message (id text, session_id text, time_created integer, time_updated integer, data text);"
        "CREATE TABLE part (id text, message_id text, session_id text, time_created integer, time_updated integer,"
        " data text);"
    )
    at = DEMO_START - 120_000
    connection.execute("INSERT INTO session VALUES ('ses_oc', NULL, ?, 'Numbat migration', ?, ?)", (DEMO_OTHER, at, at))
    for number, (role, said) in enumerate((("user", "plan the numbat migration"), ("assistant", "In three steps."))):
        mid = f"msg_{number}"
        connection.execute(
            "INSERT INTO message VALUES (?, 'ses_oc', ?, ?, ?)", (mid, at + number, at, json.dumps({"role": role}))
        )
        part = json.dumps({"type": "text", "text": said})
        connection.execute("INSERT INTO part VALUES (?, ?, 'ses_oc', ?, ?, ?)", (f"prt_{number}", mid, at, at, part))
    connection.commit()
    before = {**tree_state(gemini), **tree_state(database.parent)}
    external = (GeminiCliSource(gemini), OpenCodeSource(database.parent))
    app, store = open_app(demo_template, tmp_path / "store", external=external)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)
        rows = [sidebar.row_text(i) for i in range(len(sidebar.rows))]
        assert rows[1].startswith("  GM Gemini: is the quokka cache")  # the newest, in this folder
        assert any(row.startswith("  OC Numbat migration") for row in rows[rows.index("Elsewhere (2)") :])
        await type_text(pilot, "continue ")
        await open_picker(pilot, "numbat")
        await until(pilot, lambda: picker_ids(app) == ["opencode:ses_oc"])
        assert picker_rows(app)[1].startswith("OC Numbat migration")
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
    connection.close()
    store.close()
    events = JsonlSessionStore(tmp_path / "store").get("today").events
    prompt = next(event for event in events if event.type == "user/message")
    context = prompt.data["content"][0]["text"]
    assert context.index("plan the numbat migration") < context.index("In three steps.")
    assert {**tree_state(gemini), **tree_state(database.parent)} == before  # never written


def _iso_seconds(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
