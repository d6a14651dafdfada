"""Zed's agent threads (the editor's Agent Panel): its SQLite ``<data>/threads/threads.db``, read-only.

``<data>`` is Zed's data folder: ``$XDG_DATA_HOME/zed``, else ``~/.local/share/zed`` (on macOS
``~/Library/Application Support/Zed``). Its table, from Zed's ``crates/agent/src/db.rs``: ``threads``
(``id``, ``summary`` the title, ``updated_at`` and, in newer files, ``created_at`` as RFC 3339 texts,
``parent_id`` a sub-agent's parent thread, ``folder_paths`` the workspace's folders sorted and joined by
line breaks with ``folder_paths_order`` their order as opened, ``data_type`` ``json`` or ``zstd``,
``data`` the thread). The thread is JSON (zstd-compressed when ``data_type`` says so), version ``0.3.0``:
``messages`` are ``{"User": {"id", "content": [{"Text": …}, {"Mention": {"uri", "content"}},
{"Image": …}]}}``, ``{"Agent": {"content": [{"Text": …}, {"Thinking": …}, {"RedactedThinking": …},
{"ToolUse": …}], "tool_results": …}}`` or ``"Resume"``. Older threads (``0.2.0``, ``0.1.0`` and before
any version) hold ``messages`` of ``{"role": "user" | "assistant" | "system", "segments": [{"type":
"text" | "thinking", …}]}`` (before segments, a ``text``), with ``is_hidden`` and ``context``.

Mapping, as Zed sends its model a thread: a user message's ``Text`` parts become a prompt (a mention is
the link the user typed, its attached content not: files and selections Zed read), an agent message's
``Text`` parts an answer; thinking, tool uses and results, images, ``Resume`` (Zed's "Continue where you
left off"), system and hidden messages are not on the surface. Zed keeps no time a message: each is at
the thread's creation. Sub-agents' threads (``parent_id``) are not listed. The folder is the first of
the workspace's folders as opened; the title ``summary``, else the thread's ``title``, else the first
prompt.

Read as ``sqlite_reads`` says; a thread over ``MAX_THREAD_BYTES`` (compressed, or once decompressed:
a zstd bomb stops there) is unreadable, said so. Zed could not be run here (an editor, no registry
carries it): the format was taken from its source.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import zstandard

from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import ExternalSession, SurfaceBuilder, data_home, millis, prompt_title
from core.sessions.sources.row_source import DatabaseSource, Listed

ZED_PREFIX = "zed:"
MAX_THREAD_BYTES = 64 * 1024 * 1024

_COLUMNS = "SELECT name FROM pragma_table_info('threads')"
_THREAD = "SELECT data_type, CASE WHEN length(data) > ? THEN NULL ELSE data END FROM threads WHERE id = ?"


def zed_root() -> Path:
    """Zed's data folder: ``$XDG_DATA_HOME/zed``, else ``~/.local/share/zed`` (macOS: ``~/Library/
    Application Support/Zed``)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Zed"
    return data_home() / "zed"


def first_folder(paths: object, order: object) -> str | None:
    """The first of a thread's workspace folders as opened (``folder_paths`` sorted, line-separated;
    ``folder_paths_order`` their order as comma-separated indexes), ``None`` when it names none."""
    if type(paths) is not str or not paths:
        return None
    folders = paths.split("\n")
    indexes = order.split(",") if type(order) is str else []
    if len(indexes) == len(folders) and "0" in indexes:
        folder = folders[indexes.index("0")]
    else:
        folder = min(folders)
    return folder if folder.startswith("/") else None


def _texts(parts: object, key: str) -> str:
    """The ``Text`` parts (``{"Text": …}`` in 0.3.0) of a message's content, joined."""
    if type(parts) is not list:
        return ""
    return "\n".join(part[key] for part in parts if type(part) is dict and type(part.get(key)) is str)


def messages_of(thread: dict[str, Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of each message of a thread that is on the surface, in order."""
    found: list[tuple[str, str]] = []
    messages = thread.get("messages")
    for message in messages if type(messages) is list else []:
        if type(message) is not dict:
            continue  # ("Resume", or a shape of no version)
        if "User" in message or "Agent" in message:
            role = "user" if "User" in message else "assistant"
            body = message.get("User" if role == "user" else "Agent")
            text = _texts(body.get("content"), "Text") if type(body) is dict else ""
        elif message.get("role") in ("user", "assistant") and message.get("is_hidden") is not True:
            role = message["role"]
            segments = message.get("segments")
            if type(segments) is list:
                said = (s for s in segments if type(s) is dict and s.get("type") == "text")
                text = "\n".join(s["text"] for s in said if type(s.get("text")) is str)
            else:
                said_text = message.get("text")
                text = said_text if type(said_text) is str else ""
        else:
            continue
        if text.strip():
            found.append((role, text))
    return found


def thread_of(kind: object, data: object) -> dict[str, Any] | None:
    """A stored thread, decompressed (up to ``MAX_THREAD_BYTES``) and parsed; ``None`` when it is not one."""
    raw: Any = data
    try:
        if kind == "zstd" and type(data) is bytes:
            with zstandard.ZstdDecompressor().stream_reader(data) as reader:
                raw = reader.read(MAX_THREAD_BYTES + 1)
            if len(raw) > MAX_THREAD_BYTES:
                return None
        elif kind != "json" or type(data) not in (bytes, str):
            return None
        thread = json.loads(raw)
    except (ValueError, RecursionError, zstandard.ZstdError):
        return None
    return thread if type(thread) is dict else None


class ZedSource(DatabaseSource):
    """Zed's agent threads: its ``threads.db`` (see the module docstring)."""

    prefix = ZED_PREFIX
    name = "Zed"
    database_at = ("threads", "threads.db")

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        path = self._database.path
        if not self._present():
            return [], []
        try:
            columns = {name for (name,) in self._database.query(_COLUMNS)}
            optional = ("parent_id", "folder_paths", "folder_paths_order", "created_at")
            chosen = [column if column in columns else "NULL" for column in optional]
            rows = self._database.query(
                f"SELECT id, summary, updated_at, {', '.join(chosen)}, length(data) FROM threads"
            )
        except OSError as error:
            return [], [StoreProblem(path, str(error))]
        found: list[Listed] = []
        for thread_id, summary, updated, parent, paths, order, created, size in rows:
            if type(thread_id) is not str or not thread_id or parent not in (None, ""):
                continue
            when = millis(created) or millis(updated) or 0
            header = SessionHeader(id=self.prefix + thread_id, created_at=when, cwd=first_folder(paths, order))
            revision = (1, millis(updated) or 0, size if type(size) is int else 0, 0)
            title = summary.strip() if type(summary) is str and summary.strip() else None
            found.append(Listed(header, title, revision, thread_id))
        return found, []

    def _load(self, entry: Listed) -> ExternalSession:
        rows = self._database.query(_THREAD, (MAX_THREAD_BYTES, entry.where))
        thread = thread_of(*rows[0]) if rows else None
        if thread is None:
            raise ValueError("not a thread Zed wrote, or larger than 64 MiB")
        builder = SurfaceBuilder()
        first: str | None = None
        messages = messages_of(thread)
        for number, (role, text) in enumerate(messages):
            if role == "user":
                builder.user(number, entry.header.created_at, text)
                first = first or prompt_title(text)
            else:
                builder.assistant(number, entry.header.created_at, text)
        named = thread.get("title")  # (the row's summary, when it has one, is the title: ``RowSource``)
        title = named.strip() if type(named) is str and named.strip() else first
        return ExternalSession(entry.header, builder.events, title, 0, len(messages) - 1 if messages else None)
