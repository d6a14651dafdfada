"""The read-only query layer the service consumes (any object with these coroutines works)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, runtime_checkable

from core.sessions.models import SessionHeader, SessionRecord, StoredSession, SurfaceSnapshot, TitleSnapshot


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


class SessionReads(Protocol):
    """The same reads on the calling thread: every store and the catalog offer them beside the async
    ``SessionQuery`` the engine awaits (API.md), for what runs on a worker thread (the index, the
    titles, the commands)."""

    def listing(self) -> list[SessionRecord]:
        """Every session, newest ``created_at`` first, ties broken by id."""
        ...

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface of one session.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` when there is no such session.
        """
        ...

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` event of the raw log, or ``None``."""
        ...


class ReadsAsQuery(ABC):
    """A ``SessionQuery`` made of its own ``SessionReads``: the stores and sources read files or rows
    without waiting on anything, so the coroutines the engine awaits are the synchronous reads."""

    @abstractmethod
    def listing(self) -> list[SessionRecord]:
        """Every session, newest ``created_at`` first, ties broken by id."""

    @abstractmethod
    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface of one session."""

    @abstractmethod
    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` event of the raw log, or ``None``."""

    async def list_sessions(self) -> list[SessionRecord]:
        """``listing()``, as the engine's ``SessionQuery`` asks for it."""
        return self.listing()

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """``surface()``, as the engine's ``SessionQuery`` asks for it."""
        return self.surface(session_id)

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        """``title()``, as the engine's ``SessionQuery`` asks for it."""
        return self.title(session_id)


class ReferenceTarget(Protocol):
    """The session a prompt is sent in, as the service sees it (dsh's agent): its id (never a
    candidate of its own, never referenced) and its folder (whose sessions are listed first)."""

    @property
    def id(self) -> str:
        """The session's id."""
        ...

    @property
    def cwd(self) -> str | None:
        """The session's working folder, when it has one."""
        ...


def listing_order_key(record: SessionRecord) -> tuple[int, bytes]:
    """Sort key of ``list_sessions``: newest ``created_at`` first, then id ascending.

    Ids compare by UTF-16 code units, as JavaScript compares strings.
    """
    return (-record.header.created_at, record.header.id.encode("utf-16-be", "surrogatepass"))


def _ascii_order_key(record: SessionRecord) -> tuple[int, str]:
    header = record.header
    return (-header.created_at, header.id)


def sort_listing(records: list[SessionRecord]) -> None:
    """Sort ``records`` in place into ``list_sessions``' order (``listing_order_key``). Ids of ASCII
    alone compare by code unit as they are, without encoding each (a listing of 100,000 sorts them all)."""
    if all(record.header.id.isascii() for record in records):
        records.sort(key=_ascii_order_key)
    else:
        records.sort(key=listing_order_key)


class Watcher(Protocol):
    """What a store's ``watcher`` returns: it reports changes on a thread of its own."""

    failure: str | None
    """Why it is not (or no longer) watching; ``None`` while it is."""

    def start(self) -> bool: ...

    def stop(self) -> None: ...


@runtime_checkable
class WatchableStore(Protocol):
    """A persistent store a host can list cheaply again and again and hear changes of: the JSONL
    store (file revisions, inotify) and the PostgreSQL store (revision numbers, ``LISTEN``)."""

    watched: bool
    """Set by the host while its watcher reports every change (then an unchanged store is not listed)."""

    def watcher(self, on_change: Callable[[set[str] | None], None]) -> Watcher:
        """A watcher reporting what changed (paths, or ``None``: anything may have) to ``on_change``."""
        ...

    def note_changes(self, paths: Iterable[str] | None) -> None:
        """Record what the watcher reported, for the next listing."""
        ...

    def changes_pending(self) -> bool:
        """Whether a change was reported that the last listing has not looked at."""
        ...

    def remembered_sessions(self) -> list[SessionRecord] | None:
        """A listing remembered from an earlier run, shown before the first real one (or ``None``)."""
        ...

    def listed_revisions(self) -> Mapping[str, object]:
        """Session id -> revision as last listed; the same object while nothing changed."""
        ...

    def listed_revision(self, header: SessionHeader) -> object:
        """The revision the last listing saw for one session (``None`` when unlisted)."""
        ...

    def written_revision(self, session_id: str) -> object:
        """The revision of a session written here, as of its last append (``None`` if not written here)."""
        ...

    def read_stored(self, header: SessionHeader) -> StoredSession:
        """One listed session with its revision, surface and title, past any cache."""
        ...

    def release(self, session_id: str) -> None:
        """Stop writing one session (its lock is released)."""
        ...
