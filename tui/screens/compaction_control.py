"""Compaction on demand (F8 or the palette): the agent compacts the target's older history into a
checkpoint, the prompt's title shows its progress, Escape cancels it (the screen's escape calls
the agent's ``cancel``). Compaction itself runs in ``core`` (``AgentLoop.compact_now``).
"""

from __future__ import annotations

from textual.message import Message

from core import SessionQueryError
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from tui.screens.prompt_status import CompactionShown
from tui.services.context_view import draft_context, tokens
from tui.services.host import Host
from tui.services.workspace import Workspace


class CompactionControl:
    """Compaction on demand, for the chat screen.

    Args:
        host: the screen (its worker, notifications, the messages below).
        workspace: whose target agent compacts.

    Posts ``CompactionShown`` while it runs (the prompt shows its progress) and ``Compacted`` once
    it succeeded (the screen shows the shorter history). The screen refuses it while a send is
    being prepared.
    """

    class Compacted(Message):
        """The target's older history became a checkpoint."""

    def __init__(self, host: Host, workspace: Workspace) -> None:
        self._host = host
        self._workspace = workspace

    def compact(self) -> None:
        """Compact the session's older history into a checkpoint now (Esc cancels)."""
        if self._workspace.agent.status != "idle":
            self._host.notify("Wait for the reply to finish, then compact.", title="Compact history")
            return
        self._host.run_worker(self._compact_now(), group="compact", exclusive=True)

    async def _compact_now(self) -> None:
        agent = self._workspace.agent
        notify = self._host.notify
        before = draft_context(agent, [], ()).used
        self._host.post_message(CompactionShown(True))
        try:
            result = await agent.compact_now()
        except CompactionError as error:
            cancelled = error.code == COMPACTION_CANCELLED
            notify(
                error.line,
                severity="information" if cancelled else "error",
                title="Compaction cancelled" if cancelled else "Could not compact",
                markup=False,
            )
            return
        except SessionQueryError as error:
            notify(error.line, severity="error", title="Could not compact", markup=False)
            return
        finally:
            self._host.post_message(CompactionShown(False))
        after = draft_context(agent, [], ()).used
        notify(
            f"{len(result.shadowed_seqs)} messages are now one checkpoint: context {tokens(before)} → {tokens(after)}.",
            title="Compacted",
            markup=False,
        )
        self._host.post_message(self.Compacted())
