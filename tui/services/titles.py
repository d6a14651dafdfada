"""Every session's title for the app, read lazily and off the UI thread: the likely picker candidates
at start, then whatever the sidebar or the picker shows (``request_titles``), each cached at the
session's revision; titles the body index (or a database's listing) already read are taken as they
are. A base of ``tui.catalog.SessionCatalog``, which holds the listing these titles belong to.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from core import SessionQueryError, SessionRecord, revision_key
from core.sessions.models import TitleSnapshot

if TYPE_CHECKING:
    from core.sessions.sources.merged import ExternalSource
    from tui.services.workspace import Store

WORK_SLICE = 0.004
"""Seconds of background title reading between two pauses."""
YIELD_PAUSE = 0.002
"""How long the background reader sleeps (releasing the GIL) after each slice."""


class SessionTitles:
    """Titles by session id, cached at each session's revision."""

    store: Store
    records: list[SessionRecord]
    _by_id: dict[str, SessionRecord]

    if TYPE_CHECKING:  # the catalog's, for the type checker only

        def source_of(self, session_id: str) -> ExternalSource | None: ...
        def _record(self, session_id: str) -> SessionRecord | None: ...
        def _revision(self, record: SessionRecord) -> object: ...

    def __init__(self) -> None:
        self._wanted: dict[str, None] = {}
        self._wanted_lock = threading.Lock()
        self.defer_titles = False
        """Set by the app once its background title loader runs (see ``SessionCatalog.read_title``)."""
        self._titles: dict[str, tuple[object, TitleSnapshot | None]] = {}
        self._index_titles: dict[str, tuple[str, str | None]] = {}
        """Titles the body index read (session id -> (revision key, title))."""
        self._title_version = 0
        self._title_map: tuple[int, dict[str, str | None]] | None = None

    def title(self, session_id: str) -> str | None:
        """The cached title of a session (``None`` when it has none or it is not read yet).

        A title not read at the session's current revision is queued for the background loader.
        """
        cached = self._titles.get(session_id)
        if not self.title_known(session_id):
            indexed = self._current_index_title(session_id)
            if indexed is not None:
                return indexed[1]
            self._want(session_id)
        return cached[1].title if cached is not None and cached[1] is not None else None

    def _current_index_title(self, session_id: str) -> tuple[str, str | None] | None:
        indexed = self._index_titles.get(session_id)
        record = self._record(session_id)
        if indexed is None or record is None or indexed[0] != revision_key(self._revision(record)):
            return None
        return indexed

    def accept_titles(self, titles: dict[str, tuple[str, str | None]]) -> None:
        """Take titles the body index read (session id -> (revision key, title)); stale ones are ignored
        when shown. Safe to call from a thread."""
        if titles:
            merged = dict(self._index_titles)
            merged.update(titles)
            self._index_titles = merged
            self._title_version += 1

    def request_titles(self, session_ids: list[str]) -> None:
        """Queue the titles of these sessions for the background loader unless they are known."""
        for session_id in session_ids:
            if not self.title_known(session_id) and self._current_index_title(session_id) is None:
                self._want(session_id)

    def title_map(self) -> dict[str, str | None]:
        """Every known title (session id -> title) for the search: the same object until one changes."""
        version = self._title_version
        cached = self._title_map
        if cached is not None and cached[0] == version:
            return cached[1]
        titles: dict[str, str | None] = {
            session_id: indexed[1] for session_id, indexed in self._index_titles.items() if indexed[1] is not None
        }
        for session_id, (_revision, title) in list(self._titles.items()):
            if title is not None:
                titles[session_id] = title.title
        for record in self.records:
            if record.live:
                session = self.store.get(record.header.id)
                if session is not None and session.title is not None:
                    titles[record.header.id] = session.title.title
        self._title_map = (version, titles)
        return titles

    def titles_changed(self) -> None:
        """Say that a title changed outside the catalog (a rename in the app)."""
        self._title_version += 1

    def _want(self, session_id: str) -> None:
        # The UI thread queues, the loader thread drains: one lock keeps a request from being lost.
        with self._wanted_lock:
            self._wanted[session_id] = None

    @property
    def wanted(self) -> bool:
        """Whether titles are queued for the background loader."""
        return bool(self._wanted)

    def title_known(self, session_id: str) -> bool:
        """Whether the title of a session has been read at its current revision."""
        record = self._record(session_id)
        cached = self._titles.get(session_id)
        return record is not None and cached is not None and cached[0] == self._revision(record)

    def preload_titles(self, target_cwd: str | None, count: int = 50) -> None:
        """Read the titles the first ``@`` will most likely show: the newest ``count`` sessions of
        each picker group (same cwd, no cwd, elsewhere). Safe to run in a thread."""
        groups: list[list[SessionRecord]] = [[], [], []]
        for record in self.records:
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
            records = [record for record in map(self._by_id.get, wanted) if record is not None]
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
            source = self.source_of(session_id)
            title = source.title(session_id) if source is not None else run_to_end(self.store.read_title(session_id))
        except (SessionQueryError, OSError):
            title = None
        self._titles[session_id] = (self._revision(record), title)
        self._title_version += 1


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
