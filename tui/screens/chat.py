"""The chat screen: transcript, prompt with the `@` picker, live preview, session sidebar.

It lays out what the user sees of the ``Workspace`` it is given (the store, the listing, the service,
the target session and its agent) and routes the keys and the widgets' messages. The widgets own
what they show and run their own work: the picker its lookups (``SessionPicker``), the preview its
``prepare`` (``LivePreview``), the sidebar its listing and filter (``StoreSidebar``), the transcript
follows its session (``Transcript``). Two headless parts run the rest in their own workers: the
agent's turns (``Turns``: sending, compacting) and hand-offs (``Handoffs``). Switching and renaming
are a plain part (``SessionControl``), and ``PromptStatus`` says in the prompt's title what is going
on. It never reaches into the app: what the app must know it posts (``Ready``, ``Sent``; the picker's
and the preview's ``Shown`` bubble up for the app's trace).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, TextArea

from tui.screens.commands import ChatCommands, ResumeCommands, SessionCommands, chat_commands
from tui.screens.dialogs import RenameScreen, ViewerScreen
from tui.screens.handoffs import Handoffs
from tui.screens.prompt_status import PromptStatus
from tui.screens.session_control import SessionControl
from tui.screens.turns import Turns
from tui.services.context_view import context_summary, draft_context, model_view_figures
from tui.services.indexing import MessageIndexer
from tui.services.text import session_badge, short_cwd, visible
from tui.services.workspace import Workspace
from tui.widgets.live_preview import PREVIEW_DELAY, LivePreview
from tui.widgets.prompt import PromptArea
from tui.widgets.session_picker import SessionPicker
from tui.widgets.sidebar import SessionSidebar
from tui.widgets.store_sidebar import StoreSidebar
from tui.widgets.tool_line import ToolLine
from tui.widgets.transcript import Transcript
from tui.widgets.transcript_blocks import UserBlock, model_received


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
        Binding("f8", "compact", "Compact"),
    ]

    COMMANDS = {ChatCommands, SessionCommands, ResumeCommands}

    class Ready(Message):
        """The screen is up: the listing may start."""

    class Sent(Message):
        """A message went to the model."""

    def __init__(self, workspace: Workspace, indexer: MessageIndexer, *, cursor_blink: bool = True) -> None:
        super().__init__()
        self.workspace = workspace
        self.indexer = indexer
        self.prompt = PromptArea(id="prompt", cursor_blink=cursor_blink)
        """The prompt."""
        self.picker = SessionPicker(workspace, indexer, self.prompt, id="picker")
        """The `@` picker."""
        self._sidebar = StoreSidebar(workspace, indexer, id="sidebar")
        self._transcript = Transcript(
            id="transcript", freshness=workspace.moved_on, label_of=workspace.catalog.titles.title
        )
        self._pane = LivePreview(workspace, lambda: self.prompt.text, id="preview")
        self.prompt_status = PromptStatus(workspace, self.prompt)
        self.turns = Turns(workspace)
        """Sending and compacting, run in their own workers (``preparing``, ``compacting``)."""
        self.session_control = SessionControl(workspace)
        self.handoffs = Handoffs(workspace)
        """Hand-offs ("Continue in …"), run in their own worker."""

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="@")
        with Horizontal(id="main"):
            yield self._sidebar
            yield self._transcript
            yield self._pane
        yield self.prompt
        yield Footer()
        yield self.picker
        yield self.handoffs
        yield self.turns

    def on_mount(self) -> None:
        self.prompt_status.show()
        # The prompt's title says what the turns are doing (preparing the references, compacting).
        self.watch(self.turns, "preparing", self.prompt_status.set_preparing, init=False)
        self.watch(self.turns, "compacting", self.prompt_status.watch_compaction, init=False)
        self.prompt.focus()
        sidebar = self._sidebar
        catalog = self.workspace.catalog
        sidebar.badge_of = self.picker.badge_of = self.prompt.badge_of = lambda session_id: session_badge(
            session_id, catalog.owner_of(session_id)
        )
        self._show_target()
        self.post_message(self.Ready())
        self.schedule_preview(0)  # the context meter shows before anything is typed

    @property
    def transcript(self) -> Transcript:
        """The transcript of the target session."""
        return self._transcript

    @property
    def preparing(self) -> bool:
        """Whether a send is being prepared (its references, or a compaction before it)."""
        return self.turns.preparing

    def _show_target(self) -> None:
        workspace = self.workspace
        session = workspace.session
        title = session.title.title if session.title is not None else "New session"
        usage = context_summary(draft_context(workspace.agent, [], ()))
        self.sub_title = f"{visible(title)} · {short_cwd(session.cwd, 48, workspace.home)} · {usage}"
        self._transcript.show_session(session, workspace.agent, workspace.model.name)
        self.show_sessions()

    def show_sessions(self) -> None:
        """Repaint the sidebar from the catalog, and what the transcript says of referenced sessions."""
        self._transcript.refresh_references()
        self._sidebar.show_store()

    def show_index_progress(self, count: int | None = None) -> None:
        """The sidebar's subtitle: how many sessions, and how far message indexing is."""
        self._sidebar.show_progress(count)

    def _target_moved_on(self) -> None:
        self._show_target()
        self.schedule_preview(0)

    @on(Transcript.Moved)
    def _reply_moved(self) -> None:
        self.prompt_status.show()

    @on(Transcript.TurnEnded)
    def _turn_ended(self) -> None:
        self._target_moved_on()
        self.turns.turn_ended()

    def _target_switched(self) -> None:
        self._show_target()
        self.schedule_preview(0)
        self.prompt.focus()

    # -- keys and what the widgets say --------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("picker_move", "picker_accept"):
            return self.picker.is_open
        if action == "escape":
            return self.picker.is_open or self.preparing or self.workspace.agent.status != "idle"
        return True

    def action_escape(self) -> None:
        """Close the picker, else cancel preparing, else stop the streaming reply."""
        agent = self.workspace.agent
        if self.picker.is_open:
            self.picker.dismiss()
        elif agent.status == "compacting":
            agent.cancel()
        elif self.turns.cancel_preparing():
            pass
        elif agent.status == "running":
            agent.cancel()
            self.notify("Reply stopped; what arrived is kept.", title="Stopped")

    def action_picker_move(self, step: int) -> None:
        """Move the picker's highlight."""
        self.picker.move(step)

    def action_picker_accept(self) -> None:
        """Accept the highlighted candidate (of the rows for what was typed)."""
        self.picker.accept()

    @on(PromptArea.QueryChanged, "#prompt")
    def _query_changed(self, event: PromptArea.QueryChanged) -> None:
        self.picker.query_changed(event.query, event.row)

    @on(SessionPicker.MentionChosen)
    def _mention_chosen(self, event: SessionPicker.MentionChosen) -> None:
        self.prompt.insert_mention(event.query, event.row, event.mention)
        self.prompt.focus()

    def refresh_picker(self) -> None:
        """Look the open picker's query up again (titles that were still loading may be in now)."""
        self.picker.look_again()

    @on(PromptArea.Submitted, "#prompt")
    def _submitted(self, event: PromptArea.Submitted) -> None:
        if self.preparing:
            self.notify("Still preparing the previous message (Esc cancels it).", severity="warning")
            return
        if not event.text.strip():
            return
        self.picker.close()
        self.turns.send(event.text)

    @on(Turns.Sent)
    def _sent(self, event: Turns.Sent) -> None:
        if self.prompt.text == event.text:
            self.prompt.clear()
        self.post_message(self.Sent())
        self._transcript.show_session(self.workspace.session, self.workspace.agent, self.workspace.model.name)
        self.prompt_status.show()

    @on(Turns.Kept)
    def _kept(self, event: Turns.Kept) -> None:
        self.prompt.offer_draft(event.text, keep_typed=True)

    @on(Turns.Moved)
    def _moved(self) -> None:
        self._target_moved_on()

    @on(SessionSidebar.MenuWanted, "#sidebar")
    def _menu_wanted(self, event: SessionSidebar.MenuWanted) -> None:
        self.handoffs.menu(event.session_id)

    @on(Handoffs.Opened)
    def _opened(self, event: Handoffs.Opened) -> None:
        self.switch_to(event.session_id)

    @on(Handoffs.Handed)
    def _handed(self, event: Handoffs.Handed) -> None:
        if event.draft is not None:  # sessionref's new session is the target
            self._target_switched()
            self.prompt.offer_draft(event.draft)
        else:
            self._transcript.sync(self.workspace.session, self.workspace.model.name)

    def palette_commands(self) -> list[SystemCommand]:
        """The chat's own commands in the command palette (``ChatCommands``), in order."""
        return chat_commands(self, [(agent.name, agent.label) for agent in self.handoffs.agents()])

    def continue_in(self, agent: str) -> None:
        """Hand the target session to ``agent`` (the palette's "Continue in …")."""
        self.handoffs.hand_off(self.workspace.session.id, agent)

    def resume_in_its_agent(self, session_id: str) -> None:
        """Open another agent's session in that agent (the palette's "Resume in …")."""
        self.handoffs.resume(session_id)

    @on(SessionSidebar.Chosen, "#sidebar")
    def _chosen(self, event: SessionSidebar.Chosen) -> None:
        self.switch_to(event.session_id)

    def switch_to(self, session_id: str) -> None:
        """Make ``session_id`` the target (keeps the draft)."""
        if session_id == self.workspace.session.id:
            return
        refused = self.session_control.switch_to(session_id)
        if refused is not None:
            refused.show(self.app)
            return
        self._target_switched()

    def action_new_session(self) -> None:
        """Start a new session in the launch cwd and make it the target."""
        notice = self.session_control.new_session()
        self._target_switched()
        notice.show(self.app)

    def action_rename_session(self) -> None:
        """Ask for a new title and write it as a ``session/title`` event."""
        self.app.push_screen(RenameScreen(self.session_control.title), self._renamed)

    def _renamed(self, title: str | None) -> None:
        if title is None:
            return  # the dialog was dismissed
        refused = self.session_control.rename(title)
        if refused is not None:
            refused.show(self.app)
            return
        self._target_moved_on()

    def action_compact(self) -> None:
        """Compact the session's older history into a checkpoint now (Esc cancels)."""
        self.turns.compact()

    def action_toggle_sidebar(self) -> None:
        """Show or hide the sessions sidebar."""
        self._sidebar.display = not self._sidebar.display

    def action_toggle_preview(self) -> None:
        """Show or hide the preview pane."""
        self._pane.display = not self._pane.display

    # -- preview ----------------------------------------------------------------------------------

    @on(TextArea.Changed, "#prompt")
    def _draft_changed(self, _event: TextArea.Changed) -> None:
        self.schedule_preview()

    def schedule_preview(self, delay: float = PREVIEW_DELAY) -> None:
        """Recompute the preview after ``delay`` (a newer call replaces a pending one)."""
        self._pane.schedule(delay)

    def action_show_model_view(self) -> None:
        """Open the exact model-visible text of the draft's prefix and request."""
        report = self._pane.report
        if report is None or report.draft != self.prompt.text:
            self.notify("The preview is still updating; try again in a moment.", title="Model view")
            return
        if report.problem is not None:
            self.notify(report.problem.describe(), severity="error", title="Nothing would be sent")
            return
        text = report.model_visible_text()
        figures = model_view_figures(text, report.context)
        self.app.push_screen(ViewerScreen("What the model will receive", text, figures))

    # -- transcript -------------------------------------------------------------------------------

    @on(ToolLine.ShowCall)
    def _show_call(self, event: ToolLine.ShowCall) -> None:
        self.app.push_screen(ViewerScreen(event.title, event.text))

    @on(UserBlock.ShowReceived)
    def _show_received(self, event: UserBlock.ShowReceived) -> None:
        text = model_received(event.event.data)
        self.app.push_screen(ViewerScreen(f"What the model received for message #{event.event.seq}", text))

    def action_show_last_received(self) -> None:
        """Show what the model received for the latest prompt of this session."""
        blocks = list(self.query(UserBlock))
        if not blocks:
            self.notify("No message has been sent in this session yet.", title="What the model received")
            return
        blocks[-1].action_show_received()
