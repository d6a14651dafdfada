"""``open_store``: the one way a session store is opened, a folder from its root or a database from
its URL, with its options (the app, ``sessionref mcp``, ``import``/``export`` and ``share`` all open
theirs here)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, overload

from core.folder.jsonl_layout import Compression
from core.folder.jsonl_store import JsonlSessionStore
from core.sessions.session import Clock, system_clock

if TYPE_CHECKING:
    from core.database.store import PostgresSessionStore

DATABASE_SCHEMES = ("postgresql://", "postgres://")
"""How a database store's URL starts (libpq's own URI schemes)."""


def is_database_url(location: str) -> bool:
    """Whether ``location`` names a database store rather than a folder."""
    return location.startswith(DATABASE_SCHEMES)


@overload
def open_store(
    *, url: str, pack_chunks: bool = ..., clock: Clock = ..., root: None = None, compression: Literal["zstd"] = ...
) -> PostgresSessionStore: ...


@overload
def open_store(
    *,
    root: str | os.PathLike[str],
    compression: Compression = ...,
    pack_chunks: bool = ...,
    clock: Clock = ...,
    url: None = None,
    keep_listing: bool = ...,
) -> JsonlSessionStore: ...


def open_store(
    *,
    url: str | None = None,
    root: str | os.PathLike[str] | None = None,
    compression: Compression = "zstd",
    pack_chunks: bool = True,
    clock: Clock = system_clock,
    keep_listing: bool = True,
) -> JsonlSessionStore | PostgresSessionStore:
    """Open the database store at ``url`` or the folder store at ``root`` (exactly one of them).

    A folder is created when missing; a database must have been given the store's schema
    (``sessionref db init``). ``compression`` is how a folder store writes new files;
    ``pack_chunks`` whether runs of streamed deltas are written as one packed row, as dsh does;
    ``keep_listing=False``: a folder store never writes its listing cache (a reader that changes nothing).

    Raises:
        SessionQueryError: the database cannot be used (``SESSION_QUERY_DATABASE_UNAVAILABLE`` and the
            schema codes), its message saying why.
        OSError: the folder cannot be created or read.
        ValueError: neither or both of ``url`` and ``root``, or an unknown compression.
    """
    if (url is None) == (root is None):
        raise ValueError("open_store takes a url or a root, not both or neither")
    if url is not None:
        from core.database.store import PostgresSessionStore  # psycopg only when a database is named

        return PostgresSessionStore(url, clock=clock, pack_chunks=pack_chunks)
    assert root is not None
    return JsonlSessionStore(
        root, compression=compression, clock=clock, pack_chunks=pack_chunks, keep_listing=keep_listing
    )
