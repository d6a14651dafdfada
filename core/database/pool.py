"""``ReadPool``: the connections a PostgreSQL store reads on, and one statement on one of them.

A connection that died with a server restart is replaced on its next use (checked before each use),
and threads (listing, indexing) read side by side. Every connection starts with the fixed
``search_path`` (``core.database.connect``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from core.database.connect import fixed_conninfo
from core.database.errors import database_error
from core.serialization import js_json_stringify

WAIT = 5.0
"""Seconds a read waits for a pooled connection (a database that is down fails after this)."""


@dataclass(frozen=True, slots=True)
class Result:
    """What one statement returned: its rows (none for a statement without any) and its row count."""

    rows: list[tuple[Any, ...]]
    rowcount: int


class ReadPool:
    """A small pool of autocommit connections to one database (see the module docstring).

    Args:
        conninfo: a libpq connection string or URI.
    """

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            fixed_conninfo(conninfo),
            min_size=1,
            max_size=4,
            kwargs={"autocommit": True},
            check=ConnectionPool.check_connection,
            open=False,
            name="sessionref-read",
            num_workers=1,
        )
        self._pool.open(wait=False)

    @contextmanager
    def connection(self, timeout: float = WAIT) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for the block (waits at most ``timeout`` seconds for one).

        Raises:
            psycopg_pool.PoolTimeout: none came free, or the database cannot be reached.
        """
        with self._pool.connection(timeout=timeout) as connection:
            yield connection

    def run(self, what: str, statement: str, parameters: tuple[Any, ...] = ()) -> Result:
        """One statement on a pooled connection; a refusal is ``SESSION_QUERY_DATABASE_UNAVAILABLE``
        saying ``what`` failed (the server's words, never the connection string)."""
        try:
            with self.connection() as connection:
                cursor = connection.execute(statement, parameters)
                return Result(cursor.fetchall() if cursor.description is not None else [], cursor.rowcount)
        except (psycopg.Error, PoolTimeout) as error:
            raise database_error(error, what) from None

    def owner_of(self, session_id: str) -> str | None:
        """Who owns a session this role may see; ``None`` when it may not see it (or it is absent).

        Raises:
            SessionQueryError: ``SESSION_QUERY_DATABASE_UNAVAILABLE``.
        """
        if "\x00" in session_id:
            return None  # text in PostgreSQL never holds NUL: no session has such an id
        what = f"cannot read session {js_json_stringify(session_id)}"
        rows = self.run(what, "SELECT owner FROM sessionref.sessionref_sessions WHERE id = %s", (session_id,)).rows
        return str(rows[0][0]) if rows else None

    def close(self) -> None:
        """Close every connection."""
        self._pool.close()
