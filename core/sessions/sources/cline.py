"""Cline CLI's sessions (``cline``, its ``@cline/cli-*`` binary): ``<data>/sessions/<id>/<id>.messages.json``
beside ``<id>.json``, read-only.

A session is a folder of two JSON documents. ``<id>.json`` says what ran: ``session_id``, ``cwd``,
``started_at`` (ISO 8601), ``prompt``, ``metadata.title``; a sub-agent's says ``is_subagent`` or its
``parent_session_id``. ``<id>.messages.json`` holds ``messages``, each with a ``role`` (``user`` or
``assistant``), ``content`` (a string or blocks: ``text``, ``thinking``, ``tool_use``,
``tool_result``), ``ts`` (epoch milliseconds) and, for a compaction's summary, ``metadata.kind``
``compaction_summary`` with its ``summary``. What the user typed is wrapped as ``<user_input
mode="act">…</user_input>``.

Mapping: a user message's typed text (the wrapper's inside; other text Cline adds in tags is left out)
becomes a prompt, an assistant's text (not its thinking) an answer, a compaction's summary a compact
checkpoint; tool calls and results, and sub-agents' sessions, are not on the surface. The title is
``metadata.title``, else the first prompt.

Where Cline keeps them: ``$CLINE_SESSION_DATA_DIR``, else ``$CLINE_DATA_DIR/sessions``, else
``$CLINE_DIR/data/sessions``, else ``~/.cline/data/sessions``. Any of those folders (or the one
holding ``data``) can be given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    epoch_millis,
    millis,
    plain_folder,
    prompt_title,
    read_json,
    read_json_object,
    subfolders,
    text_of,
    texts_of,
)

CLINE_PREFIX = "cline:"
SESSION_BYTES = 64 * 1024 * 1024
"""The largest messages file read (a longer one is that session's problem, never read whole)."""
META_BYTES = 1024 * 1024
"""The largest ``<id>.json`` read."""
MESSAGES_SUFFIX = ".messages.json"
_TYPED = re.compile(r"\A\s*<user_input(?:\s[^>]*)?>(.*)</user_input>\s*\Z", re.DOTALL)


def cline_root() -> Path:
    """Where Cline keeps its sessions, as it finds them (see the module docstring)."""
    sessions = os.environ.get("CLINE_SESSION_DATA_DIR", "").strip()
    if sessions:
        return Path(sessions).expanduser()
    data = os.environ.get("CLINE_DATA_DIR", "").strip()
    if data:
        return Path(data).expanduser() / "sessions"
    home = os.environ.get("CLINE_DIR", "").strip()
    return (Path(home).expanduser() if home else Path.home() / ".cline") / "data" / "sessions"


def _typed(content: Any) -> str:
    """What the user typed: the inside of each ``<user_input>`` block, or a plain text block (text
    Cline adds in other tags is left out)."""
    typed = []
    for text in texts_of(content):
        found = _TYPED.match(text)
        if found is not None:
            typed.append(found.group(1))
        elif not text.lstrip().startswith("<"):
            typed.append(text)
    return "\n".join(piece for piece in typed if piece)


class ClineSource(FileSource):
    """Cline CLI's sessions: ``<data>/sessions/<id>/<id>.messages.json`` (read-only)."""

    prefix = CLINE_PREFIX
    name = "Cline CLI"
    follow_links = False

    def _sessions(self) -> Path:
        for folder in (self.root / "data" / "sessions", self.root / "sessions"):
            if plain_folder(folder) and not folder.parent.is_symlink():
                return folder
        return self.root

    def _files(self) -> Iterator[str]:
        for folder in subfolders(self._sessions()):
            path = os.path.join(folder.path, folder.name + MESSAGES_SUFFIX)
            if os.path.lexists(path):
                yield path

    @staticmethod
    def _meta(path: Path) -> dict[str, Any]:
        """The session's ``<id>.json`` (empty when missing or unreadable)."""
        return read_json_object(path.with_name(path.name.removesuffix(MESSAGES_SUFFIX) + ".json"), META_BYTES)

    def _header(self, path: Path) -> SessionHeader | None:
        meta = self._meta(path)
        if meta.get("is_subagent") is True or type(meta.get("parent_session_id")) is str:
            return None  # a sub-agent's: part of the session that spawned it
        session_id = path.name.removesuffix(MESSAGES_SUFFIX)
        created = millis(meta.get("started_at"))
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        cwd = meta.get("cwd")
        return SessionHeader(
            id=self.prefix + session_id, created_at=created, cwd=cwd if type(cwd) is str and cwd else None
        )

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        try:
            document = read_json(path, SESSION_BYTES)
        except (ValueError, RecursionError):
            return ExternalSession(header, [], None, 1, None)
        messages = document.get("messages") if type(document) is dict else None
        items = messages if type(messages) is list else []
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        problems = 0
        for number, message in enumerate(items):
            if type(message) is not dict:
                problems += 1
                continue
            stamp = message.get("ts")
            when = epoch_millis(stamp) or header.created_at
            marks = message.get("metadata")
            if type(marks) is dict and marks.get("kind") == "compaction_summary":
                summary = marks.get("summary")
                text = summary if type(summary) is str and summary.strip() else text_of(message.get("content"))
                if text.strip():
                    builder.checkpoint(number, when, text)
                continue
            if message.get("role") == "user":
                text = _typed(message.get("content"))
                if text.strip():
                    builder.user(number, when, text)
                    first_prompt = first_prompt or prompt_title(text)
            elif message.get("role") == "assistant":
                text = text_of(message.get("content"))
                if text.strip():
                    builder.assistant(number, when, text)
        meta = self._meta(path).get("metadata")
        title = meta.get("title") if type(meta) is dict else None
        if type(title) is not str or not title.strip():
            title = first_prompt
        return ExternalSession(header, builder.events, title, problems, len(items) - 1 if items else None)
