"""Hermes Agent (``hermes-agent``, pinned in ``tests/interop/python/hermes.txt``, in its own
virtualenv), run offline against a local stub of an OpenAI-compatible API (``config.yaml``'s
``custom`` provider): a plain chat, a continued turn calling its ``terminal`` tool, and hostile text.
sessionref lists what it wrote in ``state.db`` with its folder, finds it by a word through
``sessionref mcp --hermes-root`` and references it. Then the database's corners, in rows shaped as
Hermes writes them (its ``hermes_state.py``): compaction and rewind, a compression's continuation, a
``/branch``, a sub-agent, structured content."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from core import project_conversation
from core.sessions.sources.hermes import HermesSource, hermes_root
from tests.support.rc8 import INTEROP
from tests.test_agents_real import (
    HOSTILE,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    offered_tools,
    run,
    setup_work,
    stub,
    tool_messages,
    tool_turn_made,
)

HERMES = INTEROP / "python" / ".venv-hermes" / "bin" / "hermes"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_hermes = pytest.mark.skipif(
    _OPTIONAL and not HERMES.exists(), reason="Hermes Agent is not installed (make agents)"
)


def hermes_config(home: Path, port: int) -> None:
    """``config.yaml`` with the stub as its ``custom`` provider (once: ``hermes mcp add`` adds to it)."""
    config = home / ".hermes" / "config.yaml"
    if not config.exists():
        config.parent.mkdir(parents=True, exist_ok=True)
        model = f"  default: stub-model\n  provider: custom\n  base_url: http://127.0.0.1:{port}/v1\n  api_key: stub\n"
        config.write_text("model:\n" + model)


def hermes(home: Path, work: Path, port: int, *arguments: str, path: str | None = None) -> str:
    hermes_config(home, port)
    environment = {**base_environment(home), "OPENAI_API_KEY": "stub", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    if path is not None:
        environment["PATH"] = path
    return run([str(HERMES), "chat", "-Q", "--yolo", *arguments], work, environment)


@needs_hermes
def test_hermes_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        hermes(home, work, port, "-q", "HE-MARK-1 hello, what is a wombat?")
        hermes(home, work, port, "--continue", "-q", "HE-MARK-2 please USE A TOOL to list the files")
        hermes(home, work, port, "--continue", "-q", f"HE-MARK-3 resumed. {HOSTILE}")
    assert tool_turn_made(script)
    folder = home / ".hermes"
    (session_id,) = check_sessions(HermesSource(folder), "HE", work)
    check_search("--hermes-root", folder, "wombat", session_id, tmp_path)


# -- the database's corners ----------------------------------------------------------------------------


def _database(folder: Path) -> sqlite3.Connection:
    """A ``state.db`` with Hermes 0.19's two tables (the columns read, and those the rows need)."""
    folder.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(folder / "state.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(
        """
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model_config TEXT, parent_session_id TEXT,
            started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, cwd TEXT, title TEXT,
            archived INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
        """
    )
    return connection


def _session(db: sqlite3.Connection, session_id: str, **columns: object) -> None:
    row = {"id": session_id, "source": "cli", "started_at": 1_796_574_856.177, "cwd": "/work/he", **columns}
    db.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def _say(db: sqlite3.Connection, session_id: str, role: str, content: str, active: int = 1, compacted: int = 0) -> None:
    db.execute(
        "INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, role, content, 1_796_574_857.0, active, compacted),
    )


def _listed(source: HermesSource) -> dict[str, list[str]]:
    return {
        r.header.id: [item.text for item in project_conversation(source.surface(r.header.id))] for r in source.listing()
    }


