"""Open Interpreter's conversations (PyPI ``open-interpreter``): ``<config>/conversations/<name>.json``,
read-only.

``<config>`` is its configuration folder: ``$XDG_CONFIG_HOME/open-interpreter``, else
``~/.config/open-interpreter``. A conversation is one JSON document, a list of its messages in
Open Interpreter's own format: ``{"role": "user" | "assistant" | "computer", "type": "message" |
"code" | "console" | "image" | "confirmation", "format", "content"}``. The file's name is the first
words of the first prompt and the local time it started: ``<words>__December_07_2026_20-11-45.json``.
It keeps no folder.

Mapping: ``message`` items of the user become prompts, of the assistant answers. Code the model ran,
its console output, images and confirmations are not on the surface. Messages carry no time: each
takes the one in the file's name (else the file's). The title is the first prompt.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    LATEST_MILLIS,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    config_home,
    files_in,
    prompt_title,
    read_json,
)

OPEN_INTERPRETER_PREFIX = "interpreter:"
SESSION_BYTES = 64 * 1024 * 1024
_STARTED = re.compile(r"__([A-Z][a-z]+_\d{2}_\d{4}_\d{2}-\d{2}-\d{2})\.json$")


def open_interpreter_root() -> Path:
    """``$XDG_CONFIG_HOME/open-interpreter``, else ``~/.config/open-interpreter``."""
    return config_home() / "open-interpreter"


def started(name: str) -> int | None:
    """Epoch milliseconds of the local time in a conversation file's name, or ``None``."""
    found = _STARTED.search(name)
    if found is None:
        return None
    try:
        stamp = int(time.mktime(time.strptime(found.group(1), "%B_%d_%Y_%H-%M-%S")) * 1000)
    except (ValueError, OverflowError):
        return None
    return stamp if 0 <= stamp < LATEST_MILLIS else None


def _text(content: Any) -> str:
    return content if type(content) is str else ""


class OpenInterpreterSource(FileSource):
    """Open Interpreter's conversations (see the module docstring)."""

    prefix = OPEN_INTERPRETER_PREFIX
    name = "Open Interpreter"
    follow_links = False

    def _files(self) -> Iterator[str]:
        return files_in(self.root / "conversations", lambda name: name.endswith(".json"))

    def _header(self, path: Path) -> SessionHeader | None:
        created = started(path.name) or path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.name[: -len(".json")], created_at=created, cwd=None)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        messages = read_json(path, SESSION_BYTES)
        if type(messages) is not list:
            raise ValueError("not a list of messages")
        builder = SurfaceBuilder()
        problems = 0
        first: str | None = None
        for number, message in enumerate(messages):
            if type(message) is not dict:
                problems += 1
                continue
            if message.get("type") != "message":
                continue
            text = _text(message.get("content"))
            if not text.strip():
                continue
            if message.get("role") == "user":
                builder.user(number, header.created_at, text)
                first = first or prompt_title(text)
            elif message.get("role") == "assistant":
                builder.assistant(number, header.created_at, text)
        return ExternalSession(header, builder.events, first, problems, len(messages) - 1 if messages else None)
