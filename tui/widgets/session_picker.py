"""The app's `@` picker: a ``MentionPicker`` that answers the prompt's `@query` itself. A lookup runs
in two steps in its own worker (what a keystroke's budget finds at once, then the full message search
behind it once typing pauses); Tab or Enter takes the highlighted session, Escape dismisses it until
the token is edited. The search itself is ``core``'s (``SessionSearch``, through
``Workspace.search_sessions``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from rich.cells import cell_len
from textual import on, work
from textual.message import Message

from core import AbortController, SessionReferenceError, format_session_reference_mention
from core.errors import CANCELLED
from core.search.finder import FIRST_BUDGET, FULL_BUDGET
from tui.services.indexing import MessageIndexer
from tui.services.mentions import PickerQuery
from tui.services.preview_report import problem_of
from tui.services.text import visible
from tui.services.workspace import Workspace
from tui.widgets.picker import MentionPicker
from tui.widgets.prompt import PromptArea

FULL_AFTER = 0.12
"""Seconds of no typing before a keystroke's quick answer is followed by the full search."""
VISIBLE_HITS = 24
"""Picker hits whose titles are fetched when a lookup shows them (the rest load when scrolled to)."""


class SessionPicker(MentionPicker):
    """The `@` picker of the chat screen: it looks up what the prompt's `@query` asks.

    Of the prompt it only reads the draft and the cursor. What it has to say it posts:
    ``MentionChosen`` (the screen's prompt takes the mention) and ``Shown`` (a keystroke's rows
    reached the screen; the app keeps the latency).

    Args:
        workspace: what is searched, and the target session (its cwd comes first).
        indexer: how far message indexing is (said under the rows).
        prompt: the prompt whose `@` queries it answers.
    """

    @dataclass
    class MentionChosen(Message):
        """``mention`` replaces ``query`` on line ``row`` of the prompt."""

        query: PickerQuery
        row: int
        mention: str

    @dataclass
    class Shown(Message):
        """A keystroke's picker rows reached the screen ``seconds`` after the key."""

        seconds: float

    def __init__(
        self, workspace: Workspace, indexer: MessageIndexer, prompt: PromptArea, *, id: str | None = None
    ) -> None:
        super().__init__(id=id, home=workspace.home)
        self._workspace = workspace
        self._indexer = indexer
        self._prompt = prompt
        self._query: PickerQuery | None = None
        self._query_row = 0
        self._dismissed: tuple[int, int, str] | None = None
        """Escape's memory: (row, column of the `@`, draft) of the token whose picker was dismissed."""
        self.lookup_abort: AbortController | None = None
        """The running lookup's controller (a newer keystroke or closing the picker aborts it)."""
        self._lookup_generation = 0
        self._shown_for_key: float | None = None
        self._key_unanswered = False
        self._accept_for: PickerQuery | None = None
        """Tab or Enter came before the rows of this query did: the first of them is accepted."""

    def close(self) -> None:
        """Close the picker and abort its lookup."""
        super().close()
        if self.lookup_abort is not None:
            self.lookup_abort.abort("picker closed")
            self.lookup_abort = None
        self._lookup_generation += 1
        self._key_unanswered = False
        self._accept_for = None

    def dismiss(self) -> None:
        """Escape: close the picker and keep it closed until its token is edited."""
        if self._query is not None:
            self._dismissed = (self._query_row, self._query.start, self._prompt.text)
        self.close()

    def query_changed(self, query: PickerQuery | None, row: int) -> None:
        """The prompt's `@query` changed (``None``: the cursor left it)."""
        self._query, self._query_row = query, row
        if query != self._accept_for:
            self._accept_for = None
        if query is None:
            self.close()
            return
        if self._dismissed is not None:
            if self._dismissed == (row, query.start, self._prompt.text):
                return  # the same token, unedited since Escape: stay closed
            self._dismissed = None
        self._look_up(query)

    def look_again(self) -> None:
        """Look the open picker's query up again (titles that were still loading may be in now)."""
        if self.is_open and self._query is not None:
            self._look_up(self._query, from_key=False)

    def _look_up(self, query: PickerQuery, from_key: bool = True) -> None:
        # A refresh that supersedes a keystroke's lookup before it was shown answers that keystroke.
        from_key = from_key or self._key_unanswered
        self._key_unanswered = from_key
        if self.lookup_abort is not None:
            self.lookup_abort.abort("superseded by a newer keystroke")
        controller = AbortController()
        self.lookup_abort = controller
        self._lookup_generation += 1
        self._lookup(query, controller, self._lookup_generation, from_key)

    @work(exclusive=True, group="picker")
    async def _lookup(self, query: PickerQuery, controller: AbortController, generation: int, from_key: bool) -> None:
        workspace = self._workspace
        budget = FIRST_BUDGET
        while True:
            try:
                result = await workspace.search_sessions(query.query, controller.signal, budget)
            except SessionReferenceError as error:
                if error.code != CANCELLED:
                    self.notify(problem_of(error).describe(), severity="error", title="Lookup failed", markup=False)
                return
            if generation != self._lookup_generation or self._query != query:
                return  # a newer keystroke already asked again
            workspace.catalog.titles.request_titles([hit.candidate.session_id for hit in result.hits[:VISIBLE_HITS]])
            keep = budget != FIRST_BUDGET or not from_key
            self.show(
                result, query.query, workspace.session.cwd, workspace.clock(), self._indexer.note(result), keep=keep
            )
            self._place(query)
            if self._accept_for == query:
                self._accept_for = None
                super().accept()  # (Tab came before these rows: what was typed is what is taken)
                return
            if from_key and budget == FIRST_BUDGET:
                # The next paint answers this keystroke (even if the full answer is in by then).
                self._shown_for_key = self._prompt.last_key_at
                self._key_unanswered = False
            if result.complete or budget == FULL_BUDGET:
                return
            # The keystroke's answer is on screen; finish the message search behind it once typing
            # pauses (a next key cancels this worker first, so it never waits for a full search).
            await asyncio.sleep(FULL_AFTER)
            if generation != self._lookup_generation or controller.signal.aborted:
                return
            budget = FULL_BUDGET

    @on(MentionPicker.Painted)
    def _painted(self, event: MentionPicker.Painted) -> None:
        event.stop()
        if self._shown_for_key is None:
            return  # a refresh after titles loaded, not a keystroke
        self.post_message(self.Shown(event.painted_at - self._shown_for_key))
        self._shown_for_key = None

    def _place(self, query: PickerQuery) -> None:
        prompt = self._prompt
        cursor = prompt.cursor_screen_offset
        row, column = prompt.cursor_location
        typed = prompt.document.get_line(row)[query.start : column]
        self.place(cursor.x - cell_len(typed), cursor.y, self.screen.size.height)

    def accept(self) -> None:
        """Tab or Enter: take the highlighted candidate of the rows for what was typed; when those
        rows are still being looked up (a fast typist), the first of them once they are in."""
        query = self._query
        if query is not None and self.query_text != query.query:
            self._accept_for = query
            return
        super().accept()

    @on(MentionPicker.Accepted)
    def _accepted(self, event: MentionPicker.Accepted) -> None:
        event.stop()
        query = self._query
        self.close()
        if query is None:
            return
        mention = format_session_reference_mention(event.candidate.session_id, visible(event.candidate.label))
        self.post_message(self.MentionChosen(query, self._query_row, mention))
