"""The prompt: a TextArea that shows each mention as a chip (``@Label``) while its text stays the
canonical mention, treats a chip as one unit, and reports `@query` (``tui.services.chips``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.reactive import var
from textual.strip import Strip
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult, Location, Selection, TextAreaTheme

from core.agent.compaction import CompactionProgress
from tui.services.chips import BadgeOf, ChipBook, has_marks, strip_marks
from tui.services.mentions import PickerQuery, picker_query
from tui.services.palette import theme_paint
from tui.widgets.prompt_tokens import PromptTokens

MENTION_HIGHLIGHT = "mention"


@dataclass
class _PromptTheme(TextAreaTheme):
    """The CSS-derived text area theme plus the mention highlight, taken from the palette under the
    app's current theme each time the area renders (so a theme switch repaints mentions too)."""

    def apply_css(self, text_area: TextArea) -> None:
        super().apply_css(text_area)
        self.syntax_styles = {MENTION_HIGHLIGHT: theme_paint(text_area.app)("mention")}


PROMPT_TITLE = "Prompt · Enter sends · Ctrl+J newline · @ references a session"
PREPARING_TITLE = "Preparing referenced sessions… · Esc cancels"


def compaction_title(progress: CompactionProgress) -> str:
    """The prompt's title while a compaction runs."""
    part = f" · part {progress.part} of {progress.parts}" if progress.parts > 1 else ""
    messages = f" {progress.messages} messages" if progress.messages else ""
    return f"Compacting{messages} into a checkpoint{part}… · Esc cancels"


@dataclass(frozen=True)
class PromptMode:
    """What is going on around the draft: its references being prepared, or a compaction running."""

    preparing: bool = False
    compacting: CompactionProgress | None = None


