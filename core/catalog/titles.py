"""Every session's title for the app, read lazily and off the UI thread: the likely picker candidates
at start, then whatever the sidebar or the picker shows (``request_titles``), each cached at the
session's revision; titles the body index (or a database's listing) already read are taken as they
are. ``core.catalog.catalog.SessionCatalog`` has one; it holds the listing these titles belong to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Protocol

from core.errors import SessionQueryError
from core.listeners import Listeners
from core.search.index_values import revision_key
from core.sessions.models import SessionRecord, TitleSnapshot

WORK_SLICE = 0.004
"""Seconds of background title reading between two pauses."""
YIELD_PAUSE = 0.002
"""How long the background reader sleeps (releasing the GIL) after each slice."""


class TitledListing(Protocol):
    """What titles need of the listing they belong to (``SessionCatalog``)."""

    @property
    def records(self) -> list[SessionRecord]:
        """The listing, newest first."""
        ...

    def record(self, session_id: str) -> SessionRecord | None:
        """The listed record of a session."""
        ...

    def revision(self, record: SessionRecord) -> object:
        """A session's current revision (titles are cached at it)."""
        ...

    def read_title_now(self, session_id: str) -> TitleSnapshot | None:
        """Read a session's title from its store or source on this thread.

        Raises:
            SessionQueryError, OSError: it cannot be read.
        """
        ...

    def live_title(self, session_id: str) -> str | None:
        """The title of a session this app writes, from memory."""
        ...


class SessionTitles:
    """Titles by session id, cached at each session's revision.

    Args:
        listing: the listing the titles belong to.
    """

    def __init__(self, listing: TitledListing) -> None:
        self._listing = listing
        self._wanted: dict[str, None] = {}
        self._wanted_lock = threading.Lock()
        self.defer_titles = False
        """Set by the app once its background title loader runs (see ``SessionCatalog.read_title``)."""
        self._titles: dict[str, tuple[object, TitleSnapshot | None]] = {}
        self._index_titles: dict[str, tuple[str, str | None]] = {}
        """Titles the body index read (session id -> (revision key, title))."""
        self._version = 0
        self._title_map: tuple[int, dict[str, str | None]] | None = None
        self.wanted_news: Listeners[None] = Listeners()
        """Told when a title is wanted and none was (from the thread that wants it): a host reads them
        (``load_wanted``) instead of looking for them on a timer."""

    def cached(self, session_id: str, revision: object) -> tuple[object, TitleSnapshot | None] | None:
        """The title read at ``revision`` as ``(revision, title)``, or ``None`` when it was not."""
        cached = self._titles.get(session_id)
        return cached if cached is not None and revision is not None and cached[0] == revision else None

    def keep(self, session_id: str, revision: object, title: TitleSnapshot | None) -> None:
        """Remember a title read at ``revision`` (by the catalog's ``read_title``)."""
        self._titles[session_id] = (revision, title)

    def title(self, session_id: str) -> str | None:
        """The cached title of a session (``None`` when it has none or it is not read yet).

        A title not read at the session's current revision is queued for the background loader.
        """
        cached = self._titles.get(session_id)
        if not self.title_known(session_id):
            indexed = self._current_index_title(session_id)
            if indexed is not None:
                return indexed[1]
            self.want(session_id)
        return cached[1].title if cached is not None and cached[1] is not None else None

    def _current_index_title(self, session_id: str) -> tuple[str, str | None] | None:
        indexed = self._index_titles.get(session_id)
        record = self._listing.record(session_id)
        if indexed is None or record is None or indexed[0] != revision_key(self._listing.revision(record)):
            return None
        return indexed

    def accept_titles(self, titles: Mapping[str, tuple[str, str | None]]) -> None:
        """Take titles the body index read (session id -> (revision key, title)); stale ones are ignored
        when shown. Safe to call from a thread."""
        if titles:
            merged = dict(self._index_titles)
            merged.update(titles)
            self._index_titles = merged
            self._version += 1

    def request_titles(self, session_ids: list[str]) -> None:
        """Queue the titles of these sessions for the background loader unless they are known."""
        for session_id in session_ids:
            if not self.title_known(session_id) and self._current_index_title(session_id) is None:
                self.want(session_id)

    def title_map(self) -> dict[str, str | None]:
        """Every known title (session id -> title) for the search: the same object until one changes."""
        version = self._version
        cached = self._title_map
        if cached is not None and cached[0] == version:
            return cached[1]
        titles: dict[str, str | None] = {
            session_id: indexed[1] for session_id, indexed in self._index_titles.items() if indexed[1] is not None
        }
        for session_id, (_revision, title) in list(self._titles.items()):
            if title is not None:
                titles[session_id] = title.title
        for record in self._listing.records:
            if record.live:
                live = self._listing.live_title(record.header.id)
                if live is not None:
                    titles[record.header.id] = live
        self._title_map = (version, titles)
        return titles

    def titles_changed(self) -> None:
        """Say that a title changed outside the catalog (a rename in the app), or that the listing
        changed (a title map lists the live sessions of the listing)."""
        self._version += 1

    def want(self, session_id: str) -> None:
        """Queue one title for the background loader."""
        # The UI thread queues, the loader thread drains: one lock keeps a request from being lost.
        with self._wanted_lock:
            first = not self._wanted
            self._wanted[session_id] = None
        if first:
            self.wanted_news.emit(None)

    @property
    def wanted(self) -> bool:
        """Whether titles are queued for the background loader."""
        return bool(self._wanted)

    def title_known(self, session_id: str) -> bool:
        """Whether the title of a session has been read at its current revision."""
        record = self._listing.record(session_id)
        cached = self._titles.get(session_id)
        return record is not None and cached is not None and cached[0] == self._listing.revision(record)

    def preload_titles(self, target_cwd: str | None, count: int = 50) -> None:
        """Read the titles the first ``@`` will most likely show: the newest ``count`` sessions of
        each picker group (same cwd, no cwd, elsewhere). Safe to run in a thread."""
        groups: list[list[SessionRecord]] = [[], [], []]
        for record in self._listing.records:
            cwd = record.header.cwd
            group = groups[1] if cwd is None else groups[0] if cwd == target_cwd else groups[2]
            if len(group) < count:
                group.append(record)
            if all(len(g) >= count for g in groups):
                break
        self._read_politely([record for group in groups for record in group])

    def load_wanted(self) -> bool:
        """Read every queued title (newest requests last); returns whether any was read."""
        read = False
        while self._wanted:
            with self._wanted_lock:
                wanted, self._wanted = list(self._wanted), {}
            records = [record for record in map(self._listing.record, wanted) if record is not None]
            self._read_politely(records)
            read = read or bool(records)
        return read

    def _read_politely(self, records: list[SessionRecord]) -> None:
        # Polite in a thread: a short pause every few milliseconds of parsing hands the GIL back,
        # so the UI thread never waits long for it.
        slice_started = time.perf_counter()
        for record in records:
            if self.title_known(record.header.id) or self._current_index_title(record.header.id) is not None:
                continue
            if time.perf_counter() - slice_started > WORK_SLICE:
                time.sleep(YIELD_PAUSE)
                slice_started = time.perf_counter()
            self._read_title(record)

    def _read_title(self, record: SessionRecord) -> None:
        session_id = record.header.id
        try:
            title = self._listing.read_title_now(session_id)
        except (SessionQueryError, OSError):
            title = None
        self._titles[session_id] = (self._listing.revision(record), title)
        self._version += 1
