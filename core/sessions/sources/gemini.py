"""Gemini CLI's sessions: ``<root>/tmp/<project>/chats/session-<time>-<id8>.jsonl`` (and the older
whole-file ``session-*.json``), read-only.

A JSONL session is read as Gemini CLI itself loads it (``loadConversationRecord``): a metadata line
(``sessionId``, ``projectHash``, ``startTime``; written again on every resume), then message records
(``id``, ``type``, ``content``) in order, where a record whose ``id`` was seen replaces the earlier
one in its place (a reply is written again when its tool call completes), ``{"$set": {...}}`` lines
that update the metadata (``messages`` replaces the whole list) and ``{"$rewindTo": id}`` lines that
drop that message and everything after it. An older session is one JSON object with ``messages``.

Mapping: a ``user`` record's text parts become a prompt, unless Gemini CLI itself would not resume
it (injected ``<session_context>`` and ``<hook_context>`` blocks, slash and ``?`` commands); a
``gemini`` record's text becomes an answer. Tool calls and their results (a ``functionResponse``
written back as a user record), thoughts, and ``info``/``error``/``warning`` records are left out.
The title is the session's ``summary`` when Gemini CLI wrote one, else the first prompt.

The project folder is named after the working folder (``proj``, as ``projects.json`` maps it) or,
in older versions, by the SHA-256 of its path; the folder is read from ``.project_root`` beside
``chats``, else from ``projects.json``, else by hashing the paths ``projects.json`` knows.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.files import open_regular
from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    chats_files,
    json_lines,
    millis,
    prompt_title,
    read_json,
)

GEMINI_PREFIX = "gemini:"
LEGACY_BYTES = 64 * 1024 * 1024
"""The largest whole-file (``.json``) session read; a larger one is listed as a problem."""
PROJECT_ROOT_FILE = ".project_root"


def gemini_root() -> Path:
    """``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini`` (as Gemini CLI finds its own folder)."""
    home = os.environ.get("GEMINI_CLI_HOME")
    return Path(home) / ".gemini" if home else Path.home() / ".gemini"


def parts_text(content: Any) -> str:
    """The text of a Gemini ``content``: a string, or the ``text`` of its parts joined (as Gemini
    CLI's ``partListUnionToString`` joins them; a function call or response has none)."""
    if type(content) is str:
        return content
    if type(content) is dict:
        content = [content]
    if type(content) is not list:
        return ""
    return "".join(part["text"] for part in content if type(part) is dict and type(part.get("text")) is str)


def _ignored_prompt(text: str) -> bool:
    """What Gemini CLI does not resume as a prompt: nothing, commands, injected context blocks."""
    stripped = text.strip()
    return not stripped or stripped.startswith(("/", "?", "<session_context>", "<hook_context>"))


def fold_records(lines: Iterator[tuple[int, Any]]) -> tuple[dict[str, Any], dict[str, tuple[int, dict[str, Any]]], int]:
    """Gemini CLI's own reading of a JSONL session: its metadata, its messages by id in order (each
    with the line that last wrote it), and how many lines were not JSON objects."""
    metadata: dict[str, Any] = {}
    messages: dict[str, tuple[int, dict[str, Any]]] = {}
    problems = 0
    for number, record in lines:
        if type(record) is not dict:
            problems += 1
            continue
        rewind = record.get("$rewindTo")
        if type(rewind) is str:
            if rewind in messages:
                ids = list(messages)
                for dropped in ids[ids.index(rewind) :]:
                    del messages[dropped]
            else:
                messages.clear()
        elif type(record.get("id")) is str:
            messages[record["id"]] = (number, record)
        elif type(record.get("$set")) is dict:
            update = record["$set"]
            if type(update.get("messages")) is list:
                messages.clear()
                for message in update["messages"]:
                    if type(message) is dict and type(message.get("id")) is str:
                        messages[message["id"]] = (number, message)
            metadata.update({key: value for key, value in update.items() if key != "messages"})
        elif type(record.get("sessionId")) is str and type(record.get("projectHash")) is str:
            metadata.update({key: value for key, value in record.items() if key != "messages"})
            listed = record.get("messages")
            for message in listed if isinstance(listed, list) else ():
                if type(message) is dict and type(message.get("id")) is str:
                    messages[message["id"]] = (number, message)
    return metadata, messages, problems


class GeminiCliSource(FileSource):
    """Gemini CLI's sessions: ``<root>/tmp/<project>/chats/session-*.jsonl`` (read-only)."""

    prefix = GEMINI_PREFIX
    name = "Gemini CLI"
    follow_links = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._folders: dict[str, str | None] = {}

    def _files(self) -> Iterator[str]:
        self._folders = {}
        # Sub-agents' sessions live in a folder of their parent's: part of it, never listed.
        return chats_files(
            self.root / "tmp", lambda name: name.startswith("session-") and name.endswith((".jsonl", ".json"))
        )

    def _cwd(self, project: Path) -> str | None:
        """The working folder of a project folder (``.project_root``, else ``projects.json``)."""
        key = str(project)
        if key in self._folders:
            return self._folders[key]
        cwd: str | None = None
        try:
            with os.fdopen(open_regular(project / PROJECT_ROOT_FILE, follow=False), "rb") as handle:
                text = handle.read(64 * 1024).decode("utf-8", "replace").strip()
            cwd = text or None
        except OSError:
            pass
        if cwd is None:
            cwd = self._known_projects().get(project.name)
        self._folders[key] = cwd
        return cwd

    def _known_projects(self) -> dict[str, str]:
        """Project folder name -> working folder, from ``projects.json`` (by name, and by the hash
        older versions named folders with)."""
        try:
            with os.fdopen(open_regular(self.root / "projects.json", follow=False), "rb") as handle:
                data = json.loads(handle.read(16 * 1024 * 1024))
        except (OSError, ValueError, RecursionError):
            return {}
        projects = data.get("projects") if isinstance(data, dict) else None
        known: dict[str, str] = {}
        for path, name in (projects or {}).items() if isinstance(projects, dict) else ():
            if isinstance(path, str):
                if isinstance(name, str):
                    known[name] = path
                known[hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()] = path
        return known

    def _load(self, path: Path, limit: int | None) -> tuple[dict[str, Any], dict[str, tuple[int, dict[str, Any]]], int]:
        if path.suffix == ".json":
            try:
                record = read_json(path, LEGACY_BYTES)
            except (ValueError, RecursionError):
                return {}, {}, 1
            return fold_records(iter([(0, record)]))
        return fold_records(json_lines(path, limit, follow=False))

    def _header(self, path: Path) -> SessionHeader | None:
        metadata, _messages, _problems = self._load(path, HEAD_BYTES)
        session_id = metadata.get("sessionId")
        if type(session_id) is not str or not session_id or metadata.get("kind") == "subagent":
            return None
        created = millis(metadata.get("startTime"))
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + session_id, created_at=created, cwd=self._cwd(path.parent.parent))

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        metadata, messages, problems = self._load(path, None)
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        # A message's place is its place in the list (a record written again keeps the first one's).
        for number, (_line, message) in enumerate(messages.values()):
            kind = message.get("type")
            when = millis(message.get("timestamp")) or header.created_at
            text = parts_text(message.get("content"))
            if kind == "user":
                if _ignored_prompt(text):
                    continue
                builder.user(number, when, text)
                first_prompt = first_prompt or prompt_title(text)
            elif kind == "gemini" and text.strip():
                builder.assistant(number, when, text)
        summary = metadata.get("summary")
        title = summary.strip() if isinstance(summary, str) and summary.strip() else first_prompt
        return ExternalSession(header, builder.events, title, problems, len(messages) - 1 if messages else None)
