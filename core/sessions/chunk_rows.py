"""Packed chunk rows: runs of streamed deltas stored as one JSONL row (STORE.md), exactly as dsh does.

A port of ``@deepseek-ai/dsh-session``'s ``chunk-rows`` module: ``pack_chunk_runs`` turns each run
of at least ``MIN_RUN`` consecutive, same-kind, same-block ``assistant/chunk`` deltas of a batch into
one ``text-chunks`` / ``reasoning-chunks`` / ``tool-call-chunks`` row; ``expand_chunk_row`` validates
a row and gives back its exact events. ``dt`` holds the gaps between consecutive members, so it has
one entry fewer than ``texts`` / ``args``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from core.constants import MAX_SAFE_INTEGER
from core.errors import SESSION_QUERY_INVALID_EVENT, SessionrefError
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent, trusted_event

MIN_RUN = 3
"""Fewer members than this are stored as plain event lines (a row's envelope would rival them)."""

ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_ROW_OF_DELTA = {
    "text-delta": "text-chunks",
    "reasoning-delta": "reasoning-chunks",
    "tool-call-delta": "tool-call-chunks",
}
_DELTA_OF_ROW = {row: delta for delta, row in _ROW_OF_DELTA.items()}


class MalformedRowError(SessionrefError, ValueError):
    """A row tagged as a chunk row that is not one (corrupt storage, never silently dropped): a
    ``SessionrefError`` with ``SESSION_QUERY_INVALID_EVENT``, and, as before, a ``ValueError``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, SESSION_QUERY_INVALID_EVENT)


def _safe_int(value: Any) -> bool:
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _classify(event: SessionEvent) -> str | None:
    """The delta kind of a chunk event whose whole shape is whitelisted, else ``None`` (stored verbatim)."""
    if event.type != ev.ASSISTANT_CHUNK or event.surface_op is not None or event.source_event_seqs is not None:
        return None
    if not _safe_int(event.seq) or event.seq < 0 or not _safe_int(event.time):
        return None
    data = event.data
    if type(data) is not dict or data.keys() != {"turn", "step", "chunk"}:
        return None
    if not _number(data["turn"]) or not _number(data["step"]):
        return None
    chunk = data["chunk"]
    if type(chunk) is not dict or not _number(chunk.get("index")):
        return None
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta"):
        return kind if chunk.keys() == {"type", "index", "text"} and type(chunk["text"]) is str else None
    if kind == "tool-call-delta":
        keys = chunk.keys()
        shaped = keys == {"type", "index", "id", "argumentsDelta"} or (
            keys == {"type", "index", "id", "name", "argumentsDelta"} and type(chunk["name"]) is str
        )
        return kind if shaped and type(chunk["id"]) is str and type(chunk["argumentsDelta"]) is str else None
    return None


def _continues(previous: SessionEvent, event: SessionEvent, kind: str) -> bool:
    if event.seq != previous.seq + 1 or not _safe_int(event.time - previous.time):
        return False
    a, b = previous.data, event.data
    if a["turn"] != b["turn"] or a["step"] != b["step"] or a["chunk"]["index"] != b["chunk"]["index"]:
        return False
    if kind != "tool-call-delta":
        return True
    ca, cb = a["chunk"], b["chunk"]
    return ca["id"] == cb["id"] and ("name" in ca) == ("name" in cb) and ca.get("name") == cb.get("name")


def _row(kind: str, run: Sequence[SessionEvent]) -> dict[str, Any]:
    first = run[0]
    chunk = first.data["chunk"]
    data: dict[str, Any] = {
        "turn": first.data["turn"],
        "step": first.data["step"],
        "index": chunk["index"],
        "dt": [event.time - before.time for before, event in pairwise(run)],
    }
    if kind == "tool-call-delta":
        data["id"] = chunk["id"]
        if "name" in chunk:
            data["name"] = chunk["name"]
        data["args"] = [event.data["chunk"]["argumentsDelta"] for event in run]
    else:
        data["texts"] = [event.data["chunk"]["text"] for event in run]
    return {"type": _ROW_OF_DELTA[kind], "seq0": first.seq, "time0": first.time, "data": data}


def pack_chunk_runs(events: Iterable[SessionEvent]) -> list[dict[str, Any]]:
    """The storage rows of a batch: chunk runs of ``MIN_RUN`` or more packed, every other event as its wire dict."""
    out: list[dict[str, Any]] = []
    kind: str | None = None
    run: list[SessionEvent] = []

    def flush() -> None:
        if kind is not None and len(run) >= MIN_RUN:
            out.append(_row(kind, run))
        else:
            out.extend(event.to_wire() for event in run)

    for event in events:
        delta = _classify(event)
        if delta is None:
            flush()
            kind, run = None, []
            out.append(event.to_wire())
            continue
        if delta == kind and run and _continues(run[-1], event, delta):
            run.append(event)
            continue
        flush()
        kind, run = delta, [event]
    flush()
    return out


def _malformed(tag: str, why: str) -> MalformedRowError:
    return MalformedRowError(f"malformed {tag} storage row: {why}")


def _validated_members(tag: str, row: Any) -> list[str]:
    """Validate a row-tagged value exactly as dsh does; its member payloads."""
    if type(row) is not dict or row.keys() != {"type", "seq0", "time0", "data"}:
        raise _malformed(tag, "envelope must be exactly {type, seq0, time0, data}")
    if not _safe_int(row["seq0"]) or row["seq0"] < 0:
        raise _malformed(tag, "seq0 must be a non-negative safe integer")
    if not _safe_int(row["time0"]):
        raise _malformed(tag, "time0 must be a safe integer")
    data = row["data"]
    if type(data) is not dict:
        raise _malformed(tag, "data must be an object")
    if tag == "tool-call-chunks":
        keys = data.keys()
        with_name = keys == {"turn", "step", "index", "id", "name", "dt", "args"}
        if not with_name and keys != {"turn", "step", "index", "id", "dt", "args"}:
            raise _malformed(tag, "data must be exactly {turn, step, index, id, name?, dt, args}")
        if type(data["id"]) is not str or (with_name and type(data["name"]) is not str):
            raise _malformed(tag, "id (and name when present) must be strings")
        payload_key = "args"
    else:
        if data.keys() != {"turn", "step", "index", "dt", "texts"}:
            raise _malformed(tag, "data must be exactly {turn, step, index, dt, texts}")
        payload_key = "texts"
    if not all(_number(data[key]) for key in ("turn", "step", "index")):
        raise _malformed(tag, "turn/step/index must be numbers")
    members = data[payload_key]
    if type(members) is not list or not members or not all(type(member) is str for member in members):
        raise _malformed(tag, f"{payload_key} must be a non-empty string array")
    gaps = data["dt"]
    if type(gaps) is not list or not all(_safe_int(gap) for gap in gaps):
        raise _malformed(tag, "dt must be an array of safe integers")
    if len(gaps) != len(members) - 1:
        raise _malformed(tag, f"dt length {len(gaps)} does not match {len(members)} members")
    if not _safe_int(row["seq0"] + len(members) - 1):
        raise _malformed(tag, "member seqs must stay safe integers")
    time = row["time0"]
    for gap in gaps:
        time += gap
        if not _safe_int(time):
            raise _malformed(tag, "member times must stay safe integers")
    return members


def expand_chunk_row(row: Any) -> list[SessionEvent]:
    """The exact events a chunk row stores, in order.

    Raises:
        MalformedRowError: the row is tagged as a chunk row but is not a valid one.
    """
    tag = row.get("type") if type(row) is dict else None
    if tag not in ROW_TYPES:
        raise MalformedRowError(f"not a chunk row: {tag!r}")
    members = _validated_members(tag, row)
    data = row["data"]
    turn, step, index = data["turn"], data["step"], data["index"]
    seq0, time, gaps = row["seq0"], row["time0"], data["dt"]
    delta = _DELTA_OF_ROW[tag]
    events: list[SessionEvent] = []
    for k, member in enumerate(members):
        if k:
            time += gaps[k - 1]
        chunk: dict[str, Any]
        if tag == "tool-call-chunks":
            chunk = {"type": delta, "index": index, "id": data["id"]}
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = member
        else:
            chunk = {"type": delta, "index": index, "text": member}
        events.append(trusted_event(ev.ASSISTANT_CHUNK, seq0 + k, time, {"turn": turn, "step": step, "chunk": chunk}))
    return events
