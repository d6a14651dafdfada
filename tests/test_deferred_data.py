"""A loaded event's ``data`` is decoded when first read, not at load (``event_envelopes``): the
events nobody reads are never built. What a load means must not change with it: the same events,
the same verdict on a damaged file at the same offset, at load time and not later, and an event
whose data was never read behaves as one built whole (equality, copies, pickling, dumps, repr).

The reference is the reader as it was: every row decoded into dicts (``envelopes`` turned off).
"""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from core import JsonlSessionStore
from core.errors import SessionQueryError
from core.folder import jsonl_codec
from core.folder.event_envelopes import GROUP
from core.folder.jsonl_codec import load_log
from core.reference.projection import project_conversation
from core.sessions.models import SessionEvent, trusted_event

HEADER = b'{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0}\n'
PATH = Path("/x")


def _file(rows: list[bytes], compression: str) -> bytes:
    if compression == "none":
        return HEADER + b"".join(rows)
    compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True)
    return compressor.compress(HEADER) + compressor.compress(b"".join(rows))


def _row(seq: int, data: bytes = b'{"content":[{"type":"text","text":"hi"}]}') -> bytes:
    return b'{"type":"user/message","seq":%d,"time":1,"data":%s,"surfaceOp":"append"}\n' % (seq, data)


def _deferred(event: SessionEvent) -> bool:
    return "data" not in vars(event)


def _group_decoded(event: SessionEvent) -> bool:
    """Whether the data of the event's group was decoded (by a read of one of them)."""
    group = event.__pydantic_private__
    return group is None or group.values is not None  # type: ignore[attr-defined]


def _load(raw: bytes, compression: str, *, deferring: bool = True) -> Any:
    """The log, or the error's code and message; ``deferring=False``: every row read as dicts."""
    saved = jsonl_codec.envelopes
    if not deferring:
        jsonl_codec.envelopes = lambda content: None  # type: ignore[assignment]
    try:
        log = load_log(raw, PATH, compression)  # type: ignore[arg-type]
    except SessionQueryError as error:
        return (error.code, error.message)
    finally:
        jsonl_codec.envelopes = saved
    return log


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_loaded_event_s_data_is_decoded_when_first_read_and_kept(compression: str) -> None:
    """Read once, kept; the events of its type beside it decoded with it (a reader of one message
    mostly reads the next), those of another type left as they were loaded."""
    answer = b'{"type":"assistant/message","seq":2,"time":1,"data":{"n":2},"surfaceOp":"append"}\n'
    log = load_log(_file([_row(0), _row(1, b'{"n":1}'), answer], compression), PATH, compression)  # type: ignore[arg-type]
    first, second, third = log.events
    assert _deferred(first) and _deferred(second) and _deferred(third)
    data = first.data
    assert data == {"content": [{"type": "text", "text": "hi"}]}
    assert not _deferred(first) and first.data is data  # decoded once, then kept
    assert _deferred(second) and _group_decoded(second) and second.data == {"n": 1}  # its group
    assert _deferred(third) and not _group_decoded(third)  # another type, nobody read: as loaded
    assert third.data == {"n": 2}
    assert log.surface_seqs == [0, 1, 2]  # the surface folds without any data


def test_a_deferred_event_behaves_as_one_built_whole() -> None:
    raw = _file([_row(0, b'{"b":1,"a":[1.5,null,"\\u00e9"]}')], "zstd")

    def fresh() -> SessionEvent:
        event = load_log(raw, PATH, "zstd").events[0]
        assert _deferred(event)
        return event

    built = trusted_event("user/message", 0, 1, {"b": 1, "a": [1.5, None, "é"]}, "append", None)
    assert fresh() == built and built == fresh()
    assert fresh() != trusted_event("user/message", 0, 1, {"b": 2}, "append", None)
    assert fresh().model_dump() == built.model_dump()
    assert fresh().model_dump_json() == built.model_dump_json()
    assert repr(fresh()) == repr(built)
    assert dict(fresh()) == dict(built)
    assert copy.copy(fresh()) == built and copy.deepcopy(fresh()) == built
    assert fresh().model_copy() == built and fresh().model_copy(deep=True) == built
    assert pickle.loads(pickle.dumps(fresh())) == built
    assert fresh().to_wire() == built.to_wire()
    assert list(fresh().to_wire()) == ["type", "seq", "time", "data", "surfaceOp"]
    with pytest.raises(AttributeError):
        _ = fresh().no_such_field  # type: ignore[attr-defined]


