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

import contextlib
import json
import os
import re
import stat
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


def _scan(path: Path) -> list[tuple[str, os.stat_result]]:
    """(name, status, not following) of each entry of a folder that is one (not a link to one:
    opened without following), sorted by name; none when it cannot be."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return []
    found = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):  # (gone meanwhile)
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
    except OSError:
        return []
    finally:
        os.close(fd)
    return sorted(found, key=lambda item: item[0])


def _folders(path: Path) -> list[Path]:
    return [path / name for name, status in _scan(path) if stat.S_ISDIR(status.st_mode)]


def _files(path: Path) -> list[tuple[str, Path, os.stat_result]]:
    """(name, path, status) of each regular ``.json`` file of the folder."""
    return [
        (name, path / name, status)
        for name, status in _scan(path)
        if name.endswith(".json") and stat.S_ISREG(status.st_mode)
    ]


def _inside(root: Path, *names: str) -> Path | None:
    """``root`` / ``names``, when every folder on the way is a folder, not a link (``None`` else)."""
    path = root
    for name in names:
        path = path / name
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        except OSError:
            return None
    return path


def stored_sessions(root: Path, limit: int) -> list[StoredSession]:
    """Every top-level session of the storage under ``root`` (sub-agents' sessions left out)."""
    sessions = _inside(root, STORAGE, "session")
    found: list[StoredSession] = []
    for project in _folders(sessions) if sessions is not None else ():
        for _name, path, status in _files(project):
            info = _read_json(str(path), limit)
            if not isinstance(info, dict) or not isinstance(info.get("id"), str) or info.get("parentID"):
                continue
            if not _SAFE_ID.match(info["id"]):
                continue
            created = _created(info)
            try:
                messages = os.stat(root / STORAGE / "message" / info["id"], follow_symlinks=False).st_mtime_ns
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
    if not _SAFE_ID.match(session_id):
        return []
    folder = _inside(root, STORAGE, "message", session_id)
    messages: list[tuple[int, str, str]] = []
    for name, path, _status in _files(folder) if folder is not None else ():
        info = _read_json(str(path), limit)
        if not isinstance(info, dict):
            continue
        created = _created(info)
        messages.append((created, name.removesuffix(".json"), json.dumps(info)))
    rows: list[tuple[Any, ...]] = []
    for created, message_id, data in sorted(messages):
        parts_folder = _inside(root, STORAGE, "part", message_id) if _SAFE_ID.match(message_id) else None
        parts = _files(parts_folder) if parts_folder is not None else []
        if not parts:
            rows.append((message_id, created, data, None, None))
        for name, path, _status in parts:
            part = _read_json(str(path), limit)
            rows.append((message_id, created, data, name, json.dumps(part) if part is not None else None))
    return rows
