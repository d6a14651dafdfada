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
- **Schema versions**: ``sessionref_schema`` holds the version; the store creates or migrates what
  it knows and refuses a newer one (``SESSION_QUERY_SCHEMA_TOO_NEW``), never downgrading it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from core.errors import SessionQueryError
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import pack_chunk_runs
from core.sessions.jsonl_codec import header_from_line, header_line, load_log
from core.sessions.jsonl_writer import SESSION_QUERY_LOCKED, SESSION_QUERY_WRITE_FAILED
from core.sessions.models import SessionEvent, SessionHeader, SessionRecord, SurfaceSnapshot, TitleSnapshot
from core.sessions.query import listing_order_key
from core.sessions.session import Clock, Session, already_exists, check_cwd, mint_session_id, not_found, system_clock
from core.sessions.surface import events_at

SCHEMA_VERSION = 1
SESSION_QUERY_SCHEMA_TOO_NEW = "SESSION_QUERY_SCHEMA_TOO_NEW"
SESSION_QUERY_DATABASE = "SESSION_QUERY_DATABASE_UNAVAILABLE"

_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS sessionref_sessions (
    id text PRIMARY KEY,
    header text NOT NULL,
    cwd text,
    created_at bigint NOT NULL,
    last_seq bigint NOT NULL DEFAULT -1
);
CREATE TABLE IF NOT EXISTS sessionref_rows (
    session_id text NOT NULL REFERENCES sessionref_sessions (id) ON DELETE CASCADE,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    row text NOT NULL,
    PRIMARY KEY (session_id, first_seq),
    CHECK (last_seq >= first_seq)
);
CREATE OR REPLACE FUNCTION sessionref_seqs_only_increase() RETURNS trigger AS $$
DECLARE
    previous bigint;
BEGIN
    SELECT last_seq INTO previous FROM sessionref_sessions WHERE id = NEW.session_id FOR UPDATE;
    IF NEW.first_seq <= previous THEN
        RAISE EXCEPTION 'seq % does not follow % in session %', NEW.first_seq, previous, NEW.session_id
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE sessionref_sessions SET last_seq = NEW.last_seq WHERE id = NEW.session_id;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS sessionref_seqs_only_increase ON sessionref_rows;
CREATE TRIGGER sessionref_seqs_only_increase BEFORE INSERT ON sessionref_rows
    FOR EACH ROW EXECUTE FUNCTION sessionref_seqs_only_increase();
