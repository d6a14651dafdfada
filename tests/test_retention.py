"""Retention: head/tail cuts, exact notices, two-phase budgets (CONTRACT §6)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import (
    MemorySessionStore,
    SessionHeader,
    SurfaceSnapshot,
    retain_head_tail,
    retain_referenced_session,
    stringify_tag_safe_json,
    truncate_with_notice,
    utf8_length,
)
from tests.conftest import compact, say_assistant, say_user
from tests.support.literal import literal_head_tail, literal_retain, literal_truncate
from tests.support.strategies import js_strings


@pytest.mark.parametrize(
    ("text", "budget", "expected", "omitted"),
    [
        ("a" * 100, 60, "a" * 27 + "\n[… omitted 73 UTF-8 bytes …]", 73),
        ("x" * 40, 31, "", 40),
        ("界" * 20, 40, "界界\n[… omitted 54 UTF-8 bytes …]", 54),
        ("😀" * 20, 50, "😀" * 4 + "\n[… omitted 64 UTF-8 bytes …]", 64),
        ("short", 10, "short", 0),
    ],
)
def test_truncate_with_notice_golden_values(text: str, budget: int, expected: str, omitted: int) -> None:
    assert truncate_with_notice(text, budget) == (expected, omitted)
    assert utf8_length(expected) <= max(budget, utf8_length(text) if omitted == 0 else budget)


def test_head_tail_keeps_whole_characters() -> None:
    assert retain_head_tail("界界界", 4, 4) == ("界界", 3)
    assert retain_head_tail("abc", 2, 1) == ("abc", 0)
    assert retain_head_tail("😀x😀", 5, 0) == ("😀x", 4)


@given(js_strings, st.integers(0, 60), st.integers(0, 60))
def test_head_tail_equals_the_literal_retainer(text: str, head: int, tail: int) -> None:
    assert retain_head_tail(text, head, tail) == literal_head_tail(text, head, tail)


@given(js_strings, st.integers(0, 120))
def test_truncate_equals_the_literal_search_and_fits(text: str, budget: int) -> None:
    result = truncate_with_notice(text, budget)
    assert result == literal_truncate(text, budget)
    if result[1]:
        assert utf8_length(result[0]) <= budget


def empty_snapshot(session_id: str = "source", cwd: str | None = None) -> SurfaceSnapshot:
    return SurfaceSnapshot(session=SessionHeader(id=session_id, created_at=0, cwd=cwd), events=[])


def test_empty_session_data_object_is_94_bytes() -> None:
    retained = retain_referenced_session(empty_snapshot(), "source", 94)
    assert retained is not None
    assert retained.size == 94 == utf8_length(stringify_tag_safe_json(retained.data))
    assert retain_referenced_session(empty_snapshot(), "source", 16) is None
    assert retain_referenced_session(empty_snapshot(), "source", 93) is None


def test_phase_one_drops_oldest_and_keeps_checkpoint_and_newest(store: MemorySessionStore) -> None:
    source = store.create("source")
    for index in range(10):
        say_user(source, f"question {index} " + "q" * 200)
        say_assistant(source, f"answer {index} " + "a" * 200)
    compact(source, "summary of everything so far")
    for index in range(10, 20):
        say_user(source, f"question {index} " + "q" * 200)
        say_assistant(source, f"answer {index} " + "a" * 200)
    retained = retain_referenced_session(source.snapshot(), "Source", 1500)
    assert retained is not None
    conversation = retained.data["conversation"]
    assert conversation[0] == {"role": "user", "text": "summary of everything so far"}
    assert conversation[-1]["text"].startswith("answer 19")
    assert retained.stats["compacted"] is True
    assert retained.stats["originalMessages"] == 21
    assert retained.stats["omittedMessages"] == 21 - len(conversation)
    assert retained.stats["truncated"] is True
    assert retained.size <= 1500
    assert "question 3" not in stringify_tag_safe_json(retained.data)  # shadowed by compaction


def test_phase_two_cuts_the_longest_text_with_a_notice(store: MemorySessionStore) -> None:
    source = store.create("source")
    say_user(source, "x" * 5000)
    retained = retain_referenced_session(source.snapshot(), "source", 1000)
    assert retained is not None
    (item,) = retained.data["conversation"]
    assert "[… omitted" in item["text"]
    assert retained.stats["omittedBytes"] == 5000 - item["text"].index("\n[…")
    assert retained.size <= 1000


def _message_events(messages: list[tuple[str, str, bool]]) -> MemorySessionStore:
    store = MemorySessionStore(clock=lambda: 0)
    session = store.create("src", cwd="/w")
    for role, body, checkpoint in messages:
        if checkpoint:
            if session.surface():
                compact(session, body)
            else:
                say_user(session, body, source={"kind": "plugin", "plugin": "compact"})
        elif role == "user":
            say_user(session, body)
        else:
            say_assistant(session, body)
    return store


conversations = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), js_strings, st.booleans()), max_size=12)


@given(conversations, st.integers(1, 700), js_strings)
def test_retention_equals_the_literal_algorithm_and_respects_the_budget(
    messages: list[tuple[str, str, bool]], budget: int, label: str
) -> None:
    store = _message_events(messages)
    snapshot = store.get("src").snapshot()  # type: ignore[union-attr]
    fast = retain_referenced_session(snapshot, label, budget)
    slow = literal_retain(snapshot, label, budget)
    if slow is None:
        assert fast is None
        return
    assert fast is not None
    assert (fast.data, fast.stats) == slow
    assert fast.size == utf8_length(stringify_tag_safe_json(fast.data)) <= budget


@given(
    st.lists(st.text(alphabet='ab<界😀\n"\\', min_size=0, max_size=300), min_size=1, max_size=30), st.integers(90, 3000)
)
def test_long_texts_with_escapes_equal_the_literal_algorithm(bodies: list[str], budget: int) -> None:
    store = _message_events([("user" if i % 2 == 0 else "assistant", body, i == 3) for i, body in enumerate(bodies)])
    snapshot = store.get("src").snapshot()  # type: ignore[union-attr]
    fast = retain_referenced_session(snapshot, "label <x>", budget)
    slow = literal_retain(snapshot, "label <x>", budget)
    result: Any = None if fast is None else (fast.data, fast.stats)
    assert result == slow
