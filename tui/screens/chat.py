"""The chat screen: transcript, prompt with the `@` picker, live preview, session sidebar.

It drives what the user sees of the ``Workspace`` it is given (the store, the listing, the service,
the target session and its agent) and of the message indexer. It never reaches into the app: what
the app must know it posts as messages (``Ready``, ``PickerShown``, ``PreviewShown``, ``Sent``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, TextArea

from core import (
    AbortController,
    SessionHeader,
    SessionRecord,
    SessionReferenceError,
)
from tui.screens.compacting import PROMPT_TITLE, CompactionControls
from tui.screens.dialogs import ViewerScreen
from tui.screens.picker_controls import PickerControls
from tui.screens.sending import SendControls
from tui.screens.session_controls import SessionControls
from tui.services.context_view import DraftContext, context_summary, draft_context, tokens
from tui.services.indexing import MessageIndexer
from tui.services.mentions import PickerQuery
from tui.services.preview_report import PreviewReport, build_preview
from tui.services.text import short_cwd, visible
from tui.services.workspace import Workspace
from tui.widgets.picker import MentionPicker
from tui.widgets.preview import PreviewBody, PreviewPane
from tui.widgets.prompt import PromptArea
from tui.widgets.sidebar import SessionSidebar
from tui.widgets.tool_line import ToolLine
from tui.widgets.transcript import Transcript, UserBlock, model_received

PREVIEW_DELAY = 0.12
"""Seconds of typing pause before the preview recomputes (a newer draft cancels the running one)."""


class ChatScreen(PickerControls, SendControls, CompactionControls, SessionControls, Screen[None]):
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
        Binding("f8", "compact", "Compact"),
    ]

    class Ready(Message):
        """The screen is up: the listing may start."""

    @dataclass
    class PickerShown(Message):
        """A keystroke's picker rows reached the screen ``seconds`` after the key."""

        seconds: float

    @dataclass
    class PreviewShown(Message):
        """A draft's preview reached the screen ``seconds`` after the typing paused."""

        seconds: float

    class Sent(Message):
        """A message went to the model."""

    def __init__(self, workspace: Workspace, indexer: MessageIndexer, *, cursor_blink: bool = True) -> None:
        super().__init__()
        self.workspace = workspace
        self.indexer = indexer
        self.cursor_blink = cursor_blink
        self._reported_error: object = None
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
        workspace = self.workspace
        yield Header(show_clock=False, icon="@")
        with Horizontal(id="main"):
            yield SessionSidebar(id="sidebar", home=workspace.home)
            yield Transcript(id="transcript", freshness=self.workspace.moved_on, label_of=self.workspace.catalog.title)
            yield PreviewPane(id="preview", home=workspace.home)
        yield PromptArea(id="prompt", cursor_blink=self.cursor_blink)
        yield Footer()
        yield MentionPicker(id="picker", home=workspace.home)

    def on_mount(self) -> None:
        prompt = self.query_one(PromptArea)
        prompt.border_title = PROMPT_TITLE
        prompt.focus()
        sidebar = self.query_one(SessionSidebar)
        sidebar.border_subtitle = "loading…"
        sidebar.badge_of = self.picker.badge_of = self.workspace.catalog.badge_of
        self._show_target()
        self.post_message(self.Ready())
        self.schedule_preview(0)  # the context meter shows before anything is typed

    @property
    def prompt(self) -> PromptArea:
        """The prompt widget."""
        return self.query_one(PromptArea)

    @property
    def picker(self) -> MentionPicker:
        """The `@` picker."""
        return self.query_one(MentionPicker)

    def _show_target(self) -> None:
        workspace = self.workspace
        session = workspace.session
        title = session.title.title if session.title is not None else "New session"
        usage = context_summary(draft_context(workspace.agent, [], ()))
        self.app.sub_title = f"{visible(title)} · {short_cwd(session.cwd, 48, workspace.home)} · {usage}"
        self.query_one(Transcript).sync(session, workspace.model.name)
        self.show_sessions()

    def show_sessions(self) -> None:
        """Repaint the sidebar from the catalog, and what the transcript says of referenced sessions."""
        self.query_one(Transcript).refresh_references()
        workspace = self.workspace
        catalog = workspace.catalog
        sidebar = self.query_one(SessionSidebar)
        live = catalog.live_ids | {workspace.session.id}

        def title_of(header: SessionHeader) -> str | None:
            if header.id in live:
                session = workspace.store.get(header.id)
                return session.title.title if session is not None and session.title is not None else None
            return catalog.title(header.id)

        records = catalog.records
        if not catalog.has(workspace.session.id):
            # A new session is listed before its first write.
            records = [SessionRecord(header=workspace.session.header, live=True, persisted=False), *records]
        sidebar.show(
            records, title_of, catalog.problems, workspace.session.id, workspace.session.cwd, workspace.clock()
        )
        self.show_index_progress(len(records))

    def show_index_progress(self, count: int | None = None) -> None:
        """The sidebar's subtitle: how many sessions, and how far message indexing is."""
        workspace = self.workspace
        sidebar = self.query_one(SessionSidebar)
        if count is None:
            count = len(workspace.catalog.records) + (0 if workspace.catalog.has(workspace.session.id) else 1)
        if not workspace.catalog_loaded.is_set():
            sidebar.border_subtitle = "loading…"
            return
        progress = self.indexer.progress()
        sidebar.border_subtitle = f"{count} · {progress}" if progress else f"{count}"

    # -- picker -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("picker_move", "picker_accept"):
            return self.picker.is_open
        if action == "escape":
            return self.picker.is_open or self.preparing or self.workspace.agent.status != "idle"
        return True

    def action_escape(self) -> None:
        """Close the picker, else cancel preparing, else stop the streaming reply."""
        if self.picker.is_open:
            if self._query is not None:
                self._dismissed = (self._query_row, self._query.start, self.prompt.text)
            self._close_picker()
        elif self.workspace.agent.status == "compacting":
            self.workspace.agent.cancel()
        elif self.preparing and self._send_abort is not None:
            self._send_abort.abort("cancelled by the user")
        elif self.workspace.agent.status == "running":
            self.workspace.agent.cancel()
            self.notify("Reply stopped; what arrived is kept.", title="Stopped")

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
            report = PreviewReport(draft=draft, max_references=self.workspace.service.config.max_references)
            report.context = self._draft_context(report)
            pane.show(report)
            return
        pane.show(None, busy=True)
        self._run_preview(draft, controller, self._preview_generation)

    @work(exclusive=True, group="preview", thread=True)
    def _run_preview(self, draft: str, controller: AbortController, generation: int) -> None:
        workspace = self.workspace
        try:
            report = asyncio.run(build_preview(workspace.service, workspace.session, draft, controller.signal))
        except SessionReferenceError:
            return  # cancelled: a newer draft is being previewed
        self.app.call_from_thread(self._show_preview, report, generation)

    def _draft_context(self, report: PreviewReport) -> DraftContext:
        content = report.content or ([{"type": "text", "text": report.draft}] if report.draft.strip() else [])
        return draft_context(self.workspace.agent, content, report.contexts)

    def _show_preview(self, report: PreviewReport, generation: int) -> None:
        if generation != self._preview_generation:
            return
        self._preview_shown = generation
        report.context = self._draft_context(report)
        self.query_one(PreviewPane).show(report)

    def on_preview_body_painted(self, event: PreviewBody.Painted) -> None:
        if self._preview_shown != self._preview_generation:
            return  # a "busy" repaint, or a report already superseded
        self._preview_shown = -1
        # Draft change (after the typing pause) -> the new report on screen: the benchmark's figure.
        self.post_message(self.PreviewShown(event.painted_at - self._preview_started))

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
        size = f"{len(text.encode('utf-8', 'surrogatepass')):,} bytes"
        context = report.context
        if context is not None:
            size += (
                f" · this message ≈{tokens(context.draft)} tokens · request ≈{tokens(context.total)} of "
                f"{tokens(context.window)} ({context.window_source}) · history {tokens(context.used)}"
            )
            if context.reported is not None:
                size += f" (last reported {context.reported:,})"
            if context.compacts:
                size += " · compacts first"
        self.app.push_screen(ViewerScreen("What the model will receive", text, size))

    # -- transcript -------------------------------------------------------------------------------

    def on_tool_line_show_call(self, event: ToolLine.ShowCall) -> None:
        self.app.push_screen(ViewerScreen(event.title, event.text))

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
