"""Fuzz targets over the other agents' formats that are not JSONL: the SQLite rows Hermes Agent,
opencode, OpenClaw, llm, Crush, Goose, Cursor, Zed and Kiro CLI keep (``agent_rows``) and the YAML a Copilot CLI
session folder holds (``agent_yaml``).

``agent_rows`` makes the input's bytes into rows: pieces of its text, and values of every column
type (reals, integers past 64 bits' reach, blobs, NULLs, lone surrogates, JSON of another shape),
chosen by the input's CRC, in each of those databases (OpenClaw's events and Zed's threads also
zstd-compressed, llm's message chains, fragments and older responses). Every session listed reads and
projects, or is refused with a documented code; no file appears beside a database and none changes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from core import SessionQueryError, project_conversation
from core.sessions.sources.copilot import CopilotCliSource
from core.sessions.sources.crush import CrushSource
from core.sessions.sources.cursor import CursorSource
from core.sessions.sources.goose import GooseSource
from core.sessions.sources.hermes import HermesSource
from core.sessions.sources.kiro import KiroSource
from core.sessions.sources.llm import LlmSource
from core.sessions.sources.openclaw import OpenClawSource
from core.sessions.sources.opencode import OpenCodeSource
from core.sessions.sources.zed import ZedSource
from fuzz.kit import check, outcome_of, rng_of, run_async, text_of

_ODD: list[Any] = [
    None,
    0,
    -1,
    1.5,
    float("inf"),
    2**62,
    b"\xff\x00",
    "",
    "\x00json:[",
    "\x00json:{}",
    "{not json",
    "[]",
]


def _value(rng: random.Random, pieces: list[str]) -> Any:
    """A column's value: a piece of the input's text most of the time, else an odd value."""
    return rng.choice(pieces) if pieces and rng.random() < 0.6 else rng.choice(_ODD)


def _pieces(data: bytes) -> list[str]:
    text = text_of(data).encode("utf-8", "replace").decode("utf-8")  # (SQLite takes no lone surrogate)
    return [piece for piece in text.split("\n") if piece] or [text]


def agent_rows(data: bytes) -> str:
    """Rows of any shape in Hermes's and opencode's databases: each source lists and reads them or
    refuses with a code; their folders are left as they were."""
    rng, pieces = rng_of(data), _pieces(data)
    base = Path(tempfile.mkdtemp(prefix="sessionref-fuzz-rows-"))
    try:
        outcomes = [
            _hermes(base / "hermes", rng, pieces),
            _opencode(base / "opencode", rng, pieces),
            _openclaw(base / "openclaw", rng, pieces),
            _llm(base / "llm", rng, pieces),
            _crush(base / "crush", rng, pieces),
            _goose(base / "goose", rng, pieces),
            _cursor(base / "cursor", rng, pieces),
            _zed(base / "zed", rng, pieces),
            _kiro(base / "kiro", rng, pieces),
        ]
        return "+".join(outcomes)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _written(folder: Path, schema: str, rows: list[tuple[str, tuple[Any, ...]]], name: str) -> Path:
    folder.mkdir(parents=True)
    connection = sqlite3.connect(folder / name)
    # No fsync and no journal file while building it: a disk busy with other tests' writes once held one
    # input past libFuzzer's second. (Neither setting is kept in the file the readers open.)
    connection.executescript("PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF;" + schema)
    for statement, values in rows:
        connection.execute(statement, values)
    connection.commit()
    connection.close()
    return folder / name


def _hermes(folder: Path, rng: random.Random, pieces: list[str]) -> str:
    schema = """
    CREATE TABLE sessions (id TEXT, source TEXT, model_config TEXT, parent_session_id TEXT, started_at REAL,
        ended_at REAL, end_reason TEXT, cwd TEXT, title TEXT, archived INTEGER);
    CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, timestamp REAL,
        active INTEGER, compacted INTEGER);
    """
    ids = ["s1", "s2", rng.choice(pieces)]
    rows: list[tuple[str, tuple[Any, ...]]] = []
    for session_id in ids:
        rows.append((
            "INSERT INTO sessions VALUES (?, 'cli', ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, rng.choice(['{"_branched_from": "s1"}', _value(rng, pieces)]), rng.choice([None, *ids]),
             _value(rng, pieces), _value(rng, pieces), rng.choice(["compression", "branched", None]),
             _value(rng, pieces), _value(rng, pieces), rng.choice([0, 0, 1, _value(rng, pieces)])),
        ))  # fmt: skip
    for _ in range(rng.randrange(0, 12)):
        rows.append((
            "INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES (?, ?, ?, ?, ?, ?)",
            (rng.choice(ids), rng.choice(["user", "assistant", "tool", _value(rng, pieces)]), _value(rng, pieces),
             _value(rng, pieces), rng.choice([1, 1, 0, _value(rng, pieces)]), rng.choice([0, 1])),
        ))  # fmt: skip
    database = _written(folder, schema, rows, "state.db")
    return _read_all(HermesSource(folder), folder, database)


def _opencode(folder: Path, rng: random.Random, pieces: list[str]) -> str:
    schema = """
    CREATE TABLE session (id TEXT, project_id TEXT, parent_id TEXT, slug TEXT, directory TEXT, title TEXT,
        version TEXT, time_created INTEGER, time_updated INTEGER);
    CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
    CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER,
        data TEXT);
    """
    ids = ["ses_1", rng.choice(pieces)]
    rows: list[tuple[str, tuple[Any, ...]]] = []
    for session_id in ids:
        rows.append((
            "INSERT INTO session VALUES (?, 'p', ?, 's', ?, ?, '1', ?, ?)",
            (session_id, rng.choice([None, None, *ids]), _value(rng, pieces), _value(rng, pieces),
             _value(rng, pieces), _value(rng, pieces)),
        ))  # fmt: skip
    for number in range(rng.randrange(0, 8)):
        data = rng.choice([json.dumps({"role": rng.choice(["user", "assistant"])}), _value(rng, pieces)])
        rows.append(("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                     (f"msg_{number}", rng.choice(ids), _value(rng, pieces), 0, data)))  # fmt: skip
        part = rng.choice([json.dumps({"type": "text", "text": rng.choice(pieces)}), _value(rng, pieces)])
        rows.append(("INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)", (f"prt_{number}", f"msg_{number}", "x", part)))
    database = _written(folder, schema, rows, "opencode.db")
    return _read_all(OpenCodeSource(folder, database=database), folder, database)


def _openclaw(root: Path, rng: random.Random, pieces: list[str]) -> str:
    import zstandard

    schema = """
    CREATE TABLE session_nodes (session_key TEXT, current_session_id TEXT, entry_json TEXT, updated_at INTEGER,
        label TEXT, display_name TEXT);
    CREATE TABLE session_windows (session_id TEXT, session_key TEXT, created_at INTEGER, updated_at INTEGER,
        parent_session_key TEXT, spawned_by TEXT);
    CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,
        event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT);
    """
    ids = ["s1", rng.choice(pieces)]
    header = json.dumps({"type": "session", "version": 4, "id": "s1", "timestamp": rng.choice(pieces), "cwd": "/w"})
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ("INSERT INTO transcript_events VALUES ('s1', 0, ?, 0, NULL, NULL, NULL)", (header,)),
        ("INSERT INTO session_nodes VALUES ('agent:main:main', ?, '{}', 0, ?, ?)",
         (rng.choice(ids), _value(rng, pieces), _value(rng, pieces))),
        ("INSERT INTO session_windows VALUES (?, 'k', 0, 0, ?, ?)",
         (rng.choice(ids), rng.choice([None, _value(rng, pieces)]), None)),
    ]  # fmt: skip
    entries = [None]
    for seq in range(1, rng.randrange(1, 10)):
        parent = rng.choice(entries)
        kind = rng.choice(["message", "message", "compaction", "reset", "leaf", rng.choice(pieces)])
        entry = {"type": kind, "id": f"e{seq}", "parentId": parent, "targetId": rng.choice(entries),
                 "firstKeptEntryId": rng.choice(entries), "summary": rng.choice(pieces),
                 "message": {"role": rng.choice(["user", "assistant"]), "content": rng.choice(pieces)}}  # fmt: skip
        entries.append(f"e{seq}")
        text = rng.choice([json.dumps(entry), _value(rng, pieces)])
        if type(text) is str and rng.random() < 0.3:
            raw = text.encode()
            packed = rng.choice([zstandard.ZstdCompressor().compress(raw), raw[:9], b"\x28\xb5\x2f\xfd"])
            values: tuple[Any, ...] = (rng.choice(ids), seq, None, packed, rng.choice([len(raw), _value(rng, pieces)]))
        else:
            values = (rng.choice(ids), rng.choice([seq, _value(rng, pieces)]), text, None, None)
        rows.append(("INSERT INTO transcript_events VALUES (?, ?, ?, 0, ?, ?, NULL)", values))
    folder = root / "agents" / "main" / "agent"
    database = _written(folder, schema, rows, "openclaw-agent.sqlite")
    return _read_all(OpenClawSource(root), folder, database)


def _llm(folder: Path, rng: random.Random, pieces: list[str]) -> str:
    schema = """
    CREATE TABLE messages (hash TEXT PRIMARY KEY, parent_hash TEXT, role TEXT, provider_metadata TEXT);
    CREATE TABLE parts (id INTEGER PRIMARY KEY, message_hash TEXT, position INTEGER, type TEXT, tool_name TEXT,
        text TEXT, payload TEXT);
    CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT, tip_message_hash TEXT, forked_from TEXT, datetime_utc TEXT);
    CREATE TABLE turns (id TEXT PRIMARY KEY, thread_id TEXT, parent_message_hash TEXT, tip_message_hash TEXT,
        model TEXT, datetime_utc TEXT);
    CREATE TABLE fragments (id INTEGER PRIMARY KEY, hash TEXT, content TEXT);
    CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
    CREATE TABLE responses (id TEXT PRIMARY KEY, prompt TEXT, response TEXT, conversation_id TEXT,
        datetime_utc TEXT);
    """
    hashes: list[Any] = [None]
    rows: list[tuple[str, tuple[Any, ...]]] = [("INSERT INTO fragments VALUES (1, 'f', ?)", (_value(rng, pieces),))]
    for number in range(1, rng.randrange(2, 10)):
        hashes.append(f"h{number}")
        rows.append(
            (
                "INSERT INTO messages VALUES (?, ?, ?, NULL)",
                (f"h{number}", rng.choice(hashes), rng.choice(["user", "assistant", _value(rng, pieces)])),
            )
        )
        payload = rng.choice([None, '{"text_ref": [{"fragment": 1}, {"literal": "x"}]}', _value(rng, pieces)])
        rows.append(
            (
                "INSERT INTO parts VALUES (NULL, ?, 0, ?, NULL, ?, ?)",
                (f"h{number}", rng.choice(["text", "tool_call"]), _value(rng, pieces), payload),
            )
        )
        rows.append(
            (
                "INSERT INTO turns VALUES (?, 't1', ?, ?, 'm', ?)",
                (f"u{number}", rng.choice(hashes), rng.choice(hashes), _value(rng, pieces)),
            )
        )
    rows += [
        ("INSERT INTO threads VALUES ('t1', ?, ?, NULL, ?)", (_value(rng, pieces), hashes[-1], _value(rng, pieces))),
        ("INSERT INTO conversations VALUES (?, ?, 'm')", (rng.choice(["t1", "c1"]), _value(rng, pieces))),
        ("INSERT INTO responses VALUES ('r1', ?, ?, 'c1', ?)",
         (_value(rng, pieces), _value(rng, pieces), _value(rng, pieces))),
    ]  # fmt: skip
    database = _written(folder, schema, rows, "logs.db")
    return _read_all(LlmSource(folder), folder, database)


_CRUSH_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT, message_count INTEGER DEFAULT 0,
    updated_at INTEGER, created_at INTEGER, summary_message_id TEXT);
CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, parts TEXT, created_at INTEGER,
    updated_at INTEGER);
"""
"""Crush's two tables (its migrations' columns, without NOT NULL: a file may hold anything)."""


