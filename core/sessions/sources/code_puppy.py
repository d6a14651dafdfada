"""Code Puppy's sessions (PyPI ``code-puppy``): ``<home>/autosaves/<name>.json`` beside
``<name>_meta.json``, and the sessions saved by name in ``<home>/contexts/``; read-only.

``<home>`` is ``$XDG_CACHE_HOME/code_puppy`` when that variable is set, else ``~/.code_puppy``. A
session file is one JSON document: ``{"format": 2, "encoding": "pydantic-ai-messages", "messages":
[...]}``, the agent's message history as pydantic-ai serializes it: ``request`` messages (``parts``
of ``part_kind`` ``user-prompt``, ``system-prompt``, ``tool-return``, ``retry-prompt``) and ``response``
messages (``text``, ``tool-call``, ``thinking``), each part with its ``timestamp``. The meta file
holds ``timestamp`` (local time, no offset), ``scope_key`` (the folder it ran in) and
``session_name``. Resuming (``-r``) appends to the same file. Older sessions were pickles
(``.pkl``): never loaded.

Mapping: a user prompt becomes a prompt, a response's text parts an answer, a compaction's summary
(a system prompt part starting ``Summary of previous conversation:``, pydantic-ai's summarizing
compaction) a checkpoint. System prompts, tool calls and returns, retries, thinking, and the notes
Code Puppy adds as the user (``[system note] ...``) are not on the surface. The title is the first
prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    files_in,
    local_millis,
    millis,
    prompt_title,
    read_json,
    read_json_object,
)

CODE_PUPPY_PREFIX = "codepuppy:"
SESSION_BYTES = 64 * 1024 * 1024
META_BYTES = 1024 * 1024
SUMMARY = "Summary of previous conversation:"
_NOTE = "[system note]"
_FOLDERS = ("autosaves", "contexts")


def code_puppy_root() -> Path:
    """``$XDG_CACHE_HOME/code_puppy`` when set, else ``~/.code_puppy`` (where its autosaves are)."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    return Path(cache) / "code_puppy" if cache else Path.home() / ".code_puppy"


def _prompt(content: Any) -> str:
    """A user prompt part's text: a string, or the strings of a list (images and files left out)."""
    if type(content) is str:
        return content
    if type(content) is list:
        return "\n".join(item for item in content if type(item) is str)
    return ""


class CodePuppySource(FileSource):
    """Code Puppy's sessions (see the module docstring)."""

    prefix = CODE_PUPPY_PREFIX
    name = "Code Puppy"
    follow_links = False

    def _files(self) -> Iterator[str]:
        for name in _FOLDERS:
            yield from files_in(self.root / name, _session_file)

    def _header(self, path: Path) -> SessionHeader | None:
        meta = read_json_object(_meta(path), META_BYTES)
        created = local_millis(meta.get("timestamp"))
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        folder = meta.get("scope_key")
        cwd = folder if type(folder) is str and folder.startswith("/") else None
        return SessionHeader(id=self.prefix + path.name[: -len(".json")], created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        document = read_json(path, SESSION_BYTES)
        messages = document.get("messages") if type(document) is dict else document
        if type(messages) is not list:
            raise ValueError("no messages")
        builder = SurfaceBuilder()
        problems = 0
        when = header.created_at
        first: str | None = None
        for number, message in enumerate(messages):
            parts = message.get("parts") if type(message) is dict else None
            if type(parts) is not list:
                problems += 1
                continue
            when = millis(message.get("timestamp")) or when
            answer: list[str] = []
            for part in parts:
                if type(part) is not dict:
                    problems += 1
                    continue
                kind, content = part.get("part_kind"), part.get("content")
                when = millis(part.get("timestamp")) or when
                if kind == "user-prompt":
                    text = _prompt(content)
                    if text.strip() and not text.lstrip().startswith(_NOTE):
                        builder.user(number, when, text)
                        first = first or prompt_title(text)
                elif kind == "system-prompt" and type(content) is str and content.startswith(SUMMARY):
                    builder.checkpoint(number, when, content)
                elif kind == "text" and type(content) is str and content.strip():
                    answer.append(content)
            if answer:
                builder.assistant(number, when, "\n".join(answer))
        return ExternalSession(header, builder.events, first, problems, len(messages) - 1 if messages else None)


def _session_file(name: str) -> bool:
    return name.endswith(".json") and not name.endswith("_meta.json")


def _meta(session: Path) -> Path:
    return session.with_name(session.name[: -len(".json")] + "_meta.json")
