"""Session logs that DeepSeek Harness itself wrote (``../shared/fixtures/dsh-real/``) list, load, fold and project.

Each file is placed into a store layout as plain JSONL and re-framed as zstd (a header frame, then
its rows in several batch frames, as dsh appends them). What a reference would send is checked
against an independent reading of the raw rows: every user request and assistant text of the
surface is in the projection, and nothing else is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core import JsonlSessionStore, SessionReferenceService, fold_surface
from core.folder.jsonl_layout import encode_session_segment, project_key
from core.reference.projection import project_conversation
from tests.support.shared_fixtures import shared_fixtures

CWD = "/home/someone/project"


def real_logs() -> list[Path]:
    return sorted(shared_fixtures("dsh-real").glob("*.jsonl"))


def test_all_twenty_real_logs_are_here() -> None:
    assert len(real_logs()) == 20


def _rows(path: Path, session_id: str) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8").replace("{{sessionId}}", session_id).replace("{{cwd}}", CWD)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def place(root: Path, path: Path, compression: str) -> tuple[str, list[dict[str, Any]]]:
    """Put one real log into ``root`` the way dsh lays it out; its id and rows."""
    session_id = f"real {path.stem}"
    rows = _rows(path, session_id)
    header = rows[0]
    folder = root / project_key(header.get("cwd")) / encode_session_segment(session_id)
    folder.mkdir(parents=True)
    lines = [json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n" for row in rows]
    if compression == "none":
        (folder / "session.jsonl").write_text("".join(lines), encoding="utf-8")
    else:
        compressor = zstandard.ZstdCompressor(write_checksum=True)
        frames = [compressor.compress(lines[0].encode())]
        for start in range(1, len(lines), 7):
            frames.append(compressor.compress("".join(lines[start : start + 7]).encode()))
        (folder / "session.jsonl.zstd").write_bytes(b"".join(frames))
    return session_id, rows


def expanded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the raw rows, read independently of the store (packed rows unrolled by hand)."""
    events: list[dict[str, Any]] = []
    for row in rows[1:]:
        if row["type"].endswith("-chunks"):
            data = row["data"]
            members = data.get("texts", data.get("args"))
            assert len(data["dt"]) == len(members) - 1  # the real shape: gaps between members
            times = [row["time0"]]
            for gap in data["dt"]:
                times.append(times[-1] + gap)
            events.extend(
                {"type": "assistant/chunk", "seq": row["seq0"] + k, "time": times[k]}
                for k in members and range(len(members))
            )
        else:
            events.append(row)
    return events


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(block["text"] for block in blocks if block.get("type") == "text")


def expected_conversation(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """User requests and assistant texts of the surface (the logs only append; no compaction here)."""
    surface = [event for event in events if event.get("surfaceOp") == "append"]
    items = []
    for event in surface:
        data = event["data"]
        if event["type"] == "user/message" and data["source"]["kind"] == "user":
            items.append(("user", _text(data["content"])))
        elif event["type"] == "assistant/message":
            items.append(("assistant", _text(data.get("content", data.get("message", {}).get("content", [])))))
    return [item for item in items if item[1]]


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_every_real_log_lists_loads_folds_and_projects(tmp_path: Path, compression: str) -> None:
    placed = {}
    for fixture in real_logs():
        session_id, rows = place(tmp_path, fixture, compression)
        placed[session_id] = rows
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    listing = await store.list_sessions()
    assert store.problems == []
    assert {record.header.id for record in listing} == set(placed)
    for session_id, rows in placed.items():
        header = next(record.header for record in listing if record.header.id == session_id)
        assert header.cwd == rows[0].get("cwd")
        assert header.delegation_depth == rows[0].get("delegationDepth", 0)
        raw = expanded(rows)
        snapshot = await store.read_surface(session_id)
        session = store.get(session_id)
        assert session is not None
        events = list(session.events)
        assert [(e.seq, e.time, e.type) for e in events] == [(e["seq"], e["time"], e["type"]) for e in raw]
        assert [e.seq for e in snapshot.events] == [e.seq for e in fold_surface(events, allow_gaps=True)]
        assert snapshot.captured_through_seq == (raw[-1]["seq"] if raw else None)
        projected = [(item.role, item.text) for item in project_conversation(snapshot)]
        assert projected == expected_conversation(raw)
        title = next((e["data"]["title"] for e in reversed(raw) if e["type"] == "session/title"), None)
        read = await store.read_title(session_id)
        assert (read.title if read is not None else None) == title
        store.release(session_id)
    store.close()


async def test_real_logs_keep_unknown_event_types_in_the_log_but_off_the_surface(tmp_path: Path) -> None:
    session_id, rows = place(tmp_path, shared_fixtures("dsh-real") / "approval-composer__session.jsonl", "zstd")
    store = JsonlSessionStore(tmp_path)
    session = store.get(session_id)
    assert session is not None
    types = [event.type for event in session.events]
    for unknown in ("command/run", "permission/preset", "sandbox/mode", "approval/asked", "request/header"):
        assert unknown in types
    surface_types = {event.type for event in session.surface()}
    assert surface_types <= {"user/message", "assistant/message", "tool/result"}
    # Packed rows came back as the chunk events they stand for, with exact times.
    chunks = [event for event in session.events if event.type == "assistant/chunk"]
    packed = [row for row in rows if row["type"].endswith("-chunks")]
    assert len(chunks) == sum(1 for row in rows if row["type"] == "assistant/chunk") + sum(
        len(row["data"].get("texts", row["data"].get("args", []))) for row in packed
    )
    first = packed[0]
    members = [event for event in chunks if first["seq0"] <= event.seq < first["seq0"] + len(first["data"]["texts"])]
    assert [event.time - first["time0"] for event in members][:4] == [0, 110, 136, 137]
    assert "".join(event.data["chunk"]["text"] for event in members).startswith("The user wants me to write a file")
    store.close()


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_a_real_log_can_be_referenced_and_its_texts_reach_the_context(tmp_path: Path, compression: str) -> None:
    session_id, rows = place(tmp_path, shared_fixtures("dsh-real") / "navigation-panes__seed.jsonl", compression)
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    target = store.create("target", cwd=CWD + "/workspace")
    service = SessionReferenceService(store)
    candidates = await service.list_candidates(target)
    assert candidates[0].session_id == session_id  # same cwd first
    result = await service.prepare(target, [{"type": "text", "text": "what happened?"}], [{"sessionId": session_id}])
    (context,) = result.contexts
    prompt = context.content[0]["text"]
    start = prompt.index("<referenced-sessions>\n") + len("<referenced-sessions>\n")
    (data,) = json.loads(prompt[start : prompt.rindex("\n</referenced-sessions>")])
    assert [(item["role"], item["text"]) for item in data["conversation"]] == expected_conversation(expanded(rows))
    assert data["cwd"] == CWD + "/workspace"
    store.close()
