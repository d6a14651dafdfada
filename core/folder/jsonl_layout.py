"""Where the JSONL store keeps a session: project folders by cwd, one safe segment per id (STORE.md)."""

from __future__ import annotations

import functools
import os
import re
from typing import Literal

from core.errors import SessionQueryError
from core.serialization import js_json_stringify

Compression = Literal["zstd", "none"]

SESSION_QUERY_INVALID_ID = "SESSION_QUERY_INVALID_ID"
SESSION_QUERY_WRONG_ENCODING = "SESSION_QUERY_WRONG_ENCODING"
"""A session file of the other encoding than the store was opened with (readable by a store of that one)."""

FILE_NAMES: dict[str, str] = {"zstd": "session.jsonl.zstd", "none": "session.jsonl"}
_FILE_ENDS = {compression: os.sep + name for compression, name in FILE_NAMES.items()}
ENCODINGS: tuple[Compression, ...] = ("zstd", "none")
"""Every encoding a session file can have; its name says which (``session.jsonl.zstd``, ``session.jsonl``)."""
ENCODING_NAMES: dict[str, str] = {"zstd": "zstd frames", "none": "plain JSONL"}


def other_encoding(compression: Compression) -> Compression:
    """The encoding that is not ``compression``."""
    return "none" if compression == "zstd" else "zstd"


def wrong_encoding_message(path: object, compression: Compression) -> str:
    """Why a store opened with ``compression`` does not list the session file at ``path``, and what opens it."""
    other = other_encoding(compression)
    return (
        f"{path} is {ENCODING_NAMES[other]} but this store was opened with compression {compression!r}: "
        f"open it with compression {other!r} (sessionref --compression {other}); sessionref import reads either"
    )


_NAME_LIMIT = 255
_NO_CWD = "_no-cwd"


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_UNSAFE_OR_SEPARATORS = re.compile(r"[/\\:]+|[^A-Za-z0-9._-]")


def _escape_match(match: re.Match[str]) -> str:
    # One escape per UTF-16 code unit: an astral character becomes two.
    raw = match.group().encode("utf-16-be", "surrogatepass")
    return "".join(f"~{raw[i] << 8 | raw[i + 1]:04X}" for i in range(0, len(raw), 2))


def _slug_match(match: re.Match[str]) -> str:
    text = match.group()
    return "-" if text[0] in "/\\:" else _escape_match(match)


def encode_session_segment(session_id: str) -> str:
    """One safe path segment for a session id (injective over JavaScript strings).

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_ID`` for the empty id or a segment over 255 bytes.
    """
    if session_id == "":
        raise SessionQueryError("a session id must not be empty", SESSION_QUERY_INVALID_ID)
    if session_id in (".", ".."):
        return "~002E" * len(session_id)
    segment = _UNSAFE.sub(_escape_match, session_id)
    if len(segment) > _NAME_LIMIT:
        raise SessionQueryError(
            f"session id {js_json_stringify(session_id[:40])}... is too long to store: its file name would be "
            f"{len(segment)} bytes (the file system allows {_NAME_LIMIT})",
            SESSION_QUERY_INVALID_ID,
        )
    return segment


@functools.lru_cache(maxsize=4096)
def project_key(cwd: str | None) -> str:
    """The project folder of a cwd: ``--<slug>--`` (lossy on purpose), or ``_no-cwd``. (Remembered:
    a listing asks it of every session, and a store's sessions share a few folders.)"""
    if cwd is None:
        return _NO_CWD
    slug = _UNSAFE_OR_SEPARATORS.sub(_slug_match, cwd).lstrip("-") or "root"
    return f"--{slug[:251]}--"


def session_file(root: str | os.PathLike[str], session_id: str, cwd: str | None, compression: Compression) -> str:
    """Where the session with this id and cwd belongs: ``<root>/<project>/<id segment>/<file>``.

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_ID`` (from ``encode_session_segment``).
    """
    return _project_folder(os.fspath(root), cwd) + encode_session_segment(session_id) + _FILE_ENDS[compression]


@functools.lru_cache(maxsize=4096)
def _project_folder(root: str, cwd: str | None) -> str:
    """``<root>/<project>/``, as ``os.path.join`` makes it (what a listing compares paths with)."""
    return os.path.join(root, project_key(cwd), "")
