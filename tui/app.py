"""The sessionref app: a chat whose prompt can reference other sessions with `@` (TUI.md).

``make_app`` builds it from a store, a model and a reference config; the CLI and the tests use the
same factory. All session logic lives in ``core``; this module wires widgets to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from rich.cells import cell_len
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, TextArea

from core import (
    MIN_BODY_QUERY,
    AbortController,
    AbortSignal,
    AgentLoop,
    BodyIndex,
    ChatModel,
    IndexStatus,
    IndexUnavailable,
    JsonlSessionStore,
    MemorySessionStore,
    ReferenceConfig,
    SearchConfig,
    SearchResult,
    Session,
    SessionHeader,
    SessionQueryError,
    SessionRecord,
    SessionReferenceError,
    SessionReferenceService,
    SessionSearch,
    format_session_reference_mention,
    index_path_beside,
    parse_session_reference_text,
)
from core.body_index import INDEX_DISK_FULL, INDEX_READ_ONLY
from core.errors import CANCELLED
from core.external import ExternalSource
from core.search import FIRST_BUDGET, FULL_BUDGET
from core.session import not_found, system_clock

from .catalog import SessionCatalog
from .commands import SessionCommands
from .mentions import PickerQuery
from .preview_report import PreviewReport, build_preview, problem_of
from .screens import RenameScreen, ViewerScreen
from .text import short_cwd, visible
from .widgets.picker import MentionPicker
from .widgets.preview import PreviewBody, PreviewPane
from .widgets.prompt import PromptArea
from .widgets.sidebar import SessionSidebar
from .widgets.transcript import Transcript, UserBlock, model_received

Store = JsonlSessionStore | MemorySessionStore
Clock = Callable[[], int]

PREVIEW_DELAY = 0.12
"""Seconds of typing pause before the preview recomputes (a newer draft cancels the running one)."""
TYPING_PAUSE = 1.0
"""Seconds after a keystroke during which the background re-listing waits."""
TITLE_TICK = 0.1
"""How often the app looks for titles the sidebar or the picker asked for."""
STREAM_TICK = 1 / 20
"""How often the transcript repaints a streaming reply."""
INDEX_SLICE = 0.004
"""Seconds of body indexing between two pauses that hand the interpreter back to the UI."""
BUILDER_THRESHOLD = 200
"""Sessions to (re)index above which a builder process does it instead of a thread of the app."""
BUILDER_ATTEMPTS = 2
"""Builder processes that may fail before the app indexes in its own thread."""
BUILDER_POLL = 0.5
"""Seconds between two looks at a running builder's progress."""
CHECKPOINT_AFTER = 1000
"""Sessions indexed in one run after which the index is compacted."""
INDEX_RETRY = 30.0
"""Seconds before indexing is tried again after it failed (a full disk, say)."""


VISIBLE_HITS = 24
"""Picker hits whose titles are fetched when a lookup shows them (the rest load when scrolled to)."""


class _Politeness:
    """The index's pause between sessions: a short sleep every ``INDEX_SLICE`` of work hands the
    interpreter to the UI thread, and while the user types the indexer waits."""

    def __init__(self, last_key: Callable[[], float]) -> None:
        self.last_key = last_key
        self.slice_started = time.perf_counter()

    def __call__(self) -> None:
        while time.perf_counter() - self.last_key() < TYPING_PAUSE / 4:
            time.sleep(0.02)
        if time.perf_counter() - self.slice_started > INDEX_SLICE:
            time.sleep(0.002)
            self.slice_started = time.perf_counter()


