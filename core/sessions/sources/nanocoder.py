"""nanocoder's sessions (npm ``@nanocollective/nanocoder``): ``<data>/sessions/<uuid>.json`` beside
``sessions.json``, read-only.

``<data>`` is ``$NANOCODER_DATA_DIR``, else ``$XDG_DATA_HOME/nanocoder``, else
``~/.local/share/nanocoder`` (its ``sessions.directory`` setting can name another folder: give that
one). Its terminal interface autosaves each conversation as one JSON document, written whole and
renamed into place: ``id``, ``title``, ``createdAt`` (ISO 8601), ``workingDirectory``, and
``messages`` in the model's chat form (``user``, ``assistant`` with ``tool_calls``, ``tool``, and
``system``). ``sessions.json`` lists the same fields without the messages (the listing reads it, and
a session's own file only when the index lacks it).

Mapping: a user message's text becomes a prompt, an assistant's an answer. Tool calls and results
and system messages are not on the surface. Messages carry no time: each takes the session's. The
title is the session's own, else the first prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.files import Revision, file_revision
from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    UUID_AT_END,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    data_home,
    millis,
    prompt_title,
    read_json,
    text_of,
)

NANOCODER_PREFIX = "nanocoder:"
SESSION_BYTES = 64 * 1024 * 1024
INDEX_BYTES = 16 * 1024 * 1024


def nanocoder_root() -> Path:
    """``$NANOCODER_DATA_DIR``, else ``$XDG_DATA_HOME/nanocoder``, else ``~/.local/share/nanocoder``."""
    configured = os.environ.get("NANOCODER_DATA_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    return data_home() / "nanocoder"


class NanocoderSource(FileSource):
    """nanocoder's sessions (see the module docstring)."""

    prefix = NANOCODER_PREFIX
    name = "nanocoder"
    follow_links = False

    def _sessions(self) -> Path:
        """Its ``sessions`` folder, or the folder given when that is it."""
        inside = self.root / "sessions"
        return self.root if not inside.is_dir() and (self.root / "sessions.json").is_file() else inside

    def _files(self) -> Iterator[str]:
        folder = self._sessions()
        if os.path.islink(folder):
            return
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            if name.endswith(".json") and UUID_AT_END.search(name[: -len(".json")]):
                yield str(folder / name)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._index: tuple[Revision | None, dict[str, dict[str, Any]]] = (None, {})

    def index(self) -> dict[str, dict[str, Any]]:
        """``sessions.json``'s entries by id (read again only when it changed)."""
        path = self._sessions() / "sessions.json"
        try:
            revision: Revision | None = file_revision(path)
        except OSError:
            revision = None
        if revision != self._index[0]:
            try:
                listed = read_json(path, INDEX_BYTES)
            except (OSError, ValueError, RecursionError):
                listed = []
            entries = listed if type(listed) is list else []
            found = {e["id"]: e for e in entries if type(e) is dict and type(e.get("id")) is str}
            self._index = (revision, found)
        return self._index[1]

    def _header(self, path: Path) -> SessionHeader | None:
        # The index says what the header needs; a session it does not list is read whole.
        document: Any = self.index().get(path.name[: -len(".json")]) or read_json(path, SESSION_BYTES)
        if type(document) is not dict:
            return None
        created = millis(document.get("createdAt"))
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        folder = document.get("workingDirectory")
        cwd = folder if type(folder) is str and folder.startswith("/") else None
        return SessionHeader(id=self.prefix + path.name[: -len(".json")], created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        document = read_json(path, SESSION_BYTES)
        messages = document.get("messages") if type(document) is dict else None
        if type(messages) is not list:
            raise ValueError("no messages")
        builder = SurfaceBuilder()
        problems = 0
        first: str | None = None
        for number, message in enumerate(messages):
            if type(message) is not dict:
                problems += 1
                continue
            role, text = message.get("role"), text_of(message.get("content"))
            if not text.strip():
                continue
            if role == "user":
                builder.user(number, header.created_at, text)
                first = first or prompt_title(text)
            elif role == "assistant":
                builder.assistant(number, header.created_at, text)
        title = document.get("title")
        if type(title) is not str or not title.strip():
            title = first
        return ExternalSession(header, builder.events, title, problems, len(messages) - 1 if messages else None)
