"""The chat screen's sending: Enter prepares the draft's references (Esc cancels), the agent loop
sends it (compacting first when the window asks for it), and the transcript follows the reply.

A mixin of ``tui.chat.ChatScreen``, which provides the workspace, the prompt, the picker and the
transcript refresh (``_show_target``, ``schedule_preview``); the prompt's title is
``CompactionControls``'. Preparing and sending run in ``core`` (``SessionReferenceService.prepare``,
``AgentLoop.followup`` / ``steer``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work
from textual.message import Message

from core import AbortController, SessionQueryError, SessionReferenceError, parse_session_reference_text
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from core.errors import CANCELLED
from tui.screens.screen_typing import MixedIntoScreen
from tui.services.preview_report import problem_of
from tui.widgets.prompt import PromptArea
from tui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from tui.services.workspace import Workspace

STREAM_TICK = 1 / 20
"""How often the transcript repaints a streaming reply."""


class SendControls(MixedIntoScreen):
    """Sending the draft and following the reply, for the chat screen."""

    workspace: Workspace
    preparing: bool
    _send_abort: AbortController | None
    _stream_timer: Any
    _reported_error: object

    if TYPE_CHECKING:  # the screen's, for the type checker only (a stub here would shadow them)
        Sent: type[Message]

        @property
        def prompt(self) -> PromptArea: ...
        def prompt_title(self) -> None: ...
        def watch_compaction(self, on: bool) -> None: ...
        def schedule_preview(self, delay: float = ...) -> None: ...
        def _close_picker(self) -> None: ...
        def _show_target(self) -> None: ...

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
        self.prompt_title()

    @work(exclusive=True, group="send")
    async def _send(self, text: str) -> None:
        workspace = self.workspace
        session, agent = workspace.session, workspace.agent
        controller = AbortController()
        self._send_abort = controller
        self._set_preparing(True)
        try:
            parsed = parse_session_reference_text(text)
            content = [{"type": "text", "text": parsed.text}]
            prepared = await workspace.service.prepare(session, content, parsed.references, controller.signal)
        except SessionReferenceError as error:
            self._set_preparing(False)
            self._send_abort = None
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
        except BaseException:
            self._set_preparing(False)
            self._send_abort = None
            raise
        self._send_abort = None
        try:
            if agent.status == "running":
                await agent.steer(prepared.content, prepared.contexts)
            else:
                # Still "preparing" while a compaction runs before the send: a second Enter is
                # refused, Escape cancels the compaction, and its progress is in the prompt's title.
                self.watch_compaction(True)
                compacted = agent.last_compaction
                try:
                    await agent.followup(prepared.content, prepared.contexts)
                finally:
                    self.watch_compaction(False)
                if agent.last_compaction is not compacted and agent.last_compaction is not None:
                    count = len(agent.last_compaction.shadowed_seqs)
                    self.notify(
                        f"{count} earlier messages became one checkpoint before sending, to stay within the window.",
                        title="Compacted",
                        markup=False,
                    )
        except SessionQueryError as error:
            self.notify(
                f"{error.message} ({error.code})\nYour draft is kept.",
                severity="error",
                title="Could not save",
                markup=False,
            )
            self._restore(text)
            return
        except CompactionError as error:
            cancelled = error.code == COMPACTION_CANCELLED
            self.notify(
                f"{error.message} ({error.code})\nNothing was sent; your draft is kept.",
                severity="information" if cancelled else "error",
                title="Cancelled" if cancelled else "Not sent",
                markup=False,
            )
            self._restore(text)
            self._show_target()
            return
        finally:
            self._set_preparing(False)
        if agent.compaction_error is not None:
            failed, agent.compaction_error = agent.compaction_error, None
            self.notify(
                f"{failed.message} ({failed.code})\nThe message was sent anyway: it fits the window.",
                severity="warning",
                title="Compaction failed",
                markup=False,
            )
        if self.prompt.text == text:
            self.prompt.clear()
        self.post_message(self.Sent())
        self._follow_stream()

    def _restore(self, text: str) -> None:
        if not self.prompt.text:
            self.prompt.load_text(text)
            self.prompt.move_cursor(self.prompt.document.end)

    def _follow_stream(self) -> None:
        self.query_one(Transcript).sync(self.workspace.session, self.workspace.model.name)
        if self._stream_timer is None:
            self._stream_timer = self.set_interval(STREAM_TICK, self._stream_tick)

    def _stream_tick(self) -> None:
        workspace = self.workspace
        self.query_one(Transcript).sync(workspace.session, workspace.model.name)
        self.prompt_title()
        if workspace.agent.status == "idle" and self._stream_timer is not None:
            self._stream_timer.stop()
            self._stream_timer = None
            self._show_target()
            self.schedule_preview(0)
            failed = workspace.agent.compaction_error
            if failed is not None:
                workspace.agent.compaction_error = None
                self.notify(
                    f"{failed.message} ({failed.code})", severity="warning", title="Compaction failed", markup=False
                )
            error = workspace.agent.last_error
            if error is not None and error is not self._reported_error:
                self._reported_error = error
                self.notify(f"{error.message} ({error.code})", severity="error", title="The model failed")
