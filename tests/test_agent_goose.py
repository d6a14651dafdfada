"""Goose (Block's ``goose``) cannot run here: no registry this machine reaches carries it. Its sessions
are read as its source says (block/goose ``crates/goose/src/session/session_manager.rs``, schema
version 9, and ``conversation/message``): the database below is made by its ``create_schema``
statements, its rows as ``add_message`` writes them (``content_json`` a list of tagged contents,
``metadata_json`` the visibility flags, ``created_timestamp`` epoch seconds), and a compaction as its
``context_mgmt`` leaves one (what it summarized hidden from the model, then the summary and a
continuation note for the model alone). sessionref lists the sessions with their folders, finds one
through ``sessionref mcp --goose-root`` and references it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.goose import GooseSource, goose_root
from tests.test_agents_real import check_search

SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
INSERT INTO schema_version (version) VALUES (9);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    tenant_id TEXT, user_id TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
CREATE INDEX idx_messages_session ON messages(session_id);
"""
BOTH = {"userVisible": True, "agentVisible": True}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}
HIDDEN = {"userVisible": True, "agentVisible": False}


def text(value: str, **more: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **more}


class Goose:
    """Goose's ``sessions.db``, written as Goose writes it."""

    def __init__(self, data: Path) -> None:
        (data / "sessions").mkdir(parents=True)
        self.db = sqlite3.connect(data / "sessions" / "sessions.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.executescript(SCHEMA)
        self.clock = 1_796_670_000

    def session(self, session_id: str, name: str, folder: str, kind: str = "user") -> None:
        self.db.execute(
            "INSERT INTO sessions (id, name, session_type, working_dir, created_at) VALUES (?, ?, ?, ?, ?)",
            (session_id, name, kind, folder, "2026-12-07 19:00:00"),
        )

    def message(self, session_id: str, role: str, contents: list[Any], visible: dict[str, bool] = BOTH) -> None:
        self.clock += 1
        self.db.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, metadata_json)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (f"msg_{self.clock}", session_id, role, json.dumps(contents), self.clock, json.dumps(visible)),
        )


def _texts(source: GooseSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


def test_goose_sessions_are_read_as_goose_builds_its_context(tmp_path: Path) -> None:
    goose = Goose(tmp_path / "goose")
    goose.session("20261207_1", "Wombat facts", "/work/app")
    goose.message("20261207_1", "user", [text("first question about wombats")])
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "s"}
    call = {"type": "toolRequest", "id": "c1", "toolCall": {"status": "success"}}
    goose.message("20261207_1", "assistant", [thinking, text("an answer"), call])
    goose.message("20261207_1", "user", [{"type": "toolResponse", "id": "c1", "toolResult": {"status": "success"}}])
    goose.message(
        "20261207_1", "assistant", [text("after the tool"), text("for the user", annotations={"audience": ["user"]})]
    )
    goose.session("20261207_2", "A sub-agent", "/work/app", kind="specialist")
    goose.message("20261207_2", "user", [text("a sub-agent's prompt")])
    source = GooseSource(tmp_path / "goose")
    (record,) = source.listing()
    assert record.header.id == "goose:20261207_1" and record.header.cwd == "/work/app"
    assert record.header.created_at == 1_796_670_000_000  # (SQLite's CURRENT_TIMESTAMP form, UTC)
    assert _texts(source, "goose:20261207_1") == ["first question about wombats", "an answer", "after the tool"]
    assert source.title("goose:20261207_1").title == "Wombat facts"  # type: ignore[union-attr]
    assert source.surface("goose:20261207_1").events[0].time == 1_796_670_001_000
    # Compacted: what it summarized hidden from the model, then its summary and a note for the model alone.
    goose.db.execute("UPDATE messages SET metadata_json = ? WHERE session_id = '20261207_1'", (json.dumps(HIDDEN),))
    goose.message("20261207_1", "user", [text("Summary: they asked about wombats.")], AGENT_ONLY)
    goose.message("20261207_1", "assistant", [text("The conversation was summarized; continue.")], AGENT_ONLY)
    goose.message("20261207_1", "user", [text("next question")])
    snapshot = source.surface("goose:20261207_1")
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert _texts(source, "goose:20261207_1") == ["Summary: they asked about wombats.", "next question"]
    check_search("--goose-root", tmp_path / "goose", "wombats", "goose:20261207_1", tmp_path)
    goose.db.close()


def test_odd_rows_an_older_schema_and_links_are_read_around(tmp_path: Path) -> None:
    data = tmp_path / "goose"
    (data / "sessions").mkdir(parents=True)
    db = sqlite3.connect(data / "sessions" / "sessions.db", isolation_level=None)
    db.executescript(  # (an older schema: no session_type, the title in description)
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, description TEXT, name TEXT, working_dir TEXT, created_at TEXT);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content_json TEXT,"
        " created_timestamp INTEGER, metadata_json TEXT);"
    )
    db.execute("INSERT INTO sessions VALUES ('s1', 'An older title', '', 'relative', 'noon')")
    rows = [("user", json.dumps([text("first question")]), 5, None), ("assistant", "{not json", 1, "{}"),
            ("assistant", json.dumps([text("an answer")]), 10**15, "[]")]  # fmt: skip
    db.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)"
                   " VALUES ('s1', ?, ?, ?, ?)", rows)  # fmt: skip
    db.close()
    source = GooseSource(data)
    (record,) = source.listing()
    assert record.header.cwd is None and record.header.created_at == 0
    assert _texts(source, "goose:s1") == ["first question", "an answer"]
    assert source.title("goose:s1").title == "An older title"  # type: ignore[union-attr]
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "sessions").symlink_to(data / "sessions")
    assert GooseSource(linked).listing() == []


def test_goose_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(tmp_path / "g"))
    assert goose_root() == tmp_path / "g" / "data"
    monkeypatch.delenv("GOOSE_PATH_ROOT")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert goose_root() == tmp_path / "d" / "goose"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert goose_root() == tmp_path / ".local" / "share" / "goose"
