"""The chat screen's `@` picker: the prompt reports the `@query`, a lookup answers it in two steps
(what a keystroke's budget finds at once, then the full message search behind it), Tab or Enter
inserts the mention, Escape dismisses it until the token is edited.

A mixin of ``tui.chat.ChatScreen``, which provides the workspace, the indexer, the prompt and the
picker, holds the state named below and posts ``PickerShown``. The search itself is ``core``'s
(``SessionSearch``, through ``Workspace.search_sessions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from textual import work

from core import AbortController, SessionReferenceError, format_session_reference_mention
from core.errors import CANCELLED
from core.search.finder import FIRST_BUDGET, FULL_BUDGET
from tui.screens.screen_typing import MixedIntoScreen
from tui.services.mentions import PickerQuery
from tui.services.preview_report import problem_of
from tui.services.text import visible
from tui.widgets.picker import MentionPicker
from tui.widgets.prompt import PromptArea

if TYPE_CHECKING:
    from tui.services.indexing import MessageIndexer
    from tui.services.workspace import Workspace

VISIBLE_HITS = 24
"""Picker hits whose titles are fetched when a lookup shows them (the rest load when scrolled to)."""


class PickerControls(MixedIntoScreen):
    """The `@` picker's lookups and keys, for the chat screen."""

    workspace: Workspace
    indexer: MessageIndexer
    _query: PickerQuery | None
    _query_row: int
    _dismissed: tuple[int, int, str] | None
    """Escape's memory: (row, column of the `@`, draft) of the token whose picker was dismissed."""
    _lookup_abort: AbortController | None
    _lookup_generation: int
    _shown_for_key: float | None
    _key_unanswered: bool

    if TYPE_CHECKING:  # the screen's, for the type checker only (a stub here would shadow them)
        PickerShown: type[Any]

        @property
        def prompt(self) -> PromptArea: ...
        @property
        def picker(self) -> MentionPicker: ...

    def action_picker_move(self, step: int) -> None:
        """Move the picker's highlight."""
        self.picker.move(step)

    def action_picker_accept(self) -> None:
        """Accept the highlighted candidate."""
        self.picker.accept()

    def _close_picker(self) -> None:
        self.picker.close()
        if self._lookup_abort is not None:
            self._lookup_abort.abort("picker closed")
            self._lookup_abort = None
        self._lookup_generation += 1
        self._key_unanswered = False

    def on_prompt_area_query_changed(self, event: PromptArea.QueryChanged) -> None:
        self._query, self._query_row = event.query, event.row
        if event.query is None:
            self._close_picker()
            return
        if self._dismissed is not None:
            if self._dismissed == (event.row, event.query.start, self.prompt.text):
                return  # the same token, unedited since Escape: stay closed
            self._dismissed = None
        self._lookup(event.query)

    def _lookup(self, query: PickerQuery, from_key: bool = True) -> None:
        # A refresh that supersedes a keystroke's lookup before it was shown answers that keystroke.
        from_key = from_key or self._key_unanswered
        self._key_unanswered = from_key
        if self._lookup_abort is not None:
            self._lookup_abort.abort("superseded by a newer keystroke")
        controller = AbortController()
        self._lookup_abort = controller
        self._lookup_generation += 1
        self._run_lookup(query, controller, self._lookup_generation, from_key)

    @work(exclusive=True, group="picker")
    async def _run_lookup(
        self, query: PickerQuery, controller: AbortController, generation: int, from_key: bool
    ) -> None:
        workspace = self.workspace
        budget = FIRST_BUDGET
        while True:
            try:
                result = await workspace.search_sessions(query.query, controller.signal, budget)
            except SessionReferenceError as error:
                if error.code != CANCELLED:
                    self.notify(problem_of(error).describe(), severity="error", title="Lookup failed")
                return
            if generation != self._lookup_generation or self._query != query:
                return  # a newer keystroke already asked again
            workspace.catalog.request_titles([hit.candidate.session_id for hit in result.hits[:VISIBLE_HITS]])
            picker = self.picker
            keep = budget != FIRST_BUDGET or not from_key
            picker.show(
                result, query.query, workspace.session.cwd, workspace.clock(), self.indexer.note(result), keep=keep
            )
            self._place_picker(query)
            if from_key and budget == FIRST_BUDGET:
                # The next paint answers this keystroke (even if the full answer is in by then).
                self._shown_for_key = self.prompt.last_key_at
                self._key_unanswered = False
            if result.complete or budget == FULL_BUDGET:
                return
            # The keystroke's answer is on screen; finish the message search behind it.
            budget = FULL_BUDGET

    def on_mention_picker_painted(self, event: MentionPicker.Painted) -> None:
        # Keystroke -> new rows rendered: the figure the picker benchmark reports.
        if self._shown_for_key is None:
            return  # a refresh after titles loaded, not a keystroke
        self.post_message(self.PickerShown(event.painted_at - self._shown_for_key))
        self._shown_for_key = None

    def refresh_picker(self) -> None:
        """Look the open picker's query up again (titles that were still loading may be in now)."""
        if self.picker.is_open and self._query is not None:
            self._lookup(self._query, from_key=False)

    def _place_picker(self, query: PickerQuery) -> None:
        prompt = self.prompt
        cursor = prompt.cursor_screen_offset
        row, column = prompt.cursor_location
        typed = prompt.document.get_line(row)[query.start : column]
        self.picker.place(cursor.x - cell_len(typed), cursor.y, self.size.height)

    def on_mention_picker_accepted(self, event: MentionPicker.Accepted) -> None:
        query = self._query
        self._close_picker()
        if query is None:
            return
        candidate = event.candidate
        mention = format_session_reference_mention(candidate.session_id, visible(candidate.label))
        self.prompt.insert_mention(query, self._query_row, mention)
        self.prompt.focus()
