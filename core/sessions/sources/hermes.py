"""Hermes Agent's sessions (``hermes-agent``): its SQLite state, ``<home>/state.db``, read-only.

Tables (``hermes_state.py``, 0.19): ``sessions`` (``id``, ``source`` such as ``cli`` or
``telegram``, ``cwd``, ``started_at`` in epoch seconds, ``title``, ``parent_session_id``,
``end_reason``, ``model_config`` JSON, ``archived``) and ``messages`` (``session_id``, ``role``,
``content``, ``timestamp`` in epoch seconds, ``active``, ``compacted``), a session's messages in
``id`` order. Structured content (text and images) is stored as ``"\\x00json:"`` and its JSON.

What the model sees is a session's ``active`` messages: a compaction keeps the rows it summarized
(``active = 0, compacted = 1``) and adds the compacted ones; a rewind keeps the rows taken back
(``active = 0``). An older compression instead continued the conversation in a child session
(``parent_session_id``, the parent's ``end_reason`` ``compression``).

Mapping, as Hermes's own session list does: the sessions listed are the top-level ones and the
``/branch`` children, not archived; sub-agents' runs and the sessions a compression continued into
are not listed, the latter being read as the rest of their root's conversation. A session's active
user messages become prompts and its active assistant text answers (in each session of the chain,
then the next); tool results, system messages and what was compacted or taken back are not on the
surface. The title is the session's, else the first prompt.

Read as ``sqlite_reads`` says: read-only, nothing made beside the database, busy as busy.
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SessionQueryError
from core.files import Revision
from core.sessions.models import SessionHeader, SessionRecord, StoreProblem, SurfaceSnapshot, TitleSnapshot
from core.sessions.query import ReadsAsQuery, sort_listing
from core.sessions.session import not_found
from core.sessions.sources.files import ExternalSession, SurfaceBuilder, cannot_read, prompt_title
from core.sessions.sources.sqlite_reads import ReadOnlyDatabase, SourceBusy

HERMES_PREFIX = "hermes:"
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""The largest message read at once (a larger one is read in slices, its long texts cut: ``oversized``)."""
_JSON_CONTENT = "\x00json:"
_LATEST_SECONDS = 253_402_300_800  # (the year 10000)

# The sessions a compression continued into, each with its root and its place in the chain
# (UNION: a loop in the links ends it).
_CHAINS = """
WITH RECURSIVE chain(root, id, depth) AS (
    SELECT s.id, s.id, 0 FROM sessions s
    WHERE s.archived = 0 AND (
        s.parent_session_id IS NULL
        OR (json_valid(s.model_config) AND json_extract(s.model_config, '$._branched_from') IS NOT NULL)
        OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id AND p.end_reason = 'branched'
                   AND s.started_at >= p.ended_at))
    UNION
    SELECT chain.root, c.id, chain.depth + 1 FROM chain
    JOIN sessions p ON p.id = chain.id JOIN sessions c ON c.parent_session_id = p.id
    WHERE p.end_reason = 'compression' AND chain.depth < 1000
      AND NOT (json_valid(c.model_config) AND json_extract(c.model_config, '$._branched_from') IS NOT NULL)
)
"""


