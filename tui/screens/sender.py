"""Sending the draft: its references are prepared (``SessionReferenceService.prepare``), then the agent
loop sends it (``AgentLoop.followup``, compacting first when the window asks for it, or ``steer``
while a reply streams). The chat screen runs these in its send worker; the transcript follows the
reply on its own (``Transcript.follow``).
"""

from __future__ import annotations

from collections.abc import Callable

from core import AbortSignal, PreparedMessage, SessionQueryError, SessionReferenceError, parse_session_reference_text
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from core.errors import CANCELLED, SessionrefError
from core.sessions.wire_shapes import ContentBlock
from tui.services.notice import Notice
from tui.services.preview_report import problem_of
from tui.services.workspace import Workspace


class NotSent(SessionrefError):
    """Nothing of the draft was sent: ``notice`` says why (the draft is the user's again), ``code`` is
    the failure's (the reference's, the store's, the compaction's, or ``CANCELLED``). ``moved``: the
    target's history changed meanwhile (a cancelled compaction), so it is shown again."""

    def __init__(self, notice: Notice, cause: SessionrefError, *, moved: bool = False) -> None:
        super().__init__(notice.message, cause.code)
        self.notice = notice
        self.moved = moved


class Sender:
    """Prepares and sends a draft to the target session's agent.

    Args:
        workspace: the reference service, the target session and its agent.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._reported: object = None

    async def prepare(self, text: str, signal: AbortSignal) -> PreparedMessage:
        """The draft with its references snapshotted (``signal``: Escape cancels).

        Raises:
            NotSent: a reference failed, or the user cancelled.
        """
        workspace = self._workspace
        try:
            parsed = parse_session_reference_text(text)
            content: list[ContentBlock] = [{"type": "text", "text": parsed.text}]
            return await workspace.service.prepare(workspace.session, content, parsed.references, signal)
        except SessionReferenceError as error:
            if error.code == CANCELLED:
                notice = Notice(f"Nothing was sent; your draft is kept. ({error.code})", "Cancelled")
                raise NotSent(notice, error) from error
            message = f"{problem_of(error).describe()}\nNothing was sent; your draft is kept."
            raise NotSent(Notice(message, "Not sent", "error"), error) from error

    async def deliver(self, prepared: PreparedMessage, compacting: Callable[[bool], None]) -> list[Notice]:
        """Send ``prepared``: steer the streaming reply, or start a turn (compacting first when the
        window asks for it: ``compacting`` is told while that runs). What to tell the user after.

        Raises:
            NotSent: the session could not be written, or the compaction before the send failed.
        """
        agent = self._workspace.agent
        told: list[Notice] = []
        try:
            if agent.status == "running":
                await agent.steer(prepared.blocks, prepared.contexts)
            else:
                compacted = agent.last_compaction
                compacting(True)
                try:
                    await agent.followup(prepared.blocks, prepared.contexts)
                finally:
                    compacting(False)
                if agent.last_compaction is not compacted and agent.last_compaction is not None:
                    count = len(agent.last_compaction.shadowed_seqs)
                    said = f"{count} earlier messages became one checkpoint before sending, to stay within the window."
                    told.append(Notice(said, "Compacted"))
        except SessionQueryError as error:
            raise NotSent(Notice(f"{error.line}\nYour draft is kept.", "Could not save", "error"), error) from error
        except CompactionError as error:
            cancelled = error.code == COMPACTION_CANCELLED
            notice = Notice(
                f"{error.line}\nNothing was sent; your draft is kept.",
                "Cancelled" if cancelled else "Not sent",
                "information" if cancelled else "error",
            )
            raise NotSent(notice, error, moved=True) from error
        failed = agent.take_compaction_error()
        if failed is not None:
            said = f"{failed.line}\nThe message was sent anyway: it fits the window."
            told.append(Notice(said, "Compaction failed", "warning"))
        return told

    def turn_ended(self) -> list[Notice]:
        """What to tell the user once a reply ended: a compaction that failed during the turn, and the
        model's error (once)."""
        agent = self._workspace.agent
        told: list[Notice] = []
        failed = agent.take_compaction_error()
        if failed is not None:
            told.append(Notice(failed.line, "Compaction failed", "warning"))
        error = agent.last_error
        if error is not None and error is not self._reported:
            self._reported = error
            told.append(Notice(error.line, "The model failed", "error"))
        return told
