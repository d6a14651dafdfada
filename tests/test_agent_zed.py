"""Zed (the editor's Agent Panel) cannot run here: an editor, and no registry this machine reaches
carries it. Its threads are read as its source says (zed-industries/zed ``crates/agent/src/db.rs``,
``thread.rs``, ``legacy_thread.rs`` and ``util/src/path_list.rs``): the database below is made by
``ThreadsDatabase::new``'s statements (the table, then the columns later versions added), each thread
saved as ``save_thread_sync`` saves it (its JSON with ``version`` 0.3.0, zstd level 3, the folders as a
``PathList`` serializes them), and older threads as versions 0.2.0 and before wrote them. sessionref
lists the threads with their folders, finds one through ``sessionref mcp --zed-root`` and references it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core import SessionQueryError, project_conversation
from core.sessions.sources.zed import ZedSource, first_folder, zed_root
from tests.test_agents_real import check_search

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL,"
    " data_type TEXT NOT NULL, data BLOB NOT NULL)",
    "ALTER TABLE threads ADD COLUMN parent_id TEXT",
    "ALTER TABLE threads ADD COLUMN folder_paths TEXT",
    "ALTER TABLE threads ADD COLUMN folder_paths_order TEXT",
    "ALTER TABLE threads ADD COLUMN created_at TEXT",
]


class Zed:
    """Zed's ``threads/threads.db``, written as Zed writes it."""

    def __init__(self, data: Path, *, columns: int = len(SCHEMA)) -> None:
        (data / "threads").mkdir(parents=True)
        self.db = sqlite3.connect(data / "threads" / "threads.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        for statement in SCHEMA[:columns]:
            self.db.execute(statement)

    def save(self, thread_id: str, title: str, messages: list[Any], *, folders: tuple[str, ...] = (),
             parent: str | None = None, updated: str = "2026-12-07T19:00:00+00:00", packed: bool = True,
             **more: Any) -> None:  # fmt: skip
        thread = {"title": title, "messages": messages, "updated_at": updated, "version": "0.3.0", **more}
        raw = json.dumps(thread).encode()
        data = zstandard.ZstdCompressor(level=3).compress(raw) if packed else raw
        ordered = sorted(folders)
        paths = "\n".join(ordered) or None
        order = ",".join(str(folders.index(path)) for path in ordered) or None
        self.db.execute(
            "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary, updated_at, data_type,"
            " data, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " summary = excluded.summary, updated_at = excluded.updated_at, data_type = excluded.data_type,"
            " data = excluded.data",
            (thread_id, parent, paths, order, title, updated, "zstd" if packed else "json", data, updated),
        )  # fmt: skip


def user(*content: Any) -> dict[str, Any]:
    return {"User": {"id": "u", "content": list(content)}}


def agent(*content: Any) -> dict[str, Any]:
    return {"Agent": {"content": list(content), "tool_results": {}, "reasoning_details": None}}


def _texts(source: ZedSource, thread_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(thread_id))]


def test_zed_threads_are_read_as_zed_sends_them_to_its_model(tmp_path: Path) -> None:
    zed = Zed(tmp_path / "zed")
    mention = {"Mention": {"uri": {"File": {"abs_path": "/work/app/lock.rs"}}, "content": "SECRET FILE TEXT"}}
    tool = {"ToolUse": {"id": "t1", "name": "grep", "raw_input": "{}", "input": {}, "is_input_complete": True}}
    zed.save(
        "t-1",
        "Wombat facts",
        [
            user({"Text": "first question about wombats"}, mention, {"Image": {"source": "x", "size": None}}),
            agent({"Thinking": {"text": "hmm", "signature": "s"}}, {"Text": "an answer"}, tool),
            "Resume",
            agent({"RedactedThinking": "xx"}, {"Text": "after the tool"}),
        ],
        folders=("/work/zz", "/work/app"),  # (opened in that order: stored sorted, with the order)
    )
    zed.save("t-2", "A sub-agent's task", [user({"Text": "a sub-agent's prompt"})], parent="t-1")
    source = ZedSource(tmp_path / "zed")
    (record,) = source.listing()
    assert record.header.id == "zed:t-1" and record.header.cwd == "/work/zz"
    assert record.header.created_at == 1_796_670_000_000
    assert _texts(source, "zed:t-1") == ["first question about wombats", "an answer", "after the tool"]
    assert source.title("zed:t-1").title == "Wombat facts"  # type: ignore[union-attr]
    # Zed saves the whole thread again as it goes on: read again at its new revision.
    zed.save("t-1", "Wombat facts", [user({"Text": "first question about wombats"}), agent({"Text": "more"})],
             folders=("/work/zz",), updated="2026-12-07T19:05:00+00:00")  # fmt: skip
    assert _texts(source, "zed:t-1") == ["first question about wombats", "more"]
    check_search("--zed-root", tmp_path / "zed", "wombats", "zed:t-1", tmp_path)
    zed.db.close()
    assert sorted(path.name for path in (tmp_path / "zed" / "threads").iterdir())[0] == "threads.db"


