"""Kimi CLI's sessions (PyPI ``kimi-cli``): ``<share>/sessions/<folder key>/<uuid>/context.jsonl``,
read-only.

``<share>`` is ``$KIMI_SHARE_DIR``, else ``~/.kimi``. ``kimi.json`` there lists the folders Kimi CLI ran
in (``work_dirs``: ``path`` and ``kaos``); a folder's sessions live under the MD5 of its path (prefixed
``<kaos>_`` for a folder that is not local). A session's folder holds ``context.jsonl``, the model's
context as Kimi CLI restores it, one record per line: messages (``role`` ``user``, ``assistant`` or
``tool``; ``content`` a string or parts, ``text`` and ``think``) and its own records (``_system_prompt``,
``_checkpoint``, ``_usage``). Going back to a checkpoint or clearing rotates the file away
(``context_1.jsonl``...) and writes what is kept: the file is always the context as it stands. Older
versions wrote it as ``<folder key>/<uuid>.jsonl``, which it moves into the folder when resumed.
``wire.jsonl`` beside it is the user interface's journal (``TurnBegin`` with what was typed, epoch
seconds); ``state.json`` holds ``custom_title`` and ``archived``.

Mapping: a user message's text becomes a prompt, an assistant's text an answer. Parts Kimi CLI wrote
itself in the user's turn (``<system>``, ``<system-reminder>``) are not prompts, but a compaction's
output (``<system>Previous context has been compacted...</system>`` and the summary) is a checkpoint.
Tool calls and results, thinking and a sub-agent's context are not on the surface. A prompt takes the
time of the ``TurnBegin`` that typed it (matched in order), an answer its prompt's; the session starts
at its first. The title is ``custom_title``, else the first prompt; an archived session is not listed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.files import Revision, file_revision
from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    NotListed,
    SurfaceBuilder,
    json_lines,
    prompt_title,
    read_json_object,
    subfolders,
    texts_of,
)

KIMI_PREFIX = "kimi:"
INDEX_BYTES = 8 * 1024 * 1024
"""The largest ``kimi.json`` read (one line per folder Kimi CLI ran in)."""
STATE_BYTES = 1024 * 1024
WIRE_BYTES = 64 * 1024 * 1024
"""How much of ``wire.jsonl`` is read for the prompts' times."""
COMPACTED = "<system>Previous context has been compacted. Here is the compaction output:</system>"
_INJECTED = ("<system>", "<system-reminder>")
LATEST_SECONDS = 253_402_300_800


