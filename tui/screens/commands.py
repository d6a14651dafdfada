"""The chat screen's command palette providers: its own commands (new session, rename, model view,
compaction, "Continue in …", the panes) and switching to any session of the store by its title or id.
Textual's own commands (themes, keys, quit) stay the app's."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from tui.services.text import markup_escape, visible
from tui.services.workspace import Workspace

MAX_HITS = 30
"""Matches shown for one query (the palette is for jumping, the sidebar for browsing)."""


class CommandsScreen(Protocol):
    """The screen whose palette these providers fill (the chat screen)."""

    workspace: Workspace

    def switch_to(self, session_id: str) -> None:
        """Make ``session_id`` the target."""
        ...

    def palette_commands(self) -> list[SystemCommand]:
        """The screen's own commands, in order."""
        ...

    def continue_in(self, agent: str) -> None: ...
    def resume_in_its_agent(self, session_id: str) -> None: ...
    def action_new_session(self) -> None: ...
    def action_rename_session(self) -> None: ...
    def action_show_model_view(self) -> None: ...
    def action_show_last_received(self) -> None: ...
    def action_compact(self) -> None: ...
    def action_toggle_sidebar(self) -> None: ...
    def action_toggle_preview(self) -> None: ...


def chat_commands(chat: CommandsScreen, agents: list[tuple[str, str]]) -> list[SystemCommand]:
    """The chat screen's own commands, in order; ``agents``: (name, label) of each it can hand to."""
    handing = [
        SystemCommand(
            f"Continue in {label}",
            f"Hand this session to {label}: a briefing you see first, the session tools attached",
            partial(chat.continue_in, name),
        )
        for name, label in agents
    ]
    return [
        SystemCommand("New session", "Start a new session in the launch folder", chat.action_new_session),
        SystemCommand("Rename session", "Give the current session a title", chat.action_rename_session),
        SystemCommand(
            "Show model view", "The exact text the model will receive for the draft", chat.action_show_model_view
        ),
        SystemCommand(
            "Show what the model received",
            "The exact text the model received for the latest message",
            chat.action_show_last_received,
        ),
        SystemCommand(
            "Compact history",
            "Summarize the older messages of this session into a checkpoint (frees context)",
            chat.action_compact,
        ),
        *handing,
        SystemCommand("Toggle sessions sidebar", "Show or hide the session list", chat.action_toggle_sidebar),
        SystemCommand("Toggle preview", "Show or hide the reference preview", chat.action_toggle_preview),
    ]


def _screen(provider: Provider) -> CommandsScreen | None:
    screen = provider.screen
    return screen if hasattr(screen, "palette_commands") and hasattr(screen, "workspace") else None  # type: ignore[return-value]


class ChatCommands(Provider):
    """The chat screen's own commands: discovery lists them all, a query matches their titles."""

    async def discover(self) -> Hits:
        chat = _screen(self)
        for command in chat.palette_commands() if chat is not None else []:
            yield DiscoveryHit(command.title, command.callback, help=command.help)

    async def search(self, query: str) -> Hits:
        chat = _screen(self)
        matcher = self.matcher(query)
        for command in chat.palette_commands() if chat is not None else []:
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(score, matcher.highlight(command.title), command.callback, help=command.help)


class SessionCommands(Provider):
    """``Switch to: <title>`` for every listed session; discovery offers the newest ones."""

    def _entries(self) -> list[tuple[str, str]]:
        chat = _screen(self)
        if chat is None:
            return []
        catalog = chat.workspace.catalog
        current = chat.workspace.session.id
        return [
            (record.header.id, f"Switch to: {visible(catalog.titles.title(record.header.id) or record.header.id)}")
            for record in catalog.records
            if record.header.id != current
        ]

    def _switch(self, session_id: str) -> None:
        chat = _screen(self)
        if chat is not None:
            chat.switch_to(session_id)

    # Titles and ids are data: the hit is a ``Content`` (never parsed as markup) and the help line, which
    # the palette always parses as markup, is escaped.

    async def discover(self) -> Hits:
        for session_id, text in self._entries()[:10]:
            yield DiscoveryHit(
                Content(text), partial(self._switch, session_id), text=text, help=markup_escape(session_id)
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        found = 0
        for session_id, text in self._entries():
            score = matcher.match(f"{text} {session_id}")
            if score > 0:
                display = Content(text)
                _, offsets = matcher.fuzzy_search.match(query, text)
                for offset in offsets:
                    display = display.stylize(matcher.match_style, offset, offset + 1)
                switch = partial(self._switch, session_id)
                yield Hit(score, display, switch, text=text, help=markup_escape(session_id))
                found += 1
                if found >= MAX_HITS:
                    return


class ResumeCommands(Provider):
    """``Resume in <agent>: <title>`` for every listed session of another agent that can resume a
    given session (as ``sessionref resume`` does); found by its title, its agent or its id."""

    def _entries(self) -> list[tuple[str, str]]:
        from core.handoff.resume import RESUME, Resumes
        from core.sessions.sources.registry import AGENTS

        chat = _screen(self)
        if chat is None:
            return []
        catalog = chat.workspace.catalog
        found = []
        for record in catalog.records:
            session_id = record.header.id
            agent = next((agent for agent in AGENTS if session_id.startswith(agent.prefix)), None)
            if agent is not None and isinstance(RESUME[agent.key], Resumes):
                title = visible(catalog.titles.title(session_id) or session_id)
                found.append((session_id, f"Resume in {agent.label}: {title}"))
        return found

    def _resume(self, session_id: str) -> None:
        chat = _screen(self)
        if chat is not None:
            chat.resume_in_its_agent(session_id)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        found = 0
        for session_id, text in self._entries():
            score = matcher.match(f"{text} {session_id}")
            if score > 0:
                resume = partial(self._resume, session_id)
                yield Hit(score, Content(text), resume, text=text, help=markup_escape(session_id))
                found += 1
                if found >= MAX_HITS:
                    return
