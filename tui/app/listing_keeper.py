"""Keeping the app's listing current: the first listing and the likely titles off the UI thread,
then the store's watcher (inotify, or the database's notifications) or, without one, a re-listing
on a timer that waits while the user types; titles the sidebar or the picker asked for; and a word
when the store cannot be reached and when it is back.

``tui.app.sessionref_app.SessionRefApp`` has one ``ListingKeeper``; the listing itself is
``core.catalog.catalog.SessionCatalog``'s.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from textual.message import Message

from core.catalog.catalog import SessionCatalog
from core.sessions.query import Watcher
from tui.services.host import Host
from tui.services.indexing import TYPING_PAUSE

FIRST_PAINT_WAIT = 1.0
"""Seconds the first listing waits for the remembered one to be painted (a closing app never paints)."""


class StoreChanged(Message):
    """The watcher saw something change under the store root (posted from its thread)."""


class StoreHealthChanged(Message):
    """The store became unreachable, came back, or what waits for it changed (posted from any thread)."""


class TitlesWanted(Message):
    """The sidebar or the picker showed sessions whose titles are not read yet (posted from any thread)."""


class AppHost(Host, Protocol):
    """The app, as the listing keeper schedules on it."""

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``callback`` on the UI thread and wait for it (from a worker thread)."""
        ...

    def call_after_refresh(self, callback: Callable[[], Any]) -> bool:
        """Call ``callback`` once the screen has been refreshed (painted)."""
        ...


