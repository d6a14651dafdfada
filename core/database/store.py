"""``PostgresSessionStore``: sessions in a PostgreSQL database, for several machines and for teams.

The same behaviour as ``JsonlSessionStore``, kept by the database rather than by files:

- **Rows are the JSONL rows.** A session is its header line and one row per append batch member, as
  the text ``JsonlSessionStore`` writes (packed chunk rows included), so moving a session between the
  two loses nothing, and reading goes through the same parser (``load_log``).
- **One writer per session.** ``get`` takes a session-level advisory lock on a connection of its
  own, held while the session is open: it dies with the connection (as ``flock`` dies with the
  process), and a second writer, from any machine, gets ``SESSION_QUERY_SESSION_LOCKED``.
- **A batch is all or nothing, seqs only increase**: each batch is one transaction, and a trigger
  refuses a row whose first seq is not past the session's last one (``SESSION_QUERY_WRITE_FAILED``).
- **The schema is an administrator's** (``core.database.schema``): ``sessionref db init`` creates it
  once, owned by a role no user is; the store never creates or migrates anything, and refuses a
  database without it (``SESSION_QUERY_SCHEMA_MISSING``), with an earlier one
  (``SESSION_QUERY_SCHEMA_OUTDATED``), a newer one (``SESSION_QUERY_SCHEMA_TOO_NEW``) or one a user
  could read around (``SESSION_QUERY_UNSAFE_OWNER``). Every connection has a fixed ``search_path``.
- **Owners and teams** (``schema``): a session belongs to the role that created it and may be
  shared with teams (roles); row-level security lets a role list, read and reference its own and
  its teams' sessions and write only its own. A session it may not see reads exactly as one that
  does not exist (``SESSION_QUERY_SESSION_NOT_FOUND``); a teammate's is never opened for writing
  (``SESSION_QUERY_NOT_OWNER``) and is listed with its owner's name.
- **Changes are heard**, not polled: ``watcher`` listens to the database's notifications.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import PoolTimeout

from core.database.connect import connect
from core.database.errors import SESSION_QUERY_DATABASE, database_error
from core.database.pool import ReadPool
from core.database.reading import PgReader, StoredRevision
from core.database.rows import lock_session, put_session, unlock_and_close, write_failed
from core.database.schema import (
    SCHEMA_VERSION,
    SESSION_QUERY_SCHEMA_MISSING,
    SESSION_QUERY_SCHEMA_OUTDATED,
    SESSION_QUERY_SCHEMA_TOO_NEW,
    SESSION_QUERY_UNSAFE_OWNER,
    require_current,
    schema_version,
)
from core.database.search import PgMessageIndex, searchable
from core.database.teams import SESSION_QUERY_NOT_OWNER, SESSION_QUERY_UNKNOWN_TEAM, TeamSharing, not_owner
from core.database.watch import NotifyWatcher
from core.database.writers import PgWriters
from core.folder.watch import ChangeCallback
from core.listeners import Listeners
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import pack_chunk_runs
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
from core.sessions.session import (
    Clock,
    Session,
    already_exists,
    check_cwd,
    latest_title,
    mint_session_id,
    not_found,
    system_clock,
)
from core.sessions.store_location import StoreLocation
from core.sessions.surface import fold_surface

__all__ = [
    "SCHEMA_VERSION",
    "SESSION_QUERY_DATABASE",
    "SESSION_QUERY_NOT_OWNER",
    "SESSION_QUERY_SCHEMA_MISSING",
    "SESSION_QUERY_SCHEMA_OUTDATED",
    "SESSION_QUERY_SCHEMA_TOO_NEW",
    "SESSION_QUERY_UNKNOWN_TEAM",
    "SESSION_QUERY_UNSAFE_OWNER",
    "PostgresSessionStore",
    "StoredRevision",
]


class PostgresSessionStore(ReadsAsQuery):
    """Sessions in PostgreSQL (see the module docstring).

    Args:
        conninfo: a libpq connection string or URI (``postgresql://user@host/db``).
        clock: milliseconds since the epoch, for ``created_at`` and event times.
        pack_chunks: write runs of ``assistant/chunk`` events as dsh's packed rows.
    """

    def __init__(self, conninfo: str, *, clock: Clock = system_clock, pack_chunks: bool = True) -> None:
        self.url = conninfo
        """The database this store was opened on (a hand-off's ``sessionref mcp`` opens the same)."""
        self._clock = clock
        self.pack_chunks = pack_chunks
        self.watched = False
        """Set by a host that hears the database's change notifications (``watcher``)."""
        try:
            with connect(conninfo, autocommit=True, connect_timeout=10) as first:
                require_current(first)  # never creates or migrates: an administrator runs db init
                row = first.execute("SELECT current_user").fetchone()
        except psycopg.Error as error:
            raise database_error(error, "cannot connect to the session database") from None
        assert row is not None
        self.user: str = row[0]
        """The database role this store acts as: its sessions are the ones it may write."""
        self._health: Listeners[None] = Listeners()
        self._writers = PgWriters(conninfo, on_change=lambda: self._health.emit(None))
        self._pool = ReadPool(conninfo)
        self.reader = PgReader(self._pool, self._writers, self.user)
        """Listing and reading sessions as this role may see them."""
        self.teams = TeamSharing(self._pool, self.user)
        """Which teams may read this role's sessions."""

    @property
    def unavailable(self) -> str | None:
        """Why writes wait (the database cannot be reached): for the host to show; ``None`` normally."""
        return self._writers.unavailable

    @property
    def waiting(self) -> int:
        """How many written events wait for the database to be back."""
        return self._writers.waiting

    @property
    def health(self) -> Listeners[None]:
        """Told (from the writing or the reconnecting thread) when ``unavailable`` or ``waiting`` changes."""
        return self._health

    # -- reading (the reader's) ----------------------------------------------------------------------

    @property
    def problems(self) -> list[StoreProblem]:
        """Sessions the last listing could not list (a teammate's damaged rows), each with why."""
        return self.reader.problems

    def listing(self) -> list[SessionRecord]:
        """Every session this role may see, newest first (``PgReader.listing``).

        Raises:
            SessionQueryError: ``SESSION_QUERY_DATABASE_UNAVAILABLE``.
        """
        return self.reader.listing()

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        return self.reader.surface(session_id)

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the raw log, or ``None``."""
        return self.reader.title(session_id)

    def read_log(self, session_id: str) -> tuple[SessionHeader, list[SessionEvent]]:
        """Every event of the raw log, read-only (no write lock)."""
        return self.reader.read_log(session_id)

    def read_stored(self, header: SessionHeader) -> StoredSession:
        """One listed session read with its revision, for bulk readers (the search index)."""
        return self.reader.read_stored(header)

    def listed_titles(self) -> dict[str, tuple[str, str | None]]:
        """Session id -> (revision key, title) as the last listing saw them."""
        return self.reader.listed_titles()

    @property
    def location(self) -> StoreLocation:
        """The database, by its URL."""
        return StoreLocation(url=self.url)

    def message_index(self) -> PgMessageIndex:
        """Message search on this database (kept current by every append)."""
        return self.reader.message_index()

    def watcher(self, on_change: ChangeCallback) -> NotifyWatcher:
        """A watcher that hears the database's change notifications (``PgReader.watcher``)."""
        return self.reader.watcher(on_change)

    def note_changes(self, paths: Iterable[str] | None) -> None:
        """Say that something changed (a notification arrived): the next refresh lists again."""
        self.reader.note_changes(paths)

    def changes_pending(self) -> bool:
        """Whether a change was noted since the last listing."""
        return self.reader.changes_pending()

    def remembered_sessions(self) -> list[SessionRecord] | None:
        """No listing is remembered between runs (listing the database is the fast path)."""
        return self.reader.remembered_sessions()

    def listed_revisions(self) -> dict[str, StoredRevision]:
        """Session id -> revision as the last listing saw them; the same object while nothing changed."""
        return self.reader.listed_revisions()

    def listed_revision(self, header: SessionHeader) -> StoredRevision | None:
        """The revision the last listing saw for a session."""
        return self.reader.listed_revision(header)

    def written_revision(self, session_id: str) -> StoredRevision | None:
        """The revision of a session this store writes, as of its last append."""
        return self.reader.written_revision(session_id)

    # -- teams (the sharing's) ----------------------------------------------------------------------

    def share(self, session_id: str, team: str) -> bool:
        """Let ``team`` (a database role) read and reference one of this role's sessions; ``False``
        when it already was shared with them (``TeamSharing.share``).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``SESSION_QUERY_NOT_OWNER``,
                ``SESSION_QUERY_UNKNOWN_TEAM``.
        """
        return self.teams.share(session_id, team)

    def unshare(self, session_id: str, team: str) -> bool:
        """Stop sharing one of this role's sessions with ``team``; ``False`` when it was not shared.

        Raises:
            SessionQueryError: as ``share``.
        """
        return self.teams.unshare(session_id, team)

    def shared_with(self, session_id: str) -> list[str]:
        """The teams a session is shared with, as this role may see them (sorted).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        return self.teams.shared_with(session_id)

    # -- schema ---------------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """The schema version the database holds."""
        try:
            with self._pool.connection() as connection:
                return schema_version(connection)
        except (psycopg.Error, PoolTimeout) as error:
            raise database_error(error, "cannot read the schema version") from None

    # -- writing ----------------------------------------------------------------------------------

    def create(
        self, session_id: str | None = None, *, cwd: str | None = None, created_at: int | None = None
    ) -> Session:
        """Create a session; nothing is written until its first append (as the JSONL store).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS`` or ``SESSION_QUERY_INVALID_EVENT``.
        """
        if session_id is None:
            session_id = mint_session_id()
        check_cwd(cwd)
        if session_id in self._writers or self._exists(session_id):
            raise already_exists(session_id)
        header = SessionHeader(id=session_id, cwd=cwd, created_at=self._clock() if created_at is None else created_at)
        session = Session(header, clock=self._clock, sink=self)
        self._writers.adopt(session, None)
        return session

    def _exists(self, session_id: str) -> bool:
        if "\x00" in session_id:
            return False
        found = self._pool.run(
            "cannot read the sessions", "SELECT 1 FROM sessionref.sessionref_sessions WHERE id = %s", (session_id,)
        )
        return bool(found.rows)

    def get(self, session_id: str) -> Session | None:
        """The session, opened for writing (locked until ``release``/``close``); ``None`` when absent.

        A session this role may read but does not own (a teammate's) is never opened for writing.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` when another writer holds it,
                ``SESSION_QUERY_NOT_OWNER`` for a teammate's session.
        """
        owned = self._writers.session(session_id)
        if owned is not None:
            return owned
        owner = self._pool.owner_of(session_id)
        if owner is None:
            return None
        if owner != self.user:
            raise not_owner(session_id, owner)
        connection = self._lock_connection(session_id)
        try:
            loaded = self.reader.load(session_id, connection)
        except BaseException:
            unlock_and_close(connection)
            raise
        if loaded is None:
            unlock_and_close(connection)
            return None
        session = Session(loaded.header, loaded.events, clock=self._clock, sink=self)
        self._writers.adopt(session, connection)
        return session

    def _lock_connection(self, session_id: str) -> psycopg.Connection[TupleRow]:
        try:
            return lock_session(self._pool.conninfo, session_id)
        except psycopg.Error as error:
            raise database_error(error, "cannot open the session for writing") from None

    def write(self, session: Session, events: Iterable[SessionEvent]) -> None:
        """Persist one append batch in one transaction (the ``EventSink`` of owned sessions); while
        the database cannot be reached, the batch waits in order for it (``writers``).

        Raises:
            SessionQueryError: ``SESSION_QUERY_WRITE_FAILED``; nothing of the batch is written.
        """
        batch = list(events)
        rows = pack_chunk_runs(batch) if self.pack_chunks else [event.to_wire() for event in batch]
        # Only a batch that changes the surface changes what search finds (streamed chunks do not).
        changes_surface = any(event.surface_op is not None for event in batch)
        messages = searchable(session.snapshot_with(batch)) if changes_surface else None
        title = latest_title(batch)
        self._writers.write(session, rows, messages, title.title if title is not None else None)

    def put_events(self, header: SessionHeader, events: list[SessionEvent]) -> int:
        """Store a session as another store holds it: created with ``header`` when absent, then
        the events past its last seq, in one transaction (an import; nobody may be writing it).
        Returns how many events were added.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS`` when the id holds another header,
                ``SESSION_QUERY_SESSION_LOCKED`` while a writer has it open, ``SESSION_QUERY_WRITE_FAILED``.
        """
        try:
            surface = SurfaceSnapshot.model_construct(
                session=header, captured_through_seq=events[-1].seq if events else None,
                events=fold_surface(events, allow_gaps=True),
            )  # fmt: skip
            title = latest_title(events)
            with self._pool.connection() as connection:
                return put_session(
                    connection, header, events, searchable(surface), title.title if title is not None else None
                )
        except PoolTimeout as error:
            raise database_error(error, f"cannot write session {js_json_stringify(header.id)}") from None
        except psycopg.Error as error:
            raise write_failed(header.id, error, "nothing of it was written") from None

    def release(self, session_id: str) -> None:
        """Stop writing one session (its lock is released; the data stays). Events still waiting
        for the database keep it until they are written."""
        self._writers.release(session_id)

    def delete(self, session_id: str) -> None:
        """Delete a session and its rows.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        owner = self._pool.owner_of(session_id)
        if owner is None:
            raise not_found(session_id)
        if owner != self.user:
            raise not_owner(session_id, owner)
        self.release(session_id)
        what = f"cannot delete session {js_json_stringify(session_id)}"
        deleted = self._pool.run(
            what, "DELETE FROM sessionref.sessionref_sessions WHERE id = %s", (session_id,)
        ).rowcount
        if not deleted:
            raise not_found(session_id)

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> int:
        """Write what still waits for the database if it is back (one try), release every session
        this store writes, and disconnect; returns how many events could not be stored."""
        lost = self._writers.close()
        self._pool.close()
        return lost
