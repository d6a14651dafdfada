"""CodeBuddy Code's sessions (Tencent's ``codebuddy`` CLI, in npm ``@tencent-ai/agent-sdk``):
``<home>/projects/<folder slug>/<uuid>.jsonl``, read-only.

``<home>`` is ``$CODEBUDDY_CONFIG_DIR``, else ``~/.codebuddy``. A session file holds one item a line,
in the shape of OpenAI's Agents SDK: ``message`` items (``role`` ``user`` or ``assistant``, ``content``
parts ``input_text`` / ``output_text``; ``timestamp`` epoch milliseconds, ``cwd``, ``sessionId``;
``providerData.agent`` says which agent wrote it, ``cli`` for the main one), ``function_call`` and
``function_call_result`` items, ``file-history-snapshot`` items, and its titles (``custom-title`` with
``customTitle``, ``ai-title`` with ``aiTitle``, ``summary``, ``topic``). ``/compact`` writes its
prompt and the model's summary as a ``message`` pair whose ``providerData.agent`` is ``compact``.
Items' ``id``s are not unique (an answer takes the model's response id), so the file is read in order.

Mapping: the user's text parts become a prompt, the assistant's an answer; a compaction's summary a
checkpoint (its prompt is not on the surface). Tool calls and results, reasoning, snapshots, items of a
sidechain (``isSidechain``) and text CodeBuddy adds in the user's turn (``<system-reminder>`` blocks)
are not. The title is the newest ``custom-title``, else the newest ``ai-title``, else the first prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    epoch_millis,
    json_lines,
    prompt_title,
    uuid_files,
)

CODEBUDDY_PREFIX = "codebuddy:"
_PARTS = frozenset(("input_text", "output_text", "text"))


def codebuddy_root() -> Path:
    """``$CODEBUDDY_CONFIG_DIR``, else ``~/.codebuddy``."""
    configured = os.environ.get("CODEBUDDY_CONFIG_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".codebuddy"


def _texts(content: Any) -> list[str]:
    """A message's text parts (a string content is one), those CodeBuddy adds in tags left out."""
    if type(content) is str:
        parts: list[Any] = [{"type": "text", "text": content}]
    elif type(content) is list:
        parts = content
    else:
        return []
    return [
        part["text"]
        for part in parts
        if type(part) is dict
        and part.get("type") in _PARTS
        and type(part.get("text")) is str
        and part["text"].strip()
        and not part["text"].lstrip().startswith("<system-reminder>")
    ]


def _agent(record: dict[str, Any]) -> object:
    data = record.get("providerData")
    return data.get("agent") if type(data) is dict else None


class CodeBuddySource(FileSource):
    """CodeBuddy Code's sessions (see the module docstring)."""

    prefix = CODEBUDDY_PREFIX
    name = "CodeBuddy Code"
    follow_links = False

    def _files(self) -> Iterator[str]:
        return uuid_files(self.root / "projects", ".jsonl")

    def _header(self, path: Path) -> SessionHeader | None:
        created: int | None = None
        cwd: str | None = None
        for _number, record in json_lines(path, HEAD_BYTES, follow=False):
            if type(record) is not dict:
                continue
            created = created if created is not None else epoch_millis(record.get("timestamp"))
            folder = record.get("cwd")
            cwd = cwd or (folder if type(folder) is str and folder.startswith("/") else None)
            if created is not None and cwd is not None:
                break
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.name[: -len(".jsonl")], created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        builder = SurfaceBuilder()
        problems = 0
        last_seq: int | None = None
        when = header.created_at
        titles: dict[str, str] = {}
        first: str | None = None
        for number, record in json_lines(path, follow=False):
            last_seq = number
            if type(record) is not dict or type(record.get("type")) is not str:
                problems += 1
                continue
            kind = record["type"]
            when = epoch_millis(record.get("timestamp")) or when
            if kind in ("custom-title", "ai-title"):
                title = record.get("customTitle" if kind == "custom-title" else "aiTitle")
                if type(title) is str and title.strip():
                    titles[kind] = title.strip()
                continue
            if kind != "message" or record.get("isSidechain") is True:
                continue
            text = "\n".join(_texts(record.get("content")))
            role, agent = record.get("role"), _agent(record)
            if not text.strip():
                continue
            if agent == "compact":
                if role == "assistant":
                    builder.checkpoint(number, when, text)
            elif role == "user":
                builder.user(number, when, text)
                first = first or prompt_title(text)
            elif role == "assistant":
                builder.assistant(number, when, text)
        title = titles.get("custom-title") or titles.get("ai-title") or first
        return ExternalSession(header, builder.events, title, problems, last_seq)
