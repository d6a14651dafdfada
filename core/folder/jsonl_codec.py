"""The JSONL store's file format after the header: zstd frames or plain lines, parsed as runs of
rows, torn-tail recovery (STORE.md; the header line is ``jsonl_header``'s, the rows become events
in ``log_events``). Pure functions over bytes; no locks, no writes."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import zstandard

from core.collector import collector_paused
from core.folder.event_envelopes import envelopes
from core.folder.jsonl_header import corrupt_session, header_from_row, json_line
from core.folder.jsonl_layout import Compression
from core.folder.log_events import Rows, add_envelopes, add_rows
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    TitleSnapshot,
)
from core.sessions.surface import SurfaceFolder

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_FHD_RESERVED = 0x18
_WHOLE_FRAME_LIMIT = 64 << 20
"""The largest frame content decompressed in one allocation (its size comes from the header)."""


@dataclass
class LoadedLog:
    """A parsed session file: its header, events, and the byte length of the valid prefix."""

    header: SessionHeader
    events: list[SessionEvent]
    valid_length: int
    title: TitleSnapshot | None = None
    surface_seqs: list[int] = field(default_factory=list)
    recovered: bytes = b""
    """Complete lines read out of a torn last zstd frame (their events are in ``events``); a writer
    that reopens the file truncates to ``valid_length`` and writes them again as a frame of their own."""


def _frame_end(view: memoryview, offset: int) -> int | None:
    """Where the zstd frame starting at ``offset`` ends, read off its block headers (RFC 8878), or
    ``None`` for anything but a complete, ordinary frame (torn, skippable, a reserved block type)."""
    total = len(view)
    head = view[offset : offset + 18]
    try:
        at = offset + zstandard.frame_header_size(head)
        if not 0 <= zstandard.frame_content_size(head) <= _WHOLE_FRAME_LIMIT:
            return None  # unknown, or more than a frame of ours ever holds: decompressed as a stream
    except zstandard.ZstdError:
        return None
    checksum = 4 if view[offset + 4] & 0x04 else 0
    while at + 3 <= total:
        block = view[at] | view[at + 1] << 8 | view[at + 2] << 16
        kind, size = (block >> 1) & 3, block >> 3
        if kind == 3:
            return None
        at += 3 + (1 if kind == 1 else size)
        if block & 1:
            return at + checksum if at + checksum <= total else None
    return None


def _frames(raw: bytes, path: Path) -> Generator[tuple[int, bytes, bool], None, int]:
    """Yield ``(offset, decompressed, complete)`` per zstd frame; a torn last frame ends the walk.

    A torn last frame (the footprint of a crash mid-write) is yielded with ``complete=False`` and
    what of it decompresses, as dsh reads it. The return value is the byte length of the complete
    frames. An intact frame whose end its block headers tell is decompressed in one call (which
    releases the GIL); any other goes through the streaming decompressor, which names the damage.
    """
    offset = 0
    total = len(raw)
    view = memoryview(raw)
    whole = zstandard.ZstdDecompressor()
    while offset < total:
        if total - offset > 4 and view[offset + 4] & _FHD_RESERVED and raw.startswith(_ZSTD_MAGIC, offset):
            # The unused and reserved bits of the frame header descriptor: zstd ignores the first,
            # dsh refuses both. A flipped bit there is damage, and dsh's verdict is kept.
            raise corrupt_session(path, offset + 4, "reserved frame-header bit")
        end = _frame_end(view, offset) if raw.startswith(_ZSTD_MAGIC, offset) else None
        if end is not None:
            try:
                content = whole.decompress(view[offset:end])
            except zstandard.ZstdError:
                pass  # no content size in the header, or damage: the streaming path decides
            else:
                yield offset, content, True
                offset = end
                continue
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        try:
            content = decompressor.decompress(view[offset:])
        except zstandard.ZstdError as error:
            raise corrupt_session(path, offset, f"damaged zstd frame ({error})") from error
        if not decompressor.eof:
            yield offset, content, False
            break
        consumed = total - offset - len(decompressor.unused_data)
        yield offset, content, True
        offset += consumed
    return offset


_AHEAD_FROM = 1 << 20
"""Compressed files from this size decompress on a worker thread, a frame ahead of the parsing."""


def _frames_ahead(raw: bytes, path: Path) -> Generator[tuple[int, bytes, bool], None, int]:
    """``_frames``, with the decompression of big files on a worker thread.

    zstd releases the GIL while it decompresses, so the next frames are ready by the time the
    current one is parsed (two at most wait, which bounds the memory). Items, errors and the
    return value come in ``_frames``' order: a damaged frame raises only after every frame
    before it was handed over.
    """
    if len(raw) < _AHEAD_FROM:
        return (yield from _frames(raw, path))
    slots: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce() -> None:
        frames = _frames(raw, path)
        try:
            while not stop.is_set():
                try:
                    item = next(frames)
                except StopIteration as done:
                    slots.put(("done", done.value))
                    return
                slots.put(("frame", item))
        except BaseException as error:  # handed to the reader, raised there
            slots.put(("error", error))

    worker = threading.Thread(target=produce, name="sessionref-zstd-frames", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = slots.get()
            if kind == "done":
                return int(value)
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        while worker.is_alive():  # a producer blocked on a full queue needs a free slot to stop
            with contextlib.suppress(queue.Empty):
                slots.get(timeout=0.01)
        worker.join()


def _torn_rows(content: bytes, offset: int) -> tuple[Rows, bytes]:
    """The complete, parseable lines at the start of a torn frame's plaintext, and their bytes."""
    rows: list[Any] = []
    lines, _ = _split_lines(content, offset)
    kept = 0
    for _, line in lines:
        try:
            rows.append(json_line(line))
        except ValueError:
            break
        kept += len(line) + 1
    return Rows(offset, rows), content[:kept]


