"""Cursor's chats (the editor's Composer and Agent): its global SQLite ``state.vscdb``, read-only.

The folder is Cursor's ``User`` folder: ``$XDG_CONFIG_HOME/Cursor/User``, else ``~/.config/Cursor/User``
(``~/Library/Application Support/Cursor/User`` on macOS). ``globalStorage/state.vscdb`` has a key-value
table ``cursorDiskKV(key, value)`` whose values are JSON: ``composerData:<composerId>`` is a chat
(``name``, ``createdAt`` and ``lastUpdatedAt`` epoch milliseconds, ``workspaceIdentifier.uri.fsPath``
its folder, ``subagentInfo.parentComposerId`` for a sub-agent's chat, and its messages' order in
``fullConversationHeadersOnly: [{bubbleId, type}]``; older chats hold the messages inline, in
``conversation``); ``bubbleId:<composerId>:<bubbleId>`` is one message (``type`` 1 the user's, 2 the
assistant's, ``text``, ``createdAt``, ``capabilityType`` 15 a tool's, 30 thinking, 22 a compaction
mark). A chat whose data names no folder takes the one of the workspace that lists it:
``workspaceStorage/<hash>/workspace.json`` (``folder``, a ``file://`` URI) beside a ``state.vscdb``
whose ``ItemTable`` holds ``composer.composerData`` (``allComposers``).

Mapping: the messages in the headers' order; a user message's ``text`` becomes a prompt, an
assistant's plain text an answer. Tool, thinking and compaction-mark messages (of a shape not
published), and sub-agents' chats are not on the surface. The title is the chat's ``name``, else the
first prompt. Cursor could not run here; the format was taken from public descriptions of its
database (the readers people published for it) and is checked against none of Cursor's own files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import (
    ExternalSession,
    SurfaceBuilder,
    epoch_millis,
    millis,
    prompt_title,
    read_json_object,
    subfolders,
)
from core.sessions.sources.row_source import Listed, RowSource
from core.sessions.sources.sqlite_reads import ReadOnlyDatabase

CURSOR_PREFIX = "cursor:"
MAX_VALUE_BYTES = 16 * 1024 * 1024
USER, ASSISTANT = 1, 2
_COMPOSERS = """
SELECT substr(key, 14), CASE WHEN length(value) > ? THEN NULL ELSE value END, length(value)
FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'
"""
_BUBBLES = """
SELECT substr(key, ?), CASE WHEN length(value) > ? THEN NULL ELSE value END
FROM cursorDiskKV WHERE key >= ? AND key < ?
"""
_WORKSPACE_CHATS = "SELECT value FROM ItemTable WHERE key = 'composer.composerData'"


def cursor_root() -> Path:
    """Cursor's ``User`` folder: ``$XDG_CONFIG_HOME/Cursor/User``, else ``~/.config/Cursor/User``
    (``~/Library/Application Support/Cursor/User`` on macOS)."""
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    if config:
        return Path(config) / "Cursor" / "User"
    mac = Path.home() / "Library" / "Application Support" / "Cursor" / "User"
    return mac if mac.is_dir() else Path.home() / ".config" / "Cursor" / "User"


def _json(value: object) -> Any:
    """A value of the key-value table as JSON (a text or a UTF-8 blob), or ``None``."""
    if type(value) is bytes:
        value = value.decode("utf-8", "replace")
    if type(value) is not str:
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _folder_of_uri(value: object) -> str | None:
    """A local folder from a VS Code URI object (``fsPath``, ``path``) or a ``file://`` string."""
    if type(value) is dict:
        for key in ("fsPath", "path"):
            path = value.get(key)
            if type(path) is str and path.startswith("/"):
                return path
        return None
    if type(value) is str and value.startswith("file://"):
        path = unquote(urlparse(value).path)
        return path if path.startswith("/") else None
    return None


def _time(value: object) -> int | None:
    return epoch_millis(value) if type(value) is int else millis(value)


