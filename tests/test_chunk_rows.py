"""Packed chunk rows on the write side: dsh's packing rule, lossless round trips, write-behind batches."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from core import AgentLoop, JsonlSessionStore
from core.abort import AbortSignal
from core.sessions.chunk_rows import MIN_RUN, expand_chunk_row, pack_chunk_runs
from core.sessions.models import SessionEvent, trusted_event
from tests.conftest import text


def chunk_event(seq: int, time: int, chunk: dict[str, Any], turn: int = 0, step: int = 0) -> SessionEvent:
    return trusted_event("assistant/chunk", seq, time, {"turn": turn, "step": step, "chunk": chunk})


def delta(text_: str, index: int = 0, kind: str = "text-delta") -> dict[str, Any]:
    return {"type": kind, "index": index, "text": text_}


def unpack(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in rows:
        if row["type"].endswith("-chunks"):
            out.extend(event.to_wire() for event in expand_chunk_row(row))
        else:
            out.append(row)
    return out


def test_runs_of_three_or_more_pack_and_shorter_runs_stay_lines() -> None:
    events = [
        chunk_event(0, 100, delta("a")),
        chunk_event(1, 101, delta("b")),  # a run of two: stays two lines
        trusted_event("step/end", 2, 102, {"turn": 0, "step": 0}),
        chunk_event(3, 110, delta("Hel")),
        chunk_event(4, 115, delta("lo")),
        chunk_event(5, 115, delta(" you")),
        chunk_event(6, 140, delta("think", kind="reasoning-delta")),  # another kind breaks the run
    ]
    rows = pack_chunk_runs(events)
    assert [row["type"] for row in rows] == [
        "assistant/chunk",
        "assistant/chunk",
        "step/end",
        "text-chunks",
        "assistant/chunk",
    ]
    assert rows[3] == {
        "type": "text-chunks",
        "seq0": 3,
        "time0": 110,
        "data": {"turn": 0, "step": 0, "index": 0, "dt": [5, 0], "texts": ["Hel", "lo", " you"]},
    }
    assert MIN_RUN == 3
    assert unpack(rows) == [event.to_wire() for event in events]


def test_a_run_breaks_on_index_turn_step_call_id_or_name_presence() -> None:
    call = {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "ls", "argumentsDelta": "{"}
    no_name = {key: value for key, value in call.items() if key != "name"}
    events = [
        chunk_event(0, 0, call),
        chunk_event(1, 1, {**call, "argumentsDelta": '"a"'}),
        chunk_event(2, 2, {**call, "argumentsDelta": "}"}),
        chunk_event(3, 3, no_name),  # name presence differs: a new run
        chunk_event(4, 4, no_name),
        chunk_event(5, 5, no_name),
        chunk_event(6, 6, {**no_name, "id": "c2"}),
        chunk_event(7, 7, delta("x", index=0)),
        chunk_event(8, 8, delta("y", index=1)),
        chunk_event(9, 9, delta("z", index=1), step=1),
    ]
    rows = pack_chunk_runs(events)
    assert [row["type"] for row in rows] == ["tool-call-chunks", "tool-call-chunks"] + ["assistant/chunk"] * 4
    assert rows[0]["data"] == {
        "turn": 0,
        "step": 0,
        "index": 1,
        "id": "c1",
        "name": "ls",
        "dt": [1, 1],
        "args": ["{", '"a"', "}"],
    }
    assert "name" not in rows[1]["data"]
    assert unpack(rows) == [event.to_wire() for event in events]


def test_shapes_dsh_does_not_whitelist_are_stored_verbatim() -> None:
    odd = [
        chunk_event(0, 0, {**delta("a"), "extra": 1}),
        chunk_event(1, 1, {**delta("b"), "extra": 1}),
        chunk_event(2, 2, {**delta("c"), "extra": 1}),
        chunk_event(3, 3, {"type": "usage", "usage": {}}),
        trusted_event("assistant/chunk", 4, 4, {"turn": 0, "step": 0, "chunk": delta("d"), "more": True}),
    ]
    assert pack_chunk_runs(odd) == [event.to_wire() for event in odd]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta", "other"]),
            st.integers(0, 2),
            st.integers(0, 40),
            st.text(max_size=5),
        ),
        max_size=40,
    )
)
def test_packing_is_lossless_for_any_batch(specs: list[tuple[str, int, int, str]]) -> None:
    events: list[SessionEvent] = []
    time = 1_000
    for seq, (kind, index, gap, piece) in enumerate(specs):
        time += gap
        if kind == "other":
            events.append(trusted_event("step/start", seq, time, {"turn": 0, "step": index}))
        elif kind == "tool-call-delta":
            chunk = {"type": kind, "index": index, "id": f"call{index % 2}", "argumentsDelta": piece}
            events.append(chunk_event(seq, time, chunk))
        else:
            events.append(chunk_event(seq, time, delta(piece, index, kind)))
    rows = pack_chunk_runs(events)
    assert unpack(rows) == [event.to_wire() for event in events]
    assert len(rows) <= len(events)


def file_rows(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if path.suffix == ".zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        raw = reader.read()
    return [json.loads(line) for line in raw.decode().splitlines()]


class BurstModel:
    """Streams ``count`` pieces, ``pause`` seconds apart."""

    name = "burst"
    provider = "test"

    def __init__(self, count: int, pause: float) -> None:
        self.count = count
        self.pause = pause

    async def stream(self, messages: list[dict[str, Any]], *, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        for index in range(self.count):
            await asyncio.sleep(self.pause)
            yield {"type": "text-delta", "index": 0, "text": f"w{index} "}


@pytest.mark.parametrize("compression", ["zstd", "none"])
async def test_the_agent_loop_writes_one_durable_batch_per_flush_interval(tmp_path: Path, compression: str) -> None:
    ticks = itertools.count(1_700_000_000_000, 3)
    store = JsonlSessionStore(tmp_path, compression=compression, clock=lambda: next(ticks))  # type: ignore[arg-type]
    session = store.create("s", cwd="/p")
    writes: list[int] = []
    original = store.write
    store.write = lambda s, events: (writes.append(len(events)), original(s, events))[1]  # type: ignore[method-assign]
    loop = AgentLoop(session, BurstModel(60, 0.005), flush_interval=0.1)
    await loop.followup([text("go")])
    await loop.when_idle()
    chunks = [event for event in session.events if event.type == "assistant/chunk"]
    assert len(chunks) == 60
    # ~0.3 s of streaming with a 0.1 s interval: a handful of batches, never one per chunk.
    assert len(writes) <= 10, writes
    assert max(writes) >= 10
    path = store.session_path("s", "/p")
    rows = file_rows(path)
    assert any(row["type"] == "text-chunks" for row in rows)
    store.close()
    reopened = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    again = reopened.get("s")
    assert again is not None
    assert [event.to_wire() for event in again.events] == [event.to_wire() for event in session.events]
    reopened.close()


async def test_no_pack_writes_one_line_per_event(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path, compression="none", pack_chunks=False)
    session = store.create("s")
    loop = AgentLoop(session, BurstModel(8, 0), flush_interval=0.05)
    await loop.followup([text("go")])
    await loop.when_idle()
    rows = file_rows(store.session_path("s", None))
    assert [row["type"] for row in rows[1:]] == [event.type for event in session.events]
    store.close()


async def test_buffered_chunks_survive_a_failed_write_and_go_out_with_the_next_batch(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path, compression="zstd")
    session = store.create("s")
    session.append("turn/start", {"turn": 0})
    for index in range(4):
        session.append("assistant/chunk", {"turn": 0, "step": 0, "chunk": delta(f"{index}")}, buffered=True)
    assert session.pending == 4
    original = store.write

    def failing(s: Any, events: Any) -> None:
        raise OSError("disk full")

    store.write = failing  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        session.flush()
    assert session.pending == 4
    store.write = original  # type: ignore[method-assign]
    session.append("step/end", {"turn": 0, "step": 0})
    assert session.pending == 0
    rows = file_rows(store.session_path("s", None))
    assert [row["type"] for row in rows] == ["session", "turn/start", "text-chunks", "step/end"]
    store.close()
