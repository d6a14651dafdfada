"""Command palette provider: switch to any session of the store by its title or id."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from tui.screens.chat import ChatScreen
from tui.services.text import markup_escape, visible

MAX_HITS = 30
"""Matches shown for one query (the palette is for jumping, the sidebar for browsing)."""


class SessionCommands(Provider):
    """``Switch to: <title>`` for every listed session; discovery offers the newest ones.

    The sessions are the chat screen's (the palette may be open over another screen).
    """

    def _chat(self) -> ChatScreen | None:
        return next((screen for screen in self.app.screen_stack if isinstance(screen, ChatScreen)), None)

    def _entries(self) -> list[tuple[str, str]]:
        chat = self._chat()
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
        chat = self._chat()
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
