"""Other tools' sources beside the store: what a source is (``ExternalSource``), which source an id
belongs to, and one listing over all. The sources themselves are listed in ``registry``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from core.files import Revision
from core.sessions.models import (
    SessionRecord,
    StoreProblem,
    SurfaceSnapshot,
    TitleSnapshot,
)
from core.sessions.query import SessionQuery, sort_listing


class ExternalSource(Protocol):
    """A read-only source of another agent's sessions (a ``FileSource``, or a database's reader such
    as ``OpenCodeSource``): its ids start with ``prefix``; it is read synchronously by the catalog
    and asynchronously as a ``SessionQuery``."""

    prefix: str
    name: str
    root: Path
    problems: list[StoreProblem]

    def listing(self) -> list[SessionRecord]:
        """List the sessions (refreshing what changed since the last listing)."""
        ...

    def revision(self, session_id: str) -> Revision | None:
        """The revision a session was listed at."""
        ...

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """A session's surface."""
        ...

    def title(self, session_id: str) -> TitleSnapshot | None:
        """A session's title."""
        ...

    async def list_sessions(self) -> list[SessionRecord]: ...

    async def read_surface(self, session_id: str) -> SurfaceSnapshot: ...

    async def read_title(self, session_id: str) -> TitleSnapshot | None: ...


def listed(
    source: ExternalSource, before: Sequence[SessionRecord] = ()
) -> tuple[list[SessionRecord], list[StoreProblem]]:
    """A source's sessions and the files it cannot read. A source that fails as a whole (a reader's
    defect on data no version of its tool writes) lists nothing and says so: it never takes the
    store's or another agent's sessions with it, and never shows a traceback.

    A source that finds its files in the folders other sessions ran in (Aider's, in each project)
    learns them from ``before``, the sessions listed ahead of it."""
    try:
        learn = getattr(source, "learn_folders", None)
        if learn is not None and before:
            learn({record.header.cwd for record in before})
        return source.listing(), list(source.problems)
    except Exception as error:
        return [], [StoreProblem(source.root, f"{source.name} cannot be listed: {type(error).__name__}")]


def source_of(sources: Sequence[ExternalSource], session_id: str) -> ExternalSource | None:
    """Which of ``sources`` a namespaced id (``claude:…``, ``codex:…``, ``gemini:…``…) belongs to, if any."""
    return next((source for source in sources if session_id.startswith(source.prefix)), None)


# -- one listing over several sources ---------------------------------------------------------------


class MergedSessionQuery:
    """The dsh store and other agents' sources as one ``SessionQuery``: one listing in contract
    order (newest first, ties by id), each read routed to the source that listed the session."""

    def __init__(self, primary: SessionQuery, sources: Sequence[ExternalSource]) -> None:
        self.primary = primary
        self.sources = list(sources)

    def source_of(self, session_id: str) -> ExternalSource | None:
        """The external source a namespaced id belongs to (``None``: the primary store)."""
        return source_of(self.sources, session_id)

    async def list_sessions(self) -> list[SessionRecord]:
        merged = list(await self.primary.list_sessions())
        for source in self.sources:
            merged += listed(source, merged)[0]
        sort_listing(merged)
        return merged

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        source = self.source_of(session_id)
        return await (source.read_surface(session_id) if source else self.primary.read_surface(session_id))

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        source = self.source_of(session_id)
        return await (source.read_title(session_id) if source else self.primary.read_title(session_id))
