"""Context accounting, windows and compaction in dsh's format, against a local DeepSeek-like server."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from core import AgentLoop, JsonlSessionStore, OpenAICompatibleModel, SessionReferenceService
from core.agent.chat_models import MODEL_CONTEXT_LENGTH
from core.agent.compaction import (
    CHECKPOINT_PREAMBLE,
    COMPACTION_CANCELLED,
    COMPACTION_FAILED,
    CONTEXT_PROMPT_TOO_LARGE,
    CompactionError,
)
from core.agent.context import ContextMeter
from core.agent.defaults import CompactionPolicy
from core.agent.loop import ContextSettings
from core.agent.openai_model import dsh_usage
from core.agent.tokens import (
    ContextWindow,
    WindowMemory,
    context_limit_in,
    estimate_tokens,
    is_context_overflow,
    resolve_window,
)
from core.reference.uri import ReferenceInput
from tests.conftest import say_assistant, say_user, text
from tests.support.fake_deepseek import FakeDeepSeek, rule_tokens


def model_for(server: FakeDeepSeek, name: str = "deepseek-chat") -> OpenAICompatibleModel:
    return OpenAICompatibleModel(base_url=server.base_url, api_key="sk-test", model=name, timeout=10)


def file_bytes(store: JsonlSessionStore, session_id: str) -> bytes:
    [path] = [path for path in Path(store.root).rglob("session.jsonl*") if session_id in str(path)]
    return path.read_bytes()


def long_words(seed: int, size: int) -> str:
    words = [f"fact{seed}-{index} value {index * 7}" for index in range(size // 24)]
    return " ".join(words)[:size]


def chat(session: Any, turns: int, size: int) -> None:
    for index in range(turns):
        say_user(session, f"question {index}: " + long_words(index, size))
        say_assistant(session, f"answer {index}: " + long_words(index + 1000, size // 4))


# -- estimates and windows ---------------------------------------------------------------------------


def test_estimate_follows_deepseeks_rule() -> None:
    assert estimate_tokens("a" * 10) == 3
    assert estimate_tokens("你好") == 2  # 1.2 rounded up
    assert estimate_tokens("") == 0


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        (
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens "
            "(140000 in the messages, 0 in the completion).",
            131072,
        ),
        ("the request exceeds the available context size (4096 tokens), try increasing it", 4096),
        ("This model's maximum context length is 32,768 tokens", 32768),
        ("prompt is too long for this model", None),
    ],
)
def test_a_servers_error_states_its_window(text: str, limit: int | None) -> None:
    assert context_limit_in(text) == limit
    assert is_context_overflow(text)


def test_other_errors_are_not_overflows() -> None:
    assert not is_context_overflow("Insufficient Balance")
    assert not is_context_overflow("rate limit reached for requests")


def test_windows_are_learned_then_configured_then_built_in(tmp_path: Path) -> None:
    memory = WindowMemory(tmp_path / "state" / "windows.json")
    assert resolve_window("deepseek-chat") == ContextWindow(131072, "built-in")
    assert resolve_window("llama3") == ContextWindow(131072, "assumed")
    assert resolve_window("llama3", configured=8192) == ContextWindow(8192, "config")
    memory.learn("http://user:secret@Localhost:8080/v1/", "llama3", 4096)
    assert resolve_window("llama3", base_url="http://localhost:8080/v1", configured=8192, memory=memory) == (
        ContextWindow(4096, "learned")
    )
    # A configured window below what the server takes is a choice, and is kept.
    assert resolve_window("llama3", base_url="http://localhost:8080/v1", configured=2048, memory=memory) == (
        ContextWindow(2048, "config")
    )
    # The next session (a new memory on the same file) knows it; the file holds no credentials.
    again = WindowMemory(tmp_path / "state" / "windows.json")
    assert again.get("http://localhost:8080/v1", "llama3") == 4096
    saved = (tmp_path / "state" / "windows.json").read_text()
    assert "secret" not in saved and "user" not in saved
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "windows.json").st_mode) == 0o600


def test_a_damaged_window_file_reads_as_empty_and_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "windows.json"
    path.write_text("{not json")
    memory = WindowMemory(path)
    assert memory.get("http://x", "m") is None
    memory.learn("http://x", "m", 1000)
    assert json.loads(path.read_text()) == {"http://x m": 1000}


def test_usage_is_stored_in_dshs_token_usage_shape() -> None:
    wire = {"prompt_tokens": 900, "completion_tokens": 40, "prompt_cache_hit_tokens": 640, "total_tokens": 940}
    assert dsh_usage(wire) == {"inputTokens": 260, "outputTokens": 40, "cacheReadTokens": 640}
    openai = {
        "prompt_tokens": 100,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }
    assert dsh_usage(openai) == {"inputTokens": 36, "outputTokens": 9, "cacheReadTokens": 64, "reasoningTokens": 5}
    assert dsh_usage({"prompt_tokens": "x"}) is None


# -- accounting ---------------------------------------------------------------------------------------


async def test_the_meter_starts_from_reported_usage_and_calibrates_what_was_added(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    session = store.create("s")
    # A server whose tokenizer counts a quarter more than the rule of thumb.
    with FakeDeepSeek(count=lambda value: rule_tokens(value) * 1.25) as server:
        loop = AgentLoop(session, model_for(server))
        for index in range(3):
            await loop.followup([text(f"turn {index}: " + long_words(index, 3000))])
            await loop.when_idle()
        reading = loop.context()
        last = server.answered[-1].prompt_tokens
        assert reading.reported == last
        # The next request: what the server counted last time, plus the reply and nothing else.
        next_messages = [{"role": m["role"], "content": m["content"]} for m in _wire(session)]
        truth = server.prompt_tokens(next_messages)
        assert abs(reading.used - truth) / truth < 0.02
        # The calibration learned how much more the server counts than the bare rule.
        assert 1.2 < reading.calibration < 1.3


def _wire(session: Any) -> list[dict[str, Any]]:
    from core.agent.wire import wire_messages

    return wire_messages(session.derive_messages())


def test_without_usage_the_meter_is_the_estimate(store) -> None:
    session = store.create("s")
    chat(session, 2, 1000)
    reading = ContextMeter(session).read(ContextWindow(10_000, "config"), 0.8)
    assert reading.reported is None and reading.calibration == 1.0
    assert reading.used == reading.estimated > 0
    assert reading.threshold == 8000 and reading.messages == 4


# -- compaction ---------------------------------------------------------------------------------------


async def test_compact_now_writes_dshs_events_and_the_checkpoint_replaces_the_history(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    session = store.create("s", cwd="/p")
    chat(session, 6, 4000)
    before = [event.seq for event in session.surface()]
    with FakeDeepSeek() as server:
        loop = AgentLoop(session, model_for(server), context=ContextSettings(window=20_000))
        result = await loop.compact_now()
    events = session.events
    start, summary, checkpoint, end = events[-4:]
    assert [start.type, summary.type, checkpoint.type, end.type] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    cid = result.compaction_id
    assert start.data == {"compactionId": cid, "turn": None} == end.data
    assert list(summary.data) == [
        "compactionId",
        "summary",
        "rawOutput",
        "llmStreamCall",
        "shadowedRange",
        "shadowedSeqs",
        "shadowedTokenCount",
        "provider",
        "model",
        "maxTokens",
        "usage",
    ]
    shadowed = summary.data["shadowedSeqs"]
    assert shadowed == before[: len(shadowed)] and shadowed[0] == before[0]
    assert summary.data["shadowedRange"] == {"start": shadowed[0], "end": shadowed[-1]}
    assert summary.data["llmStreamCall"] is True and summary.data["rawOutput"] == summary.data["summary"]
    assert checkpoint.data["source"] == {"kind": "plugin", "plugin": "compact", "compactionId": cid}
    assert checkpoint.surface_op == {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}
    assert checkpoint.source_event_seqs == [start.seq, summary.seq, *shadowed]
    content = checkpoint.data["content"]
    assert content[0] == text(f"{CHECKPOINT_PREAMBLE}\n\n<compacted-summary>")
    assert content[-1] == text("</compacted-summary>") and content[1:-1] == summary.data["summary"]
    # The model now receives the checkpoint and what was kept after it.
    history = session.derive_messages()
    assert history[0]["content"] == content
    assert len(session.surface()) == len(before) - len(shadowed) + 1
    # Read back from disk, the same.
    store.close()
    reopened = JsonlSessionStore(tmp_path)
    assert [event.seq for event in reopened.get("s").surface()] == [event.seq for event in session.surface()]


async def test_a_reference_to_a_compacted_session_sends_the_checkpoint_and_what_follows(store) -> None:
    source = store.create("source")
    chat(source, 6, 3000)
    with FakeDeepSeek() as server:
        await AgentLoop(source, model_for(server), context=ContextSettings(window=12_000)).compact_now()
    say_user(source, "after the checkpoint")
    target = store.create("target")
    prepared = await SessionReferenceService(store).prepare(
        target, [text("see")], [ReferenceInput(session_id="source", label="src")]
    )
    stats = prepared.contexts[0].meta["references"][0]
    assert stats["compacted"] is True
    frame = prepared.contexts[0].content[0]["text"]
    assert "compacted-summary" in frame and "after the checkpoint" in frame
    assert "question 0:" not in frame


async def test_a_failed_or_cancelled_compaction_leaves_the_log_exactly_as_it_was(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    session = store.create("s")
    chat(session, 5, 3000)
    before = file_bytes(store, "s")
    count = len(session.events)
    with FakeDeepSeek(fail_summaries=True) as server:
        loop = AgentLoop(session, model_for(server), context=ContextSettings(window=20_000))
        with pytest.raises(CompactionError) as failed:
            await loop.compact_now()
    assert failed.value.code == COMPACTION_FAILED and "HTTP 500" in failed.value.message
    assert file_bytes(store, "s") == before and len(session.events) == count
    with FakeDeepSeek(delay=0.2) as server:
        loop = AgentLoop(session, model_for(server), context=ContextSettings(window=20_000))
        task = asyncio.create_task(loop.compact_now())
        for _ in range(500):  # the summary request is under way
            if loop.compacting is not None and loop.compacting.parts:
                break
            await asyncio.sleep(0.01)
        assert loop.status == "compacting"
        loop.cancel()
        with pytest.raises(CompactionError) as cancelled:
            await task
    assert cancelled.value.code == COMPACTION_CANCELLED
    assert file_bytes(store, "s") == before and loop.status == "idle"


async def test_a_history_too_large_for_one_summary_request_is_summarized_in_parts(store) -> None:
    session = store.create("s")
    chat(session, 12, 8000)
    say_user(session, "x" * 90_000)  # one message larger than the whole window
    say_assistant(session, "ok")
    with FakeDeepSeek(window=16_000) as server:
        loop = AgentLoop(session, model_for(server, "small"), context=ContextSettings(window=16_000))
        result = await loop.compact_now()
        summaries = [request for request in server.requests if request.summary]
    assert result.parts == len(summaries) > 2
    assert all(not request.refused and request.prompt_tokens <= 16_000 for request in server.requests)
    # Each later part carried the summary so far.
    later = summaries[1]["body"] if isinstance(summaries[1], dict) else summaries[1].body
    assert "<compacted-summary>" in later["messages"][0]["content"]
    summary = next(event for event in reversed(session.events) if event.type == "compaction/summary")
    assert "llmStreamCall" not in summary.data  # several calls made it


# -- the loop -----------------------------------------------------------------------------------------


async def test_a_send_over_the_threshold_compacts_first_and_no_request_passes_the_window(store) -> None:
    session = store.create("s")
    with FakeDeepSeek(window=12_000) as server:
        loop = AgentLoop(session, model_for(server, "m"), context=ContextSettings(window=12_000))
        for index in range(12):
            await loop.followup([text(f"turn {index}: " + long_words(index, 9000))])
            await loop.when_idle()
            assert loop.last_error is None
        assert all(not request.refused for request in server.requests)
        assert max(request.prompt_tokens for request in server.requests) <= 12_000
    starts = [event for event in session.events if event.type == "compaction/start"]
    assert starts and all(event.data["turn"] is None for event in starts)
    assert sum(1 for event in session.events if event.type == "turn/end") == 12


async def test_a_prompt_that_cannot_fit_is_refused_before_anything_is_written(store) -> None:
    session = store.create("s")
    say_user(session, "hello")
    count = len(session.events)
    with FakeDeepSeek(window=4_000) as server:
        loop = AgentLoop(session, model_for(server, "m"), context=ContextSettings(window=4_000))
        with pytest.raises(CompactionError) as refused:
            await loop.followup([text("y" * 20_000)])
        assert not server.requests
    assert refused.value.code == CONTEXT_PROMPT_TOO_LARGE
    assert "window of 4,000 tokens (config)" in refused.value.message
    assert len(session.events) == count


async def test_a_context_length_error_teaches_the_window_compacts_and_retries_once(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path / "store")
    session = store.create("s")
    memory = WindowMemory(tmp_path / "windows.json")
    chat(session, 4, 6000)
    with FakeDeepSeek(window=7_000) as server:
        model = model_for(server, "local")
        loop = AgentLoop(session, model, context=ContextSettings(memory=memory))
        assert loop.window.source == "assumed"
        await loop.followup([text("and now?")])
        await loop.when_idle()
        assert loop.last_error is None
        refused = [request for request in server.requests if request.refused]
        assert len(refused) == 1  # one refusal, then compaction, then the retried step succeeded
        assert loop.window == ContextWindow(7_000, "learned")
    start = next(event for event in session.events if event.type == "compaction/start")
    assert start.data["turn"] == 1  # inside the turn, as dsh's overflow recovery
    steps = [event.data for event in session.events if event.type == "step/start"]
    assert steps == [{"turn": 1, "step": 1}, {"turn": 1, "step": 2}]
    assert session.events[-2].data == {"turn": 1, "reason": {"kind": "completed"}}
    # The next session knows the window.
    assert WindowMemory(tmp_path / "windows.json").get(server.base_url, "local") == 7_000


async def test_a_context_length_error_is_retried_only_once(store) -> None:
    session = store.create("s")
    with FakeDeepSeek(window=100) as server:
        loop = AgentLoop(session, model_for(server, "local"), context=ContextSettings(window=100_000))
        await loop.followup([text("z" * 2_000)])
        await loop.when_idle()
        assert len(server.requests) == 1  # nothing older to compact: no retry
    assert loop.last_error is not None and loop.last_error.code == MODEL_CONTEXT_LENGTH
    end = session.events[-1]
    assert end.type == "turn/end" and end.data["reason"]["code"] == MODEL_CONTEXT_LENGTH


async def test_reasoning_streams_is_stored_as_dsh_stores_it_and_is_never_referenced(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    session = store.create("s")
    with FakeDeepSeek() as server:
        loop = AgentLoop(session, model_for(server, "deepseek-reasoner"))
        await loop.followup([text("think")])
        await loop.when_idle()
        await loop.followup([text("again")])
        await loop.when_idle()
        second = server.requests[-1].body["messages"]
    message = next(event for event in session.events if event.type == "assistant/message")
    reasoning, answer = message.data["content"]
    assert reasoning == {"type": "reasoning", "text": server.reasoning.replace(" ", " ") + " "}
    assert answer["type"] == "text" and answer["text"] == server.reply
    chunks = [event.data["chunk"] for event in session.events if event.type == "assistant/chunk"]
    assert {chunk["type"] for chunk in chunks} == {"reasoning-delta", "text-delta"}
    assert {chunk["index"] for chunk in chunks if chunk["type"] == "reasoning-delta"} == {0}
    assert {chunk["index"] for chunk in chunks if chunk["type"] == "text-delta"} == {1}
    assert message.data["usage"]["cacheReadTokens"] >= 0
    # On the wire as dsh's serializer sends it: the reasoning rides along as reasoning_content.
    assert second[1]["reasoning_content"] == reasoning["text"]
    # Never referenced: a snapshot of this session carries the answers, not the reasoning.
    store.close()
    reader = JsonlSessionStore(tmp_path)
    target = reader.create("t")
    prepared = await SessionReferenceService(reader).prepare(target, [text("x")], [ReferenceInput(session_id="s")])
    frame = prepared.contexts[0].content[0]["text"]
    assert server.reply in frame and "Let me think" not in frame


def test_policy_rejects_impossible_ratios() -> None:
    with pytest.raises(ValueError, match="threshold_ratio"):
        CompactionPolicy(threshold_ratio=1.5)
    with pytest.raises(ValueError, match="retain_ratio"):
        CompactionPolicy(threshold_ratio=0.5, retain_ratio=0.6)


async def test_the_offline_echo_model_compacts_too(store) -> None:
    from core import EchoModel
    from core.agent.chat_models import SUMMARY_REQUEST_MARK
    from core.agent.compaction import SUMMARY_INSTRUCTION

    assert SUMMARY_REQUEST_MARK in SUMMARY_INSTRUCTION
    session = store.create("s")
    chat(session, 4, 2000)
    result = await AgentLoop(session, EchoModel(), context=ContextSettings(window=4_000)).compact_now()
    assert result.summary.startswith("## What the user wants\n- question 0:")
    assert session.derive_messages()[0]["content"][0]["text"].startswith(CHECKPOINT_PREAMBLE)


async def test_a_summary_request_too_long_for_the_server_teaches_the_window_and_is_split(store) -> None:
    session = store.create("s")
    chat(session, 12, 8000)
    with FakeDeepSeek(window=6_000) as server:
        settings = ContextSettings(window=50_000, memory=WindowMemory(None))
        loop = AgentLoop(session, model_for(server, "local"), context=settings)
        result = await loop.compact_now()
        refused = [request for request in server.requests if request.refused]
    assert len(refused) == 1 and result.parts > 1
    assert loop.window == ContextWindow(6_000, "learned")