class CursorSource(RowSource):
    """Cursor's chats (see the module docstring)."""

    prefix = CURSOR_PREFIX
    name = "Cursor"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._database = ReadOnlyDatabase(self.root / "globalStorage" / "state.vscdb", self.name)
        self._workspaces: dict[str, ReadOnlyDatabase] = {}

    def _stamp(self) -> object:
        return self._database.stamp()

    def _folders(self) -> dict[str, str]:
        """Each chat's folder by the workspace that lists it (older chats name none themselves)."""
        found: dict[str, str] = {}
        for workspace in subfolders(self.root / "workspaceStorage"):
            folder = _folder_of_uri(
                read_json_object(Path(workspace.path) / "workspace.json", 1024 * 1024).get("folder")
            )
            path = Path(workspace.path) / "state.vscdb"
            if folder is None or os.path.islink(path) or not path.is_file():
                continue
            database = self._workspaces.setdefault(str(path), ReadOnlyDatabase(path, self.name))
            try:
                rows = database.query(_WORKSPACE_CHATS)
            except OSError:
                continue
            listed = _json(rows[0][0]) if rows else None
            chats = listed.get("allComposers") if type(listed) is dict else None
            for chat in chats if type(chats) is list else []:
                chat_id = chat.get("composerId") if type(chat) is dict else None
                if type(chat_id) is str:
                    found.setdefault(chat_id, folder)
        return found

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        path = self._database.path
        if os.path.islink(path.parent) or os.path.islink(path) or not path.is_file():
            return [], []
        try:
            rows = self._database.query(_COMPOSERS, (MAX_VALUE_BYTES,))
        except OSError as error:
            return [], [StoreProblem(path, str(error))]
        folders: dict[str, str] | None = None
        found: list[Listed] = []
        for chat_id, value, size in rows:
            data = _json(value)
            if type(chat_id) is not str or type(data) is not dict:
                continue
            headers = data.get("fullConversationHeadersOnly")
            inline = data.get("conversation")
            if not (type(headers) is list and headers) and not (type(inline) is list and inline):
                continue
            parent = data.get("subagentInfo")
            if type(parent) is dict and parent.get("parentComposerId"):
                continue
            workspace = data.get("workspaceIdentifier")
            cwd = _folder_of_uri(workspace.get("uri")) if type(workspace) is dict else None
            if cwd is None:
                folders = self._folders() if folders is None else folders
                cwd = folders.get(chat_id)
            created = _time(data.get("createdAt")) or 0
            header = SessionHeader(id=self.prefix + chat_id, created_at=created, cwd=cwd)
            updated = _time(data.get("lastUpdatedAt")) or 0
            revision = (4, len(headers) if type(headers) is list else 0, updated, size if type(size) is int else 0)
            name = data.get("name")
            title = name.strip() if type(name) is str and name.strip() else None
            order = [h.get("bubbleId") for h in headers if type(h) is dict] if type(headers) is list else None
            found.append(Listed(header, title, revision, (chat_id, order, inline if order is None else None)))
        return found, []

    def _load(self, entry: Listed) -> ExternalSession:
        chat_id, order, inline = entry.where
        if order is None:
            bubbles = [(index, bubble) for index, bubble in enumerate(inline)]
            missing = 0
        else:
            prefix = f"bubbleId:{chat_id}:"
            rows = self._database.query(_BUBBLES, (len(prefix) + 1, MAX_VALUE_BYTES, prefix, prefix[:-1] + ";"))
            stored = {key: value for key, value in rows}
            for key in [key for key, value in stored.items() if value is None]:
                # Too long to take at once: read in slices, its long texts cut.
                where = "FROM cursorDiskKV WHERE key = ?"
                stored[key] = self._database.long_json("value", where, (prefix + str(key),))
            bubbles = [(index, _json(stored.get(bubble_id))) for index, bubble_id in enumerate(order)]
            missing = sum(1 for _index, bubble in bubbles if bubble is None)
        builder = SurfaceBuilder()
        first: str | None = None
        when = entry.header.created_at
        problems = missing
        for index, bubble in bubbles:
            if type(bubble) is not dict:
                problems += bubble is not None
                continue
            text, kind = bubble.get("text"), bubble.get("type")
            when = _time(bubble.get("createdAt")) or when
            if type(text) is not str or not text.strip() or bubble.get("capabilityType") is not None:
                continue
            if kind == USER:
                builder.user(index, when, text)
                first = first or prompt_title(text)
            elif kind == ASSISTANT:
                builder.assistant(index, when, text)
        return ExternalSession(entry.header, builder.events, first, problems, len(bubbles) - 1 if bubbles else None)