def kimi_root() -> Path:
    """``$KIMI_SHARE_DIR``, else ``~/.kimi``."""
    configured = os.environ.get("KIMI_SHARE_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".kimi"


def folder_key(path: str, kaos: str = "local") -> str:
    """The name of a folder's sessions folder, as Kimi CLI names it."""
    digest = hashlib.md5(path.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()
    return digest if kaos == "local" else f"{kaos}_{digest}"


def _seconds(value: Any) -> int | None:
    """Epoch milliseconds of an epoch-seconds field (an int or a float, 1970 to the year 10000)."""
    if type(value) not in (int, float) or not 0 <= value < LATEST_SECONDS:
        return None
    return int(value * 1000)


class KimiCliSource(FileSource):
    """Kimi CLI's sessions (see the module docstring)."""

    prefix = KIMI_PREFIX
    name = "Kimi CLI"
    follow_links = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._folders: tuple[Revision | None, dict[str, str]] = (None, {})

    def _files(self) -> Iterator[str]:
        for group in subfolders(self.root / "sessions"):
            try:
                entries = list(os.scandir(group.path))
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    context = os.path.join(entry.path, "context.jsonl")
                    if os.path.isfile(context) and not os.path.islink(context):
                        yield context
                elif entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                    if not os.path.isdir(entry.path[: -len(".jsonl")]):  # (not yet moved by Kimi CLI)
                        yield entry.path

    def folders(self) -> dict[str, str]:
        """Each sessions folder's name and the folder it holds sessions of, from ``kimi.json`` (read
        again only when it changed)."""
        index = self.root / "kimi.json"
        try:
            revision: Revision | None = file_revision(index)
        except OSError:
            revision = None
        if revision != self._folders[0]:
            work_dirs = read_json_object(index, INDEX_BYTES).get("work_dirs")
            folders: dict[str, str] = {}
            for item in work_dirs if type(work_dirs) is list else []:
                path, kaos = (item.get("path"), item.get("kaos", "local")) if type(item) is dict else (None, None)
                if type(path) is str and path and kaos == "local":  # (another machine's path is not a folder here)
                    folders[folder_key(path)] = path
            self._folders = (revision, folders)
        return self._folders[1]

    def _header(self, path: Path) -> SessionHeader | None:
        folder = _folder(path)
        state = read_json_object(folder / "state.json", STATE_BYTES)
        if state.get("archived") is True:
            raise NotListed
        turns = _turns(folder, HEAD_BYTES)
        created = turns[0][1] if turns else path.stat().st_mtime_ns // 1_000_000
        cwd = self.folders().get(folder.parent.name)
        return SessionHeader(id=self.prefix + folder.name, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        folder = _folder(path)
        turns = iter(_turns(folder, WIRE_BYTES))
        builder = SurfaceBuilder()
        problems = 0
        last_seq: int | None = None
        when = header.created_at
        first: str | None = None
        for number, record in json_lines(path, follow=False):
            last_seq = number
            role = record.get("role") if type(record) is dict else None
            if type(role) is not str:
                problems += 1
                continue
            content = record.get("content")
            if role == "assistant":
                text = "\n".join(texts_of(content))
                if text.strip():
                    builder.assistant(number, when, text)
                continue
            if role != "user":
                continue
            texts = texts_of(content)
            if texts and texts[0].strip() == COMPACTED:
                builder.checkpoint(number, when, "\n".join(texts[1:]))
                continue
            typed = "\n".join(text for text in texts if not text.lstrip().startswith(_INJECTED))
            if not typed.strip():
                continue
            # Its time: that of the next TurnBegin that typed these words (a prompt Kimi CLI replays
            # after a revert types none: it keeps the time it has).
            for said, time in turns:
                if said == typed:
                    when = time
                    break
            builder.user(number, when, typed)
            first = first or prompt_title(typed)
        title = read_json_object(folder / "state.json", STATE_BYTES).get("custom_title")
        if type(title) is not str or not title.strip():
            title = first
        return ExternalSession(header, builder.events, title, problems, last_seq)


def _folder(context: Path) -> Path:
    """A session's folder: the one holding its ``context.jsonl`` (or, for an older session's
    ``<uuid>.jsonl``, the folder Kimi CLI would move it into)."""
    return context.parent if context.name == "context.jsonl" else context.with_suffix("")


def _turns(folder: Path, limit: int) -> list[tuple[str, int]]:
    """What each ``TurnBegin`` of the session's ``wire.jsonl`` typed, and when (none when missing)."""
    wire = folder / "wire.jsonl"
    turns: list[tuple[str, int]] = []
    try:
        for _number, record in json_lines(wire, limit, follow=False):
            message = record.get("message") if type(record) is dict else None
            if type(message) is not dict or message.get("type") != "TurnBegin":
                continue
            payload = message.get("payload")
            said = payload.get("user_input") if type(payload) is dict else None
            time = _seconds(record.get("timestamp"))
            if time is not None:
                turns.append((_typed(said), time))
    except OSError:
        return []
    return turns


def _typed(said: Any) -> str:
    """A ``TurnBegin``'s ``user_input`` as text (a string, or parts)."""
    return "\n".join(text for text in texts_of(said) if not text.lstrip().startswith(_INJECTED))
