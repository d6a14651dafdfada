"""A snippet's line is its message with runs of whitespace as single spaces; the marks move with
the words they mark. Checked against the plain reading of that rule, run by run."""

from __future__ import annotations

import bisect
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from core.search.matching import _collapsed, _spaces, marked_snippet


def _reference(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """The rule run by run: each run of whitespace after some other character becomes one space,
    and an offset keeps its distance from the start of its run of other characters."""
    pieces: list[str] = []
    shift: list[tuple[int, int]] = []
    at = length = 0
    for gap in re.finditer(r"\s+", text):
        piece = text[at : gap.start()]
        shift.append((at, length))
        pieces.append(piece)
        length += len(piece)
        if length:
            pieces.append(" ")
            length += 1
        at = gap.end()
    shift.append((at, length))
    pieces.append(text[at:])
    line = "".join(pieces).rstrip()
    starts = [original for original, _ in shift]

    def move(offset: int) -> int:
        original, collapsed = shift[bisect.bisect_right(starts, offset) - 1]
        return collapsed + (offset - original)

    moved = sorted({(move(a), max(move(a) + 1, move(b - 1) + 1)) for a, b in spans})
    return line, [(a, min(b, len(line))) for a, b in moved if a < len(line)]


_TEXT = st.text(alphabet=st.sampled_from(list("ab \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000é中\ud800")), max_size=60)


@settings(max_examples=600, deadline=None)
@given(data=st.data(), text=_TEXT)
def test_the_line_and_its_marks_are_those_of_the_rule_run_by_run(data: st.DataObject, text: str) -> None:
    spans = []
    if text:
        for _ in range(data.draw(st.integers(0, 5))):
            a = data.draw(st.integers(0, len(text) - 1))
            spans.append((a, data.draw(st.integers(a + 1, len(text)))))
    assert _collapsed(text, spans) == _reference(text, spans)


def test_every_whitespace_code_point_is_below_the_table_s_end() -> None:
    table, codes = _spaces()
    assert [code for code in range(0x110000) if chr(code).isspace()] == codes.tolist()
    assert table.tolist() == [chr(code).isspace() for code in range(128)]


def test_a_long_paste_keeps_its_marked_word_in_the_line() -> None:
    text = ("filler   words\n\n" * 5000) + "the   checksum\tfailed"
    at = text.index("checksum")
    snippet = marked_snippet(text, [(at, at + len("checksum"))], "user", 7)
    assert snippet is not None
    assert snippet.text[snippet.start : snippet.end] == "checksum"
    assert snippet.text.endswith("the checksum failed")