def test_threads_reading_one_deferred_event_all_see_its_data() -> None:
    raw = _file([_row(seq, b'{"n":%d}' % seq) for seq in range(2000)], "zstd")
    events = load_log(raw, PATH, "zstd").events
    seen: list[list[Any]] = [[], [], [], []]
    start = threading.Barrier(len(seen))

    def read(into: list[Any]) -> None:
        start.wait()
        into.extend(event.data["n"] for event in events)

    threads = [threading.Thread(target=read, args=(into,)) for into in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(found == list(range(2000)) for found in seen)


DAMAGE = {
    "data that is not an object": b'{"type":"user/message","seq":0,"time":1,"data":[1]}\n',
    "data that is a string": b'{"type":"user/message","seq":0,"time":1,"data":"x"}\n',
    "broken JSON inside the data": b'{"type":"user/message","seq":0,"time":1,"data":{"a":tru}}\n',
    "a trailing comma inside the data": b'{"type":"user/message","seq":0,"time":1,"data":{"a":[1,]}}\n',
    "a bad escape inside the data": b'{"type":"user/message","seq":0,"time":1,"data":{"a":"\\q"}}\n',
    "a seq that is a float": b'{"type":"user/message","seq":0.5,"time":1,"data":{}}\n',
    "a malformed chunk row": b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1}}\n',
}


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("case", list(DAMAGE))
def test_damage_inside_a_row_is_found_at_load_with_the_same_verdict(case: str, compression: str) -> None:
    raw = _file([_row(0), DAMAGE[case], _row(2)], compression)
    deferred, whole = _load(raw, compression), _load(raw, compression, deferring=False)
    assert isinstance(whole, tuple) and whole[0] == "SESSION_QUERY_CORRUPT_SESSION"
    assert deferred == whole


# Rows of any shape: an event row's fields, a chunk row's, keys no row has, values of any type.
_SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.5, 1e400, 2**70]) | st.text(max_size=3)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
_TYPES = st.sampled_from(["user/message", "assistant/message", "session/title", "command/run", "text-chunks"])
_FIELDS = {
    "type": _TYPES | _SCALARS,
    "seq": st.integers(0, 40) | _SCALARS,
    "time": st.integers(0, 9) | _SCALARS,
    "data": st.dictionaries(st.sampled_from(["content", "title", "turn", "texts", "dt"]), _VALUES, max_size=3)
    | _VALUES,
    "surfaceOp": st.sampled_from(["append", None, {"op": "replace", "start": 0, "end": 1}]) | _SCALARS,
    "sourceEventSeqs": st.none() | st.lists(st.integers(0, 5), max_size=2),
    "ignorable": st.booleans() | _SCALARS,
    "seq0": st.integers(0, 40),
    "time0": st.integers(0, 9),
    "later": _SCALARS,
}


_ORDINARY = {
    "user/message": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
    "assistant/message": {"turn": 0, "step": 0, "content": [{"type": "text", "text": "ok"}]},
    "session/title": {"title": "a title"},
    "command/run": {"name": "x"},
}


@st.composite
def _row_at(draw: st.DrawFn, seq: int) -> bytes:
    """Mostly an ordinary row at ``seq`` (as a real log holds), often with some fields changed,
    dropped or added."""
    kind = draw(st.sampled_from(sorted(_ORDINARY)))
    row: dict[str, Any] = {"type": kind, "seq": seq, "time": 1, "data": _ORDINARY[kind]}
    if kind != "command/run":
        row["surfaceOp"] = "append"
    changed = draw(st.lists(st.sampled_from(list(_FIELDS)), max_size=3, unique=True)) if draw(st.booleans()) else []
    for key in changed:
        if draw(st.integers(0, 3)) == 0:
            row.pop(key, None)
        else:
            row[key] = draw(_FIELDS[key])
    return json.dumps(row).encode() + b"\n"


@st.composite
def _rows(draw: st.DrawFn) -> list[bytes]:
    return [draw(_row_at(seq)) for seq in range(draw(st.integers(1, 6)))]


@settings(max_examples=300, deadline=None)
@given(_rows(), st.sampled_from(["none", "zstd"]))
def test_any_rows_load_as_the_whole_reader_loads_them(rows: list[bytes], compression: str) -> None:
    raw = _file(rows, compression)
    deferred, whole = _load(raw, compression), _load(raw, compression, deferring=False)
    if isinstance(whole, tuple):
        assert deferred == whole
        return
    assert not isinstance(deferred, tuple), deferred
    assert [event.to_wire() for event in deferred.events] == [event.to_wire() for event in whole.events]
    assert [event.ignorable for event in deferred.events] == [event.ignorable for event in whole.events]
    assert (deferred.surface_seqs, deferred.title, deferred.valid_length) == (
        whole.surface_seqs,
        whole.title,
        whole.valid_length,
    )


