"""The prompt: a TextArea that highlights mention tokens, treats each as one unit, and reports `@query`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Selection, TextAreaTheme

from core.reference.uri import find_mention_spans
from tui.services.mentions import PickerQuery, picker_query, token_around, token_ending_at, token_starting_at
from tui.services.palette import theme_paint

MENTION_HIGHLIGHT = "mention"


@dataclass
class _PromptTheme(TextAreaTheme):
    """The CSS-derived text area theme plus the mention highlight, taken from the palette under the
    app's current theme each time the area renders (so a theme switch repaints mentions too)."""

    def apply_css(self, text_area: TextArea) -> None:
        super().apply_css(text_area)
        self.syntax_styles = {MENTION_HIGHLIGHT: theme_paint(text_area.app)("mention")}


class PromptArea(TextArea):
    """Where the user writes. Enter sends; Ctrl+J (and Shift+Enter) insert a newline.

    Posts ``QueryChanged`` whenever the `@query` before the cursor opens, changes or goes away, and
    ``Submitted`` on Enter. Mention tokens are highlighted; Backspace at a token's end (or Delete at
    its start) removes the whole token, and the cursor steps over tokens instead of into them.
    """

    DEFAULT_CSS = """
    PromptArea {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: round $primary 50%;
        border-title-color: $text-muted;
        padding: 0 1;
        &:focus { border: round $primary; }
        &.-preparing { border: round $warning; border-title-color: $warning; }
        &.-compacting { border: round $accent; border-title-color: $accent; }
    }
    """

    BINDINGS = [
        Binding("ctrl+j", "newline", "Newline", show=False),
        Binding("shift+enter", "newline", "Newline", show=False),
    ]

    @dataclass
    class Submitted(Message):
        """Enter was pressed: send ``text``."""

        prompt: PromptArea
        text: str

    @dataclass
    class QueryChanged(Message):
        """The `@query` before the cursor: ``None`` when there is none; ``row`` is its line."""

        prompt: PromptArea
        query: PickerQuery | None
        row: int

    def __init__(self, *, id: str | None = None, cursor_blink: bool = True) -> None:
        self._last_query: tuple[PickerQuery | None, int] | None = None
        self.last_key_at = 0.0
        """``perf_counter()`` of the latest key the prompt received (the picker latency starts there)."""
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.cursor_blink = cursor_blink
        self.register_theme(_PromptTheme(name="sessionref"))
        self.theme = "sessionref"

    # -- highlighting -----------------------------------------------------------------------------

    def _build_highlight_map(self) -> None:
        self._line_cache.clear()
        highlights = self._highlights
        highlights.clear()
        for row in range(self.document.line_count):
            line = self.document.get_line(row)
            if "@[" not in line and "dsh-session:" not in line:
                continue
            for start, end in find_mention_spans(line):
                start_byte = len(line[:start].encode("utf-8", "surrogatepass"))
                end_byte = start_byte + len(line[start:end].encode("utf-8", "surrogatepass"))
                highlights[row].append((start_byte, end_byte, MENTION_HIGHLIGHT))

    # -- keys -------------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        self.last_key_at = time.perf_counter()
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
            return
        await super()._on_key(event)

    def action_newline(self) -> None:
        """Insert a line break at the cursor."""
        start, end = self.selection
        self._replace_via_keyboard("\n", start, end)

    def action_delete_left(self) -> None:
        """Backspace; at the end of a mention token it removes the whole token."""
        row, column = self.cursor_location
        if self.selection.is_empty:
            token = token_ending_at(self.document.get_line(row), column)
            if token is not None:
                self._delete_via_keyboard((row, token[0]), (row, token[1]))
                return
        super().action_delete_left()

    def action_delete_right(self) -> None:
        """Delete; at the start of a mention token it removes the whole token."""
        row, column = self.cursor_location
        if self.selection.is_empty:
            token = token_starting_at(self.document.get_line(row), column)
            if token is not None:
                self._delete_via_keyboard((row, token[0]), (row, token[1]))
                return
        super().action_delete_right()

    def action_cursor_left(self, select: bool = False) -> None:
        """Move left; a token is stepped over in one move."""
        row, column = self.cursor_location
        token = token_ending_at(self.document.get_line(row), column)
        if token is not None and not select:
            self.move_cursor((row, token[0]))
            return
        super().action_cursor_left(select)

    def action_cursor_right(self, select: bool = False) -> None:
        """Move right; a token is stepped over in one move."""
        row, column = self.cursor_location
        token = token_starting_at(self.document.get_line(row), column)
        if token is not None and not select:
            self.move_cursor((row, token[1]))
            return
        super().action_cursor_right(select)

    # -- reporting --------------------------------------------------------------------------------

    def _watch_selection(self, previous_selection: Selection, selection: Selection) -> None:
        super()._watch_selection(previous_selection, selection)
        self._snap_out_of_token()
        self._report_query()

    def _snap_out_of_token(self) -> None:
        if not self.selection.is_empty:
            return
        row, column = self.cursor_location
        token = token_around(self.document.get_line(row), column)
        if token is not None:
            start, end = token
            self.move_cursor((row, start if column - start < end - column else end))

    def _report_query(self) -> None:
        row, column = self.cursor_location
        query = picker_query(self.document.get_line(row), column) if self.selection.is_empty else None
        state = (query, row)
        if state != self._last_query:
            self._last_query = state
            self.post_message(self.QueryChanged(self, query, row))

    def insert_mention(self, query: PickerQuery, row: int, mention: str) -> None:
        """Replace the `@query` at ``row`` with ``mention`` plus a space; the cursor lands after it."""
        start = (row, query.start)
        end = (row, query.start + 1 + len(query.query))
        self.replace(mention + " ", start, end, maintain_selection_offset=False)
        self.move_cursor((row, query.start + len(mention) + 1))
        self.scroll_cursor_visible()
