"""Deterministic synthetic conversations for the benchmarks."""

from __future__ import annotations

import random
from pathlib import Path

from core import JsonlSessionStore, SessionEvent, SessionHeader, SurfaceSnapshot

_WORDS = 'the plan uses a retry loop with <backoff> and jitter; 界面 测试 😀 "quoted" path\\to\\file'.split()


def message_text(rng: random.Random, size: int) -> str:
    """About ``size`` bytes of mixed ASCII, CJK, emoji, quotes, backslashes and ``<``."""
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        parts.append(word)
        length += len(word.encode("utf-8")) + 1
    return " ".join(parts)


def conversation_events(messages: int, *, message_bytes: int = 1000, seed: int = 7) -> list[SessionEvent]:
    """``messages`` alternating user/assistant surface events of about ``message_bytes`` each."""
    rng = random.Random(seed)
    events = []
    for seq in range(messages):
        body = [{"type": "text", "text": message_text(rng, message_bytes)}]
        if seq % 2 == 0:
            event_type, data = "user/message", {"content": body, "source": {"kind": "user"}}
        else:
            event_type = "assistant/message"
            data = {"turn": seq // 2, "step": 0, "content": body, "provenance": {"provider": "bench", "model": "bench"}}
        events.append(
            SessionEvent.model_construct(
                type=event_type, seq=seq, time=seq, data=data, surface_op="append", source_event_seqs=None
            )
        )
    return events


def snapshot_of(session_id: str, events: list[SessionEvent]) -> SurfaceSnapshot:
    """A ``read_surface`` snapshot of a plain append-only conversation."""
    header = SessionHeader(id=session_id, created_at=0, cwd="/bench/project")
    return SurfaceSnapshot.model_construct(
        session=header, captured_through_seq=events[-1].seq if events else None, events=events
    )


def write_big_log(directory: str | Path, events: int = 20_000) -> Path:
    """Session ``big`` (cwd ``/bench``) in a zstd store at ``directory``: ``events`` messages of ~1 KB
    appended in batches of 1,000 (one zstd frame each); the path of its file."""
    store = JsonlSessionStore(directory)
    session = store.create("big", cwd="/bench")
    conversation = conversation_events(events)
    for start in range(0, len(conversation), 1000):
        session.append_batch([(e.type, e.data, "append", None) for e in conversation[start : start + 1000]])
    store.close()
    return store.session_path("big", "/bench")
