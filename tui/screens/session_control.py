"""Which session the chat writes: switch (sidebar, palette), start a new one, rename it. Another
tool's session and a teammate's are never opened for writing: the user is told to reference them.
"""

from __future__ import annotations

from textual.message import Message

from core import SessionQueryError
from tui.services.host import Host
from tui.services.text import visible
from tui.services.workspace import Workspace


class SessionControl:
    """The target session, for the chat screen.

    It changes the workspace's target and posts what became of it to the screen: ``Switched`` (another
    session is the target: the screen follows it) and ``Renamed`` (the target's title changed).

    Args:
        host: the screen (notifications, the messages above).
        workspace: the store and the target.
    """

    class Switched(Message):
        """Another session became the target (the draft stays)."""

    class Renamed(Message):
        """The target's title changed."""

    def __init__(self, host: Host, workspace: Workspace) -> None:
        self._host = host
        self._workspace = workspace

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
            notify(error.line, severity="error", title="Cannot open session")
            return
        self._host.post_message(self.Switched())

    def new_session(self) -> None:
        """Start a new session in the launch cwd and make it the target."""
        self._workspace.new_session()
        self._host.post_message(self.Switched())
        self._host.notify("New session started.", title="Sessions")

    @property
    def title(self) -> str:
        """The target's title ("" before it has one): what the rename dialog starts from."""
        title = self._workspace.session.title
        return title.title if title is not None else ""

    def rename(self, title: str | None) -> None:
        """Write ``title`` as the target's ``session/title`` event (``None``: the dialog was dismissed)."""
        if title is None:
            return
        try:
            self._workspace.rename(title)
        except SessionQueryError as error:
            self._host.notify(error.line, severity="error", title="Cannot rename")
            return
        self._host.post_message(self.Renamed())
