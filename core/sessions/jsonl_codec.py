"""The JSONL store's file format: header line, zstd frames or plain lines, packed chunk rows,
torn-tail recovery (STORE.md). Pure functions over bytes; no locks, no writes."""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from core.collector import collector_paused
from core.errors import SessionQueryError
from core.files import open_regular, read_head
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import ROW_TYPES, MalformedRowError, expand_chunk_row
from core.sessions.jsonl_layout import Compression
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    TitleSnapshot,
    trusted_event,
)
from core.sessions.session import (
    title_from_event,
)
from core.sessions.surface import SurfaceFolder

SESSION_QUERY_CORRUPT = "SESSION_QUERY_CORRUPT_SESSION"
HEADER_LIMIT = 256 * 1024
"""The most a listing reads of one session file to find its header."""
_HEADER_PROBE = 4096
_BOMB_STEP = 64
"""Compressed bytes fed at a time while looking for the header (at most ~2 MiB of output each)."""
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_FHD_RESERVED = 0x18


def _corrupt(path: Path, offset: int, reason: str) -> SessionQueryError:
    return SessionQueryError(
        f"corrupt session file {path} at byte {offset}: {reason}", SESSION_QUERY_CORRUPT, offset=offset, detail=reason
    )


def header_line(header: SessionHeader) -> str:
    """The first line of a session file."""
    return js_json_stringify({"type": "session", **header.to_wire()}) + "\n"


def _header_from_row(row: Any, path: Path) -> SessionHeader:
    # Real dsh files may omit ``delegationDepth`` (it reads as 0, the model's default).
    if not isinstance(row, dict) or row.get("type") != "session":
        raise _corrupt(path, 0, "the first line is not a session header")
    try:
        return SessionHeader.model_validate({key: value for key, value in row.items() if key != "type"})
    except ValueError as error:
        raise _corrupt(path, 0, f"invalid header ({error.__class__.__name__})") from error


def _expand_row(row: Any, path: Path, offset: int) -> list[SessionEvent]:
    """One stored row as events: a plain event, or a packed chunk row expanded losslessly.

    Event types this version does not know (``command/run``, ``permission/preset``, ...) are kept
    as they are: they are log-only, so they never reach the surface or a projection.
    """
    if not isinstance(row, dict):
        raise _corrupt(path, offset, "a row is not an object")
    if row.get("type") in ROW_TYPES:
        try:
            return expand_chunk_row(row)
        except MalformedRowError as error:
            raise _corrupt(path, offset, str(error)) from error
    try:
        if type(row.get("seq")) is not int or type(row.get("time")) is not int or not isinstance(row.get("data"), dict):
            raise ValueError("seq, time and data are required")
        return [
            trusted_event(
                type=row["type"],
                seq=row["seq"],
                time=row["time"],
                data=row["data"],
                surface_op=row.get("surfaceOp"),
                source_event_seqs=row.get("sourceEventSeqs"),
            )
        ]
    except (KeyError, ValueError) as error:
        raise _corrupt(path, offset, f"malformed event row ({error})") from error


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


def _frames(raw: bytes, path: Path) -> Generator[tuple[int, bytes, bool], None, int]:
    """Yield ``(offset, decompressed, complete)`` per zstd frame; a torn last frame ends the walk.

    A torn last frame (the footprint of a crash mid-write) is yielded with ``complete=False`` and
    what of it decompresses, as dsh reads it. The return value is the byte length of the complete
    frames.
    """
    offset = 0
    total = len(raw)
    view = memoryview(raw)
    while offset < total:
        if total - offset > 4 and view[offset + 4] & _FHD_RESERVED and raw.startswith(_ZSTD_MAGIC, offset):
            # The unused and reserved bits of the frame header descriptor: zstd ignores the first,
            # dsh refuses both. A flipped bit there is damage, and dsh's verdict is kept.
            raise _corrupt(path, offset + 4, "reserved frame-header bit")
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        try:
            content = decompressor.decompress(view[offset:])
        except zstandard.ZstdError as error:
            raise _corrupt(path, offset, f"damaged zstd frame ({error})") from error
        if not decompressor.eof:
            yield offset, content, False
            break
        consumed = total - offset - len(decompressor.unused_data)
        yield offset, content, True
        offset += consumed
    return offset


def _torn_rows(content: bytes, offset: int) -> tuple[list[tuple[int, Any]], bytes]:
    """The complete, parseable lines at the start of a torn frame's plaintext, and their bytes."""
    rows: list[tuple[int, Any]] = []
    lines, _ = _split_lines(content, offset)
    kept = 0
    for _, line in lines:
        try:
            rows.append((offset, _json_line(line)))
        except ValueError:
            break
        kept += len(line) + 1
    return rows, content[:kept]


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


