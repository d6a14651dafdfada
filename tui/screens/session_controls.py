"""The chat screen's session controls: switch (sidebar, palette), new, rename, and the pane toggles.

A mixin of ``tui.chat.ChatScreen``, which provides ``workspace``, ``prompt``, the stream timer and the
transcript refresh (``_show_target``, ``_follow_stream``, ``schedule_preview``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core import SessionQueryError
from tui.screens.dialogs import RenameScreen
from tui.screens.screen_typing import MixedIntoScreen
from tui.services.text import visible
from tui.widgets.preview import PreviewPane
from tui.widgets.sidebar import SessionSidebar

if TYPE_CHECKING:
    from tui.services.workspace import Workspace
    from tui.widgets.prompt import PromptArea


class SessionControls(MixedIntoScreen):
    """Which session is the target, and what of the screen shows."""

    workspace: Workspace
    _stream_timer: Any

    if TYPE_CHECKING:  # the screen's, for the type checker only (a stub here would shadow them)

        @property
        def prompt(self) -> PromptArea: ...
        def schedule_preview(self, delay: float = ...) -> None: ...
        def _show_target(self) -> None: ...
        def _follow_stream(self) -> None: ...

    def on_session_sidebar_chosen(self, event: SessionSidebar.Chosen) -> None:
        self.switch_to(event.session_id)

    def switch_to(self, session_id: str) -> None:
        """Make ``session_id`` the target (keeps the draft)."""
        workspace = self.workspace
        if session_id == workspace.session.id:
            return
        source = workspace.catalog.source_of(session_id)
        if source is not None:
            # Another agent's session is never written here: it can only be referenced.
            self.notify(
                f"{source.name} sessions are read-only here: type @ in the prompt to reference it.",
                title="Cannot open session",
            )
            return
        owner = workspace.catalog.owner_of(session_id)
        if owner is not None:
            # A teammate's session: the database would refuse a write anyway; say why up front.
            self.notify(
                f"{visible(owner)}'s sessions are read-only here: type @ in the prompt to reference it.",
                title="Cannot open session",
            )
            return
        try:
            workspace.open_session(session_id)
        except SessionQueryError as error:
            self.notify(f"{error.message} ({error.code})", severity="error", title="Cannot open session")
            return
        if self._stream_timer is not None:
            self._stream_timer.stop()
            self._stream_timer = None
        self._show_target()
        if workspace.agent.status != "idle":
            self._follow_stream()
        self.schedule_preview(0)
        self.prompt.focus()

    def action_new_session(self) -> None:
        """Start a new session in the launch cwd and make it the target."""
        workspace = self.workspace
        workspace.new_session()
        self._show_target()
        self.schedule_preview(0)
        self.prompt.focus()
        self.notify("New session started.", title="Sessions")

    def action_rename_session(self) -> None:
        """Ask for a new title and write it as a ``session/title`` event."""
        session = self.workspace.session
        current = session.title.title if session.title is not None else ""

        def rename(title: str | None) -> None:
            if title is None:
                return
            try:
                self.workspace.rename(title)
            except SessionQueryError as error:
                self.notify(f"{error.message} ({error.code})", severity="error", title="Cannot rename")
                return
            self._show_target()

        self.app.push_screen(RenameScreen(current), rename)

    def action_toggle_sidebar(self) -> None:
        """Show or hide the sessions sidebar."""
        sidebar = self.query_one(SessionSidebar)
        sidebar.display = not sidebar.display

    def action_toggle_preview(self) -> None:
        """Show or hide the preview pane."""
        pane = self.query_one(PreviewPane)
        pane.display = not pane.display