class ChatScreen(Screen[None]):
    """Sessions | transcript | preview, with the prompt and its `@` picker below."""

    BINDINGS = [
        # Picker keys: priority so the prompt never sees them while the picker is open;
        # ``check_action`` turns them off when it is closed, so every key types normally then.
        Binding("up", "picker_move(-1)", show=False, priority=True),
        Binding("down", "picker_move(1)", show=False, priority=True),
        Binding("ctrl+n", "picker_move(1)", show=False, priority=True),
        Binding("tab", "picker_accept", show=False, priority=True),
        Binding("enter", "picker_accept", show=False, priority=True),
        Binding("escape", "escape", "Cancel", show=False, priority=True),
        Binding("f2", "show_model_view", "Model view"),
        Binding("f3", "new_session", "New"),
        Binding("f4", "rename_session", "Rename"),
        Binding("ctrl+b", "toggle_sidebar", "Sessions"),
        Binding("f5", "toggle_preview", "Preview"),
    ]

    def __init__(self, host: SessionRefApp) -> None:
        super().__init__()
        self.host = host
        self._query: PickerQuery | None = None
        self._query_row = 0
        # Escape memory: (row, column of the `@`, draft) of the token whose picker was dismissed.
        self._dismissed: tuple[int, int, str] | None = None
        self._lookup_abort: AbortController | None = None
        self._lookup_generation = 0
        self._preview_abort: AbortController | None = None
        self._preview_timer: Timer | None = None
        self._preview_generation = 0
        self._preview_started = 0.0
        self._preview_shown = -1
        self._send_abort: AbortController | None = None
        self._stream_timer: Timer | None = None
        self.preparing = False
        self._shown_for_key: float | None = None
        self._key_unanswered = False

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        host = self.host
        yield Header(show_clock=False, icon="@")
        with Horizontal(id="main"):
            yield SessionSidebar(id="sidebar", home=host.home)
            yield Transcript(id="transcript")
            yield PreviewPane(id="preview", home=host.home)
        yield PromptArea(id="prompt", cursor_blink=host.cursor_blink)
        yield Footer()
        yield MentionPicker(id="picker", home=host.home)

    def on_mount(self) -> None:
        prompt = self.query_one(PromptArea)
        prompt.border_title = "Prompt · Enter sends · Ctrl+J newline · @ references a session"
        prompt.focus()
        self.query_one(SessionSidebar).border_subtitle = "loading…"
        self._show_target()
        self.host.start_catalog()
        self.set_interval(self.host.refresh_interval, self.host.refresh_catalog)

    @property
    def prompt(self) -> PromptArea:
        """The prompt widget."""
        return self.query_one(PromptArea)

    @property
    def picker(self) -> MentionPicker:
        """The `@` picker."""
        return self.query_one(MentionPicker)

    def _show_target(self) -> None:
        host = self.host
        session = host.session
        title = session.title.title if session.title is not None else "New session"
        host.sub_title = f"{visible(title)} · {short_cwd(session.cwd, 48, host.home)}"
        self.query_one(Transcript).sync(session, host.model.name)
        self.show_sessions()

    def show_sessions(self) -> None:
        """Repaint the sidebar from the catalog."""
        host = self.host
        catalog = host.catalog
        sidebar = self.query_one(SessionSidebar)
        live = {record.header.id for record in catalog.records if record.live}
        live.add(host.session.id)

        def title_of(header: SessionHeader) -> str | None:
            if header.id in live:
                session = host.store.get(header.id)
                return session.title.title if session is not None and session.title is not None else None
            return catalog.title(header.id)

        records = catalog.records
        if not catalog.has(host.session.id):
            # A new session is listed before its first write.
            records = [SessionRecord(header=host.session.header, live=True, persisted=False), *records]
        sidebar.show(records, title_of, catalog.problems, host.session.id, host.session.cwd, host.clock())
        self.show_index_progress(len(records))

    def show_index_progress(self, count: int | None = None) -> None:
        """The sidebar's subtitle: how many sessions, and how far message indexing is."""
        host = self.host
        sidebar = self.query_one(SessionSidebar)
        if count is None:
            count = len(host.catalog.records) + (0 if host.catalog.has(host.session.id) else 1)
        if not host.catalog_loaded.is_set():
            sidebar.border_subtitle = "loading…"
            return
        progress = host.index_progress()
        sidebar.border_subtitle = f"{count} · {progress}" if progress else f"{count}"

    # -- picker -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("picker_move", "picker_accept"):
            return self.picker.is_open
        if action == "escape":
            return self.picker.is_open or self.preparing or self.host.agent.status == "running"
        return True

    def action_picker_move(self, step: int) -> None:
        """Move the picker's highlight."""
        self.picker.move(step)

    def action_picker_accept(self) -> None:
        """Accept the highlighted candidate."""
        self.picker.accept()

    def action_escape(self) -> None:
        """Close the picker, else cancel preparing, else stop the streaming reply."""
        if self.picker.is_open:
            if self._query is not None:
                self._dismissed = (self._query_row, self._query.start, self.prompt.text)
            self._close_picker()
        elif self.preparing and self._send_abort is not None:
            self._send_abort.abort("cancelled by the user")
        elif self.host.agent.status == "running":
            self.host.agent.cancel()
            self.notify("Reply stopped; what arrived is kept.", title="Stopped")

    def _close_picker(self) -> None:
        self.picker.close()
        if self._lookup_abort is not None:
            self._lookup_abort.abort("picker closed")
            self._lookup_abort = None
        self._lookup_generation += 1
        self._key_unanswered = False

    def on_prompt_area_query_changed(self, event: PromptArea.QueryChanged) -> None:
        self._query, self._query_row = event.query, event.row
        if event.query is None:
            self._close_picker()
            return
        if self._dismissed is not None:
            if self._dismissed == (event.row, event.query.start, self.prompt.text):
                return  # the same token, unedited since Escape: stay closed
            self._dismissed = None
        self._lookup(event.query)

    def _lookup(self, query: PickerQuery, from_key: bool = True) -> None:
        # A refresh that supersedes a keystroke's lookup before it was shown answers that keystroke.
        from_key = from_key or self._key_unanswered
        self._key_unanswered = from_key
        if self._lookup_abort is not None:
            self._lookup_abort.abort("superseded by a newer keystroke")
        controller = AbortController()
        self._lookup_abort = controller
        self._lookup_generation += 1
        self._run_lookup(query, controller, self._lookup_generation, from_key)

    @work(exclusive=True, group="picker")
    async def _run_lookup(
        self, query: PickerQuery, controller: AbortController, generation: int, from_key: bool
    ) -> None:
        host = self.host
        budget = FIRST_BUDGET
        while True:
            try:
                result = await host.search_sessions(query.query, controller.signal, budget)
            except SessionReferenceError as error:
                if error.code != CANCELLED:
                    self.notify(problem_of(error).describe(), severity="error", title="Lookup failed")
                return
            if generation != self._lookup_generation or self._query != query:
                return  # a newer keystroke already asked again
            host.catalog.request_titles([hit.candidate.session_id for hit in result.hits[:VISIBLE_HITS]])
            picker = self.picker
            keep = budget != FIRST_BUDGET or not from_key
            picker.show(result, query.query, host.session.cwd, host.clock(), host.index_note(result), keep=keep)
            self._place_picker(query)
            if from_key and budget == FIRST_BUDGET:
                # The next paint answers this keystroke (even if the full answer is in by then).
                self._shown_for_key = self.prompt.last_key_at
                self._key_unanswered = False
            if result.complete or budget == FULL_BUDGET:
                return
            # The keystroke's answer is on screen; finish the message search behind it.
            budget = FULL_BUDGET

    def on_mention_picker_painted(self, event: MentionPicker.Painted) -> None:
        # Keystroke -> new rows rendered: the figure the picker benchmark reports.
        if self._shown_for_key is None:
            return  # a refresh after titles loaded, not a keystroke
        self.host.picker_latencies.append(event.painted_at - self._shown_for_key)
        self.host.picker_updates += 1
        self._shown_for_key = None

    def refresh_picker(self) -> None:
        """Look the open picker's query up again (titles that were still loading may be in now)."""
        if self.picker.is_open and self._query is not None:
            self._lookup(self._query, from_key=False)

    def _place_picker(self, query: PickerQuery) -> None:
        prompt = self.prompt
        cursor = prompt.cursor_screen_offset
        row, column = prompt.cursor_location
        typed = prompt.document.get_line(row)[query.start : column]
        self.picker.place(cursor.x - cell_len(typed), cursor.y, self.size.height)

    def on_mention_picker_accepted(self, event: MentionPicker.Accepted) -> None:
        query = self._query
        self._close_picker()
        if query is None:
            return
        candidate = event.candidate
        mention = format_session_reference_mention(candidate.session_id, visible(candidate.label))
        self.prompt.insert_mention(query, self._query_row, mention)
        self.prompt.focus()

    # -- preview ----------------------------------------------------------------------------------

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is not self.prompt:
            return
        self.schedule_preview()

    def schedule_preview(self, delay: float = PREVIEW_DELAY) -> None:
        """Recompute the preview after ``delay`` (a newer call replaces a pending one)."""
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(max(delay, 0.01), self._start_preview)

    def _start_preview(self) -> None:
        if self._preview_abort is not None:
            self._preview_abort.abort("superseded by a newer draft")
        controller = AbortController()
        self._preview_abort = controller
        self._preview_generation += 1
        self._preview_started = time.perf_counter()
        pane = self.query_one(PreviewPane)
        draft = self.prompt.text
        if "@[" not in draft and "dsh-session:" not in draft:
            self._preview_shown = self._preview_generation
            pane.show(PreviewReport(draft=draft, max_references=self.host.service.config.max_references))
            return
        pane.show(None, busy=True)
        self._run_preview(draft, controller, self._preview_generation)

    @work(exclusive=True, group="preview", thread=True)
    def _run_preview(self, draft: str, controller: AbortController, generation: int) -> None:
        host = self.host
        try:
            report = asyncio.run(build_preview(host.service, host.session, draft, controller.signal))
        except SessionReferenceError:
            return  # cancelled: a newer draft is being previewed
        self.app.call_from_thread(self._show_preview, report, generation)

    def _show_preview(self, report: PreviewReport, generation: int) -> None:
        if generation != self._preview_generation:
            return
        self._preview_shown = generation
        self.query_one(PreviewPane).show(report)

    def on_preview_body_painted(self, event: PreviewBody.Painted) -> None:
        if self._preview_shown != self._preview_generation:
            return  # a "busy" repaint, or a report already superseded
        self._preview_shown = -1
        # Draft change (after the typing pause) -> the new report on screen: the benchmark's figure.
        self.host.last_preview_seconds = event.painted_at - self._preview_started
        self.host.preview_seconds.append(self.host.last_preview_seconds)
        self.host.preview_updates += 1

    def action_show_model_view(self) -> None:
        """Open the exact model-visible text of the draft's prefix and request."""
        report = self.query_one(PreviewPane).report
        if report is None or report.draft != self.prompt.text:
            self.notify("The preview is still updating; try again in a moment.", title="Model view")
            return
        if report.problem is not None:
            self.notify(report.problem.describe(), severity="error", title="Nothing would be sent")
            return
        text = report.model_visible_text()
        self.app.push_screen(
            ViewerScreen("What the model will receive", text, f"{len(text.encode('utf-8', 'surrogatepass')):,} bytes")
        )

    # -- sending ----------------------------------------------------------------------------------

    def on_prompt_area_submitted(self, event: PromptArea.Submitted) -> None:
        if self.preparing:
            self.notify("Still preparing the previous message (Esc cancels it).", severity="warning")
            return
        if not event.text.strip():
            return
        self._close_picker()
        self._send(event.text)

    def _set_preparing(self, preparing: bool) -> None:
        self.preparing = preparing
        prompt = self.prompt
        prompt.set_class(preparing, "-preparing")
        prompt.border_title = (
            "Preparing referenced sessions… · Esc cancels"
            if preparing
            else "Prompt · Enter sends · Ctrl+J newline · @ references a session"
        )

    @work(exclusive=True, group="send")
    async def _send(self, text: str) -> None:
        host = self.host
        session, agent = host.session, host.agent
        controller = AbortController()
        self._send_abort = controller
        self._set_preparing(True)
        try:
            parsed = parse_session_reference_text(text)
            content = [{"type": "text", "text": parsed.text}]
            prepared = await host.service.prepare(session, content, parsed.references, controller.signal)
        except SessionReferenceError as error:
            if error.code == CANCELLED:
                self.notify(f"Nothing was sent; your draft is kept. ({error.code})", title="Cancelled")
            else:
                self.notify(
                    f"{problem_of(error).describe()}\nNothing was sent; your draft is kept.",
                    severity="error",
                    title="Not sent",
                )
            self._restore(text)
            return
        finally:
            self._set_preparing(False)
            self._send_abort = None
        try:
            if agent.status == "running":
                await agent.steer(prepared.content, prepared.contexts)
            else:
                await agent.followup(prepared.content, prepared.contexts)
        except SessionQueryError as error:
            self.notify(
                f"{error.message} ({error.code})\nYour draft is kept.", severity="error", title="Could not save"
            )
            self._restore(text)
            return
        if self.prompt.text == text:
            self.prompt.clear()
        host.sent += 1
        self._follow_stream()

    def _restore(self, text: str) -> None:
        if not self.prompt.text:
            self.prompt.load_text(text)
            self.prompt.move_cursor(self.prompt.document.end)

    def _follow_stream(self) -> None:
        self.query_one(Transcript).sync(self.host.session, self.host.model.name)
        if self._stream_timer is None:
            self._stream_timer = self.set_interval(STREAM_TICK, self._stream_tick)

    def _stream_tick(self) -> None:
        host = self.host
        self.query_one(Transcript).sync(host.session, host.model.name)
        if host.agent.status == "idle" and self._stream_timer is not None:
            self._stream_timer.stop()
            self._stream_timer = None
            self._show_target()
            error = host.agent.last_error
            if error is not None and error is not host.reported_error:
                host.reported_error = error
                self.notify(f"{error.message} ({error.code})", severity="error", title="The model failed")

    # -- transcript -------------------------------------------------------------------------------

    def on_user_block_show_received(self, event: UserBlock.ShowReceived) -> None:
        text = model_received(event.event.data)
        self.app.push_screen(ViewerScreen(f"What the model received for message #{event.event.seq}", text))

    def action_show_last_received(self) -> None:
        """Show what the model received for the latest prompt of this session."""
        blocks = list(self.query(UserBlock))
        if not blocks:
            self.notify("No message has been sent in this session yet.", title="What the model received")
            return
        blocks[-1].action_show_received()

    # -- sessions ---------------------------------------------------------------------------------

    def on_session_sidebar_chosen(self, event: SessionSidebar.Chosen) -> None:
        self.switch_to(event.session_id)

    def switch_to(self, session_id: str) -> None:
        """Make ``session_id`` the target (keeps the draft)."""
        host = self.host
        if session_id == host.session.id:
            return
        source = host.catalog.source_of(session_id)
        if source is not None:
            # Another agent's session is never written here: it can only be referenced.
            self.notify(
                f"{source.name} sessions are read-only here: type @ in the prompt to reference it.",
                title="Cannot open session",
            )
            return
        try:
            host.open_session(session_id)
        except SessionQueryError as error:
            self.notify(f"{error.message} ({error.code})", severity="error", title="Cannot open session")
            return
        if self._stream_timer is not None:
            self._stream_timer.stop()
            self._stream_timer = None
        self._show_target()
        if host.agent.status == "running":
            self._follow_stream()
        self.schedule_preview(0)
        self.prompt.focus()

    def action_new_session(self) -> None:
        """Start a new session in the launch cwd and make it the target."""
        host = self.host
        host.new_session()
        self._show_target()
        self.schedule_preview(0)
        self.prompt.focus()
        self.notify("New session started.", title="Sessions")

    def action_rename_session(self) -> None:
        """Ask for a new title and write it as a ``session/title`` event."""
        session = self.host.session
        current = session.title.title if session.title is not None else ""

        def rename(title: str | None) -> None:
            if title is None:
                return
            try:
                self.host.rename(title)
            except SessionQueryError as error:
                self.notify(f"{error.message} ({error.code})", severity="error", title="Cannot rename")
                return
            self._show_target()

        self.app.push_screen(RenameScreen(current), rename)

    def action_toggle_sidebar(self) -> None:
        """Show or hide the sessions sidebar."""
        sidebar = self.query_one(SessionSidebar)
        sidebar.display = not sidebar.display

    def action_toggle_preview(self) -> None:
        """Show or hide the preview pane."""
        pane = self.query_one(PreviewPane)
        pane.display = not pane.display


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
    ) -> None:
        super().__init__()
        self.store = store
        self.model = model
        self.cwd = cwd
        self.clock = clock
        self.home = home
        self.cursor_blink = cursor_blink
        self.refresh_interval = refresh_interval
        self.catalog = SessionCatalog(store, external)
        self.service = SessionReferenceService(self.catalog, config)
        self.search_config = search_config if search_config is not None else SearchConfig()
        if index_path is None and isinstance(store, JsonlSessionStore):
            index_path = index_path_beside(store.root)
        self.body_index: BodyIndex | None = (
            BodyIndex(index_path if isinstance(store, JsonlSessionStore) else None)
            if self.search_config.body_search
            else None
        )
        self.search = SessionSearch(self.body_index, self.search_config)
        self._search_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="search")
        self._indexing = False
        self._index_started = False
        self._index_stop = threading.Event()
        self._index_failed_at = 0.0
        self._builder: subprocess.Popen[bytes] | None = None
        self._builder_failures = 0
        self._builder_finished = False
        self.session = session
        self.agents: dict[str, AgentLoop] = {}
        self.agent = self._agent_for(session)
        self.reported_error: object = None
        # Counters the benchmarks and tests read.
        self.picker_updates = 0
        self.picker_latencies: list[float] = []
        self.preview_updates = 0
        self.last_preview_seconds = 0.0
        self.preview_seconds: list[float] = []
        self.sent = 0
        self.catalog_loaded = asyncio.Event()
        self._titles_loading = False

    def on_unmount(self) -> None:
        self._index_stop.set()
        if self._builder is not None and self._builder.poll() is None:
            self._builder.terminate()  # what it committed stays; the next start goes on from there
        if self.body_index is not None:
            self.body_index.interrupt()
        self._search_thread.shutdown(wait=False, cancel_futures=True)
        # SESSIONREF_TRACE=<file>: write the measured latencies there on exit (the benchmarks read it).
        trace = os.environ.get("SESSIONREF_TRACE")
        if trace:
            figures = {"picker_latencies": self.picker_latencies, "preview_seconds": self.preview_seconds}
            with open(trace, "w", encoding="utf-8") as handle:
                json.dump(figures, handle)

    def close_index(self) -> None:
        """Close the body index file (the CLI calls it after the app exits)."""
        if self.body_index is not None:
            self.body_index.close()

    def get_default_screen(self) -> ChatScreen:
        return ChatScreen(self)

    @property
    def chat(self) -> ChatScreen:
        """The main screen."""
        screen = self.screen_stack[0]
        assert isinstance(screen, ChatScreen)
        return screen

    def _agent_for(self, session: Session) -> AgentLoop:
        agent = self.agents.get(session.id)
        if agent is None:
            agent = self.agents[session.id] = AgentLoop(session, self.model)
        return agent

    # -- sessions ---------------------------------------------------------------------------------

    def open_session(self, session_id: str) -> None:
        """Make an existing session the target.

        Raises:
            SessionQueryError: not found, locked by another writer, or corrupt.
        """
        session = open_for_writing(self.store, session_id)
        self._leave()
        self.session = session
        self.agent = self._agent_for(session)

    def new_session(self) -> None:
        """Create a session in the launch cwd and make it the target."""
        session = self.store.create(cwd=self.cwd)
        self._leave()
        self.session = session
        self.agent = self._agent_for(session)

    def _leave(self) -> None:
        # Stop writing the previous target unless a reply is still streaming into it.
        previous = self.session
        agent = self.agents.get(previous.id)
        if agent is not None and agent.status == "running":
            return
        self.agents.pop(previous.id, None)
        if isinstance(self.store, JsonlSessionStore) and previous.events:
            self.store.release(previous.id)

    def rename(self, title: str) -> None:
        """Write a ``session/title`` event on the target."""
        self.session.append("session/title", {"title": title, "messageSeqs": [], "source": "user"})
        self.catalog.titles_changed()

    # -- catalog ----------------------------------------------------------------------------------

    def start_catalog(self) -> None:
        """List the store and read the likely titles off the UI thread (the screen paints first)."""
        self._load_catalog()

    @work(thread=True, exclusive=True, group="catalog")
    def _load_catalog(self) -> None:
        catalog = self.catalog
        catalog.refresh()
        catalog.preload_titles(self.session.cwd)
        catalog.defer_titles = True
        self.call_from_thread(self._catalog_loaded)

    def _catalog_loaded(self) -> None:
        # Everything loaded so far lives as long as the app: move it out of the cyclic collector's
        # reach, so a full collection never walks the whole store in the middle of a keystroke.
        gc.collect()
        gc.freeze()
        self.catalog_loaded.set()
        self._catalog_changed()
        self.set_interval(TITLE_TICK, self._load_wanted_titles)
        self.start_index()

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
        if not self.catalog_loaded.is_set():
            return
        typing = time.perf_counter() - self.chat.prompt.last_key_at < TYPING_PAUSE
        if force or not typing:
            self._refresh_catalog()

    @work(thread=True, exclusive=True, group="catalog")
    def _refresh_catalog(self) -> None:
        if self.catalog.refresh():
            self.call_from_thread(self._catalog_changed)
        self.call_from_thread(self.start_index)

    def _catalog_changed(self) -> None:
        if self.screen_stack:
            self.chat.show_sessions()
            self.chat.refresh_picker()

    # -- search -----------------------------------------------------------------------------------

    async def search_sessions(self, query: str, signal: AbortSignal, budget: float = FULL_BUDGET) -> SearchResult:
        """The picker's search for ``query``: titles, ids and cwds, then message bodies.

        A body search runs on the search thread (SQLite there does not hold the interpreter), and
        a newer keystroke interrupts it; anything else is answered from memory at once.
        """
        catalog = self.catalog
        search = partial(
            self.search.search,
            self.session,
            query,
            records=catalog.records,
            titles=catalog.title_map(),
            limit=self.service.config.candidate_limit,
            signal=signal,
            budget=budget,
        )
        if self.body_index is None or len(query) < MIN_BODY_QUERY:
            return search()
        index = self.body_index
        remove = signal.add_listener(index.interrupt)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._search_thread, search)
        finally:
            remove()

    @property
    def indexing(self) -> bool:
        """Whether a body indexing run is going on."""
        return self._indexing

    def index_progress(self) -> str:
        """A few words on message indexing for the sidebar ("" when there is nothing to say)."""
        if self.body_index is None:
            return ""
        status = self.body_index.status
        if status.state == "building" and status.total:
            return f"indexing {100 * status.indexed // status.total}%"
        if status.state == "failed":
            return "message search off"
        return ""

    def index_note(self, result: SearchResult) -> str | None:
        """The picker's line about message search for this result, if it has anything to say."""
        status = result.status
        if result.body == "short":
            return f"Type {MIN_BODY_QUERY}+ characters to search messages too"
        if result.body == "indexing" and status is not None and status.code == INDEX_DISK_FULL:
            # What was indexed before the disk filled up is still searched.
            searchable = f"{status.indexed:,} of {status.total:,} searchable"
            return f"Messages: {searchable}; indexing stopped, disk full ({status.code})"
        if result.body == "indexing" and status is not None:
            if status.state == "read-only" and self._builder is None:
                return f"Messages: another sessionref is indexing ({status.indexed:,} of {status.total:,} searchable)"
            return f"Messages: indexing… {status.indexed:,} of {status.total:,} sessions searchable"
        if not result.complete:
            return "Searching more messages…"
        if result.body == "unavailable" and status is not None:
            return f"Message search unavailable: {status.message} ({status.code})"
        if result.body == "ready" and status is not None and status.code not in (None, INDEX_READ_ONLY):
            # (A complete copy another instance keeps searches just as well: nothing to say.)
            return f"Message search: {status.message} ({status.code})"
        return None

    def start_index(self) -> None:
        """Bring the body index up to date with the catalog, off the UI thread (one run at a time).

        A large catch-up (a first build) runs in a builder process (``python -m core.index_builder``)
        so the UI keeps its interpreter and a core; meanwhile this app searches the growing index
        read-only and polls its progress. Small changes are indexed here, in a thread.
        """
        if self.body_index is None or self._indexing or self._index_stop.is_set():
            return
        status = self.body_index.status
        if status.state == "failed" and time.monotonic() - self._index_failed_at < INDEX_RETRY:
            return
        self._indexing = True
        self._sync_index()

    @work(thread=True, exclusive=True, group="index")
    def _sync_index(self) -> None:
        index = self.body_index
        assert index is not None
        catalog = self.catalog
        try:
            if not self._index_started:
                # Titles the index already holds make every session findable by title at once.
                self._index_started = True
                with contextlib.suppress(IndexUnavailable):
                    index.open()
                    catalog.accept_titles(index.titles())
                    self.call_from_thread(self._index_changed, True)
            sources = catalog.index_sources(self.session.cwd)
            if self._use_builder(index, sources):
                return
            report = index.sync(
                sources,
                catalog.read_indexed,
                pause=_Politeness(lambda: self.chat.prompt.last_key_at if self.screen_stack else 0.0),
                stop=self._index_stop,
                progress=self._index_progressed,
            )
            catalog.accept_titles(report.titles)
            if report.indexed > CHECKPOINT_AFTER:
                index.checkpoint()  # a big build: merge the segments, fold the logs into the files
            self.call_from_thread(self._index_changed, bool(report.titles or report.removed))
        except IndexUnavailable:
            self._index_failed_at = time.monotonic()
            self.call_from_thread(self._index_changed, False)
        finally:
            self._indexing = False

    def _use_builder(self, index: BodyIndex, sources: list[tuple[str, str]]) -> bool:
        """Start (or follow) a builder process for a large catch-up; whether one is running now."""
        builder = self._builder
        if builder is not None:
            returncode = builder.poll()
            if returncode is None:
                index.refresh(sources)  # its progress, read-only
                self.call_from_thread(self._index_changed, False)
                self.call_later_from_thread(BUILDER_POLL, self.start_index)
                return True
            self._builder = None
            if returncode == 0:
                # What is left (sessions this app writes, which the builder sees at another
                # revision) is indexed here: one builder run per app, never a loop of them.
                self._builder_finished = True
                with contextlib.suppress(IndexUnavailable):
                    index.open()
                    self.catalog.accept_titles(index.titles())
            else:
                self._builder_failures += 1
                message = builder.stderr.read().decode(errors="replace").strip() if builder.stderr else ""
                self.call_from_thread(self._builder_failed, message or f"exit code {returncode}")
        store = self.store
        if (
            not isinstance(store, JsonlSessionStore)
            or index.path is None
            or self._builder_finished
            or self._builder_failures >= BUILDER_ATTEMPTS
        ):
            return False
        if not index.writable or index.pending(sources) < BUILDER_THRESHOLD:
            return False  # little to do, or another process keeps the index (sync reads its progress)
        command = [sys.executable, "-m", "core.index_builder", str(store.root), "--compression", store.compression]
        if self.session.cwd is not None:
            command += ["--first-cwd", self.session.cwd]
        command += ["--index", str(index.path)]
        index.release()  # the builder takes the writer locks
        self._builder = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.call_later_from_thread(BUILDER_POLL, self.start_index)
        return True

    def call_later_from_thread(self, delay: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the UI thread after ``delay`` seconds (from any thread)."""
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.call_from_thread(self.set_timer, delay, callback)

    def _builder_failed(self, message: str) -> None:
        self.notify(f"Indexing messages failed: {message}", severity="warning", title="Message search")

    def _index_progressed(self, status: IndexStatus) -> None:
        if not self._index_stop.is_set():
            self.call_from_thread(self._index_changed, True)

    def _index_changed(self, titles: bool) -> None:
        if not self.screen_stack:
            return
        chat = self.chat
        if titles:
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
        yield SystemCommand("Toggle sessions sidebar", "Show or hide the session list", chat.action_toggle_sidebar)
        yield SystemCommand("Toggle preview", "Show or hide the reference preview", chat.action_toggle_preview)

    def action_command_palette(self) -> None:
        # Ctrl+P moves up in an open picker; otherwise it opens the palette as usual.
        if self.screen_stack and self.screen is self.chat and self.chat.picker.is_open:
            self.chat.picker.move(-1)
            return
        super().action_command_palette()


def open_for_writing(store: Store, session_id: str) -> Session:
    """The session ``session_id`` of ``store``, opened for writing.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``_SESSION_LOCKED`` or ``_CORRUPT_SESSION``.
    """
    session = store.get(session_id)
    if session is None:
        raise not_found(session_id)
    return session


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
) -> SessionRefApp:
    """Build the app on ``store``: open ``session_id`` (or start a new session in ``cwd``).

    ``search_config`` turns message search off (``SearchConfig(body_search=False)``); the body
    index lives at ``index_path`` (default: beside the store's root; in memory for a memory store).
    ``external`` adds other agents' sessions (Claude Code, Codex) to the listing, read-only.

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
    )