def _split_lines(content: bytes, base: int) -> tuple[list[tuple[int, bytes]], int]:
    """Complete lines of ``content`` with their file offsets, and where the unterminated rest starts."""
    lines: list[tuple[int, bytes]] = []
    start = 0
    while (end := content.find(b"\n", start)) >= 0:
        lines.append((base + start, content[start:end]))
        start = end + 1
    return lines, start


def load_log(raw: bytes, path: Path, compression: Compression) -> LoadedLog:
    """Parse a whole session file (valid prefix only; damage before the tail raises)."""
    with collector_paused():
        return _load_log(raw, path, compression)


def _parse_rows(content: bytes, base: int, path: Path, per_line_offsets: bool) -> Rows:
    """Parse a run of complete JSONL lines (each row at ``base``, or at its own line's offset): as
    ``Envelope``s when ``event_envelopes`` can read them so, else as dicts.

    Raw newlines only ever separate rows (JSON escapes those inside strings), so the whole run is
    parsed as one JSON array in a single C call; only when that fails is it re-parsed line by line
    to name the damaged line's offset.
    """
    if not content:
        return Rows(base, [])
    count = _newlines(content)
    one_a_line = _one_object_a_line(content, count)
    if one_a_line:
        found = envelopes(content)
        if found is not None and len(found) == count:
            return Rows(base, found, _line_offsets(content, base) if per_line_offsets else None, deferred=True)
    try:
        rows = _decode_lines(content)
        if one_a_line and len(rows) == count:
            return Rows(base, rows, _line_offsets(content, base) if per_line_offsets else None)
    except ValueError:
        pass
    lines, _ = _split_lines(content, base)
    parsed = []
    for offset, line in lines:
        try:
            parsed.append(json_line(line))
        except ValueError as error:
            raise corrupt_session(
                path, offset if per_line_offsets else base, f"a line is not JSON ({error})"
            ) from error
    return Rows(base, parsed, [offset for offset, _ in lines] if per_line_offsets else None)


def _line_offsets(content: bytes, base: int) -> list[int]:
    """Where each complete line of ``content`` (read at ``base``) starts in the file."""
    return [offset for offset, _ in _split_lines(content, base)[0]]


