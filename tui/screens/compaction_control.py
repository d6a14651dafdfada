"""Compaction on demand (F8 or the palette): the agent compacts the target's older history into a
checkpoint, the prompt's title shows its progress, Escape cancels it (the screen's escape calls
the agent's ``cancel``). Compaction itself runs in ``core`` (``AgentLoop.compact_now``); the chat
screen runs it in its compaction worker.
"""

from __future__ import annotations

from core import SessionQueryError
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from tui.services.context_view import draft_context, tokens
from tui.services.notice import Notice
from tui.services.workspace import Workspace


class CompactionControl:
    """Compaction on demand, for the chat screen.

    Args:
        workspace: whose target agent compacts.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def refusal(self) -> Notice | None:
        """Why compaction cannot start now (a reply streams), or ``None``."""
        if self._workspace.agent.status != "idle":
            return Notice("Wait for the reply to finish, then compact.", "Compact history")
        return None

    async def compact(self) -> tuple[Notice, bool]:
        """Compact the target's older history now: what to tell the user, and whether it compacted."""
        agent = self._workspace.agent
        before = draft_context(agent, [], ()).used
        try:
            result = await agent.compact_now()
        except CompactionError as error:
            cancelled = error.code == COMPACTION_CANCELLED
            title = "Compaction cancelled" if cancelled else "Could not compact"
            return Notice(error.line, title, "information" if cancelled else "error"), False
        except SessionQueryError as error:
            return Notice(error.line, "Could not compact", "error"), False
        after = draft_context(agent, [], ()).used
        count = len(result.shadowed_seqs)
        message = f"{count} messages are now one checkpoint: context {tokens(before)} → {tokens(after)}."
        return Notice(message, "Compacted"), True
