"""Matching a needle in message text: case folding, where it occurs, and the one-line snippet a
picker row shows. Shared by every message index (SQLite beside a folder store, PostgreSQL)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    marks: tuple[tuple[int, int], ...] = ()
    """Every span of ``text`` that matched (the words of a ranked search); ``(start, end)`` is the first."""
    score: float = 0.0
    """How well the message matched a ranked search (BM25 of its words; 0 otherwise)."""
    by_meaning: bool = False
    """Found by meaning alone: the message's head, nothing marked."""


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


def _head_cut(line: str, start: int) -> int:
    """Where a snippet of ``line`` showing a match at ``start`` begins: the head is cut only when
    the match would sit far into the line (a picker row shows ~50 cells), at a word start if near."""
    cut = max(0, start - SNIPPET_CONTEXT) if start > 2 * SNIPPET_CONTEXT else 0
    if cut > 0:
        space = line.find(" ", cut, start)
        if space >= 0 and start - space > 8:
            cut = space + 1
    return cut


def make_snippet(text: str, needle: str, role: str, message: int) -> Snippet | None:
    """A one-line snippet of ``text`` around the last match of folded ``needle``, or ``None``."""
    line = _SPACES.sub(" ", text).strip()
    span = find_folded(line, needle, last=True)
    if span is None:
        return None
    start, end = span
    cut = _head_cut(line, start)
    prefix = "…" if cut > 0 else ""
    stop = max(end, cut + SNIPPET_LENGTH - len(prefix))
    suffix = "…" if stop < len(line) else ""
    offset = len(prefix) - cut
    return Snippet(prefix + line[cut:stop] + suffix, start + offset, end + offset, role, message)


def marked_snippet(
    text: str, spans: Sequence[tuple[int, int]], role: str, message: int, score: float = 0.0
) -> Snippet | None:
    """A one-line snippet of ``text`` showing the most of ``spans`` (matches, as spans of ``text``)
    that fit in ``SNIPPET_LENGTH`` characters, each marked; ``None`` without a span."""
    if not spans:
        return None
    line, moved = _collapsed(text, spans)
    best, best_count = moved[0][0], 0
    for start, _end in moved[:200]:
        window_end = start - SNIPPET_CONTEXT + SNIPPET_LENGTH
        count = len({line[a:b].lower() for a, b in moved if a >= start and b <= window_end})
        if count > best_count:
            best, best_count = start, count
    cut = _head_cut(line, best)
    prefix = "…" if cut > 0 else ""
    stop = cut + SNIPPET_LENGTH - len(prefix)
    suffix = "…" if stop < len(line) else ""
    offset = len(prefix) - cut
    marks = tuple((a + offset, min(b, stop) + offset) for a, b in moved if a >= cut and a < stop)
    if not marks:
        return None
    return Snippet(prefix + line[cut:stop] + suffix, marks[0][0], marks[0][1], role, message, marks, score)


def plain_snippet(text: str, role: str, message: int) -> Snippet:
    """The head of a message as a one-line snippet with nothing marked (found by meaning)."""
    line = " ".join(text.split())
    cut = line[:SNIPPET_LENGTH]
    return Snippet(cut + ("…" if len(line) > SNIPPET_LENGTH else ""), 0, 0, role, message, by_meaning=True)


def _collapsed(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with runs of whitespace as single spaces (none leading or trailing), and ``spans``
    moved to match: an offset keeps its distance from the start of its run of other characters.
    Counted with numpy, not run by run in Python: a best message may be a long paste."""
    import numpy as np

    line = " ".join(text.split())  # (what ``\\s+`` as one space, stripped, gives: the same whitespace)
    if not text or not spans:
        return line, []
    if text.isascii():
        space = _spaces()[0][np.frombuffer(text.encode("ascii"), np.uint8)]
    else:
        space = np.isin(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32), _spaces()[1])
    after_space = np.empty(len(space), bool)
    after_space[0] = True  # (a leading run is dropped whole)
    after_space[1:] = space[:-1]
    dropped = np.flatnonzero(space & after_space)  # a run's first space is kept, the others are not
    runs = np.flatnonzero(~space & after_space)  # where each run of other characters starts
    if not len(runs) or runs[0] != 0:
        runs = np.concatenate(([0], runs))
    offsets = sorted({offset for a, b in spans for offset in (a, b - 1)})
    at = np.asarray(offsets, np.int64)
    run = runs[np.searchsorted(runs, at, "right") - 1]
    moved_to = run - np.searchsorted(dropped, run) + (at - run)
    move = dict(zip(offsets, moved_to.tolist(), strict=True))
    moved = sorted({(move[a], max(move[a] + 1, move[b - 1] + 1)) for a, b in spans})
    return line, [(a, min(b, len(line))) for a, b in moved if a < len(line)]


@functools.cache
def _spaces() -> tuple[Any, Any]:
    """Which bytes are whitespace (a table by ASCII code), and every whitespace code point (all
    below U+3001: a test holds it), as ``str.isspace`` and ``\\s`` say."""
    import numpy as np

    table = np.array([chr(code).isspace() for code in range(128)])
    return table, np.array([code for code in range(0x3001) if chr(code).isspace()], np.uint32)


def marked_text(snippet: Snippet, before: str = "**", after: str = "**") -> str:
    """The snippet's text with each matching span between ``before`` and ``after`` (Markdown bold
    by default: what a model reads as emphasis)."""
    marks = snippet.marks or ((snippet.start, snippet.end),)
    pieces: list[str] = []
    at = 0
    for start, end in marks:
        if start < at or end <= start:
            continue
        pieces += [snippet.text[at:start], before, snippet.text[start:end], after]
        at = end
    pieces.append(snippet.text[at:])
    return "".join(pieces)
