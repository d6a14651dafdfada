"""The read-only query layer the service consumes (any object with these coroutines works)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.sessions.models import SessionRecord, SurfaceSnapshot, TitleSnapshot


@runtime_checkable
class SessionQuery(Protocol):
    """What ``SessionReferenceService`` reads: a listing, a folded surface, and the latest title."""

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session, newest ``created_at`` first, ties broken by id."""
        ...

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface of one session.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` when there is no such session.
        """
        ...

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` event of the raw log, or ``None``."""
        ...


def listing_order_key(record: SessionRecord) -> tuple[int, bytes]:
    """Sort key of ``list_sessions``: newest ``created_at`` first, then id ascending.

    Ids compare by UTF-16 code units, as JavaScript compares strings.
    """
    return (-record.header.created_at, record.header.id.encode("utf-16-be", "surrogatepass"))
