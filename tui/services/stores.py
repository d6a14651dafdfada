"""The stores the app hosts, and what it asks of each beyond reading and writing sessions.

``Store`` is any of the three kinds (a folder, memory, a database); ``HostedStore`` names the
optional capabilities, one ``Protocol`` every kind answers through ``hosted``: the database store
as it is, a folder or memory store through ``LocalStore`` (nothing waits for a server, no message
index of its own, no titles listed with the sessions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union

from core import JsonlSessionStore, MemorySessionStore, MessageIndex, StoreProblem

if TYPE_CHECKING:
    from core.database.store import PostgresSessionStore

Store = Union[JsonlSessionStore, MemorySessionStore, "PostgresSessionStore"]
"""A store the app writes and reads."""


class OwnIndex(MessageIndex, Protocol):
    """A message index a store keeps itself (the app closes it when it exits)."""

    def close(self) -> None:
        """Stop using the index."""
        ...


class HostedStore(Protocol):
    """What the app may ask of a store besides sessions (see the module docstring)."""

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

    def message_index(self) -> OwnIndex | None:
        """The store's own message search (``None``: the app builds one beside it)."""
        ...

    def listed_titles(self) -> Mapping[str, tuple[str, str | None]] | None:
        """Titles listed with the sessions (session id -> (revision key, title)); ``None``: none are."""
        ...


class LocalStore:
    """A folder or memory store as a ``HostedStore``."""

    def __init__(self, store: JsonlSessionStore | MemorySessionStore) -> None:
        self._store = store

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

    def message_index(self) -> OwnIndex | None:
        """None: the app keeps a SQLite index beside the folder (in memory for a memory store)."""
        return None

    def listed_titles(self) -> Mapping[str, tuple[str, str | None]] | None:
        """None: titles are read from the sessions."""
        return None


def hosted(store: Store) -> HostedStore:
    """``store``'s optional capabilities."""
    if isinstance(store, JsonlSessionStore | MemorySessionStore):
        return LocalStore(store)
    return store


def run_to_end(awaitable: Any) -> Any:
    """Run a store coroutine to completion on the calling (worker) thread.

    The stores' coroutines do synchronous file I/O without awaiting anything real, so they finish
    in one step; a fresh loop per call would cost more than the read itself.
    """
    coroutine = awaitable.__await__()
    try:
        while True:
            coroutine.send(None)
    except StopIteration as done:
        return done.value
