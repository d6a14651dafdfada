"""Keeping the app's listing current: the first listing and the likely titles off the UI thread,
then the store's watcher (inotify, or the database's notifications) or, without one, a re-listing
on a timer that waits while the user types; titles the sidebar or the picker asked for; and a word
when the store cannot be reached and when it is back.

A base of ``tui.app.SessionRefApp``, which sets the attributes named below; the listing itself is
``tui.catalog.SessionCatalog``'s.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.message import Message

from core.sessions.query import Watcher
from tui.services.indexing import TYPING_PAUSE

if TYPE_CHECKING:
    from core import Session
    from tui.screens.chat import ChatScreen
    from tui.services.catalog import SessionCatalog
    from tui.services.workspace import Store

TITLE_TICK = 0.1
"""How often the app looks for titles the sidebar or the picker asked for."""


class StoreChanged(Message):
    """The watcher saw something change under the store root (posted from its thread)."""


class ListingUpkeep(App[None]):
    """The listing's upkeep, for the app."""

    store: Store
    catalog: SessionCatalog
    refresh_interval: float
    watch_store: bool
    watcher: Watcher | None
    catalog_loaded: asyncio.Event
    _titles_loading: bool
    _refresh_waiting: bool
    _store_trouble: str | None
    _watch_failure_told: bool

    if TYPE_CHECKING:  # the app's, for the type checker only

        @property
        def session(self) -> Session: ...
        @property
        def chat(self) -> ChatScreen: ...
        def start_index(self) -> None: ...

    def start_catalog(self) -> None:
        """List the store and read the likely titles off the UI thread (the screen paints first)."""
        self._load_catalog()

    @work(thread=True, exclusive=True, group="catalog")
    def _load_catalog(self) -> None:
        catalog = self.catalog
        # The sidebar shows the listing at once (what the listing cache remembers first, then what
        # the files say when it differs); the likely titles replace ids as they are read.
        if catalog.remember():
            self.call_from_thread(self._catalog_changed)
        if catalog.refresh():
            self.call_from_thread(self._catalog_changed)
        gc.freeze()  # the listing lives as long as the app (see _catalog_loaded)
        catalog.preload_titles(self.session.cwd)
        catalog.defer_titles = True
        self.call_from_thread(self._catalog_loaded)

    def _catalog_loaded(self) -> None:
        # Everything loaded so far lives as long as the app: move it out of the cyclic collector's
        # reach, so a full collection never walks the whole store in the middle of a keystroke.
        # (No full collection first: with 100,000 sessions it would hold the screen for 0.2 s, and
        # the listing is built with the collector paused, so it leaves no cycles to reclaim.)
        gc.freeze()
        self.catalog_loaded.set()
        self._catalog_changed()
        self.set_interval(TITLE_TICK, self._load_wanted_titles)
        self.start_index()
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
        self.post_message(StoreChanged())

    def on_store_changed(self, _message: StoreChanged) -> None:
        watcher = self.watcher
        if watcher is not None and watcher.failure is not None and not self._watch_failure_told:
            self._watch_failure_told = True
            self.notify(
                f"{watcher.failure[:1].upper()}{watcher.failure[1:]}; sessions written elsewhere now show"
                f" within {self.refresh_interval:g} s.",
                severity="warning",
                title="Not watching the store",
            )
        self.refresh_catalog()

    def _load_wanted_titles(self) -> None:
        # Titles the sidebar or the picker showed without knowing them: read them off the UI thread.
        if self.catalog.wanted and not self._titles_loading:
            self._titles_loading = True
            self._read_wanted_titles()

    @work(thread=True, group="titles")
    def _read_wanted_titles(self) -> None:
        try:
            read = self.catalog.load_wanted()
        finally:
            self._titles_loading = False
        if read:
            self.call_from_thread(self._catalog_changed)

    def refresh_catalog(self, force: bool = False) -> None:
        """The cheap periodic revision check: pick up sessions other programs wrote.

        Skipped while the user is typing (a key in the last second), so a re-listing in the
        background never competes with a keystroke; ``force`` runs it anyway.
        """
        if not self.catalog_loaded.is_set() or not self.screen_stack:
            return  # not loaded yet, or the app is closing (a timer can fire after the screen went)
        self._tell_store_health()
        store = self.catalog.persistent
        quiet = store is not None and store.watched and not store.changes_pending()
        if quiet and not force and not self.catalog.external:  # other agents' files are still polled
            self.start_index()  # nothing to re-list; the index still checks its own health
            return
        since_key = time.perf_counter() - self.chat.prompt.last_key_at
        if force or since_key >= TYPING_PAUSE:
            self._refresh_catalog()
        elif self.watcher is not None and not self._refresh_waiting:
            # A change the watcher reported while the user types: look once the typing pauses
            # (no timer would otherwise come back for it).
            self._refresh_waiting = True
            self.set_timer(TYPING_PAUSE - since_key + 0.05, self._refresh_after_typing)

    def _tell_store_health(self) -> None:
        """Say once when the store cannot be reached (a database: writes wait, the app reconnects by
        itself) and once when it is back with everything written."""
        reason = getattr(self.store, "unavailable", None) or self.catalog.unavailable
        if (reason is None) == (self._store_trouble is None):
            return
        self._store_trouble = reason
        if reason is not None:
            waiting = getattr(self.store, "waiting", 0)
            self.notify(
                f"{reason[:1].upper()}{reason[1:]}. "
                + (f"{waiting} events wait to be written; " if waiting else "")
                + "sessionref reconnects by itself.",
                severity="warning",
                title="Session database unreachable",
                timeout=30,
            )
        else:
            self.notify("Everything written while it was away is stored.", title="Session database back")

    def _refresh_after_typing(self) -> None:
        self._refresh_waiting = False
        self.refresh_catalog()

    @work(thread=True, exclusive=True, group="catalog")
    def _refresh_catalog(self) -> None:
        if self.catalog.refresh():
            self.call_from_thread(self._catalog_changed)
        self.call_from_thread(self.start_index)

    def chat_is_live(self) -> bool:
        """Whether the chat screen can be repainted: composed and mounted (it paints what is there
        when it mounts), and the app not closing. A worker thread or the indexer reports through
        ``call_from_thread``; under load one arrives while the app closes, after its widgets went."""
        return self.is_running and bool(self.screen_stack) and self.chat.is_running and self.chat.is_mounted

    def _catalog_changed(self) -> None:
        if self.chat_is_live():
            self.chat.show_sessions()
            self.chat.refresh_picker()
