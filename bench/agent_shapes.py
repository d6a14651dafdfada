"""Sessions in the shapes pi, Continue, Cline CLI, Aider, Hermes Agent, Mistral Vibe and OpenHands write
them (as their real runs in tests/test_agent_*.py did), for ``bench.agents``: many small sessions to
list, one long one to read."""

from __future__ import annotations

import json
from pathlib import Path

QUESTION = "question {turn}: " + "why does the lock time out? " * 8
ANSWER = "because of the retry budget. " * 30


def _stamp(index: int, turn: int = 0) -> str:
    return f"2025-09-{1 + index % 28:02}T10:{turn % 60:02}:{index % 60:02}.000Z"


def _lines(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def pi_session(root: Path, index: int, turns: int) -> None:
    session_id = f"01a24c16-{index:04x}-7258-ac9f-{index:012x}"
    folder = f"/home/user/project-{index % 40}"
    records: list[dict[str, object]] = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": _stamp(index), "cwd": folder}
    ]
    parent = None
    for turn in range(turns):
        for role, text in (("user", QUESTION.format(turn=turn)), ("assistant", ANSWER)):
            entry = f"{role[0]}{turn:07x}"
            message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1_756_000_000_000}
            records.append({"type": "message", "id": entry, "parentId": parent, "timestamp": _stamp(index, turn),
                            "message": message})  # fmt: skip
            parent = entry
    _lines(
        root / "sessions" / f"--home-user-project-{index % 40}--" / f"2025-09-01T10-00-00-000Z_{session_id}.jsonl",
        records,
    )


def continue_sessions(root: Path, indexes: range, turns: int) -> None:
    folder = root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    index_entries = []
    for index in indexes:
        session_id = f"28ab63df-f623-41a0-a4b0-{index:012x}"
        history = []
        for turn in range(turns):
            history.append({"message": {"role": "user", "content": QUESTION.format(turn=turn)}, "contextItems": []})
            history.append({"message": {"role": "assistant", "content": ANSWER}, "contextItems": []})
        session = {"sessionId": session_id, "title": "Untitled Session", "history": history,
                   "workspaceDirectory": f"/home/user/project-{index % 40}"}  # fmt: skip
        (folder / f"{session_id}.json").write_text(json.dumps(session))
        created = str(1_756_000_000_000 + index)
        index_entries.append({"sessionId": session_id, "title": "Untitled Session", "dateCreated": created,
                              "workspaceDirectory": session["workspaceDirectory"]})  # fmt: skip
    (folder / "sessions.json").write_text(json.dumps(index_entries))


def cline_session(root: Path, index: int, turns: int) -> None:
    session_id = f"{1_756_000_000_000 + index}_{index:05x}"
    folder = root / "data" / "sessions" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    about = {"version": 1, "session_id": session_id, "started_at": _stamp(index),
             "cwd": f"/home/user/project-{index % 40}", "metadata": {"title": f"task {index}"}}  # fmt: skip
    (folder / f"{session_id}.json").write_text(json.dumps(about))
    messages = []
    for turn in range(turns):
        typed = f'<user_input mode="act">{QUESTION.format(turn=turn)}</user_input>'
        messages.append(
            {"id": f"u{turn}", "role": "user", "content": [{"type": "text", "text": typed}], "ts": 1_756_000_000_000}
        )
        messages.append(
            {
                "id": f"a{turn}",
                "role": "assistant",
                "content": [{"type": "text", "text": ANSWER}],
                "ts": 1_756_000_000_000,
            }
        )
    (folder / f"{session_id}.messages.json").write_text(
        json.dumps({"version": 1, "sessionId": session_id, "messages": messages})
    )


