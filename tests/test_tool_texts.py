"""Each session tool's description read against real results: every promise a description makes
(what a result holds, in which words) is checked on a store on disk, for a long session, a session
whose second-newest message is huge, one whose newest is cut, a hostile one, and a mention's
snapshot (whose bytes the contract fixes) followed by the ``read_session`` its description asks for.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from core import ReferenceInput, SessionReferenceService
from core.agent.session_tools import SessionTools
from core.reference.retention import OMISSION_NOTICE_HEAD
from tests.conftest import say_assistant, say_user, text
from tests.support.indexed_store import Indexed
from tests.test_session_tools import frame_text, split_result

LONG = 1000
WIDTH = 236
"""Filler of each long-session message: 64 KiB then keeps exactly messages 764-999."""
HOSTILE = "esc \x1b[31m csi \x9b31m del \x7f rlo \u202e lri \u2066 zwsp \u200b nel \x85"


def _description(tools: SessionTools, name: str) -> str:
    (definition,) = [d for d in tools.definitions if d["function"]["name"] == name]
    return str(definition["function"]["description"])


def _call(tools: SessionTools, name: str, **arguments: Any) -> Any:
    result = asyncio.run(tools.call(name, arguments))
    assert not result.is_error, result.text
    return result


@pytest.fixture
def store(tmp_path: Path) -> Any:
    indexed = Indexed(tmp_path / "store")
    long = indexed.session("long", cwd="/w", created_at=5)
    for index in range(LONG):
        (say_user if index % 2 == 0 else say_assistant)(long, f"message {index:03d} " + "w" * WIDTH)
    huge = indexed.session("huge", cwd="/w", created_at=4)
    for words in ("first", "second", "z" * 2_000_000, "last"):
        say_user(huge, words)
    tall = indexed.session("tall", cwd="/w", created_at=3)
    say_user(tall, "a question")
    say_assistant(tall, "head " + "long answer " * 10_000 + " tail")
    hostile = indexed.session("hostile", cwd="/w", created_at=2)
    say_user(hostile, HOSTILE)
    me = indexed.session("me", cwd="/w", created_at=6)
    say_user(me, "hello")
    indexed.sync()

    async def listing() -> Any:
        return indexed.records, indexed.titles

    target = indexed.reader.get("me")
    tools = SessionTools(SessionReferenceService(indexed.reader), indexed.search, target, listing=listing)
    yield tools, indexed
    indexed.reader.close()


_SIZE = re.compile(r'^Session "(?P<id>[^"]+)" has (?P<total>\d+) messages?, at positions? 0(–(?P<last>\d+))? ')


def _positions(spelled: str) -> list[int]:
    found: list[int] = []
    for run in spelled.split(", "):
        first, _, last = run.partition("–")
        found += range(int(first), int(last or first) + 1)
    return found


def _reference_lines(notice: str) -> dict[str, Any]:
    """What the lines before a snapshot say, read as a model would read them."""
    size = _SIZE.match(notice)
    assert size is not None, notice
    said: dict[str, Any] = {"total": int(size["total"]), "kept": [], "omitted": [], "cut": [], "call": None}
    if kept := re.search(r"keeps (?:all of them|\d+ of them): ([\d–, ]+)\.", notice):
        said["kept"] = _positions(kept[1])
    if omitted := re.search(r"omits \d+ messages?: ([\d–, ]+)\.", notice):
        said["omitted"] = _positions(omitted[1])
    if cut := re.search(r"cuts messages? ([\d–, ]+) to fit", notice):
        said["cut"] = _positions(cut[1])
    if call := re.search(r"read_session reads (?:them|it), e\.g\. (\{.*\})\.$", notice):
        said["call"] = json.loads(call[1])
    return said


def test_reference_session_says_what_its_snapshot_holds_as_its_description_promises(store: Any) -> None:
    tools, indexed = store
    description = _description(tools, "reference_session")
    assert "the very one a reference to it in the prompt carries" in description
    result = _call(tools, "reference_session", session="long")
    notice, frame = split_result(result.text)
    # "the very one a reference to it in the prompt carries": prepare's bytes.
    prepared = asyncio.run(
        SessionReferenceService(indexed.reader).prepare(tools.target, [text("")], [ReferenceInput("long")])
    )
    assert frame == prepared.contexts[0].content[0]["text"]
    # "lines outside it say how many messages the session has, which positions ... the snapshot
    # keeps, which it omits and which it cuts, and the read_session call that reads them".
    assert "lines outside it say how many messages the session has" in description
    said = _reference_lines(notice)
    assert said["total"] == LONG and said["kept"] == list(range(764, 1000)) and said["omitted"] == list(range(764))
    assert said["cut"] == [] and "<" not in notice
    stats = prepared.contexts[0].meta["references"][0]
    assert (stats["originalMessages"], stats["retainedMessages"], stats["omittedMessages"]) == (1000, 236, 764)
    # "(0 is the first, as read_session counts them)": the kept positions are read_session's.
    (source,) = json.loads(frame_text(result.text, "referenced-sessions"))
    kept_texts = [item["text"] for item in source["conversation"]]
    read = _call(tools, "read_session", session="long", from_message=764)
    page = json.loads(frame_text(read.text, "session-messages"))
    assert [m["text"] for m in page["messages"]] == kept_texts[: len(page["messages"])]
    # The call it names reads what was omitted, from message 0; message 3 is there to read.
    assert said["call"] == {"session": "long", "from_message": 0, "to_message": 764}
    first = json.loads(frame_text(_call(tools, "read_session", **said["call"]).text, "session-messages"))
    assert first["messages"][0]["text"].startswith("message 000 ") and first["from"] == 0
    third = _call(tools, "read_session", session="long", from_message=3, to_message=4)
    assert json.loads(frame_text(third.text, "session-messages"))["messages"] == [
        {"index": 3, "role": "assistant", "text": "message 003 " + "w" * WIDTH}
    ]


def test_a_huge_second_newest_message_is_named_as_omitted(store: Any) -> None:
    tools, _ = store
    result = _call(tools, "reference_session", session="huge")
    notice, _frame = split_result(result.text)
    said = _reference_lines(notice)
    assert (said["total"], said["kept"], said["omitted"]) == (4, [3], [0, 1, 2])
    assert said["call"] == {"session": "huge", "from_message": 0, "to_message": 3}
    # read_session brings the three back; the huge one cut to a page with dsh's notice.
    page = json.loads(frame_text(_call(tools, "read_session", **said["call"]).text, "session-messages"))
    assert [m["text"] for m in page["messages"]] == ["first", "second"] and page["remainingAfter"] == 2
    cut = _call(tools, "read_session", session="huge", from_message=2, to_message=3)
    assert "Message 2 is longer than a page: it is cut to fit" in cut.text
    (message,) = json.loads(frame_text(cut.text, "session-messages"))["messages"]
    assert message["index"] == 2 and OMISSION_NOTICE_HEAD in message["text"]


def test_a_cut_newest_message_is_named_as_cut(store: Any) -> None:
    tools, _ = store
    description = _description(tools, "reference_session")
    assert "long ones cut with an '[… omitted N UTF-8 bytes …]' notice" in description
    result = _call(tools, "reference_session", session="tall")
    notice, _frame = split_result(result.text)
    said = _reference_lines(notice)
    # The newest alone is over the budget: the question is omitted, the answer kept and cut.
    assert (said["total"], said["kept"], said["omitted"], said["cut"]) == (2, [1], [0], [1])
    assert "It cuts message 1 to fit" in notice
    assert said["call"] == {"session": "tall", "from_message": 0, "to_message": 1}
    (answer,) = json.loads(frame_text(result.text, "referenced-sessions"))[0]["conversation"]
    assert answer["text"].startswith("head long answer") and OMISSION_NOTICE_HEAD in answer["text"]
    # A session kept whole says so.
    whole = _reference_lines(split_result(_call(tools, "reference_session", session="hostile").text)[0])
    assert (whole["total"], whole["kept"], whole["omitted"], whole["cut"], whole["call"]) == (1, [0], [], [], None)


def test_read_session_pages_say_what_they_hold_as_its_description_promises(store: Any) -> None:
    tools, _ = store
    description = _description(tools, "read_session")
    assert "call read_session with no range to learn the session's size and read from its first message" in description
    assert "A page holds at most 64 KiB" in description
    start, seen = None, 0
    while True:
        arguments = {} if start is None else {"from_message": start}
        result = _call(tools, "read_session", session="long", **arguments)
        notice, _frame = split_result(result.text)
        page = json.loads(frame_text(result.text, "session-messages"))
        assert len(frame_text(result.text, "session-messages").encode()) <= 65536
        # "how many messages the session has, which positions the page holds, how many come before
        # and after it, and where the next page starts"
        lines = notice.splitlines()
        assert _SIZE.match(lines[0]) and _SIZE.match(lines[0])["total"] == str(page["totalMessages"])
        holds = f"This page holds {page['from']}–{page['to'] - 1}: {page['from']} before it, "
        assert lines[1] == holds + f"{page['remainingAfter']} after it."
        seen += len(page["messages"])
        if page["remainingAfter"] == 0:
            assert len(lines) == 2
            break
        assert lines[2] == f"The next page: from_message {page['to']}."
        start = page["to"]
    assert seen == LONG
    # The page bound the description names is the instance's own.
    small = SessionTools(tools.service, tools.search, tools.target, read_bytes=4096)
    assert "A page holds at most 4 KiB" in _description(small, "read_session")
    page_text = frame_text(_call(small, "read_session", session="long").text, "session-messages")
    assert len(page_text.encode()) <= 4096


def test_a_mention_in_the_prompt_is_followed_up_as_the_description_says(store: Any) -> None:
    """A mention's snapshot carries no counts (its bytes are the contract's): the read_session
    description tells the model how to learn what it lacks, and that call answers with the size first."""
    tools, indexed = store
    prepared = asyncio.run(
        SessionReferenceService(indexed.reader).prepare(tools.target, [text("")], [ReferenceInput("long")])
    )
    snapshot = prepared.contexts[0].content[0]["text"]
    assert "1000" not in snapshot and "message 000 " not in snapshot  # nothing says what was left out
    description = _description(tools, "read_session")
    assert "referenced in the user's prompt" in description and "may omit older ones" in description
    notice, _frame = split_result(_call(tools, "read_session", session="long").text)
    assert notice.startswith('Session "long" has 1000 messages, at positions 0–999 (0 is the first).')


def test_search_results_hold_the_fields_its_description_names(store: Any, tmp_path: Path) -> None:
    tools, _ = store
    description = _description(tools, "search_sessions")
    for field in ("(session)", "(uri)", "(label)", "(cwd)", "(messages:", "(message)", "(matched: title, id or cwd)"):
        assert field in description
    said = json.loads(frame_text(_call(tools, "search_sessions", query='"message 003"').text, "session-search-results"))
    (hit,) = said["sessions"]
    assert set(hit) == {"session", "uri", "label", "cwd", "messages"} and hit["messages"][0]["role"] == "assistant"
    assert set(hit["messages"][0]) == {"message", "role", "text"} and "**message 003**" in hit["messages"][0]["text"]
    assert hit["uri"].startswith("dsh-session:") and "note" not in said
    matched = json.loads(frame_text(_call(tools, "search_sessions", query="huge").text, "session-search-results"))
    assert matched["sessions"][0]["matched"] == "id"
    # "a note says when what was said was not searched in full (message search off or not ready yet)";
    # a query of one letter searches titles, ids and folders only, and says so.
    short = json.loads(frame_text(_call(tools, "search_sessions", query="t").text, "session-search-results"))
    assert short["note"].startswith("what was said is searched for words of two characters or more")
    fresh = Indexed(tmp_path / "fresh")
    say_user(fresh.session("other", cwd="/w"), "the wombat decision")
    fresh.writer.close()
    fresh.sources()  # listed, never indexed: the index is not ready

    async def listing() -> Any:
        return fresh.records, {}

    waiting = SessionTools(tools.service, fresh.search, tools.target, listing=listing)
    pending = json.loads(frame_text(_call(waiting, "search_sessions", query="wombat").text, "session-search-results"))
    assert pending["note"].startswith("message search is not ready yet") or pending["note"].startswith(
        "message search is off here"
    )
    fresh.reader.close()


def test_tool_texts_escape_terminal_controls_and_bidi_as_the_display_does(store: Any) -> None:
    tools, _ = store
    results = [
        _call(tools, "reference_session", session="hostile"),
        _call(tools, "read_session", session="hostile"),
        _call(tools, "search_sessions", query="csi"),
    ]
    for result in results:
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b]", result.text), result.text
    # Escaped as JSON escapes: the frame still reads back the very text.
    page = json.loads(frame_text(results[1].text, "session-messages"))
    assert page["messages"][0]["text"] == HOSTILE
    snapshot = json.loads(frame_text(results[0].text, "referenced-sessions"))
    assert snapshot[0]["conversation"][0]["text"] == HOSTILE