"""

_MIGRATIONS = {1: _SCHEMA_V1}
"""Version -> the SQL that brings the version before it there."""


def _database_error(error: psycopg.Error, what: str) -> SessionQueryError:
    # The message of the server, never the connection string (it may hold a password).
    detail = error.diag.message_primary if isinstance(error, psycopg.errors.DatabaseError) else None
    return SessionQueryError(f"{what}: {detail or type(error).__name__}", SESSION_QUERY_DATABASE)


class PostgresSessionStore:
    """Sessions in PostgreSQL (see the module docstring).

    Args:
        conninfo: a libpq connection string or URI (``postgresql://user@host/db``).
        clock: milliseconds since the epoch, for ``created_at`` and event times.
        pack_chunks: write runs of ``assistant/chunk`` events as dsh's packed rows.
    """

    def __init__(self, conninfo: str, *, clock: Clock = system_clock, pack_chunks: bool = True) -> None:
        self._conninfo = conninfo
        self._clock = clock
        self.pack_chunks = pack_chunks
        self._lock = threading.Lock()
        self._owned: dict[str, tuple[Session, psycopg.Connection[Any] | None]] = {}
        try:
            self._db = psycopg.connect(conninfo, autocommit=True)
        except psycopg.Error as error:
            raise _database_error(error, "cannot connect to the session database") from None
        self._migrate()

    # -- schema -----------------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock, self._db.transaction():
            # One migrator at a time, across machines.
            self._db.execute("SELECT pg_advisory_xact_lock(hashtext('sessionref schema'))")
            self._db.execute("CREATE TABLE IF NOT EXISTS sessionref_schema (version integer NOT NULL)")
            row = self._db.execute("SELECT max(version) FROM sessionref_schema").fetchone()
            version = row[0] if row is not None and row[0] is not None else 0
            if version > SCHEMA_VERSION:
                raise SessionQueryError(
                    f"the session database has schema version {version}; this sessionref knows up to "
                    f"{SCHEMA_VERSION} (upgrade sessionref)",
                    SESSION_QUERY_SCHEMA_TOO_NEW,
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                self._db.execute(_MIGRATIONS[step])
                self._db.execute("INSERT INTO sessionref_schema (version) VALUES (%s)", (step,))

    @property
    def schema_version(self) -> int:
        """The schema version the database holds."""
        with self._lock:
            row = self._db.execute("SELECT max(version) FROM sessionref_schema").fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

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
        if session_id in self._owned or self._exists(session_id):
            raise already_exists(session_id)
        header = SessionHeader(id=session_id, cwd=cwd, created_at=self._clock() if created_at is None else created_at)
        session = Session(header, clock=self._clock, sink=self)
        self._owned[session_id] = (session, None)
        return session

    def _exists(self, session_id: str) -> bool:
        with self._lock:
            return (
                self._db.execute("SELECT 1 FROM sessionref_sessions WHERE id = %s", (session_id,)).fetchone()
                is not None
            )

    def get(self, session_id: str) -> Session | None:
        """The session, opened for writing (locked until ``release``/``close``); ``None`` when absent.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` when another writer holds it.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned[0]
        connection = self._lock_connection(session_id)
        try:
            loaded = self._load(session_id, connection)
        except BaseException:
            _unlock_and_close(connection)
            raise
        if loaded is None:
            _unlock_and_close(connection)
            return None
        header, events, _title, _seqs = loaded
        session = Session(header, events, clock=self._clock, sink=self)
        self._owned[session_id] = (session, connection)
        return session

    def _lock_connection(self, session_id: str) -> psycopg.Connection[Any]:
        try:
            connection = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as error:
            raise _database_error(error, "cannot open the session for writing") from None
        try:
            row = connection.execute(
                "SELECT pg_try_advisory_lock(hashtextextended('sessionref:' || %s, 0))", (session_id,)
            ).fetchone()
        except psycopg.Error as error:
            connection.close()
            raise _database_error(error, "cannot open the session for writing") from None
        if row is None or not row[0]:
            connection.close()
            raise SessionQueryError(
                f"session {js_json_stringify(session_id)} is open elsewhere (another writer holds it)",
                SESSION_QUERY_LOCKED,
            )
        return connection

    def write(self, session: Session, events: Iterable[SessionEvent]) -> None:
        """Persist one append batch in one transaction (the ``EventSink`` of owned sessions).

        Raises:
            SessionQueryError: ``SESSION_QUERY_WRITE_FAILED``; nothing of the batch is written.
        """
        owned = self._owned.get(session.id)
        if owned is None or owned[0] is not session:
            raise SessionQueryError(
                f"session {js_json_stringify(session.id)} is not open for writing here", SESSION_QUERY_LOCKED
            )
        batch = list(events)
        rows = pack_chunk_runs(batch) if self.pack_chunks else [event.to_wire() for event in batch]
        values = [(session.id, *_seqs_of(row), js_json_stringify(row)) for row in rows]
        connection = owned[1]
        try:
            if connection is None:
                connection = self._lock_connection(session.id)
                self._owned[session.id] = (session, connection)
            with connection.transaction():
                if owned[1] is None:
                    header = session.header
                    connection.execute(
                        "INSERT INTO sessionref_sessions (id, header, cwd, created_at) VALUES (%s, %s, %s, %s)",
                        (header.id, header_line(header).rstrip("\n"), header.cwd, header.created_at),
                    )
                with connection.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO sessionref_rows (session_id, first_seq, last_seq, row) VALUES (%s, %s, %s, %s)",
                        values,
                    )
        except psycopg.errors.UniqueViolation:
            raise already_exists(session.id) from None
        except psycopg.Error as error:
            raise SessionQueryError(
                f"cannot write session {js_json_stringify(session.id)}: "
                f"{getattr(error.diag, 'message_primary', None) or type(error).__name__}"
                " (nothing of the batch was written)",
                SESSION_QUERY_WRITE_FAILED,
            ) from None

    def put_events(self, header: SessionHeader, events: list[SessionEvent]) -> int:
        """Store a session as another store holds it: created with ``header`` when absent, then
        the events past its last seq, in one transaction (an import; nobody may be writing it).
        Returns how many events were added.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS`` when the id holds another header,
                ``SESSION_QUERY_SESSION_LOCKED`` while a writer has it open, ``SESSION_QUERY_WRITE_FAILED``.
        """
        line = header_line(header).rstrip("\n")
        try:
            with self._lock, self._db.transaction():
                locked = self._db.execute(
                    "SELECT pg_try_advisory_xact_lock(hashtextextended('sessionref:' || %s, 0))", (header.id,)
                ).fetchone()
                if locked is None or not locked[0]:
                    raise SessionQueryError(
                        f"session {js_json_stringify(header.id)} is open elsewhere (another writer holds it)",
                        SESSION_QUERY_LOCKED,
                    )
                self._db.execute(
                    "INSERT INTO sessionref_sessions (id, header, cwd, created_at) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (id) DO NOTHING",
                    (header.id, line, header.cwd, header.created_at),
                )
                found = self._db.execute(
                    "SELECT header, last_seq FROM sessionref_sessions WHERE id = %s", (header.id,)
                ).fetchone()
                assert found is not None
                if found[0] != line:
                    raise already_exists(header.id)
                newer = [event for event in events if event.seq > found[1]]
                values = [(header.id, *_seqs_of(row), js_json_stringify(row)) for row in pack_chunk_runs(newer)]
                with self._db.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO sessionref_rows (session_id, first_seq, last_seq, row) VALUES (%s, %s, %s, %s)",
                        values,
                    )
        except psycopg.Error as error:
            raise SessionQueryError(
                f"cannot write session {js_json_stringify(header.id)}: "
                f"{getattr(error.diag, 'message_primary', None) or type(error).__name__}"
                " (nothing of it was written)",
                SESSION_QUERY_WRITE_FAILED,
            ) from None
        return len(newer)

    def release(self, session_id: str) -> None:
        """Stop writing one session (its lock is released; the data stays)."""
        owned = self._owned.pop(session_id, None)
        if owned is not None and owned[1] is not None:
            _unlock_and_close(owned[1])

    def delete(self, session_id: str) -> None:
        """Delete a session and its rows.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        self.release(session_id)
        with self._lock:
            deleted = self._db.execute("DELETE FROM sessionref_sessions WHERE id = %s", (session_id,)).rowcount
        if not deleted:
            raise not_found(session_id)

    def close(self) -> None:
        """Release every session this store writes, and disconnect."""
        for session_id in list(self._owned):
            self.release(session_id)
        self._db.close()

    # -- reading ----------------------------------------------------------------------------------

    def _load(
        self, session_id: str, connection: psycopg.Connection[Any] | None = None
    ) -> tuple[SessionHeader, list[SessionEvent], TitleSnapshot | None, list[int]] | None:
        query = sql.SQL(
            "SELECT s.header, r.row FROM sessionref_sessions s LEFT JOIN sessionref_rows r ON r.session_id = s.id "
            "WHERE s.id = %s ORDER BY r.first_seq"
        )
        try:
            if connection is None:
                with self._lock:
                    rows = self._db.execute(query, (session_id,)).fetchall()
            else:
                rows = connection.execute(query, (session_id,)).fetchall()
        except psycopg.Error as error:
            raise _database_error(error, f"cannot read session {js_json_stringify(session_id)}") from None
        if not rows:
            return None
        lines = [rows[0][0]] + [row for _, row in rows if row is not None]
        log = load_log(
            ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), Path(f"postgresql:{session_id}"), "none"
        )
        return log.header, log.events, log.title, log.surface_seqs

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session, newest first (the contract's order: ids by UTF-16 code units)."""
        with self._lock:
            rows = self._db.execute("SELECT header FROM sessionref_sessions").fetchall()
        records = {
            header.id: SessionRecord(header=header, live=header.id in self._owned, persisted=True)
            for header in (header_from_line(row[0], Path("postgresql:sessionref_sessions")) for row in rows)
        }
        for session_id, (session, _connection) in self._owned.items():
            if session_id not in records:
                records[session_id] = SessionRecord(header=session.header, live=True, persisted=False)
        return sorted(records.values(), key=listing_order_key)

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned[0].snapshot()
        loaded = self._load(session_id)
        if loaded is None:
            raise not_found(session_id)
        header, events, _title, seqs = loaded
        return SurfaceSnapshot.model_construct(
            session=header, captured_through_seq=events[-1].seq if events else None, events=events_at(events, seqs)
        )

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the raw log, or ``None``."""
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned[0].title
        loaded = self._load(session_id)
        if loaded is None:
            raise not_found(session_id)
        return loaded[2]

    def read_log(self, session_id: str) -> tuple[SessionHeader, list[SessionEvent]]:
        """Every event of the raw log, read-only (no write lock)."""
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned[0].header, list(owned[0].events)
        loaded = self._load(session_id)
        if loaded is None:
            raise not_found(session_id)
        return loaded[0], loaded[1]


def _unlock_and_close(connection: psycopg.Connection[Any]) -> None:
    """Close a writer's connection, its session lock released first: the server ends a closed
    connection's backend (and its locks) a moment later, and a writer asking next must not find
    the lock still held."""
    with contextlib.suppress(psycopg.Error):
        connection.execute("SELECT pg_advisory_unlock_all()")
    connection.close()


def _seqs_of(row: dict[str, Any]) -> tuple[int, int]:
    """The first and last seq a JSONL row holds (a packed chunk row holds a run)."""
    if "seq0" in row:
        data = row["data"]
        members = data.get("texts", data.get("args", []))
        return row["seq0"], row["seq0"] + len(members) - 1
    return row["seq"], row["seq"]
