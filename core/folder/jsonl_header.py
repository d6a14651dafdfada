"""A session file's first line: the header (STORE.md), written, parsed, and read off the start of
a file without reading the rest, plus the one error every damaged file gives."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import msgspec
import zstandard

from core.errors import SessionQueryError
from core.files import open_regular_sized, read_head
from core.folder.jsonl_layout import Compression
from core.serialization import js_json_stringify
from core.sessions.models import SessionHeader, trusted_header

SESSION_QUERY_CORRUPT = "SESSION_QUERY_CORRUPT_SESSION"
HEADER_LIMIT = 256 * 1024
"""The most a listing reads of one session file to find its header."""
_HEADER_PROBE = 4096
_BOMB_STEP = 64
"""Compressed bytes fed at a time while looking for the header (at most ~2 MiB of output each)."""


def corrupt_session(path: Path, offset: int, reason: str) -> SessionQueryError:
    """``SESSION_QUERY_CORRUPT_SESSION`` for ``path``, damaged at byte ``offset`` for ``reason``."""
    return SessionQueryError(
        f"corrupt session file {path} at byte {offset}: {reason}", SESSION_QUERY_CORRUPT, offset=offset, detail=reason
    )


def header_line(header: SessionHeader) -> str:
    """The first line of a session file."""
    return js_json_stringify({"type": "session", **header.to_wire()}) + "\n"


def header_from_line(line: str, path: Path) -> SessionHeader:
    """The header a session file's first line holds (``path`` names it in errors).

    Raises:
        SessionQueryError: ``SESSION_QUERY_CORRUPT_SESSION``.
    """
    try:
        row = json.loads(line)
    except ValueError as error:
        raise corrupt_session(path, 0, f"the header is not JSON ({error})") from None
    return header_from_row(row, path)


_OPTIONAL_STRINGS = ("cwd", "parentSession", "origin", "agentPreset")
_OPTIONAL_INTEGERS = ("version", "seedLength", "delegationDepth")
_PLAIN_KEYS = frozenset({"type", "id", "createdAt", *_OPTIONAL_STRINGS, *_OPTIONAL_INTEGERS})
_SAFE = 1 << 63


def _plain_header(row: dict[str, Any]) -> SessionHeader | None:
    """The header of a row as dsh writes them (camelCase keys, each value of its field's own type,
    integers well inside 64 bits), built without pydantic: what validation would give it, as it
    is. ``None`` for any other row (pydantic decides: coercions, snake_case keys, errors)."""
    if not row.keys() <= _PLAIN_KEYS:
        return None
    get = row.get
    ident, created = get("id"), get("createdAt")
    if type(ident) is not str or type(created) is not int or not -_SAFE < created < _SAFE:
        return None
    for key in _OPTIONAL_STRINGS:
        value = get(key)
        if value is not None and type(value) is not str:
            return None
    for key in _OPTIONAL_INTEGERS:
        value = get(key)
        if value is not None and (type(value) is not int or not -_SAFE < value < _SAFE):
            return None
    version, depth = get("version", 0), get("delegationDepth", 0)
    if version is None or depth is None:
        return None  # (required when present: pydantic refuses a null)
    return trusted_header(
        ident, created, get("cwd"), version, get("parentSession"), get("seedLength"), depth, get("origin"),
        get("agentPreset"),
    )  # fmt: skip


def header_from_row(row: Any, path: str | os.PathLike[str]) -> SessionHeader:
    """The header a parsed first row holds."""
    # Real dsh files may omit ``delegationDepth`` (it reads as 0, the model's default).
    if not isinstance(row, dict) or row.get("type") != "session":
        raise corrupt_session(Path(path), 0, "the first line is not a session header")
    quick = _plain_header(row)
    if quick is not None:
        return quick
    try:
        return SessionHeader.model_validate({key: value for key, value in row.items() if key != "type"})
    except ValueError as error:
        raise corrupt_session(Path(path), 0, f"invalid header ({error.__class__.__name__})") from error


def json_line(line: bytes) -> Any:
    """One JSONL record. Bytes that are not UTF-8 read as U+FFFD (maximal subparts), as dsh's
    reader decodes them, so a log dsh opens opens here too (found by differential fuzzing)."""
    try:
        return json.loads(line)
    except UnicodeDecodeError:
        return json.loads(line.decode("utf-8", "replace"))


_FAST = msgspec.json.Decoder()


def _header_row(line: bytes) -> Any:
    """``json_line`` for a header, by msgspec straight from the bytes when it can: it reads the
    JSON ``json`` reads the same way and refuses the rest (lone surrogate escapes, bytes that are
    not UTF-8, ``NaN``), which ``json_line`` then reads as before (``jsonl_codec._decode_lines``)."""
    try:
        return _FAST.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return json_line(line)


_DECOMPRESSORS = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor: its context is made once (making one per file was most of a
    first listing's cost), and a thread never shares it (listing and loading run on several)."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_DECOMPRESSORS, "value", None)
    if decompressor is None:
        decompressor = _DECOMPRESSORS.value = zstandard.ZstdDecompressor()
    return decompressor


def _header_bytes(probe: bytes, path: str, compression: Compression) -> bytes | None:
    """The header line inside ``probe`` (the start of the file), or ``None`` if it needs more bytes."""
    if compression == "zstd":
        decompressor = _decompressor().decompressobj()
        content = b""
        try:
            # Small pieces, so a frame that decompresses to gigabytes (a "zip bomb" of RLE blocks)
            # is stopped once its output passes the header limit.
            for start in range(0, len(probe), _BOMB_STEP):
                content += decompressor.decompress(probe[start : start + _BOMB_STEP])
                if b"\n" in content or decompressor.eof:
                    break
                if len(content) > HEADER_LIMIT:
                    raise corrupt_session(Path(path), 0, f"no header line within its first {HEADER_LIMIT // 1024} KiB")
        except zstandard.ZstdError as error:
            raise corrupt_session(Path(path), 0, f"damaged header frame ({error})") from error
        line, newline, _ = content.partition(b"\n")
        if decompressor.eof and not newline:
            raise corrupt_session(Path(path), 0, "the header frame holds no complete line")
        return line if newline else None
    line, newline, _ = probe.partition(b"\n")
    return line if newline else None


def read_header(path: str, compression: Compression, *, seen_regular: bool = False) -> SessionHeader:
    """Read only the header frame/line of a session file, growing the read while the header is
    longer, up to ``HEADER_LIMIT`` (a header is a few hundred bytes; a file whose first line runs on
    for megabytes is damaged, and reading it whole to find out would be the attack).

    Raises:
        SessionQueryError: ``SESSION_QUERY_CORRUPT_SESSION`` for a damaged or oversized header.
        UnsafeFile: the path is a symlink or not a regular file (never opened for reading then).

    ``seen_regular``: a listing's walk has just found it a regular file (see ``open_regular_sized``).
    """
    size = _HEADER_PROBE
    fd, length = open_regular_sized(path, seen_regular=seen_regular, blocking=False)  # (read, then closed)
    try:
        # Never more than the file held when opened: one read, not a second one to meet its end.
        probe = read_head(fd, min(size, length))
        while (line := _header_bytes(probe, path, compression)) is None:
            if len(probe) < size:
                raise corrupt_session(Path(path), 0, "the header is incomplete")
            if size >= HEADER_LIMIT:
                raise corrupt_session(Path(path), 0, f"no header line within its first {HEADER_LIMIT // 1024} KiB")
            size = min(size * 2, HEADER_LIMIT)
            probe = read_head(fd, size)
    finally:
        os.close(fd)
    try:
        row = _header_row(line)
    except ValueError as error:
        raise corrupt_session(Path(path), 0, "the header is not JSON") from error
    return header_from_row(row, path)