def vibe_session(root: Path, index: int, turns: int) -> None:
    """A Mistral Vibe session folder: its newest generation's checkpoint in chunks of about 64 KiB, as
    Vibe seals them."""
    import hashlib

    session_id = f"{index:08x}-0000-4000-8000-000000000000"
    folder = root / "logs" / "session" / "unified" / session_id
    (folder / "generations" / "0000000000000008").mkdir(parents=True, exist_ok=True)
    (folder / "chunks").mkdir(exist_ok=True)
    meta = {"session_id": session_id, "parent_session_id": None, "start_time": _stamp(index),
            "environment": {"working_directory": f"/home/user/project-{index % 40}"}, "title": None}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    items = []
    for turn in range(turns):
        for role, text in (("user", QUESTION.format(turn=turn)), ("assistant", ANSWER)):
            message = {"content": [{"text": text, "type": "text"}], "role": role}
            items.append({"message": message, "source": "history", "turn_index": turn})
    digests, run = [], []
    for item in [*items, None]:
        if item is not None:
            run.append(item)
        if run and (item is None or len(json.dumps(run)) > 64 * 1024):
            body = json.dumps(run).encode()
            digest = hashlib.sha256(body).hexdigest()
            (folder / "chunks" / f"{digest}.json").write_bytes(body + b"\n")
            digests.append(digest)
            run = []
    manifest = {"checkpoint": {"checkpoint_version": 1, "chunks": digests, "path": "checkpoint.json"},
                "generation": "0000000000000008", "session_id": session_id}  # fmt: skip
    (folder / "generations" / "0000000000000008" / "manifest.json").write_text(json.dumps(manifest))
    pointer = {"generation": "0000000000000008", "session_id": session_id, "snapshot_sequence": 8,
               "store_format": "mistral.vibe.unified-session-store/v1", "store_format_minor": 9}  # fmt: skip
    (folder / "CURRENT").write_text(json.dumps(pointer))


def openhands_conversation(root: Path, index: int, turns: int) -> None:
    """An OpenHands conversation folder: ``base_state.json`` and one file an event, as its SDK writes them."""
    folder = root / "conversations" / f"{index:032x}"
    (folder / "events").mkdir(parents=True, exist_ok=True)
    state = {
        "id": f"{index:08x}-0000-4000-8000-000000000000",
        "workspace": {"working_dir": f"/home/user/project-{index % 40}"},
    }
    (folder / "base_state.json").write_text(json.dumps(state))
    number = 0
    for turn in range(turns):
        for source, role, text in (("user", "user", QUESTION.format(turn=turn)), ("agent", "assistant", ANSWER)):
            event_id = f"{number:08x}-0000-4000-8000-{index:012x}"
            said = {"role": role, "content": [{"type": "text", "text": text}], "thinking_blocks": []}
            event = {"id": event_id, "timestamp": f"2025-09-{1 + index % 28:02}T10:00:{turn % 60:02}.000000",
                     "source": source, "llm_message": said, "activated_skills": [], "extended_content": [],
                     "kind": "MessageEvent"}  # fmt: skip
            (folder / "events" / f"event-{number:05d}-{event_id}.json").write_text(json.dumps(event))
            number += 1


def aider_project(root: Path, project: int, runs: int, turns: int) -> None:
    """One project's history file: ``runs`` runs of ``turns`` prompts each."""
    pieces = []
    for run in range(runs):
        pieces.append(f"\n# aider chat started at 2025-09-{1 + run % 28:02} 10:{run % 60:02}:{project % 60:02}\n\n")
        pieces.append("> aider --model x  \n> Aider v0.86.2  \n")
        for turn in range(turns):
            pieces.append(f"\n#### {QUESTION.format(turn=turn)}  \n")
            pieces.append(f"\n{ANSWER.strip()}\n\n> Tokens: 5 sent, 3 received.  \n")
    path = root / f"project-{project}" / ".aider.chat.history.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(pieces))


HERMES_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model_config TEXT, parent_session_id TEXT,
    started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, cwd TEXT, title TEXT,
    archived INTEGER NOT NULL DEFAULT 0);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT, timestamp REAL NOT NULL, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
"""
"""Hermes Agent 0.19's two tables, the columns its reader reads (and its two indexes on them)."""


def hermes_database(root: Path, indexes: range, turns: int) -> None:
    import sqlite3

    root.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(root / "state.db")
    connection.executescript(HERMES_SCHEMA)
    for index in indexes:
        session_id = f"20250901_100000_{index:06x}"
        connection.execute(
            "INSERT INTO sessions (id, source, started_at, cwd) VALUES (?, 'cli', ?, ?)",
            (session_id, 1_756_000_000.0 + index, f"/home/user/project-{index % 40}"),
        )
        rows = [(session_id, role, text, 1_756_000_000.0 + index) for turn in range(turns)
                for role, text in (("user", QUESTION.format(turn=turn)), ("assistant", ANSWER))]  # fmt: skip
        connection.executemany("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", rows)
    connection.commit()
    connection.close()