_FAST = msgspec.json.Decoder()


def _one_object_a_line(content: bytes, lines: int) -> bool:
    """Whether every line of ``content`` starts with ``{`` and ends with ``}``: then no JSON value
    can run on past its line's end (after a ``}`` only ``,``, ``}`` or ``]`` may follow inside a
    value, never a line's opening ``{``), so as many values as lines means one a line. The fast
    decoder reads values across newlines; a log whose lines do not all look so is read line by line."""
    if content[:1] != b"{" or not content.endswith(b"}\n"):
        return False
    if len(content) < _LONG_LINES * lines:
        # Every newline but the last is one of ``}\n{``'s (which cannot overlap).
        return content.count(b"}\n{") == lines - 1
    # Long lines: newline to newline (memchr) beats comparing every byte.
    find, end = content.find, len(content) - 1
    at = find(b"\n")
    while at < end:
        if content[at - 1] != 0x7D or content[at + 1] != 0x7B:  # "}" and "{"
            return False
        at = find(b"\n", at + 1)
    return True


_LONG_LINES = 512
"""Bytes a line from which ``_one_object_a_line`` walks the newlines (about 0.2 us a line) rather
than counting ``}\n{`` (about 0.6 ns a byte)."""


def _newlines(content: bytes) -> int:
    """How many newlines ``content`` holds: its length less that of a copy without them, about
    twice as fast as ``bytes.count`` (which compares byte by byte; ``replace`` jumps by memchr)."""
    return len(content) - len(content.replace(b"\n", b""))


def _decode_lines(content: bytes) -> Any:
    """The rows of complete JSONL lines, by msgspec straight from the UTF-8 bytes (no text round
    trip, no array built around them) when it can.

    msgspec reads the JSON that ``json`` reads the same way (duplicate keys keep the last value,
    integers of any size stay exact, floats round alike) and refuses the rest: lone surrogate
    escapes, bytes that are not UTF-8, a byte-order mark, ``NaN``/``Infinity``, numbers beyond a
    double. Those are read by ``json`` as before, so what a log means never depends on the parser.
    """
    try:
        return _FAST.decode_lines(content)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return json.loads(b"[" + content[:-1].replace(b"\n", b",") + b"]")


def _load_log(raw: bytes, path: Path, compression: Compression) -> LoadedLog:
    runs: list[Rows] = []
    recovered = b""
    if compression == "zstd":
        frames = _frames_ahead(raw, path)
        while True:
            try:
                offset, content, complete = next(frames)
            except StopIteration as done:
                valid = done.value
                break
            if not complete:
                if runs:  # a torn header frame leaves nothing to recover
                    torn, recovered = _torn_rows(content, offset)
                    runs.append(torn)
                continue
            if not content.endswith(b"\n"):
                raise corrupt_session(path, offset, "a frame does not end with a complete line")
            runs.append(_parse_rows(content, offset, path, per_line_offsets=False))
            del content
    else:
        valid = raw.rfind(b"\n") + 1  # a last line without its newline is a torn tail
        first = raw.find(b"\n") + 1  # the header, a run of its own (its fields are no event's)
        runs.append(_parse_rows(raw[:first], 0, path, per_line_offsets=True))
        if valid > first:
            runs.append(_parse_rows(raw[first:valid], first, path, per_line_offsets=True))
    runs = [run for run in runs if run.rows]
    if not runs:
        raise corrupt_session(path, 0, "the file has no complete header")
    header = header_from_row(runs[0].rows[0], path)
    folder = SurfaceFolder(allow_gaps=True)
    events: list[SessionEvent] = []
    title: TitleSnapshot | None = None
    for number, run in enumerate(runs):
        add = add_envelopes if run.deferred else add_rows
        title = add(run, 1 if number == 0 else 0, folder, events, path) or title
    return LoadedLog(
        header=header,
        events=events,
        valid_length=valid,
        title=title,
        surface_seqs=folder.seqs,
        recovered=recovered,
    )
