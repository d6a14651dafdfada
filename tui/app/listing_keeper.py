"""Keeping the app's listing current: the first listing and the likely titles (read off the UI
thread), then the store's watcher (inotify, or the database's notifications) or, without one, a
re-listing on a timer that waits while the user types; titles the sidebar or the picker asked for;
and a word when the store cannot be reached and when it is back.

``tui.app.sessionref_app.SessionRefApp`` has one ``ListingKeeper`` and runs its work in the app's
own workers and timers; the keeper says what to do and does the reading. The listing itself is
``core.catalog.catalog.SessionCatalog``'s.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable

from textual.message import Message

from core.catalog.catalog import SessionCatalog
from core.sessions.query import Watcher
from tui.services.indexing import TYPING_PAUSE
from tui.services.notice import Notice

FIRST_PAINT_WAIT = 1.0
"""Seconds the first listing waits for the remembered one to be painted (a closing app never paints)."""


class StoreChanged(Message):
    """The watcher saw something change under the store root (posted from its thread)."""


class StoreHealthChanged(Message):
    """The store became unreachable, came back, or what waits for it changed (posted from any thread)."""


class TitlesWanted(Message):
    """The sidebar or the picker showed sessions whose titles are not read yet (posted from any thread)."""


class ListingKeeper:
    """The listing's upkeep, for the app (which runs the reading on its worker threads).

    Args:
        catalog: the listing it keeps.
        loaded: set once the first listing and the likely titles are in.
        refresh_interval: seconds between two re-listings without a watcher.
        watch_store: hear the store's changes (inotify, notifications) instead of polling.
        target_cwd: the target session's folder (whose titles are read first).
    """

    def __init__(
        self,
        catalog: SessionCatalog,
        loaded: asyncio.Event,
        *,
        refresh_interval: float,
        watch_store: bool,
        target_cwd: Callable[[], str | None],
    ) -> None:
        self.catalog = catalog
        self.catalog_loaded = loaded
        self.refresh_interval = refresh_interval
        self.watch_store = watch_store
        self._target_cwd = target_cwd
        self.watcher: Watcher | None = None
        """Reports changes to the store (inotify, or the database's notifications); ``None`` or
        failed: the listing polls."""
        self.titles_loading = False
        """Whether wanted titles are being read (one reading at a time)."""
        self._refresh_waiting = False
        self._store_trouble: str | None = None
        self._watch_failure_told = False

    # -- the first listing (on a worker thread, but ``loaded``) ---------------------------------------

    def remember(self) -> bool:
        """Take what the listing cache remembers; whether it had anything (to paint before the files
        are looked at: the re-listing holds the interpreter for a while)."""
        if not self.catalog.remember():
            return False
        # What the listing cache remembered lives on (the files mostly say the same): out of the
        # collector's reach before the sidebar's rows are built from it, or a collection meanwhile
        # would walk every record.
        gc.freeze()
        return True

    def read_titles_first(self) -> None:
        """After the first listing: read the likely titles (the target's folder first)."""
        gc.freeze()  # the listing lives as long as the app (see loaded)
        self.catalog.titles.preload_titles(self._target_cwd())
        self.catalog.titles.defer_titles = True

    def loaded(self) -> None:
        """The first listing and the likely titles are in (on the UI thread)."""
        # Everything loaded so far lives as long as the app: move it out of the cyclic collector's
        # reach, so a full collection never walks the whole store in the middle of a keystroke.
        # (No full collection first: with 100,000 sessions it would hold the screen for 0.2 s, and
        # the listing is built with the collector paused, so it leaves no cycles to reclaim.)
        gc.freeze()
        self.catalog_loaded.set()

    # -- noticing changes -------------------------------------------------------------------------

    def start_watching(self, heard: Callable[[], object]) -> None:
        """Hear about changes under the store root from the kernel instead of re-listing on a timer;
        ``heard`` is called on the watcher's thread after each."""
        store = self.catalog.persistent
        if not self.watch_store or store is None or self.watcher is not None:
            return

        def changed(paths: set[str] | None) -> None:
            # On the watcher's thread: note what changed; the app re-lists (only that) at once.
            assert store is not None and self.watcher is not None
            store.note_changes(paths)
            if self.watcher.failure is not None:
                store.watched = False  # the timer polls from now on
            heard()

        self.watcher = store.watcher(changed)
        # Watched before the thread starts: a watcher that fails at once (its watch limit) sets it
        # back from its thread, and that must not be overwritten here afterwards.
        store.watched = True
        if not self.watcher.start():
            store.watched = False

    def watch_failure(self) -> Notice | None:
        """Once, when the watcher failed: what to tell the user."""
        watcher = self.watcher
        if watcher is None or watcher.failure is None or self._watch_failure_told:
            return None
        self._watch_failure_told = True
        return Notice(
            f"{watcher.failure[:1].upper()}{watcher.failure[1:]}; sessions written elsewhere now show"
            f" within {self.refresh_interval:g} s.",
            "Not watching the store",
            "warning",
        )

    def read_wanted_titles(self) -> tuple[bool, bool]:
        """Read the titles the sidebar or the picker showed without knowing them (on a worker thread):
        whether any was read, and whether more were wanted meanwhile."""
        try:
            read = self.catalog.titles.load_wanted()
        finally:
            self.titles_loading = False
        return read, bool(self.catalog.titles.wanted)

    def relist_when(self, force: bool, last_key: float) -> float | None:
        """When the cheap periodic revision check should re-list: 0 now, a delay in seconds (a change
        the watcher reported while the user types is looked at once typing pauses), or ``None``.

        Skipped while the user is typing (a key in the last second), so a re-listing in the
        background never competes with a keystroke; ``force`` re-lists anyway.
        """
        if not self.catalog_loaded.is_set():
            return None
        store = self.catalog.persistent
        quiet = store is not None and store.watched and not store.changes_pending()
        if quiet and not force and not self.catalog.external:  # other agents' files are still looked at
            return None  # the watcher tells of every change: nothing to re-list
        since_key = time.perf_counter() - last_key
        if force or since_key >= TYPING_PAUSE:
            return 0.0
        if self.watcher is not None and not self._refresh_waiting:
            self._refresh_waiting = True
            return TYPING_PAUSE - since_key + 0.05
        return None

    def typing_paused(self) -> None:
        """The wait ``relist_when`` asked for is over."""
        self._refresh_waiting = False

    def store_health(self) -> Notice | None:
        """Once when the store cannot be reached (a database: writes wait, the app reconnects by
        itself), and once when it is back with everything written: what to tell the user."""
        hosted = self.catalog.hosted
        reason = hosted.unavailable or self.catalog.unavailable
        if (reason is None) == (self._store_trouble is None):
            return None
        self._store_trouble = reason
        if reason is None:
            return Notice("Everything written while it was away is stored.", "Session database back")
        waiting = hosted.waiting
        return Notice(
            f"{reason[:1].upper()}{reason[1:]}. "
            + (f"{waiting} events wait to be written; " if waiting else "")
            + "sessionref reconnects by itself.",
            "Session database unreachable",
            "warning",
            timeout=30,
        )
