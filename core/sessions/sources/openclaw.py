"""OpenClaw's sessions (npm ``openclaw``): each agent's SQLite database,
``<state>/agents/<agent>/agent/openclaw-agent.sqlite``, and the JSONL files older versions wrote,
``<state>/agents/<agent>/sessions/<session id>.jsonl``; read-only.

OpenClaw keeps pi's session format. In the database (2026.9), table ``transcript_events``
(``session_id``, ``seq``, ``event_json``, or ``event_zstd`` for a large event: the same JSON,
zstd-compressed, ``event_utf8_bytes`` long) holds a transcript's entries in ``seq`` order: first the
``session`` header (``id``, ``cwd`` the agent's workspace, ``timestamp``, ``version`` 4), then
``message``, ``compaction``, ``reset`` (a new conversation in the same transcript, keeping what
``firstKeptEntryId`` names), ``leaf`` (the branch's tip moved), ``custom``... linked by
``parentId``. ``session_nodes`` names the session key (``agent:main:main``) a transcript is current
for, with its ``display_name`` or ``label``; ``session_windows`` says which transcript a sub-agent's
run wrote (``spawned_by``, ``parent_session_key``). Versions of 2026.4 wrote the same entries as a
JSONL file per transcript, beside ``sessions.json``.

Mapping: a transcript is a session; what reaches the surface is what OpenClaw builds its model's
context from (``pi.pi_session``): the prompts and text answers of the branch that ends at the tip,
after the newest compaction its summary as a checkpoint, after a reset only what it kept. Tool
calls and results, thinking, OpenClaw's bootstrap and runtime context, and sub-agents' runs are not
on the surface. The title is the session key's display name or label, else the session's own name,
else the first prompt. A transcript both in a database and in a file is listed once, from the
database (OpenClaw imports the files into it).

Read as ``sqlite_reads`` says: read-only, nothing made beside the database, busy as busy; an event
over ``MAX_EVENT_BYTES``, compressed or not, is left out and counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard

from core.files import file_revision
from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import (
    ExternalSession,
    epoch_millis,
    json_lines,
    subfolders,
)
from core.sessions.sources.pi import header_of, pi_header, pi_session
from core.sessions.sources.row_source import Listed, RowSource
from core.sessions.sources.sqlite_reads import ReadOnlyDatabase

OPENCLAW_PREFIX = "openclaw:"
DATABASE = Path("agent") / "openclaw-agent.sqlite"
MAX_EVENT_BYTES = 8 * 1024 * 1024
"""The largest event read, as stored or once decompressed (OpenClaw's own bound is 4 MiB)."""

_LIST = """
SELECT e.session_id, count(*), max(e.seq), max(e.created_at),
  (SELECT h.event_json FROM transcript_events h WHERE h.session_id = e.session_id
   AND length(CAST(h.event_json AS BLOB)) <= 65536 ORDER BY h.seq LIMIT 1),
  min(e.created_at)
FROM transcript_events e GROUP BY e.session_id
"""
_EVENTS = """
SELECT seq, CASE WHEN length(CAST(event_json AS BLOB)) > ? THEN NULL ELSE event_json END,
  CASE WHEN length(event_zstd) > ? THEN NULL ELSE event_zstd END, event_utf8_bytes
FROM transcript_events WHERE session_id = ? ORDER BY seq
"""


def openclaw_root() -> Path:
    """``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``."""
    configured = os.environ.get("OPENCLAW_STATE_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".openclaw"


def _event(text: object, packed: object, size: object) -> Any:
    """One stored event as parsed JSON, or ``None`` when it is too large or not JSON."""
    try:
        if type(text) is str:
            return json.loads(text)
        if type(packed) is bytes and type(size) is int and 0 < size <= MAX_EVENT_BYTES:
            raw = zstandard.ZstdDecompressor().decompress(packed, max_output_size=size)
            return json.loads(raw) if len(raw) == size else None
    except (ValueError, RecursionError, zstandard.ZstdError):
        pass
    return None


def _header(first: object, created: object) -> tuple[int, str | None]:
    """A transcript's time and folder from its header event (else its first row's time)."""
    found = None
    if type(first) is str:
        try:
            found = header_of(json.loads(first))
        except (ValueError, RecursionError):
            found = None
    when, cwd = found if found is not None else (None, None)
    return (when if when is not None else epoch_millis(created) or 0), cwd


def _text(value: object) -> str | None:
    return value.strip() if type(value) is str and value.strip() else None


class OpenClawSource(RowSource):
    """OpenClaw's sessions: its agents' databases and older JSONL files (see the module docstring)."""

    prefix = OPENCLAW_PREFIX
    name = "OpenClaw"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._databases: dict[str, ReadOnlyDatabase] = {}
        self._heads: dict[str, Listed] = {}
        """The older JSONL files' sessions as last listed, by path (read again when a file changes)."""

    def _agents(self) -> list[Path]:
        return [Path(entry.path) for entry in subfolders(self.root / "agents")]

    def _database(self, agent: Path) -> ReadOnlyDatabase | None:
        path = agent / DATABASE
        if os.path.islink(agent / "agent") or os.path.islink(path) or not path.is_file():
            return None
        database = self._databases.get(str(path))
        if database is None:
            database = self._databases[str(path)] = ReadOnlyDatabase(path, self.name)
        return database

    def _files(self) -> Iterator[str]:
        for agent in self._agents():
            sessions = agent / "sessions"
            if os.path.islink(sessions):
                continue
            try:
                names = os.listdir(sessions)
            except OSError:
                continue
            yield from (str(sessions / name) for name in names if name.endswith(".jsonl"))

    def _stamp(self) -> object:
        stamps: list[object] = []
        for agent in self._agents():
            database = self._database(agent)
            stamps.append(database.stamp() if database is not None else None)
        for path in self._files():
            try:
                stamps.append((path, file_revision(path, follow=False)))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        found: dict[str, Listed] = {}
        problems: list[StoreProblem] = []
        for agent in self._agents():
            database = self._database(agent)
            if database is None:
                continue
            try:
                rows = database.query(_LIST)
            except OSError as error:
                problems.append(StoreProblem(database.path, str(error)))
                continue
            titles, hidden = self._session_names(database)
            for session_id, count, last, newest, first, oldest in rows:
                if type(session_id) is not str or not session_id or session_id in hidden:
                    continue
                created, cwd = _header(first, oldest)
                header = SessionHeader(id=self.prefix + session_id, created_at=created, cwd=cwd)
                revision = (
                    0,
                    count if type(count) is int else 0,
                    last if type(last) is int else 0,
                    newest if type(newest) is int else 0,
                )
                found[header.id] = Listed(header, titles.get(session_id), revision, (database, session_id))
        heads: dict[str, Listed] = {}
        for path in self._files():
            try:
                entry = self._file_entry(Path(path))
            except OSError as error:
                problems.append(StoreProblem(Path(path), f"cannot read: {error.strerror or error}"))
                continue
            if entry is None:
                problems.append(StoreProblem(Path(path), f"no readable {self.name} record"))
                continue
            heads[path] = entry
            if entry.header.id not in found:
                found[entry.header.id] = entry
        self._heads = heads
        return list(found.values()), problems

    @staticmethod
    def _session_names(database: ReadOnlyDatabase) -> tuple[dict[str, str], set[str]]:
        """Each current transcript's display name or label, and the transcripts sub-agents' runs
        wrote (both read around when an older database lacks the tables)."""
        titles: dict[str, str] = {}
        hidden: set[str] = set()
        try:
            for session_id, shown, label in database.query(
                "SELECT current_session_id, display_name, label FROM session_nodes"
            ):
                title = _text(shown) or _text(label)
                if type(session_id) is str and title is not None:
                    titles[session_id] = title
            for session_id, parent, spawned in database.query(
                "SELECT session_id, parent_session_key, spawned_by FROM session_windows"
            ):
                if type(session_id) is str and (_text(parent) or _text(spawned)):
                    hidden.add(session_id)
        except OSError:
            pass
        return titles, hidden

    def _file_entry(self, path: Path) -> Listed | None:
        """An older JSONL file's session, its head read again only when the file changed."""
        revision = file_revision(str(path), follow=False)
        known = self._heads.get(str(path))
        if known is not None and known.revision == revision:
            return known
        header = pi_header(path, self.prefix)
        return Listed(header, None, revision, path) if header is not None else None

    def _load(self, entry: Listed) -> ExternalSession:
        if isinstance(entry.where, Path):
            return pi_session(json_lines(entry.where, follow=False), entry.header)
        database, session_id = entry.where
        rows = database.query(_EVENTS, (MAX_EVENT_BYTES, MAX_EVENT_BYTES, session_id))
        # (Numbered in ``seq`` order from 0: a ``seq`` of another type than an integer is not trusted.)
        events = ((number, _event(text, packed, size)) for number, (_seq, text, packed, size) in enumerate(rows))
        return pi_session(events, entry.header)
