"""The app's in-memory view of the store: the listing and every session's title.

``SessionCatalog`` is the ``SessionQuery`` the app hands to ``SessionReferenceService``. Its
``list_sessions`` answers from memory, so a picker keystroke never waits on the disk; ``refresh``
(run off the UI thread on a timer) re-lists the root, which costs one ``stat`` per session and reads
only the headers and titles of files whose revision changed. Surfaces are read from the store itself,
whose log cache is keyed by revision too, so what ``prepare`` sees is always current.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from core import JsonlSessionStore, MemorySessionStore, SessionQueryError, SessionRecord, StoreProblem
from core.models import SurfaceSnapshot, TitleSnapshot

Store = JsonlSessionStore | MemorySessionStore


class SessionCatalog:
    """Listing and titles of a store, cached in memory and refreshed by revision.

    Args:
        store: the store the app writes and reads.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.records: list[SessionRecord] = []
        self.problems: list[StoreProblem] = []
        self.listed = False
        self._by_id: dict[str, SessionRecord] = {}
        self._titles: dict[str, tuple[object, TitleSnapshot | None]] = {}
        self._lock = threading.Lock()

    # -- SessionQuery -----------------------------------------------------------------------------

    async def list_sessions(self) -> list[SessionRecord]:
        """The last listing (newest first), from memory.

        The same list object until the next refresh changes it (never mutated in place), so the
        service can keep its search index for it.
        """
        return self.records

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """The current surface, from the store (its log cache is keyed by file revision)."""
        return await self.store.read_surface(session_id)

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        """The latest title: from the cache when the session's revision is unchanged."""
        record = self._record(session_id)
        revision = self._revision(record) if record is not None else None
        cached = self._titles.get(session_id)
        if cached is not None and revision is not None and cached[0] == revision:
            return cached[1]
        title = await self.store.read_title(session_id)
        if revision is not None:
            self._titles[session_id] = (revision, title)
        return title

    # -- what the sidebar shows -------------------------------------------------------------------

    def title(self, session_id: str) -> str | None:
        """The cached title of a session (``None`` when it has none or it is not read yet)."""
        cached = self._titles.get(session_id)
        return cached[1].title if cached is not None and cached[1] is not None else None

    def has(self, session_id: str) -> bool:
        """Whether the last listing holds ``session_id``."""
        return session_id in self._by_id

    def title_known(self, session_id: str) -> bool:
        """Whether the title of a session has been read at its current revision."""
        record = self._record(session_id)
        cached = self._titles.get(session_id)
        return record is not None and cached is not None and cached[0] == self._revision(record)

    # -- refreshing -------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Re-list the store; returns whether anything the app shows changed. Safe to run in a thread."""
        with self._lock:
            for _ in range(3):
                try:
                    records = _run(self.store.list_sessions())
                    break
                except RuntimeError:
                    # The UI thread created a session while the listing iterated; list again.
                    continue
            else:
                return False
            problems = list(getattr(self.store, "problems", []))
            listing_changed = not self.listed or _keys(records) != _keys(self.records)
            changed = listing_changed or problems != self.problems
            if listing_changed:
                # A new list object only when the listing differs: the service indexes the old one.
                self.records = records
                self._by_id = {record.header.id: record for record in records}
            self.problems = problems
            self.listed = True
            return changed

    def load_titles(self, limit: int | None = None, on_progress: Callable[[], None] | None = None) -> bool:
        """Read the titles that are not cached at their current revision (newest sessions first).

        Reads at most ``limit`` titles when given; calls ``on_progress`` after every 200. Returns
        whether any title was read. Safe to run in a thread. A session whose log cannot be read keeps
        no title (the listing already reports unreadable files).
        """
        missing = [record for record in self.records if not self.title_known(record.header.id)]
        if limit is not None:
            missing = missing[:limit]
        for index, record in enumerate(missing, start=1):
            session_id = record.header.id
            try:
                title = _run(self.store.read_title(session_id))
            except (SessionQueryError, OSError):
                title = None
            self._titles[session_id] = (self._revision(record), title)
            if on_progress is not None and index % 200 == 0:
                on_progress()
        return bool(missing)

    def forget(self, session_ids: Iterable[str]) -> None:
        """Drop cached titles (after this app wrote a title, say)."""
        for session_id in session_ids:
            self._titles.pop(session_id, None)

    def _record(self, session_id: str) -> SessionRecord | None:
        return self._by_id.get(session_id)

    def _revision(self, record: SessionRecord) -> object:
        store = self.store
        if record.live:
            session = store.get(record.header.id)
            return ("live", len(session.events)) if session is not None else None
        if isinstance(store, JsonlSessionStore):
            return store.listed_revision(record.header)
        return None


def _keys(records: list[SessionRecord]) -> list[tuple[str, int, bool]]:
    return [(record.header.id, record.header.created_at, record.live) for record in records]


def _run(awaitable: Any) -> Any:
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
