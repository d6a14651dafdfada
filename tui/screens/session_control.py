"""Which session the chat writes: switch (sidebar, palette), start a new one, rename it. Another
tool's session and a teammate's are never opened for writing: the user is told to reference them.
"""

from __future__ import annotations

from core import SessionQueryError
from tui.services.notice import Notice
from tui.services.text import visible
from tui.services.workspace import Workspace


class SessionControl:
    """The target session, for the chat screen: each change says what to tell the user, if anything
    (``None``: it was done, and the screen shows the new target).

    Args:
        workspace: the store and the target.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    def switch_to(self, session_id: str) -> Notice | None:
        """Make ``session_id`` the target (keeps the draft); a ``Notice`` when it cannot be."""
        workspace = self._workspace
        source = workspace.catalog.source_of(session_id)
        if source is not None:
            # Another agent's session is never written here: it can only be referenced.
            return Notice(
                f"{source.name} sessions are read-only here: type @ in the prompt to reference it.",
                "Cannot open session",
            )
        owner = workspace.catalog.owner_of(session_id)
        if owner is not None:
            # A teammate's session: the database would refuse a write anyway; say why up front.
            return Notice(
                f"{visible(owner)}'s sessions are read-only here: type @ in the prompt to reference it.",
                "Cannot open session",
            )
        try:
            workspace.open_session(session_id)
        except SessionQueryError as error:
            return Notice(error.line, "Cannot open session", "error")
        return None

    def new_session(self) -> Notice:
        """Start a new session in the launch cwd and make it the target."""
        self._workspace.new_session()
        return Notice("New session started.", "Sessions")

    @property
    def title(self) -> str:
        """The target's title ("" before it has one): what the rename dialog starts from."""
        title = self._workspace.session.title
        return title.title if title is not None else ""

    def rename(self, title: str) -> Notice | None:
        """Write ``title`` as the target's ``session/title`` event; a ``Notice`` when it failed."""
        try:
            self._workspace.rename(title)
        except SessionQueryError as error:
            return Notice(error.line, "Cannot rename", "error")
        return None