class PromptArea(TextArea):
    """Where the user writes. Enter sends; Ctrl+J (and Shift+Enter) insert a newline.

    Posts ``QueryChanged`` whenever the `@query` before the cursor opens, changes or goes away, and
    ``Submitted`` on Enter. A mention that parses (accepted in the picker, typed, pasted, loaded)
    shows as a chip, ``@Label`` in the mention style; ``text`` is the canonical draft all the same.
    A chip (or a mention that does not parse) is one token: Backspace at its end (or Delete at its
    start) removes it whole, the cursor steps over it, a selection that covers part of it covers it
    all, and copying gives its canonical text.
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

    mode: var[PromptMode] = var(PromptMode(), init=False)
    """What is going on around the draft; the prompt's title and border colour follow it."""

    BINDINGS = [
        Binding("ctrl+j", "newline", "Newline", show=False),
        Binding("shift+enter", "newline", "Newline", show=False),
    ]

    @dataclass
    class Submitted(Message):
        """Enter was pressed: send ``text``."""

        prompt: PromptArea
        text: str

        @property
        def control(self) -> PromptArea:
            """The prompt that was submitted (``@on(PromptArea.Submitted, "#prompt")`` matches it)."""
            return self.prompt

    @dataclass
    class QueryChanged(Message):
        """The `@query` before the cursor: ``None`` when there is none; ``row`` is its line."""

        prompt: PromptArea
        query: PickerQuery | None
        row: int

        @property
        def control(self) -> PromptArea:
            """The prompt whose query changed."""
            return self.prompt

    def __init__(self, *, id: str | None = None, cursor_blink: bool = True) -> None:
        self.chips = ChipBook()
        """Every chip this prompt made: its canonical text by number."""
        self.badge_of: BadgeOf | None = None
        """The badge a chip shows after its label (set by the screen: the catalog's)."""
        self._chipifying = False
        self._tokens = PromptTokens(self.chips, lambda: self.document)
        self._last_query: tuple[PickerQuery | None, int] | None = None
        self.last_key_at = 0.0
        """``perf_counter()`` of the latest key the prompt received (the picker latency starts there)."""
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.cursor_blink = cursor_blink
        self.register_theme(_PromptTheme(name="sessionref"))
        self.theme = "sessionref"
        self.border_title = PROMPT_TITLE

    def watch_mode(self, mode: PromptMode) -> None:
        compacting = mode.compacting
        self.set_class(compacting is not None, "-compacting")
        self.set_class(mode.preparing and compacting is None, "-preparing")
        if compacting is not None:
            self.border_title = compaction_title(compacting)
        else:
            self.border_title = PREPARING_TITLE if mode.preparing else PROMPT_TITLE

    # -- highlighting -----------------------------------------------------------------------------

    # -- the canonical draft ------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The draft as it is sent: every chip is its canonical mention."""
        return self.chips.canonical(self.document.text)

    @text.setter
    def text(self, value: str) -> None:
        self.load_text(value)

    @property
    def shown_text(self) -> str:
        """The draft as the screen shows it (chips as ``@Label``)."""
        return strip_marks(self.document.text)

    def load_text(self, text: str) -> None:
        """Load a canonical draft: its mentions that parse become chips."""
        super().load_text(self.chips.chipify(text, self.badge_of))

    def offer_draft(self, text: str, *, keep_typed: bool = False) -> None:
        """Put a canonical draft in the prompt, the cursor at its end, ready to edit or send
        (``keep_typed``: only if the prompt is empty, so nothing the user typed is lost)."""
        if keep_typed and self.text:
            return
        self.load_text(text)
        self.move_cursor(self.document.end)

    def tokens(self, line: str) -> list[tuple[int, int]]:
        """The spans of ``line`` that are one unit: chips, and mentions that do not parse."""
        return self._tokens.spans(line)

    # -- highlighting -----------------------------------------------------------------------------

    def _build_highlight_map(self) -> None:
        self._line_cache.clear()
        highlights = self._highlights
        highlights.clear()
        for row in range(self.document.line_count):
            line = self.document.get_line(row)
            for start, end in self.tokens(line):
                start_byte = len(line[:start].encode("utf-8", "surrogatepass"))
                end_byte = start_byte + len(line[start:end].encode("utf-8", "surrogatepass"))
                highlights[row].append((start_byte, end_byte, MENTION_HIGHLIGHT))

    def render_line(self, y: int) -> Strip:
        # A chip's marks take no cell; they never reach the terminal either.
        strip = super().render_line(y)
        if not any(has_marks(segment.text) for segment in strip):
            return strip
        return Strip([Segment(strip_marks(text), style, control) for text, style, control in strip], strip.cell_length)

    # -- edits ------------------------------------------------------------------------------------

    def edit(self, edit: Edit) -> EditResult:
        """Apply an edit; one that would cut into a chip (a word deleted, a line cut) takes the
        whole chip, and a mention it completes (one that now parses) becomes a chip."""
        if not self._chipifying:
            edit = self._tokens.whole(edit)
        result = super().edit(edit)
        if not self._chipifying:
            self._chipify_rows(edit.from_location[0], result.end_location[0])
        return result

    def _replace_via_keyboard(self, insert: str, start: Location, end: Location) -> EditResult | None:
        # Pasted text: its mentions become chips at once, and foreign marks are dropped.
        if len(insert) > 1:
            insert = self.chips.chipify(insert, self.badge_of)
        return super()._replace_via_keyboard(insert, start, end)

    def _chipify_rows(self, first: int, last: int) -> None:
        self._chipifying = True
        try:
            for row in range(first, min(last, self.document.line_count - 1) + 1):
                line = self.document.get_line(row)
                if "@[" not in line and "dsh-session:" not in line:
                    continue
                chipped = self.chips.chipify(line, self.badge_of, complete_only=True)
                if chipped != line:
                    self.replace(chipped, (row, 0), (row, len(line)), maintain_selection_offset=True)
        finally:
            self._chipifying = False

    def action_copy(self) -> None:
        """Copy the selection as canonical text (a chip copies as its mention)."""
        selected = self.selected_text
        if selected:
            self.app.copy_to_clipboard(self.chips.canonical(selected))
        else:
            super().action_copy()

    def action_cut(self) -> None:
        """Cut the selection; the clipboard gets its canonical text."""
        start, end = self.selection
        if start == end:
            super().action_cut()
            return
        result = self._delete_via_keyboard(start, end)
        if result is not None:
            self.app.copy_to_clipboard(self.chips.canonical(result.replaced_text))

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
            token = self._token(row, lambda start, end: end == column)
            if token is not None:
                self._delete_via_keyboard((row, token[0]), (row, token[1]))
                return
        super().action_delete_left()

    def action_delete_right(self) -> None:
        """Delete; at the start of a mention token it removes the whole token."""
        row, column = self.cursor_location
        if self.selection.is_empty:
            token = self._token(row, lambda start, end: start == column)
            if token is not None:
                self._delete_via_keyboard((row, token[0]), (row, token[1]))
                return
        super().action_delete_right()

    def action_cursor_left(self, select: bool = False) -> None:
        """Move left; a token is stepped over in one move."""
        row, column = self.cursor_location
        token = self._token(row, lambda start, end: end == column)
        if token is not None and not select:
            self.move_cursor((row, token[0]))
            return
        super().action_cursor_left(select)

    def action_cursor_right(self, select: bool = False) -> None:
        """Move right; a token is stepped over in one move."""
        row, column = self.cursor_location
        token = self._token(row, lambda start, end: start == column)
        if token is not None and not select:
            self.move_cursor((row, token[1]))
            return
        super().action_cursor_right(select)

    def _token(self, row: int, where: Callable[[int, int], bool]) -> tuple[int, int] | None:
        return self._tokens.at(row, where)

    # -- reporting --------------------------------------------------------------------------------

    def _watch_selection(self, previous_selection: Selection, selection: Selection) -> None:
        super()._watch_selection(previous_selection, selection)
        self._snap_out_of_token()
        self._report_query()

    def _snap_out_of_token(self) -> None:
        if not self.selection.is_empty:
            widened = self._tokens.widened(self.selection)
            if widened is not None:
                self.selection = widened  # a selection that reaches into a token covers all of it
            return
        row, column = self.cursor_location
        token = self._token(row, lambda start, end: start < column < end)
        if token is not None:
            start, end = token
            self.move_cursor((row, start if column - start < end - column else end))

    def _report_query(self) -> None:
        row, column = self.cursor_location
        line = self.document.get_line(row)
        query = picker_query(line, column, self.tokens(line)) if self.selection.is_empty else None
        state = (query, row)
        if state != self._last_query:
            self._last_query = state
            self.post_message(self.QueryChanged(self, query, row))

    def insert_mention(self, query: PickerQuery, row: int, mention: str) -> None:
        """Replace the `@query` at ``row`` with ``mention``'s chip plus a space; the cursor lands after it."""
        start = (row, query.start)
        end = (row, query.start + 1 + len(query.query))
        chip = self.chips.chipify(mention, self.badge_of)
        self.replace(chip + " ", start, end, maintain_selection_offset=False)
        self.move_cursor((row, query.start + len(chip) + 1))
        self.scroll_cursor_visible()
