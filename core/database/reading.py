"""Reading a PostgreSQL store: a session as this role may see it (header, rows and revision in one
statement, parsed by the JSONL reader), the kept listing, and what a host that hears the database's
notifications asks. ``core.database.store.PostgresSessionStore`` has one ``PgReader``, and writes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from core.database.errors import database_error
from core.database.listing import DatabaseListing, listed_header, where
from core.database.pool import ReadPool
from core.database.search import PgMessageIndex
from core.database.watch import NotifyWatcher
from core.database.writers import PgWriters
from core.errors import SessionQueryError
from core.folder.jsonl_codec import load_log
from core.folder.jsonl_header import HEADER_LIMIT, SESSION_QUERY_CORRUPT
from core.folder.watch import ChangeCallback
from core.serialization import js_json_stringify
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    SessionRecord,
    StoredSession,
    StoreProblem,
    SurfaceSnapshot,
    TitleSnapshot,
)
from core.sessions.query import ReadsAsQuery
from core.sessions.session import not_found
from core.sessions.surface import events_at

StoredRevision = int
"""A session's revision in the database: a number from one sequence, new with every change."""


class PgReader(ReadsAsQuery):
    """What a PostgreSQL store answers of reading: listing, sessions, revisions, and what a host
    that hears the database's notifications asks.

    Args:
        pool: the store's read connections.
        writers: the sessions the store writes (read from memory, listed before their first row).
        user: the role the store acts as (a listed session of another role carries its owner).
    """

    def __init__(self, pool: ReadPool, writers: PgWriters, user: str) -> None:
        self._pool = pool
        self._writers = writers
        self._listing = DatabaseListing(user)
        self._listing_lock = threading.Lock()
        self._pending = True
        self.problems: list[StoreProblem] = []
        """Sessions the last listing could not list (a teammate's damaged rows), each with why."""

    def load(self, session_id: str, connection: psycopg.Connection[Any] | None = None) -> LoadedSession | None:
        if "\x00" in session_id:
            return None
        try:
            if connection is None:
                with self._pool.connection() as pooled:
                    return read_session_rows(pooled, session_id)
            return read_session_rows(connection, session_id)
        except (psycopg.Error, PoolTimeout) as error:
            raise database_error(error, f"cannot read session {js_json_stringify(session_id)}") from None

    def listing(self) -> list[SessionRecord]:
        """Every session this role may see (its own, and those shared with its teams), newest
        first (the contract's order: ids by UTF-16 code units). A teammate's session carries its
        owner's name.

        Raises:
            SessionQueryError: ``SESSION_QUERY_DATABASE_UNAVAILABLE``.
        """
        self._pending = False
        unsaved = [session.header for session in self._writers.sessions() if not self._writers.stored(session.id)]
        try:
            with self._listing_lock:
                records = self._listing.current(
                    lambda statement, parameters: (
                        self._pool.run("cannot list the sessions", statement, parameters).rows
                    ),
                    self._writers.ids(),
                    unsaved,
                )
                self.problems = self._listing.problems
                return records
        except SessionQueryError:
            self._pending = True
            with self._listing_lock:
                self._listing.forget()
            raise

    def listed_titles(self) -> dict[str, tuple[str, str | None]]:
        """Session id -> (revision key, title) as the last listing saw them (the title column the
        append keeps): a host shows titles without reading any session."""
        return self._listing.titles

    def message_index(self) -> PgMessageIndex:
        """Message search on this database (kept current by every append; see ``search``)."""
        return PgMessageIndex(self._pool.conninfo)

    # -- what a host watching the database reads ----------------------------------------------------

    def watcher(self, on_change: ChangeCallback) -> NotifyWatcher:
        """A watcher that hears the database's change notifications (``LISTEN``) on a connection
        of its own and calls ``on_change(None)``: something changed, list again."""
        return NotifyWatcher(self._pool.conninfo, on_change)

    def note_changes(self, _paths: Iterable[str] | None) -> None:
        """Say that something changed (a notification arrived): the next refresh lists again."""
        self._pending = True

    def changes_pending(self) -> bool:
        """Whether a change was noted since the last listing."""
        return self._pending

    def remembered_sessions(self) -> list[SessionRecord] | None:
        """No listing is remembered between runs (listing the database is the fast path)."""
        return None

    def listed_revisions(self) -> dict[str, StoredRevision]:
        """Session id -> revision as the last listing saw them; the same object while nothing changed."""
        return self._listing.revisions

    def listed_revision(self, header: SessionHeader) -> StoredRevision | None:
        """The revision the last listing saw for a session."""
        return self._listing.revisions.get(header.id)

    def written_revision(self, session_id: str) -> StoredRevision | None:
        """The revision of a session this store writes, as of its last append."""
        return self._writers.revision(session_id)

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        owned = self._writers.session(session_id)
        if owned is not None:
            return owned.snapshot()
        loaded = self.load(session_id)
        if loaded is None:
            raise not_found(session_id)
        return loaded.surface()

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the raw log, or ``None``."""
        owned = self._writers.session(session_id)
        if owned is not None:
            return owned.title
        loaded = self.load(session_id)
        if loaded is None:
            raise not_found(session_id)
        return loaded.title

    def read_log(self, session_id: str) -> tuple[SessionHeader, list[SessionEvent]]:
        """Every event of the raw log, read-only (no write lock)."""
        owned = self._writers.session(session_id)
        if owned is not None:
            return owned.header, list(owned.events)
        loaded = self.load(session_id)
        if loaded is None:
            raise not_found(session_id)
        return loaded.header, loaded.events

    def read_stored(self, header: SessionHeader) -> StoredSession:
        """One listed session read with its revision, for bulk readers (the search index).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` when it is gone (or no longer shared).
        """
        loaded = self.load(header.id)
        if loaded is None:
            raise not_found(header.id)
        return StoredSession(revision=loaded.revision, surface=loaded.surface(), title=loaded.title)


MAX_ROW_BYTES = 64 * 1024 * 1024
"""The largest row a session is read with: sessionref writes one per event or packed chunk run, so
only a row written around it (by hand, by a teammate) comes near; such a session reads as damaged."""
SESSION_QUERY_ROW_TOO_LARGE = "SESSION_QUERY_ROW_TOO_LARGE"

_READ = (
    f"SELECT CASE WHEN octet_length(s.header) <= {HEADER_LIMIT} THEN s.header END, octet_length(s.header), "
    f"CASE WHEN octet_length(r.row) <= {MAX_ROW_BYTES} THEN r.row END, octet_length(r.row), r.first_seq, s.revision "
    "FROM sessionref.sessionref_sessions s LEFT JOIN sessionref.sessionref_rows r ON r.session_id = s.id "
    "WHERE s.id = %s ORDER BY r.first_seq"
)


def read_session_rows(connection: psycopg.Connection[Any], session_id: str) -> LoadedSession | None:
    """A session as this role may see it, in one statement (header, rows and revision one
    consistent snapshot); ``None`` when it may not see it or it is absent.

    Raises:
        psycopg.Error: the read failed.
        SessionQueryError: ``session_from_rows``'s.
    """
    rows = connection.execute(_READ, (session_id,)).fetchall()
    if not rows:
        return None
    header, header_size, revision = rows[0][0], int(rows[0][1]), int(rows[0][5])
    return session_from_rows(
        session_id,
        header,
        header_size,
        [(row, size, first) for _, _, row, size, first, _ in rows if size is not None],
        revision,
    )


def session_from_rows(
    session_id: str,
    header: str | None,
    header_size: int,
    rows: list[tuple[str | None, int, int]],
    revision: StoredRevision,
) -> LoadedSession:
    """A session from its rows as the database holds them, read with the bounds and codes of a file:
    ``header`` (``None`` when it was over ``HEADER_LIMIT``), then ``(row, its size, first_seq)`` in
    seq order (a row ``None`` when it was over ``MAX_ROW_BYTES``). A teammate writes their rows with
    plain SQL, so nothing here is trusted.

    Raises:
        SessionQueryError: ``SESSION_QUERY_CORRUPT_SESSION`` (a header that is not one, or names
            another session; rows that do not parse, or whose seqs are not the ones their row says),
            ``SESSION_QUERY_ROW_TOO_LARGE``.
    """
    place = where(session_id)
    listed_header(session_id, header, header_size)
    for row, size, first in rows:
        if row is None:
            raise SessionQueryError(
                f"{place}: its row at seq {first} is {size:,} bytes, over the {MAX_ROW_BYTES:,} a row is read",
                SESSION_QUERY_ROW_TOO_LARGE,
            )
    assert header is not None
    lines = [header] + [row for row, _, _ in rows if row is not None]
    log = load_log(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), place, "none")
    seqs = {event.seq for event in log.events}
    for _, _, first in rows:
        if first not in seqs:
            raise SessionQueryError(
                f"{place}: its row at seq {first} holds other seqs (written around sessionref)", SESSION_QUERY_CORRUPT
            )
    return LoadedSession(log.header, log.events, log.title, log.surface_seqs, revision)


@dataclass(frozen=True, slots=True)
class LoadedSession:
    header: SessionHeader
    events: list[SessionEvent]
    title: TitleSnapshot | None
    surface_seqs: list[int]
    revision: StoredRevision

    def surface(self) -> SurfaceSnapshot:
        return SurfaceSnapshot.model_construct(
            session=self.header,
            captured_through_seq=self.events[-1].seq if self.events else None,
            events=events_at(self.events, self.surface_seqs),
        )
