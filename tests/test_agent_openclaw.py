"""OpenClaw (npm ``openclaw``, pinned in ``tests/interop``, on the Node 24 it needs), run offline against
a local stub of an OpenAI-compatible API: a plain chat, a turn calling its ``ls`` tool, a resumed
session and hostile text. sessionref lists what it wrote in its agent's SQLite database, finds it by a
word through ``sessionref mcp --openclaw-root`` and references it. Then the database's corners, in rows
shaped as OpenClaw writes them: a compressed event, an event past the bound, a reset, a moved leaf, a
sub-agent's run, a display name, the older JSONL files beside the database."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
import zstandard

from core import project_conversation
from core.sessions.sources.openclaw import MAX_EVENT_BYTES, OpenClawSource, openclaw_root
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

OPENCLAW = MODULES / "openclaw" / "openclaw.mjs"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_openclaw = pytest.mark.skipif(
    _OPTIONAL and not (OPENCLAW.exists() and NODE24.exists()), reason="OpenClaw is not installed (make interop)"
)


def openclaw(home: Path, work: Path, port: int, message: str) -> str:
    """One turn of ``openclaw agent --local`` with the stub as its one provider (``openclaw.json``)."""
    config = home / ".openclaw" / "openclaw.json"
    if not config.exists():
        config.parent.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": f"http://127.0.0.1:{port}/v1",
            "apiKey": "stub",
            "api": "openai-completions",
            "models": [{"id": "stub-model", "name": "Stub"}],
        }
        settings = {
            "models": {"providers": {"stub": provider}},
            "agents": {"defaults": {"model": {"primary": "stub/stub-model"}}},
        }
        config.write_text(json.dumps(settings))
    command = [str(NODE24), str(OPENCLAW), "agent", "--local", "--agent", "main", "--message", message, "--json"]
    return run(command, work, base_environment(home), timeout=300)


@needs_openclaw
def test_openclaw_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        openclaw(home, work, port, "OW-MARK-1 hello, what is a wombat?")
        openclaw(home, work, port, "OW-MARK-2 please USE A TOOL to list the files")
        openclaw(home, work, port, f"OW-MARK-3 resumed. {HOSTILE}")
    assert tool_turn_made(script)
    folder = home / ".openclaw"
    assert (folder / "agents" / "main" / "agent" / "openclaw-agent.sqlite").is_file()
    # OpenClaw works in its own workspace, whatever folder it was started in: that is its sessions' folder.
    (session_id,) = check_sessions(OpenClawSource(folder), "OW", folder / "workspace")
    check_search("--openclaw-root", folder, "wombat", session_id, tmp_path)


# -- the database's corners ----------------------------------------------------------------------------


def _database(agent: Path) -> sqlite3.Connection:
    """An agent's database with OpenClaw 2026.9's tables (the columns read, and those the rows need)."""
    (agent / "agent").mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(agent / "agent" / "openclaw-agent.sqlite", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(
        """
        CREATE TABLE session_nodes (session_key TEXT PRIMARY KEY, current_session_id TEXT NOT NULL,
            entry_json TEXT NOT NULL, updated_at INTEGER NOT NULL, label TEXT, display_name TEXT);
        CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, parent_session_key TEXT, spawned_by TEXT);
        CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT,
            created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT,
            PRIMARY KEY (session_id, seq));
        """
    )
    return connection


def _entries(db: sqlite3.Connection, session_id: str, entries: list[dict[str, object]], packed: int = -1) -> None:
    """``entries`` as ``session_id``'s events, a header first; the one at ``packed`` zstd-compressed."""
    header = {"type": "session", "version": 4, "id": session_id, "timestamp": "2026-12-07T17:58:45.866Z"}
    for seq, entry in enumerate([{**header, "cwd": "/work/oc"}, *entries]):
        text = json.dumps(entry)
        if seq == packed:
            blob = zstandard.ZstdCompressor().compress(text.encode())
            row = (session_id, seq, None, 1_796_666_325_866 + seq, blob, len(text.encode()), "{}")
        else:
            row = (session_id, seq, text, 1_796_666_325_866 + seq, None, None, None)
        db.execute("INSERT INTO transcript_events VALUES (?, ?, ?, ?, ?, ?, ?)", row)


def _message(entry_id: str, parent: str | None, role: str, text: str, **more: object) -> dict[str, object]:
    content: object = text if role == "user" else [{"type": "text", "text": text}]
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "message": {"role": role, "content": content, **more},
    }


def _listed(source: OpenClawSource) -> dict[str, list[str]]:
    return {
        r.header.id: [item.text for item in project_conversation(source.surface(r.header.id))] for r in source.listing()
    }


