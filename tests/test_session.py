"""Sessions, append validation, folding, model history and baking (CONTRACT §1, §8)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core import (
    PROMPT_REQUEST_DELIMITER,
    HookContext,
    MemorySessionStore,
    ReferenceInput,
    SessionEvent,
    SessionQueryError,
    SessionReferenceService,
    bake_prompt_message,
    derive_messages,
    display_prompt_content,
    fold_surface,
    project_conversation,
)
from tests.conftest import compact, say_assistant, say_user, text

USER = {"kind": "user"}


def test_seq_is_contiguous_and_time_comes_from_the_clock(store: MemorySessionStore) -> None:
    session = store.create("s")
    first = session.append("turn/start", {"turn": 0})
    second = session.append("user/message", {"content": [text("hi")], "source": USER}, surface_op="append")
    assert (first.seq, second.seq) == (0, 1)
    assert second.time == first.time + 1
    assert [e.seq for e in session.events] == [0, 1]


@pytest.mark.parametrize(
    ("event_type", "data", "kwargs", "code"),
    [
        ("user/message", {"content": []}, {}, "SESSION_QUERY_INVALID_SURFACE"),
        ("turn/start", {}, {"surface_op": "append"}, "SESSION_QUERY_INVALID_SURFACE"),
        ("turn/start", {}, {"source_event_seqs": [0]}, "SESSION_QUERY_INVALID_SURFACE"),
        ("user/message", {}, {"surface_op": "prepend"}, "SESSION_QUERY_INVALID_SURFACE"),
        ("user/message", {}, {"surface_op": {"op": "replace", "start": 5, "end": 5}}, "SESSION_QUERY_INVALID_SURFACE"),
        ("note", {"x": float("nan")}, {}, "SESSION_QUERY_INVALID_EVENT"),
        ("note", {"x": -0.0}, {}, "SESSION_QUERY_INVALID_EVENT"),
        ("note", {"x": {1: "int key"}}, {}, "SESSION_QUERY_INVALID_EVENT"),
        ("note", {"x": object()}, {}, "SESSION_QUERY_INVALID_EVENT"),
        ("", {}, {}, "SESSION_QUERY_INVALID_EVENT"),
        ("session/title", {"title": 3}, {}, "SESSION_QUERY_INVALID_EVENT"),
    ],
)
def test_rejected_append_writes_nothing(store, event_type, data, kwargs, code) -> None:
    session = store.create("s")
    say_user(session, "kept")
    before = session.events
    with pytest.raises(SessionQueryError) as caught:
        session.append(event_type, data, **kwargs)
    assert caught.value.code == code
    assert session.events == before
    assert session.append("note", {"ok": True}).seq == 1  # seq did not advance on the failure


def test_replace_rules(store: MemorySessionStore) -> None:
    session = store.create("s")
    for word in ("a", "b", "c"):
        say_user(session, word)
    with pytest.raises(SessionQueryError, match="start after end"):
        session.append(
            "user/message",
            {"content": [], "source": USER},
            surface_op={"op": "replace", "start": 2, "end": 0},
            source_event_seqs=[0, 1, 2],
        )
    with pytest.raises(SessionQueryError, match="every replaced seq"):
        session.append(
            "user/message",
            {"content": [], "source": USER},
            surface_op={"op": "replace", "start": 0, "end": 1},
            source_event_seqs=[0],
        )
    with pytest.raises(SessionQueryError, match="unique"):
        session.append(
            "user/message",
            {"content": [], "source": USER},
            surface_op={"op": "replace", "start": 0, "end": 0},
            source_event_seqs=[0, 0],
        )
    with pytest.raises(SessionQueryError, match="earlier"):
        session.append(
            "user/message",
            {"content": [], "source": USER},
            surface_op={"op": "replace", "start": 0, "end": 0},
            source_event_seqs=[0, 3],
        )
    event = session.append(
        "user/message",
        {"content": [text("sum")], "source": USER},
        surface_op={"op": "replace", "start": 0, "end": 1},
        source_event_seqs=[0, 1],
    )
    assert [e.seq for e in fold_surface(session.events)] == [event.seq, 2]


def test_append_stores_a_copy_of_the_data(store: MemorySessionStore) -> None:
    session = store.create("s")
    data: dict[str, Any] = {"content": [text("original")], "source": USER}
    session.append("user/message", data, surface_op="append")
    data["content"][0]["text"] = "mutated"
    assert session.events[0].data["content"][0]["text"] == "original"


def test_fold_rejects_a_gap_in_seqs() -> None:
    events = [SessionEvent(type="note", seq=1, time=0, data={})]
    with pytest.raises(SessionQueryError) as caught:
        fold_surface(events)
    assert caught.value.code == "SESSION_QUERY_INVALID_SURFACE"


def test_derive_messages_maps_the_surface(store: MemorySessionStore) -> None:
    session = store.create("s")
    say_user(session, "question")
    session.append(
        "assistant/chunk", {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": "ans"}}
    )
    say_assistant(session, "answer")
    session.append("assistant/message", {"turn": 0, "step": 1, "content": [], "provenance": {}}, surface_op="append")
    session.append(
        "tool/result",
        {"turn": 0, "step": 1, "callId": "c1", "content": [text("42")], "isError": False},
        surface_op="append",
    )
    assert derive_messages(session.events) == [
        {"role": "user", "content": [text("question")]},
        {"role": "assistant", "content": [text("answer")]},
        {
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": "c1", "content": [text("42")], "isError": False}],
        },
    ]
    assert session.derive_messages() == derive_messages(session.events)


def test_compaction_shadows_summarised_events(store: MemorySessionStore) -> None:
    session = store.create("s")
    say_user(session, "old question")
    say_assistant(session, "old answer")
    compact(session, "summary")
    say_user(session, "new question")
    assert [m["content"][0]["text"] for m in session.derive_messages()] == ["summary", "new question"]
    items = project_conversation(session.snapshot())
    assert [(i.text, i.checkpoint) for i in items] == [("summary", True), ("new question", False)]


def test_projection_skips_plugin_context_tools_reasoning_and_empty_text(store: MemorySessionStore) -> None:
    session = store.create("s")
    say_user(session, "workspace facts", source={"kind": "plugin", "plugin": "workspace"})
    session.append("user/message", {"content": [{"type": "image", "url": "x"}], "source": USER}, surface_op="append")
    session.append(
        "assistant/message",
        {
            "turn": 0,
            "step": 0,
            "content": [
                {"type": "reasoning", "text": "hmm"},
                text("a"),
                {"type": "tool-call", "id": "1", "name": "ls", "arguments": "{}"},
                text("b"),
            ],
            "provenance": {},
        },
        surface_op="append",
    )
    session.append("steering/message", {"turn": 0, "content": [text("steer")], "source": USER}, surface_op="append")
    session.append(
        "steering/message",
        {"turn": 0, "content": [text("bot")], "source": {"kind": "plugin", "plugin": "x"}},
        surface_op="append",
    )
    assert [(i.role, i.text) for i in project_conversation(session.snapshot())] == [
        ("assistant", "a\nb"),
        ("user", "steer"),
    ]


def test_bake_without_prefix_contexts_keeps_content_and_returns_the_rest() -> None:
    other = HookContext(source={"kind": "plugin", "plugin": "goal"}, content=[text("goal")], placement=None)
    baked = bake_prompt_message([text("hi")], [other])
    assert baked.data == {"content": [text("hi")], "source": USER}
    assert baked.separate_contexts == [other]


async def test_bake_puts_snapshot_delimiter_and_request_in_one_event(store: MemorySessionStore) -> None:
    target = store.create("target")
    source = store.create("source")
    say_user(source, "source text")
    prepared = await SessionReferenceService(store).prepare(
        target, [text("@source summarise")], [ReferenceInput("source")]
    )
    baked = bake_prompt_message(prepared.content, prepared.contexts)
    assert list(baked.data) == ["content", "source", "envelope"]
    assert baked.data["content"][0] == prepared.contexts[0].content[0]
    assert baked.data["content"][1] == {"type": "text", "text": PROMPT_REQUEST_DELIMITER}
    assert baked.data["content"][2:] == [text("@source summarise")]
    assert baked.data["envelope"] == {
        "displayContent": [text("@source summarise")],
        "prefixContexts": [{"source": prepared.contexts[0].source, "meta": prepared.contexts[0].meta}],
    }
    assert display_prompt_content(baked.data) == [text("@source summarise")]


async def test_baked_snapshot_never_propagates_into_another_snapshot(store: MemorySessionStore) -> None:
    first = store.create("first")
    middle = store.create("middle")
    outer = store.create("outer")
    say_user(first, "secret from first")
    service = SessionReferenceService(store)
    prepared = await service.prepare(middle, [text("look at @first")], [ReferenceInput("first")])
    middle.append("user/message", bake_prompt_message(prepared.content, prepared.contexts).data, surface_op="append")
    again = await service.prepare(outer, [text("and @middle")], [ReferenceInput("middle")])
    prompt = again.contexts[0].content[0]["text"]
    assert "look at @first" in prompt
    assert "secret from first" not in prompt
    assert "## My request:" not in prompt


async def test_replay_survives_source_mutation_compaction_and_deletion(store: MemorySessionStore) -> None:
    target = store.create("target")
    source = store.create("source")
    say_user(source, "the plan is A")
    say_assistant(source, "agreed on A")
    prepared = await SessionReferenceService(store).prepare(
        target, [text("continue @source")], [ReferenceInput("source")]
    )
    target.append("user/message", bake_prompt_message(prepared.content, prepared.contexts).data, surface_op="append")
    history = json.dumps(target.derive_messages())
    display = json.dumps(display_prompt_content(target.events[-1].data))
    say_user(source, "actually plan B")
    compact(source, "we switched to B")
    store.delete("source")
    assert json.dumps(target.derive_messages()) == history
    assert json.dumps(display_prompt_content(target.events[-1].data)) == display
    assert "the plan is A" in history and "plan B" not in history


def test_create_rejects_duplicates_and_relative_cwd(store: MemorySessionStore) -> None:
    store.create("s")
    with pytest.raises(SessionQueryError) as caught:
        store.create("s")
    assert caught.value.code == "SESSION_QUERY_SESSION_EXISTS"
    with pytest.raises(SessionQueryError):
        store.create("t", cwd="relative/path")
    assert store.create("w", cwd="C:\\Users\\me").cwd == "C:\\Users\\me"
    assert store.create().id != store.create().id


async def test_listing_is_newest_first_with_ties_by_id(store: MemorySessionStore) -> None:
    store.create("b", created_at=5)
    store.create("a", created_at=5)
    store.create("c", created_at=9)
    assert [r.header.id for r in await store.list_sessions()] == ["c", "a", "b"]


async def test_missing_session_is_not_found_with_quoted_id(store: MemorySessionStore) -> None:
    with pytest.raises(SessionQueryError) as caught:
        await store.read_surface('we"ird')
    assert caught.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert str(caught.value) == 'session "we\\"ird" not found'
