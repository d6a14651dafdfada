"""llm (``llm``, pinned in ``tests/interop/python/llm.txt``, in its own virtualenv), run offline against
a local stub of an OpenAI-compatible API (``extra-openai-models.yaml``'s ``api_base``): a plain chat,
a continued one (``-c``) calling a function given with ``--functions``, a continued one with hostile
text, and a second conversation whose prompt borrows a fragment (``-f``). sessionref lists what it
wrote, finds it by a word through ``sessionref mcp --llm-root`` and references it. Then the database's
corners, in rows shaped as llm writes them: the older ``conversations`` and ``responses`` tables
alone and beside threads, a fork, texts too large, rows of odd types, a database being written."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.files import millis
from core.sessions.sources.llm import MAX_TEXT_BYTES, LlmSource, llm_root
from tests.support.rc8 import INTEROP
from tests.test_agents_real import (
    HOSTILE,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)

LLM = INTEROP / "python" / ".venv-llm" / "bin" / "llm"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_llm = pytest.mark.skipif(_OPTIONAL and not LLM.exists(), reason="llm is not installed (make agents)")

FUNCTIONS = """
def ls(dir_path: str = "", path: str = "", pattern: str = "", command: str = "", commands: list = None) -> str:
    return "SECRET-TOOL-OUTPUT"
"""


def llm(home: Path, work: Path, *arguments: str) -> str:
    environment = {**base_environment(home), "OPENAI_API_KEY": "stub"}
    return run([str(LLM), *arguments], work, environment)


def _texts(source: LlmSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_llm
def test_llm_conversations_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    folder = home / ".config" / "io.datasette.llm"
    folder.mkdir(parents=True)
    (work / "notes.txt").write_text("A fragment about numbats.\n")
    with stub(_OpenAI) as (port, script):
        (folder / "extra-openai-models.yaml").write_text(
            f'- model_id: stub\n  model_name: stub-model\n  api_base: "http://127.0.0.1:{port}/v1"\n'
            "  supports_tools: true\n"
        )
        llm(home, work, "-m", "stub", "LM-MARK-1 hello, what is a wombat?")
        llm(home, work, "-c", "--functions", FUNCTIONS, "LM-MARK-2 please USE A TOOL to list the files")
        llm(home, work, "-c", f"LM-MARK-3 continued. {HOSTILE}")
        llm(home, work, "-m", "stub", "-f", "notes.txt", "a second conversation about quokkas")
    assert tool_turn_made(script)
    source = LlmSource(folder)
    ids = check_sessions(source, "LM", None)  # (llm keeps no folder)
    assert len(ids) == 2
    said = {session_id: _texts(source, session_id) for session_id in ids}
    (marked,) = [i for i, texts in said.items() if "LM-MARK-1" in texts[0]]
    (quokka,) = [i for i in ids if i != marked]
    assert said[quokka][0] == "A fragment about numbats.\n\na second conversation about quokkas"
    assert source.title(marked).title.startswith("LM-MARK-1 hello")  # type: ignore[union-attr]
    times = [event.time for event in source.surface(marked).events]
    assert times == sorted(times) and times[0] < times[-1]
    check_search("--llm-root", folder, "numbats", quokka, tmp_path)


# -- the database's corners -------------------------------------------------------------------------------

LEGACY = """
CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
CREATE TABLE responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT, system TEXT, prompt_json TEXT,
  options_json TEXT, response TEXT, response_json TEXT, conversation_id TEXT REFERENCES conversations(id),
  duration_ms INTEGER, datetime_utc TEXT);
"""
THREADS = """
CREATE TABLE messages (hash TEXT PRIMARY KEY, parent_hash TEXT, role TEXT, provider_metadata TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, message_hash TEXT, position INTEGER, type TEXT, tool_name TEXT,
  text TEXT, payload TEXT);
CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT, tip_message_hash TEXT, forked_from TEXT, datetime_utc TEXT);
CREATE TABLE turns (id TEXT PRIMARY KEY, thread_id TEXT, parent_message_hash TEXT, tip_message_hash TEXT,
  model TEXT, datetime_utc TEXT);
