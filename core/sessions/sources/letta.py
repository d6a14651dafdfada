"""Letta Code's conversations kept by its local backend (npm ``@letta-ai/letta-code``,
``--backend local``): ``<storage>/conversations/<base64url id>/messages.jsonl``, read-only.

``<storage>`` is ``$LETTA_LOCAL_BACKEND_DIR``, else ``~/.letta/lc-local-backend``. A conversation's folder
is named by the base64url of ``conversation:<id>`` (or ``default:<agent id>`` for an agent's default
conversation) and holds ``conversation.json`` (``id``, ``agent_id``, ``archived``, ``created_at``, ``summary``),
``manifest.json`` (``message_format`` ``pi-session-entry-jsonl``) and ``messages.jsonl``: pi's session
entries (a ``session`` header with ``cwd``, then ``message`` entries linked by ``parentId``).

Mapping: pi's (``pi.pi_session``): the branch that ends in the last entry, prompts and text answers,
a compaction's summary as a checkpoint. The ``<system-reminder>`` parts Letta Code puts before what was
typed are not prompts; tool calls and results and thinking are not on the surface; an archived
conversation is not listed. The id is the folder's decoded name (``conversation-local-conv-1``); the
title the conversation's ``summary``, else the first prompt. Letta's cloud conversations are not on
this machine and are not read.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    NotListed,
    json_lines,
    millis,
    read_json_object,
    subfolders,
)
from core.sessions.sources.pi import header_of, pi_session

LETTA_PREFIX = "letta:"
META_BYTES = 1024 * 1024
_REMINDER = "<system-reminder>"


def letta_root() -> Path:
    """``$LETTA_LOCAL_BACKEND_DIR``, else ``~/.letta/lc-local-backend``."""
    configured = os.environ.get("LETTA_LOCAL_BACKEND_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".letta" / "lc-local-backend"


def conversation_name(folder: str) -> str | None:
    """A conversation folder's decoded name, made an id (``conversation:local-conv-1`` as
    ``conversation-local-conv-1``); ``None`` for a name that is not base64url of plain text."""
    try:
        decoded = base64.urlsafe_b64decode(folder + "=" * (-len(folder) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    kind, _, rest = decoded.partition(":")
    if kind not in ("conversation", "default") or not rest or not rest.isprintable() or "/" in rest:
        return None
    return f"{kind}-{rest}"


def _typed(record: Any) -> Any:
    """A message entry without the reminder parts Letta Code adds to the user's turn."""
    message = record.get("message") if type(record) is dict and record.get("type") == "message" else None
    if type(message) is not dict or message.get("role") != "user" or type(message.get("content")) is not list:
        return record
    kept = [
        part
        for part in message["content"]
        if not (type(part) is dict and type(part.get("text")) is str and part["text"].lstrip().startswith(_REMINDER))
    ]
    return {**record, "message": {**message, "content": kept}}


class LettaSource(FileSource):
    """Letta Code's local conversations (see the module docstring)."""

    prefix = LETTA_PREFIX
    name = "Letta Code"
    follow_links = False

    def _files(self) -> Iterator[str]:
        for folder in subfolders(self.root / "conversations"):
            path = os.path.join(folder.path, "messages.jsonl")
            if conversation_name(folder.name) and os.path.isfile(path) and not os.path.islink(path):
                yield path

    def _header(self, path: Path) -> SessionHeader | None:
        about = read_json_object(path.parent / "conversation.json", META_BYTES)
        name = conversation_name(path.parent.name)
        if about.get("archived") is True:
            raise NotListed
        if name is None:
            return None
        for _number, record in json_lines(path, HEAD_BYTES, follow=False):
            found = header_of(record)
            if found is None:
                return None
            created, cwd = found
            created = created or millis(about.get("created_at")) or path.stat().st_mtime_ns // 1_000_000
            return SessionHeader(id=self.prefix + name, created_at=created, cwd=cwd)
        return None

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        lines = ((number, _typed(record)) for number, record in json_lines(path, follow=False))
        session = pi_session(lines, header)
        summary = read_json_object(path.parent / "conversation.json", META_BYTES).get("summary")
        if type(summary) is str and summary.strip():
            session.title = summary.strip()
        return session
