"""``sessionref db init``: give a database the store's schema, or bring an earlier one up to date.

Run once by an administrator (and again after an upgrade that says so): the schema, its owner role
and the grants are ``core.database.schema``'s; this connects, runs it, and makes what older
versions wrote before message search existed searchable. The app and ``import`` never do this.
"""

from __future__ import annotations

from typing import Any

import psycopg

from core.database.connect import connect
from core.database.errors import database_error
from core.database.reading import read_session_rows
from core.database.schema import InitReport, initialize
from core.database.search import SearchDelta, searchable, write_search_delta
from core.errors import SessionQueryError


def initialize_database(conninfo: str) -> InitReport:
    """Create or migrate the schema of the database at ``conninfo`` (see ``schema.initialize``).

    Raises:
        SessionQueryError: ``SESSION_QUERY_DATABASE_UNAVAILABLE`` (cannot connect, or the server
            refused a step: the administrator's role lacks a privilege, say), or the schema's own
            refusals (``SESSION_QUERY_SCHEMA_TOO_NEW``, ``SESSION_QUERY_UNSAFE_OWNER``).
    """
    try:
        with connect(conninfo, autocommit=True, connect_timeout=10) as connection:
            report = initialize(connection)
            if 0 < report.before.version < 3:
                _backfill_search(connection)
    except psycopg.Error as error:
        raise database_error(error, "cannot set up the session database") from None
    return report


def _backfill_search(connection: psycopg.Connection[Any]) -> None:
    """Make the sessions written before message search existed (schema < 3) searchable, each in
    its own transaction: those this role may write (all of them for a superuser; a session another
    role owns waits for its owner's next append)."""
    rows = connection.execute(
        "SELECT s.id FROM sessionref.sessionref_sessions s WHERE s.owner = current_user OR "
        "(SELECT rolbypassrls OR rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)"
    ).fetchall()
    for (session_id,) in rows:
        try:
            loaded = read_session_rows(connection, session_id)
        except SessionQueryError:
            continue  # a damaged session stays unsearchable, and readable as far as it goes
        if loaded is None:
            continue
        with connection.transaction():
            write_search_delta(connection, session_id, SearchDelta(0, searchable(loaded.surface())))
            title = loaded.title.title if loaded.title is not None else None
            connection.execute(
                "UPDATE sessionref.sessionref_sessions SET title = %s WHERE id = %s", (title, session_id)
            )