def _parse_rows(content: bytes, base: int, path: Path, per_line_offsets: bool) -> list[tuple[int, Any]]:
    """Parse a run of complete JSONL lines into ``(offset, row)`` pairs.

    Raw newlines only ever separate rows (JSON escapes those inside strings), so the whole run is
    parsed as one JSON array in a single C call; only when that fails is it re-parsed line by line
    to name the damaged line's offset.
    """
    if not content:
        return []
    try:
        rows = json.loads(b"[" + content[:-1].replace(b"\n", b",") + b"]")
        if len(rows) == content.count(b"\n"):
            if per_line_offsets:
                lines, _ = _split_lines(content, base)
                return [(offset, row) for (offset, _), row in zip(lines, rows, strict=True)]
            return [(base, row) for row in rows]
    except ValueError:
        pass
    lines, _ = _split_lines(content, base)
    parsed = []
    for offset, line in lines:
        try:
            parsed.append((offset if per_line_offsets else base, _json_line(line)))
        except ValueError as error:
            raise _corrupt(path, offset if per_line_offsets else base, f"a line is not JSON ({error})") from error
    return parsed


def _json_line(line: bytes) -> Any:
    """One JSONL record. Bytes that are not UTF-8 read as U+FFFD (maximal subparts), as dsh's
    reader decodes them, so a log dsh opens opens here too (found by differential fuzzing)."""
    try:
        return json.loads(line)
    except UnicodeDecodeError:
        return json.loads(line.decode("utf-8", "replace"))


def _load_log(raw: bytes, path: Path, compression: Compression) -> LoadedLog:
    rows: list[tuple[int, Any]] = []
    recovered = b""
    if compression == "zstd":
        frames = _frames(raw, path)
        while True:
            try:
                offset, content, complete = next(frames)
            except StopIteration as done:
                valid = done.value
                break
            if not complete:
                if rows:  # a torn header frame leaves nothing to recover
                    torn, recovered = _torn_rows(content, offset)
                    rows.extend(torn)
                continue
            if not content.endswith(b"\n"):
                raise _corrupt(path, offset, "a frame does not end with a complete line")
            rows.extend(_parse_rows(content, offset, path, per_line_offsets=False))
            del content
    else:
        valid = raw.rfind(b"\n") + 1  # a last line without its newline is a torn tail
        rows = _parse_rows(raw[:valid], 0, path, per_line_offsets=True)
    if not rows:
        raise _corrupt(path, 0, "the file has no complete header")
    header = None
    events: list[SessionEvent] = []
    folder = SurfaceFolder(allow_gaps=True)
    title: TitleSnapshot | None = None
    for offset, row in rows:
        if header is None:
            header = _header_from_row(row, path)
            continue
        for event in _expand_row(row, path, offset):
            try:
                folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
            except SessionQueryError as error:
                raise _corrupt(path, offset, str(error)) from error
            events.append(event)
            title = title_from_event(event) or title
    assert header is not None
    return LoadedLog(
        header=header,
        events=events,
        valid_length=valid,
        title=title,
        surface_seqs=folder.seqs,
        recovered=recovered,
    )


def _header_bytes(probe: bytes, path: Path, compression: Compression) -> bytes | None:
    """The header line inside ``probe`` (the start of the file), or ``None`` if it needs more bytes."""
    if compression == "zstd":
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        content = b""
        try:
            # Small pieces, so a frame that decompresses to gigabytes (a "zip bomb" of RLE blocks)
            # is stopped once its output passes the header limit.
            for start in range(0, len(probe), _BOMB_STEP):
                content += decompressor.decompress(probe[start : start + _BOMB_STEP])
                if b"\n" in content or decompressor.eof:
                    break
                if len(content) > HEADER_LIMIT:
                    raise _corrupt(path, 0, f"no header line within its first {HEADER_LIMIT // 1024} KiB")
        except zstandard.ZstdError as error:
            raise _corrupt(path, 0, f"damaged header frame ({error})") from error
        line, newline, _ = content.partition(b"\n")
        if decompressor.eof and not newline:
            raise _corrupt(path, 0, "the header frame holds no complete line")
        return line if newline else None
    line, newline, _ = probe.partition(b"\n")
    return line if newline else None


def _read_header(path: str, compression: Compression) -> SessionHeader:
    """Read only the header frame/line of a session file, growing the read while the header is
    longer, up to ``HEADER_LIMIT`` (a header is a few hundred bytes; a file whose first line runs on
    for megabytes is damaged, and reading it whole to find out would be the attack).

    Raises:
        SessionQueryError: ``SESSION_QUERY_CORRUPT_SESSION`` for a damaged or oversized header.
        UnsafeFile: the path is a symlink or not a regular file (never opened for reading then).
    """
    size = _HEADER_PROBE
    where = Path(path)
    fd = open_regular(path)
    try:
        probe = read_head(fd, size)
        while (line := _header_bytes(probe, where, compression)) is None:
            if len(probe) < size:
                raise _corrupt(where, 0, "the header is incomplete")
            if size >= HEADER_LIMIT:
                raise _corrupt(where, 0, f"no header line within its first {HEADER_LIMIT // 1024} KiB")
            size = min(size * 2, HEADER_LIMIT)
            probe = read_head(fd, size)
    finally:
        os.close(fd)
    try:
        row = _json_line(line)
    except ValueError as error:
        raise _corrupt(where, 0, "the header is not JSON") from error
    return _header_from_row(row, where)
