"""``SessionStore``: what every session store does, whatever keeps its sessions.

A store lists and reads sessions (it is a ``SessionQuery``, and does the same reads synchronously as
``SessionReads``), creates them, hands out the one writer of
each, forgets them, and closes. The folder store, the database store and the in-memory store each
satisfy it; the check at the end of this module makes mypy prove it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from core.sessions.query import SessionQuery, SessionReads
from core.sessions.session import Session

if TYPE_CHECKING:
    from core.database.store import PostgresSessionStore
    from core.folder.jsonl_store import JsonlSessionStore
    from core.sessions.session import MemorySessionStore


class SessionStore(SessionQuery, SessionReads, Protocol):
    """What every store does (see the module docstring)."""

    def create(
        self, session_id: str | None = None, *, cwd: str | None = None, created_at: int | None = None
    ) -> Session:
        """Create an empty session, to write (an id is minted when none is given).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS``, or a bad id or cwd.
        """
        ...

    def get(self, session_id: str) -> Session | None:
        """The session to write: the one this store already writes, or a stored one opened for
        writing; ``None`` when there is none.

        Raises:
            SessionQueryError: it cannot be opened (another writer holds it, it is corrupt).
        """
        ...

    def release(self, session_id: str) -> None:
        """Stop writing a session (its log stays); the next ``get`` opens it again."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove a session (a missing one is not an error)."""
        ...

    def close(self) -> object:
        """Stop writing every session and let go of what the store holds open."""
        ...


if TYPE_CHECKING:

    def _every_store_is_a_session_store(
        folder: JsonlSessionStore, database: PostgresSessionStore, memory: MemorySessionStore
    ) -> list[SessionStore]:
        return [folder, database, memory]  # mypy: each satisfies the protocol
