"""The sessions a PostgreSQL store writes: each one's lock connection, and what waits while the
database cannot be reached.

Each session open for writing holds its writer lock on a connection of its own (``rows``). When
that connection is lost (the server restarted, the network went), the batch that failed and every
later one wait in the session's outbox, in order: the session keeps them in memory, so a reply
streaming at the time goes on, and the host says that the database is unreachable and how many
events wait (``unavailable``, ``waiting``). A thread reconnects with a growing pause, takes the
session's lock again and writes what waits, batch by batch, each in its own transaction. A batch
whose commit was sent but never confirmed is recognised by its seqs (the session's ``last_seq``
already covers it) and not written twice; nothing is half written, since a batch is one transaction.

Events in an outbox are not yet stored: a process that dies before the database is back loses
them, as it would lose a reply still streaming. If another writer took the session meanwhile, what
waits is kept and reported in ``unavailable``, never forced in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from core.database.errors import server_words
from core.database.rows import append_rows, lock_session, seqs_of, unlock_and_close, write_failed
from core.database.search import Message, SearchDelta, search_delta
from core.errors import SessionQueryError
from core.folder.jsonl_writer import SESSION_QUERY_LOCKED
from core.sessions.models import SessionHeader
from core.sessions.session import Session, already_exists

RETRY_FIRST = 0.25
RETRY_LONGEST = 5.0


@dataclass
class _Batch:
    rows: list[dict[str, Any]]
    header: SessionHeader | None
    """The session's header when this batch creates it (its first)."""
    search: SearchDelta | None = None
    title: str | None = None

    @property
    def last_seq(self) -> int:
        return seqs_of(self.rows[-1])[1]

    @property
    def events(self) -> int:
        return sum(last - first + 1 for first, last in map(seqs_of, self.rows))


@dataclass
class _Writer:
    session: Session
    connection: psycopg.Connection[Any] | None = None
    """The lock connection; ``None`` before the first write and while the database is unreachable."""
    outbox: list[_Batch] = field(default_factory=list)
    stored: bool = False
    """Whether the session's row exists in the database (its first batch was written)."""
    released: bool = False
    """Released while events still waited: let go once they are written."""
    searchable: list[Message] | None = None
    """The searchable messages the database holds (or will, once the outbox is written); ``None``
    when unknown (a session opened from the database: its first change rewrites them)."""