CREATE TABLE fragments (id INTEGER PRIMARY KEY, hash TEXT, content TEXT, datetime_utc TEXT, source TEXT);
"""


def _database(folder: Path, schema: str) -> sqlite3.Connection:
    folder.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(folder / "logs.db", isolation_level=None)
    connection.executescript(schema)
    return connection


def _response(db: sqlite3.Connection, row: str, conversation: str, prompt: Any, response: Any, time: str) -> None:
    db.execute(
        "INSERT INTO responses (id, model, prompt, response, conversation_id, datetime_utc)"
        " VALUES (?, 'm', ?, ?, ?, ?)",
        (row, prompt, response, conversation, time),
    )


def test_an_older_database_s_conversations_are_read_from_their_responses(tmp_path: Path) -> None:
    db = _database(tmp_path / "llm", LEGACY)
    db.execute("INSERT INTO conversations VALUES ('01h0older', 'An older chat', 'gpt-4o-mini')")
    _response(db, "01h0a", "01h0older", "first question", "an answer", "2024-05-01T10:00:00.000000")
    _response(db, "01h0b", "01h0older", "second question", None, "2024-05-01T10:01:00.000000")
    _response(db, "01h0c", "01h0older", None, "an answer to a tool result", "noon")
    db.close()
    source = LlmSource(tmp_path / "llm")
    (record,) = source.listing()
    assert record.header.id == "llm:01h0older" and record.header.cwd is None
    assert record.header.created_at == millis("2024-05-01T10:00:00.000000+00:00")
    assert _texts(source, record.header.id) == [
        "first question",
        "an answer",
        "second question",
        "an answer to a tool result",
    ]
    assert source.title(record.header.id).title == "An older chat"  # type: ignore[union-attr]


def _message(db: sqlite3.Connection, hash_: str, parent: str | None, role: str, *parts: tuple[str, Any, Any]) -> None:
    db.execute("INSERT INTO messages VALUES (?, ?, ?, NULL)", (hash_, parent, role))
    for position, (kind, text, payload) in enumerate(parts):
        db.execute(
            "INSERT INTO parts (message_hash, position, type, text, payload) VALUES (?, ?, ?, ?, ?)",
            (hash_, position, kind, text, payload),
        )


def _threads(folder: Path) -> sqlite3.Connection:
    db = _database(folder, LEGACY + THREADS)
    _message(db, "h1", None, "system", ("text", "You are terse.", None))
    _message(db, "h2", "h1", "user", ("text", None, '{"text_ref": [{"fragment": 1}, {"literal": "\\n\\nsummarize"}]}'))
    _message(db, "h3", "h2", "assistant", ("reasoning", "hmm", None), ("text", "a summary", None),
             ("tool_call", None, '{"name": "ls", "arguments": {}}'))  # fmt: skip
    _message(db, "h4", "h3", "user", ("tool_result", None, '{"output": "SECRET-TOOL-OUTPUT"}'))
    _message(db, "h5", "h4", "assistant", ("text", "done", None))
    db.execute("INSERT INTO fragments (id, hash, content) VALUES (1, 'f', 'A fragment.')")
    db.execute("INSERT INTO threads VALUES ('01t', 'A thread', 'h5', NULL, '2026-12-07 19:10:54.472852+00:00')")
    turns = [
        ("01ta", "h2", "h3", "2026-12-07T19:10:54.343823+00:00"),
        ("01tb", "h4", "h5", "2026-12-07T19:11:00+00:00"),
    ]
    for turn, parent, tip, time in turns:
        db.execute("INSERT INTO turns VALUES (?, '01t', ?, ?, 'm', ?)", (turn, parent, tip, time))
    return db


def test_a_thread_is_its_chain_with_fragments_resolved_and_each_message_at_its_turn_s_time(tmp_path: Path) -> None:
    db = _threads(tmp_path / "llm")
    # A fork shares the chain up to the message it branched at; the older tables' rows of the same
    # conversation (llm wrote both for a while) are not read again.
    _message(db, "h6", "h3", "user", ("text", "a fork's question", None))
    db.execute("INSERT INTO threads VALUES ('01u', NULL, 'h6', '01t', '2026-12-07 19:12:00+00:00')")
    db.execute("INSERT INTO conversations VALUES ('01t', 'A thread', 'm')")
    _response(db, "01ta", "01t", "dual-written", "not read twice", "2026-12-07T19:10:54")
    db.close()
    source = LlmSource(tmp_path / "llm")
    assert sorted(record.header.id for record in source.listing()) == ["llm:01t", "llm:01u"]
    assert _texts(source, "llm:01t") == ["A fragment.\n\nsummarize", "a summary", "done"]
    times = [event.time for event in source.surface("llm:01t").events]
    assert times == [millis("2026-12-07T19:10:54.343823+00:00")] * 2 + [millis("2026-12-07T19:11:00+00:00")]
    assert _texts(source, "llm:01u") == ["A fragment.\n\nsummarize", "a summary", "a fork's question"]
    assert source.title("llm:01u").title == "A fragment. summarize"  # type: ignore[union-attr]


def test_texts_too_large_loops_and_odd_rows_are_read_around(tmp_path: Path) -> None:
    db = _threads(tmp_path / "llm")
    db.execute("UPDATE parts SET text = ? WHERE message_hash = 'h5'", ("x" * (MAX_TEXT_BYTES + 1),))
    _message(db, "loop-a", "loop-b", "user", ("text", "in a loop", None))
    _message(db, "loop-b", "loop-a", "assistant", ("text", b"\xff blob", None), ("text", 5, "not json"))
    db.execute("INSERT INTO threads VALUES ('01l', 5, 'loop-b', NULL, 'noon')")
    db.execute("INSERT INTO threads VALUES (X'07', 'a blob id', 'h5', NULL, NULL)")
    db.execute("INSERT INTO threads VALUES ('01n', 'no tip', NULL, NULL, NULL)")
    db.close()
    source = LlmSource(tmp_path / "llm")
    assert sorted(record.header.id for record in source.listing()) == ["llm:01l", "llm:01t"]
    assert _texts(source, "llm:01t") == ["A fragment.\n\nsummarize", "a summary"]
    assert _texts(source, "llm:01l") == ["in a loop", "5"]  # (a loop read once; SQLite stored 5 as text)


def test_a_database_llm_is_writing_is_read_without_disturbing_it(tmp_path: Path) -> None:
    db = _threads(tmp_path / "llm")
    source = LlmSource(tmp_path / "llm")
    assert [record.header.id for record in source.listing()] == ["llm:01t"]
    db.execute("BEGIN EXCLUSIVE")
    with pytest.raises(SessionQueryError) as raised:
        source.surface("llm:01t")
    assert raised.value.code == "SESSION_QUERY_SOURCE_BUSY"
    db.execute("ROLLBACK")
    assert _texts(source, "llm:01t")[-1] == "done"
    db.close()
    assert sorted(path.name for path in (tmp_path / "llm").iterdir()) == ["logs.db"]


def test_llm_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "u"))
    assert llm_root() == tmp_path / "u"
    monkeypatch.delenv("LLM_USER_PATH")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert llm_root() == tmp_path / "c" / "io.datasette.llm"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert llm_root() == tmp_path / ".config" / "io.datasette.llm"
