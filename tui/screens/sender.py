"""Sending the draft: Enter prepares the draft's references (Esc cancels), the agent loop sends it
(compacting first when the window asks for it), and the transcript follows the reply. Preparing and
sending run in ``core`` (``SessionReferenceService.prepare``, ``AgentLoop.followup`` / ``steer``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from textual.message import Message
from textual.timer import Timer

from core import AbortController, SessionQueryError, SessionReferenceError, parse_session_reference_text
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from core.errors import CANCELLED
from core.sessions.wire_shapes import ContentBlock
from tui.screens.prompt_status import CompactionShown
from tui.services.host import Host
from tui.services.preview_report import problem_of
from tui.services.workspace import Workspace

STREAM_TICK = 1 / 20
"""The least time between two repaints of a streaming reply: news of the session or its agent
(``Session.appended``, ``AgentLoop.changed``) asks for a repaint this long after it, at most one
pending at a time."""


class Sender:
    """Sending the draft and following the reply, for the chat screen.

    The draft is the screen's: the sender says what became of it (``DraftSent``: it went to the
    model; ``DraftKept``: nothing was sent, so it is the user's again), posted to the screen.

    Args:
        host: the screen (the send worker, the repaint timer, notifications, the messages above).
        workspace: the target session and its agent.

    Besides what became of the draft, it posts ``Preparing`` (the references are being prepared, or
    no longer), ``CompactionShown`` (a compaction before the send runs, or no longer),
    ``ReplyMoved`` (the reply it follows grew: the screen repaints the transcript, at most every
    ``STREAM_TICK``) and ``TargetChanged`` when the target's history moved on (a turn ended, a
    compaction before a send changed it): the screen repaints what shows it.
    """

    @dataclass
    class DraftSent(Message):
        """``text`` went to the model (the prompt lets it go if it still holds it)."""

        text: str

    @dataclass
    class DraftKept(Message):
        """Nothing of ``text`` was sent (the prompt gets it back if it was emptied meanwhile)."""

        text: str

    class TargetChanged(Message):
        """The target's history moved on (a turn ended, or a compaction changed it)."""

    @dataclass
    class Preparing(Message):
        """The draft's references are being prepared (``on``), or no longer."""

        on: bool

    class ReplyMoved(Message):
        """The reply being followed grew, or its turn ended."""

    def __init__(self, host: Host, workspace: Workspace) -> None:
        self._host = host
        self._workspace = workspace
        self._preparing = False
        self._send_abort: AbortController | None = None
        self._following: tuple[Callable[[], None], ...] | None = None
        """While the transcript follows a reply: what unsubscribes from the session's and agent's news."""
        self._repaint: Timer | None = None
        self._reported_error: object = None

    @property
    def preparing(self) -> bool:
        """Whether the draft's references are being prepared (or a compaction runs before the send)."""
        return self._preparing

    def _set_preparing(self, on: bool) -> None:
        if on != self._preparing:
            self._preparing = on
            self._host.post_message(self.Preparing(on))

    @property
    def streaming(self) -> bool:
        """Whether the transcript follows a streaming reply."""
        return self._following is not None

    def send(self, text: str) -> None:
        """Prepare and send ``text`` (the draft; the screen refuses a second one while ``preparing``)."""
        self._host.run_worker(partial(self._send, text), "_send", "send", exclusive=True)

    def cancel_preparing(self) -> bool:
        """Escape while preparing: stop it (nothing is sent, the draft is kept); whether it was."""
        if self.preparing and self._send_abort is not None:
            self._send_abort.abort("cancelled by the user")
            return True
        return False

    async def _send(self, text: str) -> None:
        workspace = self._workspace
        notify = self._host.notify
        session, agent = workspace.session, workspace.agent
        controller = AbortController()
        self._send_abort = controller
        self._set_preparing(True)
        try:
            parsed = parse_session_reference_text(text)
            content: list[ContentBlock] = [{"type": "text", "text": parsed.text}]
            prepared = await workspace.service.prepare(session, content, parsed.references, controller.signal)
        except SessionReferenceError as error:
            self._set_preparing(False)
            self._send_abort = None
            if error.code == CANCELLED:
                notify(f"Nothing was sent; your draft is kept. ({error.code})", title="Cancelled")
            else:
                notify(
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
                await agent.steer(prepared.blocks, prepared.contexts)
            else:
                # Still "preparing" while a compaction runs before the send: a second Enter is
                # refused, Escape cancels the compaction, and its progress is in the prompt's title.
                self._host.post_message(CompactionShown(True))
                compacted = agent.last_compaction
                try:
                    await agent.followup(prepared.blocks, prepared.contexts)
                finally:
                    self._host.post_message(CompactionShown(False))
                if agent.last_compaction is not compacted and agent.last_compaction is not None:
                    count = len(agent.last_compaction.shadowed_seqs)
                    notify(
                        f"{count} earlier messages became one checkpoint before sending, to stay within the window.",
                        title="Compacted",
                        markup=False,
                    )
        except SessionQueryError as error:
            notify(
                f"{error.line}\nYour draft is kept.",
                severity="error",
                title="Could not save",
                markup=False,
            )
            self._restore(text)
            return
        except CompactionError as error:
            cancelled = error.code == COMPACTION_CANCELLED
            notify(
                f"{error.line}\nNothing was sent; your draft is kept.",
                severity="information" if cancelled else "error",
                title="Cancelled" if cancelled else "Not sent",
                markup=False,
            )
            self._restore(text)
            self._host.post_message(self.TargetChanged())
            return
        finally:
            self._set_preparing(False)
        failed = agent.take_compaction_error()
        if failed is not None:
            notify(
                f"{failed.line}\nThe message was sent anyway: it fits the window.",
                severity="warning",
                title="Compaction failed",
                markup=False,
            )
        self._host.post_message(self.DraftSent(text))
        self.follow_stream()

    def _restore(self, text: str) -> None:
        self._host.post_message(self.DraftKept(text))

    def follow_stream(self) -> None:
        """Keep the transcript in step with the target's reply until its agent is idle: the session
        and the agent say when something changed, and the transcript repaints."""
        workspace = self._workspace
        self._host.post_message(self.ReplyMoved())
        if self._following is None:
            self._following = (
                workspace.session.appended.subscribe(self._news),
                workspace.agent.changed.subscribe(self._news),
            )
        self._news(None)  # (the agent may be idle already)

    def stop_following(self) -> None:
        """Stop following a reply (the target changed; its agent streams on, unseen)."""
        if self._following is not None:
            for unsubscribe in self._following:
                unsubscribe()
            self._following = None
        if self._repaint is not None:
            self._repaint.stop()
            self._repaint = None

    def _news(self, _what: object) -> None:
        if self._following is None:
            return
        if self._workspace.agent.status == "idle":
            # The reply is over: its last events are painted now, not a tick later.
            if self._repaint is not None:
                self._repaint.stop()
            self._stream_tick()
        elif self._repaint is None:
            self._repaint = self._host.set_timer(STREAM_TICK, self._stream_tick)

    def _stream_tick(self) -> None:
        self._repaint = None
        workspace = self._workspace
        notify = self._host.notify
        self._host.post_message(self.ReplyMoved())
        if workspace.agent.status == "idle" and self._following is not None:
            self.stop_following()
            self._host.post_message(self.TargetChanged())
            failed = workspace.agent.take_compaction_error()
            if failed is not None:
                notify(failed.line, severity="warning", title="Compaction failed", markup=False)
            error = workspace.agent.last_error
            if error is not None and error is not self._reported_error:
                self._reported_error = error
                notify(error.line, severity="error", title="The model failed")
