"""Continue a session in another agent from the app ("Continue in …": the palette, a sidebar row's menu).

The briefing is built off the UI thread (``core.handoff``), shown in ``HandoffScreen`` (goal editable);
on Start the app suspends, the agent runs in this terminal in the session's folder with ``sessionref
mcp`` attached for that run, and the hand-off is noted (in the session's log, or beside the store).
``sessionref`` as the target starts a new session here whose draft references the source.
"""

from __future__ import annotations

import asyncio
from functools import partial

from textual.app import SuspendNotSupported
from textual.message import Message
from textual.screen import Screen

from core.errors import SessionQueryError
from core.handoff.agents import AGENTS, Agent, ToolServer, installed_agents
from core.handoff.briefing import Briefing, HandoffError, build_briefing
from core.handoff.record import Handoff, handoffs_beside, now_ms, record_handoff, side_file_of
from core.reference.uri import format_session_reference_mention
from tui.screens.handoff_dialog import ContinueMenu, HandoffScreen
from tui.services.text import age
from tui.services.workspace import Workspace

PAST_SHOWN = 3
"""How many earlier hand-offs a row's menu lists (the newest first)."""


class HandoffControl:
    """Hand-offs, for the chat screen: it posts ``Handed`` once an agent ran (or sessionref's new
    session is the target), so the screen repaints."""

    class Handed(Message):
        """A session was handed on (the transcript shows it)."""

        def __init__(self, new_target: bool) -> None:
            super().__init__()
            self.new_target = new_target

    def __init__(self, screen: Screen[None], workspace: Workspace) -> None:
        self._screen = screen
        self._workspace = workspace

    @staticmethod
    def agents() -> list[Agent]:
        """The agents on PATH (sessionref always), in menu order."""
        return installed_agents()

    def menu(self, session_id: str, can_open: bool, on_open: partial[None] | None = None) -> None:
        """A sidebar row's menu: Open, and Continue in each agent found."""
        workspace = self._workspace
        title = workspace.catalog.titles.title(session_id) or session_id
        # Where it went before, as noted beside the store (another tool's session, or one another
        # process was writing; a session of the store shows its own notes in its transcript).
        side = side_file_of(workspace.store)
        past = handoffs_beside(side, session_id)[-PAST_SHOWN:] if side is not None else []
        now = workspace.clock()
        lines = [f"→ {age(handoff.at, now)} ago, {handoff.summary}" for handoff in reversed(past)]

        def chosen(choice: str | None) -> None:
            if choice == "open" and on_open is not None:
                on_open()
            elif choice in AGENTS:
                self.begin(session_id, choice)

        self._screen.app.push_screen(ContinueMenu(title, self.agents(), can_open, lines), chosen)

    def begin(self, session_id: str, agent_name: str) -> None:
        """Build the briefing for handing ``session_id`` to ``agent_name`` (off the UI thread), then ask."""
        agent = AGENTS[agent_name]
        workspace = self._workspace
        app = self._screen.app

        def build() -> None:
            try:
                briefing = asyncio.run(
                    build_briefing(
                        workspace.catalog,
                        session_id,
                        None,
                        config=workspace.service.config,
                        redact=workspace.service.redact,
                        tools=agent.build is not None,
                    )
                )
            except HandoffError as error:
                app.call_from_thread(app.notify, error.line, severity="error", title="Cannot hand off")
                return
            dialog = HandoffScreen(briefing, agent)
            app.call_from_thread(app.push_screen, dialog, partial(self._confirmed, briefing, agent))

        self._screen.run_worker(build, name="handoff", group="handoff", exclusive=True, thread=True)

    def _confirmed(self, briefing: Briefing, agent: Agent, goal: str | None) -> None:
        if goal is None:
            return
        briefing = briefing.with_goal(goal)
        workspace = self._workspace
        app = self._screen.app
        session_id = briefing.session_id
        own = workspace.catalog.is_own(session_id)
        handoff = Handoff(session_id, agent.name, briefing.goal, now_ms(), False, briefing.size)
        side = side_file_of(workspace.store)
        if agent.build is None:  # sessionref: a new session here, its draft referencing the source
            self._note(handoff, side, own)
            workspace.new_session(briefing.folder)
            mention = format_session_reference_mention(session_id, briefing.title)
            self._screen.post_message(self.Handed(new_target=True))
            prompt = getattr(self._screen, "prompt", None)
            if prompt is not None:
                prompt.offer_draft(f"{mention} {briefing.goal}")
            return
        server = ToolServer.of_store(workspace.store, redact=briefing.redacted)
        if server is None:
            app.notify("This store lives in memory only: no other program can read it.", title="Cannot hand off")
            return
        try:
            launch = agent.launch(briefing.text, briefing.folder, server, headless=False)
        except HandoffError as error:
            app.notify(error.line, severity="error", title="Cannot hand off")
            return
        try:
            with app.suspend():
                try:
                    code: int | str = launch.run(partial(self._note, handoff, side, own))
                except OSError as error:
                    code = f"could not start: {error.strerror or error}"
        except SuspendNotSupported:
            app.notify("This terminal cannot hand itself to another program (a browser?).", title="Cannot hand off")
            return
        finally:
            launch.cleanup()
        self._screen.post_message(self.Handed(new_target=False))
        app.notify(f"{agent.label} exited {code}.", title="Hand-off")

    def _note(self, handoff: Handoff, side: str | None, own: bool) -> None:
        workspace = self._workspace
        try:
            record_handoff(workspace.store, handoff, side, own=own, writing=workspace.session)
        except (OSError, SessionQueryError) as error:
            self._screen.app.notify(f"The hand-off could not be noted: {error}", severity="warning", title="Hand-off")
