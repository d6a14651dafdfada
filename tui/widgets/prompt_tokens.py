"""Where the prompt's tokens are (chips, and mentions that do not parse), and how an edit or a
selection is kept from cutting into one. A part of ``tui.widgets.prompt.PromptArea``, given its chip
book and its document."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets.text_area import DocumentBase, Edit, Selection

from core.reference.uri import find_mention_spans
from tui.services.chips import ChipBook

Span = tuple[int, int]


class PromptTokens:
    """The token spans of a prompt's lines.

    Args:
        chips: the prompt's chip book (a chip is a token).
        document: the prompt's document now (it is replaced when text is loaded).
    """

    def __init__(self, chips: ChipBook, document: Callable[[], DocumentBase]) -> None:
        self._chips = chips
        self._document = document

    def spans(self, line: str) -> list[Span]:
        """The spans of ``line`` that are one unit: chips, and mentions that do not parse."""
        chips = [(chip.start, chip.end) for chip in self._chips.chips(line)]
        spans = list(chips)
        if "@[" in line or "dsh-session:" in line:
            for start, end in find_mention_spans(line):
                if not any(chip_start < end and start < chip_end for chip_start, chip_end in chips):
                    spans.append((start, end))
        return sorted(spans)

    def at(self, row: int, where: Callable[[int, int], bool]) -> Span | None:
        """The first token of ``row`` for which ``where(start, end)`` holds."""
        document = self._document()
        if not 0 <= row < document.line_count:
            return None  # an edit may end just past the last line
        return next((span for span in self.spans(document.get_line(row)) if where(*span)), None)

    def whole(self, edit: Edit) -> Edit:
        """``edit`` with an end that falls inside a token moved to that token's edge: a range grows
        to cover the token, an insertion point moves past it."""
        first, last = sorted((edit.from_location, edit.to_location))
        inside_first = self.at(first[0], lambda start, end: start < first[1] < end)
        inside_last = self.at(last[0], lambda start, end: start < last[1] < end)
        if inside_first is None and inside_last is None:
            return edit
        if first == last:
            assert inside_first is not None
            first = last = (first[0], inside_first[1])
        else:
            first = (first[0], inside_first[0]) if inside_first is not None else first
            last = (last[0], inside_last[1]) if inside_last is not None else last
        return Edit(edit.text, first, last, edit.maintain_selection_offset)

    def widened(self, selection: Selection) -> Selection | None:
        """``selection`` widened to cover every token it reaches into (``None``: it cuts none)."""
        start, end = selection
        forward = start <= end
        low, high = (start, end) if forward else (end, start)
        low_token = self.at(low[0], lambda first, last: first < low[1] < last)
        high_token = self.at(high[0], lambda first, last: first < high[1] < last)
        if low_token is None and high_token is None:
            return None
        low = (low[0], low_token[0]) if low_token is not None else low
        high = (high[0], high_token[1]) if high_token is not None else high
        return Selection(low, high) if forward else Selection(high, low)