class PgWriters:
    """The writers of one store (see the module docstring).

    Args:
        conninfo: the database (never shown in messages).
        on_change: called (from any thread) when ``unavailable`` or ``waiting`` changes.
    """

    def __init__(self, conninfo: str, on_change: Callable[[], None] | None = None) -> None:
        self._conninfo = conninfo
        self.on_change = on_change
        self._writers: dict[str, _Writer] = {}
        self._lock = threading.RLock()
        self._revisions: dict[str, int] = {}
        self.unavailable: str | None = None
        """Why writes wait (the database cannot be reached, or another writer took a session)."""
        self._retry: threading.Thread | None = None
        self._stop = threading.Event()

    # -- the sessions -----------------------------------------------------------------------------

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._writers

    def session(self, session_id: str) -> Session | None:
        writer = self._writers.get(session_id)
        return writer.session if writer is not None else None

    def sessions(self) -> list[Session]:
        return [writer.session for writer in list(self._writers.values())]

    def ids(self) -> list[str]:
        """The sessions written here."""
        return list(self._writers)

    def stored(self, session_id: str) -> bool:
        """Whether a session written here has its row in the database (its first batch is in)."""
        writer = self._writers.get(session_id)
        return writer is not None and writer.stored

    def adopt(self, session: Session, connection: psycopg.Connection[Any] | None) -> None:
        """Write ``session`` from now on: new (``connection`` ``None``, nothing stored yet) or
        opened with its lock connection."""
        stored = connection is not None
        self._writers[session.id] = _Writer(session, connection, stored=stored, searchable=None if stored else [])

    def revision(self, session_id: str) -> int | None:
        """The session's revision as of the last batch written here."""
        return self._revisions.get(session_id)

    @property
    def waiting(self) -> int:
        """How many events wait for the database."""
        with self._lock:
            return sum(batch.events for writer in self._writers.values() for batch in writer.outbox)

    # -- writing ----------------------------------------------------------------------------------

    def write(
        self, session: Session, rows: list[dict[str, Any]], searchable: list[Message] | None, title: str | None
    ) -> None:
        """Write one batch, or keep it in the session's outbox while the database is unreachable.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` (not open here, or another writer
                holds it), ``SESSION_QUERY_SESSION_EXISTS``, ``SESSION_QUERY_WRITE_FAILED`` (the
                database refused the batch: nothing of it is written, nothing waits).
        """
        with self._lock:
            writer = self._writers.get(session.id)
            if writer is None or writer.session is not session:
                raise SessionQueryError(f"session {session.id!r} is not open for writing here", SESSION_QUERY_LOCKED)
            search = None if searchable is None else search_delta(writer.searchable, searchable)
            batch = _Batch(rows, None if writer.stored else session.header, search, title)
            if writer.outbox:
                writer.outbox.append(batch)  # behind what already waits, in order
                self._changed()
            else:
                try:
                    self._write_now(writer, batch)
                except psycopg.OperationalError as error:
                    # The connection is gone (or could not be made): the batch waits for the database.
                    self._lost(writer, error)
                    writer.outbox.append(batch)
                    self._changed()
                    self._start_retrying()
            if searchable is not None:
                writer.searchable = searchable  # what the database holds once this batch is in

    def _write_now(self, writer: _Writer, batch: _Batch) -> None:
        if writer.connection is None:
            writer.connection = lock_session(self._conninfo, writer.session.id)
        try:
            revision = append_rows(
                writer.connection, writer.session.id, batch.rows, batch.header, batch.search, batch.title
            )
        except psycopg.errors.UniqueViolation:
            raise already_exists(writer.session.id) from None
        except psycopg.OperationalError:
            raise
        except psycopg.Error as error:
            raise write_failed(writer.session.id, error, "nothing of the batch was written") from None
        writer.stored = True
        self._revisions[writer.session.id] = revision

    def _lost(self, writer: _Writer, error: psycopg.Error) -> None:
        if writer.connection is not None:
            writer.connection.close()  # the lock went with the server's end of it
            writer.connection = None
        reason = server_words(error, "the connection was lost")
        self.unavailable = f"the session database cannot be reached ({reason}); reconnecting"

    # -- waiting for the database -------------------------------------------------------------------

    def _start_retrying(self) -> None:
        if self._retry is None or not self._retry.is_alive():
            self._retry = threading.Thread(target=self._retry_loop, name="sessionref-reconnect", daemon=True)
            self._retry.start()

    def _retry_loop(self) -> None:
        pause = RETRY_FIRST
        while not self._stop.wait(pause):
            if self.flush_waiting():
                return
            pause = min(pause * 2, RETRY_LONGEST)

    def flush_waiting(self) -> bool:
        """Try to write what waits, session by session; ``True`` once nothing waits."""
        with self._lock:
            for writer in list(self._writers.values()):
                if writer.outbox and not self._flush(writer):
                    self._changed()
                    return False
            for session_id, writer in list(self._writers.items()):
                if writer.released:
                    self.release(session_id)
            self.unavailable = None
            self._changed()
            return True

    def _flush(self, writer: _Writer) -> bool:
        session_id = writer.session.id
        try:
            if writer.connection is None:
                writer.connection = lock_session(self._conninfo, session_id)
            row = writer.connection.execute(
                "SELECT last_seq FROM sessionref.sessionref_sessions WHERE id = %s", (session_id,)
            ).fetchone()
            stored_through = -1 if row is None else int(row[0])
            writer.stored = row is not None
            while writer.outbox:
                batch = writer.outbox[0]
                if batch.last_seq <= stored_through:
                    writer.outbox.pop(0)  # its commit went through before the connection was lost
                    continue
                batch.header = None if writer.stored else writer.session.header
                self._write_now(writer, batch)
                writer.outbox.pop(0)
                self._changed()
        except SessionQueryError as error:
            if error.code == SESSION_QUERY_LOCKED:
                self.unavailable = (
                    f"session {session_id!r} was taken by another writer while the database was unreachable;"
                    f" {sum(batch.events for batch in writer.outbox)} of its events are not stored"
                )
            else:
                self.unavailable = error.line
            return False
        except psycopg.Error as error:
            self._lost(writer, error)
            return False
        return True

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # -- ending -----------------------------------------------------------------------------------

    def release(self, session_id: str) -> None:
        """Stop writing one session (its lock is released). Events still waiting for the database
        keep it until they are written."""
        with self._lock:
            writer = self._writers.get(session_id)
            if writer is None:
                return
            if writer.outbox:
                writer.released = True
                return
            del self._writers[session_id]
            self._revisions.pop(session_id, None)
        if writer.connection is not None:
            unlock_and_close(writer.connection)

    def close(self) -> int:
        """Write what waits if the database is back (one try), release every session and stop
        retrying; returns how many events could not be stored."""
        self._stop.set()
        if self.waiting:
            self.flush_waiting()
        lost = self.waiting
        with self._lock:
            for writer in self._writers.values():
                writer.outbox.clear()
        for session_id in list(self._writers):
            self.release(session_id)
        return lost
