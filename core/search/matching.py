"""Matching a needle in message text: case folding, where it occurs, and the one-line snippet a
picker row shows. Shared by every message index (SQLite beside a folder store, PostgreSQL)."""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_BODY_QUERY = 3
"""Body search needs this many characters (the trigram tokenizer's unit)."""
SNIPPET_CONTEXT = 24
"""Characters of a body snippet kept before the match when it sits far into the message."""
SNIPPET_LENGTH = 160
"""Characters a body snippet holds at most."""


@dataclass(frozen=True, slots=True)
class Snippet:
    """One line of the message a body match was found in.

    ``text`` is the message with runs of whitespace as single spaces, cut around the match
    (``…`` marks a cut); ``text[start:end]`` is the match. ``message`` is the message's position in
    the session's projected conversation, ``role`` ``"user"``, ``"assistant"`` or ``"summary"``.
    """

    text: str
    start: int
    end: int
    role: str
    message: int


def fold(text: str) -> str:
    """The case-folded form searches compare (``str.lower``, as ``list_candidates`` does)."""
    return text.lower()


def find_folded(text: str, needle: str, *, last: bool = False) -> tuple[int, int] | None:
    """Where folded ``needle`` occurs in ``text`` (case-insensitively), as a span of ``text``.

    ``last`` finds the last occurrence. Characters whose lower case is longer (``İ``) are mapped
    back, so the span always covers whole original characters.
    """
    if not needle:
        return None
    folded = text.lower()
    at = folded.rfind(needle) if last else folded.find(needle)
    if at < 0:
        return None
    if len(folded) == len(text):
        return at, at + len(needle)
    starts: list[int] = []
    for index, char in enumerate(text):
        starts.extend([index] * len(char.lower()))
    starts.append(len(text))
    end = at + len(needle)
    return starts[at], (starts[end] if starts[end] > starts[end - 1] else starts[end - 1] + 1)


_SPACES = re.compile(r"\s+")


def make_snippet(text: str, needle: str, role: str, message: int) -> Snippet | None:
    """A one-line snippet of ``text`` around the last match of folded ``needle``, or ``None``."""
    line = _SPACES.sub(" ", text).strip()
    span = find_folded(line, needle, last=True)
    if span is None:
        return None
    start, end = span
    # Cut the head only when the match would sit far into the line: a picker row shows ~50 cells.
    cut = max(0, start - SNIPPET_CONTEXT) if start > 2 * SNIPPET_CONTEXT else 0
    if cut > 0:
        space = line.find(" ", cut, start)
        if space >= 0 and start - space > 8:
            cut = space + 1
    prefix = "…" if cut > 0 else ""
    stop = max(end, cut + SNIPPET_LENGTH - len(prefix))
    suffix = "…" if stop < len(line) else ""
    offset = len(prefix) - cut
    return Snippet(prefix + line[cut:stop] + suffix, start + offset, end + offset, role, message)
