"""What a host may ask of a store besides reading and writing sessions.

``HostedStore`` names the optional capabilities, one ``Protocol`` every kind answers through
``hosted``: the database store as it is, a folder or memory store through ``LocalStore`` (nothing
waits for a server, no message index of its own, no titles listed with the sessions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from core.folder.jsonl_store import JsonlSessionStore
from core.listeners import Listeners
from core.search.meaning import Embedder
from core.search.message_index import MessageIndex
from core.sessions.models import StoreProblem
from core.sessions.store_location import StoreLocation
from core.stores.session_store import SessionStore


class OwnIndex(MessageIndex, Protocol):
    """A message index a store keeps itself (the host closes it when it is done)."""

    def close(self) -> None:
        """Stop using the index."""
        ...

    def use_meaning(self, embedder: Embedder | None) -> None:
        """Search by meaning too, with ``embedder`` (``None``: words only)."""
        ...


@runtime_checkable
class HostedStore(Protocol):
    """What a host may ask of a store besides sessions (see the module docstring)."""

    @property
    def problems(self) -> Sequence[StoreProblem]:
        """Sessions the last listing could not list, each with why."""
        ...

    @property
    def unavailable(self) -> str | None:
        """Why writes wait (the database cannot be reached); ``None`` normally."""
        ...

    @property
    def waiting(self) -> int:
        """How many written events wait for the database to be back."""
        ...

    @property
    def health(self) -> Listeners[None]:
        """Told (from any thread) when ``unavailable`` or ``waiting`` changes."""
        ...

    @property
    def location(self) -> StoreLocation | None:
        """Where another process opens this store (``None``: only this process can, a memory store)."""
        ...

    def message_index(self) -> OwnIndex | None:
        """The store's own message search (``None``: the host builds one beside it)."""
        ...

    def listed_titles(self) -> Mapping[str, tuple[str, str | None]] | None:
        """Titles listed with the sessions (session id -> (revision key, title)); ``None``: none are."""
        ...


class LocalStore:
    """A folder or memory store as a ``HostedStore``."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self._health: Listeners[None] = Listeners()

    @property
    def problems(self) -> Sequence[StoreProblem]:
        """The folder's unreadable files (a memory store has none)."""
        return self._store.problems if isinstance(self._store, JsonlSessionStore) else ()

    @property
    def unavailable(self) -> str | None:
        """A local store is always there."""
        return None

    @property
    def waiting(self) -> int:
        """Nothing waits: every append reaches the disk (or memory) before it returns."""
        return 0

    @property
    def health(self) -> Listeners[None]:
        """Never told: a local store's health does not change."""
        return self._health

    @property
    def location(self) -> StoreLocation | None:
        """A folder store's folder (a memory store has none)."""
        store = self._store
        if isinstance(store, JsonlSessionStore):
            return StoreLocation(root=str(store.root), compression=store.compression)
        return None

    def message_index(self) -> OwnIndex | None:
        """None: the host keeps a SQLite index beside the folder (in memory for a memory store)."""
        return None

    def listed_titles(self) -> Mapping[str, tuple[str, str | None]] | None:
        """None: titles are read from the sessions."""
        return None


def hosted(store: SessionStore) -> HostedStore:
    """``store``'s optional capabilities: its own when it has them (a database), else a ``LocalStore``."""
    if isinstance(store, HostedStore):
        return store
    return LocalStore(store)