def _crush(root: Path, rng: random.Random, pieces: list[str]) -> str:
    project = root / "app"
    ids = ["m0", "m1", "m2", rng.choice(pieces)]
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ("INSERT INTO sessions (id, parent_session_id, title, updated_at, created_at, summary_message_id)"
         " VALUES ('s1', ?, ?, ?, ?, ?)",
         (rng.choice([None, _value(rng, pieces)]), _value(rng, pieces), 1, _value(rng, pieces), rng.choice(ids))),
    ]  # fmt: skip
    for number in range(rng.randrange(1, 6)):
        parts = rng.choice([json.dumps([{"type": "text", "data": {"text": rng.choice(pieces)}}]), _value(rng, pieces)])
        role = rng.choice(["user", "assistant", _value(rng, pieces)])
        rows.append(("INSERT INTO messages (id, session_id, role, parts, created_at, updated_at)"
                     " VALUES (?, 's1', ?, ?, ?, 0)", (f"m{number}", role, parts, _value(rng, pieces))))  # fmt: skip
    database = _written(project / ".crush", _CRUSH_SCHEMA, rows, "crush.db")
    (root / "projects.json").write_text(
        json.dumps({"projects": [{"path": str(project), "data_dir": str(project / ".crush")}]})
    )
    return _read_all(CrushSource(root), project / ".crush", database)


