"""The sessions sidebar: every session of the store in the picker's three groups, plus unreadable files."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from core import SessionRecord, StoreProblem

from ..text import age, short_cwd, visible
from .picker import GROUP_TITLES


@dataclass(frozen=True, slots=True)
class SidebarRow:
    """What one listed session shows."""

    session_id: str
    title: str | None
    cwd: str | None
    created_at: int


def group_rows(rows: list[SidebarRow], target_cwd: str | None) -> list[list[SidebarRow]]:
    """Rows split into same cwd, no cwd, elsewhere (each keeping listing order)."""
    groups: list[list[SidebarRow]] = [[], [], []]
    for row in rows:
        if row.cwd is not None and row.cwd == target_cwd:
            groups[0].append(row)
        elif row.cwd is None:
            groups[1].append(row)
        else:
            groups[2].append(row)
    return groups


class SessionSidebar(OptionList):
    """Lists sessions; choosing one posts ``Chosen``. The current session is marked ``▸``."""

    DEFAULT_CSS = """
    SessionSidebar {
        width: 32;
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-muted;
        padding: 0;
        scrollbar-size-vertical: 1;
        &:focus { border: round $primary; }
    }
    """

    @dataclass
    class Chosen(Message):
        """The user picked the session ``session_id``."""

        sidebar: SessionSidebar
        session_id: str

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Sessions"
        self.home = home
        self._shown: tuple[object, ...] | None = None

    def show(
        self,
        records: list[SessionRecord],
        titles: dict[str, str | None],
        problems: list[StoreProblem],
        current_id: str,
        target_cwd: str | None,
        now: int,
    ) -> None:
        """Rebuild the rows when anything they show changed (keeps the highlighted session)."""
        rows = [
            SidebarRow(record.header.id, titles.get(record.header.id), record.header.cwd, record.header.created_at)
            for record in records
        ]
        state = (tuple(rows), tuple(problem.message for problem in problems), current_id, target_cwd, now // 60_000)
        if state == self._shown:
            return
        self._shown = state
        highlighted = self.highlighted_id
        options: list[Option] = []
        for title, group in zip(GROUP_TITLES, group_rows(rows, target_cwd), strict=True):
            if not group:
                continue
            options.append(Option(Text(f"{title} ({len(group)})", style="bold dim"), disabled=True))
            for row in group:
                options.append(Option(self._line(row, row.session_id == current_id, now), id=row.session_id))
        if problems:
            options.append(Option(Text(f"Unreadable ({len(problems)})", style="bold red"), disabled=True))
            for problem in problems:
                name = visible(os.path.basename(os.path.dirname(problem.path)) or str(problem.path))
                options.append(
                    Option(Text(f"  ✖ {name}", style="red", no_wrap=True, overflow="ellipsis"), disabled=True)
                )
        self.set_options(options)
        if highlighted is not None:
            self.highlight_id(highlighted)

    def _line(self, row: SidebarRow, current: bool, now: int) -> Table:
        line = Table.grid(expand=True)
        line.add_column(width=2, no_wrap=True)
        line.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        line.add_column(width=4, justify="right", no_wrap=True, style="dim")
        label = Text(visible(row.title or row.session_id), style="bold" if current else "")
        line.add_row(Text("▸", style="bold #ffaf00") if current else "", label, age(row.created_at, now))
        return line

    @property
    def highlighted_id(self) -> str | None:
        """The id of the highlighted session row."""
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id

    def highlight_id(self, session_id: str) -> None:
        """Highlight the row of ``session_id`` when it is listed."""
        with contextlib.suppress(OptionDoesNotExist):
            self.highlighted = self.get_option_index(session_id)

    def _on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(self, event.option.id))

    @staticmethod
    def describe_cwd(cwd: str | None, home: str | None) -> str:
        """The cwd as the header shows it."""
        return short_cwd(cwd, 48, home)
