"""The `@` picker: a dropdown of sessions in contract order, grouped, that never takes focus.

Built on Textual's line API (``ScrollView.render_line``): every row is one prebuilt ``Strip``, so a
keystroke that brings new candidates costs a few list operations and eight strips to paint, not a
re-layout and re-render of a general-purpose option list.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Offset, Size
from textual.message import Message
from textual.strip import Strip

from core import Candidate

from ..text import age, elide_middle, fit_cells, short_cwd, visible
from .rows import HEADING_STYLE, MUTED_STYLE, RowList

GROUP_TITLES = ("This folder", "No folder", "Elsewhere")
VISIBLE_ROWS = 8
CWD_WIDTH = 24
PICKER_WIDTH = 64
ROW_WIDTH = PICKER_WIDTH - 3  # inside the border, beside the scrollbar
LABEL_WIDTH = ROW_WIDTH - CWD_WIDTH - 4 - 2

_MATCH = Style(bold=True, underline=True, color="#ffaf00")
_EMPTY = Style(italic=True, color="#8a8f98")


def group_of(candidate: Candidate, target_cwd: str | None) -> int:
    """0 same cwd, 1 no cwd, 2 elsewhere (the contract's order)."""
    if candidate.cwd is not None and candidate.cwd == target_cwd:
        return 0
    return 1 if candidate.cwd is None else 2


def label_segments(label: str, query: str, width: int) -> list[Segment]:
    """The displayed label (control characters as ``\\xNN``), fitted to ``width``, first match marked."""
    shown = fit_cells(visible(label), width)
    needle = visible(query).lower() if query else ""
    at = shown.lower().find(needle) if needle else -1
    if at < 0:
        return [Segment(shown)]
    end = at + len(needle)
    return [Segment(shown[:at]), Segment(shown[at:end], _MATCH), Segment(shown[end:])]


class PickerRow(NamedTuple):
    """One line of the dropdown: a group heading (``candidate`` is ``None``) or a candidate."""

    text: str
    segments: list[Segment]
    candidate: Candidate | None


class MentionPicker(RowList, can_focus=False):
    """Candidates for the `@query` being typed; accepting posts ``Accepted``.

    It never has focus: the screen routes Up/Down/Ctrl+P/Ctrl+N/Tab/Enter/Escape to it while it is
    open, so a closed picker leaves every key to the prompt.
    """

    COMPONENT_CLASSES = {"mention-picker--highlight"}
    HIGHLIGHT = "mention-picker--highlight"

    DEFAULT_CSS = """
    MentionPicker {
        position: absolute;
        overlay: screen;
        constrain: inside;
        width: 64;  /* PICKER_WIDTH */
        height: 10;  /* set to the rows shown by place() */
        border: round $accent;
        background: $surface;
        scrollbar-size-vertical: 1;
        display: none;
        &.-open { display: block; }
        & > .mention-picker--highlight { background: $accent 40%; }
    }
    """

    @dataclass
    class Painted(Message):
        """Rows from the latest ``show`` were rendered to the screen at ``painted_at``."""

        picker: MentionPicker
        painted_at: float

    @dataclass
    class Accepted(Message):
        """The user chose ``candidate``."""

        picker: MentionPicker
        candidate: Candidate

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.candidates: list[Candidate] = []
        self.rows: list[PickerRow] = []
        self.home = home
        self.query_text = ""
        self._paint_pending = False

    @property
    def is_open(self) -> bool:
        """Whether the dropdown is shown."""
        return self.has_class("-open")

    @property
    def highlighted_candidate(self) -> Candidate | None:
        """The candidate of the highlighted row."""
        if self.highlighted is None:
            return None
        return self.rows[self.highlighted].candidate

    def show(self, candidates: list[Candidate], query: str, target_cwd: str | None, now: int) -> None:
        """Fill the list (group headings, one row per candidate) and open it, first candidate highlighted."""
        self.candidates = candidates
        self.query_text = query
        rows: list[PickerRow] = []
        current = -1
        for candidate in candidates:
            group = group_of(candidate, target_cwd)
            if group != current:
                current = group
                heading = GROUP_TITLES[group]
                rows.append(PickerRow(heading, [Segment(fit_cells(heading, ROW_WIDTH), HEADING_STYLE)], None))
            rows.append(self._row(candidate, query, now))
        if not rows:
            empty = fit_cells(f"No sessions match “{elide_middle(visible(query), 30)}”", ROW_WIDTH)
            rows.append(PickerRow(empty, [Segment(empty, _EMPTY)], None))
        self.rows = rows
        self.highlighted = next((i for i, row in enumerate(rows) if row.candidate is not None), None)
        self.virtual_size = Size(ROW_WIDTH, len(rows))
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.add_class("-open")
        self._paint_pending = True
        self.refresh()

    def _row(self, candidate: Candidate, query: str, now: int) -> PickerRow:
        segments = label_segments(candidate.label, query, LABEL_WIDTH)
        cwd = fit_cells(short_cwd(candidate.cwd, CWD_WIDTH, self.home), CWD_WIDTH)
        when = age(candidate.created_at, now).rjust(4)
        segments += [Segment(" "), Segment(cwd, MUTED_STYLE), Segment(" "), Segment(when, MUTED_STYLE)]
        return PickerRow("".join(segment.text for segment in segments), segments, candidate)

    def row_count(self) -> int:
        return len(self.rows)

    def is_selectable(self, index: int) -> bool:
        return self.rows[index].candidate is not None

    def row_segments(self, index: int, width: int) -> list[Segment]:
        return self.rows[index].segments

    def render_line(self, y: int) -> Strip:
        if self._paint_pending:
            self._paint_pending = False
            self.post_message(self.Painted(self, time.perf_counter()))
        return super().render_line(y)

    def place(self, at_x: int, cursor_y: int, screen_height: int) -> None:
        """Anchor the dropdown at the `@`: below the cursor row when it fits, else above it."""
        height = min(len(self.rows), VISIBLE_ROWS) + 2
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
        """Move the highlight by one candidate row (headings are skipped; wraps around)."""
        self.move_highlight(step, wrap=True)

    def accept(self) -> None:
        """Accept the highlighted candidate (nothing happens on an empty list)."""
        candidate = self.highlighted_candidate
        if candidate is not None:
            self.post_message(self.Accepted(self, candidate))

    def on_click(self, event: events.Click) -> None:
        # A click on a candidate row accepts it, as Tab would.
        event.stop()
        index = self.row_at(event)
        if index is not None:
            self.highlighted = index
            self.accept()
