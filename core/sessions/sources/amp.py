"""Amp's threads (Sourcegraph's ``amp``): ``<data>/threads/T-<uuid>.json``, read-only.

``<data>`` is ``$XDG_DATA_HOME/amp``, else ``~/.local/share/amp``. A thread is one JSON document, as the
published descriptions of Amp's thread store give it: ``id``, ``title``, ``created`` (epoch
milliseconds), ``env.initial.trees`` (the folders it worked in, each a ``file://`` ``uri``) and
``messages``, each ``{"role": "user" | "assistant", "messageId", "content": [blocks], "state"}`` with
Anthropic-style blocks (``text``, ``thinking``, ``tool_use``, ``tool_result``).

Mapping: a user message's ``text`` blocks become a prompt, an assistant's an answer. Thinking, tool
calls and results are not on the surface. Messages carry no time: each takes the thread's. The folder
is the first tree's; the title the thread's, else the first prompt. Amp needs its vendor's service to
run and none of its own files is public: the format is checked against no file of Amp's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    data_home,
    epoch_millis,
    files_in,
    prompt_title,
    read_json,
    texts_of,
)

AMP_PREFIX = "amp:"
SESSION_BYTES = 64 * 1024 * 1024
_THREAD = re.compile(r"T-[0-9A-Za-z-]{1,64}\.json")


def amp_root() -> Path:
    """``$XDG_DATA_HOME/amp``, else ``~/.local/share/amp``."""
    return data_home() / "amp"


def _folder(thread: dict[str, Any]) -> str | None:
    """The first tree's folder of a thread's ``env.initial``."""
    env = thread.get("env")
    initial = env.get("initial") if type(env) is dict else None
    trees = initial.get("trees") if type(initial) is dict else None
    tree = trees[0] if type(trees) is list and trees and type(trees[0]) is dict else {}
    uri = tree.get("uri")
    if type(uri) is not str or not uri.startswith("file://"):
        return None
    path = unquote(urlparse(uri).path)
    return path if path.startswith("/") else None


class AmpSource(FileSource):
    """Amp's threads (see the module docstring)."""

    prefix = AMP_PREFIX
    name = "Amp"
    follow_links = False

    def _files(self) -> Iterator[str]:
        return files_in(self.root / "threads", lambda name: _THREAD.fullmatch(name) is not None)

    def _header(self, path: Path) -> SessionHeader | None:
        thread = read_json(path, SESSION_BYTES)
        if type(thread) is not dict:
            return None
        created = epoch_millis(thread.get("created")) or path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.name[: -len(".json")], created_at=created, cwd=_folder(thread))

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        thread = read_json(path, SESSION_BYTES)
        messages = thread.get("messages") if type(thread) is dict else None
        if type(messages) is not list:
            raise ValueError("no messages")
        builder = SurfaceBuilder()
        problems = 0
        first: str | None = None
        for number, message in enumerate(messages):
            if type(message) is not dict:
                problems += 1
                continue
            text = "\n".join(texts_of(message.get("content")))
            if not text.strip():
                continue
            if message.get("role") == "user":
                builder.user(number, header.created_at, text)
                first = first or prompt_title(text)
            elif message.get("role") == "assistant":
                builder.assistant(number, header.created_at, text)
        title = thread.get("title")
        if type(title) is not str or not title.strip():
            title = first
        return ExternalSession(header, builder.events, title, problems, len(messages) - 1 if messages else None)
