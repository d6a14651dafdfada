"""The chat screen's compaction controls: F8 / the palette, progress in the prompt's title, Esc.

A mixin of ``tui.chat.ChatScreen`` (the screen provides ``workspace``, ``prompt``, ``preparing``,
``notify`` and the rest); compaction itself runs in ``core`` (``AgentLoop.compact_now``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work
from textual.timer import Timer

from core import SessionQueryError
from core.agent.compaction import COMPACTION_CANCELLED, CompactionError
from tui.screens.screen_typing import MixedIntoScreen
from tui.services.context_view import draft_context, tokens

if TYPE_CHECKING:
    from tui.services.workspace import Workspace
    from tui.widgets.prompt import PromptArea

PROMPT_TITLE = "Prompt · Enter sends · Ctrl+J newline · @ references a session"
PREPARING_TITLE = "Preparing referenced sessions… · Esc cancels"


def compaction_title(progress: Any) -> str:
    """The prompt's title while a compaction runs."""
    part = f" · part {progress.part} of {progress.parts}" if progress.parts > 1 else ""
    messages = f" {progress.messages} messages" if progress.messages else ""
    return f"Compacting{messages} into a checkpoint{part}… · Esc cancels"


class CompactionControls(MixedIntoScreen):
    """Compaction on demand and its progress, for the chat screen."""

    workspace: Workspace
    preparing: bool
    _compaction_timer: Timer | None = None

    if TYPE_CHECKING:  # the screen's, for the type checker only (a stub here would shadow them)

        @property
        def prompt(self) -> PromptArea: ...
        def schedule_preview(self, delay: float = ...) -> None: ...
        def _show_target(self) -> None: ...

    def prompt_title(self) -> None:
        """Set the prompt's title for what is going on: compacting, preparing, or ready."""
        progress = self.workspace.agent.compacting
        prompt = self.prompt
        prompt.set_class(progress is not None, "-compacting")
        prompt.set_class(self.preparing and progress is None, "-preparing")
        if progress is not None:
            prompt.border_title = compaction_title(progress)
        else:
            prompt.border_title = PREPARING_TITLE if self.preparing else PROMPT_TITLE

    def watch_compaction(self, on: bool) -> None:
        """Poll the agent's compaction progress into the prompt's title while ``on``."""
        if on and self._compaction_timer is None:
            self._compaction_timer = self.set_interval(0.1, self.prompt_title)
        elif not on and self._compaction_timer is not None:
            self._compaction_timer.stop()
            self._compaction_timer = None
            self.prompt_title()

    def action_compact(self) -> None:
        """Compact the session's older history into a checkpoint now (Esc cancels)."""
        if self.workspace.agent.status != "idle" or self.preparing:
            self.notify("Wait for the reply to finish, then compact.", title="Compact history")
            return
        self._compact_now()

    @work(exclusive=True, group="compact")
    async def _compact_now(self) -> None:
        agent = self.workspace.agent
        notify = self.notify
        before = draft_context(agent, [], ()).used
        self.watch_compaction(True)
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
            self.watch_compaction(False)
        after = draft_context(agent, [], ()).used
        notify(
            f"{len(result.shadowed_seqs)} messages are now one checkpoint: context {tokens(before)} → {tokens(after)}.",
            title="Compacted",
            markup=False,
        )
        self._show_target()
        self.schedule_preview(0)
