"""Roo Code's tasks (the VS Code extension ``rooveterinaryinc.roo-cline``): ``<storage>/tasks/<task id>/``,
read-only; and the same folders of the two extensions it is kin to, Cline's (``saoudrizwan.claude-dev``,
which Roo Code forked) and Kilo Code's (``kilocode.kilo-code``, a fork of Roo Code).

``<storage>`` is the extension's global storage: ``$XDG_CONFIG_HOME/Code/User/globalStorage/
rooveterinaryinc.roo-cline``, else ``~/.config/Code/...`` (``~/Library/Application Support/Code/...`` on
macOS). As Roo Code's source writes a task's folder: ``ui_messages.json`` is what its panel showed, a
list of messages ``{"ts" (epoch milliseconds), "type": "say" | "ask", "say" | "ask", "text"}`` whose
first is always the task as typed; ``api_conversation_history.json`` is what its model was sent
(Anthropic messages; the first user message ends with ``<environment_details>`` naming the workspace,
``Current Workspace Directory (<folder>)``).

Mapping: the first message (the task) and each ``user_feedback`` become prompts; the model's ``text``
and ``completion_result`` messages answers; a ``condense_context`` message's summary a checkpoint. Tool
requests and their output, commands, reasoning, API request records and followup questions are not on
the surface. The folder is the one ``<environment_details>`` names; the title the task.
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
    prompt_title,
    read_json,
    subfolders,
    texts_of,
)

ROO_PREFIX = "roo:"
EXTENSION = "rooveterinaryinc.roo-cline"
SESSION_BYTES = 64 * 1024 * 1024
_WORKSPACE = re.compile(r"Current (?:Workspace|Working) Directory \((/[^)\n]*)\)")
"""Roo Code's and Kilo Code's ``Current Workspace Directory``, Cline's ``Current Working Directory``."""
CLINE_EXTENSION = "saoudrizwan.claude-dev"
KILO_EXTENSION = "kilocode.kilo-code"


def roo_root() -> Path:
    """The extension's global storage under VS Code's ``User`` folder."""
    return extension_storage(EXTENSION)


def cline_extension_root() -> Path:
    """Cline's VS Code extension's global storage."""
    return extension_storage(CLINE_EXTENSION)


def kilo_extension_root() -> Path:
    """Kilo Code's VS Code extension's global storage."""
    return extension_storage(KILO_EXTENSION)


def extension_storage(extension: str) -> Path:
    """A VS Code extension's global storage under VS Code's ``User`` folder."""
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    mac = Path.home() / "Library" / "Application Support" / "Code" / "User"
    user = (
        Path(config) / "Code" / "User" if config else mac if mac.is_dir() else Path.home() / ".config" / "Code" / "User"
    )
    return user / "globalStorage" / extension


def _workspace(task: Path) -> str | None:
    """The folder the model was told the task runs in (its first message's environment details)."""
    try:
        history = read_json(task / "api_conversation_history.json", SESSION_BYTES)
    except (OSError, ValueError, RecursionError):
        return None
    first = history[0] if type(history) is list and history and type(history[0]) is dict else {}
    found = _WORKSPACE.search("\n".join(texts_of(first.get("content"))))
    return found.group(1) if found else None


def _summary(message: dict[str, Any]) -> str | None:
    condensed = message.get("contextCondense")
    summary = condensed.get("summary") if type(condensed) is dict else None
    return summary if type(summary) is str and summary.strip() else None


class RooCodeSource(FileSource):
    """Roo Code's tasks (see the module docstring)."""

    prefix = ROO_PREFIX
    name = "Roo Code"
    follow_links = False

    def _files(self) -> Iterator[str]:
        for task in subfolders(self.root / "tasks"):
            path = os.path.join(task.path, "ui_messages.json")
            if os.path.isfile(path) and not os.path.islink(path):
                yield path

    def _header(self, path: Path) -> SessionHeader | None:
        messages = read_json(path, SESSION_BYTES)
        first = messages[0] if type(messages) is list and messages and type(messages[0]) is dict else None
        if first is None:
            return None
        created = epoch_millis(first.get("ts")) or path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.parent.name, created_at=created, cwd=_workspace(path.parent))

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        messages = read_json(path, SESSION_BYTES)
        if type(messages) is not list:
            raise ValueError("not a list of messages")
        builder = SurfaceBuilder()
        problems = 0
        title: str | None = None
        when = header.created_at
        for number, message in enumerate(messages):
            if type(message) is not dict:
                problems += 1
                continue
            when = epoch_millis(message.get("ts")) or when
            text, said = message.get("text"), message.get("say")
            if message.get("type") != "say":
                continue
            if said == "condense_context" and (summary := _summary(message)) is not None:
                builder.checkpoint(number, when, summary)
            elif type(text) is not str or not text.strip():
                continue
            elif number == 0 or said == "user_feedback":
                builder.user(number, when, text)
                title = title or prompt_title(text)
            elif said in ("text", "completion_result"):
                builder.assistant(number, when, text)
        return ExternalSession(header, builder.events, title, problems, len(messages) - 1 if messages else None)


class ClineExtensionSource(RooCodeSource):
    """Cline's VS Code extension's tasks: the same folder of ``ui_messages.json`` Roo Code kept when it
    forked Cline (Cline names the folder ``Current Working Directory``)."""

    prefix = "clinevsc:"
    name = "Cline (VS Code)"


class KiloCodeSource(RooCodeSource):
    """Kilo Code's VS Code extension's tasks: a fork of Roo Code that keeps its tasks the same way."""

    prefix = "kilocode:"
    name = "Kilo Code (VS Code)"
