"""Which session the chat writes: switch (sidebar, palette), start a new one, rename it. Another
tool's session and a teammate's are never opened for writing: the user is told to reference them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core import SessionQueryError
from tui.screens.dialogs import RenameScreen
from tui.screens.sender import Sender
from tui.services.host import Host
from tui.services.text import visible
from tui.services.workspace import Workspace
from tui.widgets.prompt import PromptArea


class SessionControl:
    """The target session, for the chat screen.

    Args:
        host: the screen (notifications).
        workspace: the store and the target.
        prompt: focused again after a switch (the draft stays).
        sender: stops following one session's reply and follows another's.
        push_screen: opens the rename dialog (with a callback for its answer).
        show_target: repaint what shows the target.
        schedule_preview: recompute the preview for the new target.
    """

    def __init__(
        self,
        host: Host,
        workspace: Workspace,
        prompt: PromptArea,
        sender: Sender,
        *,
        push_screen: Callable[[RenameScreen, Callable[[str | None], Any]], Any],
        show_target: Callable[[], None],
        schedule_preview: Callable[[float], None],
    ) -> None:
        self._host = host
        self._workspace = workspace
        self._prompt = prompt
        self._sender = sender
        self._push_screen = push_screen
        self._show_target = show_target
        self._schedule_preview = schedule_preview

    def switch_to(self, session_id: str) -> None:
        """Make ``session_id`` the target (keeps the draft)."""
        workspace = self._workspace
        notify = self._host.notify
        if session_id == workspace.session.id:
            return
        source = workspace.catalog.source_of(session_id)
        if source is not None:
            # Another agent's session is never written here: it can only be referenced.
            notify(
                f"{source.name} sessions are read-only here: type @ in the prompt to reference it.",
                title="Cannot open session",
            )
            return
        owner = workspace.catalog.owner_of(session_id)
        if owner is not None:
            # A teammate's session: the database would refuse a write anyway; say why up front.
            notify(
                f"{visible(owner)}'s sessions are read-only here: type @ in the prompt to reference it.",
                title="Cannot open session",
            )
            return
        try:
            workspace.open_session(session_id)
        except SessionQueryError as error:
            notify(f"{error.message} ({error.code})", severity="error", title="Cannot open session")
            return
        self._sender.stop_following()
        self._show_target()
        if workspace.agent.status != "idle":
            self._sender.follow_stream()
        self._schedule_preview(0)
        self._prompt.focus()

    def new_session(self) -> None:
        """Start a new session in the launch cwd and make it the target."""
        self._workspace.new_session()
        self._show_target()
        self._schedule_preview(0)
        self._prompt.focus()
        self._host.notify("New session started.", title="Sessions")

    def rename(self) -> None:
        """Ask for a new title and write it as a ``session/title`` event."""
        session = self._workspace.session
        current = session.title.title if session.title is not None else ""

        def rename(title: str | None) -> None:
            if title is None:
                return
            try:
                self._workspace.rename(title)
            except SessionQueryError as error:
                self._host.notify(f"{error.message} ({error.code})", severity="error", title="Cannot rename")
                return
            self._show_target()

        self._push_screen(RenameScreen(current), rename)
