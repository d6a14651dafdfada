"""The prompt's title: what is going on (compacting, with its progress; preparing the references;
or ready, with the keys), and the ``-compacting`` / ``-preparing`` classes its border colour follows."""

from __future__ import annotations

from textual.timer import Timer

from core.agent.compaction import CompactionProgress
from tui.services.host import Host
from tui.services.workspace import Workspace
from tui.widgets.prompt import PromptArea

PROMPT_TITLE = "Prompt · Enter sends · Ctrl+J newline · @ references a session"
PREPARING_TITLE = "Preparing referenced sessions… · Esc cancels"
COMPACTION_POLL = 0.1
"""Seconds between two looks at a running compaction's progress."""


def compaction_title(progress: CompactionProgress) -> str:
    """The prompt's title while a compaction runs."""
    part = f" · part {progress.part} of {progress.parts}" if progress.parts > 1 else ""
    messages = f" {progress.messages} messages" if progress.messages else ""
    return f"Compacting{messages} into a checkpoint{part}… · Esc cancels"


class PromptStatus:
    """The prompt's title for the chat screen.

    Args:
        host: the screen (the poll timer while a compaction runs).
        workspace: whose target agent may be compacting.
        prompt: the prompt whose title and classes it sets.
    """

    def __init__(self, host: Host, workspace: Workspace, prompt: PromptArea) -> None:
        self._host = host
        self._workspace = workspace
        self._prompt = prompt
        self.preparing = False
        """Whether the draft's references are being prepared (set by the sender)."""
        self._timer: Timer | None = None

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
        """Poll the agent's compaction progress into the title while ``on``."""
        if on and self._timer is None:
            self._timer = self._host.set_interval(COMPACTION_POLL, self.show)
        elif not on and self._timer is not None:
            self._timer.stop()
            self._timer = None
            self.show()