def _goose(root: Path, rng: random.Random, pieces: list[str]) -> str:
    schema = """
    CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT, description TEXT, session_type TEXT, working_dir TEXT,
        created_at TIMESTAMP);
    CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content_json TEXT,
        created_timestamp INTEGER, metadata_json TEXT);
    """
    flags = ['{"userVisible": true, "agentVisible": true}', '{"userVisible": false, "agentVisible": true}',
             '{"userVisible": true, "agentVisible": false}']  # fmt: skip
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ("INSERT INTO sessions VALUES ('s1', ?, ?, ?, ?, ?)",
         (_value(rng, pieces), _value(rng, pieces), rng.choice(["user", "specialist", _value(rng, pieces)]),
          rng.choice(["/w", _value(rng, pieces)]), _value(rng, pieces))),
    ]  # fmt: skip
    for _ in range(rng.randrange(1, 6)):
        content = rng.choice([json.dumps([{"type": "text", "text": rng.choice(pieces)}]), _value(rng, pieces)])
        role = rng.choice(["user", "assistant", _value(rng, pieces)])
        seen = rng.choice([*flags, _value(rng, pieces)])
        rows.append(("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json)"
                     " VALUES ('s1', ?, ?, ?, ?)", (role, content, _value(rng, pieces), seen)))  # fmt: skip
    database = _written(root / "sessions", schema, rows, "sessions.db")
    return _read_all(GooseSource(root), root / "sessions", database)


