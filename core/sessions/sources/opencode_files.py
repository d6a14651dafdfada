"""opencode's older storage, JSON files under ``<data>/opencode/storage/`` (before its SQLite
database; a database's first start copies them in and leaves them), read-only:

- ``session/<project id>/<session id>.json``: ``{id, directory, title, parentID?, time: {created, updated}}``;
- ``message/<session id>/<message id>.json``: ``{id, role, time: {created}, summary?}``;
- ``part/<message id>/<part id>.json``: ``{id, type, text?, synthetic?}``.

Each session is handed to ``OpenCodeSource`` as the database's rows would be (a message's parts
in id order, messages by time then id), so both are read by the same rules. Files are read only
when regular (never through a link), each up to ``MAX_PART_BYTES``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.files import Revision, open_regular

STORAGE = "storage"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
"""What an id must be to name a folder (a file's ``id`` of ``../x`` never leads out of the storage)."""


@dataclass(frozen=True)
class StoredSession:
    """One session file's listing: its id, folder, title, creation time and revision."""

    session_id: str
    directory: str | None
    title: str
    created: int
    revision: Revision


def _read_json(path: str, limit: int) -> Any:
    """A regular file's JSON (``None`` when it is not one, too large, or not JSON)."""
    try:
        with os.fdopen(open_regular(path, follow=False), "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError:
        return None
    if len(raw) > limit:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _created(info: dict[str, Any]) -> int:
    times = info.get("time")
    created = times.get("created") if isinstance(times, dict) else None
    return created if isinstance(created, int) else 0


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _folders(path: Path) -> list[os.DirEntry[str]]:
    try:
        return sorted(
            (entry for entry in os.scandir(path) if entry.is_dir(follow_symlinks=False)), key=lambda e: e.name
        )
    except OSError:
        return []


def _files(path: Path | str) -> list[os.DirEntry[str]]:
    try:
        entries = os.scandir(path)
        return sorted(
            (e for e in entries if e.name.endswith(".json") and e.is_file(follow_symlinks=False)), key=lambda e: e.name
        )
    except OSError:
        return []


def stored_sessions(root: Path, limit: int) -> list[StoredSession]:
    """Every top-level session of the storage under ``root`` (sub-agents' sessions left out)."""
    storage = root / STORAGE
    found: list[StoredSession] = []
    for project in _folders(storage / "session"):
        for entry in _files(project.path):
            info = _read_json(entry.path, limit)
            if not isinstance(info, dict) or not isinstance(info.get("id"), str) or info.get("parentID"):
                continue
            if not _SAFE_ID.match(info["id"]):
                continue
            created = _created(info)
            status = entry.stat(follow_symlinks=False)
            try:
                messages = os.stat(storage / "message" / info["id"], follow_symlinks=False).st_mtime_ns
            except OSError:
                messages = 0
            directory = info.get("directory") if isinstance(info.get("directory"), str) else None
            found.append(
                StoredSession(
                    info["id"],
                    directory or None,
                    _text(info.get("title")),
                    created,
                    (1, status.st_size, status.st_mtime_ns, messages),
                )
            )
    return found


def stored_rows(root: Path, session_id: str, limit: int) -> list[tuple[Any, ...]]:
    """The session's messages and parts as the database's read gives them: ``(message id, created,
    message JSON, part id, part JSON or None)``, messages by time then id, parts by id."""
    storage = root / STORAGE
    if not _SAFE_ID.match(session_id):
        return []
    messages: list[tuple[int, str, str]] = []
    for entry in _files(storage / "message" / session_id):
        info = _read_json(entry.path, limit)
        if not isinstance(info, dict):
            continue
        created = _created(info)
        messages.append((created, entry.name.removesuffix(".json"), json.dumps(info)))
    rows: list[tuple[Any, ...]] = []
    for created, message_id, data in sorted(messages):
        parts = _files(storage / "part" / message_id)
        if not parts:
            rows.append((message_id, created, data, None, None))
        for entry in parts:
            part = _read_json(entry.path, limit)
            rows.append((message_id, created, data, entry.name, json.dumps(part) if part is not None else None))
    return rows
