"""Stores: what every session store does (``SessionStore``), opening one from a folder or a
database URL (``open_store``), and what a host may ask of a store beyond sessions (``hosted``).

The folder store (``core.sessions``), the database store (``core.database``) and the in-memory one
all satisfy ``SessionStore``; mypy checks each against it (``session_store``).
"""

from __future__ import annotations

from core.stores.hosted import HostedStore, LocalStore, OwnIndex, hosted
from core.stores.message_search import StoreIndex, open_message_index
from core.stores.opening import is_database_url, open_store
from core.stores.session_store import SessionStore

__all__ = [
    "HostedStore",
    "LocalStore",
    "OwnIndex",
    "SessionStore",
    "StoreIndex",
    "hosted",
    "is_database_url",
    "open_message_index",
    "open_store",
]