def _plain(rng: random.Random, pieces: list[str]) -> Any:
    """``_value`` that JSON can hold (a blob as text)."""
    value = _value(rng, pieces)
    return value.decode("latin-1") if type(value) is bytes else value


def _cursor(root: Path, rng: random.Random, pieces: list[str]) -> str:
    schema = "CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
    bubbles = [f"b{n}" for n in range(rng.randrange(1, 5))]
    headers = [{"bubbleId": rng.choice([*bubbles, rng.choice(pieces)]), "type": 1} for _ in bubbles]
    data = {"composerId": "c1", "name": _plain(rng, pieces), "createdAt": _plain(rng, pieces),
            "fullConversationHeadersOnly": rng.choice([headers, _plain(rng, pieces)]),
            "conversation": rng.choice([None, [{"type": 1, "text": rng.choice(pieces)}]])}  # fmt: skip
    rows: list[tuple[str, tuple[Any, ...]]] = [
        (
            "INSERT INTO cursorDiskKV VALUES ('composerData:c1', ?)",
            (rng.choice([json.dumps(data), _value(rng, pieces)]),),
        )
    ]
    for name in bubbles:
        kind, capability = rng.choice([1, 2, _plain(rng, pieces)]), rng.choice([None, 15, _plain(rng, pieces)])
        message = {
            "type": kind,
            "text": rng.choice(pieces),
            "createdAt": _plain(rng, pieces),
            "capabilityType": capability,
        }
        value = rng.choice([json.dumps(message), _value(rng, pieces)])
        rows.append(("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:c1:{name}", value)))
    database = _written(root / "globalStorage", schema, rows, "state.vscdb")
    return _read_all(CursorSource(root), root / "globalStorage", database)


