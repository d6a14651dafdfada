"""A record too large to parse whole: its long strings cut to their heads with the contract's exact
omission notice, in bounded memory, whatever the pieces it is read in; the reference then says what
was left out, as for every other cut."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import JsonlSessionStore, ReferenceInput, SessionReferenceService
from core.reference.projection import project_conversation
from core.serialization import omission_notice, utf8_length
from core.sessions.sources import oversized
from core.sessions.sources.claude import CLAUDE_PREFIX, ClaudeCodeSource
from core.sessions.sources.files import LINE_BYTES, json_lines
from core.sessions.sources.merged import MergedSessionQuery
from core.sessions.sources.oversized import cut_json
from tests.conftest import say_user
from tests.test_external import UUID, c_assistant, c_user, claude_file, text

_NOTICE = re.compile(r"\n\[… omitted (\d+) UTF-8 bytes …\]$")


def _same_or_cut(original: Any, cut: Any) -> None:
    """``cut`` is ``original`` with each string whole or its head plus the exact notice."""
    assert type(cut) is type(original), (original, cut)
    if type(original) is dict:
        assert list(cut) == list(original)
        for key in original:
            _same_or_cut(original[key], cut[key])
    elif type(original) is list:
        assert len(cut) == len(original)
        for one, other in zip(original, cut, strict=True):
            _same_or_cut(one, other)
    elif type(original) is str and cut != original:
        found = _NOTICE.search(cut)
        assert found, cut
        head = cut[: found.start()]
        assert original.startswith(head)
        assert int(found.group(1)) == utf8_length(original) - utf8_length(head) > 0
    else:
        assert cut == original


_TEXT = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ["😀" * 20, 'é"\\\n\t\u2028' * 9, "\ud83d" + "x" * 30, "a" * 40 + "\ud83d\ude00" * 5]
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    # (Keys are cut like any string; short ones here, so that two cut alike never merge.)
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text('ab"', max_size=3), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.booleans(), st.lists(st.integers(1, 40), min_size=1, max_size=30))
def test_every_long_string_is_its_head_and_the_exact_notice_however_the_pieces_fall(
    value: Any, ascii_only: bool, cuts: list[int]
) -> None:
    try:
        raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    except UnicodeEncodeError:  # (a surrogate is not UTF-8: a file holds it as an escape)
        raw = json.dumps(value).encode()
    pieces, at = [], 0
    for width in cuts * (len(raw) // max(1, sum(cuts)) + 1):
        pieces.append(raw[at : at + width])
        at += width
        if at >= len(raw):
            break
    pieces.append(raw[at:])
    original = oversized.STRING_KEEP
    oversized.STRING_KEEP = 16
    try:
        cut = cut_json(pieces)
    finally:
        oversized.STRING_KEEP = original
    assert cut is not None
    _same_or_cut(value, json.loads(cut.decode("utf-8", "surrogatepass")))


def test_a_record_large_for_its_many_values_is_left_out_and_malformed_json_stays_malformed() -> None:
    many = json.dumps(["x" * 100] * (oversized.STRUCTURE_BYTES // 100 + 10)).encode()
    assert cut_json([many]) is None
    for bad in (b'{"a": "unterminated', b'{"a": "x\\', b'{"a": "\\u12', b'{"a": "\\q"}', b'{"a": "\x01"}'):
        with pytest.raises(json.JSONDecodeError):
            json.loads(cut_json([bad]) or b"")


def _claude_with_a_huge_line(root: Path, huge: str) -> Path:
    return claude_file(root, [
        c_user("u1", None, "Here is the whole log:\n" + huge),
        c_assistant("a1", "u1", [text("The log ends in a panic.")]),
        c_user("u2", "a1", "What caused it?"),
    ])  # fmt: skip


def test_a_20_mb_line_reads_in_bounded_memory_with_its_head_and_the_exact_notice(tmp_path: Path) -> None:
    huge = "é" * (10 * 1024 * 1024) + "the end"  # 20 MB of UTF-8 in one message, one line
    path = _claude_with_a_huge_line(tmp_path, huge)
    assert path.stat().st_size > LINE_BYTES
    tracemalloc.start()
    records = [record for _number, record in json_lines(path)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2 * LINE_BYTES + (8 << 20), peak  # one line's first piece (read twice over), not 20 MB
    content = records[0]["message"]["content"]
    found = _NOTICE.search(content)
    assert found and content.startswith("Here is the whole log:\néé")
    whole = "Here is the whole log:\n" + huge
    assert int(found.group(1)) == utf8_length(whole) - utf8_length(content[: found.start()])
    assert [record["uuid"] for record in records] == ["u1", "a1", "u2"]  # the lines after it read too


async def test_the_reference_to_a_session_with_a_20_mb_message_says_what_was_left_out(tmp_path: Path) -> None:
    huge = "0123456789abcdef" * (LINE_BYTES // 16 + 4096)
    _claude_with_a_huge_line(tmp_path / "claude", huge)
    store = JsonlSessionStore(tmp_path / "dsh")
    target = store.create("today", cwd="/work/app")
    say_user(target, "hello")
    query = MergedSessionQuery(store, [ClaudeCodeSource(tmp_path / "claude")])
    service = SessionReferenceService(query, {"max_reference_bytes": 256 * 1024})
    reference = ReferenceInput(CLAUDE_PREFIX + UUID, "The log")
    prepared = await service.prepare(target, [{"type": "text", "text": "why?"}], [reference])
    (context,) = prepared.contexts
    body = context.to_wire()["content"][0]["text"]
    assert "Here is the whole log:" in body and "The log ends in a panic." in body and "What caused it?" in body
    # The message is there, and so is the exact count of what it left out.
    (notice,) = [int(n) for n in re.findall(r"\[… omitted (\d+) UTF-8 bytes …\]", body)]
    whole = "Here is the whole log:\n" + huge
    assert notice == utf8_length(whole) - (oversized.STRING_KEEP - 1)  # (the head: the raw bytes kept, less "\n")
    store.close()


def test_the_notice_is_the_contracts_own() -> None:
    assert omission_notice(12) == "\n[… omitted 12 UTF-8 bytes …]"


# -- the databases: a value too long to take at once reads in slices, cut the same way ---------------

_LONG = "wombat " * (2 * 1024 * 1024)  # 14 MB of text in one message


def _cut_message(texts: list[str]) -> str:
    (cut,) = [text for text in texts if _NOTICE.search(text)]
    found = _NOTICE.search(cut)
    assert found is not None and _LONG.startswith(cut[: found.start()]) and found.start() > 60_000
    return cut


def test_crush_goose_cursor_and_hermes_read_a_message_too_long_to_take_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.sessions.sources import crush, cursor, goose, hermes
    from tests.test_agent_crush import Project, _projects
    from tests.test_agent_crush import text as crush_text
    from tests.test_agent_cursor import Cursor, bubble
    from tests.test_agent_goose import Goose
    from tests.test_agent_goose import text as goose_text
    from tests.test_agent_hermes import _database, _say, _session

    for module, name in ((crush, "MAX_PARTS_BYTES"), (goose, "MAX_CONTENT_BYTES"), (hermes, "MAX_MESSAGE_BYTES"),
                         (cursor, "MAX_VALUE_BYTES")):  # fmt: skip
        monkeypatch.setattr(module, name, 1024 * 1024)  # (a smaller limit, the same path: 14 MB is over it)
    project = Project(tmp_path / "work" / "app")
    project.session("s1", "Wombat facts")
    project.message("s1", "m1", "user", crush_text(_LONG))
    project.message("s1", "m2", "assistant", crush_text("an answer"))
    _projects(tmp_path / "crush", project)
    texts = [item.text for item in project_conversation(crush.CrushSource(tmp_path / "crush").surface("crush:s1"))]
    assert texts[1] == "an answer" and _cut_message(texts)

    geese = Goose(tmp_path / "goose")
    geese.session("g1", "Wombat facts", "/work/app")
    geese.message("g1", "user", [goose_text(_LONG)])
    geese.message("g1", "assistant", [goose_text("an answer")])
    texts = [item.text for item in project_conversation(goose.GooseSource(tmp_path / "goose").surface("goose:g1"))]
    assert texts[1] == "an answer" and _cut_message(texts)

    chats = Cursor(tmp_path / "User")
    chats.chat("c1", [bubble(1, _LONG), bubble(2, "an answer")], folder="/work/app")
    texts = [item.text for item in project_conversation(cursor.CursorSource(tmp_path / "User").surface("cursor:c1"))]
    assert texts[1] == "an answer" and _cut_message(texts)

    db = _database(tmp_path / ".hermes")
    _session(db, "h1", title="Wombat facts")
    _say(db, "h1", "user", _LONG)
    _say(db, "h1", "assistant", "\x00json:" + json.dumps([{"type": "text", "text": _LONG}]))
    source = hermes.HermesSource(tmp_path / ".hermes")
    first, second = [item.text for item in project_conversation(source.surface("hermes:h1"))]
    assert _cut_message([first]) == first and _cut_message([second]) == second
    assert int(_NOTICE.search(first).group(1)) == len(_LONG) - len(first[: _NOTICE.search(first).start()])  # type: ignore[union-attr]
