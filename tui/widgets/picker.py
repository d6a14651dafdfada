"""The `@` picker: a dropdown of sessions in contract order, grouped, that never takes focus."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.content import Content
from textual.geometry import Offset
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core import Candidate

from ..text import age, short_cwd, visible

GROUP_TITLES = ("This folder", "No folder", "Elsewhere")
VISIBLE_ROWS = 8
CWD_WIDTH = 24
PICKER_WIDTH = 64
ROW_WIDTH = PICKER_WIDTH - 3  # inside the border, beside the scrollbar
LABEL_WIDTH = ROW_WIDTH - CWD_WIDTH - 4 - 2
MATCH_STYLE = "bold underline #ffaf00"


def group_of(candidate: Candidate, target_cwd: str | None) -> int:
    """0 same cwd, 1 no cwd, 2 elsewhere (the contract's order)."""
    if candidate.cwd is not None and candidate.cwd == target_cwd:
        return 0
    return 1 if candidate.cwd is None else 2


def highlighted_label(label: str, query: str) -> Content:
    """The displayed label (control characters as ``\\xNN``) with the first match of ``query`` marked."""
    shown = visible(label)
    content = Content(shown)
    if query:
        needle = visible(query).lower()
        at = shown.lower().find(needle)
        if at >= 0:
            content = content.stylize(MATCH_STYLE, at, at + len(needle))
    return content


class MentionPicker(OptionList):
    """Candidates for the `@query` being typed; accepting posts ``Accepted``.

    It never has focus: the screen routes Up/Down/Ctrl+P/Ctrl+N/Tab/Enter/Escape to it while it is
    open, so a closed picker leaves every key to the prompt.
    """

    DEFAULT_CSS = """
    MentionPicker {
        position: absolute;
        overlay: screen;
        constrain: inside;
        width: 64;  /* PICKER_WIDTH */
        height: 10;  /* set to the rows shown; a fixed height lets new rows repaint without a layout */
        scrollbar-size-vertical: 1;
        border: round $accent;
        background: $surface;
        padding: 0;
        display: none;
        &.-open { display: block; }
        & > .option-list--option-highlighted { background: $accent 40%; }
    }
    """

    @dataclass
    class Accepted(Message):
        """The user chose ``candidate``."""

        picker: MentionPicker
        candidate: Candidate

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False
        self.candidates: list[Candidate] = []
        self.home = home
        self.query_text = ""

    @property
    def is_open(self) -> bool:
        """Whether the dropdown is shown."""
        return self.has_class("-open")

    def show(self, candidates: list[Candidate], query: str, target_cwd: str | None, now: int) -> None:
        """Fill the list (group headings, one row per candidate) and open it, first row highlighted."""
        self.candidates = candidates
        self.query_text = query
        if not candidates:
            self.set_options([Option(Text(f"No sessions match “{visible(query)}”", style="dim italic"), disabled=True)])
            self.add_class("-open")
            return
        options: list[Option] = []
        current = -1
        first: int | None = None
        for index, candidate in enumerate(candidates):
            group = group_of(candidate, target_cwd)
            if group != current:
                current = group
                options.append(Option(Text(GROUP_TITLES[group], style="bold dim"), disabled=True))
            if first is None:
                first = len(options)
            options.append(Option(self._row(candidate, query, now), id=f"c{index}"))
        # One replacement (not clear + add): with as many rows as before nothing needs a new layout.
        self.set_options(options)
        self.add_class("-open")
        self.highlighted = first

    def _row(self, candidate: Candidate, query: str, now: int) -> Content:
        # Textual Content rather than rich Text: the list renders it without a conversion step.
        label = highlighted_label(candidate.label, query).truncate(LABEL_WIDTH, ellipsis=True, pad=True)
        cwd = Content(short_cwd(candidate.cwd, CWD_WIDTH, self.home)).truncate(CWD_WIDTH, pad=True)
        return Content.assemble(label, " ", cwd.stylize("dim"), " ", (age(candidate.created_at, now).rjust(4), "dim"))

    def place(self, at_x: int, cursor_y: int, screen_height: int) -> None:
        """Anchor the dropdown at the `@`: below the cursor row when it fits, else above it."""
        height = min(self.option_count, VISIBLE_ROWS) + 2
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
        y = cursor_y + 1 if cursor_y + 1 + height <= screen_height else max(0, cursor_y - height)
        offset = Offset(max(0, at_x - 1), y)
        if offset != self.absolute_offset:
            self.absolute_offset = offset
            self.refresh(layout=True)

    def close(self) -> None:
        """Hide the dropdown."""
        self.remove_class("-open")

    def move(self, step: int) -> None:
        """Move the highlight by ``step`` enabled rows (wrapping)."""
        if step > 0:
            self.action_cursor_down()
        else:
            self.action_cursor_up()

    def accept(self) -> None:
        """Accept the highlighted candidate (nothing happens on a heading or an empty list)."""
        if self.highlighted is None:
            return
        option = self.get_option_at_index(self.highlighted)
        if option.id is None:
            return
        self.post_message(self.Accepted(self, self.candidates[int(option.id[1:])]))

    def _on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        # A mouse click selects an option: accept it like Tab would.
        event.stop()
        self.highlighted = event.option_index
        self.accept()
