"""opencode's sessions (and Kilo CLI's, which keeps the same schema): an SQLite database,
``<data>/opencode/opencode.db`` (``$OPENCODE_DB`` names another), read-only.

Tables: ``session`` (``id``, ``directory``, ``title``, ``parent_id`` for a sub-agent's session,
``time_created``/``time_updated`` in epoch milliseconds), ``message`` (``data`` JSON: ``role``,
``summary`` on a compaction's summary; no text) and ``part`` (``data`` JSON: ``{"type": "text",
"text", "synthetic"?}``, ``reasoning``, ``tool`` with its ``state``, ``step-start``...), a message's
parts in ``id`` order, messages in ``time_created`` then ``id`` order.

Mapping: a user message's text parts (not the ``synthetic`` ones opencode adds) become a prompt,
an assistant message's text parts an answer, a compaction's summary a compact checkpoint; reasoning,
tool calls and results, files and step markers are left out. Sub-agents' sessions are part of
their parent's, never listed. The title is the session's own.

Reading never disturbs opencode: the database is read as ``sqlite_reads`` says (read-only, never
created, nothing made beside it, never through a link, one transaction a read, "busy, try again"
when opencode holds it); a part larger than ``MAX_PART_BYTES`` is read in slices, its long texts cut (``oversized``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SessionQueryError
from core.files import Revision
from core.sessions.models import SessionHeader, SessionRecord, StoreProblem, SurfaceSnapshot, TitleSnapshot
from core.sessions.query import ReadsAsQuery, sort_listing
from core.sessions.session import not_found
from core.sessions.sources.files import ExternalSession, SurfaceBuilder, cannot_read, prompt_title
from core.sessions.sources.opencode_files import STORAGE, stored_rows, stored_sessions
from core.sessions.sources.sqlite_reads import ReadOnlyDatabase, SourceBusy

OPENCODE_PREFIX = "opencode:"
KILO_PREFIX = "kilo:"
MAX_PART_BYTES = 8 * 1024 * 1024
"""The largest part read at once (a larger one is read in slices, its long texts cut: ``oversized``)."""


def _data_home() -> Path:
    configured = os.environ.get("XDG_DATA_HOME")
    return Path(configured) if configured else Path.home() / ".local" / "share"


def opencode_root() -> Path:
    """opencode's data folder: ``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``."""
    return _data_home() / "opencode"


def kilo_root() -> Path:
    """Kilo CLI's data folder: ``$XDG_DATA_HOME/kilo``, else ``~/.local/share/kilo``."""
    return _data_home() / "kilo"


@dataclass
class _Listed:
    header: SessionHeader
    title: str
    revision: Revision
    session: ExternalSession | None = None
    stored: bool = False
    """Read from the older JSON storage, not the database."""


def _number(value: object) -> int:
    """A count or a time of a row as an integer (0 for anything else: text, a blob, a float's NaN)."""
    return value if type(value) is int else 0


def _text_of(parts: list[dict[str, Any]]) -> str:
    return "".join(
        part["text"]
        for part in parts
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part.get("synthetic") is not True
    )


def _own_title(title: str) -> str | None:
    """A session's title, unless it is opencode's placeholder (``New session - <time>``)."""
    title = title.strip()
    return None if not title or title.startswith(("New session - ", "Child session - ")) else title


