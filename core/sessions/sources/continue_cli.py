"""Continue's sessions (its CLI ``cn``, ``@continuedev/cli``; its IDE extensions keep the same
folder): ``<root>/sessions/<session id>.json``, read-only.

One JSON document a session: ``sessionId``, ``title`` (``Untitled Session`` until one is made),
``workspaceDirectory`` (a path, or a ``file://`` URI) and ``history``, a list of items each holding a
``message`` (``role`` ``user``, ``assistant``, ``system``, ``thinking`` or ``tool``; ``content`` a
string or a list of parts, ``text`` ones among them; an assistant's ``toolCalls``), the context items
and tool call states the UI shows. A compaction replaces the history: its first item is then an
assistant message carrying ``conversationSummary``. ``sessions.json`` beside the files lists each
session's id, title, ``dateCreated`` (epoch milliseconds, as text) and folder. Messages carry no time.

Mapping: a user message's text becomes a prompt, an assistant's text an answer, an item with a
``conversationSummary`` a compact checkpoint; system messages, thinking, tool calls and results, and
context items are not on the surface. The title is the session's, unless it is the placeholder, else
the first prompt. A session's time is ``dateCreated``, else its file's modification time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from core.files import file_revision
from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    epoch_millis,
    prompt_title,
    read_json,
    text_of,
)

CONTINUE_PREFIX = "continue:"
SESSION_BYTES = 64 * 1024 * 1024
"""The largest session file read (a longer one is that file's problem, never read whole)."""
INDEX_BYTES = 16 * 1024 * 1024
"""The largest ``sessions.json`` read (a longer one is not used: each file is read instead)."""
PLACEHOLDER_TITLES = frozenset({"", "Untitled Session"})


def continue_root() -> Path:
    """``$CONTINUE_GLOBAL_DIR``, else ``~/.continue``."""
    configured = os.environ.get("CONTINUE_GLOBAL_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".continue"


def _folder(value: Any) -> str | None:
    """A session's folder: a path, or the path of a ``file://`` URI (``None`` for anything else)."""
    if type(value) is not str or not value.strip():
        return None
    if value.startswith("file://"):
        path = unquote(urlsplit(value).path)
        return path or None
    return value


def _millis(value: Any) -> int | None:
    """Epoch milliseconds written as a number or as its digits, when they name a time before 10000."""
    if type(value) is str and value.isascii() and value.isdigit() and len(value) <= 16:
        value = int(value)
    return epoch_millis(value)


class ContinueSource(FileSource):
    """Continue's sessions: ``<root>/sessions/<id>.json`` (read-only)."""

    prefix = CONTINUE_PREFIX
    name = "Continue"
    follow_links = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._index: tuple[Any, dict[str, Mapping[str, Any]]] | None = None

    def _files(self) -> Iterator[str]:
        folder = self.root / "sessions"
        if folder.is_symlink():
            return
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            if name.endswith(".json") and name != "sessions.json":
                yield os.path.join(folder, name)

    def _indexed(self) -> dict[str, Mapping[str, Any]]:
        """``sessions.json``'s entries by session id (read again when it changed; empty when unreadable)."""
        path = self.root / "sessions" / "sessions.json"
        try:
            revision: Any = file_revision(path)
        except OSError:
            return {}
        if self._index is None or self._index[0] != revision:
            entries: dict[str, Mapping[str, Any]] = {}
            try:
                listed = read_json(path, INDEX_BYTES)
            except (OSError, ValueError, RecursionError):
                listed = None
            for entry in listed if type(listed) is list else ():
                if type(entry) is dict and type(entry.get("sessionId")) is str:
                    entries[entry["sessionId"]] = entry
            self._index = (revision, entries)
        return self._index[1]

    def _header(self, path: Path) -> SessionHeader | None:
        session_id = path.stem
        entry = self._indexed().get(session_id)
        if entry is not None:
            folder = entry.get("workspaceDirectory")
        else:  # (not in the index: the file says)
            session = read_json(path, SESSION_BYTES)
            if type(session) is not dict or type(session.get("history")) is not list:
                return None
            folder = session.get("workspaceDirectory")
        created = _millis(entry.get("dateCreated")) if entry is not None else None
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + session_id, created_at=created, cwd=_folder(folder))

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        try:
            session = read_json(path, SESSION_BYTES)
        except (ValueError, RecursionError):
            return ExternalSession(header, [], None, 1, None)
        history = session.get("history") if type(session) is dict else None
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        problems = 0
        items = history if type(history) is list else []
        when = header.created_at
        for number, item in enumerate(items):
            message = item.get("message") if type(item) is dict else None
            if type(message) is not dict:
                problems += 1
                continue
            summary = item.get("conversationSummary")
            if type(summary) is str and summary.strip():
                builder.checkpoint(number, when, summary)
                continue
            text = text_of(message.get("content"))
            if not text.strip():
                continue
            if message.get("role") == "user":
                builder.user(number, when, text)
                first_prompt = first_prompt or prompt_title(text)
            elif message.get("role") == "assistant":
                builder.assistant(number, when, text)
        title = session.get("title") if type(session) is dict else None
        if type(title) is not str or title.strip() in PLACEHOLDER_TITLES:
            title = first_prompt
        return ExternalSession(header, builder.events, title, problems, len(items) - 1 if items else None)
