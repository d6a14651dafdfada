"""Connecting to the session database with a fixed ``search_path``.

PostgreSQL resolves an unqualified name through the session's ``search_path``, ``"$user", public``
unless someone set another; a member who may create schemas can plant a table or a function there
that a teammate's statements then reach (PostgreSQL's "secure schema usage pattern" warns of it).
sessionref names every object with its schema, and on top of that every connection it opens
starts with ``search_path = pg_catalog, sessionref`` (a startup option, which wins over a role's or
a database's own setting), so nothing a user can create is ever looked up.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

SCHEMA = "sessionref"
"""The schema every table, sequence and function of the store lives in."""
OWNER_ROLE = "sessionref_owner"
"""The ``NOLOGIN`` role that owns the schema and everything in it: no user is it, so no user can
switch row-level security off (``sessionref db init`` creates it)."""
SEARCH_PATH = f"pg_catalog, {SCHEMA}"
"""The connections' and the functions' search path: the catalog first, then the store's schema."""
_OPTION = f"-c search_path={SEARCH_PATH.replace(' ', '')}"


def fixed_conninfo(conninfo: str) -> str:
    """``conninfo`` with the fixed search path added to whatever startup options it names.

    Raises:
        psycopg.ProgrammingError: ``conninfo`` is not a connection string or URI.
    """
    options = conninfo_to_dict(conninfo).get("options")
    return make_conninfo(conninfo, options=f"{options} {_OPTION}" if options else _OPTION)


def connect(conninfo: str, **kwargs: Any) -> psycopg.Connection[Any]:
    """``psycopg.connect`` with the fixed search path (see the module docstring).

    Raises:
        psycopg.Error: the database cannot be reached, or refused the connection.
    """
    return psycopg.connect(fixed_conninfo(conninfo), **kwargs)