class OpenCodeSource(ReadsAsQuery):
    """opencode's sessions in its SQLite database (read-only; see the module docstring)."""

    prefix = OPENCODE_PREFIX
    name = "opencode"
    database_name = "opencode.db"
    database_variable: str | None = "OPENCODE_DB"

    def __init__(self, root: str | os.PathLike[str], database: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root)
        self.database = Path(database) if database is not None else self._default_database()
        self.problems: list[StoreProblem] = []
        self._listed: dict[str, _Listed] = {}
        self._records: list[SessionRecord] | None = None
        self._seen: tuple[object, ...] | None = None
        self._db = ReadOnlyDatabase(self.database, self.name)
        """The database, read as ``sqlite_reads`` says (its reads serialized by ``_lock``)."""
        self._lock = threading.RLock()
        self._busy = False
        """Whether the last listing found the database held by opencode (busy, not missing)."""

    def _default_database(self) -> Path:
        named = os.environ.get(self.database_variable) if self.database_variable else None
        if named and named != ":memory:":
            return Path(named) if os.path.isabs(named) else self.root / named
        return self.root / self.database_name

    # -- the listing ------------------------------------------------------------------------------------

    def listing(self) -> list[SessionRecord]:
        """Every top-level session, newest first (the database's, then the older storage's it does
        not hold); the same list while neither changed."""
        with self._lock:
            stamp = self._db.stamp()
            stored = stored_sessions(self.root, MAX_PART_BYTES) if (self.root / STORAGE).is_dir() else []
            seen = (stamp, tuple(session.revision for session in stored))
            if seen == self._seen and self._records is not None:
                return self._records
            problems: list[StoreProblem] = []
            rows: list[tuple[Any, ...]] = []
            self._busy = False
            if stamp is not None:
                try:
                    rows = self._db.query(
                        "SELECT s.id, s.directory, s.title, s.time_created, s.time_updated,"
                        " (SELECT count(*) FROM message m WHERE m.session_id = s.id),"
                        " (SELECT max(m.time_updated) FROM message m WHERE m.session_id = s.id)"
                        " FROM session s WHERE s.parent_id IS NULL"
                    )
                except SourceBusy as error:  # (opencode holds it: what was listed stays, for now)
                    self._busy = True
                    self.problems = [StoreProblem(self.database, str(error), error.code)]
                    return self._records if self._records is not None else []
                except (OSError, SessionQueryError) as error:
                    # A database that cannot be read hides none of the older storage's sessions.
                    problems.append(StoreProblem(self.database, str(error)))
                    seen = (("unreadable",), seen[1])  # (read again next time)
            listed: dict[str, _Listed] = {}
            for session_id, directory, title, created, updated, count, newest in rows:
                if isinstance(session_id, str) and session_id:
                    revision = (0, _number(count), _number(updated), _number(newest))
                    self._list(listed, session_id, directory, title, created, revision, stored=False)
            for session in stored:
                if self.prefix + session.session_id not in listed:  # (a database copies them in)
                    self._list(listed, session.session_id, session.directory, session.title, session.created,
                               session.revision, stored=True)  # fmt: skip
            records = [
                SessionRecord.model_construct(header=e.header, live=False, persisted=True) for e in listed.values()
            ]
            sort_listing(records)
            self._listed, self._records, self.problems, self._seen = listed, records, problems, seen
            return records

    def _list(
        self,
        listed: dict[str, _Listed],
        session_id: str,
        directory: object,
        title: object,
        created: object,
        revision: Revision,
        *,
        stored: bool,
    ) -> None:
        header = SessionHeader(
            id=self.prefix + session_id,
            created_at=created if isinstance(created, int) and created >= 0 else 0,
            cwd=directory if isinstance(directory, str) and directory else None,
        )
        entry = _Listed(header, title if isinstance(title, str) else "", revision, stored=stored)
        known = self._listed.get(header.id)
        if known is not None and known.revision == revision:
            entry.session = known.session
        listed[header.id] = entry

    def revision(self, session_id: str) -> Revision | None:
        """The session's revision as the last listing saw it (``None`` when not listed)."""
        entry = self._listed.get(session_id)
        return entry.revision if entry is not None else None

    # -- one session ------------------------------------------------------------------------------------

    def session(self, session_id: str) -> ExternalSession:
        """The session as read now (cached by its revision).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, or ``SESSION_QUERY_SOURCE_BUSY``.
        """
        with self._lock:
            try:
                return self._session(session_id)
            except SessionQueryError:
                raise
            except Exception as error:  # rows of a shape no version of opencode writes
                raise cannot_read(session_id, error) from error

    def _session(self, session_id: str) -> ExternalSession:
        self.listing()
        entry = self._listed.get(session_id)
        if entry is None:
            if self._busy:  # (opencode holds the database: it may well be there)
                raise SourceBusy(self.name)
            raise not_found(session_id)
        if entry.session is not None:
            return entry.session
        if entry.stored:
            entry.session = self._fold(
                entry, stored_rows(self.root, session_id.removeprefix(self.prefix), MAX_PART_BYTES)
            )
            return entry.session
        try:
            rows = self._db.query(
                "SELECT m.id, m.time_created, m.data, p.id,"
                " CASE WHEN length(CAST(p.data AS BLOB)) > ? THEN NULL ELSE p.data END"
                " FROM message m LEFT JOIN part p ON p.message_id = m.id"
                " WHERE m.session_id = ? ORDER BY m.time_created, m.id, p.id",
                (MAX_PART_BYTES, session_id.removeprefix(self.prefix)),
            )
        except OSError as error:
            raise not_found(session_id) from error
        entry.session = self._fold(entry, rows, self._long_part)
        return entry.session

    def _long_part(self, part_id: object) -> str | None:
        """A part too long to take at once: read in slices, its long texts cut (``oversized``)."""
        try:
            return self._db.long_json("data", "FROM part WHERE id = ?", (part_id,))
        except OSError:
            return None

    def _fold(
        self, entry: _Listed, rows: list[tuple[Any, ...]], long: Callable[[object], str | None] | None = None
    ) -> ExternalSession:
        messages: dict[str, tuple[int, dict[str, Any], list[dict[str, Any]]]] = {}
        problems = 0
        for message_id, created, data, part_id, part in rows:
            if message_id not in messages:
                try:
                    info = json.loads(data)
                except (TypeError, ValueError, RecursionError):
                    info = None
                if not isinstance(info, dict):
                    problems += 1
                    info = {}
                messages[message_id] = (created if isinstance(created, int) else entry.header.created_at, info, [])
            if part is None and long is not None and part_id is not None:
                part = long(part_id)
            if part is None:
                continue
            try:
                parsed = json.loads(part)
            except (TypeError, ValueError, RecursionError):
                problems += 1
                continue
            if isinstance(parsed, dict):
                messages[message_id][2].append(parsed)
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        for seq, (created, info, parts) in enumerate(messages.values()):
            text = _text_of(parts)
            if not text.strip():
                continue
            if info.get("role") == "user":
                builder.user(seq, created, text)
                first_prompt = first_prompt or prompt_title(text)
            elif info.get("role") == "assistant":
                if info.get("summary") is True:
                    builder.checkpoint(seq, created, text)
                else:
                    builder.assistant(seq, created, text)
        title = _own_title(entry.title) or first_prompt
        last = len(messages) - 1 if messages else None
        return ExternalSession(entry.header, builder.events, title, problems, last)

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """``read_surface``, synchronously (for a host's own threads)."""
        session = self.session(session_id)
        return SurfaceSnapshot.model_construct(
            session=session.header, captured_through_seq=session.last_seq, events=list(session.events)
        )

    def title(self, session_id: str) -> TitleSnapshot | None:
        """``read_title``, synchronously: the session's own title (no read of its messages)."""
        self.listing()
        entry = self._listed.get(session_id)
        if entry is None:
            raise not_found(session_id)
        title = _own_title(entry.title) or self.session(session_id).title
        if title is None:
            return None
        return TitleSnapshot(title=title, message_seqs=[], event_seq=0, updated_at=entry.header.created_at)


class KiloSource(OpenCodeSource):
    """Kilo CLI's sessions: opencode's schema in ``<data>/kilo/kilo.db`` (read-only)."""

    prefix = KILO_PREFIX
    name = "Kilo CLI"
    database_name = "kilo.db"
    database_variable = None
