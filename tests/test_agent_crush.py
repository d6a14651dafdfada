"""Crush (Charm's ``crush``) cannot run here: its npm package downloads its binary when installed,
and no registry carries the binary. Its sessions are read as its source says (commit 37f36e9 of
charmbracelet/crush: ``internal/db/migrations``, ``internal/message``, ``internal/agent``): the
database below is made by the statements of its migrations, and its rows as its code writes them
(``parts`` as ``marshalParts`` does, times by ``strftime('%s', 'now')``). sessionref lists the
projects' sessions with their folders, reads them as Crush builds its model's context (from the
summary message on), finds one through ``sessionref mcp --crush-root`` and references it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.crush import CrushSource, crush_root
from tests.test_agents_real import check_search

# The tables as Crush's migrations leave them (20250424200609_initial ... 20260127000000_add_read_files).
SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    prompt_tokens INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens>= 0),
    cost REAL NOT NULL DEFAULT 0.0 CHECK (cost >= 0.0),
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT, todos TEXT);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL, parts TEXT NOT NULL default '[]',
    model TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
    is_summary_message INTEGER DEFAULT 0 NOT NULL,
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS idx_messages_session_id ON messages (session_id);
CREATE TRIGGER IF NOT EXISTS update_session_message_count_on_insert AFTER INSERT ON messages
BEGIN UPDATE sessions SET message_count = message_count + 1 WHERE id = new.session_id; END;
"""


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": value}}


class Project:
    """One project's ``.crush/crush.db``, written as Crush writes it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / ".crush").mkdir(parents=True)
        self.db = sqlite3.connect(folder / ".crush" / "crush.db", isolation_level=None)
        self.db.executescript(SCHEMA)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.clock = 1_796_670_000

    def session(self, session_id: str, title: str, parent: str | None = None) -> None:
        self.db.execute(
            "INSERT INTO sessions (id, parent_session_id, title, message_count, prompt_tokens, completion_tokens,"
            " cost, summary_message_id, updated_at, created_at) VALUES (?, ?, ?, 0, 0, 0, 0, NULL, ?, ?)",
            (session_id, parent, title, self.clock, self.clock),
        )

    def message(
        self, session_id: str, message_id: str, role: str, *parts: dict[str, Any], summary: bool = False
    ) -> None:
        self.clock += 1
        self.db.execute(
            "INSERT INTO messages (id, session_id, role, parts, model, provider, is_summary_message, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, 'm', 'p', ?, ?, ?)",
            (message_id, session_id, role, json.dumps(list(parts)), int(summary), self.clock, self.clock),
        )


def _projects(root: Path, *projects: Project, more: list[Any] | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    listed = [{"path": str(p.folder), "data_dir": str(p.folder / ".crush"), "last_accessed": "2026-12-07T19:00:00Z"}
              for p in projects]  # fmt: skip
    (root / "projects.json").write_text(json.dumps({"projects": listed + (more or [])}))


def _texts(source: CrushSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


def test_crush_sessions_are_read_as_crush_builds_its_context(tmp_path: Path) -> None:
    project = Project(tmp_path / "work" / "app")
    project.session("s1", "Wombat facts")
    project.message("s1", "m1", "user", text("first question about wombats"))
    project.message("s1", "m2", "assistant", {"type": "reasoning", "data": {"thinking": "hmm"}}, text("an answer"),
                    {"type": "tool_call", "data": {"id": "c1", "name": "ls", "input": "{}"}},
                    {"type": "finish", "data": {"reason": "tool_use"}})  # fmt: skip
    project.message("s1", "m3", "tool", {"type": "tool_result", "data": {"tool_call_id": "c1", "content": "SECRET"}})
    project.message("s1", "m4", "assistant", text("after the tool"))
    project.message("s1", "m5", "user", {"type": "shell_command", "data": {"command": "ls"}})
    project.session("s2", "A sub-agent's task", parent="s1")
    project.message("s2", "m6", "user", text("a sub-agent's prompt"))
    _projects(tmp_path / "crush", project)
    source = CrushSource(tmp_path / "crush")
    (record,) = source.listing()
    assert record.header.id == "crush:s1" and record.header.cwd == str(project.folder)
    assert record.header.created_at == 1_796_670_000_000
    assert _texts(source, "crush:s1") == ["first question about wombats", "an answer", "after the tool"]
    assert source.title("crush:s1").title == "Wombat facts"  # type: ignore[union-attr]
    assert source.surface("crush:s1").events[0].time == 1_796_670_001_000
    # Summarized: the summary message (its role is the assistant's) and what follows, as the model sees it.
    project.message("s1", "m7", "assistant", text("Summary: they asked about wombats."), summary=True)
    project.db.execute("UPDATE sessions SET summary_message_id = 'm7', updated_at = updated_at + 1 WHERE id = 's1'")
    project.message("s1", "m8", "user", text("next question"))
    snapshot = source.surface("crush:s1")
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert _texts(source, "crush:s1") == ["Summary: they asked about wombats.", "next question"]
    check_search("--crush-root", tmp_path / "crush", "wombats", "crush:s1", tmp_path)
    project.db.close()
    assert sorted(path.name for path in (project.folder / ".crush").iterdir())[0] == "crush.db"


def test_projects_json_s_odd_entries_a_database_missing_and_links_are_read_around(tmp_path: Path) -> None:
    project = Project(tmp_path / "work" / "app")
    project.session("s1", "")
    project.message("s1", "m1", "user", text("first question"))
    project.message("s1", "m2", "assistant", {"type": "text", "data": {"text": 5}}, "not a part")
    project.db.execute("UPDATE messages SET parts = '{not json' WHERE id = 'm2'")
    linked = tmp_path / "work" / "linked"
    (linked / ".crush").mkdir(parents=True)
    (linked / ".crush" / "crush.db").symlink_to(project.folder / ".crush" / "crush.db")
    odd = [{"path": 5}, "x", {"path": "relative"}, {"path": str(tmp_path / "gone")}, {"path": str(linked)}]
    _projects(tmp_path / "crush", project, more=odd)
    source = CrushSource(tmp_path / "crush")
    (record,) = source.listing()
    assert _texts(source, record.header.id) == ["first question"]
    assert source.title(record.header.id).title == "first question"  # type: ignore[union-attr]
    (tmp_path / "crush" / "projects.json").write_text("{not json")
    assert source.listing() == []


def test_crush_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CRUSH_GLOBAL_DATA", str(tmp_path / "c"))
    assert crush_root() == tmp_path / "c"
    monkeypatch.delenv("CRUSH_GLOBAL_DATA")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert crush_root() == tmp_path / "d" / "crush"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert crush_root() == tmp_path / ".local" / "share" / "crush"
