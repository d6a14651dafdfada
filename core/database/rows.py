"""Writing rows to the PostgreSQL store: the writer's session lock and the batch transaction.

A writer holds a session-level advisory lock on a connection of its own while the session is open:
it dies with the connection (as ``flock`` dies with the process), so a writer killed mid-append
leaves neither the lock nor half a batch behind. Each batch is one transaction; the schema's trigger
refuses a row whose first seq does not follow the session's last one.
"""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg

from core.database.connect import connect
from core.database.errors import server_words
from core.database.search import Message, SearchDelta, storable, write_search_delta
from core.errors import SessionQueryError
from core.folder.jsonl_header import header_line
from core.folder.jsonl_writer import SESSION_QUERY_LOCKED, SESSION_QUERY_WRITE_FAILED
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import pack_chunk_runs
from core.sessions.models import SessionEvent, SessionHeader
from core.sessions.session import already_exists

_INSERT_ROWS = (
    "INSERT INTO sessionref.sessionref_rows (session_id, first_seq, last_seq, row) "
    "SELECT %s, first, last, row FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS t(first, last, row)"
)
"""A batch's rows in one statement: the schema's trigger checks and records them once per batch."""
_INSERT_SESSION = "INSERT INTO sessionref.sessionref_sessions (id, header, cwd, created_at) VALUES (%s, %s, %s, %s)"
_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended('sessionref:' || %s, 0))"


def locked_elsewhere(session_id: str) -> SessionQueryError:
    return SessionQueryError(
        f"session {js_json_stringify(session_id)} is open elsewhere (another writer holds it)", SESSION_QUERY_LOCKED
    )


def write_failed(session_id: str, error: psycopg.Error, outcome: str) -> SessionQueryError:
    """A refused write, in the server's words (never the connection string)."""
    return SessionQueryError(
        f"cannot write session {js_json_stringify(session_id)}: {server_words(error)} ({outcome})",
        SESSION_QUERY_WRITE_FAILED,
    )


def lock_session(conninfo: str, session_id: str) -> psycopg.Connection[Any]:
    """A connection of its own holding the session's writer lock.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` when another writer holds it.
        psycopg.Error: the database cannot be reached.
    """
    connection = connect(conninfo, autocommit=True)
    try:
        row = connection.execute(_TRY_LOCK, (session_id,)).fetchone()
    except BaseException:
        connection.close()
        raise
    if row is None or not row[0]:
        connection.close()
        raise locked_elsewhere(session_id)
    return connection


def unlock_and_close(connection: psycopg.Connection[Any]) -> None:
    """Close a writer's connection, its session lock released first: the server ends a closed
    connection's backend (and its locks) a moment later, and a writer asking next must not find
    the lock still held."""
    with contextlib.suppress(psycopg.Error):
        connection.execute("SELECT pg_advisory_unlock_all()")
    connection.close()


def append_rows(
    connection: psycopg.Connection[Any],
    session_id: str,
    rows: list[dict[str, Any]],
    header: SessionHeader | None,
    search: SearchDelta | None = None,
    title: str | None = None,
) -> int:
    """One batch of JSONL rows in one transaction (the session created first when ``header`` is
    given), with what it changes in the session's searchable messages and title; returns the
    session's new revision.

    Raises:
        psycopg.Error: nothing of the batch was written.
    """
    with connection.transaction():
        if header is not None:
            line = header_line(header).rstrip("\n")
            connection.execute(_INSERT_SESSION, (header.id, line, header.cwd, header.created_at))
        insert_rows(connection, session_id, rows)
        if search is not None:
            write_search_delta(connection, session_id, search)
        if title is not None:
            connection.execute(
                "UPDATE sessionref.sessionref_sessions SET title = %s WHERE id = %s", (storable(title), session_id)
            )
        found = connection.execute(
            "SELECT revision FROM sessionref.sessionref_sessions WHERE id = %s", (session_id,)
        ).fetchone()
    assert found is not None  # the session's own row, written by its owner
    return int(found[0])


def put_session(
    connection: psycopg.Connection[Any],
    header: SessionHeader,
    events: list[SessionEvent],
    messages: list[Message],
    title: str | None,
) -> int:
    """A session as another store holds it: created with ``header`` when absent, then the events
    past its last seq, in one transaction (an import; nobody may be writing it), with its searchable
    ``messages`` and ``title`` as they stand after all ``events``. Returns how many events were added.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS`` when the id holds another header (or
            belongs to someone this role may not see), ``SESSION_QUERY_SESSION_LOCKED`` while a
            writer has it open.
        psycopg.Error: nothing of it was written.
    """
    line = header_line(header).rstrip("\n")
    with connection.transaction():
        locked = connection.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended('sessionref:' || %s, 0))", (header.id,)
        ).fetchone()
        if locked is None or not locked[0]:
            raise locked_elsewhere(header.id)
        connection.execute(
            _INSERT_SESSION + " ON CONFLICT (id) DO NOTHING", (header.id, line, header.cwd, header.created_at)
        )
        found = connection.execute(
            "SELECT header, last_seq, owner = current_user FROM sessionref.sessionref_sessions WHERE id = %s",
            (header.id,),
        ).fetchone()
        if found is None or found[0] != line or not found[2]:
            raise already_exists(header.id)
        newer = [event for event in events if event.seq > found[1]]
        insert_rows(connection, header.id, pack_chunk_runs(newer))
        if newer:  # the whole session is searchable as it now stands
            write_search_delta(connection, header.id, SearchDelta(0, messages))
            connection.execute("UPDATE sessionref.sessionref_sessions SET title = %s WHERE id = %s", (
                None if title is None else storable(title), header.id))  # fmt: skip
    return len(newer)


def insert_rows(connection: psycopg.Connection[Any], session_id: str, rows: list[dict[str, Any]]) -> None:
    """Insert a batch's JSONL rows in one statement (nothing for an empty batch)."""
    if not rows:
        return
    seqs = [seqs_of(row) for row in rows]
    texts = [js_json_stringify(row) for row in rows]
    connection.execute(_INSERT_ROWS, (session_id, [first for first, _ in seqs], [last for _, last in seqs], texts))


def seqs_of(row: dict[str, Any]) -> tuple[int, int]:
    """The first and last seq a JSONL row holds (a packed chunk row holds a run)."""
    if "seq0" in row:
        data = row["data"]
        members = data.get("texts", data.get("args", []))
        return row["seq0"], row["seq0"] + len(members) - 1
    return row["seq"], row["seq"]
