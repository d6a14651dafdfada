"""Cursor (the editor) cannot run here, and none of its own files is public: its chats are read as the
published descriptions of its ``state.vscdb`` say (the key-value table ``cursorDiskKV``: a chat's
``composerData:<id>`` with its messages' order, one ``bubbleId:<id>:<bubble>`` per message; older
chats inline; the workspace that lists a chat naming its folder). The databases below are made in that
shape. sessionref lists the chats with their folders, reads them in order, finds one through
``sessionref mcp --cursor-root`` and references it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.cursor import CursorSource, cursor_root
from tests.test_agents_real import check_search


def bubble(kind: int, text: str, **more: Any) -> dict[str, Any]:
    return {"_v": 3, "type": kind, "text": text, "createdAt": "2026-12-07T19:00:01.000Z", **more}


class Cursor:
    """Cursor's ``User`` folder: its global ``state.vscdb`` and its workspaces' storage."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "globalStorage").mkdir(parents=True)
        self.db = sqlite3.connect(root / "globalStorage" / "state.vscdb", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        self.db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")

    def put(self, key: str, value: Any) -> None:
        self.db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (key, json.dumps(value).encode()))

    def chat(self, chat_id: str, bubbles: list[dict[str, Any]], folder: str | None = None, **more: Any) -> None:
        headers = [{"bubbleId": f"b{n}", "type": b["type"]} for n, b in enumerate(bubbles)]
        data = {"_v": 10, "composerId": chat_id, "name": "Wombat facts", "createdAt": 1_796_670_000_000,
                "lastUpdatedAt": 1_796_670_060_000, "fullConversationHeadersOnly": headers, **more}  # fmt: skip
        if folder is not None:
            data["workspaceIdentifier"] = {"id": "1", "uri": {"$mid": 1, "fsPath": folder, "path": folder}}
        self.put(f"composerData:{chat_id}", data)
        for n, value in enumerate(bubbles):
            self.put(f"bubbleId:{chat_id}:b{n}", value)

    def workspace(self, name: str, folder: str, chats: list[str]) -> None:
        storage = self.root / "workspaceStorage" / name
        storage.mkdir(parents=True)
        (storage / "workspace.json").write_text(json.dumps({"folder": "file://" + folder.replace(" ", "%20")}))
        db = sqlite3.connect(storage / "state.vscdb")
        db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        value = json.dumps({"allComposers": [{"composerId": chat} for chat in chats]})
        db.execute("INSERT INTO ItemTable VALUES ('composer.composerData', ?)", (value,))
        db.commit()
        db.close()


def _texts(source: CursorSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


def test_cursor_chats_are_read_in_their_headers_order(tmp_path: Path) -> None:
    cursor = Cursor(tmp_path / "User")
    cursor.chat(
        "c1",
        [
            bubble(1, "first question about wombats"),
            bubble(2, "", capabilityType=30, thinking={"text": "hmm", "signature": "s"}),
            bubble(2, "", capabilityType=15, toolFormerData={"name": "list_dir", "result": "SECRET"}),
            bubble(2, "an answer", createdAt="2026-12-07T19:00:09.000Z"),
            bubble(2, "", capabilityType=22),
        ],
        folder="/work/app",
    )
    cursor.chat("c2", [bubble(1, "a sub-agent's prompt")], subagentInfo={"parentComposerId": "c1"})
    cursor.put("composerData:c3", {"composerId": "c3", "fullConversationHeadersOnly": []})  # (an empty chat)
    source = CursorSource(tmp_path / "User")
    (record,) = source.listing()
    assert record.header.id == "cursor:c1" and record.header.cwd == "/work/app"
    assert record.header.created_at == 1_796_670_000_000
    assert _texts(source, "cursor:c1") == ["first question about wombats", "an answer"]
    assert source.surface("cursor:c1").events[-1].time == 1_796_670_009_000
    assert source.title("cursor:c1").title == "Wombat facts"  # type: ignore[union-attr]
    check_search("--cursor-root", tmp_path / "User", "wombats", "cursor:c1", tmp_path)
    cursor.db.close()


def test_an_older_inline_chat_takes_its_workspace_s_folder(tmp_path: Path) -> None:
    cursor = Cursor(tmp_path / "User")
    inline = [bubble(1, "first question"), bubble(2, "an answer"), "odd", bubble(3, "neither")]
    cursor.put("composerData:old", {"composerId": "old", "name": "", "createdAt": 1_700_000_000_000,
                                    "conversation": inline})  # fmt: skip
    cursor.chat("lost", [bubble(1, "x")])
    cursor.db.execute("DELETE FROM cursorDiskKV WHERE key = 'bubbleId:lost:b0'")
    cursor.workspace("9f2c", "/work/my app", ["old"])
    source = CursorSource(tmp_path / "User")
    listed = {record.header.id: record.header for record in source.listing()}
    assert listed["cursor:old"].cwd == "/work/my app" and listed["cursor:lost"].cwd is None
    assert _texts(source, "cursor:old") == ["first question", "an answer"]
    assert source.title("cursor:old").title == "first question"  # type: ignore[union-attr]
    assert _texts(source, "cursor:lost") == []


def test_odd_values_and_links_are_read_around(tmp_path: Path) -> None:
    cursor = Cursor(tmp_path / "User")
    cursor.db.execute("INSERT INTO cursorDiskKV VALUES ('composerData:bad', X'ff00')")
    cursor.db.execute("INSERT INTO cursorDiskKV VALUES ('composerData:num', 5)")
    cursor.chat("ok", [bubble(1, "first question"), {"type": "1", "text": 5}])
    cursor.db.close()
    source = CursorSource(tmp_path / "User")
    assert [record.header.id for record in source.listing()] == ["cursor:ok"]
    assert _texts(source, "cursor:ok") == ["first question"]
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "globalStorage").symlink_to(tmp_path / "User" / "globalStorage")
    assert CursorSource(linked).listing() == []


def test_cursor_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert cursor_root() == tmp_path / "c" / "Cursor" / "User"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cursor_root() == tmp_path / ".config" / "Cursor" / "User"
