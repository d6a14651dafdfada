"""The `@` picker: a dropdown of sessions in contract order, grouped, that never takes focus.

Built on Textual's line API (``ScrollView.render_line``): every row is one prebuilt ``Strip``, so a
keystroke that brings new candidates costs a few list operations and eight strips to paint, not a
re-layout and re-render of a general-purpose option list.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Offset, Size
from textual.message import Message
from textual.strip import Strip

from core import Candidate, SearchHit, SearchResult
from tui.services.text import age, elide_middle, fit_cells, short_cwd, tool_badge, visible
from tui.widgets.rows import RowList

GROUP_TITLES = ("This folder", "No folder", "Elsewhere")
VISIBLE_ROWS = 8
CWD_WIDTH = 24
PICKER_WIDTH = 64
ROW_WIDTH = PICKER_WIDTH - 3  # inside the border, beside the scrollbar
LABEL_WIDTH = ROW_WIDTH - CWD_WIDTH - 4 - 2

_ITALIC = Style(italic=True)
DETAIL_INDENT = "    "
ROLE_PREFIX = {"user": "you: ", "assistant": "ai: ", "summary": "summary: "}


def group_of(candidate: Candidate, target_cwd: str | None) -> int:
    """0 same cwd, 1 no cwd, 2 elsewhere (the contract's order)."""
    if candidate.cwd is not None and candidate.cwd == target_cwd:
        return 0
    return 1 if candidate.cwd is None else 2


def marked_segments(shown: str, query: str, style: Style | None = None, match: Style | None = None) -> list[Segment]:
    """``shown`` (already safe and fitted) with the first case-insensitive match of ``query`` marked
    in ``match`` (the picker's ``rows--match`` part)."""
    needle = visible(query).lower() if query else ""
    at = shown.lower().find(needle) if needle else -1
    if at < 0 or len(shown.lower()) != len(shown):
        return [Segment(shown, style)]
    end = at + len(needle)
    return [Segment(shown[:at], style), Segment(shown[at:end], match), Segment(shown[end:], style)]


def words_marked(shown: str, words: list[str], style: Style | None = None, match: Style | None = None) -> list[Segment]:
    """``shown`` (already safe and fitted) with each of ``words`` marked where it first occurs (the
    words a ranked search matched: a snippet's marks, a title's words)."""
    lowered = shown.lower()
    if len(lowered) != len(shown):
        return [Segment(shown, style)]
    spans: list[tuple[int, int]] = []
    for word in words:
        needle = visible(word).lower()
        at = lowered.find(needle) if needle else -1
        while at >= 0 and any(start <= at < end for start, end in spans):
            at = lowered.find(needle, at + 1)
        if at >= 0:
            spans.append((at, at + len(needle)))
    segments: list[Segment] = []
    position = 0
    for start, end in sorted(spans):
        if start < position:
            continue
        segments += [Segment(shown[position:start], style), Segment(shown[start:end], match)]
        position = end
    segments.append(Segment(shown[position:], style))
    return [segment for segment in segments if segment.text]


def _contains(shown: str, query: str) -> bool:
    return bool(query) and visible(query).lower() in shown.lower()


class PickerRow(NamedTuple):
    """One line of the dropdown: a group heading or note (``candidate`` is ``None``), a candidate, or
    the line under a candidate saying why it matched (``detail``)."""

    segments: list[Segment]
    candidate: Candidate | None
    detail: bool = False

    @property
    def text(self) -> str:
        """What the line says (its segments' text)."""
        return "".join(segment.text for segment in self.segments)


class _Parts(NamedTuple):
    """The row parts' styles, read once a fill (each read asks the theme)."""

    muted: Style
    match: Style
    badge: Style


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

        @property
        def control(self) -> MentionPicker:
            """The picker that painted (``@on(MentionPicker.Painted, "#picker")`` matches it)."""
            return self.picker

    @dataclass
    class Accepted(Message):
        """The user chose ``candidate``."""

        picker: MentionPicker
        candidate: Candidate

        @property
        def control(self) -> MentionPicker:
            """The picker a candidate was accepted in."""
            return self.picker

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.badge_of: Callable[[str], str | None] = tool_badge
        """The badge before a row's label: another tool's (``CC``), a teammate's (``@bob``), or none."""
        self.candidates: list[Candidate] = []
        self.hits: list[SearchHit] = []
        self.note: str | None = None
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

    def show(
        self,
        result: SearchResult,
        query: str,
        target_cwd: str | None,
        now: int,
        note: str | None = None,
        *,
        keep: bool = False,
    ) -> None:
        """Fill the list (group headings, one row per hit and a line saying why when the row itself
        does not show it, then ``note``) and open it, first candidate highlighted.

        ``keep`` (more results for the same query) keeps the highlighted session highlighted.
        """
        highlighted = self.highlighted_candidate if keep and self.is_open else None
        previous = highlighted.session_id if highlighted is not None else None
        self.hits = result.hits
        self.candidates = [hit.candidate for hit in result.hits]
        self.query_text = query
        self.note = note
        rows: list[PickerRow] = []
        current = -1
        parts = self._row_parts()
        for hit in result.hits:
            group = group_of(hit.candidate, target_cwd)
            if group != current:
                current = group
                heading = GROUP_TITLES[group]
                rows.append(PickerRow([Segment(fit_cells(heading, ROW_WIDTH), self.part("heading"))], None))
            rows.extend(self._rows(hit, query, now, parts))
        if not rows:
            empty = fit_cells(f"No sessions match “{elide_middle(visible(query), 30)}”", ROW_WIDTH)
            rows.append(PickerRow([Segment(empty, parts.muted + _ITALIC)], None))
        if note:
            shown = fit_cells(visible(note), ROW_WIDTH)
            rows.append(PickerRow([Segment(shown, parts.muted + _ITALIC)], None))
        self.rows = rows
        self.highlighted = next((i for i in range(len(rows)) if self.is_selectable(i)), None)
        self.virtual_size = Size(ROW_WIDTH, len(rows))
        kept = next(
            (i for i, row in enumerate(rows) if previous and row.candidate and row.candidate.session_id == previous),
            None,
        )
        if kept is not None and self.is_selectable(kept):
            self.highlighted = kept
            self.keep_highlight_visible()
        else:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.add_class("-open")
        self._paint_pending = True
        self.refresh()

    def _row_parts(self) -> _Parts:
        return _Parts(self.part("muted"), self.part("match"), self.part("badge"))

    def _rows(self, hit: SearchHit, query: str, now: int, parts: _Parts | None = None) -> list[PickerRow]:
        if parts is None:
            parts = self._row_parts()
        candidate = hit.candidate
        badge = self.badge_of(candidate.session_id)
        label = fit_cells(visible(candidate.label), LABEL_WIDTH - (cell_len(badge) + 1 if badge else 0))
        cwd = fit_cells(short_cwd(candidate.cwd, CWD_WIDTH, self.home), CWD_WIDTH)
        # Mark the match where the row shows it; what it does not show goes on a line below.
        in_label = hit.field in ("title", "id") and _contains(label, query)
        in_cwd = hit.field == "cwd" and candidate.cwd is not None and _contains(cwd, query)
        muted, match = parts.muted, parts.match
        segments = [Segment(badge, parts.badge), Segment(" ")] if badge else []
        if not in_label and hit.title_marks:  # the title's words matched, not the query as typed
            words = [candidate.label[start:end] for start, end in hit.title_marks]
            segments += words_marked(label, words, None, match)
        else:
            segments += marked_segments(label, query if in_label else "", None, match)
        when = age(candidate.created_at, now).rjust(4)
        segments += [Segment(" "), *marked_segments(cwd, query if in_cwd else "", muted, match)]
        segments += [Segment(" "), Segment(when, muted)]
        rows = [PickerRow(segments, candidate)]
        detail = self._detail(hit, query, in_label or in_cwd, parts)
        if detail is not None:
            rows.append(PickerRow(detail, candidate, detail=True))
        return rows

    def _detail(self, hit: SearchHit, query: str, shown: bool, parts: _Parts) -> list[Segment] | None:
        candidate = hit.candidate
        if hit.field == "body" and hit.snippet is not None:
            prefix = DETAIL_INDENT + ROLE_PREFIX.get(hit.snippet.role, "")
            text = fit_cells(visible(hit.snippet.text), ROW_WIDTH - len(prefix))
        elif hit.field == "id" and not shown:
            prefix, text = DETAIL_INDENT + "id ", fit_cells(visible(candidate.session_id), ROW_WIDTH - 7)
        elif hit.field == "cwd" and not shown and candidate.cwd is not None:
            prefix = DETAIL_INDENT + "in "
            text = fit_cells(short_cwd(candidate.cwd, 1_000, self.home), ROW_WIDTH - len(prefix))
        elif hit.field == "title" and not shown:
            prefix, text = DETAIL_INDENT + "title ", fit_cells(visible(candidate.label), ROW_WIDTH - 10)
        else:
            return None
        muted = parts.muted
        snippet = hit.snippet if hit.field == "body" else None
        if snippet is not None and snippet.marks:
            words = [snippet.text[start:end] for start, end in snippet.marks]
            return [Segment(prefix, muted), *words_marked(text, words, muted, parts.match)]
        return [Segment(prefix, muted), *marked_segments(text, query, muted, parts.match)]

    def row_count(self) -> int:
        return len(self.rows)

    def is_selectable(self, index: int) -> bool:
        row = self.rows[index]
        return row.candidate is not None and not row.detail

    def row_extent(self, index: int) -> int:
        following = index + 1
        return 2 if following < len(self.rows) and self.rows[following].detail else 1

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