def test_what_hermes_sends_its_model_is_read(tmp_path: Path) -> None:
    db = _database(tmp_path / ".hermes")
    _session(db, "s1", title="Storage design")
    _say(db, "s1", "system", "you are Hermes")
    _say(db, "s1", "user", "summarized away", active=0, compacted=1)
    _say(db, "s1", "user", "taken back", active=0)
    _say(db, "s1", "user", "\x00json:" + '[{"type": "text", "text": "look at this"}, {"type": "image_url"}]')
    _say(db, "s1", "assistant", "")
    _say(db, "s1", "tool", "SECRET-TOOL-OUTPUT")
    _say(db, "s1", "assistant", "it is a lock")
    # An older compression continued the conversation in a child; a sub-agent's run is its own.
    db.execute("UPDATE sessions SET end_reason = 'compression' WHERE id = 's1'")
    _session(db, "s1-cont", parent_session_id="s1", started_at=1_796_574_900.0)
    _say(db, "s1-cont", "user", "and then?")
    _session(db, "sub", parent_session_id="s1-cont", started_at=1_796_574_950.0)
    _say(db, "sub", "user", "a sub-agent's task")
    # A /branch is listed; an archived session is not.
    _session(db, "br", parent_session_id="s1", model_config='{"_branched_from": "s1"}', started_at=1_796_575_000.0)
    _say(db, "br", "user", "another way")
    _session(db, "old", archived=1)
    _say(db, "old", "user", "archived")
    source = HermesSource(tmp_path / ".hermes")
    assert _listed(source) == {
        "hermes:br": ["another way"],
        "hermes:s1": ["look at this", "it is a lock", "and then?"],
    }
    assert source.title("hermes:s1").title == "Storage design"  # type: ignore[union-attr]
    assert source.title("hermes:br").title == "another way"  # type: ignore[union-attr]
    (record,) = [r for r in source.listing() if r.header.id == "hermes:s1"]
    assert (record.header.cwd, record.header.created_at) == ("/work/he", 1_796_574_856_177)
    # What Hermes adds later is read again (a new revision), and no file is made beside its database.
    before = sorted(path.name for path in (tmp_path / ".hermes").iterdir())
    _say(db, "s1-cont", "assistant", "then it retried")
    assert _listed(source)["hermes:s1"][-1] == "then it retried"
    assert sorted(path.name for path in (tmp_path / ".hermes").iterdir()) == before


def test_odd_rows_and_a_loop_of_links_are_read_around(tmp_path: Path) -> None:
    db = _database(tmp_path / ".hermes")
    _session(db, "a", end_reason="compression", model_config="{not json", started_at=1e300)
    _session(db, "b", parent_session_id="a", end_reason="compression")
    db.execute("UPDATE sessions SET parent_session_id = 'b' WHERE id = 'a'")  # (a loop: neither is a root)
    _session(db, "c", started_at="yesterday", title=7, cwd=b"\xff")
    _say(db, "c", "user", "still read")
    db.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('c', 'assistant', x'ff', 'when')")
    source = HermesSource(tmp_path / ".hermes")
    assert _listed(source) == {"hermes:c": ["still read"]}
    (record,) = source.listing()
    assert (record.header.created_at, record.header.cwd) == (0, None)


def test_its_folder_follows_hermes_s_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hermes_root() == tmp_path / ".hermes"
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "h"))
    assert hermes_root() == tmp_path / "h"


@needs_hermes
def test_hermes_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    import re

    from tests.test_agents_real import _said, docs_command, sessionref_on_path
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    with stub(_OpenAI) as (port, script):
        hermes_config(home, port)
        # It connects to the server, lists its tools and asks whether to enable them: yes.
        done = subprocess.run(
            [str(HERMES), *docs_command("hermes")], cwd=work, env={**base_environment(home), "PATH": path},
            input="y\n", capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0 and "Connected" in done.stdout, done.stdout + done.stderr
        hermes(home, work, port, "-q", "REFERENCE DESIGN please", path=path)
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    results = [_said(m.get("content")) for m in tool_messages(script)]
    # Hermes hands its model an MCP result as JSON ({"result": ...}) inside an <untrusted_tool_result>
    # block of its own: the snapshot is in it, whole.
    wrapped = [re.search(r"\n\n(\{.*\})\n</untrusted_tool_result>", result, re.S) for result in results]
    inner = [json.loads(found.group(1))["result"] for found in wrapped if found is not None]
    assert any(text.endswith("\n\n" + snapshot(root)) for text in inner), [result[:300] for result in results]
