"""``Turns``: the target agent's turns the chat screen starts, run in this part's own workers: sending
the draft (its references prepared, then sent; Escape cancels the preparing) and compacting the
history on demand (F8). It holds no view (``display: none``); ``preparing`` and ``compacting`` are
its reactives, which the screen shows in the prompt's title. What became of a draft it posts
(``Sent``, ``Kept``), and ``Moved`` when the target's history changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import work
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from core import AbortController
from tui.screens.compaction_control import CompactionControl
from tui.screens.sender import NotSent, Sender
from tui.services.notice import Notice
from tui.services.workspace import Workspace


class Turns(Widget):
    """Sending and compacting, for the chat screen.

    Args:
        workspace: the target session and its agent.
    """

    DEFAULT_CSS = "Turns { display: none; }"

    preparing = reactive(False, init=False)
    """Whether a send is being prepared: its references, or a compaction before it (Esc cancels it)."""
    compacting = reactive(False, init=False)
    """Whether the target's agent compacts its history (the prompt's title shows how far)."""

    @dataclass
    class Sent(Message):
        """``text`` went to the model (the prompt lets it go if it still holds it)."""

        text: str

    @dataclass
    class Kept(Message):
        """Nothing of ``text`` was sent: the prompt gets it back if it was emptied meanwhile."""

        text: str

    class Moved(Message):
        """The target's history changed (a compaction, or one cancelled before a send)."""

    def __init__(self, workspace: Workspace, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sender = Sender(workspace)
        self.compaction = CompactionControl(workspace)
        self._abort: AbortController | None = None

    def cancel_preparing(self) -> bool:
        """Escape while the references are prepared: stop it (nothing is sent); whether it was."""
        if self.preparing and self._abort is not None:
            self._abort.abort("cancelled by the user")
            return True
        return False

    def send(self, text: str) -> None:
        """Prepare and send ``text``; nothing of it is sent when preparing fails or is cancelled.
        It is ``preparing`` from now on, before its worker starts: a compaction asked for meanwhile
        (F8 right after Enter) is refused, never raced."""
        self._abort = AbortController()
        self.preparing = True
        self._send(text, self._abort)

    @work(exclusive=True, group="send")
    async def _send(self, text: str, controller: AbortController) -> None:
        try:
            prepared = await self.sender.prepare(text, controller.signal)
            self._abort = None
            # Still "preparing" while a compaction runs before the send: a second Enter is refused,
            # Escape cancels the compaction, and its progress is in the prompt's title.
            told = await self.sender.deliver(prepared, lambda on: setattr(self, "compacting", on))
        except NotSent as refusal:
            self._tell([refusal.notice])
            self.post_message(self.Kept(text))
            if refusal.moved:
                self.post_message(self.Moved())
            return
        finally:
            self._abort = None
            self.preparing = False
        self._tell(told)
        self.post_message(self.Sent(text))

    def compact(self) -> None:
        """Compact the target's older history into a checkpoint now (Esc cancels the agent's run)."""
        refused = self.compaction.refusal()
        if self.preparing or refused is not None:
            self._tell([refused or Notice("Wait for the reply to finish, then compact.", "Compact history")])
            return
        self._compact()

    @work(exclusive=True, group="compact")
    async def _compact(self) -> None:
        self.compacting = True
        try:
            notice, compacted = await self.compaction.compact()
        finally:
            self.compacting = False
        self._tell([notice])
        if compacted:
            self.post_message(self.Moved())

    def turn_ended(self) -> None:
        """A reply ended: say what went wrong during it (a compaction, the model)."""
        self._tell(self.sender.turn_ended())

    def _tell(self, notices: list[Notice]) -> None:
        for notice in notices:
            notice.show(self.app)
