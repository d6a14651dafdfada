"""Compaction on demand (F8 or the palette): the agent compacts the target's older history into a
checkpoint, the prompt's title shows its progress, Escape cancels it (the screen's escape calls
the agent's ``cancel``). Compaction itself runs in ``core`` (``AgentLoop.compact_now``).
"""

from __future__ import annotations

from textual.message import Message

from core import SessionQueryError
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from tui.screens.prompt_status import PromptStatus
from tui.services.context_view import draft_context, tokens
from tui.services.host import Host
from tui.services.workspace import Workspace


class CompactionControl:
    """Compaction on demand, for the chat screen.

    Args:
        host: the screen (its worker and notifications).
        workspace: whose target agent compacts.
        status: the prompt's title (progress, and whether a send is being prepared).

    Posts ``Compacted`` to the host once a compaction succeeded (the screen shows the shorter history).
    """

    class Compacted(Message):
        """The target's older history became a checkpoint."""

    def __init__(self, host: Host, workspace: Workspace, status: PromptStatus) -> None:
        self._host = host
        self._workspace = workspace
        self._status = status

    def compact(self) -> None:
        """Compact the session's older history into a checkpoint now (Esc cancels)."""
        if self._workspace.agent.status != "idle" or self._status.preparing:
            self._host.notify("Wait for the reply to finish, then compact.", title="Compact history")
            return
        self._host.run_worker(self._compact_now(), group="compact", exclusive=True)

    async def _compact_now(self) -> None:
        agent = self._workspace.agent
        notify = self._host.notify
        before = draft_context(agent, [], ()).used
        self._status.watch_compaction(True)
        try:
            result = await agent.compact_now()
        except CompactionError as error:
            cancelled = error.code == COMPACTION_CANCELLED
            notify(
                f"{error.message} ({error.code})",
                severity="information" if cancelled else "error",
                title="Compaction cancelled" if cancelled else "Could not compact",
                markup=False,
            )
            return
        except SessionQueryError as error:
            notify(f"{error.message} ({error.code})", severity="error", title="Could not compact", markup=False)
            return
        finally:
            self._status.watch_compaction(False)
        after = draft_context(agent, [], ()).used
        notify(
            f"{len(result.shadowed_seqs)} messages are now one checkpoint: context {tokens(before)} → {tokens(after)}.",
            title="Compacted",
            markup=False,
        )
        self._host.post_message(self.Compacted())
