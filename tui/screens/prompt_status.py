"""What is going on around the draft (compacting, with its progress; preparing the references; or
neither), told to the prompt as its ``mode``, which it shows in its title and border."""

from __future__ import annotations

from collections.abc import Callable

from tui.services.workspace import Workspace
from tui.widgets.prompt import PromptArea, PromptMode


class PromptStatus:
    """What is going on around the draft, for the chat screen to tell its prompt.

    Args:
        workspace: whose target agent may be compacting.
        prompt: the prompt it tells (its ``mode``).
    """

    def __init__(self, workspace: Workspace, prompt: PromptArea) -> None:
        self._workspace = workspace
        self._prompt = prompt
        self.preparing = False
        """Whether the draft's references are being prepared (the screen's ``preparing``)."""
        self._unsubscribe: Callable[[], None] | None = None

    def show(self) -> None:
        """Tell the prompt what is going on (compacting, preparing, or neither); it shows it."""
        self._prompt.mode = PromptMode(self.preparing, self._workspace.agent.compacting)

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
