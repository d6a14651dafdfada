"""Where the `@` picker opens and what counts as one mention token in the prompt (TUI.md).

Pure text rules on one line of the draft; the prompt widget applies them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from core.reference.uri import find_mention_spans

# JavaScript's whitespace set, as the mention grammar uses it.
_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_TRIGGER = re.compile(r"(?:^|(?<=[" + _WHITESPACE + r"]))@([^" + _WHITESPACE + r"]*)\Z")


class PickerQuery(NamedTuple):
    """An open `@query` before the cursor: the column of its `@` and the query after it."""

    start: int
    query: str


def picker_query(line: str, column: int, tokens: list[tuple[int, int]] | None = None) -> PickerQuery | None:
    """The `@query` that ends at ``column`` of ``line``, or ``None`` when the picker must stay closed.

    The `@` starts the line or follows whitespace, the query has no whitespace and does not start
    with a quote (`@"...` is a quoted mention), and the `@` is not inside an existing mention token
    (``tokens``: the prompt's, chips included; by default the line's mention spans).
    """
    before = line[:column]
    match = _TRIGGER.search(before)
    if match is None or match.group(1).startswith('"'):
        return None
    at = match.start()
    for start, end in tokens if tokens is not None else find_mention_spans(line):
        if start <= at < end or start < column <= end:
            return None
    return PickerQuery(at, match.group(1))


def token_ending_at(line: str, column: int) -> tuple[int, int] | None:
    """The mention token whose last character is just before ``column`` (for atomic Backspace)."""
    for start, end in find_mention_spans(line):
        if end == column:
            return start, end
    return None


def token_starting_at(line: str, column: int) -> tuple[int, int] | None:
    """The mention token that starts at ``column`` (for atomic Delete)."""
    for start, end in find_mention_spans(line):
        if start == column:
            return start, end
    return None


def token_around(line: str, column: int) -> tuple[int, int] | None:
    """The mention token strictly containing ``column`` (the cursor never rests inside one)."""
    for start, end in find_mention_spans(line):
        if start < column < end:
            return start, end
    return None
