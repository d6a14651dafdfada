"""The fast log reader (msgspec from bytes, frames decompressed ahead) reads every log exactly as the
``json`` reader it replaced: the JSON msgspec reads differently or refuses keeps ``json``'s meaning.

Each case is a row written by hand into a real session file (plain and zstd, one frame and many),
loaded by ``load_log`` and compared with what ``json.loads`` makes of the same line: values, their
types and the order of keys.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from core import JsonlSessionStore
from core.errors import SessionQueryError
from core.folder import jsonl_codec
from core.folder.jsonl_codec import load_log

HEADER = b'{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0}\n'


def _row(data: bytes, seq: int = 0) -> bytes:
    return b'{"type":"user/message","seq":%d,"time":1,"data":%s,"surfaceOp":"append"}\n' % (seq, data)


def _file(rows: list[bytes], compression: str, *, frames_per_row: bool = True) -> bytes:
    if compression == "none":
        return HEADER + b"".join(rows)
    compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True)
    if frames_per_row:
        return compressor.compress(HEADER) + b"".join(compressor.compress(row) for row in rows)
    return compressor.compress(HEADER) + compressor.compress(b"".join(rows))


def _same(left: Any, right: Any) -> bool:
    """Equal values of equal types, dict keys in the same order, NaN equal to NaN."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


CASES = {
    "duplicate keys keep the last value, in the first key's place": b'{"b":1,"a":2,"b":3}',
    "integers beyond 64 bits stay exact": b'{"n":123456789012345678901234567890,"m":-18446744073709551617}',
    "the largest unsigned 64-bit integer": b'{"n":18446744073709551615}',
    "a lone high surrogate escape": b'{"t":"\\ud800 alone"}',
    "a lone low surrogate escape before a pair": b'{"t":"\\udc00x\\ud83d\\ude00"}',
    "NaN and Infinity, as json reads them": b'{"a":NaN,"b":-Infinity}',
    "a number beyond a double": b'{"a":1e400}',
    "negative zero and exponents": b'{"a":-0.0,"b":1.0E+2,"c":5e-324}',
    "an escaped NUL": b'{"t":"\\u0000"}',
}


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("case", list(CASES))
def test_values_read_as_json_reads_them(case: str, compression: str) -> None:
    data = CASES[case]
    log = load_log(_file([_row(data), _row(b'{"plain":true}', 1)], compression), Path("/x"), compression)  # type: ignore[arg-type]
    assert _same(log.events[0].data, json.loads(data))
    assert log.events[1].data == {"plain": True}


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_bytes_that_are_not_utf8_read_as_replacement_characters(compression: str) -> None:
    """As dsh decodes them (U+FFFD per maximal subpart), and as the reader did before."""
    rows = [_row(b'{"t":"a\xff\xfeb \xed\xa0\x80 c"}'), _row(b'{"t":"fine"}', 1)]
    log = load_log(_file(rows, compression), Path("/x"), compression)  # type: ignore[arg-type]
    assert log.events[0].data == {"t": "a\ufffd\ufffdb \ufffd\ufffd\ufffd c"}
    assert log.events[1].data == {"t": "fine"}


@pytest.mark.parametrize(
    "rows",
    [
        [b'{"type":"user/message","seq":0,"time":1,\n"data":{},"surfaceOp":"append"}\n'],  # a row over two lines
        [_row(b"{}") + b"\n"],  # a blank line
        [_row(b"{}")[:-1] + b" " + _row(b"{}", 1)],  # two rows on one line
        [_row(b"{}")[:-1] + b"," + _row(b"{}", 1)],  # two rows on one line, comma-separated
        # A row over two lines whose second line also holds the next row: as many values as lines
        # (found by the dsh_log fuzz target; the fast decoder reads values across newlines).
        [_row(b"{}")[:-2] + b"\n}" + _row(b"{}", 1), _row(b"{}", 2)],
    ],
)
def test_lines_that_are_not_one_row_each_are_damage(rows: list[bytes]) -> None:
    """The whole-frame parse accepts only what line-by-line ``json`` accepts."""
    for compression in ("none", "zstd"):
        with pytest.raises(SessionQueryError) as caught:
            load_log(_file(rows, compression, frames_per_row=False), Path("/x"), compression)  # type: ignore[arg-type]
        assert caught.value.code == "SESSION_QUERY_CORRUPT_SESSION"