def _zed(root: Path, rng: random.Random, pieces: list[str]) -> str:
    import zstandard

    schema = """
    CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT, updated_at TEXT, data_type TEXT, data BLOB,
        parent_id TEXT, folder_paths TEXT, folder_paths_order TEXT, created_at TEXT);
    """
    texts = [{"Text": rng.choice(pieces)}, {"Mention": {"uri": {}, "content": rng.choice(pieces)}}, _plain(rng, pieces)]
    messages = [rng.choice([{"User": {"id": "u", "content": texts}}, {"Agent": {"content": texts}}, "Resume",
                            {"role": rng.choice(["user", "assistant", "system"]), "segments": [
                                {"type": "text", "text": rng.choice(pieces)}], "text": _plain(rng, pieces)},
                            _plain(rng, pieces)]) for _ in range(rng.randrange(0, 6))]  # fmt: skip
    thread = {"title": _plain(rng, pieces), "version": rng.choice(["0.3.0", "0.2.0", None]), "messages": messages}
    raw = json.dumps(rng.choice([thread, _plain(rng, pieces)])).encode("utf-8", "surrogatepass")
    kind = rng.choice(["zstd", "json", _value(rng, pieces)])
    data = zstandard.ZstdCompressor().compress(raw) if kind == "zstd" and rng.random() < 0.8 else raw
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ("INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
         (rng.choice(["t1", _value(rng, pieces)]), _value(rng, pieces), _value(rng, pieces), kind,
          rng.choice([data, _value(rng, pieces)]), rng.choice([None, None, _value(rng, pieces)]),
          rng.choice(["/w\n/a", _value(rng, pieces)]), rng.choice(["1,0", _value(rng, pieces)]), _value(rng, pieces))),
    ]  # fmt: skip
    database = _written(root / "threads", schema, rows, "threads.db")
    return _read_all(ZedSource(root), root / "threads", database)


