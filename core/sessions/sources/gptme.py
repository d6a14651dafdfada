"""gptme's conversations (PyPI ``gptme``): ``<logs>/<date>-<name>/conversation.jsonl``, read-only.

``<logs>`` is ``$GPTME_LOGS_HOME``, else ``$XDG_DATA_HOME/gptme/logs``, else ``~/.local/share/gptme/logs``.
A conversation's folder holds ``conversation.jsonl``, the main branch's messages one per line
(``role`` ``system``, ``user`` or ``assistant``, ``content`` text, ``timestamp`` in ISO 8601, the
machine's local time without an offset; ``hide`` for what the interface does not show), and
``config.toml``, whose ``[chat]`` table names the conversation (``name``) and its folder
(``workspace``). Older conversations have only a ``workspace`` link to the folder: its target is read
as text, never followed. ``branches/`` holds the branches an edit made, ``events.jsonl`` the same
messages as an event log.

Mapping: a user message becomes a prompt, an assistant's an answer. What gptme writes in the user's
turn itself (the ``<system>...</system>`` nudges of its autonomous mode) is not a prompt; a call of a
tool in its ``tool`` format (a line ``@shell(call_1): {...}`` and its JSON) is cut from the answer, and
``system`` messages (the system prompt, tool results, notices) are not on the surface. The title is
``config.toml``'s ``name``, else the first prompt.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
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
    json_lines,
    local_millis,
    prompt_title,
    subfolders,
)

GPTME_PREFIX = "gptme:"
CONFIG_BYTES = 1024 * 1024
_NUDGE = re.compile(r"\s*<system>.*</system>\s*", re.DOTALL)
_TOOL_CALL = re.compile(r"^@[^\r\n(]+?\([\w\-:.]+\):[ \t]*", re.MULTILINE)
_decoder = json.JSONDecoder()


def gptme_root() -> Path:
    """``$GPTME_LOGS_HOME``, else ``$XDG_DATA_HOME/gptme/logs``, else ``~/.local/share/gptme/logs``."""
    configured = os.environ.get("GPTME_LOGS_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    data = os.environ.get("XDG_DATA_HOME", "").strip()
    return (Path(data) if data.startswith("/") else Path.home() / ".local" / "share") / "gptme" / "logs"


def without_tool_calls(text: str) -> str:
    """An answer without the tool calls written in gptme's ``tool`` format (the call's line and its
    JSON object; a call whose JSON does not parse, to the end of its line)."""
    kept: list[str] = []
    at = 0
    while (found := _TOOL_CALL.search(text, at)) is not None:
        kept.append(text[at : found.start()])
        try:
            _value, at = _decoder.raw_decode(text, found.end())
        except ValueError:
            end = text.find("\n", found.end())
            at = len(text) if end < 0 else end
    kept.append(text[at:])
    return "".join(kept).strip()


class GptmeSource(FileSource):
    """gptme's conversations (see the module docstring)."""

    prefix = GPTME_PREFIX
    name = "gptme"
    follow_links = False

    def _files(self) -> Iterator[str]:
        for folder in subfolders(self.root):
            path = os.path.join(folder.path, "conversation.jsonl")
            if os.path.isfile(path) and not os.path.islink(path):
                yield path

    def _header(self, path: Path) -> SessionHeader | None:
        created = None
        for _number, record in json_lines(path, HEAD_BYTES, follow=False):
            if type(record) is dict:
                created = local_millis(record.get("timestamp"))
                if created is not None:
                    break
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        workspace = _chat(path.parent).get("workspace")
        if type(workspace) is not str or not workspace.startswith("/"):
            workspace = _link_text(path.parent / "workspace")
        return SessionHeader(id=self.prefix + path.parent.name, created_at=created, cwd=workspace)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        builder = SurfaceBuilder()
        problems = 0
        last_seq: int | None = None
        when = header.created_at
        first: str | None = None
        for number, record in json_lines(path, follow=False):
            last_seq = number
            content = record.get("content") if type(record) is dict else None
            if type(content) is not str:
                problems += 1
                continue
            when = local_millis(record.get("timestamp")) or when
            role = record.get("role")
            if role == "user" and content.strip() and not _NUDGE.fullmatch(content):
                builder.user(number, when, content)
                first = first or prompt_title(content)
            elif role == "assistant":
                said = without_tool_calls(content)
                if said:
                    builder.assistant(number, when, said)
        title = _chat(path.parent).get("name")
        if type(title) is not str or not title.strip():
            title = first
        return ExternalSession(header, builder.events, title, problems, last_seq)


def _chat(folder: Path) -> dict[str, Any]:
    """The ``[chat]`` table of a conversation's ``config.toml`` (empty when missing, unreadable,
    too large or of another shape)."""
    try:
        with os.fdopen(open_regular(folder / "config.toml", follow=False), "rb") as handle:
            raw = handle.read(CONFIG_BYTES + 1)
        if len(raw) > CONFIG_BYTES:
            return {}
        chat = tomllib.loads(raw.decode("utf-8")).get("chat")
    except (OSError, ValueError, RecursionError):
        return {}
    return chat if type(chat) is dict else {}


def _link_text(link: Path) -> str | None:
    """Where an older conversation's ``workspace`` link points, read as text (never followed)."""
    try:
        target = os.readlink(link)
    except (OSError, ValueError):
        return None
    return target if target.startswith("/") else None