class ListingKeeper:
    """The listing's upkeep, for the app.

    Args:
        host: the app (workers, timers, notifications, and posting ``StoreChanged``).
        catalog: the listing it keeps.
        loaded: set once the first listing and the likely titles are in.
        refresh_interval: seconds between two re-listings without a watcher.
        watch_store: hear the store's changes (inotify, notifications) instead of polling.
        target_cwd: the target session's folder (whose titles are read first).
        last_key: when the user last typed (a re-listing waits while they type).
        start_index: bring the message index up to date (after a listing).
        changed: repaint what shows the listing.
        live: whether the app still shows its screen (a timer can fire while it closes).
    """

    def __init__(
        self,
        host: AppHost,
        catalog: SessionCatalog,
        loaded: asyncio.Event,
        *,
        refresh_interval: float,
        watch_store: bool,
        target_cwd: Callable[[], str | None],
        last_key: Callable[[], float],
        start_index: Callable[[], None],
        changed: Callable[[], None],
        live: Callable[[], bool],
    ) -> None:
        self._host = host
        self.catalog = catalog
        self.catalog_loaded = loaded
        self.refresh_interval = refresh_interval
        self.watch_store = watch_store
        self._target_cwd = target_cwd
        self._last_key = last_key
        self._start_index = start_index
        self._changed = changed
        self._live = live
        self.watcher: Watcher | None = None
        """Reports changes to the store (inotify, or the database's notifications); ``None`` or
        failed: the listing polls."""
        self._titles_loading = False
        self._refresh_waiting = False
        self._store_trouble: str | None = None
        self._watch_failure_told = False

    def start(self) -> None:
        """List the store and read the likely titles off the UI thread (the screen paints first), then
        keep the listing current (every ``refresh_interval``, and when the watcher hears a change)."""
        self._host.run_worker(self._load_catalog, group="catalog", exclusive=True, thread=True)
        self.catalog.health.subscribe(lambda _news: self._host.post_message(StoreHealthChanged()))
        # Files other programs write where nothing watches them (other agents' folders, a store whose
        # watcher failed) are looked at again on a timer; everything else is told.
        self._host.set_interval(self.refresh_interval, self.refresh)

    def _load_catalog(self) -> None:
        catalog = self.catalog
        # The sidebar shows the listing at once (what the listing cache remembers first, then what
        # the files say when it differs); the likely titles replace ids as they are read.
        if catalog.remember():
            # What the listing cache remembered lives on (the files mostly say the same): out of
            # the collector's reach before the sidebar's rows are built from it, or a collection
            # meanwhile would walk every record.
            gc.freeze()
            # Let the remembered listing reach the screen before the files are looked at: the
            # re-listing holds the interpreter for a while, and the first paint would wait for it.
            painted = threading.Event()
            self._host.call_from_thread(self._show_then, painted.set)
            painted.wait(FIRST_PAINT_WAIT)
        if catalog.refresh():
            self._host.call_from_thread(self._changed)
        gc.freeze()  # the listing lives as long as the app (see _catalog_loaded)
        catalog.titles.preload_titles(self._target_cwd())
        catalog.titles.defer_titles = True
        self._host.call_from_thread(self._catalog_loaded)

    def _show_then(self, done: Callable[[], None]) -> None:
        self._changed()
        self._host.call_after_refresh(done)

    def _catalog_loaded(self) -> None:
        # Everything loaded so far lives as long as the app: move it out of the cyclic collector's
        # reach, so a full collection never walks the whole store in the middle of a keystroke.
        # (No full collection first: with 100,000 sessions it would hold the screen for 0.2 s, and
        # the listing is built with the collector paused, so it leaves no cycles to reclaim.)
        gc.freeze()
        self.catalog_loaded.set()
        self._changed()
        self.catalog.titles.wanted_news.subscribe(lambda _news: self._host.post_message(TitlesWanted()))
        self.load_wanted_titles()  # (what was wanted before)
        self._start_index()
        self._start_watching()

    # -- noticing changes -------------------------------------------------------------------------

    def _start_watching(self) -> None:
        """Hear about changes under the store root from the kernel instead of re-listing on a timer."""
        store = self.catalog.persistent
        if not self.watch_store or store is None or self.watcher is not None:
            return
        self.watcher = store.watcher(self._store_changed)
        # Watched before the thread starts: a watcher that fails at once (its watch limit) sets it
        # back from its thread, and that must not be overwritten here afterwards.
        store.watched = True
        if not self.watcher.start():
            store.watched = False

    def _store_changed(self, paths: set[str] | None) -> None:
        # On the watcher's thread: note what changed; the app re-lists (only that) at once.
        store = self.catalog.persistent
        assert store is not None and self.watcher is not None
        store.note_changes(paths)
        if self.watcher.failure is not None:
            store.watched = False  # the timer polls from now on
        self._host.post_message(StoreChanged())

    def store_changed(self) -> None:
        """The watcher heard a change (``StoreChanged`` reached the app): say once when it failed,
        and re-list."""
        watcher = self.watcher
        if watcher is not None and watcher.failure is not None and not self._watch_failure_told:
            self._watch_failure_told = True
            self._host.notify(
                f"{watcher.failure[:1].upper()}{watcher.failure[1:]}; sessions written elsewhere now show"
                f" within {self.refresh_interval:g} s.",
                severity="warning",
                title="Not watching the store",
            )
        self.refresh()

    def load_wanted_titles(self) -> None:
        """Read the titles the sidebar or the picker showed without knowing them, off the UI thread."""
        if self.catalog.titles.wanted and not self._titles_loading:
            self._titles_loading = True
            self._host.run_worker(self._read_wanted_titles, group="titles", thread=True)

    def _read_wanted_titles(self) -> None:
        try:
            read = self.catalog.titles.load_wanted()
        finally:
            self._titles_loading = False
        if read:
            self._host.call_from_thread(self._changed)
        if self.catalog.titles.wanted:  # wanted while the last ones were read
            self._host.post_message(TitlesWanted())

    def refresh(self, force: bool = False) -> None:
        """The cheap periodic revision check: pick up sessions other programs wrote.

        Skipped while the user is typing (a key in the last second), so a re-listing in the
        background never competes with a keystroke; ``force`` runs it anyway.
        """
        if not self.catalog_loaded.is_set() or not self._live():
            return  # not loaded yet, or the app is closing (a timer can fire after the screen went)
        store = self.catalog.persistent
        quiet = store is not None and store.watched and not store.changes_pending()
        if quiet and not force and not self.catalog.external:  # other agents' files are still looked at
            return  # the watcher tells of every change: nothing to re-list
        since_key = time.perf_counter() - self._last_key()
        if force or since_key >= TYPING_PAUSE:
            self._refresh_catalog()
        elif self.watcher is not None and not self._refresh_waiting:
            # A change the watcher reported while the user types: look once the typing pauses
            # (no timer would otherwise come back for it).
            self._refresh_waiting = True
            self._host.set_timer(TYPING_PAUSE - since_key + 0.05, self._refresh_after_typing)

    def tell_store_health(self) -> None:
        """Say once when the store cannot be reached (a database: writes wait, the app reconnects by
        itself) and once when it is back with everything written."""
        hosted = self.catalog.hosted
        reason = hosted.unavailable or self.catalog.unavailable
        if (reason is None) == (self._store_trouble is None):
            return
        self._store_trouble = reason
        if reason is not None:
            waiting = hosted.waiting
            self._host.notify(
                f"{reason[:1].upper()}{reason[1:]}. "
                + (f"{waiting} events wait to be written; " if waiting else "")
                + "sessionref reconnects by itself.",
                severity="warning",
                title="Session database unreachable",
                timeout=30,
            )
        else:
            self._host.notify("Everything written while it was away is stored.", title="Session database back")

    def _refresh_after_typing(self) -> None:
        self._refresh_waiting = False
        self.refresh()

    def _refresh_catalog(self) -> None:
        self._host.run_worker(self._relist, group="catalog", exclusive=True, thread=True)

    def _relist(self) -> None:
        if self.catalog.refresh():
            self._host.call_from_thread(self._changed)
        self._host.call_from_thread(self._start_index)
