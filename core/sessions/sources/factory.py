"""Factory Droid's sessions (Factory's ``droid``): ``~/.factory/sessions/<folder slug>/<uuid>.jsonl``
beside ``<uuid>.settings.json``, read-only.

As the published descriptions of Droid's files give it: the first line is a ``session_start`` record
(``id``, ``title``, ``owner``, ``cwd``), then one record a line; a ``message`` record (``id``,
``timestamp`` ISO 8601, ``message: {"role": "user" | "assistant", "content": [blocks]}``) holds
Anthropic-style blocks (``text``, ``tool_use``, ``tool_result``, ``thinking``); other kinds
(``todo_state``...) are Droid's own state. A sub-agent's session (its title starts ``# Task Tool
Invocation``) lives beside the others.

Mapping: a user message's ``text`` blocks become a prompt (``<system-reminder>`` blocks Droid adds are
not), an assistant's an answer, each at its record's time. Tool calls and results, thinking and
sub-agents' sessions are not on the surface. The folder is the ``session_start`` record's; the title
its ``title``, else the first prompt. Droid could not be installed here (its binary is not on the
registry) and none of its own files is public: the format is checked against no file of Droid's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    NotListed,
    SurfaceBuilder,
    json_lines,
    millis,
    prompt_title,
    uuid_files,
)

FACTORY_PREFIX = "droid:"
SUB_AGENT = "# Task Tool Invocation"
_REMINDER = "<system-reminder>"


def factory_root() -> Path:
    """``~/.factory``."""
    return Path.home() / ".factory"


def _start(path: Path) -> dict[str, Any] | None:
    """A session file's ``session_start`` record (its first line), or ``None``."""
    for _number, record in json_lines(path, HEAD_BYTES, follow=False):
        return record if type(record) is dict and record.get("type") == "session_start" else None
    return None


def _texts(content: Any) -> list[str]:
    if type(content) is str:
        return [content] if content.strip() else []
    if type(content) is not list:
        return []
    return [
        block["text"]
        for block in content
        if type(block) is dict
        and block.get("type") == "text"
        and type(block.get("text")) is str
        and block["text"].strip()
        and not block["text"].lstrip().startswith(_REMINDER)
    ]


class FactorySource(FileSource):
    """Factory Droid's sessions (see the module docstring)."""

    prefix = FACTORY_PREFIX
    name = "Factory Droid"
    follow_links = False

    def _files(self) -> Iterator[str]:
        return uuid_files(self.root / "sessions", ".jsonl")

    def _header(self, path: Path) -> SessionHeader | None:
        start = _start(path)
        if start is None:
            return None
        title = start.get("title")
        if type(title) is str and title.lstrip().startswith(SUB_AGENT):
            raise NotListed
        cwd = start.get("cwd")
        created = path.stat().st_mtime_ns // 1_000_000
        for _number, record in json_lines(path, HEAD_BYTES, follow=False):
            stamp = millis(record.get("timestamp")) if type(record) is dict else None
            if stamp is not None:
                created = stamp
                break
        return SessionHeader(
            id=self.prefix + path.name[: -len(".jsonl")],
            created_at=created,
            cwd=cwd if type(cwd) is str and cwd.startswith("/") else None,
        )

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        builder = SurfaceBuilder()
        problems = 0
        last_seq: int | None = None
        when = header.created_at
        first: str | None = None
        title: Any = None
        for number, record in json_lines(path, follow=False):
            last_seq = number
            if type(record) is not dict:
                problems += 1
                continue
            if record.get("type") == "session_start":
                title = record.get("title")
                continue
            message = record.get("message")
            if record.get("type") != "message" or type(message) is not dict:
                continue
            when = millis(record.get("timestamp")) or when
            text = "\n".join(_texts(message.get("content")))
            if not text.strip():
                continue
            if message.get("role") == "user":
                builder.user(number, when, text)
                first = first or prompt_title(text)
            elif message.get("role") == "assistant":
                builder.assistant(number, when, text)
        if type(title) is not str or not title.strip():
            title = first
        return ExternalSession(header, builder.events, title, problems, last_seq)
