"""The sessionref app: a chat whose prompt can reference other sessions with `@` (TUI.md).

``make_app`` builds it from a store, a model and a reference config; the CLI and the tests use the
same factory. All session logic lives in ``core``; this module wires widgets to it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from textual import work
from textual.app import App
from textual.notifications import SeverityLevel

from core import (
    ChatModel,
    Session,
)
from core.sessions.query import Watcher
from core.sessions.session import system_clock
from core.settings.run import RunConfig
from core.stores import SessionStore
from tui.app.listing_keeper import (
    FIRST_PAINT_WAIT,
    ListingKeeper,
    StoreChanged,
    StoreHealthChanged,
    TitlesWanted,
)
from tui.app.trace import AppTrace
from tui.screens.chat import ChatScreen
from tui.services.indexing import MessageIndexer
from tui.services.text import visible, visible_lines
from tui.services.workspace import Clock, Workspace, open_for_writing
from tui.widgets.live_preview import LivePreview
from tui.widgets.session_picker import SessionPicker


class SessionRefApp(App[None]):
    """The terminal app; build it with ``make_app``."""

    TITLE = "sessionref"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        *,
        store: SessionStore,
        model: ChatModel,
        session: Session,
        cwd: str | None,
        settings: RunConfig,
        clock: Clock = system_clock,
        home: str | None = None,
        cursor_blink: bool = True,
        refresh_interval: float = 2.0,
        index_path: str | os.PathLike[str] | None = None,
        watch_store: bool = True,
        draft: str | None = None,
    ) -> None:
        super().__init__()
        self.draft = draft
        """What the prompt starts with, unsent (``--draft``; a hand-off to sessionref)."""
        workspace = self.workspace = Workspace(
            store=store,
            model=model,
            session=session,
            cwd=cwd,
            clock=clock,
            home=home,
            settings=settings,
            index_path=index_path,
        )
        self.cursor_blink = cursor_blink
        self.indexer = MessageIndexer(workspace, post=self.post_message, last_key=self._last_key)
        self.listing = ListingKeeper(
            workspace.catalog,
            workspace.catalog_loaded,
            refresh_interval=refresh_interval,
            watch_store=watch_store,
            target_cwd=lambda: workspace.session.cwd,
        )
        """Keeps the listing current (first listing, watcher or re-listing, store health); its
        reading runs in the app's workers below."""
        self.trace = AppTrace()
        """What the app measured about itself (``SESSIONREF_TRACE`` writes it on exit)."""

    @property
    def watcher(self) -> Watcher | None:
        """Reports changes to the store (inotify, or the database's notifications); ``None`` or
        failed: the listing polls."""
        return self.listing.watcher

    # -- keeping the listing current (``ListingKeeper``) ------------------------------------------

    def _start_listing(self) -> None:
        """List the store and read the likely titles off the UI thread (the screen paints first), then
        keep the listing current (every ``refresh_interval``, and when the watcher hears a change)."""
        self._load_catalog()
        self.workspace.catalog.health.subscribe(lambda _news: self.post_message(StoreHealthChanged()))
        # Files other programs write where nothing watches them (other agents' folders, a store whose
        # watcher failed) are looked at again on a timer; everything else is told.
        self.set_interval(self.listing.refresh_interval, self.refresh_catalog)

    @work(thread=True, group="catalog", exclusive=True)
    def _load_catalog(self) -> None:
        # The sidebar shows the listing at once (what the listing cache remembers first, then what
        # the files say when it differs); the likely titles replace ids as they are read.
        listing = self.listing
        if listing.remember():
            painted = threading.Event()
            self.call_from_thread(self._show_then, painted.set)
            painted.wait(FIRST_PAINT_WAIT)
        if listing.catalog.refresh():
            self.call_from_thread(self._catalog_changed)
        listing.read_titles_first()
        self.call_from_thread(self._catalog_loaded)

    def _show_then(self, done: Callable[[], None]) -> None:
        self._catalog_changed()
        self.call_after_refresh(done)

    def _catalog_loaded(self) -> None:
        self.listing.loaded()
        self._catalog_changed()
        self.workspace.catalog.titles.wanted_news.subscribe(lambda _news: self.post_message(TitlesWanted()))
        self.on_titles_wanted()  # (what was wanted before)
        self.start_index()
        self.listing.start_watching(lambda: self.post_message(StoreChanged()))

    def refresh_catalog(self, force: bool = False) -> None:
        """Pick up sessions other programs wrote: the cheap periodic revision check (``force``: even
        while the user types, or the watcher says nothing changed)."""
        if not self.screen_stack:
            return  # the app is closing (a timer can fire after the screen went)
        when = self.listing.relist_when(force, self._last_key())
        if when == 0:
            self._relist()
        elif when is not None:
            self.set_timer(when, self._typing_paused)

    def _typing_paused(self) -> None:
        self.listing.typing_paused()
        self.refresh_catalog()

    @work(thread=True, group="catalog", exclusive=True)
    def _relist(self) -> None:
        if self.listing.catalog.refresh():
            self.call_from_thread(self._catalog_changed)
        self.call_from_thread(self.start_index)

    def on_store_changed(self, _message: StoreChanged | None = None) -> None:
        """The watcher heard a change: say once when it failed, and re-list."""
        notice = self.listing.watch_failure()
        if notice is not None:
            notice.show(self)
        self.refresh_catalog()

    def on_store_health_changed(self, _message: StoreHealthChanged | None = None) -> None:
        notice = self.listing.store_health()
        if notice is not None:
            notice.show(self)

    def on_titles_wanted(self, _message: TitlesWanted | None = None) -> None:
        """Read the titles the sidebar or the picker showed without knowing them, off the UI thread."""
        if self.workspace.catalog.titles.wanted and not self.listing.titles_loading:
            self.listing.titles_loading = True
            self._read_wanted_titles()

    @work(thread=True, group="titles")
    def _read_wanted_titles(self) -> None:
        read, more = self.listing.read_wanted_titles()
        if read:
            self.call_from_thread(self._catalog_changed)
        if more:  # wanted while the last ones were read
            self.post_message(TitlesWanted())

    def chat_is_live(self) -> bool:
        """Whether the chat screen can be repainted: composed and mounted (it paints what is there
        when it mounts), and the app not closing. A worker thread or the indexer reports through
        ``call_from_thread``; under load one arrives while the app closes, after its widgets went."""
        return self.is_running and bool(self.screen_stack) and self.chat.is_running and self.chat.is_mounted

    def _catalog_changed(self) -> None:
        if self.chat_is_live():
            self.chat.show_sessions()
            self.chat.refresh_picker()

    def _last_key(self) -> float:
        return self.chat.prompt.last_key_at if self.screen_stack else 0.0

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification is plain text: ids, titles and servers' errors in it are never parsed as
        markup (``markup`` is ignored), and control or reordering characters are shown escaped."""
        super().notify(visible_lines(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def on_unmount(self) -> None:
        if self.listing.watcher is not None:
            self.listing.watcher.stop()
        self.indexer.shutdown()
        self.workspace.close()
        self.trace.write_if_asked()

    def close_index(self) -> None:
        """Close the message index (the CLI calls it after the app exits)."""
        self.workspace.close_index()

    def get_default_screen(self) -> ChatScreen:
        return ChatScreen(self.workspace, self.indexer, cursor_blink=self.cursor_blink)

    # -- what the chat screen says ----------------------------------------------------------------

    def on_chat_screen_ready(self, _message: ChatScreen.Ready) -> None:
        self._start_listing()
        if self.draft:
            self.chat.prompt.offer_draft(self.draft)
            self.draft = None

    def on_session_picker_shown(self, message: SessionPicker.Shown) -> None:
        self.trace.picker_latencies.append(message.seconds)

    def on_live_preview_shown(self, message: LivePreview.Shown) -> None:
        self.trace.preview_seconds.append(message.seconds)

    def on_chat_screen_sent(self, _message: ChatScreen.Sent) -> None:
        self.trace.sent += 1

    @property
    def chat(self) -> ChatScreen:
        """The main screen."""
        screen = self.screen_stack[0]
        assert isinstance(screen, ChatScreen)
        return screen

    def start_index(self) -> None:
        """Bring the body index up to date with the catalog, off the UI thread (``tui.services.indexing``)."""
        self.indexer.start()

    def on_message_indexer_builder_failed(self, message: MessageIndexer.BuilderFailed) -> None:
        self.notify(f"Indexing messages failed: {message.message}", severity="warning", title="Message search")

    def on_message_indexer_changed(self, message: MessageIndexer.Changed) -> None:
        # Repaint what shows the index: the sessions (when titles came in) or the progress, and the picker.
        # The indexer posts from its own thread: at exit there may be nothing left to repaint.
        if not self.chat_is_live():
            return
        chat = self.chat
        if message.titles:
            chat.show_sessions()
        else:
            chat.show_index_progress()
        chat.refresh_picker()

    # -- command palette --------------------------------------------------------------------------

    def action_command_palette(self) -> None:
        # Ctrl+P moves up in an open picker; otherwise it opens the palette as usual.
        if self.screen_stack and self.screen is self.chat and self.chat.picker.is_open:
            self.chat.picker.move(-1)
            return
        super().action_command_palette()


def make_app(
    store: SessionStore,
    model: ChatModel,
    settings: RunConfig | None = None,
    *,
    cwd: str | None = None,
    session_id: str | None = None,
    clock: Clock = system_clock,
    home: str | None = None,
    cursor_blink: bool = True,
    refresh_interval: float = 2.0,
    index_path: str | os.PathLike[str] | None = None,
    watch_store: bool = True,
    draft: str | None = None,
) -> SessionRefApp:
    """Build the app on ``store`` with ``model``, configured by ``settings`` (``core.settings.RunConfig``:
    the reference limits, compaction, the session tools, other agents' sessions, message search,
    masking; default: the engine's defaults, no other agent's sessions, search by words only). It opens
    ``session_id``, or starts a new session in ``cwd``; ``draft`` is what the prompt starts with.

    The rest is for tests and benchmarks: ``clock`` and ``home`` (what ages and short folders are
    counted from), ``cursor_blink``, how often the listing is looked at without a watcher
    (``refresh_interval``) or whether it watches at all (``watch_store``), and where the message index
    lives (``index_path``; default: beside the store's root, in memory for a memory store).

    Raises:
        SessionQueryError: the session is missing, locked or corrupt.
    """
    session = open_for_writing(store, session_id) if session_id is not None else store.create(cwd=cwd)
    return SessionRefApp(
        store=store,
        model=model,
        session=session,
        cwd=cwd,
        settings=settings if settings is not None else RunConfig(),
        clock=clock,
        home=home if home is not None else os.path.expanduser("~"),
        cursor_blink=cursor_blink,
        refresh_interval=refresh_interval,
        index_path=index_path,
        watch_store=watch_store,
        draft=draft,
    )