def test_a_store_s_session_reads_and_appends_with_deferred_data(tmp_path: Path) -> None:
    """A session opened for writing from a loaded log: its old events' data read on demand, new
    ones appended, and the file read back the same by a fresh store."""
    store = JsonlSessionStore(tmp_path)
    session = store.create("s", cwd="/w")
    session.append(
        "user/message", {"content": [{"type": "text", "text": "one"}], "source": {"kind": "user"}}, surface_op="append"
    )
    store.close()
    store = JsonlSessionStore(tmp_path)
    session = store.get("s")
    assert session is not None
    session.append(
        "user/message", {"content": [{"type": "text", "text": "two"}], "source": {"kind": "user"}}, surface_op="append"
    )
    texts = [event.data["content"][0]["text"] for event in session.events]  # type: ignore[index]
    store.close()
    assert texts == ["one", "two"]
    _header, events = JsonlSessionStore(tmp_path).read_log("s")
    assert [event.data["content"][0]["text"] for event in events] == ["one", "two"]  # type: ignore[index]


@pytest.mark.parametrize(
    "odd",
    [b'{"n":1e400}', b'{"t":"a\xff b"}', b'{"n":123456789012345678901234567890}'],
    ids=["beyond a double", "not UTF-8", "a big integer"],
)
def test_events_decoded_in_groups_read_as_each_alone(odd: bytes) -> None:
    """The first read of an event decodes its group (events of its type in a row, at most
    ``GROUP``), one by one where msgspec refuses a value; reads in any order see the same data."""
    count = 2 * GROUP + 10
    rows = [_row(seq, b'{"n":%d,"s":"\\u00e9\\n"}' % seq) for seq in range(count)]
    rows[20] = _row(20, odd)
    raw = _file(rows, "zstd")
    events = load_log(raw, PATH, "zstd").events
    backwards = [event.data for event in load_log(raw, PATH, "zstd").events[::-1]][::-1]
    assert events[GROUP + 3].data == backwards[GROUP + 3]
    decoded = [_group_decoded(event) for event in events]
    assert decoded == [False] * GROUP + [True] * GROUP + [False] * 10  # one group, not the others
    assert json.dumps([event.data for event in events]) == json.dumps(backwards)
    assert [event.data["n"] for event in events if event.seq != 20] == [n for n in range(count) if n != 20]


def test_a_projection_decodes_only_the_messages_it_shows(tmp_path: Path) -> None:
    """A tool's result on the surface (often a whole file) is never decoded to project a session."""
    store = JsonlSessionStore(tmp_path)
    session = store.create("s", cwd="/w")
    session.append(
        "user/message",
        {"content": [{"type": "text", "text": "read it"}], "source": {"kind": "user"}},
        surface_op="append",
    )
    session.append("tool/result", {"callId": "c", "output": "x" * 5000}, surface_op="append")
    session.append(
        "assistant/message", {"turn": 0, "step": 0, "content": [{"type": "text", "text": "done"}]}, surface_op="append"
    )
    store.close()
    loop = asyncio.new_event_loop()  # (asyncio.run in 3.11 formats its result's repr as it ends)
    try:
        snapshot = loop.run_until_complete(JsonlSessionStore(tmp_path).read_surface("s"))
    finally:
        loop.close()
    assert [event.type for event in snapshot.events] == ["user/message", "tool/result", "assistant/message"]
    assert [(item.role, item.text) for item in project_conversation(snapshot)] == [
        ("user", "read it"),
        ("assistant", "done"),
    ]
    assert [_deferred(event) for event in snapshot.events] == [False, True, False]


def test_a_log_dropped_unread_is_freed_at_once() -> None:
    """The events refer to their group, never the other way round: a log dropped unread, or half
    read, is freed by reference counting, with no cycle left for the collector."""
    from core.folder.event_envelopes import DeferredGroup

    def groups() -> int:
        return sum(1 for thing in gc.get_objects() if type(thing) is DeferredGroup)

    gc.collect()
    before = groups()
    gc.disable()
    try:
        log = load_log(_file([_row(seq) for seq in range(GROUP + 10)], "zstd"), PATH, "zstd")
        assert groups() == before + 2
        assert log.events[0].data == {"content": [{"type": "text", "text": "hi"}]}
        del log
        assert groups() == before
    finally:
        gc.enable()
