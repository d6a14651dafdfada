"""The app's pure rules: when the picker opens, how values are spelt on screen, the token estimate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import format_session_reference_mention
from tui.services.mentions import PickerQuery, picker_query, token_around, token_ending_at, token_starting_at
from tui.services.text import age, bar, elide_middle, estimate_tokens, fit_cells, kib, short_cwd, visible, visible_lines


@pytest.mark.parametrize(
    ("line", "column", "expected"),
    [
        ("@", 1, PickerQuery(0, "")),
        ("see @ret", 8, PickerQuery(4, "ret")),
        ("a\t@x", 4, PickerQuery(2, "x")),
        ("mail@x", 6, None),
        ('@"quoted', 8, None),
        ("@ret more", 9, None),
        ("@ret more", 4, PickerQuery(0, "ret")),
        ("@ret", 2, PickerQuery(0, "r")),
        ("a\u3000@q", 4, PickerQuery(2, "q")),
    ],
)
def test_picker_trigger_rule(line: str, column: int, expected: PickerQuery | None) -> None:
    assert picker_query(line, column) == expected


def test_picker_never_opens_inside_or_at_the_end_of_a_mention_token() -> None:
    mention = format_session_reference_mention("s", "my label")
    line = f"x {mention}"
    for column in range(3, len(line) + 1):
        assert picker_query(line, column) is None


def test_token_boundaries() -> None:
    mention = format_session_reference_mention("s", "L")
    line = f"a {mention} b"
    end = 2 + len(mention)
    assert token_ending_at(line, end) == (2, end)
    assert token_starting_at(line, 2) == (2, end)
    assert token_around(line, 3) == (2, end)
    assert token_around(line, 2) is None and token_ending_at(line, end + 1) is None


def test_control_characters_are_escaped() -> None:
    assert visible("a\x07b\tc\x1b[31m\x7f\x9b") == "a\\x07b\\x09c\\x1b[31m\\x7f\\x9b"
    assert visible("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    assert visible_lines("one\ntwo\x07") == "one\ntwo\\x07"


@given(st.text())
def test_visible_text_has_no_control_characters(text: str) -> None:
    shown = visible(text)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or 0xD800 <= ord(ch) <= 0xDFFF for ch in shown)


def test_cwd_is_abbreviated_and_elided() -> None:
    assert short_cwd(None) == "(no cwd)"
    assert short_cwd("/home/demo/projects/x", home="/home/demo") == "~/projects/x"
    assert short_cwd("/home/demonstration", home="/home/demo") == "/home/demonstration"
    assert short_cwd("/very/long/path/to/some/project", 12, home="/") == "/very…roject"
    assert elide_middle("abcdef", 1) == "…" and elide_middle("abc", 3) == "abc"


@given(st.text(min_size=1), st.integers(min_value=1, max_value=50))
def test_elision_never_exceeds_the_width(text: str, width: int) -> None:
    assert len(elide_middle(text, width)) <= width


def test_ages_bytes_and_bars() -> None:
    minute = 60_000
    assert [age(0, ms) for ms in (5_000, 42_000, 5 * minute, 3 * 60 * minute, 2 * 1440 * minute)] == [
        "now",
        "42s",
        "5m",
        "3h",
        "2d",
    ]
    assert age(10, 0) == "now"
    assert (kib(512), kib(42_189), kib(65_536)) == ("512 B", "41.2 KiB", "64.0 KiB")
    assert bar(0, 10, 10) == "░" * 10 and bar(1, 1000, 10) == "█" + "░" * 9 and bar(64, 64, 4) == "████"


def test_token_estimate_uses_the_stated_rule() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a" * 10) == 3  # 10 x 0.3
    assert estimate_tokens("界" * 10) == 6  # 10 x 0.6
    assert estimate_tokens("ab界") == 2  # 0.6 + 0.6, rounded up


def _fit_cells_reference(text: str, width: int) -> str:
    # The obvious (quadratic) definition the fast one must agree with.
    from rich.cells import cell_len

    if cell_len(text) > width:
        while text and cell_len(text) > width - 1:
            text = text[:-1]
        text += "…"
    return text + " " * max(0, width - cell_len(text))


@given(
    st.text(alphabet=st.sampled_from(["a", " ", "~", "é", "界", "😀", "\u0301", "\x07", "\u200b"]), max_size=40),
    st.integers(min_value=0, max_value=30),
)
def test_fit_cells_agrees_with_its_definition(text: str, width: int) -> None:
    assert fit_cells(text, width) == _fit_cells_reference(text, width)


def test_fit_cells_cuts_wide_characters_on_cell_boundaries() -> None:
    assert fit_cells("界界界", 4) == "界… "  # 2 + 1, padded to 4
    assert fit_cells("abcdef", 4) == "abc…"
    assert fit_cells("ab", 4) == "ab  "
