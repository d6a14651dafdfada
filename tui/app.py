"""The sessionref app: a chat whose prompt can reference other sessions with `@` (TUI.md).

``make_app`` builds it from a store, a model and a reference config; the CLI and the tests use the
same factory. All session logic lives in ``core``; this module wires widgets to it.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, SystemCommand
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen

from core import (
    AgentLoop,
    ChatModel,
    ReferenceConfig,
    SearchConfig,
    Session,
)
from core.agent.loop import ContextSettings
from core.sessions.query import Watcher
from core.sessions.session import system_clock
from core.sessions.sources.merged import ExternalSource

from .chat import ChatScreen
from .commands import SessionCommands
from .indexing import TYPING_PAUSE, MessageIndexer
from .text import visible, visible_lines
from .workspace import Clock, Workspace, open_for_writing

if TYPE_CHECKING:
    from .workspace import Store

TITLE_TICK = 0.1
"""How often the app looks for titles the sidebar or the picker asked for."""


class StoreChanged(Message):
    """The watcher saw something change under the store root (posted from its thread)."""


class SessionRefApp(App[None]):
    """The terminal app; build it with ``make_app``."""

    TITLE = "sessionref"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {SessionCommands}

    def __init__(
        self,
        *,
        store: Store,
        model: ChatModel,
        session: Session,
        cwd: str | None,
        config: ReferenceConfig | None = None,
        clock: Clock = system_clock,
        home: str | None = None,
        cursor_blink: bool = True,
        refresh_interval: float = 2.0,
        search_config: SearchConfig | None = None,
        index_path: str | os.PathLike[str] | None = None,
        external: tuple[ExternalSource, ...] = (),
        context: ContextSettings | None = None,
        watch_store: bool = True,
    ) -> None:
        super().__init__()
        workspace = self.workspace = Workspace(
            store=store,
            model=model,
            session=session,
            cwd=cwd,
            clock=clock,
            home=home,
            config=config,
            search_config=search_config,
            index_path=index_path,
            external=external,
            context=context,
        )
        # The services, by the names the benchmarks and tests use.
        self.store, self.model, self.catalog, self.service = store, model, workspace.catalog, workspace.service
        self.body_index, self.message_index = workspace.body_index, workspace.message_index
        self.catalog_loaded = workspace.catalog_loaded
        self.cursor_blink = cursor_blink
        self.refresh_interval = refresh_interval
        self.indexer = MessageIndexer(workspace, post=self.post_message, last_key=self._last_key)
        # Figures the benchmarks and tests read (the chat screen posts them).
        self.picker_updates = 0
        self.picker_latencies: list[float] = []
        self.preview_updates = 0
        self.last_preview_seconds = 0.0
        self.preview_seconds: list[float] = []
        self.sent = 0
        self.watch_store = watch_store
        self.watcher: Watcher | None = None
        """Reports changes to the store (inotify, or the database's notifications); ``None`` or
        failed: the listing polls."""
        self._titles_loading = False
        self._refresh_waiting = False
        self._store_trouble: str | None = None
        self._watch_failure_told = False

    @property
    def session(self) -> Session:
        """The target session (the one the chat writes)."""
        return self.workspace.session

    @property
    def agent(self) -> AgentLoop:
        """The target session's agent loop."""
        return self.workspace.agent

    @agent.setter
    def agent(self, agent: AgentLoop) -> None:
        self.workspace.agent = agent

    @property
    def context_settings(self) -> ContextSettings:
        """The model's window, where learned windows are kept, and the compaction policy (for new agents)."""
        return self.workspace.context_settings

    @context_settings.setter
    def context_settings(self, settings: ContextSettings) -> None:
        self.workspace.context_settings = settings

    @property
    def agents(self) -> dict[str, AgentLoop]:
        """The agent loops by session id (a switched-away session keeps its own while it streams)."""
        return self.workspace.agents

    def _agent_for(self, session: Session) -> AgentLoop:
        return self.workspace.agent_for(session)

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
        if self.watcher is not None:
            self.watcher.stop()
        self.indexer.shutdown()
        self.workspace.close()
        # SESSIONREF_TRACE=<file>: write the measured latencies there on exit (the benchmarks read it).
        trace = os.environ.get("SESSIONREF_TRACE")
        if trace:
            figures = {"picker_latencies": self.picker_latencies, "preview_seconds": self.preview_seconds}
            try:
                with open(trace, "w", encoding="utf-8") as handle:
                    json.dump(figures, handle)
            except OSError as error:
                # A trace that cannot be written never stops the app from quitting.
                print(f"sessionref: cannot write SESSIONREF_TRACE {visible(trace)}: {error.strerror}", file=sys.stderr)

    def close_index(self) -> None:
        """Close the message index (the CLI calls it after the app exits)."""
        self.workspace.close_index()

    def get_default_screen(self) -> ChatScreen:
        return ChatScreen(self.workspace, self.indexer, cursor_blink=self.cursor_blink)

    # -- what the chat screen says ----------------------------------------------------------------

    def on_chat_screen_ready(self, _message: ChatScreen.Ready) -> None:
        self.start_catalog()
        self.set_interval(self.refresh_interval, self.refresh_catalog)

    def on_chat_screen_picker_shown(self, message: ChatScreen.PickerShown) -> None:
        self.picker_latencies.append(message.seconds)
        self.picker_updates += 1

    def on_chat_screen_preview_shown(self, message: ChatScreen.PreviewShown) -> None:
        self.last_preview_seconds = message.seconds
        self.preview_seconds.append(message.seconds)
        self.preview_updates += 1

    def on_chat_screen_sent(self, _message: ChatScreen.Sent) -> None:
        self.sent += 1

    @property
    def chat(self) -> ChatScreen:
        """The main screen."""
        screen = self.screen_stack[0]
        assert isinstance(screen, ChatScreen)
        return screen

    # -- catalog ----------------------------------------------------------------------------------

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

    def _catalog_changed(self) -> None:
        if self.screen_stack:
            self.chat.show_sessions()
            self.chat.refresh_picker()

    @property
    def indexing(self) -> bool:
        """Whether a body indexing run is going on."""
        return self.indexer.running

    def start_index(self) -> None:
        """Bring the body index up to date with the catalog, off the UI thread (``tui.indexing``)."""
        self.indexer.start()

    def on_message_indexer_builder_failed(self, message: MessageIndexer.BuilderFailed) -> None:
        self.notify(f"Indexing messages failed: {message.message}", severity="warning", title="Message search")

    def on_message_indexer_changed(self, message: MessageIndexer.Changed) -> None:
        # Repaint what shows the index: the sessions (when titles came in) or the progress, and the picker.
        if not self.screen_stack:
            return
        chat = self.chat
        if message.titles:
            chat.show_sessions()
        else:
            chat.show_index_progress()
        chat.refresh_picker()

    # -- command palette --------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        chat = self.chat
        yield SystemCommand("New session", "Start a new session in the launch folder", chat.action_new_session)
        yield SystemCommand("Rename session", "Give the current session a title", chat.action_rename_session)
        yield SystemCommand(
            "Show model view", "The exact text the model will receive for the draft", chat.action_show_model_view
        )
        yield SystemCommand(
            "Show what the model received",
            "The exact text the model received for the latest message",
            chat.action_show_last_received,
        )
        yield SystemCommand(
            "Compact history",
            "Summarize the older messages of this session into a checkpoint (frees context)",
            chat.action_compact,
        )
        yield SystemCommand("Toggle sessions sidebar", "Show or hide the session list", chat.action_toggle_sidebar)
        yield SystemCommand("Toggle preview", "Show or hide the reference preview", chat.action_toggle_preview)

    def action_command_palette(self) -> None:
        # Ctrl+P moves up in an open picker; otherwise it opens the palette as usual.
        if self.screen_stack and self.screen is self.chat and self.chat.picker.is_open:
            self.chat.picker.move(-1)
            return
        super().action_command_palette()


def make_app(
    store: Store,
    model: ChatModel,
    *,
    cwd: str | None = None,
    session_id: str | None = None,
    config: ReferenceConfig | None = None,
    clock: Clock = system_clock,
    home: str | None = None,
    cursor_blink: bool = True,
    refresh_interval: float = 2.0,
    search_config: SearchConfig | None = None,
    index_path: str | os.PathLike[str] | None = None,
    external: tuple[ExternalSource, ...] = (),
    context: ContextSettings | None = None,
    watch_store: bool = True,
) -> SessionRefApp:
    """Build the app on ``store``: open ``session_id`` (or start a new session in ``cwd``).

    ``search_config`` turns message search off (``SearchConfig(body_search=False)``); the body
    index lives at ``index_path`` (default: beside the store's root; in memory for a memory store).
    ``external`` adds other agents' sessions (Claude Code, Codex) to the listing, read-only.
    ``context`` sets the model's window, where learned windows are kept and the compaction policy.

    Raises:
        SessionQueryError: the session is missing, locked or corrupt.
    """
    session = open_for_writing(store, session_id) if session_id is not None else store.create(cwd=cwd)
    return SessionRefApp(
        store=store,
        model=model,
        session=session,
        cwd=cwd,
        config=config,
        clock=clock,
        home=home if home is not None else os.path.expanduser("~"),
        cursor_blink=cursor_blink,
        refresh_interval=refresh_interval,
        search_config=search_config,
        index_path=index_path,
        external=external,
        context=context,
        watch_store=watch_store,
    )