def test_older_threads_an_older_table_and_odd_rows_are_read_around(tmp_path: Path) -> None:
    zed = Zed(tmp_path / "zed", columns=1)  # (the first table: no parent, folders or creation time)
    older = {"version": "0.2.0", "summary": "Older", "updated_at": "2025-06-01T10:00:00Z", "messages": [
        {"id": 0, "role": "user", "segments": [{"type": "text", "text": "a 0.2.0 question"}], "context": "FILES"},
        {"id": 1, "role": "assistant", "tool_uses": [{"id": "x", "name": "ls", "input": {}}],
         "segments": [{"type": "thinking", "text": "hmm"}, {"type": "text", "text": "yes"}]},
        {"id": 2, "role": "user", "segments": [{"type": "text", "text": "hidden"}], "is_hidden": True},
        {"id": 3, "role": "system", "segments": [{"type": "text", "text": "a system prompt"}]},
    ]}  # fmt: skip
    first = {"summary": "First", "updated_at": "2025-01-01T10:00:00Z",
             "messages": [{"id": 0, "role": "user", "text": "before versions"}]}  # fmt: skip
    rows = [
        ("old", "Older", "2025-06-01T10:00:00Z", "json", json.dumps(older)),
        ("first", "", "2025-01-01T10:00:00Z", "json", json.dumps(first).encode()),
        ("bomb", "A bomb", "2025-01-02T10:00:00Z", "zstd", zstandard.ZstdCompressor().compress(b" " * (65 << 20))),
        ("garbage", "Garbage", "noon", "zstd", b"\x28\xb5\x2f\xfd not zstd"),
        ("typed", "Odd type", "2025-01-03T10:00:00Z", "xml", b"<thread/>"),
        (b"\xff", "Not an id", "2025-01-03T10:00:00Z", "json", b"{}"),
    ]
    zed.db.executemany("INSERT INTO threads VALUES (?, ?, ?, ?, ?)", rows)
    zed.db.close()
    source = ZedSource(tmp_path / "zed")
    listed = {record.header.id: record.header for record in source.listing()}
    assert set(listed) == {"zed:old", "zed:first", "zed:bomb", "zed:garbage", "zed:typed"}
    assert listed["zed:old"].cwd is None and listed["zed:old"].created_at == 1_748_772_000_000
    assert listed["zed:garbage"].created_at == 0
    assert _texts(source, "zed:old") == ["a 0.2.0 question", "yes"]
    assert _texts(source, "zed:first") == ["before versions"]
    assert source.title("zed:first").title == "before versions"  # type: ignore[union-attr]
    for unreadable in ("zed:bomb", "zed:garbage", "zed:typed"):
        with pytest.raises(SessionQueryError) as raised:
            source.surface(unreadable)
        assert raised.value.code == "SESSION_QUERY_INVALID_SURFACE"
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "threads").symlink_to(tmp_path / "zed" / "threads")
    assert ZedSource(linked).listing() == []


def test_the_folder_is_the_first_opened_and_zed_s_data_folder_follows_its_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert first_folder("/a\n/b\n/c", "2,0,1") == "/b"
    assert first_folder("/a\n/b", "9,x") == "/a"  # (an order that does not fit: the first sorted)
    assert first_folder("relative", "0") is None and first_folder(None, None) is None and first_folder("", "") is None
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert zed_root() == tmp_path / "d" / "zed"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert zed_root() == tmp_path / ".local" / "share" / "zed"