def test_an_event_type_that_is_not_a_string_is_kept_off_the_surface() -> None:
    """dsh's loadStored keeps such rows; they once crashed the fold (an unhashable type)."""
    rows = [
        b'{"type":["x"],"seq":0,"time":1,"data":{}}\n',
        b'{"type":5,"seq":1,"time":1,"data":{}}\n',
        _row(b'{"content":[],"source":{"kind":"user"}}', 2),
    ]
    log = load_log(_file(rows, "none"), Path("/x"), "none")
    assert [event.type for event in log.events] == [["x"], 5, "user/message"]
    assert log.surface_seqs == [2]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@given(st.lists(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4), min_size=1, max_size=6))
def test_any_json_reads_as_json_reads_it(values: list[dict[str, Any]]) -> None:
    """Hypothesis: integers of any size, every float, every string (lone surrogates escaped)."""
    encoded = [json.dumps(value).encode() for value in values]  # ASCII, \\u escapes
    rows = [_row(data, seq) for seq, data in enumerate(encoded)]
    log = load_log(_file(rows, "zstd", frames_per_row=False), Path("/x"), "zstd")
    for event, data in zip(log.events, encoded, strict=True):
        assert _same(event.data, json.loads(data))


def test_a_big_log_reads_the_same_through_the_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames decompressed ahead on a worker thread give the same log as frames decompressed inline,
    and a damaged frame stops the read there with the same error."""
    store = JsonlSessionStore(tmp_path)
    session = store.create("big", cwd="/w")
    for batch in range(40):
        chunks = [
            ("assistant/chunk", {"turn": batch, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": f"{n}"}})
            for n in range(30)
        ]
        prompt = {"content": [{"type": "text", "text": f"{batch} " * 2000}], "source": {"kind": "user"}}
        session.append_batch([("user/message", prompt, "append", None), *((t, d, None, None) for t, d in chunks)])
    store.close()
    path = store.session_path("big", "/w")
    raw = path.read_bytes()
    monkeypatch.setattr(jsonl_codec, "_AHEAD_FROM", 0)
    ahead = load_log(raw, path, "zstd")
    monkeypatch.setattr(jsonl_codec, "_AHEAD_FROM", 1 << 60)
    inline = load_log(raw, path, "zstd")
    assert [e.to_wire() for e in ahead.events] == [e.to_wire() for e in inline.events]
    assert (ahead.valid_length, ahead.surface_seqs) == (inline.valid_length, inline.surface_seqs)
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= 0xFF
    errors = []
    for threshold in (0, 1 << 60):
        monkeypatch.setattr(jsonl_codec, "_AHEAD_FROM", threshold)
        with pytest.raises(SessionQueryError) as caught:
            load_log(bytes(damaged), path, "zstd")
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


HEADER_CASES = {
    "duplicate keys keep the last value": b'{"type":"session","id":"x","id":"y","createdAt":1}',
    "a lone surrogate in the cwd": b'{"type":"session","id":"x","createdAt":1,"cwd":"/w/\\ud800"}',
    "bytes that are not UTF-8 in the cwd": b'{"type":"session","id":"x","createdAt":1,"cwd":"/w/\xff"}',
    "an escaped NUL in the id": b'{"type":"session","id":"x\\u0000y","createdAt":1}',
    "a big createdAt": b'{"type":"session","id":"x","createdAt":9007199254740993}',
}


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("case", list(HEADER_CASES))
def test_a_listed_header_reads_as_json_reads_it(case: str, compression: str, tmp_path: Path) -> None:
    """A listing reads headers with msgspec first; whatever it refuses (or reads differently) is
    read by ``json`` as before, so the header a listing shows is the one a load parses."""
    from core.folder.jsonl_header import header_from_row, json_line, read_header

    line = HEADER_CASES[case]
    path = tmp_path / "session.jsonl"
    if compression == "zstd":
        path = tmp_path / "session.jsonl.zstd"
        path.write_bytes(zstandard.ZstdCompressor().compress(line + b"\n"))
    else:
        path.write_bytes(line + b"\n")
    expected: Any
    try:
        expected = header_from_row(json_line(line), path)
    except SessionQueryError as refused:
        expected = (refused.code, refused.message)
    try:
        read: Any = read_header(str(path), compression)  # type: ignore[arg-type]
    except SessionQueryError as error:
        read = (error.code, error.message)
    assert read == expected
    if isinstance(expected, tuple):
        return
    loaded = load_log(path.read_bytes(), path, compression)  # type: ignore[arg-type]
    assert loaded.header == expected


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_an_event_is_the_same_whatever_its_row_s_key_order_or_extra_keys(compression: str) -> None:
    """A loaded row's own dict becomes its event's fields when it holds exactly an event's keys; a
    row with keys dsh does not write keeps them out of the event, as before."""
    from core.sessions.models import trusted_event

    rows = [
        b'{"type":"user/message","seq":0,"time":1,"data":{"a":1},"surfaceOp":"append"}\n',
        b'{"data":{"b":2},"time":2,"seq":1,"type":"command/run"}\n',
        b'{"type":"user/message","seq":2,"time":3,"data":{},"surfaceOp":"append","later":"field"}\n',
        b'{"sourceEventSeqs":[0,2],"type":"user/message","seq":3,"time":4,"data":{},'
        b'"surfaceOp":{"op":"replace","start":0,"end":2}}\n',
    ]
    log = load_log(_file(rows, compression), Path("/x"), compression)  # type: ignore[arg-type]
    expected = [
        trusted_event("user/message", 0, 1, {"a": 1}, "append", None),
        trusted_event("command/run", 1, 2, {"b": 2}, None, None),
        trusted_event("user/message", 2, 3, {}, "append", None),
        trusted_event("user/message", 3, 4, {}, {"op": "replace", "start": 0, "end": 2}, [0, 2]),
    ]
    assert log.events == expected
    for event, built in zip(log.events, expected, strict=True):
        assert set(vars(event)) == set(vars(built)) == set(type(event).model_fields)
        assert event.to_wire() == built.to_wire()
        assert event.model_dump() == built.model_dump()


_HEADER_VALUES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=4)
    | st.lists(st.integers(), max_size=2)
)
_HEADER_KEYS = st.sampled_from(
    ["id", "createdAt", "cwd", "version", "parentSession", "seedLength", "delegationDepth", "origin",
     "agentPreset", "created_at", "delegation_depth", "later"]
)  # fmt: skip


@given(
    st.dictionaries(_HEADER_KEYS, _HEADER_VALUES, max_size=9),
    st.text(max_size=4),
    st.integers(min_value=-(2**64), max_value=2**64),
)
def test_a_plain_header_is_what_validation_makes_of_it(row: dict[str, Any], ident: str, created: int) -> None:
    """The quick header (no pydantic) is taken only where validation would make the same header."""
    from core.folder.jsonl_header import _plain_header
    from core.sessions.models import SessionHeader

    for shaped in (row, {"id": ident, "createdAt": created, **row}):
        quick = _plain_header({"type": "session", **shaped})
        try:
            validated: Any = SessionHeader.model_validate(shaped)
        except ValueError:
            validated = None
        if quick is not None:
            assert validated is not None
            assert quick == validated and quick.to_wire() == validated.to_wire()