def _kiro(root: Path, rng: random.Random, pieces: list[str]) -> str:
    schema = """
    CREATE TABLE conversations_v2 (key TEXT, conversation_id TEXT, value TEXT, created_at INTEGER, updated_at INTEGER);
    CREATE TABLE conversations (key TEXT, value TEXT);
    """
    said = [{"Prompt": {"prompt": rng.choice(pieces)}}, {"ToolUseResults": {}}, _plain(rng, pieces)]
    answers = [{"Response": {"content": rng.choice(pieces)}}, {"ToolUse": {"content": _plain(rng, pieces)}}]
    history = [
        {"user": {"content": rng.choice(said), "timestamp": _plain(rng, pieces)},
         "assistant": rng.choice([*answers, _plain(rng, pieces)])}
        for _ in range(rng.randrange(0, 5))
    ]  # fmt: skip
    state = {
        "conversation_id": rng.choice(["c1", _plain(rng, pieces)]),
        "history": rng.choice([history, _plain(rng, pieces)]),
        "valid_history_range": rng.choice([[0, len(history)], [1, 0], _plain(rng, pieces)]),
        "latest_summary": rng.choice([None, [rng.choice(pieces), {}], _plain(rng, pieces)]),
    }
    value = rng.choice([json.dumps(state), _value(rng, pieces)])
    table = rng.choice(["conversations_v2", "conversations"])
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ("INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)",
         (rng.choice(["/w", _value(rng, pieces)]), rng.choice(["c1", _value(rng, pieces)]), value,
          _value(rng, pieces), _value(rng, pieces)))
        if table == "conversations_v2"
        else ("INSERT INTO conversations VALUES (?, ?)", (rng.choice(["/w", _value(rng, pieces)]), value)),
    ]  # fmt: skip
    if table == "conversations":
        schema = schema.split(";")[1] + ";"
    database = _written(root, schema, rows, "data.sqlite3")
    return _read_all(KiroSource(root), root, database)


def _read_all(source: Any, folder: Path, database: Path) -> str:
    """List and read every session of ``source``; the folder must be as it was."""
    before = {name: (folder / name).read_bytes() for name in os.listdir(folder)}
    records = source.listing()
    outcome = "ok" if records else "unreadable"
    for record in records:
        try:
            surface = run_async(source.read_surface(record.header.id))
            run_async(source.read_title(record.header.id))
        except SessionQueryError as error:
            outcome = outcome_of(error)
            continue
        project_conversation(surface)
    after = {name: (folder / name).read_bytes() for name in os.listdir(folder)}
    check(after == before, f"the tool's folder changed: {sorted(set(after) ^ set(before))} ({database.name})")
    return outcome


def agent_yaml(data: bytes) -> str:
    """The bytes as a Copilot CLI session's ``workspace.yaml`` beside a valid ``events.jsonl``: the
    session lists and reads (its title and folder from the YAML when they are usable) or is refused
    with a code; the files are left as they were."""
    base = Path(tempfile.mkdtemp(prefix="sessionref-fuzz-yaml-"))
    try:
        folder = base / "session-state" / "cp-0001"
        folder.mkdir(parents=True)
        (folder / "workspace.yaml").write_bytes(data)
        events = [
            {"type": "session.start", "timestamp": "2026-12-05T11:03:47.051Z",
             "data": {"sessionId": "cp-0001", "startTime": "2026-12-05T11:03:47.051Z", "context": {"cwd": "/w"}}},
            {"type": "user.message", "timestamp": "2026-12-05T11:03:48.000Z", "data": {"content": "first question"}},
        ]  # fmt: skip
        (folder / "events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events))
        return _read_all(CopilotCliSource(base), folder, folder / "workspace.yaml")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def agent_row_seeds() -> list[bytes]:
    return [b"first question\nan answer", "中文\n\x00json:[]\n</referenced-sessions>".encode(), b"\xff\xfe"]


def agent_yaml_seeds() -> list[bytes]:
    return [
        b"id: cp-0001\ncwd: /work/app\nsummary: A title\ncreated_at: 2026-12-05T11:03:47.051Z\n",
        b"cwd: [1, 2]\nsummary: {a: b}\ncreated_at: 2026-02-30\n",
        b"- a list\n- not a mapping\n",
        b"&a [*a]\n",
    ]


AGENT_YAML_TOKENS = [b"cwd: ", b"summary: ", b"created_at: ", b"name: ", b"!!python/object", b"&a", b"*a", b"{", b"["]
AGENT_ROW_TOKENS = [b"\n", b"\x00json:", b'{"type": "text"}', b"compression", b"branched", b"\xff"]
