"""``Handoffs``: the chat screen's hand-offs ("Continue in …" from the palette, a sidebar row's menu;
"Resume in …" there for another agent's session),
run in this part's own worker. It holds no view (``display: none``): the briefing is built off the
UI thread (``HandoffControl``), shown in ``HandoffScreen`` and awaited with ``push_screen_wait``; then
the agent runs in this terminal with the app suspended, or sessionref's new session becomes the
target. It tells the screen what became of it (``Opened``, ``Handed``).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import work
from textual.message import Message
from textual.widget import Widget

from core.handoff.agents import AGENTS, Agent
from core.handoff.briefing import HandoffError
from core.sessions.sources.registry import AGENTS as SOURCES
from tui.screens.handoff_control import HandoffControl
from tui.screens.handoff_dialog import ContinueMenu, HandoffScreen
from tui.services.notice import Notice
from tui.services.workspace import Workspace


class Handoffs(Widget):
    """Hand-offs, for the chat screen.

    Args:
        workspace: the catalog, the store, the reference settings, the target.
    """

    DEFAULT_CSS = "Handoffs { display: none; }"

    @dataclass
    class Opened(Message):
        """A row's menu chose Open: ``session_id`` should become the target."""

        session_id: str

    @dataclass
    class Handed(Message):
        """A session was handed on: to sessionref (its new session is the target and ``draft`` its
        prompt's first text), or to an agent that ran (``draft`` is ``None``)."""

        draft: str | None

    def __init__(self, workspace: Workspace, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.control = HandoffControl(workspace)
        self._workspace = workspace

    def agents(self) -> list[Agent]:
        """The agents on PATH (sessionref always), in menu order."""
        return self.control.agents()

    @work(exclusive=True, group="handoff")
    async def menu(self, session_id: str) -> None:
        """A sidebar row's menu: Open, and Continue in each agent found."""
        can_open = self._workspace.catalog.is_own(session_id)
        title, lines = self.control.menu_lines(session_id)
        agent = next((agent for agent in SOURCES if session_id.startswith(agent.prefix)), None)
        resume = agent.label if agent is not None and not can_open else None
        choice = await self.app.push_screen_wait(ContinueMenu(title, self.agents(), can_open, lines, resume))
        if choice == "open":
            self.post_message(self.Opened(session_id))
        elif choice == "resume":
            self._tell(self.control.resume(self.app, session_id))
        elif choice in AGENTS:
            await self._hand_off(session_id, AGENTS[choice])

    @work(exclusive=True, group="handoff")
    async def resume(self, session_id: str) -> None:
        """Open another agent's session in that agent, in its folder (the palette's "Resume in …")."""
        self._tell(self.control.resume(self.app, session_id))

    @work(exclusive=True, group="handoff")
    async def hand_off(self, session_id: str, agent: str) -> None:
        """Hand ``session_id`` to ``agent``: its briefing (built off the UI thread), shown for the
        user to start or cancel, then the agent run in this terminal (or a new session here)."""
        await self._hand_off(session_id, AGENTS[agent])

    async def _hand_off(self, session_id: str, agent: Agent) -> None:
        control = self.control
        try:
            briefing = await control.briefing(session_id, agent)
        except HandoffError as error:
            self._tell([Notice(error.line, "Cannot hand off", "error")])
            return
        goal = await self.app.push_screen_wait(HandoffScreen(briefing, agent))
        if goal is None:
            return
        briefing = briefing.with_goal(goal)
        if agent.build is None:  # sessionref: a new session here, its draft referencing the source
            draft, told = control.into_sessionref(briefing)
            self.post_message(self.Handed(draft))
        else:
            told = control.run_agent(self.app, briefing, agent)
            self.post_message(self.Handed(None))
        self._tell(told)

    def _tell(self, notices: list[Notice]) -> None:
        for notice in notices:
            notice.show(self.app)
