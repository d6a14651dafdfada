"""Kiro CLI (formerly Amazon Q Developer CLI) cannot run here: its installer downloads it from its
vendor. Its conversations are read as the open source of the CLI it continues says
(aws/amazon-q-developer-cli ``crates/chat-cli``: ``database/sqlite_migrations`` for the tables,
``cli/chat/conversation.rs`` and ``message.rs`` for the conversation): the database below is made by
those migrations, each conversation stored as ``ConversationState`` serializes (serde's externally
tagged enums), in the table migration 008 made and in the older one it replaced. sessionref lists the
conversations with their folders, finds one through ``sessionref mcp --kiro-root`` and references it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.kiro import KiroSource, kiro_root
from tests.test_agents_real import check_search

OLDER = "CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)"
V2 = """
CREATE TABLE conversations_v2 (key TEXT NOT NULL, conversation_id TEXT NOT NULL, value TEXT NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (key, conversation_id));
CREATE INDEX idx_conversations_v2_key_updated ON conversations_v2(key, updated_at DESC);
"""


class Kiro:
    """Kiro CLI's ``data.sqlite3``, written as the CLI writes it."""

    def __init__(self, data: Path, *, older: bool = False) -> None:
        data.mkdir(parents=True, exist_ok=True)
        self.older = older
        self.db = sqlite3.connect(data / "data.sqlite3", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.executescript(OLDER if older else V2)

    def save(self, folder: str, conversation_id: str, history: list[Any], **more: Any) -> None:
        state = {"conversation_id": conversation_id, "next_message": None, "history": history,
                 "valid_history_range": [0, len(history)], "transcript": ["> for the screen"], "tools": {},
                 "context_manager": None, "context_message_length": None, "latest_summary": None, **more}  # fmt: skip
        if self.older:
            self.db.execute("INSERT OR REPLACE INTO conversations VALUES (?, ?)", (folder, json.dumps(state)))
        else:
            self.db.execute(
                "INSERT OR REPLACE INTO conversations_v2 VALUES (?, ?, ?, 1796670000000, 1796670060000)",
                (folder, conversation_id, json.dumps(state)),
            )


def prompt(text: str, time: str = "2026-12-07T19:00:01.000+01:00") -> dict[str, Any]:
    return {"additional_context": "--- CONTEXT ENTRY BEGIN ---\nSECRET CONTEXT\n", "env_context": {"env_state": None},
            "content": {"Prompt": {"prompt": text}}, "timestamp": time, "images": None}  # fmt: skip


def results() -> dict[str, Any]:
    block = [{"tool_use_id": "t1", "content": [{"Text": "SECRET-TOOL-OUTPUT"}], "status": "Success"}]
    return {"additional_context": "", "env_context": {"env_state": None},
            "content": {"ToolUseResults": {"tool_use_results": block}}, "timestamp": None, "images": None}  # fmt: skip


def entry(user: dict[str, Any], answer: str, *, tool: bool = False) -> dict[str, Any]:
    if tool:
        said = {"ToolUse": {"message_id": "m", "content": answer, "tool_uses": [{"id": "t1", "name": "fs_read"}]}}
    else:
        said = {"Response": {"message_id": "m", "content": answer}}
    return {"user": user, "assistant": said, "request_metadata": None}


def _texts(source: KiroSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


def test_kiro_conversations_are_read_as_kiro_sends_them_to_its_model(tmp_path: Path) -> None:
    kiro = Kiro(tmp_path / "kiro-cli")
    kiro.save("/work/app", "c-1", [
        entry(prompt("first question about wombats"), "let me look", tool=True),
        entry(results(), "an answer"),
        entry({"content": {"CancelledToolUses": {"prompt": "never mind, and this", "tool_use_results": []}},
               "timestamp": "2026-12-07T19:05:00Z"}, "ok"),
    ])  # fmt: skip
    kiro.save("/work/app", "c-2", [entry(prompt("a second conversation"), "sure")])
    source = KiroSource(tmp_path / "kiro-cli")
    listed = {record.header.id: record.header for record in source.listing()}
    assert set(listed) == {"kiro:c-1", "kiro:c-2"} and listed["kiro:c-1"].cwd == "/work/app"
    assert listed["kiro:c-1"].created_at == 1_796_670_000_000
    assert _texts(source, "kiro:c-1") == [
        "first question about wombats", "let me look", "an answer", "never mind, and this", "ok"
    ]  # fmt: skip
    assert source.surface("kiro:c-1").events[0].time == 1_796_666_401_000  # (its offset: 18:00:01 UTC)
    assert source.title("kiro:c-1").title == "first question about wombats"  # type: ignore[union-attr]
    # /compact: the summary, then what was kept; the range Kiro sends leaves the oldest out.
    kiro.save("/work/app", "c-1", [entry(prompt("old"), "old answer"), entry(prompt("next question"), "next")],
              latest_summary=["Summary: they asked about wombats.", {}], valid_history_range=[1, 2])  # fmt: skip
    kiro.db.execute("UPDATE conversations_v2 SET updated_at = updated_at + 1")
    snapshot = source.surface("kiro:c-1")
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert _texts(source, "kiro:c-1") == ["Summary: they asked about wombats.", "next question", "next"]
    check_search("--kiro-root", tmp_path / "kiro-cli", "wombats", "kiro:c-1", tmp_path)
    kiro.db.close()


def test_the_older_table_odd_values_and_links_are_read_around(tmp_path: Path) -> None:
    kiro = Kiro(tmp_path / "amazon-q", older=True)
    kiro.save("/work/old", "c-old", [entry(prompt("an older question"), "an older answer")])
    kiro.db.execute("INSERT INTO conversations VALUES ('/work/bad', '{not json')")
    odd = {"conversation_id": "c-odd", "history": [5, {"user": [], "assistant": {"Response": 3}}],
           "valid_history_range": [9, 1]}  # fmt: skip
    kiro.db.execute("INSERT INTO conversations VALUES ('/work/odd', ?)", (json.dumps(odd),))
    kiro.db.execute("INSERT INTO conversations VALUES ('relative', ?)", (json.dumps({"conversation_id": "c-rel"}),))
    kiro.db.close()
    source = KiroSource(tmp_path / "amazon-q")
    listed = {record.header.id: record.header for record in source.listing()}
    assert set(listed) == {"kiro:c-old", "kiro:c-odd", "kiro:c-rel"}  # (the one that is not JSON has no id)
    assert listed["kiro:c-old"].cwd == "/work/old" and listed["kiro:c-rel"].cwd is None
    assert _texts(source, "kiro:c-old") == ["an older question", "an older answer"]
    assert _texts(source, "kiro:c-odd") == [] and _texts(source, "kiro:c-rel") == []
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "data.sqlite3").symlink_to(tmp_path / "amazon-q" / "data.sqlite3")
    assert KiroSource(linked).listing() == []
    with pytest.raises(SessionQueryError):
        source.surface("kiro:nothing")


def test_kiro_s_folder_and_amazon_q_s_beside_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert kiro_root() == tmp_path / "d" / "kiro-cli"
    (tmp_path / "d" / "amazon-q").mkdir(parents=True)
    assert kiro_root() == tmp_path / "d" / "amazon-q"  # (only Amazon Q Developer CLI's is there)
    (tmp_path / "d" / "kiro-cli").mkdir()
    assert kiro_root() == tmp_path / "d" / "kiro-cli"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kiro_root() == tmp_path / ".local" / "share" / "kiro-cli"
