"""The prompt's title: what is going on (compacting, with its progress; preparing the references;
or ready, with the keys), and the ``-compacting`` / ``-preparing`` classes its border colour follows."""

from __future__ import annotations

from collections.abc import Callable

from core.agent.compaction import CompactionProgress
from tui.services.workspace import Workspace
from tui.widgets.prompt import PromptArea

PROMPT_TITLE = "Prompt · Enter sends · Ctrl+J newline · @ references a session"
PREPARING_TITLE = "Preparing referenced sessions… · Esc cancels"


def compaction_title(progress: CompactionProgress) -> str:
    """The prompt's title while a compaction runs."""
    part = f" · part {progress.part} of {progress.parts}" if progress.parts > 1 else ""
    messages = f" {progress.messages} messages" if progress.messages else ""
    return f"Compacting{messages} into a checkpoint{part}… · Esc cancels"


class PromptStatus:
    """The prompt's title for the chat screen.

    Args:
        workspace: whose target agent may be compacting.
        prompt: the prompt whose title and classes it sets.
    """

    def __init__(self, workspace: Workspace, prompt: PromptArea) -> None:
        self._workspace = workspace
        self._prompt = prompt
        self.preparing = False
        """Whether the draft's references are being prepared (set by the sender)."""
        self._unsubscribe: Callable[[], None] | None = None

    def show(self) -> None:
        """Set the prompt's title for what is going on: compacting, preparing, or ready."""
        progress = self._workspace.agent.compacting
        prompt = self._prompt
        prompt.set_class(progress is not None, "-compacting")
        prompt.set_class(self.preparing and progress is None, "-preparing")
        if progress is not None:
            prompt.border_title = compaction_title(progress)
        else:
            prompt.border_title = PREPARING_TITLE if self.preparing else PROMPT_TITLE

    def set_preparing(self, preparing: bool) -> None:
        """Say whether references are being prepared, in the title."""
        self.preparing = preparing
        self.show()

    def watch_compaction(self, on: bool) -> None:
        """While ``on``, show the agent's compaction progress in the title as the agent tells it."""
        if on and self._unsubscribe is None:
            self._unsubscribe = self._workspace.agent.changed.subscribe(lambda _news: self.show())
        elif not on and self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
            self.show()
