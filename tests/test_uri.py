"""The dsh-session: URI and mention codec (CONTRACT §2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import (
    ReferenceInput,
    SessionReferenceError,
    decode_session_reference_uri,
    encode_session_reference_uri,
    format_session_reference_mention,
    parse_session_reference_text,
)
from tests.support.strategies import js_strings

SOURCE_URI = "dsh-session:InNvdXJjZSI"


@pytest.mark.parametrize(
    ("session_id", "uri"),
    [("source", SOURCE_URI), ("source-session", "dsh-session:InNvdXJjZS1zZXNzaW9uIg"), ("", "dsh-session:IiI")],
)
def test_golden_uris(session_id: str, uri: str) -> None:
    assert encode_session_reference_uri(session_id) == uri
    assert decode_session_reference_uri(uri) == session_id


@pytest.mark.parametrize(
    "uri",
    [
        "dsh-session:IiJ",  # decodes to "" but is not canonical
        "dsh-session:",
        "dsh-session:%%%",
        "dsh-session:InNvdXJjZSI=",
        "other:InNvdXJjZSI",
        "dsh-session:MQ",  # JSON 1, not a string
        "dsh-session:A",  # not decodable base64
        "dsh-session:_w",  # not UTF-8
    ],
)
def test_invalid_uri_is_rejected_with_cause(uri: str) -> None:
    with pytest.raises(SessionReferenceError) as caught:
        decode_session_reference_uri(uri)
    assert caught.value.code == "SESSION_REFERENCE_INVALID_REFERENCE"
    assert str(caught.value).startswith("invalid session reference URI")


def test_non_canonical_uri_chains_the_reason() -> None:
    with pytest.raises(SessionReferenceError) as caught:
        decode_session_reference_uri("dsh-session:IiJ")
    assert isinstance(caught.value.__cause__, ValueError)


@given(js_strings)
def test_uri_round_trips_every_javascript_string(session_id: str) -> None:
    assert decode_session_reference_uri(encode_session_reference_uri(session_id)) == session_id


def test_mention_escapes_only_backslash_and_closing_bracket() -> None:
    mention = format_session_reference_mention("id", "a\\b]c[d\ne")
    assert mention == "@[a\\\\b\\]c[d\ne](dsh-session:ImlkIg)"


def test_mention_label_defaults_to_id_and_empty_stays_empty() -> None:
    assert format_session_reference_mention("source") == f"@[source]({SOURCE_URI})"
    assert format_session_reference_mention("source", "") == f"@[]({SOURCE_URI})"


@given(js_strings, st.one_of(st.none(), js_strings))
def test_format_then_parse_round_trips(session_id: str, label: str | None) -> None:
    parsed = parse_session_reference_text("see " + format_session_reference_mention(session_id, label) + " now")
    expected_label = session_id if label is None else label
    assert parsed.references == [ReferenceInput(session_id=session_id, label=expected_label)]
    assert parsed.text == f"see @{expected_label} now"


def test_parse_replaces_mentions_and_bare_uris_in_order_with_duplicates() -> None:
    text = f"compare @[Source \\] one]({SOURCE_URI}) with {SOURCE_URI} and @[again]({SOURCE_URI})"
    parsed = parse_session_reference_text(text)
    assert parsed.text == "compare @Source ] one with @source and @again"
    assert parsed.references == [
        ReferenceInput("source", "Source ] one"),
        ReferenceInput("source", "source"),
        ReferenceInput("source", "again"),
    ]


@pytest.mark.parametrize(
    "text", ["what is a dsh-session: URI?", "see dsh-session:%%%", "no references here", "dsh-session:"]
)
def test_ordinary_text_yields_no_reference(text: str) -> None:
    parsed = parse_session_reference_text(text)
    assert parsed.text == text
    assert parsed.references == []


@pytest.mark.parametrize("text", ["@[bad](dsh-session:%%%)", "@[empty](dsh-session:)", "see dsh-session:IiJ"])
def test_malformed_reference_fails_without_partial_result(text: str) -> None:
    with pytest.raises(SessionReferenceError) as caught:
        parse_session_reference_text(f"@[ok]({SOURCE_URI}) then {text}")
    assert caught.value.code == "SESSION_REFERENCE_INVALID_REFERENCE"


def test_bare_uri_stops_at_first_non_base64url_character() -> None:
    parsed = parse_session_reference_text(f"see {SOURCE_URI}.")
    assert parsed.text == "see @source."
    assert parsed.references == [ReferenceInput("source", "source")]


def test_label_may_span_lines_but_an_escape_never_takes_a_line_terminator() -> None:
    # `[^\\\]]` matches a newline; JavaScript's `.` after a backslash does not.
    assert parse_session_reference_text(f"@[two\nlines]({SOURCE_URI})").references == [
        ReferenceInput("source", "two\nlines")
    ]
    for terminator in ("\n", "\r", "\u2028", "\u2029"):
        parsed = parse_session_reference_text(f"@[a\\{terminator}b]({SOURCE_URI})")
        # The mention does not match, so only the bare URI inside it is a reference.
        assert parsed.references == [ReferenceInput("source", "source")]
    assert parse_session_reference_text(f"@[a\\\x85b]({SOURCE_URI})").references == [ReferenceInput("source", "a\x85b")]


@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000", "\ufeff", "\v", "\u202f"])
def test_javascript_whitespace_ends_a_mention_uri(space: str) -> None:
    # The mention alternative fails at the whitespace; the bare URI before it still matches.
    parsed = parse_session_reference_text(f"@[x]({SOURCE_URI}{space})")
    assert parsed.references == [ReferenceInput("source", "source")]


@pytest.mark.parametrize("not_space", ["\x85", "\x1c", "\x1f"])
def test_python_only_whitespace_does_not_end_a_mention_uri(not_space: str) -> None:
    # Python's \s contains these, JavaScript's does not: the URI runs on and fails to decode.
    with pytest.raises(SessionReferenceError):
        parse_session_reference_text(f"@[x]({SOURCE_URI}{not_space})")
