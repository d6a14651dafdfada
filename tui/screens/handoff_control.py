"""Continue a session in another agent from the app ("Continue in …": the palette, a sidebar row's menu).

The chat screen runs a hand-off in its own worker: the briefing is built off the UI thread
(``core.handoff``), shown in ``HandoffScreen`` (goal editable, awaited with ``push_screen_wait``);
on Start the app suspends, the agent runs in this terminal in the session's folder with ``sessionref
mcp`` attached for that run, and the hand-off is noted (in the session's log, or beside the store).
``sessionref`` as the target starts a new session here whose draft references the source.
"""

from __future__ import annotations

import asyncio
import os

from textual.app import App, SuspendNotSupported

from core.errors import SessionQueryError
from core.handoff.agents import Agent, ToolServer, installed_agents
from core.handoff.briefing import Briefing, HandoffError, build_briefing
from core.handoff.record import Handoff, handoffs_beside, now_ms, record_handoff, side_file_of
from core.reference.uri import format_session_reference_mention
from tui.services.notice import Notice
from tui.services.text import age
from tui.services.workspace import Workspace

PAST_SHOWN = 3
"""How many earlier hand-offs a row's menu lists (the newest first)."""


class HandoffControl:
    """Hand-offs, for the chat screen (which shows what it returns).

    Args:
        workspace: the catalog, the store, the reference settings, the target.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace

    @staticmethod
    def agents() -> list[Agent]:
        """The agents on PATH (sessionref always), in menu order."""
        return installed_agents()

    def menu_lines(self, session_id: str) -> tuple[str, list[str]]:
        """A sidebar row's menu: its session's title, and where it went before (newest first) as
        noted beside the store (another tool's session, or one another process was writing; a
        session of the store shows its own notes in its transcript)."""
        workspace = self._workspace
        title = workspace.catalog.titles.title(session_id) or session_id
        side = side_file_of(workspace.store)
        past = handoffs_beside(side, session_id)[-PAST_SHOWN:] if side is not None else []
        now = workspace.clock()
        return title, [f"→ {age(handoff.at, now)} ago, {handoff.summary}" for handoff in reversed(past)]

    async def briefing(self, session_id: str, agent: Agent) -> Briefing:
        """The briefing for handing ``session_id`` to ``agent``, built on a thread (it reads the store).

        Raises:
            HandoffError: the session cannot be handed on (its folder is gone, it cannot be read...).
        """
        workspace = self._workspace
        made = build_briefing(
            workspace.catalog,
            session_id,
            None,
            config=workspace.service.config,
            redact=workspace.service.redact,
            tools=agent.build is not None,
        )
        return await asyncio.to_thread(asyncio.run, made)

    def into_sessionref(self, briefing: Briefing) -> tuple[str, list[Notice]]:
        """Hand ``briefing``'s session to sessionref: a new session here is the target. The draft that
        references the source, and what to tell the user."""
        workspace = self._workspace
        session_id = briefing.session_id
        handoff = Handoff(session_id, "sessionref", briefing.goal, now_ms(), False, briefing.size)
        told = self._note(handoff, side_file_of(workspace.store), workspace.catalog.is_own(session_id))
        workspace.new_session(briefing.folder)
        mention = format_session_reference_mention(session_id, briefing.title)
        return f"{mention} {briefing.goal}", told

    def run_agent(self, app: App[object], briefing: Briefing, agent: Agent) -> list[Notice]:
        """Run ``agent`` on ``briefing`` in this terminal (the app suspended meanwhile); what to tell."""
        workspace = self._workspace
        session_id = briefing.session_id
        own = workspace.catalog.is_own(session_id)
        handoff = Handoff(session_id, agent.name, briefing.goal, now_ms(), False, briefing.size)
        side = side_file_of(workspace.store)
        server = ToolServer.of_store(workspace.store, redact=briefing.redacted)
        if server is None:
            return [Notice("This store lives in memory only: no other program can read it.", "Cannot hand off")]
        try:
            launch = agent.launch(briefing.text, briefing.folder, server, headless=False)
        except HandoffError as error:
            return [Notice(error.line, "Cannot hand off", "error")]
        told: list[Notice] = []
        try:
            with app.suspend():
                try:
                    code: int | str = launch.run(lambda: told.extend(self._note(handoff, side, own)))
                except OSError as error:
                    code = f"could not start: {error.strerror or error}"
        except SuspendNotSupported:
            return [Notice("This terminal cannot hand itself to another program (a browser?).", "Cannot hand off")]
        finally:
            launch.cleanup()
        return [*told, Notice(f"{agent.label} exited {code}.", "Hand-off")]

    def resume(self, app: App[object], session_id: str) -> list[Notice]:
        """Open another agent's session in that agent, in its folder, in this terminal (the app
        suspended meanwhile): ``sessionref resume``'s plan; what to tell."""
        from core.handoff.agents import run_in_terminal
        from core.handoff.resume import ResumeError, resume_plan

        try:
            command = resume_plan(session_id)
        except ResumeError as error:
            return [Notice(error.line, "Cannot resume", "warning")]
        record = self._workspace.catalog.record(session_id)
        folder = record.header.cwd if record is not None else None
        where = folder if folder is not None and os.path.isdir(folder) else os.getcwd()
        try:
            with app.suspend():
                try:
                    code: int | str = run_in_terminal(command, where)  # (Ctrl-C is the agent's meanwhile)
                except OSError as error:
                    code = f"could not start: {error.strerror or error}"
        except SuspendNotSupported:
            return [Notice("This terminal cannot hand itself to another program (a browser?).", "Cannot resume")]
        return [Notice(f"{command[0]} exited {code}.", "Resume")]

    def _note(self, handoff: Handoff, side: str | None, own: bool) -> list[Notice]:
        workspace = self._workspace
        try:
            record_handoff(workspace.store, handoff, side, own=own, writing=workspace.session)
        except (OSError, SessionQueryError) as error:
            return [Notice(f"The hand-off could not be noted: {error}", "Hand-off", "warning")]
        return []