def hermes_root() -> Path:
    """``$HERMES_HOME``, else ``~/.hermes``."""
    configured = os.environ.get("HERMES_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".hermes"


def _millis(seconds: object) -> int | None:
    """Epoch milliseconds of a time in epoch seconds (a real or an integer), when it is one."""
    if type(seconds) is not int and type(seconds) is not float:
        return None
    value = float(seconds)  # (an integer past a float's range is not a time either)
    return int(value * 1000) if math.isfinite(value) and 0 <= value < _LATEST_SECONDS else None


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of structured content."""
    if type(content) is not str:
        return ""
    if not content.startswith(_JSON_CONTENT):
        return content
    try:
        parts = json.loads(content[len(_JSON_CONTENT) :])
    except (ValueError, RecursionError):
        return ""
    if type(parts) is str:
        return parts
    if type(parts) is not list:
        return ""
    return "\n".join(
        part["text"]
        for part in parts
        if type(part) is dict and part.get("type") == "text" and type(part.get("text")) is str
    )


@dataclass
class _Listed:
    header: SessionHeader
    title: str | None
    revision: Revision
    session: ExternalSession | None = None


class HermesSource(ReadsAsQuery):
    """Hermes Agent's sessions in ``<home>/state.db`` (read-only; see the module docstring)."""

    prefix = HERMES_PREFIX
    name = "Hermes Agent"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.database = self.root / "state.db"
        self.problems: list[StoreProblem] = []
        self._db = ReadOnlyDatabase(self.database, self.name)
        self._lock = threading.RLock()
        self._listed: dict[str, _Listed] = {}
        self._records: list[SessionRecord] | None = None
        self._seen: tuple[object, ...] | None = None
        self._busy = False

    def listing(self) -> list[SessionRecord]:
        """Every listed session, newest first; the same list while the database did not change."""
        with self._lock:
            stamp = self._db.stamp()
            if stamp is not None and stamp == self._seen and self._records is not None:
                return self._records
            rows: list[tuple[Any, ...]] = []
            problems: list[StoreProblem] = []
            self._busy = False
            if stamp is not None:
                try:
                    rows = self._db.query(
                        _CHAINS + "SELECT s.id, s.cwd, s.title, s.started_at,"
                        " (SELECT count(*) FROM messages m WHERE m.active = 1"
                        "  AND m.session_id IN (SELECT id FROM chain WHERE root = s.id)),"
                        " (SELECT max(m.id) FROM messages m"
                        "  WHERE m.session_id IN (SELECT id FROM chain WHERE root = s.id))"
                        " FROM sessions s WHERE s.id IN (SELECT root FROM chain WHERE depth = 0)"
                    )
                except SourceBusy as error:  # (Hermes holds it: what was listed stays, for now)
                    self._busy = True
                    self.problems = [StoreProblem(self.database, str(error), error.code)]
                    return self._records if self._records is not None else []
                except OSError as error:
                    problems.append(StoreProblem(self.database, str(error)))
                    stamp = None  # (read again next time)
            listed: dict[str, _Listed] = {}
            for session_id, cwd, title, started, count, newest in rows:
                if type(session_id) is not str or not session_id:
                    continue
                header = SessionHeader(
                    id=self.prefix + session_id,
                    created_at=_millis(started) or 0,
                    cwd=cwd if type(cwd) is str and cwd else None,
                )
                revision = (0, count if type(count) is int else 0, newest if type(newest) is int else 0, 0)
                entry = _Listed(header, title.strip() if type(title) is str and title.strip() else None, revision)
                known = self._listed.get(header.id)
                if known is not None and known.revision == revision:
                    entry.session = known.session
                listed[header.id] = entry
            records = [
                SessionRecord.model_construct(header=e.header, live=False, persisted=True) for e in listed.values()
            ]
            sort_listing(records)
            self._listed, self._records, self.problems, self._seen = listed, records, problems, stamp
            return records

    def revision(self, session_id: str) -> Revision | None:
        entry = self._listed.get(session_id)
        return entry.revision if entry is not None else None

    def session(self, session_id: str) -> ExternalSession:
        """The session as read now (cached by its revision).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``SESSION_QUERY_SOURCE_BUSY`` or
                ``SESSION_QUERY_INVALID_SURFACE``.
        """
        with self._lock:
            try:
                return self._session(session_id)
            except SessionQueryError:
                raise
            except Exception as error:  # rows of a shape no version of Hermes writes
                raise cannot_read(session_id, error) from error

    def _session(self, session_id: str) -> ExternalSession:
        self.listing()
        entry = self._listed.get(session_id)
        if entry is None:
            if self._busy:
                raise SourceBusy(self.name)
            raise not_found(session_id)
        if entry.session is not None:
            return entry.session
        try:
            rows = self._db.query(
                _CHAINS + "SELECT m.role, CASE WHEN length(CAST(m.content AS BLOB)) > ? THEN NULL ELSE m.content END,"
                " m.timestamp, m.id FROM messages m JOIN chain ON chain.id = m.session_id"
                " WHERE chain.root = ? AND m.active = 1 ORDER BY chain.depth, m.id",
                (MAX_MESSAGE_BYTES, session_id.removeprefix(self.prefix)),
            )
        except OSError as error:
            raise not_found(session_id) from error
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        for seq, (role, content, stamp, row) in enumerate(rows):
            text = _text(self._long(row) if content is None else content)
            if not text.strip():
                continue
            when = _millis(stamp) or entry.header.created_at
            if role == "user":
                builder.user(seq, when, text)
                first_prompt = first_prompt or prompt_title(text)
            elif role == "assistant":
                builder.assistant(seq, when, text)
        entry.session = ExternalSession(
            entry.header, builder.events, entry.title or first_prompt, 0, len(rows) - 1 if rows else None
        )
        return entry.session

    def _long(self, row: object) -> str | None:
        """A message's content too long to take at once: its head and the omission notice (its text
        parts' long texts cut so, when it is structured)."""
        where = "FROM messages WHERE id = ?"
        try:
            text = self._db.long_text("content", where, (row,))
            if text is None or not text.startswith(_JSON_CONTENT):
                return text
            parts = self._db.long_json(f"substr(CAST(content AS BLOB), {len(_JSON_CONTENT) + 1})", where, (row,))
        except OSError:
            return None
        return None if parts is None else _JSON_CONTENT + parts

    def surface(self, session_id: str) -> SurfaceSnapshot:
        session = self.session(session_id)
        return SurfaceSnapshot.model_construct(
            session=session.header, captured_through_seq=session.last_seq, events=list(session.events)
        )

    def title(self, session_id: str) -> TitleSnapshot | None:
        session = self.session(session_id)
        if session.title is None:
            return None
        return TitleSnapshot(title=session.title, message_seqs=[], event_seq=0, updated_at=session.header.created_at)
