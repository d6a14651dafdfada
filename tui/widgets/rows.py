"""``RowList``: a scrolling list of text rows on Textual's line API, one of them highlighted.

The picker and the sessions sidebar are both long lists whose rows change often; rendering only the
visible rows from plain segments keeps a repaint to a few milliseconds whatever the list's length.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.scroll_view import ScrollView
from textual.strip import Strip

ROW_PARTS = ("heading", "muted", "badge", "match", "mark", "problem")
"""The parts of a row with a look of their own; each is the component class ``rows--<part>``."""


class RowList(ScrollView):
    """Rows ``0 .. row_count()-1``; subclasses say which are selectable and what each shows.

    ``HIGHLIGHT`` names the component class whose style marks the highlighted row. The parts of a
    row (``ROW_PARTS``) take their colours from the theme through component classes, so a theme
    switch (or a light terminal's theme) repaints them too; ``part(name)`` is the Rich style.
    """

    HIGHLIGHT = ""
    COMPONENT_CLASSES = {f"rows--{part}" for part in ROW_PARTS}
    DEFAULT_CSS = """
    RowList {
        & > .rows--heading { color: $text-muted; text-style: bold; }
        & > .rows--muted { color: $text-muted; }
        & > .rows--badge { color: $background; background: $secondary; text-style: bold; }
        & > .rows--match { color: $warning; text-style: bold underline; }
        & > .rows--mark { color: $warning; text-style: bold; }
        & > .rows--problem { color: $error; }
    }
    """

    def part(self, name: str) -> Style:
        """The style of row part ``name`` (one of ``ROW_PARTS``) under the current theme.

        Only what the part sets (colour, background, text style), so a highlighted row keeps its
        background; translucent theme colours (``$text-muted``) are blended onto the widget's own
        background here, since a terminal cell has no alpha. Cached per theme.
        """
        if not self.is_attached:
            return Style()  # a widget used outside any app (the display fuzz target): no theme to follow
        key = (name, self.app.theme)
        cached = self._parts.get(key)
        if cached is None:
            styles = self.get_component_styles(f"rows--{name}")
            behind = self.background_colors[1]
            if styles.has_rule("background"):
                behind += styles.background
            color = None
            if styles.has_rule("color"):
                # ``$text-muted`` is "auto" text in some themes: the contrast colour of what is behind it.
                wanted = behind.get_contrast_text(styles.color.a) if styles.auto_color else styles.color
                color = (behind + wanted).rich_color
            bgcolor = behind.rich_color if styles.has_rule("background") else None
            cached = self._parts[key] = Style(color=color, bgcolor=bgcolor) + styles.text_style
        return cached

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.highlighted: int | None = None
        self._parts: dict[tuple[str, str], Style] = {}

    def row_count(self) -> int:
        """How many rows there are."""
        raise NotImplementedError

    def is_selectable(self, index: int) -> bool:
        """Whether row ``index`` can be highlighted (headings cannot)."""
        raise NotImplementedError

    def row_segments(self, index: int, width: int) -> list[Segment]:
        """What row ``index`` shows, at most ``width`` cells."""
        raise NotImplementedError

    def row_extent(self, index: int) -> int:
        """How many rows, from selectable row ``index`` on, belong to it (highlighted together)."""
        return 1

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= self.row_count():
            return Strip.blank(width, base)
        highlighted = self.highlighted
        lit = highlighted is not None and highlighted <= index < highlighted + self.row_extent(highlighted)
        style = base + self.get_component_rich_style(self.HIGHLIGHT) if lit else base
        return Strip(self.row_segments(index, width)).apply_style(style).crop_extend(0, width, style)

    def move_highlight(self, step: int, *, wrap: bool) -> None:
        """Move the highlight ``step`` selectable rows, wrapping around or stopping at the ends."""
        selectable = [index for index in range(self.row_count()) if self.is_selectable(index)]
        if not selectable:
            return
        if self.highlighted not in selectable:
            self.highlighted = selectable[0 if step > 0 or not wrap else -1]
        else:
            position = selectable.index(self.highlighted) + step
            if wrap:
                position %= len(selectable)
            self.highlighted = selectable[max(0, min(len(selectable) - 1, position))]
        self.keep_highlight_visible()
        self.refresh()

    def keep_highlight_visible(self) -> None:
        """Scroll so the highlighted row (and the heading just above it) is on screen."""
        if self.highlighted is None:
            return
        top = self.scroll_offset.y
        height = max(1, self.scrollable_content_region.height)
        first = self.highlighted
        if first > 0 and not self.is_selectable(first - 1):
            first -= 1
        last = self.highlighted + self.row_extent(self.highlighted) - 1
        if first < top:
            self.scroll_to(0, first, animate=False, immediate=True)
        elif last >= top + height:
            self.scroll_to(0, last - height + 1, animate=False, immediate=True)

    def row_at(self, event: events.MouseEvent) -> int | None:
        """The selectable row under the mouse, or ``None``."""
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        index = self.scroll_offset.y + offset.y
        return index if 0 <= index < self.row_count() and self.is_selectable(index) else None
