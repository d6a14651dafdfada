"""What every message index reports and reads: its status, the sessions it keeps, its errors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from core.errors import SessionrefError
from core.reference.projection import project_conversation
from core.sessions.models import ProjectedItem, SurfaceSnapshot, TitleSnapshot

INDEX_CORRUPT = "SEARCH_INDEX_CORRUPT"
INDEX_DISK_FULL = "SEARCH_INDEX_DISK_FULL"
INDEX_FAILED = "SEARCH_INDEX_FAILED"
INDEX_READ_ONLY = "SEARCH_INDEX_READ_ONLY"
INDEX_UNSAFE = "SEARCH_INDEX_UNSAFE_PATH"
"""The index folder or one of its files is a symlink or a special file: never followed or opened."""

IndexState = Literal["empty", "building", "ready", "read-only", "failed", "closed"]


def revision_key(revision: object) -> str:
    """A store revision as the text the index keeps (``dev:ino:size:mtime`` for a file)."""
    if isinstance(revision, tuple):
        return ":".join(str(part) for part in revision)
    return str(revision)


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """Where the body index stands: ``indexed`` of ``total`` listed sessions are current."""

    state: IndexState
    indexed: int = 0
    total: int = 0
    code: str | None = None
    message: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every listed session is indexed at its current revision."""
        return self.state in ("ready", "read-only") and self.indexed >= self.total


@dataclass(frozen=True, slots=True)
class IndexedSession:
    """What the index keeps of one session, read at ``revision``."""

    revision: str
    title: str | None
    messages: Sequence[ProjectedItem]


def indexed_session(revision: object, surface: SurfaceSnapshot, title: TitleSnapshot | None) -> IndexedSession:
    """The index's view of a session: its title and its projected conversation (CONTRACT §5)."""
    return IndexedSession(
        revision=revision_key(revision),
        title=title.title if title is not None else None,
        messages=project_conversation(surface),
    )


@dataclass(slots=True)
class SyncReport:
    """What one ``BodyIndex.sync`` did."""

    indexed: int = 0
    removed: int = 0
    unreadable: int = 0
    titles: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Session id -> (revision, title) of every session read during this sync."""
    finished: bool = False


class Reader(Protocol):
    """Reads one session for the index; ``None`` when it is gone. Any exception marks it unreadable.

    ``sync`` calls it on a helper thread, one session at a time.
    """

    def __call__(self, session_id: str) -> IndexedSession | None: ...


class IndexUnavailable(SessionrefError):
    """The index cannot be used right now; ``code`` is one of the ``SEARCH_INDEX_*`` codes."""