def test_what_openclaw_builds_its_model_s_context_from_is_read(tmp_path: Path) -> None:
    root = tmp_path / ".openclaw"
    db = _database(root / "agents" / "main")
    _entries(
        db,
        "s1",
        [
            _message("a", None, "user", "first question"),
            _message("b", "a", "assistant", "first answer"),
            {"type": "custom", "customType": "openclaw:bootstrap-context:full", "id": "c", "parentId": "b"},
            _message("d", "c", "user", "a retry that was left"),
            {"type": "leaf", "id": "e", "parentId": "d", "targetId": "c"},  # (the tip moved back)
            _message("f", "e", "user", "the question that stayed"),
            _message("g", "f", "assistant", "x" * 100, excludeFromContext=True),
            _message("h", "g", "assistant", "a compressed answer"),
        ],
        packed=8,
    )
    db.execute("INSERT INTO session_nodes VALUES ('agent:main:main', 's1', '{}', 0, NULL, 'Wombat facts')")
    # A reset keeps what it names, and starts the conversation again after it.
    _entries(
        db,
        "s2",
        [
            _message("a", None, "user", "forgotten"),
            _message("b", "a", "user", "kept by the reset"),
            _message("c", "b", "assistant", "kept too"),
            {"type": "reset", "id": "d", "parentId": "c", "reason": "new", "firstKeptEntryId": "b"},
            _message("e", "d", "user", "after the reset"),
        ],
    )
    # A sub-agent's run is its parent's business; an event past the bound is left out and counted.
    _entries(db, "sub", [_message("a", None, "user", "a sub-agent's task")])
    db.execute("INSERT INTO session_windows VALUES ('sub', 'agent:main:subagent:1', 0, 0, 'agent:main:main', 'main')")
    _entries(db, "big", [_message("a", None, "user", "y" * (MAX_EVENT_BYTES + 1)), _message("b", "a", "user", "ok")])
    source = OpenClawSource(root)
    assert _listed(source) == {
        "openclaw:s1": ["first question", "first answer", "the question that stayed", "a compressed answer"],
        "openclaw:s2": ["kept by the reset", "kept too", "after the reset"],
        "openclaw:big": ["ok"],  # (the line before it, too large, is left out)
    }
    assert source.title("openclaw:s1").title == "Wombat facts"  # type: ignore[union-attr]
    assert source.title("openclaw:s2").title == "forgotten"  # type: ignore[union-attr]  (its first prompt)
    assert source.session("openclaw:big").problems == 1
    (record,) = [r for r in source.listing() if r.header.id == "openclaw:s1"]
    assert (record.header.cwd, record.header.created_at) == ("/work/oc", 1_796_666_325_866)
    # What OpenClaw adds later is read again, and nothing is made beside its database.
    folder = root / "agents" / "main" / "agent"
    before = sorted(path.name for path in folder.iterdir())
    _entries(db, "s3", [_message("a", None, "user", "a new session")])
    assert _listed(source)["openclaw:s3"] == ["a new session"]
    assert sorted(path.name for path in folder.iterdir()) == before


def test_the_older_jsonl_files_are_read_and_a_transcript_in_both_is_listed_once(tmp_path: Path) -> None:
    root = tmp_path / ".openclaw"
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    header = {"type": "session", "version": 3, "timestamp": "2026-04-02T10:00:00.000Z", "cwd": "/work/old"}
    for session_id, said in (("old1", "from the 2026.4 files"), ("moved", "a file the database holds too")):
        lines = [{**header, "id": session_id}, _message("a", None, "user", said)]
        (sessions / f"{session_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (sessions / "sessions.json").write_text("{}")
    (sessions / "broken.jsonl").write_text("not json\n")
    db = _database(root / "agents" / "main")
    _entries(db, "moved", [_message("a", None, "user", "as the database has it")])
    source = OpenClawSource(root)
    assert _listed(source) == {
        "openclaw:old1": ["from the 2026.4 files"],
        "openclaw:moved": ["as the database has it"],
    }
    assert [problem.path.name for problem in source.problems] == ["broken.jsonl"]


def test_odd_rows_and_links_out_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / ".openclaw"
    db = _database(root / "agents" / "main")
    db.execute("INSERT INTO transcript_events VALUES (7, 0, '{not json', 'when', x'00', -1, NULL)")
    db.execute("INSERT INTO transcript_events VALUES ('odd', 0, '[1, 2]', 9e999, NULL, NULL, NULL)")
    db.execute("INSERT INTO transcript_events VALUES ('odd', 1, NULL, 0, x'28b52ffd', 10, '{}')")  # (a torn frame)
    db.execute("INSERT INTO transcript_events VALUES ('odd', 2, NULL, 0, x'00', 99999999999, '{}')")
    _entries(db, "fine", [_message("a", None, "user", "still read")])
    # Another agent whose folder is a link out of OpenClaw's is not read.
    elsewhere = tmp_path / "elsewhere"
    _entries(_database(elsewhere), "outside", [_message("a", None, "user", "never read")])
    (root / "agents" / "linked").symlink_to(elsewhere)
    source = OpenClawSource(root)
    # (SQLite keeps the integer 7 as the text "7" in a TEXT column: a session id like any other)
    assert _listed(source) == {"openclaw:fine": ["still read"], "openclaw:odd": [], "openclaw:7": []}
    assert source.session("openclaw:odd").problems == 3
    (odd,) = [r for r in source.listing() if r.header.id == "openclaw:odd"]
    assert (odd.header.created_at, odd.header.cwd) == (0, None)


def test_its_folder_follows_openclaw_s_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert openclaw_root() == tmp_path / ".openclaw"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    assert openclaw_root() == tmp_path / "state"
