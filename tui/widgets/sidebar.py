"""The sessions sidebar: every session of the store in the picker's three groups, plus unreadable files.

Built on Textual's line API like the picker: ``show`` only orders the records into rows; a row's text
(title, age) is made when it scrolls into view, so a store of 10,000 sessions costs the UI thread a
few milliseconds per refresh, not a render of 10,000 rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message

from core import SessionHeader, SessionRecord, StoreProblem
from core.collector import collector_paused
from tui.services.text import age, fit_cells, markup_escape, tool_badge, visible
from tui.widgets.picker import GROUP_TITLES
from tui.widgets.rows import RowList
from tui.widgets.sidebar_filter import SidebarFilter

_CURRENT = Style(bold=True)


class SidebarRow(NamedTuple):
    """One line: a heading (``header`` and ``problem`` are ``None``), a session, or an unreadable file."""

    heading: str | None
    header: SessionHeader | None = None
    problem: StoreProblem | None = None


def group_rows(records: list[SessionRecord], target_cwd: str | None) -> list[list[SessionHeader]]:
    """Headers split into same cwd, no cwd, elsewhere (each keeping listing order)."""
    groups: list[list[SessionHeader]] = [[], [], []]
    for record in records:
        header = record.header
        if header.cwd is None:
            groups[1].append(header)
        elif header.cwd == target_cwd:
            groups[0].append(header)
        else:
            groups[2].append(header)
    return groups


class SessionSidebar(RowList, can_focus=True):
    """Lists sessions; Enter or a click on one posts ``Chosen``. The current session is marked ``▸``."""

    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "move(-10)", show=False),
        Binding("pagedown", "move(10)", show=False),
        Binding("home", "move(-1000000)", show=False),
        Binding("end", "move(1000000)", show=False),
        Binding("enter", "choose", "Open", show=False),
        Binding("m", "menu", "Menu", show=False),
    ]

    COMPONENT_CLASSES = {"session-sidebar--highlight"}
    HIGHLIGHT = "session-sidebar--highlight"

    DEFAULT_CSS = """
    SessionSidebar {
        width: 32;
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-muted;
        scrollbar-size-vertical: 1;
        &:focus { border: round $primary; }
        & > .session-sidebar--highlight { background: $accent 30%; }
        &:focus > .session-sidebar--highlight { background: $accent 50%; }
    }
    """

    @dataclass
    class Chosen(Message):
        """The user picked the session ``session_id``."""

        sidebar: SessionSidebar
        session_id: str

        @property
        def control(self) -> SessionSidebar:
            """The sidebar a session was chosen in."""
            return self.sidebar

    @dataclass
    class FilterChanged(Message):
        """The filter's text changed (empty: every session again)."""

        sidebar: SessionSidebar
        text: str

        @property
        def control(self) -> SessionSidebar:
            """The sidebar whose filter changed."""
            return self.sidebar

    @dataclass
    class MenuWanted(Message):
        """The user asked for a row's menu (``m``): open it, continue it in another agent."""

        sidebar: SessionSidebar
        session_id: str

        @property
        def control(self) -> SessionSidebar:
            """The sidebar the menu was asked in."""
            return self.sidebar

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Sessions"
        self.home = home
        self.rows: list[SidebarRow] = []
        self.current_id = ""
        self.now = 0
        self.title_of: Callable[[SessionHeader], str | None] = lambda header: None
        self.badge_of: Callable[[str], str | None] = tool_badge
        """The badge before a row's title: another tool's (``CC``), a teammate's (``@bob``), or none."""
        self._shown: tuple[object, ...] | None = None
        self.filter = SidebarFilter()
        """The filter line (``/``): the sidebar lists what the search finds for it."""
        self.found: list[SessionHeader] | None = None
        """The sessions the filter found, in the search's order (``None``: no filter)."""

    def show(
        self,
        records: list[SessionRecord],
        title_of: Callable[[SessionHeader], str | None],
        problems: list[StoreProblem],
        current_id: str,
        target_cwd: str | None,
        now: int,
    ) -> None:
        """Order the rows (keeps the highlighted session); row text is made when it is painted."""
        self.title_of = title_of
        self.current_id = current_id
        self.now = now
        state: tuple[object, ...] = (
            id(records),
            len(records),
            tuple(p.message for p in problems),
            current_id,
            target_cwd,
        )
        if self.found is not None:
            records = [SessionRecord(header=header, live=False, persisted=True) for header in self.found]
            state = (id(self.found), current_id, target_cwd)
            problems = []
        if state != self._shown:
            self._shown = state
            highlighted = self.highlighted_id
            rows: list[SidebarRow] = []
            with collector_paused():  # 100,000 rows must not set off full collections
                for title, group in zip(GROUP_TITLES, group_rows(records, target_cwd), strict=True):
                    if group:
                        rows.append(SidebarRow(f"{title} ({len(group)})"))
                        rows.extend([SidebarRow(None, header) for header in group])
            if problems:
                rows.append(SidebarRow(f"Unreadable ({len(problems)})"))
                rows.extend(SidebarRow(None, problem=problem) for problem in problems)
            self.rows = rows
            self.virtual_size = Size(self.virtual_size.width, len(rows))
            self.highlighted = None
            if highlighted is not None:
                self.highlight_id(highlighted)
            if self.highlighted is None:
                self.highlight_id(current_id)
            if self.highlighted is None and self.found:
                self.highlight_id(self.found[0].id)  # a filter's best match
        self.refresh()

    # -- rows -------------------------------------------------------------------------------------

    def row_text(self, index: int) -> str:
        """The plain text of row ``index`` (what the sidebar shows there)."""
        return "".join(segment.text for segment in self.row_segments(index, 40)).rstrip()

    def row_count(self) -> int:
        return len(self.rows)

    def is_selectable(self, index: int) -> bool:
        return self.rows[index].header is not None

    def row_segments(self, index: int, width: int) -> list[Segment]:
        row = self.rows[index]
        if row.heading is not None:
            style = self.part("heading")
            if row.heading.startswith("Unreadable"):
                style += self.part("problem")
            return [Segment(row.heading, style)]
        if row.problem is not None:
            path = str(row.problem.path)
            # A dsh session is its folder (…/<id>/session.jsonl); another tool's session is its file.
            folder = os.path.basename(path).startswith("session.jsonl")
            name = visible((os.path.basename(os.path.dirname(path)) if folder else os.path.basename(path)) or path)
            return [Segment(fit_cells(f"  ✖ {name}", width), self.part("problem"))]
        header = row.header
        assert header is not None
        current = header.id == self.current_id
        when = age(header.created_at, self.now)
        badge = self.badge_of(header.id)
        room = width - 2 - len(when) - 1 - (cell_len(badge) + 1 if badge else 0)
        label = fit_cells(visible(self.title_of(header) or header.id), max(1, room))
        return [
            Segment("▸ " if current else "  ", self.part("mark")),
            *([Segment(badge, self.part("badge")), Segment(" ")] if badge else []),
            Segment(label, _CURRENT if current else None),
            Segment(" "),
            Segment(when, self.part("muted")),
        ]

    # -- choosing ---------------------------------------------------------------------------------

    @property
    def highlighted_id(self) -> str | None:
        """The id of the highlighted session row."""
        if self.highlighted is None or self.highlighted >= len(self.rows):
            return None
        header = self.rows[self.highlighted].header
        return header.id if header is not None else None

    def index_of(self, session_id: str) -> int | None:
        """The row of ``session_id``, or ``None`` when it is not listed."""
        return next(
            (i for i, row in enumerate(self.rows) if row.header is not None and row.header.id == session_id), None
        )

    def highlight_id(self, session_id: str) -> None:
        """Highlight the row of ``session_id`` when it is listed."""
        index = self.index_of(session_id)
        if index is not None:
            self.highlighted = index
            self.keep_highlight_visible()
            self.refresh()

    def action_move(self, step: int) -> None:
        """Move the highlight over session rows (headings are skipped)."""
        self.move_highlight(step, wrap=False)

    def action_choose(self) -> None:
        """Open the highlighted session."""
        session_id = self.highlighted_id
        if session_id is not None:
            self.post_message(self.Chosen(self, session_id))

    def action_menu(self) -> None:
        """The highlighted session's menu."""
        session_id = self.highlighted_id
        if session_id is not None:
            self.post_message(self.MenuWanted(self, session_id))

    # -- filtering ------------------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        taken = self.filter.key(event.key, event.character)
        if taken is None:
            return
        event.stop()
        event.prevent_default()
        self.border_title = markup_escape(visible(self.filter.title()))  # a border title is markup
        if taken:
            self.filter_changed(self.filter.text)

    def filter_changed(self, text: str) -> None:
        """The filter's text changed: posts ``FilterChanged`` (a sidebar that searches itself lists
        what it finds instead)."""
        self.post_message(self.FilterChanged(self, text))

    def show_found(self, headers: list[SessionHeader] | None) -> None:
        """List only ``headers`` (what the filter found, best first) or, with ``None``, every session
        again; the next ``show`` orders them."""
        self.found = headers
        self._shown = None

    def on_click(self, event: events.Click) -> None:
        index = self.row_at(event)
        if index is not None:
            self.highlighted = index
            self.refresh()
            self.action_choose()
