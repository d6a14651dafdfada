"""Mistral Vibe's sessions (``mistral-vibe``): ``<VIBE_HOME>/logs/session/unified/<session id>/``,
read-only.

A session is a folder of Vibe's "unified session store" (``mistral.vibe.unified-session-store/v1``).
``meta.json`` says what ran: ``session_id``, ``parent_session_id`` (a sub-agent's session names the
one that spawned it), ``start_time`` (ISO 8601), ``environment.working_directory``, ``title``.
``CURRENT`` names the newest published ``generation``; ``generations/<generation>/manifest.json``
names its ``checkpoint``: the model's context as of that generation, stored as the concatenation of
``chunks/<sha256>.json`` (each a JSON list; older stores keep the list inside the checkpoint document,
at ``context.messages``). Each item of that list is ``{"message": {"role", "content": [blocks]},
"source", "turn_index"}``: ``source`` is ``history`` for what was said, ``injection`` for what Vibe
adds to the context itself. A compaction replaces the context with its block: an injected preface,
the latest prompts kept verbatim, an injected ``<compaction_summary>``; then the history goes on. What a turn
still running has journalled since the newest generation is not read: the generation is the session
as Vibe last published it.

Mapping: a user message's text blocks become a prompt, an assistant's text blocks an answer, and a
compaction's block, as the model reads it, a compact checkpoint; tool calls and
results, other injected context (a hook's) and sub-agents' sessions are not on the surface. Messages
carry no time: each takes the session's. The title is ``meta.json``'s, else the first prompt said
after the newest compaction.

Where Vibe keeps them: ``$VIBE_HOME`` (else ``~/.vibe``), ``logs/session/unified`` inside it. That
folder, or the ``session`` folder holding it (Vibe's ``session_logging.save_dir``), can be given too.
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
    millis,
    plain_folder,
    prompt_title,
    read_json,
    read_json_object,
    subfolders,
    text_of,
)

VIBE_PREFIX = "vibe:"
STORE_FORMAT = "mistral.vibe.unified-session-store/v1"
SESSION_BYTES = 64 * 1024 * 1024
"""The most of a session's context read, its chunks together (Vibe's own cap on a document)."""
META_BYTES = 1024 * 1024
"""The largest ``meta.json``, ``CURRENT``, manifest or (older) checkpoint document's envelope read."""
COMPACTION_MARK = "<compaction_summary>"
"""What the injected messages replacing a compacted context hold."""
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_GENERATION = re.compile(r"[0-9]{16}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_FILE_NAME = re.compile(r"[^/\\]+")


def vibe_root() -> Path:
    """``$VIBE_HOME``, else ``~/.vibe``."""
    configured = os.environ.get("VIBE_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".vibe"


class VibeSource(FileSource):
    """Mistral Vibe's sessions: ``<VIBE_HOME>/logs/session/unified/<id>/`` (read-only)."""

    prefix = VIBE_PREFIX
    name = "Mistral Vibe"
    follow_links = False

    def _sessions(self) -> Path:
        for folder in (self.root / "logs" / "session" / "unified", self.root / "session" / "unified"):
            if all(plain_folder(part) for part in (folder, folder.parent, folder.parent.parent)):
                return folder
        unified = self.root / "unified"
        return unified if plain_folder(unified) else self.root

    def _files(self) -> Iterator[str]:
        """Each session folder's ``CURRENT`` (replaced whenever Vibe publishes a generation: the
        session's revision)."""
        for folder in subfolders(self._sessions()):
            if _SESSION_ID.fullmatch(folder.name):
                path = os.path.join(folder.path, "CURRENT")
                if os.path.lexists(path):
                    yield path

    @staticmethod
    def _meta(folder: Path) -> dict[str, Any]:
        """The session's ``meta.json`` (empty when missing or unreadable)."""
        return read_json_object(folder / "meta.json", META_BYTES)

    def _header(self, path: Path) -> SessionHeader | None:
        meta = self._meta(path.parent)
        if type(meta.get("parent_session_id")) is str:
            return None  # a sub-agent's: part of the session that spawned it
        created = millis(meta.get("start_time"))
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        environment = meta.get("environment")
        cwd = environment.get("working_directory") if type(environment) is dict else None
        if type(cwd) is not str or not cwd:
            cwd = meta.get("origin_directory")
        return SessionHeader(
            id=self.prefix + path.parent.name, created_at=created, cwd=cwd if type(cwd) is str and cwd else None
        )

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        try:
            items = _context(path.parent)
        except (ValueError, RecursionError):
            return ExternalSession(header, [], None, 1, None)
        messages = [item.get("message") if type(item) is dict else None for item in items]
        problems = sum(1 for message in messages if type(message) is not dict)
        builder = SurfaceBuilder()
        # A compaction's context begins with its block: up to the last injected message holding the
        # summary (a later compaction summarized the earlier block too).
        compacted = -1
        for number, (item, message) in enumerate(zip(items, messages, strict=True)):
            if type(message) is dict and item.get("source") == "injection":
                if COMPACTION_MARK in text_of(message.get("content")):
                    compacted = number
        if compacted >= 0:
            block = [text_of(message.get("content")) for message in messages[: compacted + 1] if type(message) is dict]
            builder.checkpoint(0, header.created_at, "\n\n".join(text for text in block if text))
        first_prompt: str | None = None
        for number in range(compacted + 1, len(items)):
            message = messages[number]
            if type(message) is not dict or items[number].get("source") == "injection":
                continue  # (context a hook or Vibe itself added)
            role, text = message.get("role"), text_of(message.get("content"))
            if not text.strip():
                continue
            if role == "user":
                builder.user(number, header.created_at, text)
                first_prompt = first_prompt or prompt_title(text)
            elif role == "assistant":
                builder.assistant(number, header.created_at, text)
        title = self._meta(path.parent).get("title")
        if type(title) is not str or not title.strip():
            title = first_prompt
        return ExternalSession(header, builder.events, title, problems, len(items) - 1 if items else None)


def _context(folder: Path) -> list[Any]:
    """The model's context as the newest generation published it (see the module docstring).

    Raises:
        OSError: a file cannot be read, is a link, or is larger than it may be.
        ValueError: a document is not JSON or not of the store's shape.
    """
    pointer = read_json(folder / "CURRENT", META_BYTES)
    if type(pointer) is not dict or pointer.get("store_format") != STORE_FORMAT:
        raise ValueError("not a unified session store")
    generation = pointer.get("generation")
    if type(generation) is not str or not _GENERATION.fullmatch(generation):
        raise ValueError("no generation")
    generations = folder / "generations"
    published = generations / generation
    if not (plain_folder(generations) and plain_folder(published)):
        raise ValueError("no such generation")
    manifest = read_json(published / "manifest.json", META_BYTES)
    checkpoint = manifest.get("checkpoint") if type(manifest) is dict else None
    if type(checkpoint) is not dict:
        raise ValueError("no checkpoint")
    digests = checkpoint.get("chunks")
    if type(digests) is list:
        return _chunked(folder / "chunks", digests)
    name = checkpoint.get("path")
    if type(name) is not str or not _FILE_NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError("no checkpoint document")
    document = read_json(published / name, SESSION_BYTES)
    context = document.get("context") if type(document) is dict else None
    messages = context.get("messages") if type(context) is dict else None
    if type(messages) is not list:
        raise ValueError("no context")
    return messages


def _chunked(chunks: Path, digests: list[Any]) -> list[Any]:
    """The concatenation of the named chunks, at most ``SESSION_BYTES`` of them read."""
    if not plain_folder(chunks):
        raise ValueError("no chunks")
    items: list[Any] = []
    left = SESSION_BYTES
    for digest in digests:
        if type(digest) is not str or not _DIGEST.fullmatch(digest):
            raise ValueError("not a chunk's name")
        path = chunks / f"{digest}.json"
        left -= path.lstat().st_size
        if left < 0:
            raise OSError(f"larger than {SESSION_BYTES // (1024 * 1024)} MiB")
        chunk = read_json(path, SESSION_BYTES)
        if type(chunk) is not list:
            raise ValueError("a chunk is not a list")
        items += chunk
    return items
