"""The app's in-memory view of the store: the listing and every session's title.

``SessionCatalog`` is the ``SessionQuery`` the app hands to ``SessionReferenceService``. Its
``list_sessions`` answers from memory, so a picker keystroke never waits on the disk; ``refresh``
(run off the UI thread on a timer) re-lists the root, which costs one ``stat`` per session and reads
only the headers of files whose revision changed. Titles are read lazily, off the UI thread: the
likely picker candidates at start, then whatever the sidebar or the picker shows (``want``). Surfaces
are read from the store itself, whose log cache is keyed by revision too, so what ``prepare`` sees is
always current.
"""

from __future__ import annotations

import threading
from typing import Any

from core.catalog.titles import SessionTitles
from core.errors import SessionQueryError
from core.listeners import Listeners
from core.search.index_values import IndexedSession, indexed_session, revision_key
from core.sessions.models import SessionRecord, StoreProblem, SurfaceSnapshot, TitleSnapshot
from core.sessions.query import WatchableStore, sort_listing
from core.sessions.sources.merged import ExternalSource, source_of
from core.sessions.sources.merged import listed as listed_safely
from core.stores import SessionStore, hosted


class SessionCatalog:
    """Listing and titles of a store, cached in memory and refreshed by revision.

    Args:
        store: the store the app writes and reads.
        external: read-only sources of other agents' sessions (Claude Code, Codex), listed with
            the store's sessions in one listing; their ids are namespaced (``claude:…``).
    """

    def __init__(self, store: SessionStore, external: tuple[ExternalSource, ...] = ()) -> None:
        self.store = store
        self.hosted = hosted(store)
        """What the store offers besides sessions (its problems, health, own index, listed titles)."""
        self.persistent: WatchableStore | None = store if isinstance(store, WatchableStore) else None
        """The store again when it keeps revisions (files, database rows): not the in-memory one."""
        self.external = external
        self._external_listings: list[list[SessionRecord] | None] = [None for _ in external]
        self.records: list[SessionRecord] = []
        self._listed_titles: object = None
        self.unavailable: str | None = None
        """Why the last listing failed (a database that cannot be reached); ``None`` when it worked."""
        self.health: Listeners[None] = Listeners()
        """Told (from any thread) when ``unavailable`` or the store's own health changes."""
        self.hosted.health.subscribe(self.health.emit)
        self.problems: list[StoreProblem] = []
        self.listed = False
        self.live_ids: frozenset[str] = frozenset()
        """Ids of the listed sessions this app writes (live)."""
        self._by_id: dict[str, SessionRecord] = {}
        self._revisions: object = None
        self._lock = threading.Lock()
        self.titles = SessionTitles(self)
        """Every listed session's title, read lazily."""

    # -- SessionQuery -----------------------------------------------------------------------------

    def listing(self) -> list[SessionRecord]:
        """The last listing (newest first), from memory.

        The same list object until the next refresh changes it (never mutated in place), so the
        service can keep its search index for it.
        """
        return self.records

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The current surface, from the store (its log cache is keyed by file revision) or the
        other agent's source the session belongs to."""
        source = self.source_of(session_id)
        return source.surface(session_id) if source is not None else self.store.surface(session_id)

    async def list_sessions(self) -> list[SessionRecord]:
        """``listing()``, as the engine's ``SessionQuery`` asks for it."""
        return self.records

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """``surface()``, as the engine's ``SessionQuery`` asks for it (a source read its own way)."""
        source = self.source_of(session_id)
        if source is not None:
            return await source.read_surface(session_id)
        return await self.store.read_surface(session_id)

    def source_of(self, session_id: str) -> ExternalSource | None:
        """The other agent's source of a namespaced id (``None``: a session of the store)."""
        return source_of(self.external, session_id)

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        """``title()``, as the engine's ``SessionQuery`` asks for it."""
        return self.title(session_id)

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest title: from the cache when the session's revision is unchanged.

        A title that is not cached yet is read from the store, unless ``titles.defer_titles`` is set
        (the app's background loader runs): then it answers ``None`` at once (the picker shows the
        id, then the title once it is read), so a keystroke never waits on a log.
        """
        record = self.record(session_id)
        revision = self.revision(record) if record is not None else None
        cached = self.titles.cached(session_id, revision)
        if cached is not None:
            return cached[1]
        if self.titles.defer_titles and record is not None and not record.live:
            self.titles.want(session_id)
            return None
        title = self.read_title_now(session_id)
        if revision is not None:
            self.titles.keep(session_id, revision, title)
        return title

    # -- what the titles read -------------------------------------------------------------------------

    def read_title_now(self, session_id: str) -> TitleSnapshot | None:
        """A session's title read from its source or the store on this thread.

        Raises:
            SessionQueryError, OSError: it cannot be read.
        """
        source = self.source_of(session_id)
        return source.title(session_id) if source is not None else self.store.title(session_id)

    def live_title(self, session_id: str) -> str | None:
        """The title of a session this app writes, from memory."""
        session = self.store.get(session_id)
        return session.title.title if session is not None and session.title is not None else None

    # -- what the body index reads ------------------------------------------------------------------

    def index_sources(self, target_cwd: str | None) -> list[tuple[str, str]]:
        """(session id, revision key) of every listed session with something on disk, this folder's
        sessions first, then listing order (what the first build indexes first)."""
        first: list[tuple[str, str]] = []
        rest: list[tuple[str, str]] = []
        for record in self.records:
            if not record.persisted and self.hosted.location is not None:  # (a memory store persists nothing)
                continue
            entry = (record.header.id, revision_key(self.revision(record)))
            (first if record.header.cwd == target_cwd else rest).append(entry)
        return first + rest

    def read_indexed(self, session_id: str) -> IndexedSession | None:
        """One session as the body index keeps it; ``None`` when it is no longer listed.

        Listed files are read past the store's log cache (nothing stays in memory); sessions this
        app writes are read from memory. Safe to run in a thread.
        """
        record = self.record(session_id)
        if record is None:
            return None
        store = self.store
        source = self.source_of(session_id)
        if source is not None:
            revision = source.revision(session_id)
            return indexed_session(revision, source.surface(session_id), source.title(session_id))
        if self.persistent is not None and not record.live:
            stored = self.persistent.read_stored(record.header)
            return indexed_session(stored.revision, stored.surface, stored.title)
        listed = self.revision(record)  # before reading: it never claims more than what was read
        return indexed_session(listed, store.surface(session_id), store.title(session_id))

    def owner_of(self, session_id: str) -> str | None:
        """Whose session it is when it is not the user's (a teammate's, in a shared database)."""
        record = self._by_id.get(session_id)
        return record.owner if record is not None else None

    def is_own(self, session_id: str) -> bool:
        """Whether ``session_id`` is one of the user's own sessions of the store (not another tool's,
        not a teammate's): one the user may write."""
        return self.source_of(session_id) is None and self.owner_of(session_id) is None

    def has(self, session_id: str) -> bool:
        """Whether the last listing holds ``session_id``."""
        return session_id in self._by_id

    # -- refreshing -------------------------------------------------------------------------------

    def remember(self) -> bool:
        """Take the listing the store's listing cache remembers (no file looked at), for a first
        paint before ``refresh``; returns whether there was one. Safe to run in a thread."""
        remembered = self.persistent.remembered_sessions() if self.persistent is not None else None
        if remembered is None:
            return False
        with self._lock:
            return self._take(remembered, list(self.hosted.problems), external_changed=False)

    def _set_unavailable(self, reason: str | None) -> None:
        changed = reason != self.unavailable
        self.unavailable = reason
        if changed:
            self.health.emit(None)

    def refresh(self) -> bool:
        """Re-list the store; returns whether anything the app shows changed. Safe to run in a thread."""
        with self._lock:
            for _ in range(3):
                try:
                    records = self.store.listing()
                    break
                except RuntimeError:
                    # The UI thread created a session while the listing iterated; list again.
                    continue
                except SessionQueryError as error:
                    # A database store that cannot be reached: keep showing the last listing.
                    self._set_unavailable(error.line)
                    return False
            else:
                return False
            self._set_unavailable(None)
            problems = list(self.hosted.problems)
            external_changed = False
            if self.external:
                records = list(records)
                for number, source in enumerate(self.external):
                    listed, trouble = listed_safely(source, records)
                    records.extend(listed)
                    problems.extend(trouble)
                    # A source hands back the same list while none of its files changed.
                    external_changed = external_changed or listed is not self._external_listings[number]
                    self._external_listings[number] = listed
                sort_listing(records)
            changed = self._take(records, problems, external_changed)
        titles = self.hosted.listed_titles()
        if titles is not None and titles is not self._listed_titles:  # a database lists titles with sessions
            self._listed_titles = titles
            self.titles.accept_titles(titles)
            changed = True
        return changed

    def _take(self, records: list[SessionRecord], problems: list[Any], external_changed: bool) -> bool:
        # The store hands back the same record objects for sessions that did not change, and list
        # equality tries identity first: 100,000 unchanged records compare in about a millisecond.
        listing_changed = not self.listed or records != self.records
        # A file that changed (a title written elsewhere, say) shows as a new revisions map.
        revisions = self.persistent.listed_revisions() if self.persistent is not None else None
        changed = listing_changed or problems != self.problems or revisions is not self._revisions
        changed = changed or external_changed
        self._revisions = revisions
        if listing_changed:
            # A new list object only when the listing differs: the service indexes the old one.
            self.records = records
            self._by_id = {record.header.id: record for record in records}
            self.live_ids = frozenset(record.header.id for record in records if record.live)
            self.titles.titles_changed()
        self.problems = problems
        self.listed = True
        return changed

    def record(self, session_id: str) -> SessionRecord | None:
        """The listed record of a session (``None``: not in the last listing)."""
        return self._by_id.get(session_id)

    def revision(self, record: SessionRecord) -> object:
        """A listed session's current revision (of its file, its rows, its source, or in memory)."""
        store = self.store
        source = self.source_of(record.header.id)
        if source is not None:
            return source.revision(record.header.id)
        if record.live:
            if self.persistent is not None:
                # The stored revision, so another instance reading this index agrees with it.
                written = self.persistent.written_revision(record.header.id)
                if written is not None:
                    return written
            session = store.get(record.header.id)
            return ("live", len(session.events)) if session is not None else None
        if self.persistent is not None:
            return self.persistent.listed_revision(record.header)
        return None
