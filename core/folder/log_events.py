"""A session log's rows as its events: plain event rows (decoded, or as envelopes whose data waits
until read), packed chunk rows expanded, the surface folded as they come, the latest title kept.

The loops are the hot path of every load (tens of thousands of rows): a plain row becomes its event
inline, field checks and construction; chunk rows and anything odd take ``_expand_row``, which names
the damage at the row's offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msgspec import UNSET, Raw

from core.errors import SessionQueryError
from core.folder.event_envelopes import DeferredGroup
from core.folder.jsonl_header import SESSION_QUERY_CORRUPT, corrupt_session
from core.sessions import event_types as ev
from core.sessions.chunk_rows import ROW_TYPES, MalformedRowError, expand_chunk_row
from core.sessions.models import SessionEvent, TitleSnapshot, slot_setters, trusted_event
from core.sessions.session import title_from_event
from core.sessions.surface import SURFACE_EVENT_TYPES, SurfaceFolder


@dataclass(slots=True)
class Rows:
    """Parsed rows of a run of lines: every row at ``base`` (a zstd frame), or at ``offsets``."""

    base: int
    rows: list[Any]
    offsets: list[int] | None = None
    deferred: bool = False
    """Whether the rows are ``Envelope``s (their data deferred), not dicts."""

    def offset(self, index: int) -> int:
        return self.base if self.offsets is None else self.offsets[index]


def _expand_row(row: Any, path: Path, offset: int) -> list[SessionEvent]:
    """One stored row as events: a plain event, or a packed chunk row expanded losslessly.

    Event types this version does not know (``command/run``, ``permission/preset``, ...) are kept
    as they are: they are log-only, so they never reach the surface or a projection.
    """
    if not isinstance(row, dict):
        raise corrupt_session(path, offset, "a row is not an object")
    kind = row.get("type")
    if type(kind) is str and kind in ROW_TYPES:
        try:
            return expand_chunk_row(row)
        except MalformedRowError as error:
            raise corrupt_session(path, offset, str(error)) from error
    return [_plain_event(row, path, offset)]


def _plain_event(row: dict[str, Any], path: Path, offset: int) -> SessionEvent:
    """A stored event row (not a packed chunk row) as an event."""
    try:
        if type(row.get("seq")) is not int or type(row.get("time")) is not int or not isinstance(row.get("data"), dict):
            raise ValueError("seq, time and data are required")
        return trusted_event(
            row["type"],
            row["seq"],
            row["time"],
            row["data"],
            row.get("surfaceOp"),
            row.get("sourceEventSeqs"),
            row.get("ignorable") is True,
        )
    except (KeyError, ValueError) as error:
        raise corrupt_session(path, offset, f"malformed event row ({error})") from error


_FIELDS_SET = set(SessionEvent.model_fields)
"""Every field is set in every loaded event: one set shared by all (events are frozen, so pydantic
never adds to it; ``model_copy`` copies it)."""


_SET_DICT, _SET_FIELDS_SET, _SET_EXTRA, _SET_PRIVATE = slot_setters(SessionEvent)


def _add_expanded(
    row: Any, path: Path, offset: int, folder: SurfaceFolder, events: list[SessionEvent]
) -> TitleSnapshot | None:
    """A row that is not a plain event row (a chunk row, or damage ``_expand_row`` names): its
    events folded and kept; the last title among them."""
    title: TitleSnapshot | None = None
    for event in _expand_row(row, path, offset):
        folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
        events.append(event)
        if event.type == ev.SESSION_TITLE:
            title = title_from_event(event) or title
    return title


def add_envelopes(
    run: Rows, start: int, folder: SurfaceFolder, events: list[SessionEvent], path: Path
) -> TitleSnapshot | None:
    """``add_rows`` for a run read as envelopes: each plain event row becomes its event with its
    data deferred; anything else is made the dict a full decode gives and takes ``_expand_row``."""
    push, append, rows = folder.push, events.append, run.rows
    on_surface = folder.seqs.append
    title: TitleSnapshot | None = None
    new = object.__new__
    unset = UNSET
    groups: dict[str, DeferredGroup] = {}  # by event type, the group being filled
    index = start
    try:
        for index in range(start, len(rows)):
            row = rows[index]
            kind, seq, time, raw = row.type, row.seq, row.time, row.data
            if (
                type(kind) is str
                and type(seq) is int
                and type(time) is int
                and kind not in ROW_TYPES
                and type(raw) is Raw
                and memoryview(raw)[0] == 0x7B  # an object: "{" (msgspec keeps no whitespace around it)
            ):
                op, sources = row.surfaceOp, row.sourceEventSeqs
                if op is unset:
                    op = None
                if sources is unset:
                    sources = None
                if op == "append" and sources is None and seq == folder.next_seq and kind in SURFACE_EVENT_TYPES:
                    on_surface(seq)
                    folder.next_seq = seq + 1
                else:
                    push(kind, seq, op, sources)
                event = new(SessionEvent)
                _SET_DICT(event, {
                    "type": kind, "seq": seq, "time": time, "surface_op": op, "source_event_seqs": sources,
                    "ignorable": row.ignorable is True,
                })  # fmt: skip
                _SET_FIELDS_SET(event, _FIELDS_SET)
                _SET_EXTRA(event, None)
                group = groups.get(kind)
                if group is None or group.full():
                    group = groups[kind] = DeferredGroup()
                group.add(seq, raw)
                _SET_PRIVATE(event, group)
                append(event)
                if kind == ev.SESSION_TITLE:
                    title = title_from_event(event) or title
                continue
            title = _add_expanded(row.as_row(), path, run.offset(index), folder, events) or title
    except SessionQueryError as error:
        if error.code == SESSION_QUERY_CORRUPT:
            raise
        raise corrupt_session(path, run.offset(index), str(error)) from error
    return title


def add_rows(
    run: Rows, start: int, folder: SurfaceFolder, events: list[SessionEvent], path: Path
) -> TitleSnapshot | None:
    """Fold and keep the events of ``run.rows[start:]``; the last title among them.

    The loop is the hot path of every load (tens of thousands of rows): a plain event row becomes
    its event here, field checks and construction inline; chunk rows and anything odd take
    ``_expand_row``, which names the damage.
    """
    push, append, rows = folder.push, events.append, run.rows
    on_surface = folder.seqs.append
    title: TitleSnapshot | None = None
    new = object.__new__
    index = start
    try:
        for index in range(start, len(rows)):
            row = rows[index]
            try:  # a JSON row that is not an object raises TypeError here
                kind, seq, time, data = row["type"], row["seq"], row["time"], row["data"]
            except (KeyError, TypeError):
                kind = None  # named by ``_expand_row``
            if (
                type(kind) is str
                and type(seq) is int
                and type(time) is int
                and type(data) is dict
                and kind not in ROW_TYPES
            ):
                op, sources = row.pop("surfaceOp", None), row.pop("sourceEventSeqs", None)
                if op == "append" and sources is None and seq == folder.next_seq and kind in SURFACE_EVENT_TYPES:
                    on_surface(seq)  # ``push``'s common case, inlined: the next event, appended
                    folder.next_seq = seq + 1
                else:
                    push(kind, seq, op, sources)
                event = new(SessionEvent)  # trusted_event, inlined
                if len(row) == 4:
                    # The row's own dict becomes the event's fields (one dict fewer per event to
                    # build, and to free): its four fields are the event's, the other three are added.
                    row["surface_op"], row["source_event_seqs"], row["ignorable"] = op, sources, False
                    _SET_DICT(event, row)
                else:  # dsh's ignorable marker is kept; fields dsh does not write are kept out of the event
                    _SET_DICT(event, {
                        "type": kind, "seq": seq, "time": time, "data": data, "surface_op": op,
                        "source_event_seqs": sources, "ignorable": row.get("ignorable") is True,
                    })  # fmt: skip
                _SET_FIELDS_SET(event, _FIELDS_SET)
                _SET_EXTRA(event, None)
                _SET_PRIVATE(event, None)
                append(event)
                if kind == ev.SESSION_TITLE:
                    title = title_from_event(event) or title
                continue
            title = _add_expanded(row, path, run.offset(index), folder, events) or title
    except SessionQueryError as error:
        if error.code == SESSION_QUERY_CORRUPT:
            raise
        raise corrupt_session(path, run.offset(index), str(error)) from error
    return title
